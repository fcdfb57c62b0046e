"""Repeats end to end: `eb run` samples a check N times, decides by its rule, and shows disagreement.

The judge is a stand-in agent that answers by a script in its prompt (tests/agents/scripted):
the n-th start of a check's samples gives the n-th answer, so "pass, fail, pass" over three
samples is exactly two passes and one fail, whichever sample gets which.
"""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.core.stem import artifact_stem
from tests.conftest import STANDIN_AGENTS, EbResult
from tests.processes import eb_process

SCRIPTED = STANDIN_AGENTS / "scripted"


def scripted_config(*, extra: str = "") -> str:
    command = json.dumps([sys.executable, str(SCRIPTED)])
    return (
        '[core]\noutput_dir = "runs"\nmax_parallel_checks = 8\n'
        + extra
        + f'\n[harness]\nagent = "scripted"\ntimeout_seconds = 60\n\n'
        f"[agents.scripted]\ncommand = {command}\n"
    )


def judge(
    check_id: str,
    *,
    answers: str,
    repeats: int | None = None,
    aggregate: str | None = None,
    expect: str | None = None,
    more: str = "",
) -> str:
    lines = [
        "schema_version: 1",
        f"id: {check_id}",
        "type: harness_judge",
        f"description: Judge {check_id}.",
        "instructions: |",
        "  Is the answer right?",
        f"  scripted: answers={answers} key={check_id} {more}",
    ]
    if repeats is not None:
        lines.append(f"repeats: {repeats}")
    if aggregate is not None:
        lines.append(f"aggregate: {aggregate}")
    if expect is not None:
        lines.append(f"expect: {expect}")
    return "\n".join(lines) + "\n"


class Run:
    def __init__(self, *, root: Path, outcome: EbResult) -> None:
        self.root = root
        self.outcome = outcome
        (self.run_dir,) = sorted((root / "runs").iterdir())[-1:]
        self.report: dict[str, Any] = json.loads((self.run_dir / "report.json").read_text())
        self.checks = {check["check_id"]: check for check in self.report["checks"]}

    def files(self, check_id: str) -> list[str]:
        stem = artifact_stem(check_id=check_id)
        return sorted(
            path.name.replace(stem, "<stem>")
            for path in (self.run_dir / "checks").iterdir()
            if path.name.startswith(stem)
        )


@pytest.fixture
def run_project(
    project: Callable[..., Path],
    eb: Callable[..., EbResult],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[..., Run]:
    monkeypatch.setenv("SCRIPTED_STATE", str(tmp_path / "scripted-state"))
    monkeypatch.setenv("SCRIPTED_LOG", str(tmp_path / "scripted.log"))

    def run(checks: dict[str, str], *args: str, config_extra: str = "") -> Run:
        root = project(
            {f"eval_checks/{name}.yaml": text for name, text in checks.items()},
            config=scripted_config(extra=config_extra),
        )
        # Fresh counters per run: each run's samples start counting at the first answer.
        for counter in (tmp_path / "scripted-state").glob("*.count"):
            counter.unlink()
        outcome = eb("run", "--cwd", str(root), *args)
        return Run(root=root, outcome=outcome)

    return run


def test_all_needs_every_sample_and_disagreement_is_flagged(
    run_project: Callable[..., Run],
) -> None:
    run = run_project({"j": judge("j", answers="pass,fail,pass", repeats=3)})
    assert run.outcome.exit_code == 1, run.outcome.stderr
    check = run.checks["j"]
    assert (check["status"], check["score"]) == ("failed", 0)
    details = check["details"]
    assert details["aggregate"] == "all"
    assert details["pass_rate"] == pytest.approx(2 / 3)
    assert details["flaky"] is True
    assert sorted(sample["status"] for sample in details["samples"]) == [
        "failed",
        "passed",
        "passed",
    ]
    assert [sample["sample"] for sample in details["samples"]] == [1, 2, 3]
    assert check["reason"].startswith("2 of 3 samples passed (all); sample ")
    assert check["reason"].endswith(": scripted fail")
    # Each sample keeps its own evidence; the canonical stem holds only the aggregated result.
    assert run.files("j") == sorted(
        ["<stem>.json"]
        + [
            f"<stem>.s{k}{suffix}"
            for k in (1, 2, 3)
            for suffix in (".json", ".prompt.txt", ".stdout.txt", ".transcript.jsonl")
        ]
    )
    first = details["samples"][0]["evidence"]
    assert first == {
        "stdout": f"checks/{artifact_stem(check_id='j')}.s1.stdout.txt",
        "prompt": f"checks/{artifact_stem(check_id='j')}.s1.prompt.txt",
        "transcript": f"checks/{artifact_stem(check_id='j')}.s1.transcript.jsonl",
        "result": f"checks/{artifact_stem(check_id='j')}.s1.json",
    }
    one = json.loads((run.run_dir / first["result"]).read_text())
    assert one["status"] == details["samples"][0]["status"]
    assert "samples" not in one["details"]
    canonical = json.loads(
        (run.run_dir / "checks" / f"{artifact_stem(check_id='j')}.json").read_text()
    )
    assert canonical == check
    # Counted and shown everywhere.
    assert run.report["flaky_checks"] == 1
    assert "- j: failed (flaky, 2/3 samples passed) - 2 of 3 samples passed" in run.outcome.stdout
    assert "1 check was flaky: its samples disagreed." in (run.run_dir / "report.md").read_text()
    score = json.loads((run.run_dir / "stages" / "score.json").read_text())
    assert score["flaky_checks"] == 1


@pytest.mark.parametrize(
    ("rule", "answers", "status", "flaky"),
    [
        ("majority", "pass,fail,pass", "passed", True),
        ("majority", "fail,pass,fail", "failed", True),
        ("any", "fail,fail,pass", "passed", True),
        ("any", "fail,fail,fail", "failed", False),
        ("all", "pass,pass,pass", "passed", False),
    ],
)
def test_each_rule_decides_as_stated(
    run_project: Callable[..., Run], rule: str, answers: str, status: str, flaky: bool
) -> None:
    run = run_project({"j": judge("j", answers=answers, repeats=3, aggregate=rule)})
    check = run.checks["j"]
    assert check["status"] == status
    assert check["details"]["flaky"] is flaky
    assert check["details"]["aggregate"] == rule
    assert run.outcome.exit_code == (0 if status == "passed" else 1)
    assert run.report["flaky_checks"] == (1 if flaky else 0)


def test_majority_of_an_even_count_needs_more_than_half(run_project: Callable[..., Run]) -> None:
    run = run_project({"j": judge("j", answers="pass,fail", repeats=4, aggregate="majority")})
    assert run.checks["j"]["status"] == "failed"
    assert run.checks["j"]["details"]["pass_rate"] == 0.5


def test_an_erroring_sample_errors_the_check_whatever_the_rule(
    run_project: Callable[..., Run],
) -> None:
    run = run_project({"j": judge("j", answers="pass,error,pass", repeats=3, aggregate="any")})
    assert run.outcome.exit_code == 1
    check = run.checks["j"]
    assert check["status"] == "error"
    assert check["error_detail"].startswith("1 of 3 samples errored; sample ")
    assert "Agent exited with code 3" in check["error_detail"]
    statuses = sorted(sample["status"] for sample in check["details"]["samples"])
    assert statuses == ["error", "passed", "passed"]
    assert check["details"]["flaky"] is False  # no sample failed: errors are not a verdict
    assert run.report["errored_checks"] == 1


def test_a_control_applies_the_rule_first_then_its_expectation(
    run_project: Callable[..., Run],
) -> None:
    run = run_project(
        {
            "caught": judge(
                "caught", answers="fail,pass,fail", repeats=3, aggregate="majority", expect="fail"
            ),
            "missed": judge(
                "missed", answers="fail,pass,pass", repeats=3, aggregate="majority", expect="fail"
            ),
        }
    )
    caught, missed = run.checks["caught"], run.checks["missed"]
    assert (caught["observed_status"], caught["status"]) == ("failed", "passed")
    assert (missed["observed_status"], missed["status"]) == ("passed", "failed")
    # The samples keep what each one observed, not the control's judgement of it.
    assert sorted(s["status"] for s in caught["details"]["samples"]) == [
        "failed",
        "failed",
        "passed",
    ]


def test_fail_on_flaky_fails_a_run_whose_rule_passed(run_project: Callable[..., Run]) -> None:
    checks = {"j": judge("j", answers="pass,fail,pass", repeats=3, aggregate="majority")}
    run = run_project(checks, "--fail-on-flaky", "--junit-xml", "junit.xml")
    assert run.checks["j"]["status"] == "passed"
    assert run.outcome.exit_code == 1
    assert (run.report["run_passed"], run.report["fail_on_flaky"]) == (False, True)
    assert "The run fails on flaky checks (--fail-on-flaky)." in run.outcome.stdout
    tree = ET.parse(run.root / "junit.xml")
    case = tree.find(".//testcase[@name='j']")
    assert case is not None
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["flaky"] == "true" and properties["samples"] == "3"
    assert properties["aggregate"] == "majority"
    suite = {
        p.get("name"): p.get("value") for p in tree.find("testsuite/properties").iter("property")
    }  # type: ignore[union-attr]
    assert suite["flaky_checks"] == "1"
    html = (run.run_dir / "report.html").read_text()
    assert '<span class="flaky">flaky</span>' in html
    assert 'id="flaky-filter"' in html and "Flaky only (1)" in html
    # Every check passed: the verdict names the flaky one, not a check that failed or errored.
    assert 'id="verdict">FAILED<small>1 check was flaky (--fail-on-flaky)</small>' in html
    # The same run without the switch passes: the switch is what failed it.
    again = run_project(checks, config_extra="fail_on_flaky = false\n")
    assert again.outcome.exit_code == 0


def test_the_repeats_setting_samples_every_check_without_its_own(
    run_project: Callable[..., Run],
) -> None:
    script = (
        "schema_version: 1\nid: d\ntype: deterministic\ndescription: A script.\n"
        "script: |\n  import json, sys, pathlib\n"
        "  ctx = json.loads(pathlib.Path(sys.argv[1]).read_text())\n"
        "  (pathlib.Path(ctx['output_dir']) / 'seen.txt').write_text('x')\n"
    )
    run = run_project(
        {
            "own": judge("own", answers="pass", repeats=2),
            "plain": judge("plain", answers="pass"),
            "d": script,
        },
        "--repeats",
        "3",
    )
    assert run.outcome.exit_code == 0, run.outcome.stdout + run.outcome.stderr
    counts = {name: len(check["details"]["samples"]) for name, check in run.checks.items()}
    assert counts == {"own": 2, "plain": 3, "d": 3}
    # A deterministic sample gets its own output_dir.
    stem = artifact_stem(check_id="d")
    assert (run.run_dir / "checks" / f"{stem}.s2" / "seen.txt").is_file()
    assert run.checks["d"]["details"]["samples"][1]["evidence"]["output_dir"] == f"checks/{stem}.s2"
    assert run.report["flaky_checks"] == 0


def test_one_sample_is_exactly_an_unsampled_run(run_project: Callable[..., Run]) -> None:
    run = run_project(
        {"one": judge("one", answers="pass", repeats=1), "none": judge("none", answers="pass")}
    )
    for name in ("one", "none"):
        details = run.checks[name]["details"]
        assert not {"samples", "aggregate", "pass_rate", "flaky"} & set(details)
        assert run.files(name) == [
            "<stem>.json",
            "<stem>.prompt.txt",
            "<stem>.stdout.txt",
            "<stem>.transcript.jsonl",
        ]
    html = (run.run_dir / "report.html").read_text()
    assert 'id="flaky-filter"' not in html and 'class="flaky"' not in html
    plan = json.loads((run.run_dir / "stages" / "plan.json").read_text())
    definition = next(c["definition"] for c in plan["checks"] if c["id"] == "none")
    assert not {"repeats", "aggregate", "calibration"} & set(definition)


def test_samples_run_at_the_same_time(run_project: Callable[..., Run]) -> None:
    # Each sample waits until all four have started: run one after another, they would not.
    run = run_project({"j": judge("j", answers="pass", repeats=4, more="barrier=4")})
    assert run.checks["j"]["status"] == "passed", run.checks["j"]


def test_retries_apply_to_each_sample(run_project: Callable[..., Run]) -> None:
    run = run_project(
        {"j": judge("j", answers="error,pass,pass,pass", repeats=2)}, "--retries", "1"
    )
    check = run.checks["j"]
    assert check["status"] == "passed", check
    attempts = sorted(sample["attempts"] for sample in check["details"]["samples"])
    assert attempts == [1, 2]
    retried = next(s for s in check["details"]["samples"] if s["attempts"] == 2)
    stem = f"{artifact_stem(check_id='j')}.s{retried['sample']}"
    assert (run.run_dir / "checks" / f"{stem}.attempt1.stderr.txt").is_file()
    assert json.loads((run.run_dir / "checks" / f"{stem}.attempt1.json").read_text())["status"] == (
        "error"
    )


def test_a_sample_that_needed_a_retry_flags_its_check_as_retried(
    project: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Through a real `eb` process: the console line, report.md and JUnit each flag the check
    # with the most attempts any of its samples took, as they flag a retried plain judge.
    monkeypatch.setenv("SCRIPTED_STATE", str(tmp_path / "scripted-state"))
    monkeypatch.setenv("SCRIPTED_LOG", str(tmp_path / "scripted.log"))
    root = project(
        {"eval_checks/j.yaml": judge("j", answers="error,pass,pass,pass", repeats=3)},
        config=scripted_config(),
    )
    done = eb_process(root, "run", "--retries", "1", "--junit-xml", "junit.xml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "- j: passed (after 2 attempts, 3/3 samples passed)" in done.stdout
    (run_dir,) = (root / "runs").iterdir()
    assert "`passed` (after 2 attempts, 3/3 samples passed)" in (run_dir / "report.md").read_text()
    assert "after 2 attempts, 3/3 samples passed" in (run_dir / "report.html").read_text()
    case = ET.parse(root / "junit.xml").getroot().find(".//testcase")
    assert case is not None
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert (properties.get("attempts"), properties.get("passed_on_retry")) == ("2", "true")


def test_secrets_are_masked_in_every_sample(
    run_project: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAMPLE_API_KEY", "s3cr3t-value-123")
    run = run_project({"j": judge("j", answers="pass", repeats=2, more="echo=SAMPLE_API_KEY")})
    assert run.checks["j"]["status"] == "passed"
    for path in (run.run_dir / "checks").iterdir():
        assert "s3cr3t-value-123" not in path.read_text(), path.name
    assert "s3cr3t-value-123" not in (run.run_dir / "report.json").read_text()
    assert "***" in (run.run_dir / "report.json").read_text()


def test_a_stopped_run_does_not_start_the_samples_left(
    run_project: Callable[..., Run],
) -> None:
    run = run_project(
        {"slow": judge("slow", answers="pass", repeats=2, more="sleep=30")},
        "--run-timeout-seconds",
        "1",
        "--max-parallel-checks",
        "1",
    )
    assert run.outcome.exit_code == 3
    check = run.checks["slow"]
    assert check["status"] == "error"
    samples = check["details"]["samples"]
    assert samples[0]["error_detail"].startswith("Stopped: run timeout")
    assert samples[1]["not_run"] is True and samples[1]["evidence"] == {}
    assert os.path.exists(run.run_dir / "report.json")
