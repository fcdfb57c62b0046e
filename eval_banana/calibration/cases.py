"""A case's project: a disposable copy of the project folder with the case's files laid over.

The copy is made by the isolation workspace (always a plain or copy-on-write file copy, since
the case's files must be in place before the judge starts), in a temporary folder outside the
project; the project itself is only ever read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.core.realpaths import real_path

if TYPE_CHECKING:
    from eval_banana.isolation.workspace import Workspace


class CaseFileError(Exception):
    """A case's file cannot be laid over the copy (a folder in the way, a symlink on the path)."""


def _safe_target(*, base: Path, relative: str) -> Path:
    """Where `relative` lands in the copy; refuses a path through a symlink (it could point
    out of the copy, and a case must never write anywhere but its copy)."""
    target = base
    parts = relative.split("/")
    for part in parts[:-1]:
        target = target / part
        if target.is_symlink():
            raise CaseFileError(f"{relative}: the folder {target.relative_to(base)} is a symlink")
        if target.exists() and not target.is_dir():
            raise CaseFileError(f"{relative}: {target.relative_to(base)} is a file, not a folder")
    return target / parts[-1]


def _file_target(*, base: Path, relative: str) -> Path:
    """`_safe_target`, refusing a path that is a folder in the project as well."""
    target = _safe_target(base=base, relative=relative)
    if target.is_dir() and not target.is_symlink():
        raise CaseFileError(f"{relative}: is a folder in the project; a case sets files")
    return target


def case_file_problem(*, root: Path, relative: str) -> str | None:
    """Why a case's file cannot be laid over the project at `root` (a folder there, a file or
    a symlink on its way), or None: a definition problem, found before any judge runs."""
    try:
        _file_target(base=root, relative=relative)
    except CaseFileError as exc:
        return str(exc)
    return None


def lay_files(*, base: Path, files: Mapping[str, str | None]) -> None:
    """Write (or, for None, delete) each case file under `base`, the copy's project folder."""
    for relative, content in files.items():
        target = _file_target(base=base, relative=relative)
        if target.is_symlink() or content is None:
            # A symlink is replaced, never written through; deleting an absent file is a no-op.
            if os.path.lexists(target):
                target.unlink()
            if content is None:
                continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")


def _as_laid(*, base: Path, relative: str, content: str | None) -> bool:
    """Whether a case's file is still as the case laid it (its text, or absent for null)."""
    target = base / relative
    if content is None:
        return not os.path.lexists(target)
    if target.is_symlink() or not target.is_file():
        return False
    try:
        return target.read_bytes() == content.encode("utf-8")
    except OSError:
        return False


def judge_edits(*, workspace: Workspace, files: Mapping[str, str | None]) -> list[str]:
    """What the judge changed in its copy, in path order: every difference from the project
    but the case's files as the case laid them, and any case file no longer as laid."""
    base = workspace.path
    edited = {change.path for change in workspace.changes() if change.path not in files}
    edited.update(
        relative
        for relative, content in files.items()
        if not _as_laid(base=base, relative=relative, content=content)
    )
    return sorted(edited)


def case_workspace(
    *, root: Path, paths: Sequence[str], files: Mapping[str, str | None]
) -> Workspace:
    """A fresh copy of the project at `root` with `files` laid over it (the caller removes it)."""
    # Imported here: `eb validate` checks a case's files with this module, and the workspace
    # brings a thread pool and logging that its start-up cannot afford.
    from eval_banana.isolation.workspace import make_workspace

    workspace = make_workspace(root=root, paths=paths, method="copy", prefix="eb-calibrate-")
    if real_path(workspace.scratch).is_relative_to(real_path(root)):
        workspace.remove()
        raise CaseFileError(
            f"the temporary folder {workspace.scratch.parent} is inside the project; set TMPDIR "
            "to a folder outside it, so a case's copy is never part of the project"
        )
    try:
        lay_files(base=workspace.path, files=files)
    except BaseException:
        workspace.remove()
        raise
    return workspace
