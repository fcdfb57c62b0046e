"""A partial rerun's results merged over the earlier execute stage: what is kept, what is not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ExecuteDoc, PlannedCheck
from eval_banana.pipeline.partial import merge_results
from eval_banana.runners.results import build_result, utc_now
from tests.builders import make_execute, make_plan, planned_inline


def _checks(tmp_path: Path, count: int) -> list[PlannedCheck]:
    return [
        planned_inline(id=f"c{index}", script="pass", project_root=tmp_path)
        for index in range(count)
    ]


def _passed(check: PlannedCheck, **details: Any) -> CheckResult:
    return build_result(check=check, status="passed", started=utc_now(), details=details)


class _CountedResults(list[CheckResult]):
    """A list that counts how often it is walked."""

    walks = 0

    def __iter__(self) -> Any:
        type(self).walks += 1
        return super().__iter__()


def test_a_rerun_keeps_the_earlier_results_of_the_same_definitions_only(tmp_path: Path) -> None:
    checks = _checks(tmp_path, 3)
    earlier = make_execute(results=[_passed(check, run="earlier") for check in checks])
    edited = checks[2].model_copy(update={"check_definition_sha256": "sha256:" + "e" * 64})
    plan = make_plan(checks=[checks[0], checks[1], edited])
    fresh = make_execute(results=[_passed(checks[1], run="fresh")])
    merged = merge_results(plan=plan, fresh=fresh, previous=earlier)
    assert [result.details.get("run") for result in merged.results] == ["earlier", "fresh", None]
    # The edited check's earlier result was for another definition: not run, never a pass.
    assert merged.results[2].status == "error"
    assert merged.results[2].error_detail is not None
    assert merged.results[2].error_detail.startswith("Not run: outside the rerun's selection")
    assert merged.not_run == ["c2"]


def test_the_earlier_results_are_read_once_not_once_per_kept_check(tmp_path: Path) -> None:
    # Rerunning one row of a 10,000-case family keeps 9,999 results: looking each up by
    # walking the earlier list again was 50 million comparisons.
    checks = _checks(tmp_path, 200)
    earlier: ExecuteDoc = make_execute(results=[_passed(check) for check in checks])
    earlier.results = _CountedResults(earlier.results)
    merged = merge_results(
        plan=make_plan(checks=checks),
        fresh=make_execute(results=[_passed(checks[0], run="fresh")]),
        previous=earlier,
    )
    assert [result.check_id for result in merged.results] == [check.id for check in checks]
    assert merged.results[0].details["run"] == "fresh"
    assert _CountedResults.walks == 1


def test_a_rerun_keeps_the_runs_first_start_and_adds_its_time_to_the_runs(
    tmp_path: Path,
) -> None:
    # The run took 2 s; a day later one update took 0.5 s, then another 0.25 s.
    (check,) = _checks(tmp_path, 1)
    plan = make_plan(checks=[check])
    run = make_execute(
        results=[_passed(check)],
        started_at="2026-03-01T10:00:00.000000+00:00",
        completed_at="2026-03-01T10:00:02.000000+00:00",
    )
    merged = run
    for started, completed in (
        ("2026-03-02T09:00:00.000000+00:00", "2026-03-02T09:00:00.500000+00:00"),
        ("2026-03-02T09:30:00.000000+00:00", "2026-03-02T09:30:00.250000+00:00"),
    ):
        fresh = make_execute(results=[_passed(check)], started_at=started, completed_at=completed)
        merged = merge_results(plan=plan, fresh=fresh, previous=merged)
    assert merged.started_at == run.started_at
    assert merged.completed_at == "2026-03-02T09:30:00.250000+00:00"
    assert merged.updated_at == "2026-03-02T09:30:00.000000+00:00"
    assert merged.duration_ms == 2750


def test_a_rerun_over_no_earlier_results_is_the_runs_first_execution(tmp_path: Path) -> None:
    (check,) = _checks(tmp_path, 1)
    fresh = make_execute(results=[_passed(check)])
    merged = merge_results(plan=make_plan(checks=[check]), fresh=fresh, previous=None)
    assert (merged.started_at, merged.completed_at) == (fresh.started_at, fresh.completed_at)
    assert (merged.duration_ms, merged.updated_at) == (None, None)
