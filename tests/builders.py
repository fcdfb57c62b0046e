"""Small builders for stage documents, so tests can start the pipeline at any stage."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from eval_banana.core.stem import artifact_stem
from eval_banana.models.check import DeterministicCheck, HarnessJudgeCheck
from eval_banana.models.config import CoreSettings, ExecutionSettings, HarnessSettings, Settings
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import (
    ConfigDoc,
    ExecuteDoc,
    GuardDoc,
    PlanDoc,
    PlannedCheck,
    ResolvedHarness,
)
from eval_banana.stagefiles.layout import envelope

RUN_ID = "20261130_002431_b31f0879"
SNAPSHOTS_DIR = "stages/snapshots"

_SECTIONS: dict[str, type[CoreSettings | ExecutionSettings | HarnessSettings]] = {
    "core": CoreSettings,
    "execution": ExecutionSettings,
    "harness": HarnessSettings,
}


def fake_digest(text: str) -> str:
    """Any valid `sha256:<hex>` string, stable for a given text."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_config(*, project_root: Path, run_id: str = RUN_ID, **overrides: Any) -> ConfigDoc:
    """A config document; each override is a setting name of [core], [execution] or [harness]."""
    sections: dict[str, dict[str, Any]] = {name: {} for name in _SECTIONS}
    for key, value in overrides.items():
        owner = next((name for name, model in _SECTIONS.items() if key in model.model_fields), None)
        if owner is None:
            raise TypeError(f"make_config: unknown setting {key!r}")
        sections[owner][key] = value
    settings = Settings(**{name: model(**sections[name]) for name, model in _SECTIONS.items()})
    return ConfigDoc.model_validate(
        {
            **envelope(stage="config", run_id=run_id, inputs={}),
            "project_root": str(project_root),
            "config_file": None,
            "settings": settings,
            "sources": {},
        }
    )


def make_plan(*, checks: list[PlannedCheck], run_id: str = RUN_ID) -> PlanDoc:
    return PlanDoc.model_validate(
        {**envelope(stage="validate", run_id=run_id, inputs={}), "ok": True, "checks": checks}
    )


def make_guard(*, harness: ResolvedHarness | None = None, run_id: str = RUN_ID) -> GuardDoc:
    return GuardDoc.model_validate(
        {
            **envelope(stage="guard", run_id=run_id, inputs={}),
            "ok": True,
            "judge_checks": [],
            "harness": harness,
        }
    )


def _source_path(*, project_root: Path, id: str) -> str:
    return str(project_root / "eval_checks" / f"{id}.yaml")


def _planned(*, definition: dict[str, Any], project_root: Path, **extra: Any) -> PlannedCheck:
    check_id = definition["id"]
    return PlannedCheck(
        id=check_id,
        type=definition["type"],
        description=definition["description"],
        source_path=_source_path(project_root=project_root, id=check_id),
        stem=artifact_stem(check_id=check_id),
        check_definition_sha256=fake_digest(check_id),
        definition=definition,
        **extra,
    )


def planned_inline(
    *,
    id: str,
    script: str,
    project_root: Path,
    description: str | None = None,
    tags: list[str] | None = None,
    expect: str = "pass",
) -> PlannedCheck:
    """A deterministic check with an inline script."""
    definition = DeterministicCheck(
        schema_version=1,
        id=id,
        type="deterministic",
        description=description or f"check {id}",
        tags=tags or [],
        expect=expect,
        script=script,
    ).model_dump(mode="json")
    return _planned(definition=definition, project_root=project_root)


def planned_referenced(
    *, id: str, script_file: Path, project_root: Path, run_dir: Path
) -> PlannedCheck:
    """A deterministic check with script_path, its bytes frozen now as validate does."""
    definition = DeterministicCheck(
        schema_version=1,
        id=id,
        type="deterministic",
        description=f"check {id}",
        script_path=str(script_file),
    ).model_dump(mode="json")
    stem = artifact_stem(check_id=id)
    snapshot = f"{SNAPSHOTS_DIR}/{stem}.py"
    frozen = run_dir / snapshot
    frozen.parent.mkdir(parents=True, exist_ok=True)
    frozen.write_bytes(script_file.read_bytes())
    return _planned(
        definition=definition,
        project_root=project_root,
        snapshot=snapshot,
        script_path=str(script_file.resolve()),
    )


def planned_unavailable(*, id: str, missing: Path, project_root: Path) -> PlannedCheck:
    """A deterministic check whose referenced script could not be frozen."""
    definition = DeterministicCheck(
        schema_version=1,
        id=id,
        type="deterministic",
        description=f"check {id}",
        script_path=str(missing),
    ).model_dump(mode="json")
    return _planned(
        definition=definition,
        project_root=project_root,
        script_path=str(missing),
        script_unavailable=f"Deterministic script not found: {missing}",
    )


def planned_judge(*, id: str, project_root: Path, instructions: str = "Judge it.") -> PlannedCheck:
    definition = HarnessJudgeCheck(
        schema_version=1,
        id=id,
        type="harness_judge",
        description=f"judge {id}",
        instructions=instructions,
    ).model_dump(mode="json")
    return _planned(definition=definition, project_root=project_root)


def make_execute(
    *,
    results: list[CheckResult],
    run_id: str = RUN_ID,
    started_at: str = "2026-11-30T00:24:31.189726+00:00",
    completed_at: str = "2026-11-30T00:24:33.500000+00:00",
    aborted_by: str | None = None,
    not_run: list[str] | None = None,
) -> ExecuteDoc:
    return ExecuteDoc.model_validate(
        {
            **envelope(stage="execute", run_id=run_id, inputs={}),
            "started_at": started_at,
            "completed_at": completed_at,
            "results": results,
            "aborted_by": aborted_by,
            "not_run": not_run or [],
        }
    )


def newest_run_dir(folder: Path) -> Path:
    """The run folder in `folder` of the newest run: by when its report says it started, since
    two run ids of the same second sort by their random suffix, not by time."""

    def started(run_dir: Path) -> str:
        report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
        return str(report["started_at"])

    return max(folder.iterdir(), key=started)


def lfs_pointer(data: bytes) -> bytes:
    """The pointer file Git LFS commits for `data`, as a checkout without the LFS content
    (actions/checkout's default) leaves it in the work tree."""
    oid = hashlib.sha256(data).hexdigest()
    return (
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {len(data)}\n".encode()
    )
