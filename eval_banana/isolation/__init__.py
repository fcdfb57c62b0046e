"""Judges that cannot touch the project: change detection and disposable copies.

May import runners, settings, projectstate, models and core.
"""
