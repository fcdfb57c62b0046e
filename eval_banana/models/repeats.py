"""How many samples a check takes and how their verdicts decide the check (standard library only).

The check models, the pydantic-free fast path and the execute stage all read these, so the
limits and the rules cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

Rule = Literal["all", "majority", "any"]
RULES: tuple[str, ...] = get_args(Rule)
DEFAULT_RULE: Rule = "all"
MIN_REPEATS = 1
MAX_REPEATS = 20

# What each rule means, in the words the schema, the docs and the reports use.
RULE_WORDS: dict[str, str] = {
    "all": "every sample must pass",
    "majority": "more than half of the samples must pass",
    "any": "one passing sample is enough",
}


def valid_repeats(value: object) -> bool:
    """An integer from 1 to 20 (never a boolean, never a float such as 3.0)."""
    return type(value) is int and MIN_REPEATS <= value <= MAX_REPEATS


def sample_count(*, definition: Mapping[str, Any], default: int) -> int:
    """The check's own `repeats`, else the run's (`[core] repeats`, `--repeats`)."""
    own = definition.get("repeats")
    return own if isinstance(own, int) and valid_repeats(own) else default


def rule_of(*, definition: Mapping[str, Any]) -> Rule:
    """The check's `aggregate` rule (default: all)."""
    rule = definition.get("aggregate")
    if rule == "majority":
        return "majority"
    if rule == "any":
        return "any"
    return DEFAULT_RULE


def decide(*, rule: str, passed: int, total: int) -> bool:
    """Whether `passed` passing samples out of `total` make the check pass under `rule`."""
    if total <= 0:
        return False
    if rule == "any":
        return passed >= 1
    if rule == "majority":
        return 2 * passed > total
    return passed == total


def decided_status(*, statuses: Sequence[str], rule: str) -> Literal["passed", "failed", "error"]:
    """What a check's samples (their statuses) decide under `rule`: an error in any makes an
    error (a broken judge is never outvoted), else the rule decides. A run's aggregation and
    a calibration's verdicts both decide by this."""
    if "error" in statuses:
        return "error"
    passed = sum(1 for status in statuses if status == "passed")
    return "passed" if decide(rule=rule, passed=passed, total=len(statuses)) else "failed"


def settled_whatever_undecided(
    *, rule: str, passed: int, undecided: int, total: int
) -> bool | None:
    """What the check comes to under `rule` whatever its `undecided` samples (those that ended
    in an error, judging nothing) would have said: True, it passes even were they all to fail;
    False, it fails even were they all to pass; None, they could still turn it."""
    if decide(rule=rule, passed=passed, total=total):
        return True
    if not decide(rule=rule, passed=passed + undecided, total=total):
        return False
    return None


def is_flaky(details: Mapping[str, Any] | None) -> bool:
    """Whether a result's samples disagreed (some passed, some failed)."""
    return isinstance(details, Mapping) and details.get("flaky") is True
