"""The shards' evidence brought into a merged run folder (`eb merge`): each shard's `checks/`
files and output folders, and its frozen scripts (`stages/snapshots/`), hard-linked where the
file system allows, else copied. Done again over an earlier attempt's part (a forked child
ended by a signal), it leaves the same folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from eval_banana.core.errors import MergeError, OutputDirError
from eval_banana.scaleout.shardrun import ShardRun


class ShardEvidence(NamedTuple):
    """The files of one shard's checks/ folder, listed before anything is written, and its
    sub-folders (a check's own output folder), brought whole."""

    folder: str
    names: list[str]
    folders: list[str]


def shard_evidence(*, runs: Sequence[ShardRun]) -> list[ShardEvidence]:
    """Each shard's checks/ files and folders; a name in two shards is refused (nothing
    written yet)."""
    found: list[ShardEvidence] = []
    owner: dict[str, str] = {}
    for run in runs:
        folder = str(run.run_dir / "checks")
        names: list[str] = []
        folders: list[str] = []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_file(follow_symlinks=False):
                        names.append(entry.name)
                    elif entry.is_dir(follow_symlinks=False):
                        folders.append(entry.name)
        except OSError:  # a shard with no checks/ folder has no evidence to bring
            names, folders = [], []
        for name in (*names, *folders):
            other = owner.setdefault(name, folder)
            if other != folder:
                raise MergeError(
                    f"Cannot merge: checks/{name} is in two shard folders ({other} and {folder})",
                    file=f"{folder}/{name}",
                    hint="Each shard folder must hold only the files its own run wrote.",
                )
        found.append(ShardEvidence(folder=folder, names=names, folders=folders))
    return found


def _link_folder(*, evidence: ShardEvidence, target: str, target_fd: int) -> None:
    """Link the listed files of one shard's checks/ into `target` (opened as `target_fd`).

    Names are resolved against open folders, not whole paths: a merge links one file per
    check, 10,000 at a time.
    """
    try:
        source_fd = os.open(evidence.folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        for name in evidence.names:
            try:
                os.link(name, name, src_dir_fd=source_fd, dst_dir_fd=target_fd)
            except OSError:
                _link_or_copy(source=f"{evidence.folder}/{name}", target=f"{target}/{name}")
    finally:
        os.close(source_fd)


def bring_folders(*, evidence: Sequence[ShardEvidence], run_dir: Path) -> None:
    """Every shard's folders below checks/ (the deterministic checks' output folders)."""
    checks_dir = run_dir / "checks"
    for listed in evidence:
        for name in listed.folders:
            _link_tree(source=f"{listed.folder}/{name}", target=f"{checks_dir}/{name}")


def _link_tree(*, source: str, target: str) -> None:
    """A shard's folder below checks/, as it is: folders made, files linked, links kept.

    An empty folder (a deterministic check that left nothing in its output folder: most of
    them) holds no evidence and is not made: one folder per check would cost a merge of
    10,000 checks seconds, and a cached run does not make them either.
    """
    try:
        _link_entries(source=source, target=target)
    except OSError as exc:
        raise OutputDirError(f"Cannot bring {source} into {target}: {exc}") from None


def _link_entries(*, source: str, target: str) -> None:
    with os.scandir(source) as listing:
        entries = list(listing)
    if not entries:
        return
    with contextlib.suppress(FileExistsError):  # made by an earlier attempt (see _link_or_copy)
        os.mkdir(target)
    for entry in entries:
        inside = f"{target}/{entry.name}"
        if entry.is_symlink():
            _symlink_again(source=entry.path, target=inside)
        elif entry.is_dir():
            _link_entries(source=entry.path, target=inside)
        else:
            _link_or_copy(source=entry.path, target=inside)


def _symlink_again(*, source: str, target: str) -> None:
    """A symbolic link as `source` is, kept as it is when an earlier attempt made it."""
    pointing = os.readlink(source)
    try:
        os.symlink(pointing, target)
    except FileExistsError:
        if not os.path.islink(target) or os.readlink(target) != pointing:
            raise


def _link_or_copy(*, source: str, target: str) -> None:
    """A hard link (no bytes copied), else a copy: another file system, or no link support.

    A link already there to the same file was made by an earlier attempt: a forked child
    ended by a signal part-way, whose work is then done again here.
    """
    try:
        os.link(source, target)
    except FileExistsError:
        if not os.path.samefile(source, target):
            raise OutputDirError(f"Cannot link {source} to {target}: it exists") from None
    except OSError:
        try:
            _copy_whole(source=source, target=target)
        except OSError as exc:
            raise OutputDirError(f"Cannot copy {source} to {target}: {exc}") from None


def _copy_whole(*, source: str, target: str) -> None:
    """`source` copied to `target` through a temporary sibling renamed into place: a merge
    stopped part-way (a Ctrl-C, or its child ended by one) never leaves half a copy under the
    evidence's own name."""
    folder, name = os.path.split(target)
    temp = f"{folder}/.{name}.{os.getpid()}.tmp"  # named as core.files.is_temp_file knows
    try:
        shutil.copyfile(source, temp)
        os.replace(temp, target)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)


def bring_evidence(
    *, runs: Sequence[ShardRun], evidence: Sequence[ShardEvidence], run_dir: Path
) -> None:
    """Every shard's checks/ files and frozen scripts, into the merged folder, as they are.

    checks/<stem>.json stays the shard's own copy of each result (byte for byte, naming the
    shard's paths); execute.json and report.json name the merge's.
    """
    checks_dir = str(run_dir / "checks")
    target_fd = os.open(checks_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for listed in evidence:
            _link_folder(evidence=listed, target=checks_dir, target_fd=target_fd)
    finally:
        os.close(target_fd)
    for run in runs:
        for check in run.plan.checks:
            if check.snapshot:
                target = run_dir / check.snapshot
                target.parent.mkdir(parents=True, exist_ok=True)
                _link_or_copy(source=str(run.run_dir / check.snapshot), target=str(target))
