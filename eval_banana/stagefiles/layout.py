"""Stage files by name: the pipeline's stages in order, where each one's file lives in a run
folder, and the envelope fields every stage document shares."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from eval_banana.core.version import tool_version

SCHEMA_BASE = "https://eval-banana.dev/schemas/"


STAGE_NAMES: tuple[str, ...] = (
    "config",
    "discover",
    "validate",
    "guard",
    "execute",
    "score",
    "report",
)
# The validate stage writes plan.json; every other stage writes <stage>.json.
STAGE_FILES: dict[str, str] = {name: f"{name}.json" for name in STAGE_NAMES}
STAGE_FILES["validate"] = "plan.json"
# The reports at the top of a run folder (named here, low: a reader of one, such as a replay or
# `eb diff`, need not load the stage that writes it).
REPORT_JSON = "report.json"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"


def stage_path(*, run_dir: Path, stage: str) -> Path:
    """Where a stage's file lives in a run folder (the one place that knows)."""
    return run_dir / "stages" / STAGE_FILES[stage]


def envelope(*, stage: str, run_id: str, inputs: dict[str, str]) -> dict[str, object]:
    """The envelope fields shared by every stage document, for a stage document being built now."""
    schema = "validate" if stage == "validate" else stage
    return {
        "$schema": f"{SCHEMA_BASE}stages/{schema}.schema.json",
        "schema_version": 1,
        "stage": stage,
        "tool_version": tool_version(),
        "run_id": run_id,
        "created_at": created_now(),
        "inputs": inputs,
    }


def created_now() -> str:
    """A stage document's `created_at`: now, in UTC, with microseconds and `Z`."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
