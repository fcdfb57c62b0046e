"""The tool's version, as recorded in every stage file and result document."""

from eval_banana._version import __version__


def tool_version() -> str:
    return __version__
