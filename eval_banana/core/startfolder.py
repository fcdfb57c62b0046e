"""The folder eb was started in, which may have been deleted under the shell that started it.

A shell left in a folder that another terminal, a `git checkout` or `rm -rf build && mkdir build`
removed still starts programs there; every relative path eb resolves then fails.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from eval_banana.core.errors import UsageError
from eval_banana.core.realpaths import real_path


def is_gone() -> bool:
    """Whether the folder this process works in no longer exists."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


def gone_error(*, environ: Mapping[str, str]) -> UsageError:
    """What eb says when it was started in a folder that no longer exists (exit 2)."""
    # The shell's $PWD still names the folder it entered; the process cannot ask the system.
    named = environ.get("PWD")
    return UsageError(
        "The folder eb was started in no longer exists"
        + (f" ({named})" if named else "")
        + ": it was deleted after the shell entered it",
        hint="cd to an existing folder (cd to the same path again if it was made anew), "
        "or pass --cwd with the project's absolute path",
    )


def resolved(path: Path, *, environ: Mapping[str, str]) -> Path:
    """`path` made absolute and resolved, or the error above when it is relative to a folder
    that no longer exists."""
    try:
        return real_path(path)
    except FileNotFoundError as exc:
        if not is_gone():
            raise
        raise gone_error(environ=environ) from exc
