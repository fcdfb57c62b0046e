"""How eb tells a folder it wrote, wherever it lies and whatever the settings say now.

A run folder (the default results folder's, `--output-dir`'s, a shard's, `eb merge`'s, one
copied elsewhere) holds `stages/config.json`, the first file every run of every eb version
writes: its config stage, naming eb's config-stage schema. A cache or history folder holds
`.eval-banana-folder`, which eb writes into it before anything else (or, in one an earlier eb
made, before its next write there): moved by a changed `[cache] dir` or `[history] dir`, the
old folder is still known. So does the evidence folder of an `eb calibrate`
(`calibrate_<run id>`), in an output folder that holds the user's files too. What lies in such
a folder is never a project file, a check or a dataset row.

A walk asks only about a folder whose listing names `stages` or the mark file, and a listing of
files only about the folders holding one of them: the project's other folders cost nothing.

A mark is a file anyone can write: a judge or a check runs as the user. So a watch of the
project (isolation) takes eb's folders once, before its checks start (`OwnMarks`, noting each
folder its first read finds by its mark), and afterwards excuses only those, while they still
hold their mark: one that appears while checks run is a new file like any other, and the folder
it lands in stays the project's.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from eval_banana.core.errors import WriteFault
from eval_banana.core.files import write_bytes_atomic
from eval_banana.core.readback import open_regular, read_json
from eval_banana.core.turns import LOCK_NAME

STAGES_FOLDER = "stages"
CONFIG_STAGE_SCHEMA = "https://eval-banana.dev/schemas/stages/config.schema.json"
MARK_FILE = ".eval-banana-folder"
# A listing naming one of these makes a walk ask whether the folder is eb's own.
MARK_NAMES = frozenset({STAGES_FOLDER, MARK_FILE})
_MARK_START = b"eval-banana folder: "
_RUN_MARK_TAIL = f"/{STAGES_FOLDER}/config.json"
_MARK_TAIL = f"/{MARK_FILE}"
_TAILS = (_RUN_MARK_TAIL, _MARK_TAIL)
# The evidence folder of one `eb calibrate`, in the output folder beside the runs: this prefix
# and the calibration's run id. Not a run folder (no stages/): no listing of runs takes it for one.
CALIBRATION_PREFIX = "calibrate_"
# A run id as eb makes it (settings/rundir.py): its UTC start and 8 hex digits.
_RUN_ID = r"[0-9]{8}_[0-9]{6}_[0-9a-f]{8}"
# Every folder eb names in an output folder: a run's (a shard's and `eb merge`'s are runs too)
# and a calibration's. Another name there is the user's.
_OUTPUT_FOLDER_NAME = re.compile(f"(?:{re.escape(CALIBRATION_PREFIX)})?{_RUN_ID}")


def calibration_folder_name(*, run_id: str) -> str:
    """The name of the evidence folder `eb calibrate` run `run_id` makes in the output folder."""
    return f"{CALIBRATION_PREFIX}{run_id}"


def is_run_folder(*, folder: str) -> bool:
    """Whether `folder` is a run folder eb wrote: its `stages/config.json` is eb's config stage."""
    try:
        document = read_json(os.path.join(folder, STAGES_FOLDER, "config.json"))
    except (OSError, ValueError):
        return False
    return isinstance(document, dict) and document.get("$schema") == CONFIG_STAGE_SCHEMA


def holds_only_runs(*, folder: str) -> bool:
    """Whether `folder` holds nothing but what eb writes into an output folder: folders named
    as eb names runs and calibrations, and the folder's lock (or it is a run folder itself,
    --flat-output's, or absent). Told by the names alone, so a folder of a thousand runs costs
    one listing."""
    try:
        with os.scandir(folder) as entries:
            listed = list(entries)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    names = {entry.name for entry in listed}
    if STAGES_FOLDER in names and is_run_folder(folder=folder):
        return True
    return all(
        entry.name == LOCK_NAME
        or (
            _OUTPUT_FOLDER_NAME.fullmatch(entry.name) is not None
            and entry.is_dir(follow_symlinks=False)
        )
        for entry in listed
    )


def is_marked_folder(*, folder: str) -> bool:
    """Whether `folder` holds eb's mark file (a cache or history folder eb made)."""
    try:
        fd = open_regular(os.path.join(folder, MARK_FILE))
    except OSError:
        return False
    try:
        start = os.read(fd, len(_MARK_START))
    except OSError:
        return False
    finally:
        os.close(fd)
    return start == _MARK_START


def listed_as_own(*, folder: str, names: Collection[str]) -> bool:
    """Whether `folder`, whose listing holds `names`, is a folder eb wrote (a file is read only
    when the listing names `stages` or the mark file)."""
    return (STAGES_FOLDER in names and is_run_folder(folder=folder)) or (
        MARK_FILE in names and is_marked_folder(folder=folder)
    )


def is_own_folder(*, folder: str) -> bool:
    """Whether `folder` is a run folder, or a cache or history folder eb marked."""
    return is_run_folder(folder=folder) or is_marked_folder(folder=folder)


def in_own_folder(*, path: Path, root: Path) -> bool:
    """Whether `path` is, or lies in, a folder eb wrote below `root` (the project root, which
    never counts as one itself); False for a path outside `root`."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return False
    return any(
        is_own_folder(folder=str(root.joinpath(*parts[:depth])))
        for depth in range(1, len(parts) + 1)
    )


class OwnMarks:
    """Which folders below a project root one read of its state takes for eb's own.

    `fixed` None: every folder holding eb's mark, each one found in a listing noted in `found`
    (root-relative, ending in `/`). `fixed` given (a watch's, found before its checks started):
    only those folders, and only while they still hold their mark. A mark found anywhere else
    was written since, maybe by a check, and excuses nothing; one a folder lost makes its files
    the project's, new ones a look charges."""

    def __init__(self, *, fixed: Collection[str] | None = None) -> None:
        self.fixed = None if fixed is None else frozenset(fixed)
        self.found: set[str] = set()

    def may_be_own(self, *, relative: str) -> bool:
        """Whether the folder at root-relative `relative` (no trailing `/`) is worth asking."""
        return self.fixed is None or f"{relative}/" in self.fixed

    def listed(self, *, folder: str, relative: str, names: Collection[str]) -> bool:
        """Whether `folder` (`relative` to the root), whose listing holds `names`, is eb's."""
        if not self.may_be_own(relative=relative) or not listed_as_own(folder=folder, names=names):
            return False
        self.found.add(f"{relative}/")
        return True

    def in_listing(self, *, root: str, paths: Iterable[str]) -> list[str]:
        """`own_folders_listed`, as this read takes eb's folders."""
        found = [
            folder
            for folder in own_folders_listed(root=root, paths=paths)
            if self.may_be_own(relative=folder[:-1])
        ]
        self.found.update(found)
        return found

    def holds(self, *, path: Path, root: Path) -> bool:
        """`in_own_folder`, as this read takes eb's folders."""
        try:
            parts = path.relative_to(root).parts
        except ValueError:
            return False
        return any(
            self.may_be_own(relative="/".join(parts[:depth]))
            and is_own_folder(folder=str(root.joinpath(*parts[:depth])))
            for depth in range(1, len(parts) + 1)
        )


class OwnFolders:
    """Whether a root-relative file path lies in a folder eb wrote, each folder asked once:
    for paths whose folder's listing is not at hand (a diff, a watch's events). `marks`: which
    folders may be eb's (`OwnMarks`; by default any holding eb's mark)."""

    def __init__(self, *, root: str, marks: OwnMarks | None = None) -> None:
        self.root = root
        self._marks = marks or OwnMarks()
        self._known: dict[str, bool] = {}

    def __call__(self, path: str) -> bool:
        parts = path.split("/")
        return any(self._is_own("/".join(parts[:depth])) for depth in range(1, len(parts)))

    def _is_own(self, folder: str) -> bool:
        known = self._known.get(folder)
        if known is None:
            known = self._marks.may_be_own(relative=folder) and is_own_folder(
                folder=os.path.join(self.root, folder)
            )
            self._known[folder] = known
        return known


def own_folders_listed(*, root: str, paths: Iterable[str]) -> list[str]:
    """The folders eb wrote that a listing of files below `root` (root-relative POSIX paths)
    shows by their mark, as root-relative prefixes ending in `/`, sorted."""
    found: set[str] = set()
    # One test of each path's end with both tails at once: 4 ms over 60,000 paths.
    for path in [path for path in paths if path.endswith(_TAILS)]:
        if path.endswith(_RUN_MARK_TAIL):
            folder = path[: -len(_RUN_MARK_TAIL)]
            if is_run_folder(folder=os.path.join(root, folder)):
                found.add(folder + "/")
        else:
            folder = path[: -len(_MARK_TAIL)]
            if is_marked_folder(folder=os.path.join(root, folder)):
                found.add(folder + "/")
    return sorted(found)


def mark_folder(
    *, folder: Path, kind: str, ours: Callable[[str], bool], folder_mode: int = 0o777
) -> None:
    """Write eb's mark into `folder` (made with `folder_mode` if missing) unless it is there,
    when the folder is new or holds only names `ours` says eb writes there for its `kind` of
    files (cache, history). A folder holding the user's files too (`[history] dir = "docs"`)
    is never marked: they would stop being the project's. A mark that cannot be written costs
    only the mark: the write that follows says what is wrong with the folder."""
    if is_marked_folder(folder=str(folder)):
        return
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        names = []
    except OSError:
        return
    if not all(ours(name) for name in names):
        return
    text = (
        f"{_MARK_START.decode()}{kind}\n"
        "eb (eval-banana) keeps its own files here: they are never project files, checks or\n"
        "dataset rows, wherever this folder lies.\n"
    )
    with contextlib.suppress(OSError, WriteFault):
        write_bytes_atomic(path=folder / MARK_FILE, data=text.encode(), folder_mode=folder_mode)
