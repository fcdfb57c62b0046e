"""Stage files on disk: their names and envelope, reading one back with its schema
first, what a schema cannot say (agreement), their text slots and the packaged schemas.

May import: checks, settings, models and core.
"""
