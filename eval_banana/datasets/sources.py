"""Where a family's rows come from: its own `cases:` list and the files `cases_from` names (a
path, or a glob that looks where discovery looks), each row kept with where it is."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.core.errors import DefinitionError
from eval_banana.core.ownmark import MARK_NAMES, in_own_folder, listed_as_own
from eval_banana.core.readback import file_kind
from eval_banana.core.suggest import closest
from eval_banana.core.words import unprintable, visible
from eval_banana.datasets.reading import read_rows
from eval_banana.datasets.rows import SUFFIXES, ItemLines, Row, TooManyRows
from eval_banana.models.stages import ConfigDoc
from eval_banana.projectstate.patterns import (
    file_pattern_regex,
    literal_prefix,
    normalize,
    pattern_problem,
)
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


def _glob_start(*, pattern: str, root: Path) -> Path:
    """The folder a glob's literal start names (`data/qa` for `data/qa/*.jsonl`)."""
    prefix = literal_prefix(normalize(pattern))
    return root / prefix if prefix else root


def _in_skipped(*, start: Path, root: Path, skipped: Skipped) -> bool:
    return (
        not skipped.names.isdisjoint(start.relative_to(root).parts)
        or any(
            str(start) == folder or str(start).startswith(folder + os.sep)
            for folder in skipped.folders
        )
        or in_own_folder(path=start, root=root)
    )


def _glob_files(
    *, pattern: str, root: Path, skipped: Skipped, walk_skipped: bool = False
) -> Iterator[Path]:
    """The files below `root` a glob names, walking only below its literal start and never
    into a folder it skips: a `**/*.jsonl` would otherwise list every file of node_modules
    before dropping them (symlinked folders are not followed). `walk_skipped`: below a start
    that lies in a skipped folder, walk anyway (to say what the glob left out)."""
    regex = file_pattern_regex(normalize(pattern))
    start = _glob_start(pattern=pattern, root=root)
    # A literal start inside a skipped folder (`node_modules/pkg/*.jsonl`) is skipped whole;
    # below it, the walk never enters one.
    inside = _in_skipped(start=start, root=root, skipped=skipped)
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
            # its rows out of the family without a word (_dataset_paths refuses it).
            if regex.fullmatch(path[base:].replace(os.sep, "/")) and path not in skipped.files:
                yield Path(path)


def _dataset_paths(*, pattern: str, root: Path, check_file: str, skipped: Skipped) -> list[Path]:
    if "://" in pattern:
        raise DefinitionError(
            f"Invalid cases_from in {check_file}: {pattern!r} is a URL; a dataset is read "
            "from the project, so that a run and its cache keys never depend on the network",
            file=check_file,
            field_path="cases_from",
            hint="download the file into the project (and commit it), then name its path",
        )
    problem = pattern_problem(pattern)
    if problem is not None or pattern.startswith("!"):
        raise DefinitionError(
            f"Invalid cases_from in {check_file}: {pattern!r} "
            f"{problem or 'must name files, not exclude them'}",
            file=check_file,
            field_path="cases_from",
            hint="name a dataset file or glob relative to the project root",
        )
    if _is_glob(pattern):
        paths = sorted(_glob_files(pattern=pattern, root=root, skipped=skipped))
        if not paths:
            _refuse_skipped_start(
                pattern=pattern, root=root, check_file=check_file, skipped=skipped
            )
        odd_name = next(
            ((path, what) for path in paths if (what := unprintable(str(path))) is not None), None
        )
        if odd_name is not None:
            # Named in every message about its rows, such a name would start lines of its own
            # (a control character) or fail every report that names it (a byte not UTF-8).
            raise DefinitionError(
                f"cases_from {pattern!r} in {check_file} matches "
                f"{visible(relative(path=odd_name[0], root=root))}, whose name has "
                f"{odd_name[1]} (shown as \\xNN), which eb does not print in a log",
                file=check_file,
                field_path="cases_from",
                hint="rename the file: a dataset's name needs only letters, digits, '.', '_', '-'",
            )
        odd = next((path for path in paths if not path.is_file()), None)
        if odd is not None:
            raise DefinitionError(
                f"cases_from {pattern!r} in {check_file} matches "
                f"{relative(path=odd, root=root)}, which is not a regular file ({_kind(odd)})",
                file=check_file,
                field_path="cases_from",
                hint="delete or move it, or narrow cases_from to the dataset files",
            )
        return paths
    path = root / pattern
    shown = visible(pattern)  # as the check file wrote it, a line break in it escaped
    if path.is_dir():
        raise DefinitionError(
            f"Dataset {shown} named by cases_from in {check_file} is a folder, not a file",
            file=check_file,
            field_path="cases_from",
            hint=f"name its files with a glob, such as {shown.rstrip('/')}/*.jsonl",
        )
    if path.exists() and not path.is_file():
        # A FIFO would block the read, a device is no dataset: not "missing" either.
        raise DefinitionError(
            f"Dataset {shown} named by cases_from in {check_file} is not a regular file "
            f"({_kind(path)})",
            file=check_file,
            field_path="cases_from",
            hint="name a regular file; copy a generated dataset into the project first",
        )
    if not path.is_file():
        raise DefinitionError(
            f"Dataset {shown} named by cases_from in {check_file} does not exist",
            file=check_file,
            field_path="cases_from",
            hint=_missing_hint(pattern=pattern, root=root, check_file=check_file),
        )
    return [path]


def _refuse_skipped_start(*, pattern: str, root: Path, check_file: str, skipped: Skipped) -> None:
    """A glob that starts in a folder discovery leaves out (`build/*.jsonl` with `build` in
    `[discovery] exclude_dirs`) matches nothing there by design; when files there match, say
    why the family is empty instead of "add rows", with the way to read them."""
    start = _glob_start(pattern=pattern, root=root)
    if not _in_skipped(start=start, root=root, skipped=skipped):
        return
    found = next(_glob_files(pattern=pattern, root=root, skipped=skipped, walk_skipped=True), None)
    if found is None:
        return
    shown = relative(path=found, root=root)
    named = sorted(skipped.names.intersection(start.relative_to(root).parts))
    why = (
        f"{named[0]} is named in [discovery] exclude_dirs"
        if named
        else "it is eb's own (runs, cache or history)"
    )
    raise DefinitionError(
        f"cases_from {visible(pattern)!r} in {check_file} looks in "
        f"{relative(path=start, root=root)}/, where no glob looks ({why}), so it matches none "
        f"of the files there, such as {shown}",
        file=check_file,
        field_path="cases_from",
        hint=f"name the file itself (cases_from: {shown}), which is read wherever it is, or "
        "move the dataset to a folder eb reads",
    )


def _kind(path: Path) -> str:
    """What a path that is no regular file is: a FIFO, a socket, a link to nothing."""
    try:
        return file_kind(path.stat().st_mode)
    except OSError:
        return "a symbolic link to nothing"


def matched_files(*, pattern: str, root: Path, check_file: str, skipped: Skipped) -> list[str]:
    """The project-relative files a `cases_from` pattern names now, in order; [] when it names
    none or is no valid pattern (the family would not expand as it did)."""
    try:
        paths = _dataset_paths(pattern=pattern, root=root, check_file=check_file, skipped=skipped)
    except DefinitionError:
        return []
    return [relative(path=path, root=root) for path in paths]


def dataset_scope(pattern: str) -> str:
    """The root-relative folder a `cases_from` glob looks in ("" for the whole project), or the
    file a path names: where a dataset file it names can be added or removed."""
    body = normalize(pattern)
    return literal_prefix(body) if _is_glob(pattern) else body


def names_path(*, pattern: str, path: str, root: Path, skipped: Skipped) -> bool:
    """Whether `cases_from` `pattern` names the root-relative `path`, a file there now or not
    (one removed since a revision): the path itself, or a match of the glob outside the
    folders it never looks in."""
    if not _is_glob(pattern):
        return normalize(pattern) == path
    if not file_pattern_regex(normalize(pattern)).fullmatch(path):
        return False
    if os.path.normpath(root / path) in skipped.files:
        return False
    return not _in_skipped(start=(root / path).parent, root=root, skipped=skipped)


def dataset_skipped(*, config: ConfigDoc) -> Skipped:
    """Where the families' `cases_from` globs never look, as discovery never walks there:
    `[discovery] exclude_dirs`, and eb's own folders and files inside the project."""
    return Skipped(
        names=frozenset(config.settings.discovery.exclude_dirs),
        folders=own_folders_below(config=config),
        files=frozenset(os.path.normpath(path) for path in own_files(config=config)),
    )


def _is_glob(pattern: str) -> bool:
    return any(char in pattern for char in _GLOB)


def _missing_hint(*, pattern: str, root: Path, check_file: str) -> str:
    """The fix for a dataset path that names no file: the file it was most likely written
    for (a path relative to the check file's folder, a typo in a name beside it)."""
    beside_check = Path(check_file).resolve().parent / pattern
    if beside_check.is_file():
        return _from_the_check_file(meant=visible(relative(path=beside_check, root=root)))
    path = root / pattern
    try:
        names = [entry.name for entry in os.scandir(path.parent) if entry.is_file()]
    except OSError:
        names = []
    near = closest(path.name, [name for name in names if Path(name).suffix.lower() in SUFFIXES])
    if near is not None:
        shown = (Path(pattern).parent / near).as_posix()
        return f"did you mean {visible(shown)}? (cases_from is relative to the project root)"
    return "cases_from is relative to the project root; fix the path or create the file"


def empty_glob_hint(
    *, pattern: str, root: Path, check_file: str, skipped: Skipped | None = None
) -> str | None:
    """The fix for a `cases_from` glob that matches no file, when its likely cause shows: the
    glob written relative to the check file (it matches files there, or names a folder only
    there), a folder that does not exist (misspelt), or a suffix no dataset has (`*.jsnl`).
    None: nothing points anywhere. `skipped`: where no glob looks (none: nowhere skipped)."""
    if not _is_glob(pattern):
        return None
    body = normalize(pattern)
    start = _glob_start(pattern=pattern, root=root)
    prefix = relative(path=start, root=root) if start != root else ""
    rest = body[len(prefix) :].lstrip("/")
    # Checked first: a project-root folder of the same name (`data/` beside `eval_checks/`)
    # hides the slip from every test below.
    beside = _matched_beside_check(body=body, root=root, check_file=check_file, skipped=skipped)
    if beside is not None:
        return beside
    if not start.is_dir():
        beside_check = Path(check_file).resolve().parent / prefix
        if beside_check.is_dir():
            meant = relative(path=beside_check, root=root)
            return _from_the_check_file(meant=f"{visible(meant)}/{visible(rest)}")
        parent, name = start.parent, start.name
        try:
            folders = [entry.name for entry in os.scandir(parent) if entry.is_dir()]
        except OSError:
            folders = []
        near = closest(name, folders)
        if near is not None:
            meant = relative(path=parent / near, root=root)
            return (
                f"{visible(prefix)}/ does not exist: did you mean "
                f"{visible(meant)}/{visible(rest)}? (cases_from is relative to the project root)"
            )
        return f"{visible(prefix)}/ does not exist (cases_from is relative to the project root)"
    suffix = Path(rest).suffix.lower()
    if suffix and suffix not in SUFFIXES and not _is_glob(suffix):
        near = closest(suffix, SUFFIXES)
        if near is not None:
            return (
                f"{suffix} is no dataset suffix: did you mean "
                f"{visible(body[: len(body) - len(suffix)] + near)}?"
            )
    return None


def _matched_beside_check(
    *, body: str, root: Path, check_file: str, skipped: Skipped | None
) -> str | None:
    """The fix for a glob that matches files when read from the check file's folder inside the
    project (not the root): the glob to write, and the first file it names there."""
    folder = Path(check_file).resolve().parent
    if folder == root:
        return None
    try:
        meant = f"{folder.relative_to(root).as_posix()}/{body}"
    except ValueError:
        return None
    nowhere = Skipped(names=frozenset(), folders=frozenset())
    found = next(_glob_files(pattern=meant, root=root, skipped=skipped or nowhere), None)
    if found is None:
        return None
    return (
        f"{_from_the_check_file(meant=visible(meant))} (it matches "
        f"{visible(relative(path=found, root=root))})"
    )


def _from_the_check_file(*, meant: str) -> str:
    """The fix for a `cases_from` written relative to its check file's folder."""
    return f"cases_from is relative to the project root, not to the check file: write {meant}"


def relative(*, path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def dataset_rows(
    *,
    definition: dict[str, Any],
    root: Path,
    check_file: str,
    skipped: Skipped,
    problems: list[DefinitionError],
    max_cases: int,
    check_text: str | None,
) -> tuple[list[Row], list[str]]:
    inline = definition.get("cases") or []
    # The check file's own items, found in its text only when one of them has a problem.
    lines = ItemLines(check_text, under="cases") if check_text and inline else None
    # Every value YAML 1.1 reads otherwise is a boolean or a number once loaded, or text YAML
    # 1.2 reads as a number: other cases need no second reading of the check file.
    if check_text and _may_read_otherwise(inline):
        _refuse_ambiguous_scalars(text=check_text, check_file=check_file, problems=problems)
    rows = [
        Row(
            value=value,
            file=check_file,
            where=f"cases item {index + 1}",
            line=None,
            inline_index=index,
            item_index=index + 1,
            item_lines=lines,
        )
        for index, value in enumerate(inline)
    ]
    files: list[str] = []
    pattern = definition.get("cases_from")
    if pattern is not None:
        try:
            paths = _dataset_paths(
                pattern=str(pattern), root=root, check_file=check_file, skipped=skipped
            )
        except DefinitionError as exc:
            problems.append(exc)
            return rows, files
        # The suffix a glob should have named, worked out once: a glob over a folder of
        # thousands of other files must not rescan them all for each.
        narrowed = _narrowed(pattern=str(pattern), paths=paths) if _is_glob(str(pattern)) else None
        for path in paths:
            file = relative(path=path, root=root)
            files.append(file)
            if narrowed is not None and path.suffix.lower() not in SUFFIXES:
                problems.append(
                    _not_a_dataset(
                        pattern=str(pattern), file=file, narrowed=narrowed, check_file=check_file
                    )
                )
                continue
            try:
                rows.extend(
                    read_rows(path=path, file=file, problems=problems, limit=max_cases - len(rows))
                )
            except DefinitionError as exc:
                problems.append(exc)
            except TooManyRows as exc:
                # Past the limit no more rows are made, nor files read: the family is refused.
                problems.append(
                    too_many(
                        family=str(definition["id"]),
                        check_file=check_file,
                        count=len(rows) + exc.counted,
                        max_cases=max_cases,
                        at_least=len(paths) > len(files),
                    )
                )
                return [], files
    return rows, files


def _may_read_otherwise(value: object) -> bool:
    """Whether loaded YAML `value` holds what YAML 1.1 may have read otherwise than YAML 1.2:
    a boolean, a number, or text YAML 1.2 reads as a number (`1e3`, `0o755`)."""
    from eval_banana.datasets.yamlrows import yaml12_number

    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) in (bool, int, float):
            return True
        if type(item) is str and yaml12_number(item) is not None:
            return True
        if type(item) is dict:
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
    return False


def _refuse_ambiguous_scalars(
    *, text: str, check_file: str, problems: list[DefinitionError]
) -> None:
    """The check file's own `cases:` are rows like a dataset file's: a plain word or number
    YAML 1.1 reads otherwise than YAML 1.2 is told there too (datasets/yamlrows.py)."""
    from eval_banana.datasets.yamlrows import ambiguous_problems, ambiguous_scalars_under

    found = ambiguous_scalars_under(text, key="cases")
    problems.extend(
        ambiguous_problems(
            found=found,
            file=check_file,
            at=lambda line: f"{check_file} cases (line {line})",
            field_path="cases",
        )
    )


def too_many(
    *, family: str, check_file: str, count: int, max_cases: int, at_least: bool = False
) -> DefinitionError:
    """A family of more cases than `[core] max_cases`; `at_least`: the datasets were not all
    counted (reading stopped at the one that went past the limit)."""
    return DefinitionError(
        f"Family '{family}' in {check_file} has {'at least ' if at_least else ''}{count:,} "
        f"cases, more than [core] max_cases ({max_cases:,})",
        file=check_file,
        field_path="cases_from",
        hint="split the dataset, narrow cases_from, or raise [core] max_cases",
    )


def _not_a_dataset(*, pattern: str, file: str, narrowed: str, check_file: str) -> DefinitionError:
    """A file a `cases_from` glob matched that is no dataset (a README beside the rows): the
    glob in the check file is what to fix, so the error is told there, with the glob narrowed
    to the datasets' kind."""
    return DefinitionError(
        f"cases_from {pattern!r} in {check_file} matches {file}, which is not a dataset "
        "(.jsonl, .json, .yaml, .yml or .csv)",
        file=check_file,
        field_path="cases_from",
        hint=f"narrow the glob to the dataset files, e.g. cases_from: {narrowed!r}",
    )


def _narrowed(*, pattern: str, paths: list[Path]) -> str:
    """`pattern` matching only files of the kind most of the datasets it matched are (JSONL
    when none is): its last part ends in `*<suffix>`."""
    kinds = Counter(path.suffix.lower() for path in paths if path.suffix.lower() in SUFFIXES)
    kind = kinds.most_common(1)[0][0] if kinds else ".jsonl"
    folder, _, last = pattern.rstrip("/").rpartition("/")
    if last == "**":
        last = f"**/*{kind}"
    elif last.endswith("*") and "." not in last:
        last += kind  # `q*` -> `q*.jsonl`
    else:
        last = f"*{kind}"  # `*.*` -> `*.jsonl`
    return f"{folder}/{last}" if folder else last
