"""The shards' evidence brought into a merged run folder (`eb merge`): each shard's `checks/`
files and output folders, and its frozen scripts (`stages/snapshots/`), hard-linked where the
file system allows, else copied. Done again over an earlier attempt's part (a forked child
ended by a signal), it leaves the same folder. What two shards may both hold (a family's frozen
script, when its cases fell in both) is checked before anything is written: one copy is
brought, and copies that differ are refused.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from eval_banana.core.errors import MergeError, OutputDirError
from eval_banana.core.files import copy_file_atomic
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


def shard_snapshots(*, runs: Sequence[ShardRun]) -> dict[str, str]:
    """Run-relative path of each frozen script the shards' plans name -> the shard's copy to
    bring (the first shard's that holds it).

    A family's cases share one frozen script, and every shard that ran some of them froze its
    own copy under the same name: the copies must hold the same bytes, or one of the folders
    was changed after its run, and the merge is refused (nothing written yet). Only names in
    more than one shard are read: each shard's own are brought as they are.
    """
    chosen: dict[str, str] = {}
    for run in runs:
        for name in dict.fromkeys(c.snapshot for c in run.plan.checks if c.snapshot):
            copy = str(run.run_dir / name)
            first = chosen.setdefault(name, copy)
            if first != copy:
                _refuse_other_copy(name=name, first=first, other=copy)
    return chosen


def _refuse_other_copy(*, name: str, first: str, other: str) -> None:
    """MergeError unless the files `first` and `other` (two shards' copies of the frozen
    script `name`) both read, and hold the same bytes."""
    if _frozen_bytes(name=name, copy=first) == _frozen_bytes(name=name, copy=other):
        return
    raise MergeError(
        f"Cannot merge: the shards froze {name} with other bytes ({other} differs from "
        f"{first}), though their plan names one script",
        file=other,
        hint="A shard folder was changed after its run: run that shard again, and merge.",
    )


def _frozen_bytes(*, name: str, copy: str) -> bytes:
    try:
        with open(copy, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise MergeError(
            f"Cannot merge: {copy}, a shard's copy of the frozen script {name}, cannot be "
            f"read ({exc.strerror or exc})",
            file=copy,
            hint="A shard folder was changed after its run: run that shard again, and merge.",
        ) from None


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
            _link_tree(
                source=f"{listed.folder}/{name}",
                target=f"{checks_dir}/{name}",
                temp_folder=str(checks_dir),
            )


def _link_tree(*, source: str, target: str, temp_folder: str) -> None:
    """A shard's folder below checks/, as it is: folders made, files linked, links kept.
    A file copied goes through a temporary file in `temp_folder` (checks/): a check's own
    folder is never cleaned of what a killed merge left, checks/ is.

    An empty folder (a deterministic check that left nothing in its output folder: most of
    them) holds no evidence and is not made: one folder per check would cost a merge of
    10,000 checks seconds, and a cached run does not make them either.
    """
    try:
        _link_entries(source=source, target=target, temp_folder=temp_folder)
    except OSError as exc:
        raise OutputDirError(f"Cannot bring {source} into {target}: {exc}") from None


def _link_entries(*, source: str, target: str, temp_folder: str) -> None:
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
            _link_entries(source=entry.path, target=inside, temp_folder=temp_folder)
        else:
            _link_or_copy(source=entry.path, target=inside, temp_folder=temp_folder)


def _symlink_again(*, source: str, target: str) -> None:
    """A symbolic link as `source` is, kept as it is when an earlier attempt made it."""
    pointing = os.readlink(source)
    try:
        os.symlink(pointing, target)
    except FileExistsError:
        if not os.path.islink(target) or os.readlink(target) != pointing:
            raise


def _link_or_copy(*, source: str, target: str, temp_folder: str | None = None) -> None:
    """A hard link (no bytes copied), else a copy: another file system, or no link support.
    `temp_folder`: where a copy's temporary file goes, when not beside `target`.

    A link already there to the same file was made by an earlier attempt: a forked child
    ended by a signal part-way, whose work is then done again here.
    """
    try:
        os.link(source, target)
    except FileExistsError:
        if not os.path.samefile(source, target) and not _same_bytes(source, target):
            raise OutputDirError(f"Cannot link {source} to {target}: it exists") from None
    except OSError:
        try:
            # Through a temporary file renamed into place: a merge stopped part-way (a Ctrl-C,
            # or its child ended by one) never leaves half a copy under the evidence's name,
            # and one killed leaves a file the next writer of the folder removes.
            copy_file_atomic(source=source, target=target, temp_folder=temp_folder)
        except OSError as exc:
            raise OutputDirError(f"Cannot copy {source} to {target}: {exc}") from None


def _same_bytes(one: str, other: str) -> bool:
    """Whether two files hold the same bytes (an earlier attempt's copy of the one)."""
    try:
        with open(one, "rb") as first, open(other, "rb") as second:
            return first.read() == second.read()
    except OSError:
        return False


def bring_evidence(
    *, snapshots: Mapping[str, str], evidence: Sequence[ShardEvidence], run_dir: Path
) -> None:
    """Every shard's checks/ files and the frozen scripts (`snapshots`, from
    `shard_snapshots`), into the merged folder, as they are.

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
    for name, source in snapshots.items():
        target = run_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        _link_or_copy(source=source, target=str(target))
