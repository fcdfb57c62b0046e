"""What differs between a git revision and the work tree (committed, staged, unstaged and
untracked changes all count), for `--changed-since`."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Literal, NamedTuple

from eval_banana.core.errors import ProjectStateError
from eval_banana.core.ownmark import OwnFolders, own_folders_listed
from eval_banana.projectstate import git
from eval_banana.projectstate.blobs import (
    SUBMODULE,
    SYMLINK,
    FileIdentity,
    file_identity,
    read_identity,
)
from eval_banana.projectstate.gitlisting import expand_ignored
from eval_banana.projectstate.links import links_met
from eval_banana.projectstate.prefixes import (
    holding,
    relative_folders,
    relative_inside,
    skipped,
    under_any,
)
from eval_banana.projectstate.state import StateDiff, hash_file

# Why a revision names no commit, for the hint said with it: `not_a_name` (blank, or read by
# git as an option), `range` (two commits: `a..b`, `a...b`, `a^!`), `unknown` (no such commit
# here: not fetched, or rewritten and pruned).
RevisionProblem = Literal["not_a_name", "range", "unknown"]


class UnknownRevision(ProjectStateError):
    """The revision does not name a commit of the repository; `problem` says why."""

    def __init__(self, message: str, *, problem: RevisionProblem) -> None:
        super().__init__(message)
        self.problem: RevisionProblem = problem


def _may_name_a_revision(revision: str) -> bool:
    """Not blank, and not read by git as an option."""
    return bool(revision.strip()) and not revision.startswith("-")


def _names_a_range(revision: str) -> bool:
    """Whether git reads `revision` as a range of commits. No ref or commit name holds "..",
    so one before a `:` (after it: a path, or the text a `:/` search looks for) is a range."""
    name = revision.partition(":")[0]
    return ".." in name or name.endswith(("^!", "^@")) or "^-" in name


def resolve_revision(*, repo: git.Repository, revision: str) -> str:
    """The commit id `revision` names; UnknownRevision when it names none."""
    if not _may_name_a_revision(revision):
        raise UnknownRevision(f"'{revision}' is not a revision name", problem="not_a_name")
    if _names_a_range(revision):
        raise UnknownRevision(
            f"'{revision}' is a range of commits, not one commit", problem="range"
        )
    process = git.start(
        args=["rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"], cwd=repo.top
    )
    out, _ = process.communicate()
    if process.returncode != 0 or not out.strip():
        raise UnknownRevision(
            f"'{revision}' names no commit in the repository at {repo.top}", problem="unknown"
        )
    return out.decode("ascii").strip()


def commit_named(*, root: str, revision: str) -> str | None:
    """The commit id `revision` names in the work tree holding `root`, by one git command;
    None when git cannot say (no work tree, no git, an unknown revision): whoever compares
    with it then tells why, as `changes_since` does."""
    if not _may_name_a_revision(revision) or not git.may_be_in_work_tree(root=root):
        return None
    try:
        process = git.start(
            args=["rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"], cwd=root
        )
    except git.NotARepository:
        return None
    out, _ = process.communicate()
    named = out.decode("ascii", "replace").strip()
    return named if process.returncode == 0 and named else None


class Changes(NamedTuple):
    repo: git.Repository  # the work tree compared, for reading a file as the commit holds it
    commit: str  # the commit the revision named
    diff: StateDiff  # what the work tree adds, removes and changes relative to it
    ignored: list[str]  # files git ignores (which it cannot compare), when asked for
    # Committed symbolic links, unchanged themselves, whose file they lead to changed since the
    # commit (or lies outside the root, where git cannot tell, or is reached through another
    # link pointed elsewhere since): link -> that file's root-relative path (None: outside, or
    # through such a link, so git holds no earlier state of it). git counts a link by its
    # text; a reader reads the file behind it.
    followed: Mapping[str, str | None] = {}
    # Paths that are submodules in the index or were in the commit: each one entry, counted by
    # the commit it records, which an input pattern naming a file inside it matches.
    submodules: frozenset[str] = frozenset()


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
    comparison = Comparison.start(
        root=root,
        revision=revision,
        prefixes=prefixes,
        with_ignored=with_ignored,
        skip_folders=skip_folders,
    )
    try:
        return comparison.finish(
            prefixes=prefixes,
            skip_folders=skip_folders,
            with_ignored=with_ignored,
            excluded_names=excluded_names,
        )
    finally:
        comparison.close()


class Comparison:
    """git comparing a revision with the work tree, started now and read later.

    Two commands: `diff --cached` (the revision against the index: no file is read) and one
    `status` (the index against the work tree, the untracked files and, when asked, the ignored
    ones, in a single walk of the tree). Together they say what differs between the revision
    and the work tree; a file staged and then changed back in the work tree counts as changed,
    which at worst selects a check too many. Started early (before eb walks and reads the check
    files), they run on the other core meanwhile; started for the whole root (`prefixes` None),
    `finish` still keeps only what lies below the prefixes the checks turn out to need.
    """

    def __init__(
        self,
        *,
        top: str,
        repo: git.Repository,
        revision: str,
        prefixes: Sequence[str] | None,
        with_ignored: bool,
        processes: dict[str, subprocess.Popen[bytes]],
    ) -> None:
        self.top = top
        self.repo = repo
        self.revision = revision
        self.prefixes = prefixes
        self.with_ignored = with_ignored
        self._processes = processes

    @classmethod
    def start(
        cls,
        *,
        root: str,
        revision: str,
        prefixes: Sequence[str] | None = None,
        with_ignored: bool = True,
        skip_folders: Sequence[str | Path] = (),
    ) -> Comparison:
        """Start git's commands; git.NotARepository outside a work tree. `skip_folders`: never
        walked (their files never count: `finish` drops them whatever git says)."""
        top = os.path.realpath(root)
        repo = git.find_repository(root=top)
        processes: dict[str, subprocess.Popen[bytes]] = {}
        comparison = cls(
            top=top,
            repo=repo,
            revision=revision,
            prefixes=prefixes,
            with_ignored=with_ignored,
            processes=processes,
        )
        if prefixes is not None and not prefixes:
            return comparison  # nothing to compare (finish still checks the revision)
        spec = git.pathspecs(
            repo=repo, prefixes=prefixes, leave_out=relative_folders(root=top, folders=skip_folders)
        )
        # The commands that read the index alone also list a submodule holding a prefix.
        holders = git.holder_pathspecs(repo=repo, prefixes=prefixes)
        try:
            # `status` refreshes stat information in memory, so a file that was only touched
            # does not count as changed (and no optional lock: .git/index is not written).
            processes["status"] = git.start(
                args=[
                    "status",
                    "--porcelain=v2",
                    "-z",
                    "--untracked-files=all",
                    f"--ignored={'matching' if with_ignored else 'no'}",
                    "--no-renames",
                    "--ignore-submodules=none",
                    *spec,
                ],
                cwd=repo.top,
            )
            # Entries git never compares with the work tree, which `status` never reports.
            processes["index"] = git.start(args=[*git.INDEX_LISTING, *spec, *holders], cwd=repo.top)
            if _may_name_a_revision(revision) and not _names_a_range(revision):
                # `revision^{commit}` fails here as it does in rev-parse (finish asks that).
                # The user's config must not hide a change: a submodule's `ignore` in
                # .gitmodules or diff.ignoreSubmodules would drop a newly recorded commit
                # (the flag outranks both), diff.relative would drop paths outside the folder.
                processes["cached"] = git.start(
                    args=[
                        "-c",
                        "diff.relative=false",
                        "diff",
                        "--cached",
                        "--ignore-submodules=none",
                        "--no-color",
                        "--no-ext-diff",
                        "--no-textconv",
                        "--no-renames",
                        "--raw",
                        "--no-abbrev",
                        "-z",
                        f"{revision}^{{commit}}",
                        *spec,
                        *holders,
                    ],
                    cwd=repo.top,
                )
        except BaseException:
            comparison.close()
            raise
        return comparison

    def close(self) -> None:
        """End and reap whatever git command is still running (its output is not wanted)."""
        for process in self._processes.values():
            git.stop(process=process)
        self._processes.clear()

    def finish(
        self,
        *,
        prefixes: Sequence[str] | None,
        skip_folders: Sequence[str | Path] = (),
        with_ignored: bool = False,
        excluded_names: Iterable[str] = (".git",),
    ) -> Changes:
        """The changes below `prefixes` (which must lie within those it was started for)."""
        repo, top = self.repo, self.top
        commit = resolve_revision(repo=repo, revision=self.revision)
        if prefixes is not None and not prefixes:
            return Changes(
                repo=repo,
                commit=commit,
                diff=StateDiff(added=(), removed=(), changed=()),
                ignored=[],
            )
        assert self.with_ignored or not with_ignored, "ignored files were not asked of git"
        skip = relative_folders(root=top, folders=skip_folders)
        cached, submodules_then = _raw_status(
            output=git.finish(process=self._processes.pop("cached"), what="diff --cached"),
            repo=repo,
        )
        status = _status_entries(
            output=git.finish(process=self._processes.pop("status"), what="status"), repo=repo
        )
        listing = git.finish(process=self._processes.pop("index"), what="ls-files -s")
        submodules = git.index_gitlinks(output=listing, repo=repo)
        status.update(self._holding_status(submodules=submodules))
        unwatched = git.unwatched_entries(output=listing, repo=repo)
        status.update(_unwatched_status(root=top, repo=repo, unwatched=unwatched, status=status))
        added, removed, changed = _against_revision(cached=cached, status=status)
        ignored: list[str] = []
        if with_ignored:
            entries = [path for path, kind in status.items() if kind == "!"]
            excluded = frozenset(excluded_names) | {".git"}
            ignored = sorted(
                expand_ignored(root=top, entries=entries, excluded=excluded, skip=skip)
            )
        if prefixes is not None and (not git.narrows(prefixes) or self.prefixes != prefixes):
            # git compared more than was asked for: keep what lies below the prefixes.
            added, removed, changed = (
                {p for p in group if under_any(path=p, prefixes=prefixes)}
                for group in (added, removed, changed)
            )
            ignored = [p for p in ignored if under_any(path=p, prefixes=prefixes)]
        # Run folders and marked cache or history folders no setting names are eb's too.
        skip = (*skip, *own_folders_listed(root=top, paths=chain(added, changed)))
        in_own = OwnFolders(root=top)
        diff = StateDiff(
            added=tuple(sorted(p for p in added if not skipped(p, skip) and not in_own(p))),
            removed=tuple(sorted(p for p in removed if not skipped(p, skip) and not in_own(p))),
            changed=tuple(sorted(p for p in changed if not skipped(p, skip) and not in_own(p))),
        )
        ignored = [p for p in ignored if not skipped(p, skip) and not in_own(p)]
        links = [
            link
            for link in git.index_links(output=listing, repo=repo)
            if (prefixes is None or under_any(path=link, prefixes=prefixes))
            and not skipped(link, skip)
        ]
        followed = _followed_changes(
            top=top, repo=repo, commit=commit, links=links, diff=diff, ignored=ignored
        )
        return Changes(
            repo=repo,
            commit=commit,
            diff=diff,
            ignored=ignored,
            followed=followed,
            submodules=submodules | submodules_then,
        )

    def _holding_status(self, *, submodules: frozenset[str]) -> dict[str, str]:
        """What the work tree holds at the submodules that hold a prefix (listed by the index
        listing's holder pathspecs, which `status` never gets: it would walk each folder such
        a pathspec names), as `status` says it: one more `status` for them, only when a
        comparison narrowed to its prefixes meets one."""
        prefixes = self.prefixes
        if not git.narrows(prefixes) or not submodules:
            return {}
        assert prefixes is not None
        held = holding(sorted(submodules), prefixes)
        if not held:
            return {}
        output = git.run(
            args=[
                "status",
                "--porcelain=v2",
                "-z",
                "--untracked-files=no",
                "--ignored=no",
                "--ignore-submodules=none",
                "--",
                *(f":(literal){self.repo.prefix}{path}" for path in held),
            ],
            cwd=self.repo.top,
            what="status",
        )
        return _status_entries(output=output, repo=self.repo)


def _followed_changes(
    *,
    top: str,
    repo: git.Repository,
    commit: str,
    links: Sequence[str],
    diff: StateDiff,
    ignored: Sequence[str],
) -> dict[str, str | None]:
    """The committed links, unchanged themselves, whose file they lead to now differs from
    that file in `commit`: link -> the file's root-relative path (None: outside the root, which
    git cannot compare, so the link counts as changed). A file git ignores, or one the commit
    has not, counts as changed as well, and so does a link whose way passes another link
    (`in/data.txt -> ../current/data.txt`, `current -> v1`) pointed elsewhere since (None too):
    it then leads to another file, however alike. Only links are read: most projects have
    none, and a link whose text leads where it leads costs no more."""
    changed = diff.paths
    ignored_now = frozenset(ignored)
    found: dict[str, str | None] = {}
    asked: dict[str, str] = {}  # link -> the file it leads to, compared with the commit below
    passed: dict[str, list[str]] = {}  # link -> the other links on its way, compared so too
    for link in links:
        if link in changed:
            continue  # retargeted, replaced or gone: the link's own change counts already
        full = os.path.join(top, link)
        real = os.path.realpath(full)
        target = relative_inside(path=real, root=top)
        if target is None or target in changed or target in ignored_now:
            found[link] = target
            continue
        if target != link:
            asked[link] = target
        if real != _led_to_by_text(link=full):
            # Its text alone does not lead there: other links lie on its way.
            passed[link] = [met for met in links_met(path=full, root=top) if met != link]
    if asked or passed:
        wanted = {*asked.values(), *chain.from_iterable(passed.values())}
        then = _identities_at(repo=repo, commit=commit, paths=sorted(wanted))
        for link, target in asked.items():
            # A link to a folder leads to no file on either side: no reader reads through it.
            now = read_identity(path=os.path.join(top, target), object_format=repo.object_format)
            if then.get(target) != now:
                found[link] = target
        for link, met in passed.items():
            if any(_link_moved(top=top, repo=repo, link=other, then=then) for other in met):
                found[link] = None  # what it led to then is no earlier state of what it reads
    return found


def _led_to_by_text(*, link: str) -> str | None:
    """Where the symbolic link at absolute `link` leads by its own text, no other link on the
    way followed; None when it is no link (any longer)."""
    try:
        text = os.readlink(link)
    except OSError:
        return None
    return os.path.normpath(os.path.join(os.path.dirname(link), text))


def _link_moved(
    *, top: str, repo: git.Repository, link: str, then: Mapping[str, FileIdentity]
) -> bool:
    """Whether the link at root-relative `link` is not what `then` (the commit) held there:
    pointed elsewhere, or no link there then."""
    now = file_identity(path=os.path.join(top, link), object_format=repo.object_format)
    return then.get(link) != now


def _identities_at(
    *, repo: git.Repository, commit: str, paths: Sequence[str]
) -> dict[str, FileIdentity]:
    """Root-relative path -> its mode and blob id in `commit`, for those of `paths` it holds."""
    output = git.run(
        args=["ls-tree", "-z", "--full-tree", commit, "--", *(repo.prefix + p for p in paths)],
        cwd=repo.top,
        what=f"ls-tree of {commit[:12]}",
    )
    cut = len(repo.prefix)
    found: dict[str, FileIdentity] = {}
    for record in output.decode("utf-8", "surrogateescape").split("\0"):
        head, _, path = record.partition("\t")
        fields = head.split(" ")
        if len(fields) == 3 and fields[1] == "blob":
            found[path[cut:]] = FileIdentity(fields[0], fields[2])
    return found


_GITLINK_MODE = SUBMODULE.encode("ascii")


def _raw_status(*, output: bytes, repo: git.Repository) -> tuple[dict[str, str], frozenset[str]]:
    """`diff --raw -z` -> (project-relative path: its status letter (A, D, M, T...), the paths
    that are a submodule on either side)."""
    cut = git.prefix_length(repo=repo)
    fields = [item for item in output.split(b"\0") if item]
    statuses: dict[str, str] = {}
    submodules: set[str] = set()
    # One `:<mode> <mode> <id> <id> <status>` field, then the path it is about.
    for head, raw_path in zip(fields[0::2], fields[1::2], strict=True):
        path = os.fsdecode(raw_path[cut:])
        parts = head.split(b" ")
        statuses[path] = parts[-1][:1].decode("ascii", "replace")
        if _GITLINK_MODE in (parts[0][1:], parts[1]):
            submodules.add(path)
    return statuses, frozenset(submodules)


# Fields before the path in `status --porcelain=v2` records: ordinary (1), renamed or copied
# (2, followed by one more NUL-separated path), unmerged (u).
_FIELDS_BEFORE_PATH = {b"1": 8, b"2": 9, b"u": 10}


def _status_entries(*, output: bytes, repo: git.Repository) -> dict[str, str]:
    """`status --porcelain=v2 -z` -> project-relative path: what the work tree holds there.

    "?" untracked, "!" ignored, "D" deleted from the work tree (or unmerged and gone), "M" any
    other difference from the index.
    """
    cut = git.prefix_length(repo=repo)
    records = output.split(b"\0")
    entries: dict[str, str] = {}
    position = 0
    while position < len(records):
        record = records[position]
        position += 1
        kind = record[:1]
        if kind in (b"?", b"!"):
            entries[os.fsdecode(record[2:][cut:])] = kind.decode()
            continue
        count = _FIELDS_BEFORE_PATH.get(kind)
        if count is None:
            continue  # an empty field at the end (or a header line, which -z never prints)
        parts = record.split(b" ", count)
        if kind == b"2":
            position += 1  # the original path of a rename (--no-renames: not expected)
        path = os.fsdecode(parts[count][cut:])
        worktree = parts[1][1:2]
        if kind == b"u":
            # git prints the path from the repository's top, the project may lie below it.
            on_disk = os.path.join(repo.top, os.fsdecode(parts[count]))
            entries[path] = "M" if os.path.lexists(on_disk) else "D"
        elif worktree == b"D":
            entries[path] = "D"
        elif worktree != b".":
            entries[path] = "M"
        elif parts[1][:1] == b"D":
            entries[path] = "D"  # removed from the index (git rm): gone from the work tree too
    return entries


def _unwatched_status(
    *,
    root: str,
    repo: git.Repository,
    unwatched: dict[str, FileIdentity],
    status: dict[str, str],
) -> dict[str, str]:
    """What the work tree holds at the entries git never compares with it, as `status` would
    say it: "D" for a file absent (as a sparse checkout leaves it), "M" for other bytes or
    another mode."""
    found: dict[str, str] = {}
    for path, in_index in unwatched.items():
        if path in status:
            continue
        now = hash_file(root=root, path=path, fmt=repo.object_format)
        if now is None:
            found[path] = "D"
        elif now != in_index:
            found[path] = "M"
    return found


def _against_revision(
    *, cached: dict[str, str], status: dict[str, str]
) -> tuple[set[str], set[str], set[str]]:
    """(added, removed, changed) between the revision and the work tree.

    `cached` compares the revision with the index, `status` the index with the work tree: a
    path absent from `cached` is in the revision exactly when it is in the index.
    """
    added: set[str] = set()
    removed: set[str] = set()
    changed: set[str] = set()
    for path in cached.keys() | {p for p, kind in status.items() if kind != "!"}:
        in_cache = cached.get(path)
        worktree = status.get(path)
        in_index = in_cache != "D" and worktree != "?"
        at_revision = in_cache != "A" if in_cache is not None else in_index
        now = worktree == "?" or (in_index and worktree != "D")
        if at_revision and now:
            changed.add(path)
        elif now:
            added.add(path)
        elif at_revision:
            removed.add(path)
    return added, removed, changed


def links_at(*, repo: git.Repository, commit: str, paths: Sequence[str]) -> frozenset[str]:
    """Those of the root-relative `paths` that `commit` holds as symbolic links (one `git
    ls-tree`; none asked, none run)."""
    if not paths:
        return frozenset()
    held = _identities_at(repo=repo, commit=commit, paths=paths)
    return frozenset(path for path, identity in held.items() if identity.mode == SYMLINK)


def file_at(*, repo: git.Repository, commit: str, path: str) -> bytes:
    """The content of the project file `path` (root-relative) in `commit`, as git stores it;
    ProjectStateError when the commit has no such file."""
    return git.run(
        args=["cat-file", "blob", f"{commit}:{repo.prefix}{path}"],
        cwd=repo.top,
        what=f"cat-file of {path} in {commit[:12]}",
    )
