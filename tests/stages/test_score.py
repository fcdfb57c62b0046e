"""The score stage."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from eval_banana.core.files import sha256_file
from eval_banana.models.result import CheckResult, Status
from eval_banana.models.stages import ScoreDoc
from eval_banana.runners.results import build_result, error_result
from eval_banana.stagefiles.read import read_stage
from eval_banana.stages.score import score, write_score_stage
from tests.builders import make_config, make_execute, planned_inline

ROOT = Path("/project")
MOMENT = datetime(2026, 11, 30, tzinfo=UTC)


def results(*statuses: Status) -> list[CheckResult]:
    made = []
    for n, status in enumerate(statuses):
        check = planned_inline(id=f"c{n}", script="pass", project_root=ROOT)
        if status == "error":
            made.append(error_result(check=check, started=MOMENT, error_detail="broken"))
        else:
            made.append(build_result(check=check, status=status, started=MOMENT))
    return made


def scored(*statuses: Status, threshold: float = 1.0, **execute: object) -> ScoreDoc:
    config = make_config(project_root=ROOT, pass_threshold=threshold)
    return score(config=config, execute=make_execute(results=results(*statuses), **execute))  # type: ignore[arg-type]


def test_counts_points_and_a_passing_run() -> None:
    doc = scored("passed", "passed")
    assert (doc.total_checks, doc.total_points, doc.points_earned) == (2, 2, 2)
    assert (doc.passed_checks, doc.failed_checks, doc.errored_checks) == (2, 0, 0)
    assert doc.percentage == 100.0
    assert doc.meets_threshold and doc.run_passed and doc.status == "passed"
    assert doc.not_run_checks == 0 and doc.aborted_by is None


def test_two_of_three_is_66_7_percent_and_fails_threshold_one() -> None:
    doc = scored("passed", "passed", "failed")
    assert doc.percentage == 66.7
    assert not doc.meets_threshold and not doc.run_passed and doc.status == "failed"


def test_seven_of_ten_meets_point_seven() -> None:
    doc = scored(*(["passed"] * 7 + ["failed"] * 3), threshold=0.7)  # type: ignore[arg-type]
    assert doc.percentage == 70.0
    assert doc.meets_threshold and doc.run_passed


@pytest.mark.parametrize("threshold", [0.0, 0.5])
def test_one_error_fails_the_run_whatever_the_threshold(threshold: float) -> None:
    doc = scored("passed", "passed", "error", threshold=threshold)
    assert doc.errored_checks == 1 and doc.meets_threshold
    assert not doc.run_passed and doc.status == "failed"


def test_no_checks_is_zero_and_never_meets() -> None:
    doc = scored(threshold=0.0)
    assert doc.percentage == 0.0 and not doc.meets_threshold and not doc.run_passed


@pytest.mark.parametrize(
    ("changed_since", "last_failed", "none", "passes"),
    [
        ("HEAD", False, "all", True),
        (None, True, "skip", True),
        ("main", True, "all", True),
        (None, False, "skip", False),
        # By default --last-failed runs every selected check when none that can run failed:
        # no result means every selected check is skipped, which is no pass.
        (None, True, "all", False),
    ],
)
def test_an_incremental_selection_of_nothing_passes(
    changed_since: str | None, last_failed: bool, none: str, passes: bool
) -> None:
    # --changed-since or --last-failed selecting nothing: nothing that could break was touched.
    from eval_banana.models.config import Selection

    config = make_config(project_root=ROOT, last_failed_none=none)
    selection = Selection(changed_since=changed_since, last_failed=last_failed)
    config = config.model_copy(update={"selection": selection})
    doc = score(config=config, execute=make_execute(results=[]))
    assert (doc.run_passed, doc.meets_threshold) == (passes, passes)


def test_aborted_run_never_passes_and_counts_not_run() -> None:
    config = make_config(project_root=ROOT, pass_threshold=0.0)
    made = results("passed")
    check = planned_inline(id="skipped", script="pass", project_root=ROOT)
    made.append(
        error_result(
            check=check,
            started=MOMENT,
            error_detail="Not run: interrupted",
            details={"not_run": True},
        )
    )
    execute = make_execute(results=made, aborted_by="interrupt", not_run=["skipped"])
    doc = score(config=config, execute=execute)
    assert doc.status == "aborted" and doc.aborted_by == "interrupt"
    assert doc.not_run_checks == 1 and not doc.run_passed


def test_score_stage_file_round_trips(tmp_path: Path) -> None:
    doc = scored("passed")
    assert doc.stage == "score" and set(doc.inputs) == {"config", "execute"}
    digest = write_score_stage(run_dir=tmp_path, doc=doc)
    path = tmp_path / "stages" / "score.json"
    assert digest == sha256_file(path=path)
    assert read_stage(run_dir=path.parent.parent, stage="score") == doc
