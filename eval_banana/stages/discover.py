"""Stage 2, discover: find every check file under the project."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from eval_banana.core.errors import UsageError
from eval_banana.core.files import sha256_bytes
from eval_banana.core.ownmark import MARK_NAMES, listed_as_own
from eval_banana.core.readback import read_regular
from eval_banana.core.realpaths import path_trouble, real_path
from eval_banana.core.words import plural, unprintable, visible
from eval_banana.models.stages import ConfigDoc, DiscoverDoc, DiscoveredFile, ProblemModel
from eval_banana.settings.folders import own_folders_below
from eval_banana.stagefiles.layout import envelope
from eval_banana.stagefiles.write import write_stage_model

CHECK_DIR_NAME = "eval_checks"
CHECK_SUFFIXES = (".yaml", ".yml")
CONFIG_FOLDER = ".eval-banana"  # a folder holding one is a project of its own


def _scan(*, folder: str) -> Iterator[os.DirEntry[str]]:
    """Entries of one folder; unreadable folders are skipped."""
    try:
        with os.scandir(folder) as entries:
            yield from entries
    except OSError:
        return


# A candidate check file: its path as walked, and whether that entry is a symlink.
Candidate = tuple[str, bool]


def _collect_yaml(*, folder: str, excluded: frozenset[str], found: list[Candidate]) -> None:
    """Every *.yaml / *.yml below a check folder, pruning excluded and symlinked folders, and
    eb's own folders below it (as `_walk_for_check_dirs` does; `folder` itself is read as asked)."""
    stack = [folder]
    while stack:
        current = stack.pop()
        here: list[Candidate] = []
        below: list[str] = []
        marks: set[str] = set()
        for entry in _scan(folder=current):
            name = entry.name
            if name in MARK_NAMES:
                marks.add(name)
            if name.endswith(CHECK_SUFFIXES):
                is_link = entry.is_symlink()
                # Not only regular files: a FIFO or device by a check file's name is named as
                # unreadable when it is read, never skipped in silence.
                if is_link or not entry.is_dir(follow_symlinks=False):
                    here.append((entry.path, is_link))
            elif name not in excluded and entry.is_dir(follow_symlinks=False):
                below.append(entry.path)
        if marks and current != folder and listed_as_own(folder=current, names=marks):
            continue
        found.extend(here)
        stack.extend(below)


def _walk_for_check_dirs(
    *,
    root: str,
    excluded: frozenset[str],
    skipped: frozenset[str],
    check_dirs: list[str],
    found: list[Candidate],
) -> None:
    """Walk top-down; a folder named eval_checks is scanned whole and not walked again.
    `skipped` are whole paths never entered (eb's own output, cache and history folders as
    configured); a run folder, or a cache or history folder eb marked, below the root is never
    entered wherever it lies: a check's evidence folder there may hold files that look like
    checks (one copied, or made by a check of a project like this one). It is told by its
    listing naming `stages/` or eb's mark file, then that file (core/ownmark.py), so no other
    folder costs a file system call more."""
    if os.path.basename(root) == CHECK_DIR_NAME:
        check_dirs.append(root)
        _collect_yaml(folder=root, excluded=excluded, found=found)
        return
    stack = [root]
    while stack:
        current = stack.pop()
        below: list[tuple[str, bool]] = []  # (path, whether it is a check folder)
        marks: set[str] = set()
        for entry in _scan(folder=current):
            name = entry.name
            if name in MARK_NAMES:
                marks.add(name)
            if name in excluded or not entry.is_dir(follow_symlinks=False):
                continue
            if entry.path not in skipped:
                below.append((entry.path, name == CHECK_DIR_NAME))
        if marks and current != root and listed_as_own(folder=current, names=marks):
            continue
        for path, is_check_dir in below:
            if is_check_dir:
                check_dirs.append(path)
                _collect_yaml(folder=path, excluded=excluded, found=found)
            else:
                stack.append(path)


def _describe(
    *, path: str, is_link: bool, root_prefix: str, contents: dict[str, bytes]
) -> DiscoveredFile | ProblemModel:
    """Size and digest of one file, read once; its bytes are kept for the validate stage."""
    # Plain strings, not Path objects: on a 2,000-file project Path parsing alone was ~30 ms.
    try:
        # The walk starts from a resolved root and never enters a linked folder, so only a
        # linked file needs resolving.
        resolved = str(real_path(path, strict=True)) if is_link else path
        data = read_regular(resolved)
    except OSError as exc:
        target = os.readlink(path) if os.path.islink(path) else path
        return ProblemModel(
            message=f"Cannot read check file {path}: {path_trouble(exc)} (target: {target})",
            file=path,
            hint="Remove the broken link or point it at an existing check file.",
        )
    relative = (
        resolved[len(root_prefix) :].replace(os.sep, "/")
        if resolved.startswith(root_prefix)
        else None
    )
    contents[resolved] = data
    return DiscoveredFile(
        path=resolved, relative_path=relative, size=len(data), sha256=sha256_bytes(data=data)
    )


def _name_problem(*, path: str) -> ProblemModel | None:
    """Why eb cannot take a check file's name, or None when it can."""
    what = unprintable(path)
    if what is None:
        return None
    # In a C or POSIX locale with UTF-8 mode off, Python reads file names as ASCII: each byte
    # of a UTF-8 name past ASCII becomes a stand-in that no report can hold. The name's bytes
    # tell that apart from a name that is not UTF-8 at all.
    as_utf8 = os.fsencode(path).decode("utf-8", "surrogateescape")
    if as_utf8 != path and unprintable(as_utf8) is None:
        return _name_read_as_ascii(path=path)
    return _unprintable_name(path=path, what=what)


def _name_read_as_ascii(*, path: str) -> ProblemModel:
    shown = visible(path)
    return ProblemModel(
        message=f"Check file {shown} has a UTF-8 name (shown as \\xNN) that Python reads as "
        "ASCII here (a C or POSIX locale with UTF-8 mode off), so eb cannot print it in a log "
        "or write it into a report",
        file=shown,
        hint="Run eb with PYTHONUTF8=1 (or LC_ALL=C.UTF-8), or give the file an ASCII name.",
    )


def _unprintable_name(*, path: str, what: str) -> ProblemModel:
    # A name with a line break (which a pull request can add) would start a line of its own in
    # every message naming the file: in a GitHub Actions log, a `::` workflow command. One with
    # a byte that is not UTF-8 cannot be written into a report at all.
    shown = visible(path)
    return ProblemModel(
        message=f"Check file {shown} has {what} in its name (shown as \\xNN), "
        "which eb does not print in a log",
        file=shown,
        hint="Rename the file: a check file's name needs only letters, digits, '.', '_' and '-'.",
    )


def walked_root(*, config: ConfigDoc) -> str:
    """The folder the discover stage walks under `config`: its --check-dir, else the project
    root (what discover.json records as its one root)."""
    project_root = Path(config.project_root)
    check_dir = config.selection.check_dir
    if check_dir is None:
        return str(project_root)
    return str(real_path(project_root / check_dir))


def discover_files(*, config: ConfigDoc) -> tuple[list[str], list[str], list[Candidate]]:
    """Roots walked, check folders found, and raw candidate paths (unresolved)."""
    project_root = Path(config.project_root)
    excluded = frozenset(config.settings.discovery.exclude_dirs)
    check_dirs: list[str] = []
    found: list[Candidate] = []
    check_dir = config.selection.check_dir
    if check_dir is not None:
        root = Path(walked_root(config=config))
        if not root.is_dir():
            raise UsageError(
                f"--check-dir {check_dir} is not a directory: {root}",
                field_path="check_dir",
                hint="A relative --check-dir is resolved against the project root.",
            )
        check_dirs.append(str(root))
        _collect_yaml(folder=str(root), excluded=excluded, found=found)
        return [str(root)], check_dirs, found
    _walk_for_check_dirs(
        root=str(project_root),
        excluded=excluded,
        skipped=own_folders_below(config=config),
        check_dirs=check_dirs,
        found=found,
    )
    return [str(project_root)], sorted(check_dirs), found


def check_dir_outside_warning(*, config: ConfigDoc) -> str | None:
    """What to tell a user whose --check-dir lies outside the project root, or None. eb walks
    all of it, as eval-banana 0.5.0 did (docs/compatibility.md#discovery), so it is said
    before the walk rather than refused."""
    check_dir = config.selection.check_dir
    if check_dir is None:
        return None
    project_root = real_path(config.project_root)
    folder = real_path(project_root / check_dir)
    if folder == project_root or project_root in folder.parents:
        return None
    given = check_dir if check_dir == str(folder) else f"{check_dir} ({folder})"
    return (
        f"--check-dir {given} is outside the project root {project_root}: eb walks all of it "
        "for check files, and runs them under this project's settings; pass a folder inside "
        "the project, or --cwd to the project that holds those checks"
    )


def discover(
    *, config: ConfigDoc, inputs: dict[str, str], contents: dict[str, bytes] | None = None
) -> DiscoverDoc:
    """Find the check files; each resolved file once, in code-point order of its path.

    When `contents` is given it receives each file's bytes, so a validate stage chained in the
    same process does not read the files again.
    """
    roots, check_dirs, candidates = discover_files(config=config)
    root_prefix = os.path.join(config.project_root, "")
    files: dict[str, DiscoveredFile] = {}
    problems: list[ProblemModel] = []
    kept: dict[str, bytes] = contents if contents is not None else {}
    for path, is_link in candidates:
        refused = _name_problem(path=path)
        if refused is not None:
            problems.append(refused)
            continue
        described = _describe(path=path, is_link=is_link, root_prefix=root_prefix, contents=kept)
        if isinstance(described, ProblemModel):
            problems.append(described)
        else:
            files.setdefault(described.path, described)
    return DiscoverDoc.model_validate(
        {
            **envelope(stage="discover", run_id=config.run_id, inputs=inputs),
            "roots": roots,
            "exclude_dirs": list(config.settings.discovery.exclude_dirs),
            "check_dirs": check_dirs,
            "files": [files[path] for path in sorted(files)],
            "problems": sorted(problems, key=lambda problem: problem.file or ""),
        }
    )


def nested_projects(*, config: ConfigDoc, check_dirs: list[str]) -> list[str]:
    """Folders below the project root that hold their own `.eval-banana/` and whose check
    folders this discovery collected: their checks would run under this root's settings."""
    root = Path(config.project_root)
    found: set[str] = set()
    for check_dir in check_dirs:
        # The nearest project above the check folder is the one it belongs to.
        for folder in Path(check_dir).parents:
            if folder == root or root not in folder.parents:
                break
            if (folder / CONFIG_FOLDER).is_dir():
                found.add(str(folder))
                break
    return sorted(found)


def nested_projects_warning(*, config: ConfigDoc, discovered: DiscoverDoc) -> str | None:
    """The warning naming the nested projects whose checks are collected, or None."""
    nested = nested_projects(config=config, check_dirs=discovered.check_dirs)
    if not nested:
        return None
    root = Path(config.project_root)
    names = ", ".join(f"{Path(folder).relative_to(root).as_posix()}/" for folder in nested)
    return (
        f"checks of {plural(count=len(nested), noun='nested project')} are collected from "
        f"{root}: {names} "
        f"(each holds its own {CONFIG_FOLDER}/, whose settings these checks will not get); run "
        "eb inside each project (or --cwd it), or pass --check-dir to collect one of them"
    )


def write_discover_stage(*, run_dir: Path, doc: DiscoverDoc) -> str:
    return write_stage_model(run_dir=run_dir, stage="discover", model=doc)
