"""Writing a stage's files into a run folder, refusing a path something else holds.

`core.files` leaves a write whose path cannot name a file (a folder in the way, a file where a
folder should be) to its caller to word: here it is a setup error naming the path and the fix,
as reading one back is ("is not a regular file (a folder)"), never a traceback.
"""

from __future__ import annotations

import contextlib
import stat
from collections.abc import Iterator
from pathlib import Path

from eval_banana.core import canonjson
from eval_banana.core.errors import StageFileError
from eval_banana.core.files import write_model
from eval_banana.core.readback import file_kind
from eval_banana.core.record import Record
from eval_banana.stagefiles.layout import stage_path


def write_stage_model(
    *, run_dir: Path, stage: str, model: Record, rendered: canonjson.Rendered | None = None
) -> str:
    """Write a stage's file atomically; return the digest of its bytes."""
    path = stage_path(run_dir=run_dir, stage=stage)
    with refusing_wrong_place(path=path, stage=stage):
        return write_model(path=path, model=model, rendered=rendered)


@contextlib.contextmanager
def refusing_wrong_place(*, path: Path, stage: str, fix: str | None = None) -> Iterator[None]:
    """Turn a write of `path` (by the `stage` stage) that something else stands in the way of
    into a setup error that names the path and says to remove what is there. `fix`: what to do
    once it is removed (by default, rerun the stage)."""
    try:
        yield
    except OSError as exc:  # core.files raises an OSError only for a path in the wrong place
        raise _wrong_place(path=path, stage=stage, fix=fix) from exc


def refuse_wrong_place(*, path: Path, stage: str, fix: str | None = None) -> None:
    """Refuse, before anything is done, a write of `path` that something stands in the way of:
    a folder at the path (a rename never replaces one, and eb never removes a folder it did not
    make), or a file where one of its folders should be. Nothing there, or any file eb replaces
    whole, passes."""
    try:
        taken = stat.S_ISDIR(path.lstat().st_mode)
    except NotADirectoryError:
        taken = True
    except OSError:
        return  # nothing there (or nothing eb can tell): the write itself tells what fails
    if taken:
        raise _wrong_place(path=path, stage=stage, fix=fix)


@contextlib.contextmanager
def making_folder(*, path: Path, stage: str) -> Iterator[None]:
    """Turn the making of the folder `path` (by the `stage` stage), which a file stands in the
    way of, into a setup error that names the path and says to remove the file."""
    try:
        yield
    except (FileExistsError, NotADirectoryError) as exc:
        where = "there"
        if isinstance(exc, NotADirectoryError):
            where = "where one of its folders should be"
        raise StageFileError(
            f"Cannot make the folder {path}: a file stands {where}",
            file=str(path),
            hint=f"Remove the file in the way, {_rerun(stage=stage)}.",
        ) from exc


def _rerun(*, stage: str) -> str:
    return f"then rerun the {stage} stage (eb stage {stage}, or eb update)"


def _wrong_place(*, path: Path, stage: str, fix: str | None) -> StageFileError:
    rerun = fix if fix is not None else _rerun(stage=stage)
    try:
        mode = path.lstat().st_mode
    except OSError:
        # Nothing at the path itself: a file stands where one of its folders should be.
        return StageFileError(
            f"Cannot write {path}: a file stands where one of its folders should be",
            file=str(path),
            hint=f"Remove the file in the way (in {path.parent} or above it), {rerun}.",
        )
    what = file_kind(mode)
    return StageFileError(
        f"Cannot write {path}: it is not a regular file ({what})",
        file=str(path),
        hint=f"Remove it, {rerun}.",
    )
