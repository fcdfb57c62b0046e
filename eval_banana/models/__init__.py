"""Pydantic models: the single source of every published schema."""
