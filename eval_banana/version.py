"""The installed distribution version."""

from functools import cache
from importlib import metadata


@cache
def tool_version() -> str:
    try:
        return metadata.version("eval_banana")
    except metadata.PackageNotFoundError:
        return "0.0.0"
