"""Every setting declared once (the table), the environment policy of children, eb's own
folders and files in a project, and the run folder.

May import: models, projectstate and core.
"""
