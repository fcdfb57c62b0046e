"""The family gate: one rule for the score stage and for the verdict a replay derives."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from eval_banana.models.result import CheckResult, Status
from eval_banana.runners.results import build_result
from eval_banana.stagefiles.verdict import replayed_verdict
from eval_banana.stages.score import score
from tests.builders import make_config, make_execute, planned_inline

ROOT = Path("/project")
MOMENT = datetime(2026, 11, 30, tzinfo=UTC)


def _cases(*statuses: Status) -> list[CheckResult]:
    made = []
    for n, status in enumerate(statuses):
        check = planned_inline(id="fam", script="pass", project_root=ROOT)
        check = check.model_copy(update={"id": f"fam[{n}]", "family": "fam", "case_id": str(n)})
        made.append(build_result(check=check, status=status, started=MOMENT))
    return made


def test_a_family_below_its_gate_fails_a_run_whose_threshold_is_met() -> None:
    config = make_config(project_root=ROOT, pass_threshold=0.5)
    execute = make_execute(results=_cases("passed", "passed", "passed", "failed"))
    held = score(config=config, execute=execute.model_copy(update={"family_gates": {"fam": 0.75}}))
    assert held.run_passed and held.families[0].gate_held
    doc = score(config=config, execute=execute.model_copy(update={"family_gates": {"fam": 0.8}}))
    assert doc.meets_threshold and not doc.run_passed and doc.status == "failed"
    family = doc.families[0]
    assert (family.cases, family.passed, family.failed, family.pass_rate) == (4, 3, 1, 0.75)
    assert replayed_verdict(score=doc, threshold=0.5, fail_on_flaky=False) is False
    assert replayed_verdict(score=held, threshold=0.5, fail_on_flaky=False) is True


def test_a_stored_gate_that_does_not_follow_from_its_counts_is_refused() -> None:
    config = make_config(project_root=ROOT, pass_threshold=0.5)
    execute = make_execute(results=_cases("passed", "failed"))
    execute = execute.model_copy(update={"family_gates": {"fam": 0.9}})
    doc = score(config=config, execute=execute)
    forged = doc.model_copy(
        update={
            "families": [doc.families[0].model_copy(update={"gate_held": True})],
            "run_passed": True,
            "status": "passed",
        }
    )
    verdict = replayed_verdict(score=forged, threshold=0.5, fail_on_flaky=False)
    # Told at the field the counts refute, by the one rule score.json is checked with.
    assert isinstance(verdict, str) and "$.families[0].gate_held true" in verdict


def test_a_family_without_a_gate_is_listed_and_never_fails_the_run() -> None:
    config = make_config(project_root=ROOT, pass_threshold=0.5)
    doc = score(config=config, execute=make_execute(results=_cases("passed", "failed")))
    assert doc.run_passed
    assert [(f.id, f.min_pass_rate, f.gate_held) for f in doc.families] == [("fam", None, True)]
