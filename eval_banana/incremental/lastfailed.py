"""--last-failed: the checks that failed or errored in the newest earlier run, as pytest's --lf.

The earlier run is read from its stage files (stages/execute.json). When there is no earlier
run, or it recorded no failure (or no execute stage at all), every check is selected.
"""

from __future__ import annotations

from pathlib import Path

from eval_banana.models.stages import ConfigDoc
from eval_banana.readback import read_json
from eval_banana.rundir import newest_run_dir
from eval_banana.stages import stage_path


def failed_ids(*, run_dir: Path) -> list[str] | None:
    """Ids of the checks that failed or errored in `run_dir`; None when it recorded none."""
    try:
        document = read_json(stage_path(run_dir=run_dir, stage="execute"))
    except (OSError, ValueError):
        return None  # that run stopped before executing anything
    results = document.get("results") if isinstance(document, dict) else None
    if not isinstance(results, list):
        return None
    found = [
        str(result["check_id"])
        for result in results
        if isinstance(result, dict)
        and result.get("status") in ("failed", "error")
        and isinstance(result.get("check_id"), str)
    ]
    return sorted(set(found)) or None


def _run_id(*, run_dir: Path) -> str:
    try:
        document = read_json(stage_path(run_dir=run_dir, stage="config"))
        return str(document["run_id"])
    except (OSError, ValueError, KeyError, TypeError):
        return run_dir.name


def resolve_last_failed(*, config: ConfigDoc) -> ConfigDoc:
    """`config` with the earlier run and its failed checks recorded in the selection."""
    earlier = newest_run_dir(config=config)
    selection = config.selection.model_copy(
        update={
            "last_failed_run_id": _run_id(run_dir=earlier) if earlier is not None else None,
            "last_failed_ids": failed_ids(run_dir=earlier) if earlier is not None else None,
        }
    )
    return config.model_copy(update={"selection": selection})
