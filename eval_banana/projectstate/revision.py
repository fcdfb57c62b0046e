"""What differs between a git revision and the work tree (committed, staged, unstaged and
untracked changes all count), for `--changed-since`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from eval_banana.errors import ProjectStateError
from eval_banana.projectstate import git
from eval_banana.projectstate.state import (
    StateDiff,
    expand_ignored,
    relative_folders,
    skipped,
    under_any,
)


class UnknownRevision(ProjectStateError):
    """The revision does not name a commit of the repository."""


def resolve_revision(*, repo: git.Repository, revision: str) -> str:
    """The commit id `revision` names; UnknownRevision when it names none."""
    if not revision.strip() or revision.startswith("-"):
        raise UnknownRevision(f"'{revision}' is not a revision name")
    process = git.start(
        args=["rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"], cwd=repo.top
    )
    out, _ = process.communicate()
    if process.returncode != 0 or not out.strip():
        raise UnknownRevision(f"'{revision}' names no commit in the repository at {repo.top}")
    return out.decode("ascii").strip()


class Changes(NamedTuple):
    commit: str  # the commit the revision named
    diff: StateDiff  # what the work tree adds, removes and changes relative to it
    ignored: list[str]  # files git ignores (which it cannot compare), when asked for


def changes_since(
    *,
    root: str,
    revision: str,
    prefixes: Sequence[str] | None = None,
    skip_folders: Sequence[str | Path] = (),
    with_ignored: bool = False,
    excluded_names: Iterable[str] = (".git",),
) -> Changes:
    """What differs between `revision` and the work tree below `root` (paths relative to it).

    Raises git.NotARepository outside a work tree and UnknownRevision for an unknown ref.
    `prefixes` narrows the comparison to paths at or below them; `with_ignored` also lists the
    ignored files there (outside folders named in `excluded_names`), which git cannot compare.
    """
    top = os.path.realpath(root)
    repo = git.find_repository(root=top)
    commit = resolve_revision(repo=repo, revision=revision)
    if prefixes is not None and not prefixes:
        return Changes(commit=commit, diff=StateDiff(added=(), removed=(), changed=()), ignored=[])
    skip = relative_folders(root=top, folders=skip_folders)
    spec = git.pathspecs(repo=repo, prefixes=prefixes)
    untracked_process = git.start(
        args=["ls-files", "-o", "--exclude-standard", "-z", *spec], cwd=repo.top
    )
    ignored_process = (
        git.start(
            args=["ls-files", "-o", "-i", "--exclude-standard", "--directory", "-z", *spec],
            cwd=repo.top,
        )
        if with_ignored
        else None
    )
    # The porcelain `diff` refreshes stat information in memory, so a file that was only
    # touched does not count as changed (and no optional lock means .git/index is not written).
    output = git.run(
        args=[
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
            "--name-status",
            "-z",
            commit,
            *spec,
        ],
        cwd=repo.top,
        what="diff",
    )
    untracked = git.split_paths(
        output=git.finish(process=untracked_process, what="ls-files -o"), repo=repo
    )
    ignored: list[str] = []
    if ignored_process is not None:
        entries = git.split_paths(
            output=git.finish(process=ignored_process, what="ls-files -i"), repo=repo
        )
        excluded = frozenset(excluded_names) | {".git"}
        ignored = sorted(expand_ignored(root=top, entries=entries, excluded=excluded, skip=skip))
    added: set[str] = {path for path in untracked if not path.endswith("/")}
    removed: set[str] = set()
    changed: set[str] = set()
    cut = len(repo.prefix.encode("utf-8", "surrogateescape"))
    fields = [item for item in output.split(b"\0") if item]
    # name-status -z: one status field (A, D, M, T, U...), then the path it is about.
    for status, raw_path in zip(fields[0::2], fields[1::2], strict=True):
        target = {b"A": added, b"D": removed}.get(status[:1], changed)
        target.add(os.fsdecode(raw_path[cut:]))
    if prefixes is not None and not git.narrows(prefixes):
        # git compared the whole root: keep what lies below the prefixes asked for.
        added, removed, changed = (
            {p for p in group if under_any(path=p, prefixes=prefixes)}
            for group in (added, removed, changed)
        )
        ignored = [p for p in ignored if under_any(path=p, prefixes=prefixes)]
    diff = StateDiff(
        added=tuple(sorted(p for p in added if not skipped(p, skip))),
        removed=tuple(sorted(p for p in removed if not skipped(p, skip))),
        changed=tuple(sorted(p for p in changed if not skipped(p, skip))),
    )
    return Changes(commit=commit, diff=diff, ignored=ignored)
