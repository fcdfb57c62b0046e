"""Writing a stage's files into a run folder, refusing a path something else holds.

`core.files` leaves a write whose path cannot name a file (a folder in the way, a file where a
folder should be) to its caller to word: here it is a setup error naming the path and the fix,
as reading one back is ("is not a regular file (a folder)"), never a traceback.
"""

from __future__ import annotations

import contextlib
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
def refusing_wrong_place(*, path: Path, stage: str) -> Iterator[None]:
    """Turn a write of `path` (by the `stage` stage) that something else stands in the way of
    into a setup error that names the path and says to remove what is there."""
    try:
        yield
    except OSError as exc:  # core.files raises an OSError only for a path in the wrong place
        raise _wrong_place(path=path, stage=stage) from exc


def _wrong_place(*, path: Path, stage: str) -> StageFileError:
    rerun = f"then rerun the {stage} stage (eb stage {stage}, or eb update)"
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
