"""Pydantic models: the single source of every published schema.

May import assertions, projectstate and core (their pure rules and paths), nothing above.
"""
