"""Judges that cannot touch the project: change detection and disposable copies, and the checks
charged with a change to eb's own state that only a look after they ran could see.

May import: runners, settings, models, projectstate and core.
"""
