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
