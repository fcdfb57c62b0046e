"""A family's `cases_from` made the dataset files it names, or refused with what is wrong (a
URL, a folder, a missing file, a glob that looks only where no glob looks) and its likely fix
(a path written from the check file's folder, a misspelt folder or suffix)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from eval_banana.core.errors import DefinitionError
from eval_banana.core.readback import file_kind
from eval_banana.core.realpaths import real_path
from eval_banana.core.suggest import closest
from eval_banana.core.words import unprintable, visible
from eval_banana.datasets.globwalk import (
    FollowedLink,
    GlobWalk,
    Skipped,
    glob_files,
    glob_start,
    in_skipped,
    is_glob,
    relative,
)
from eval_banana.datasets.suffixes import SUFFIXES
from eval_banana.projectstate.patterns import literal_slip, normalize, pattern_problem


def dataset_paths(*, pattern: str, root: Path, check_file: str, skipped: Skipped) -> list[Path]:
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
    if is_glob(pattern):
        walk = GlobWalk(pattern=pattern, root=root, skipped=skipped)
        paths = sorted(walk.files())
        if walk.above_root:
            _refuse_link_above_root(
                pattern=pattern, link=walk.above_root[0], root=root, check_file=check_file
            )
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


def _refuse_link_above_root(
    *, pattern: str, link: FollowedLink, root: Path, check_file: str
) -> None:
    """A glob that looks through a link to the project root, or to a folder holding it
    (`data/up -> ..`), would read the project again through it and every folder beside it (all
    of `/` through a link to `/`): refused, naming the link, rather than walked."""
    named = visible(link.named)
    leads = visible(os.path.realpath(root / link.named))
    raise DefinitionError(
        f"cases_from {visible(pattern)!r} in {check_file} looks through {named}, a symbolic "
        f"link to {leads}, the project root or a folder above it: through it the glob would "
        "read the whole project again, and every folder beside it, as rows",
        file=check_file,
        field_path="cases_from",
        hint=f"point {named} at the folder of the dataset files, or narrow cases_from so that "
        f"it does not look into {named}",
    )


def _refuse_skipped_start(*, pattern: str, root: Path, check_file: str, skipped: Skipped) -> None:
    """A glob that starts in a folder discovery leaves out (`build/*.jsonl` with `build` in
    `[discovery] exclude_dirs`) matches nothing there by design; when files there match, say
    why the family is empty instead of "add rows", with the way to read them."""
    start = glob_start(pattern=pattern, root=root)
    if not in_skipped(start=start, root=root, skipped=skipped):
        return
    found = next(glob_files(pattern=pattern, root=root, skipped=skipped, walk_skipped=True), None)
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
    """What a path that is no regular file is: a FIFO, a socket, a link to nothing or one that
    loops."""
    try:
        return file_kind(path.stat().st_mode)
    except OSError as exc:
        return "a symbolic link loop" if exc.errno == errno.ELOOP else "a symbolic link to nothing"


def matched_files(*, pattern: str, root: Path, check_file: str, skipped: Skipped) -> list[str]:
    """The project-relative files a `cases_from` pattern names now, in order; [] when it names
    none or is no valid pattern (the family would not expand as it did)."""
    try:
        paths = dataset_paths(pattern=pattern, root=root, check_file=check_file, skipped=skipped)
    except DefinitionError:
        return []
    return [relative(path=path, root=root) for path in paths]


def _missing_hint(*, pattern: str, root: Path, check_file: str) -> str:
    """The fix for a dataset path that names no file: the file it was most likely written
    for (a path relative to the check file's folder, a typo in a name beside it)."""
    beside_check = real_path(check_file).parent / pattern
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
    if not is_glob(pattern):
        return None
    slip = literal_slip(pattern=pattern, root=str(root))
    if slip is not None:
        return slip
    body = normalize(pattern)
    start = glob_start(pattern=pattern, root=root)
    prefix = relative(path=start, root=root) if start != root else ""
    rest = body[len(prefix) :].lstrip("/")
    # Checked first: a project-root folder of the same name (`data/` beside `eval_checks/`)
    # hides the slip from every test below.
    beside = _matched_beside_check(body=body, root=root, check_file=check_file, skipped=skipped)
    if beside is not None:
        return beside
    if not start.is_dir():
        beside_check = real_path(check_file).parent / prefix
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
    if suffix and suffix not in SUFFIXES and not is_glob(suffix):
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
    folder = real_path(check_file).parent
    if folder == root:
        return None
    try:
        meant = f"{folder.relative_to(root).as_posix()}/{body}"
    except ValueError:
        return None
    nowhere = Skipped(names=frozenset(), folders=frozenset())
    found = next(glob_files(pattern=meant, root=root, skipped=skipped or nowhere), None)
    if found is None:
        return None
    return (
        f"{_from_the_check_file(meant=visible(meant))} (it matches "
        f"{visible(relative(path=found, root=root))})"
    )


def _from_the_check_file(*, meant: str) -> str:
    """The fix for a `cases_from` written relative to its check file's folder."""
    return f"cases_from is relative to the project root, not to the check file: write {meant}"
