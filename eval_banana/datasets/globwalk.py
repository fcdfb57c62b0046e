"""Where a `cases_from` glob looks: the files it names, found by walking below its literal
start and never into the folders discovery leaves out or eb's own (`Skipped`), and a file's
name as the project sees it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from eval_banana.core.ownmark import MARK_NAMES, in_own_folder, listed_as_own
from eval_banana.models.stages import ConfigDoc
from eval_banana.projectstate.patterns import file_pattern_regex, literal_prefix, normalize
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


def glob_files(
    *, pattern: str, root: Path, skipped: Skipped, walk_skipped: bool = False
) -> Iterator[Path]:
    """The files below `root` a glob names, walking only below its literal start and never
    into a folder it skips: a `**/*.jsonl` would otherwise list every file of node_modules
    before dropping them (symlinked folders are not followed). `walk_skipped`: below a start
    that lies in a skipped folder, walk anyway (to say what the glob left out)."""
    regex = file_pattern_regex(normalize(pattern))
    start = glob_start(pattern=pattern, root=root)
    # A literal start inside a skipped folder (`node_modules/pkg/*.jsonl`) is skipped whole;
    # below it, the walk never enters one.
    inside = in_skipped(start=start, root=root, skipped=skipped)
    if inside and not walk_skipped:
        return
    top = str(root)
    base = len(top) + 1
    for folder, folders, files in os.walk(start):
        # A run folder below the root, wherever it was written, holds only eb's output: its
        # transcripts and evidence match `**/*.jsonl` as well as the dataset does. So does a
        # cache or history folder eb marked (one a changed setting left behind).
        marks = MARK_NAMES.intersection(folders) | MARK_NAMES.intersection(files)
        if not inside and marks and folder != top and listed_as_own(folder=folder, names=marks):
            folders[:] = []
            continue
        folders[:] = [
            name
            for name in folders
            if inside
            or (name not in skipped.names and os.path.join(folder, name) not in skipped.folders)
        ]
        for name in files:
            path = os.path.join(folder, name)
            # Whatever matches, a FIFO or a dangling link too: left out quietly, it would take
            # its rows out of the family without a word (dataset_paths refuses it).
            if regex.fullmatch(path[base:].replace(os.sep, "/")) and path not in skipped.files:
                yield Path(path)


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
