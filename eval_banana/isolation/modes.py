"""Which checks a run isolates (kept light: every run asks, few need the rest of the package)."""

from __future__ import annotations

from typing import Any, Literal

from eval_banana.core.words import visible
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, PlanDoc, PlannedCheck

Mode = Literal["off", "detect", "copy"]
# The modes under which a check that changed the project is an error (details.isolation.mode).
WATCHED_MODES: tuple[Mode, ...] = ("detect", "copy")
# How many changed paths a result lists (details.isolation); the count says how many there were.
SHOWN_PATHS = 100


def check_mode(*, config: ConfigDoc, check: PlannedCheck) -> Mode:
    """How one check is isolated: judges by [harness] isolation, deterministic checks by
    [execution] isolation; assertions checks only read a file in eb's own process."""
    if check.type == "harness_judge":
        return config.settings.harness.isolation
    if check.type == "deterministic":
        return config.settings.execution.isolation
    return "off"


def isolates_any(*, config: ConfigDoc, plan: PlanDoc) -> bool:
    return any(check_mode(config=config, check=check) != "off" for check in plan.checks)


def shown_paths(paths: list[str]) -> str:
    """The first few changed paths, as an error message names them."""
    listed = ", ".join(visible(path) for path in paths[:5])
    return listed + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


def listed_paths(paths: list[str]) -> list[str]:
    """The changed paths a result lists (the first SHOWN_PATHS). A check or a judge names the
    files it makes, so each is shown with control characters and bytes that are not UTF-8 as
    `\\xNN`: a name with a line break would start a line of eb's output, and one that is not
    UTF-8 could not be written into the check's result at all."""
    return [visible(path) for path in paths[:SHOWN_PATHS]]


def isolation_error(*, result: CheckResult, record: dict[str, Any], problem: str) -> CheckResult:
    """The result as the isolation error a run makes of it (score 0): its own answer is kept,
    as evidence, in `details.isolation` (`record`)."""
    record = {**record}
    if result.status != "error" or "status_before" not in record:
        record.update(status_before=result.status, reason_before=result.reason)
    return result.model_copy(
        update={
            "status": "error",
            "score": 0,
            "observed_status": "error",
            "reason": None,
            "error_detail": problem,
            "details": {
                **result.details,
                "isolation": record,
                # The judge changed what it was to judge: its answer cannot count.
                "error_class": "isolation",
                "error_cause": "changed the project or eb's state",
            },
        }
    )
