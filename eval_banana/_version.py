"""The one place the version is written; pyproject.toml reads it at build time."""

__version__ = "0.1.0"
