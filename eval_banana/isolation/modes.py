"""Which checks a run isolates (kept light: every run asks, few need the rest of the package)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from eval_banana.core.words import visible
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, PlanDoc, PlannedCheck
from eval_banana.settings.table import SETTINGS_BY_NAME, SettingSpec

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


def noun(check_type: str) -> str:
    """What a message calls a check of this type."""
    return "judge" if check_type == "harness_judge" else "check"


def mode_setting(check_type: str) -> SettingSpec:
    """The setting that isolates checks of this type, as `check_mode` reads it."""
    if check_type == "harness_judge":
        return SETTINGS_BY_NAME["harness.isolation"]
    return SETTINGS_BY_NAME["execution.isolation"]


def setting_name(setting: SettingSpec) -> str:
    """A setting as the config file spells it: `[execution] isolation`."""
    return f"[{setting.section}] {setting.key}"


def named_with_ways(setting: SettingSpec, *, command: str) -> str:
    """A setting as the config file names it, with the flag `eb <command>` takes and the
    variable: the advice holds whichever way the run was configured."""
    flag = setting.flag if command in setting.commands else None
    ways = [way for way in (flag, setting.env) if way is not None]
    return f"{setting_name(setting)} ({', '.join(ways)})" if ways else setting_name(setting)


def write_advice(check_type: str, *, command: str = "run") -> str:
    """What lets a check or judge that needs to write do so without an isolation error."""
    ignore = setting_name(SETTINGS_BY_NAME["harness.isolation_ignore"])
    mode = named_with_ways(mode_setting(check_type), command=command)
    return (
        f'list the paths it may write in {ignore}, or set {mode} to "off" for '
        f"{noun(check_type)}s meant to write"
    )


def ignore_list(*, config: ConfigDoc) -> list[str]:
    """`[harness] isolation_ignore` as a watched result records it (`details.isolation.ignore`):
    the patterns, sorted, each once."""
    return sorted(set(config.settings.harness.isolation_ignore))


def judged_as_strictly(*, record: object, wanted: Mode, ignore: Sequence[str]) -> bool:
    """Whether a verdict judged under `record` (its `details.isolation`) is one a check
    isolated `wanted`, ignoring the patterns `ignore`, would have let through as well.

    `off` takes any verdict. A watched check takes only a watched verdict whose ignored
    patterns are all among its own: a write a pattern let through there would count here.
    A record without the patterns (stored before they were recorded) was almost always judged
    with none, so it serves a check that ignores none; one that ignores some judges it again,
    since that project may have let other writes through then (docs/incremental.md)."""
    if wanted == "off":
        return True
    if not isinstance(record, dict) or record.get("mode") not in WATCHED_MODES:
        return False  # judged unwatched: a write into the project passed there
    judged_under = record.get("ignore")
    if judged_under is None:
        return not ignore
    if not isinstance(judged_under, list) or not all(isinstance(p, str) for p in judged_under):
        return False  # not a list of patterns: no run can tell what it let through
    return set(judged_under) <= set(ignore)


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
