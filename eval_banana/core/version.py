"""The tool's name and version, as recorded in every stage file and result document."""

from eval_banana._version import __version__

# What `pip install` takes. `eval_banana` / `eval-banana` would install the public eval-banana
# tool instead: package indexes treat the two spellings as one name.
DISTRIBUTION = "eval-banana-staged"


def tool_version() -> str:
    """The installed version (`_version.py` is also what the build writes into the metadata)."""
    return __version__
