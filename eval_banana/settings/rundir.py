"""The run folder: `<output_dir>/<run_id>/`, or an exact empty one with --flat-output."""

from __future__ import annotations

import os
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.core.errors import OutputDirError
from eval_banana.core.log import Logger
from eval_banana.core.ownmark import calibration_folder_name
from eval_banana.core.realpaths import real_path
from eval_banana.core.turns import alone_in_folder
from eval_banana.models.stages import ConfigDoc
from eval_banana.settings.folders import setting_path

logger = Logger("eval_banana.settings.rundir")


# The 8 hex digits after a run id's second: its millisecond (0-999, 10 bits) in the high bits,
# so that two ids of one second sort as they were made, and random bits below it, so that two
# runs started in the same millisecond (shards on several machines) still differ.
_RANDOM_BITS = 22


def new_run_id() -> str:
    """`<UTC YYYYMMDD_HHMMSS>_<8 hex>`, as eval-banana names run folders. Ids sort in the order
    they were made, to the millisecond: a merge of the same shards made again in the same
    second is the newer by its id, as the run history reads it (history/merges). An earlier
    eb's 8 hex digits were all random: its ids of one second are in no order."""
    seconds, nanoseconds = divmod(time.time_ns(), 1_000_000_000)
    second = datetime.fromtimestamp(seconds, UTC).strftime("%Y%m%d_%H%M%S")
    # Random bits as uuid4() gives them, without importing uuid (it loads platform).
    random_part = int.from_bytes(os.urandom(3)) >> (24 - _RANDOM_BITS)
    order = (nanoseconds // 1_000_000) << _RANDOM_BITS | random_part
    return f"{second}_{order:08x}"


def output_base(*, config: ConfigDoc) -> Path:
    """The configured output folder (`setting_path`); empty, the project root."""
    return setting_path(value=config.settings.core.output_dir, project_root=config.project_root)


def calibration_dir(*, config: ConfigDoc) -> Path:
    """The evidence folder of this `eb calibrate`, `calibrate_<run id>` in the output folder.
    Not a run folder (it has no stages/): `eb status`, --last-failed and `[core] keep_runs`
    never take it for one."""
    return real_path(output_base(config=config)) / calibration_folder_name(run_id=config.run_id)


def _has_entries(folder: Path) -> bool:
    with os.scandir(folder) as entries:
        return any(True for _ in entries)


def _refuse_flat(*, exact: Path) -> None:
    if exact.is_symlink():
        raise OutputDirError(
            f"Refusing --flat-output because the exact output path is a symlink: {exact}",
            file=str(exact),
        )
    resolved = real_path(exact)
    if resolved.exists() and not resolved.is_dir():
        raise OutputDirError(
            f"Refusing --flat-output because the output path is not a directory: {resolved}",
            file=str(resolved),
        )
    if resolved.is_dir() and _has_entries(resolved):
        raise OutputDirError(
            f"Refusing --flat-output because the output directory is not empty: {resolved}",
            file=str(resolved),
            hint="--flat-output never overwrites; pass an absent or empty folder.",
        )


class RunFolder(NamedTuple):
    """A run folder just made, and the topmost folder making it created (None: it existed)."""

    path: Path
    made: Path | None


def _topmost_missing(path: Path) -> Path | None:
    """The highest folder of `path` (or `path` itself) that does not exist yet."""
    missing = None
    for folder in (path, *path.parents):
        if folder.exists() or folder.is_symlink():
            break
        missing = folder
    return missing


def open_run_dir(*, config: ConfigDoc, flat_output: bool) -> RunFolder:
    """`prepare_run_dir`, remembering what it created so `discard_run_dir` can take it back."""
    run_dir = _run_dir_path(config=config, flat_output=flat_output)
    made = _topmost_missing(run_dir)
    return RunFolder(path=prepare_run_dir(config=config, flat_output=flat_output), made=made)


def discard_run_dir(*, folder: RunFolder) -> None:
    """Take back a run folder that turned out to have nothing to run (no check selected): a
    command that runs nothing leaves nothing behind, not even `.eval-banana/results/`."""
    if folder.made is None:
        # An existing (empty, --flat-output) folder keeps existing; only what the run wrote goes.
        for name in ("stages", "checks"):
            shutil.rmtree(folder.path / name, ignore_errors=True)
        return
    shutil.rmtree(folder.path, ignore_errors=True)
    # The folders made for it go only while empty: another run may have started in them since.
    for parent in folder.path.parents:
        if folder.made != parent and folder.made not in parent.parents:
            break
        try:
            parent.rmdir()
        except OSError:
            break


def _run_dir_path(*, config: ConfigDoc, flat_output: bool) -> Path:
    base = output_base(config=config)
    if flat_output:
        return real_path(str(base).rstrip("/") or "/")
    return real_path(base) / config.run_id


def prepare_run_dir(*, config: ConfigDoc, flat_output: bool) -> Path:
    """Create the run folder (and its checks/), refusing anything that would overwrite."""
    base = output_base(config=config)
    if flat_output:
        # A trailing slash must not let a symlink through.
        exact = Path(str(base).rstrip("/") or "/")
        _refuse_flat(exact=exact)
        run_dir = real_path(exact)
    else:
        run_dir = real_path(base) / config.run_id
    try:
        (run_dir / "checks").mkdir(parents=True, exist_ok=True)
        (run_dir / "stages").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputDirError(
            f"Cannot create output directory {run_dir}: {exc.strerror or exc}", file=str(run_dir)
        ) from None
    return run_dir


def config_stage(*, run_dir: Path) -> dict[str, Any] | None:
    """The run's config stage (config.json), or None when it cannot be read."""
    from eval_banana.core.readback import read_json

    try:
        document = read_json(run_dir / "stages" / "config.json")
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def runs_by_creation(*, base: Path) -> list[Path]:
    """Every run folder under `base`, oldest first, by the creation time its config.json records.

    Folder names are no order: an earlier eb's run ids carry a random suffix after the second,
    so two of its runs of the same second sort by chance, and a folder may be renamed. A folder
    whose config.json cannot be read is not a run; one whose config.json records a creation
    time still to come is not taken for one either
    (settings/rundating.py), with a warning naming it.
    """
    from eval_banana.settings.rundating import record_problem, recorded_moment

    dated: list[tuple[str, str]] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    now = datetime.now(UTC)
    for entry in entries:
        if not entry.is_dir():
            continue
        document = config_stage(run_dir=Path(entry.path))
        moment = recorded_moment(document)
        if document is None or moment is None:
            continue
        problem = record_problem(document=document, now=now)
        if problem is not None:
            _warn_not_a_run(folder=entry.path, problem=problem)
            continue
        dated.append((moment, entry.path))
    # ISO-8601 UTC strings of one format sort as the moments they name; the path breaks ties.
    return [Path(path) for _, path in sorted(dated)]


# Folders already warned about: `eb diff` lists the runs more than once.
_WARNED: set[str] = set()


def _warn_not_a_run(*, folder: str, problem: str) -> None:
    if folder in _WARNED:
        return
    _WARNED.add(folder)
    logger.warning(
        "%s is not taken for a run: its stages/config.json %s (a copy or an edit, not a run "
        "eb made there); move it out of %s",
        folder,
        problem,
        os.path.dirname(folder),
    )


# Written last, once every check has ended: the mark of a finished run.
FINISHED_MARK = "report.json"


def is_finished_run(*, folder: Path) -> bool:
    """Whether a run folder holds its report.json: a run still going, or one stopped before
    its report (killed, out of memory), has none, and holds no verdict to compare with."""
    return (folder / FINISHED_MARK).is_file()


def run_dirs(*, config: ConfigDoc) -> list[Path]:
    """Every run under the output folder, oldest first (a flat-output folder is one run,
    itself)."""
    base = real_path(output_base(config=config))
    if (base / "stages" / "config.json").is_file():
        return [base]
    return runs_by_creation(base=base)


def newest_finished_runs(*, config: ConfigDoc, count: int) -> list[Path]:
    """The `count` most recently created finished runs under the output folder, oldest first:
    what `latest` and `previous` name. A run still going in the same folder, or one killed
    before its report, is passed over, never taken for the newest."""
    return [run for run in run_dirs(config=config) if is_finished_run(folder=run)][-count:]


def newest_run_dir(*, config: ConfigDoc) -> Path | None:
    """The most recently created run under the output folder (a flat-output folder itself),
    finished or not: what `eb status`, `eb update` and `eb stage` look at."""
    runs = run_dirs(config=config)
    return runs[-1] if runs else None


def prune_runs(*, config: ConfigDoc, current: Path) -> list[str]:
    """Delete the oldest finished run folders under the output folder beyond `[core]
    keep_runs`, `current` (the run just finished) counted and always kept; return what could
    not be deleted, as warnings. A folder without report.json (a run still going, or one killed
    before its report) is neither counted nor touched, nor is a symlink or any folder that is
    not a run's; a shard's run (`--shard`) deletes nothing. The cache's blobs the deleted files
    were links to stay where they are."""
    keep = config.settings.core.keep_runs
    base = real_path(output_base(config=config))
    if keep <= 0 or (base / "stages" / "config.json").is_file():
        return []  # every run is kept, or the output folder is a --flat-output run itself
    if config.selection.shard is not None:
        return []  # a shard's siblings may be waiting in the same folder to be merged
    with alone_in_folder(folder=base) as ours:
        if not ours:
            # Deleted now, they would look like a check's doing to that run's watch.
            return [
                f"Kept the old run folders in {base} this time ([core] keep_runs = {keep}): "
                "another eb run is executing checks there, or rewriting a run folder; a later run "
                "deletes them"
            ]
        return _prune(base=base, keep=keep, current=current)


def _prune(*, base: Path, keep: int, current: Path) -> list[str]:
    this_run = real_path(current)
    finished = [
        run
        for run in runs_by_creation(base=base)
        if not run.is_symlink() and real_path(run) != this_run and is_finished_run(folder=run)
    ]
    problems: list[str] = []
    for run in finished[: max(0, len(finished) - (keep - 1))]:
        # Held while deleted: another eb process writing it (`eb update`) keeps it, and one
        # about to write it finds it gone rather than half deleted.
        with alone_in_folder(folder=run) as ours:
            if not ours:
                problems.append(
                    f"Kept the old run folder {run} this time ([core] keep_runs = {keep}): "
                    "another eb process is writing it; a later run deletes it"
                )
                continue
            try:
                _delete_run(run)
            except FileNotFoundError:
                continue  # another run finishing at the same time deleted it first
            except OSError as exc:
                problems.append(
                    f"Could not delete the old run folder {run} ([core] keep_runs = {keep}): {exc}"
                )
    return problems


# What makes a folder a finished run to prune_runs: deleted last, so that a deletion that fails
# part-way (a file a check made immutable, a folder without write permission) leaves a finished
# run, which the next prune tries again and warns about again. Deleted first, they left a folder
# that no listing counts as a run and nothing ever deletes, after a single warning.
_MARKS = ("stages", FINISHED_MARK)


def _delete_run(run: Path) -> None:
    """Delete the run folder `run`: its files and folders, then its stage files, then its
    report.json and its config stage, then the folders."""
    # Each listing closed as it is left: a deletion that fails part-way leaves no open one.
    with os.scandir(run) as entries:
        for entry in entries:
            if entry.name not in _MARKS:
                _delete_entry(entry)
    stages = run / "stages"
    folder = stages.is_dir() and not stages.is_symlink()
    if folder:
        with os.scandir(stages) as entries:
            for entry in entries:
                if entry.name != "config.json":
                    _delete_entry(entry)
    (run / FINISHED_MARK).unlink(missing_ok=True)
    if folder:
        (stages / "config.json").unlink(missing_ok=True)
        stages.rmdir()
    else:
        stages.unlink(missing_ok=True)  # a link, or nothing
    run.rmdir()


def _delete_entry(entry: os.DirEntry[str]) -> None:
    if entry.is_dir(follow_symlinks=False):
        shutil.rmtree(entry.path)
    else:
        os.unlink(entry.path)


def run_folder_hint(*, folder: Path, otherwise: str, after: str = ".") -> str:
    """The hint for `folder` given where a run folder goes: the run it holds (then `after`), or
    `otherwise` when it holds none."""
    held = runs_held(folder=folder)
    return f"{held}{after}" if held else otherwise


def runs_held(*, folder: Path) -> str | None:
    """What to pass instead of `folder` when it is not a run folder but holds runs.

    `eb run --output-dir DIR` makes a run folder of its own under DIR (unless --flat-output), so
    a shard job's artifact is DIR/<run id>, and passing DIR itself is the commonest slip.
    None also when `folder` is no folder at all.
    """
    runs = runs_by_creation(base=folder)
    if not runs:
        return None
    if len(runs) == 1:
        return f"{folder} holds one run folder: pass {runs[0]}"
    return f"{folder} holds {len(runs)} run folders; the newest is {runs[-1]}"


def not_a_run_folder(*, folder: Path) -> str | None:
    """Why `folder` cannot be a run folder (None when it has the run's stages/ folder)."""
    if not folder.exists():
        return f"{folder} does not exist"
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if (folder / "stages").is_dir():
        return None
    return f"{folder} is not a run folder (it has no stages/ folder)"
