"""Paths as root-relative prefixes: folders and files named against the project root, and
whether a path lies at or below some prefix or inside a folder that never counts.

Standard library and `patterns` only: every reader of the state asks these questions.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from eval_banana.core.realpaths import real_path
from eval_banana.projectstate.patterns import paths_under


def relative_inside(*, path: str | Path, root: str) -> str | None:
    """`path` (absolute) as a root-relative POSIX path, or None when it lies outside `root`."""
    relative = os.path.relpath(path, root)
    if relative == ".." or relative.startswith(("../", "..\\")) or os.path.isabs(relative):
        return None
    return relative.replace(os.sep, "/")


def relative_folders(*, root: str, folders: Iterable[str | Path]) -> tuple[str, ...]:
    """Folders (absolute or root-relative) as root-relative prefixes ending in `/`."""
    out = []
    for folder in folders:
        full = os.path.normpath(os.path.join(root, folder))
        relative = os.path.relpath(full, root)
        if relative != "." and not relative.startswith(".."):
            out.append(relative.replace(os.sep, "/") + "/")
    return tuple(out)


def relative_files(*, root: str | Path, files: Iterable[Path]) -> frozenset[str]:
    """The files inside `root` as root-relative POSIX paths, each by its own name (the links
    of its folders resolved, as the root's are) and by where it leads when it is a symbolic
    link; those outside it left out. Both are eb's: a record eb rewrites by a rename replaces
    the link's own name, whatever it leads to (a file, or none)."""
    base = real_path(root)
    found = set()
    for path in files:
        for named in (real_path(path.parent) / path.name, real_path(path)):
            with contextlib.suppress(ValueError):
                found.add(named.relative_to(base).as_posix())
    return frozenset(found)


def within(*, paths: Sequence[str], prefixes: Sequence[str]) -> list[str]:
    """The paths of a sorted sequence that are at or below one of `prefixes`, sorted."""
    found: set[str] = set()
    for prefix in prefixes:
        found.update(paths_under(paths, prefix))
    return sorted(found)


def holding(paths: Iterable[str], prefixes: Sequence[str]) -> list[str]:
    """Those of `paths` that hold one of `prefixes` below them (a submodule a pattern names a
    file in), in the order given."""
    folders = [f"{path}/" for path in paths]
    return [folder[:-1] for folder in folders if any(p.startswith(folder) for p in prefixes)]


def under_any(*, path: str, prefixes: Sequence[str]) -> bool:
    """Whether `path` is at or below one of `prefixes` (or holds one, for a folder entry)."""
    return any(
        path == prefix or path.startswith(prefix + "/") or prefix.startswith(path + "/")
        for prefix in prefixes
    )


def skipped(path: str, skip: Sequence[str]) -> bool:
    """Whether `path` lies in one of the folders `skip` (root-relative, ending in `/`)."""
    return bool(skip) and (path + "/").startswith(tuple(skip))
