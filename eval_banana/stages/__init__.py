"""The pipeline's stages, in order: config, discover, validate, guard, execute, score, report.

Kept free of heavy imports so that naming a stage (argparse choices, Invoke tasks) costs nothing.
"""

from pathlib import Path

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


def stage_path(*, run_dir: Path, stage: str) -> Path:
    """Where a stage's file lives in a run folder (the one place that knows)."""
    return run_dir / "stages" / STAGE_FILES[stage]
