"""Where a `cases_from` glob looks: the files it names, found by walking below its literal
start, through symbolic links to folders as `ls` shows them, and never into the folders
discovery leaves out or eb's own (`Skipped`), and a file's name as the project sees it."""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from eval_banana.core.ownmark import MARK_NAMES, in_own_folder, listed_as_own
from eval_banana.models.stages import ConfigDoc
from eval_banana.projectstate.patterns import (
    could_hold_match,
    file_pattern_regex,
    folder_pattern_regex,
    literal_prefix,
    normalize,
)
from eval_banana.projectstate.prefixes import relative_inside
from eval_banana.settings.folders import own_files, own_folders_below

_GLOB = "*?["


class Skipped(NamedTuple):
    """What a `cases_from` glob never matches in, as discovery never walks it: folders named
    in `[discovery] exclude_dirs` anywhere, and eb's own output, cache and history folders
    (a glob like `**/*.jsonl` would otherwise take the transcripts of earlier runs as cases,
    and grow with every run). Run folders are skipped wherever they lie too (one written with
    `--output-dir`, a shard's), and cache and history folders eb marked (one a changed setting
    left behind), told by their mark (core/ownmark.py), not named here. So
    are the files eb writes beside its folders (`lastfailed.json`, the calibration record, a
    JUnit file): a `**/*.json` glob would take the last run's failures as a dataset. A path
    named without a glob is read wherever it is."""

    names: frozenset[str]
    folders: frozenset[str]  # absolute, normalised
    files: frozenset[str] = frozenset()  # absolute, normalised


def glob_start(*, pattern: str, root: Path) -> Path:
    """The folder a glob's literal start names (`data/qa` for `data/qa/*.jsonl`)."""
    prefix = literal_prefix(normalize(pattern))
    return root / prefix if prefix else root


def in_skipped(*, start: Path, root: Path, skipped: Skipped) -> bool:
    return (
        not skipped.names.isdisjoint(start.relative_to(root).parts)
        or any(
            str(start) == folder or str(start).startswith(folder + os.sep)
            for folder in skipped.folders
        )
        or in_own_folder(path=start, root=root)
    )


class FollowedLink(NamedTuple):
    """A symbolic link to a folder a glob looks through, root-relative: as the glob names it,
    where the link itself lies (its folders' links resolved: as git names it; None outside the
    root), and the folder it leads to (None: outside the root, or the root itself)."""

    named: str
    at: str | None
    leads_to: str | None


def glob_files(
    *, pattern: str, root: Path, skipped: Skipped, walk_skipped: bool = False
) -> Iterator[Path]:
    """The files below `root` a glob names, walking only below its literal start, only into
    folders that may hold a match, and never into a folder it skips: a `**/*.jsonl` would
    otherwise list every file of node_modules before dropping them. `walk_skipped`: below a
    start that lies in a skipped folder, walk anyway (to say what the glob left out)."""
    return GlobWalk(pattern=pattern, root=root, skipped=skipped, walk_skipped=walk_skipped).files()


def followed_links(*, pattern: str, root: Path, skipped: Skipped) -> list[FollowedLink]:
    """The links to folders the glob `pattern` looks through now (where a dataset file may be
    added or removed without git naming the path the glob names it by)."""
    walk = GlobWalk(pattern=pattern, root=root, skipped=skipped)
    for _ in walk.files():
        pass
    return walk.followed


class GlobWalk:
    """One walk for the files a glob names, as `ls` shows them: symbolic links to folders are
    followed, a `*` segment's as a `**`'s. Each folder is walked once, by where it really is:
    a link leading back to a folder above it (a loop) or to one reached already adds nothing,
    and each file is named once, by its path without links when the glob finds it so too,
    else through the link whose path sorts first. Only links cost a `stat`: a plain entry is
    told a folder or a file by its listing."""

    def __init__(
        self, *, pattern: str, root: Path, skipped: Skipped, walk_skipped: bool = False
    ) -> None:
        body = normalize(pattern)
        self._regex = file_pattern_regex(body)
        self._folders = folder_pattern_regex(body)
        self._start = glob_start(pattern=pattern, root=root)
        self._root = root
        self._skipped = skipped
        self._walk_skipped = walk_skipped
        self._top = str(root)
        self._real_top = os.path.realpath(root)
        self._base = len(self._top) + 1
        self._inside = False
        self._walked: set[str] = set()  # the real paths of the folders walked
        self.followed: list[FollowedLink] = []
        # Links to the project root or a folder holding it, not followed: through one the glob
        # would read the whole project again and every folder beside it (all of `/`).
        self.above_root: list[FollowedLink] = []

    def files(self) -> Iterator[Path]:
        # A literal start inside a skipped folder (`node_modules/pkg/*.jsonl`) is skipped
        # whole; below it, the walk never enters one.
        self._inside = in_skipped(start=self._start, root=self._root, skipped=self._skipped)
        if self._inside and not self._walk_skipped:
            return
        start = str(self._start)
        links: list[tuple[str, str]] = []  # (named path, the folder it leads to), a heap
        # Every folder reached without a link first, so that a folder also reached through
        # one is named by its plain path; then the links, by path, as each tree adds some.
        yield from self._tree(named=start, real=os.path.realpath(start), links=links)
        while links:
            named, real = heapq.heappop(links)
            if real not in self._walked:
                yield from self._tree(named=named, real=real, links=links)

    def _tree(self, *, named: str, real: str, links: list[tuple[str, str]]) -> Iterator[Path]:
        skipped_files = self._skipped.files
        pending = [(named, real)]
        while pending:
            folder, real_folder = pending.pop()
            if real_folder in self._walked:
                continue  # reached before: through a link that loops, or another way
            self._walked.add(real_folder)
            try:
                with os.scandir(folder) as listing:
                    entries = list(listing)
            except OSError:
                continue  # unreadable, or gone: as os.walk passes it by
            if self._own(folder=folder, entries=entries):
                continue
            through_link = real_folder != folder
            for entry in entries:
                path = os.path.join(folder, entry.name)
                kind = _entry_kind(entry)
                if kind in ("link to folder", "link to nothing") and self._enters(
                    path=path, name=entry.name, real=None
                ):
                    at = os.path.join(real_folder, entry.name)
                    self._follow(path=path, at=at, links=links, dangling=kind != "link to folder")
                if kind == "link to folder":
                    continue
                if kind == "folder":
                    real_path_of = os.path.join(real_folder, entry.name)
                    if self._enters(path=path, name=entry.name, real=real_path_of):
                        pending.append((path, real_path_of))
                    continue
                # Whatever matches, a FIFO or a dangling link too: left out quietly, it would
                # take its rows out of the family without a word (dataset_paths refuses it).
                if not self._regex.fullmatch(path[self._base :].replace(os.sep, "/")):
                    continue
                if path in skipped_files or (
                    through_link and os.path.join(real_folder, entry.name) in skipped_files
                ):
                    continue
                yield Path(path)

    def _own(self, *, folder: str, entries: list[os.DirEntry[str]]) -> bool:
        """Whether `folder` is eb's: a run folder below the root, wherever it was written,
        holds only eb's output, whose transcripts and evidence match `**/*.jsonl` as well as
        the dataset does; so does a cache or history folder eb marked (one a changed setting
        left behind)."""
        if self._inside or folder == self._top:
            return False
        marks = MARK_NAMES.intersection(entry.name for entry in entries)
        return bool(marks) and listed_as_own(folder=folder, names=marks)

    def _enters(self, *, path: str, name: str, real: str | None) -> bool:
        """Whether the walk goes into the folder at `path` (`real`: where it really is, when
        a link on the way makes that another path): not one it skips, and one that may hold a
        file the glob names."""
        if not self._inside:
            folders = self._skipped.folders
            if (
                name in self._skipped.names
                or path in folders
                or (real is not None and real in folders)
            ):
                return False
        return could_hold_match(regex=self._folders, folder=path[self._base :].replace(os.sep, "/"))

    def _follow(self, *, path: str, at: str, links: list[tuple[str, str]], dangling: bool) -> None:
        """Queue the folder the link at `path` (really at `at`) leads to, unless it is one no
        glob looks in (eb's own output, a folder discovery leaves out): a link does not make
        it the project's. A link to nothing is only noted: the folder it names, gone, may be
        where the rows of a revision were."""
        real = os.path.realpath(path)
        if not self._inside and self._leads_where_no_glob_looks(real=real):
            return
        top = self._real_top
        link = FollowedLink(
            named=path[self._base :].replace(os.sep, "/"),
            at=relative_inside(path=at, root=top),
            # The root itself, led to (a loop): nothing of a revision lies behind it alone.
            leads_to=None if real == top else relative_inside(path=real, root=top),
        )
        if real not in self._walked and (
            real == top or top.startswith(real.rstrip(os.sep) + os.sep)
        ):
            self.above_root.append(link)
            return
        self.followed.append(link)
        if not dangling:
            heapq.heappush(links, (path, real))

    def _leads_where_no_glob_looks(self, *, real: str) -> bool:
        if any(
            real == folder or real.startswith(folder + os.sep) for folder in self._skipped.folders
        ):
            return True
        inside = relative_inside(path=real, root=self._real_top)
        if inside is None or inside == ".":
            return False  # outside the project: only what is in it can be eb's or left out
        return in_skipped(start=self._root / inside, root=self._root, skipped=self._skipped)


def _entry_kind(entry: os.DirEntry[str]) -> str:
    """A listed entry as a walk takes it: "folder", "link to folder", "link to nothing", or
    "file" (anything else: a file, a FIFO, a link to a file, or one that loops). Only a link
    is `stat`ed."""
    try:
        if not entry.is_symlink():
            return "folder" if entry.is_dir(follow_symlinks=False) else "file"
        if entry.is_dir():
            return "link to folder"
        entry.stat()
    except FileNotFoundError:
        return "link to nothing"
    except OSError:
        pass  # a link that loops, or an entry gone since the listing
    return "file"


def dataset_scope(pattern: str) -> str:
    """The root-relative folder a `cases_from` glob looks in ("" for the whole project), or the
    file a path names: where a dataset file it names can be added or removed."""
    body = normalize(pattern)
    return literal_prefix(body) if is_glob(pattern) else body


def names_path(*, pattern: str, path: str, root: Path, skipped: Skipped) -> bool:
    """Whether `cases_from` `pattern` names the root-relative `path`, a file there now or not
    (one removed since a revision): the path itself, or a match of the glob outside the
    folders it never looks in."""
    if not is_glob(pattern):
        return normalize(pattern) == path
    if not file_pattern_regex(normalize(pattern)).fullmatch(path):
        return False
    if os.path.normpath(root / path) in skipped.files:
        return False
    return not in_skipped(start=(root / path).parent, root=root, skipped=skipped)


def looks_into(*, pattern: str, path: str, root: Path, skipped: Skipped) -> bool:
    """Whether the `cases_from` glob `pattern` looks into the folder at root-relative `path`,
    a folder there now or not (a link to one removed since a revision): one below its start
    that may hold a file it names, outside the folders it never looks in."""
    if not is_glob(pattern):
        return False
    body = normalize(pattern)
    start = literal_prefix(body)
    if start and path != start and not path.startswith(start + "/"):
        return False
    if not could_hold_match(regex=folder_pattern_regex(body), folder=path):
        return False
    return not in_skipped(start=root / path, root=root, skipped=skipped)


def dataset_skipped(*, config: ConfigDoc) -> Skipped:
    """Where the families' `cases_from` globs never look, as discovery never walks there:
    `[discovery] exclude_dirs`, and eb's own folders and files inside the project."""
    return Skipped(
        names=frozenset(config.settings.discovery.exclude_dirs),
        folders=own_folders_below(config=config),
        files=frozenset(os.path.normpath(path) for path in own_files(config=config)),
    )


def is_glob(pattern: str) -> bool:
    return any(char in pattern for char in _GLOB)


def relative(*, path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()
