"""Where a path really leads, the same on every Python eb supports.

`Path.resolve` on Python 3.11 and 3.12 raises RuntimeError at a symbolic link that leads back
to itself (`ln -s loop.yaml loop.yaml`), an error no caller handles: a check file, a
`script_path`, an artifact or a folder a user names that is such a loop ended eb in a
traceback. Python 3.13 does what `real_path` does on all of them: strict, a loop is an
OSError (ELOOP) like a dangling link; otherwise the looping part is kept as it is, and the
first use of the path meets the same OSError.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


def real_path(path: str | os.PathLike[str], *, strict: bool = False) -> Path:
    """`path` made absolute, its links followed; `strict`: OSError when a part of it is
    missing or a link loops (ELOOP), else those parts are kept as given."""
    return Path(os.path.realpath(path, strict=strict))


def path_trouble(exc: OSError) -> str:
    """Why following a path failed, in words: a link loop named as one (the system's words,
    "Too many levels of symbolic links", do not say which link or that it loops)."""
    if exc.errno == errno.ELOOP:
        return "a symbolic link loop"
    return exc.strerror or str(exc)
