"""Stage files edited by hand into a pass: each file must agree with itself and with the files
it was made from, or `eb status` calls it invalid, `eb stage` refuses it and `eb update` makes it
again (real `eb` processes over a real run folder)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import check_yaml
from tests.processes import eb_process


@pytest.fixture
def failed_run(project: Callable[..., Path]) -> Path:
    """The run folder of a finished run with one passing and one failing check (exit 1)."""
    root = project(
        {
            "eval_checks/good.yaml": check_yaml("good"),
            "eval_checks/bad.yaml": check_yaml("bad", script="import sys; sys.exit('nope')"),
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    assert eb_process(root, "run").returncode == 1
    (run_dir,) = (root / "runs").iterdir()
    return run_dir


def _edit(run_dir: Path, name: str, change: Callable[[dict[str, Any]], None]) -> None:
    path = run_dir / "stages" / name
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def _report_passed(run_dir: Path) -> bool:
    passed: bool = json.loads((run_dir / "report.json").read_text())["run_passed"]
    return passed


def _status_row(run_dir: Path, stage: str) -> str:
    status = eb_process(run_dir.parent.parent, "status", "--run-dir", str(run_dir))
    return next(line for line in status.stdout.splitlines() if line.startswith(stage))


def test_a_score_whose_verdict_contradicts_its_own_counts_is_refused_and_scored_again(
    failed_run: Path,
) -> None:
    root = failed_run.parent.parent
    # The verdict turned into a pass; the counts, the threshold and meets_threshold say no.
    _edit(failed_run, "score.json", lambda doc: doc.update(run_passed=True, status="passed"))

    row = _status_row(failed_run, "score")
    assert "invalid" in row and "$.run_passed" in row, row
    report = eb_process(root, "stage", "report", "--run-dir", str(failed_run))
    assert report.returncode == 2, report.stdout + report.stderr
    assert "score.json" in report.stderr and "$.run_passed" in report.stderr
    assert not _report_passed(failed_run)

    update = eb_process(root, "update", "--run-dir", str(failed_run))
    assert update.returncode == 1, update.stdout + update.stderr
    assert "Passed: no" in update.stdout
    assert not _report_passed(failed_run)
    assert eb_process(root, "status", "--run-dir", str(failed_run)).returncode == 0


def test_a_score_forged_whole_disagrees_with_the_results_it_was_made_from(
    failed_run: Path,
) -> None:
    root = failed_run.parent.parent

    def forge(doc: dict[str, Any]) -> None:
        # Every derived field agrees with the forged counts; only execute.json refutes them.
        doc.update(
            passed_checks=2,
            failed_checks=0,
            points_earned=2,
            percentage=100.0,
            meets_threshold=True,
            run_passed=True,
            status="passed",
        )

    _edit(failed_run, "score.json", forge)

    row = _status_row(failed_run, "score")
    assert "invalid" in row and "disagrees with stages/execute.json at $.passed_checks" in row
    score = eb_process(root, "stage", "report", "--run-dir", str(failed_run))
    assert score.returncode == 2 and "eb update" in score.stderr, score.stderr

    update = eb_process(root, "update", "--run-dir", str(failed_run))
    assert update.returncode == 1, update.stdout + update.stderr
    assert not _report_passed(failed_run)


def test_a_planned_check_without_a_result_is_stale_and_run_by_eb_update(failed_run: Path) -> None:
    root = failed_run.parent.parent
    # The failing check's result removed: what is left would score 1/1, a pass.
    _edit(
        failed_run,
        "execute.json",
        lambda doc: doc.update(results=[r for r in doc["results"] if r["check_id"] != "bad"]),
    )

    row = _status_row(failed_run, "execute")
    assert "stale" in row and "bad: no result recorded" in row, row
    score = eb_process(root, "stage", "score", "--run-dir", str(failed_run))
    assert score.returncode == 2, score.stdout + score.stderr
    assert "no result for planned check 'bad'" in score.stderr and "eb update" in score.stderr

    update = eb_process(root, "update", "--run-dir", str(failed_run))
    assert update.returncode == 1, update.stdout + update.stderr
    assert "rerun bad: no result recorded" in update.stdout
    assert "Passed: no" in update.stdout and not _report_passed(failed_run)


def _ghost(doc: dict[str, Any]) -> None:
    ghost = dict(doc["results"][0], check_id="ghost")
    doc["results"].append(ghost)


def _other_definition(doc: dict[str, Any]) -> None:
    doc["results"][0]["check_definition_sha256"] = "sha256:" + "0" * 64


def _reversed(doc: dict[str, Any]) -> None:
    doc["results"].reverse()


@pytest.mark.parametrize(
    ("change", "where", "rerun"),
    [
        (_ghost, "$.results[2].check_id: 'ghost' is not a check of the plan", False),
        (_other_definition, "$.results[0].check_definition_sha256", True),
        (_reversed, "$.results[1].check_id", False),
    ],
    ids=["unplanned", "other-definition", "out-of-order"],
)
def test_results_that_are_not_the_plans_are_refused_and_mended_by_eb_update(
    failed_run: Path, change: Callable[[dict[str, Any]], None], where: str, rerun: bool
) -> None:
    root = failed_run.parent.parent
    _edit(failed_run, "execute.json", change)

    row = _status_row(failed_run, "execute")
    assert "invalid" in row and f"disagrees with stages/plan.json at {where}" in row, row
    score = eb_process(root, "stage", "score", "--run-dir", str(failed_run))
    assert score.returncode == 2, score.stdout + score.stderr
    assert "execute.json" in score.stderr and "eb update" in score.stderr

    update = eb_process(root, "update", "--run-dir", str(failed_run))
    assert update.returncode == 1, update.stdout + update.stderr
    assert ("to run again" in update.stdout) and (("rerun " in update.stdout) is rerun)
    executed = json.loads((failed_run / "stages" / "execute.json").read_text())
    assert [result["check_id"] for result in executed["results"]] == ["bad", "good"]
    assert eb_process(root, "status", "--run-dir", str(failed_run)).returncode == 0
