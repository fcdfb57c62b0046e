"""Pydantic models: the single source of every published schema.

May import: assertions, projectstate and core.

It uses only their pure rules and paths.
"""
