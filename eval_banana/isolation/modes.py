"""Which checks a run isolates (kept light: every run asks, few need the rest of the package)."""

from __future__ import annotations

from typing import Literal

from eval_banana.models.stages import ConfigDoc, PlanDoc, PlannedCheck

Mode = Literal["off", "detect", "copy"]
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
