"""Symbolic links on a path's way, which the project state never follows into a folder: git
records a link by its text, and `inputs:` patterns match a link to a folder as that text alone.

Looked at only where a path is known to pass a link (a file read through one) or a pattern
matched nothing: a walk of the project never reads them.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from eval_banana.core.realpaths import real_path
from eval_banana.projectstate.prefixes import relative_inside

# More links than this in one path is a loop: `os.path.realpath` gives up there too.
_MOST_LINKS = 40


def links_met(*, path: str, root: str) -> list[str]:
    """The symbolic links inside `root` (root-relative) that following absolute `path` passes:
    each of its parts that is one and, through a chain, every link a link leads to. Pointing
    any of them elsewhere changes what reading `path` reads."""
    met: list[str] = []
    pending = list(reversed(path.split("/")))
    current = os.sep
    followed = 0
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, name)
        try:
            target = os.readlink(candidate)
        except OSError:
            current = candidate  # not a link (or not there): the path goes on below it
            continue
        followed += 1
        if followed > _MOST_LINKS:
            break
        inside = relative_inside(path=candidate, root=root)
        if inside is not None and inside not in met:
            met.append(inside)
        if os.path.isabs(target):
            current = os.sep
        pending.extend(reversed(target.split("/")))
    return met


class FolderLink(NamedTuple):
    """A symbolic link to a folder on the way of a path."""

    link: str  # the link, root-relative
    target: str  # its text, as `ls -l` shows it
    leads_to: str | None  # the folder it leads to, root-relative; None: outside the root


def folder_link_on_the_way(*, path: str, root: str) -> FolderLink | None:
    """The first of the folders of root-relative `path` (`out` of `out/plan.json`) that is a
    symbolic link to a folder, or None. `path` itself counts when it names a folder."""
    parts = path.split("/") if path else []
    for end in range(1, len(parts) + 1):
        link = "/".join(parts[:end])
        full = os.path.join(root, link)
        if os.path.islink(full) and os.path.isdir(full):
            leads_to = relative_inside(path=real_path(full), root=root)
            return FolderLink(link=link, target=os.readlink(full), leads_to=leads_to)
    return None
