"""The installed distribution version."""

from importlib import metadata


def tool_version() -> str:
    try:
        return metadata.version("eval_banana")
    except metadata.PackageNotFoundError:
        return "0.0.0"
