"""`eb status`: each stage file present, valid, and up to date with its inputs (like `make -n`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from eval_banana.errors import StageFileError
from eval_banana.stagefiles import STAGE_INPUTS, read_stage, stage_digest
from eval_banana.stages import STAGE_NAMES, stage_path


@dataclass(frozen=True)
class StageState:
    stage: str
    path: Path
    state: str  # ok | missing | invalid | stale
    detail: str = ""


def stage_state(*, run_dir: Path, stage: str) -> StageState:
    path = stage_path(run_dir=run_dir, stage=stage)
    if not path.is_file():
        return StageState(stage=stage, path=path, state="missing")
    try:
        doc = read_stage(run_dir=run_dir, stage=stage)
    except StageFileError as exc:
        return StageState(stage=stage, path=path, state="invalid", detail=exc.message)
    for upstream in STAGE_INPUTS[stage]:
        current = stage_digest(run_dir=run_dir, stage=upstream)
        if current != doc.inputs.get(upstream):
            changed = stage_path(run_dir=run_dir, stage=upstream)
            relative = changed.relative_to(run_dir)
            return StageState(stage=stage, path=path, state="stale", detail=f"{relative} changed")
    return StageState(stage=stage, path=path, state="ok")


def run_status(*, run_dir: Path) -> list[StageState]:
    return [stage_state(run_dir=run_dir, stage=stage) for stage in STAGE_NAMES]
