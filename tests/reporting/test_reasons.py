"""Why a run did not pass, as report.html's verdict names it: every reason the rule has."""

from __future__ import annotations

from typing import Any

from eval_banana.reporting.reasons import NO_REASON, failure_reasons
from eval_banana.reporting.recap import not_run_text


def _report(**fields: Any) -> dict[str, Any]:
    return {
        "run_passed": False,
        "meets_threshold": True,
        "pass_threshold": 0.8,
        "errored_checks": 0,
        "not_run_checks": 0,
        "halted_by": None,
        "flaky_checks": 0,
        "fail_on_flaky": False,
        "families": [],
        **fields,
    }


def test_a_passed_run_has_no_reason() -> None:
    assert failure_reasons(report=_report(run_passed=True, meets_threshold=True)) == []


def test_each_reason_that_applies_in_order() -> None:
    families = [
        {"id": "qa", "gate_held": False},
        {"id": "tone", "gate_held": True},
        {"id": "smoke", "gate_held": False},
    ]
    report = _report(
        meets_threshold=False,
        errored_checks=6,  # 4 of them never started: they did not error
        not_run_checks=4,
        halted_by="maxfail",
        flaky_checks=1,
        fail_on_flaky=True,
        families=families,
    )
    assert failure_reasons(report=report) == [
        "below the threshold 80%",
        "2 checks errored",
        "maxfail stopped it (4 checks not run)",
        "1 check was flaky (--fail-on-flaky)",
        "the gates of families qa, smoke did not hold",
    ]


def test_flaky_checks_are_a_reason_only_under_fail_on_flaky() -> None:
    assert failure_reasons(report=_report(flaky_checks=2)) == [NO_REASON]
    said = failure_reasons(report=_report(flaky_checks=2, fail_on_flaky=True))
    assert said == ["2 checks were flaky (--fail-on-flaky)"]


def test_many_broken_gates_are_named_up_to_ten() -> None:
    families = [{"id": f"f{n:02d}", "gate_held": False} for n in range(25)]
    (said,) = failure_reasons(report=_report(families=families))
    assert said.startswith("the gates of families f00, f01,") and "f09 and 15 more" in said


def test_a_run_that_judged_nothing_says_so_not_that_it_is_below_the_threshold() -> None:
    # 0 of 0 is below no threshold, not even 0%: every selected check was skipped.
    report = _report(meets_threshold=False, pass_threshold=0.0, total_checks=0, skipped_checks=2)
    assert failure_reasons(report=report) == [
        "every selected check was skipped, so nothing was judged"
    ]


def test_checks_held_back_for_different_reasons_are_told_each_with_its_own() -> None:
    # A merge of shards can hold one shard's interrupted checks and another's fuse-stopped ones.
    def held(check_id: str, why: str) -> dict[str, Any]:
        return {
            "check_id": check_id,
            "error_detail": f"Not run: {why}",
            "details": {"not_run": True},
        }

    checks = [
        held("a", "interrupted"),
        {"check_id": "ran", "status": "passed", "details": {}},
        held("b", "token fuse tripped"),
        held("c", "interrupted"),
    ]
    assert not_run_text(report={"checks": checks}) == (
        "2 checks (a, c) - interrupted; 1 check (b) - token fuse tripped"
    )
