"""Symbolic links on a path's way, which the project state never follows into a folder: git
records a link by its text, and `inputs:` patterns match a link to a folder as that text alone.

Looked at only where a pattern matched nothing: a walk of the project never reads them.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from eval_banana.core.realpaths import real_path
from eval_banana.projectstate.prefixes import relative_inside


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
