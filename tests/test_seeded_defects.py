"""Defects that once slipped past the whole suite, each now caught by a test here.

Each was seeded into the package on purpose and the suite stayed green: a run verdict computed
from the pass threshold alone (in report.json and in the exit code), a stop reason that a later
stop overwrote, and a gemini result event with an unknown status still yielding a verdict.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.harness.verdict import extract_verdict
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import PlannedCheck
from eval_banana.runners.results import StopSignal, stop_reason
from eval_banana.stages.execute import execute
from tests.builders import make_config, make_guard, make_plan, planned_inline
from tests.conftest import PYTHON, STANDIN_AGENTS, check_yaml

CORE = '[core]\noutput_dir = "results"\nmax_parallel_checks = 1\n'


def judge(check_id: str, directive: str) -> str:
    """A judge check steered through the stand-in agents' `standin:` line."""
    return textwrap.dedent(
        f"""\
        schema_version: 1
        id: {check_id}
        type: harness_judge
        description: Judge {check_id}.
        instructions: |
          Judge it.
          standin: {directive}
        """
    )


def run_dir_of(root: Path) -> Path:
    (path,) = root.glob("results/*/report.json")
    return path.parent


def report_of(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir_of(root) / "report.json").read_text("utf-8"))
    return data


@pytest.fixture
def standins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{STANDIN_AGENTS}{os.pathsep}{os.environ['PATH']}")


# --- the run verdict: threshold met is not enough -----------------------------------------------


@pytest.mark.usefixtures("standins")
def test_an_errored_check_fails_the_run_although_the_threshold_is_met(
    project: Callable[..., Path], eb: Callable[..., Any]
) -> None:
    # One pass and one error is 50 %, which meets 0.5; the error alone must still fail the run.
    root = project(
        {
            "eval_checks/a_ok.yaml": check_yaml("a_ok"),
            "eval_checks/b_silent.yaml": judge("b_silent", "mode=no_verdict"),
        },
        config=CORE + 'pass_threshold = 0.5\n[harness]\nagent = "claude"\n',
    )
    junit = root / "junit.xml"
    outcome = eb("run", "--cwd", str(root), "--json", "--junit-xml", str(junit))
    assert outcome.exit_code == 1, outcome.stderr
    report = report_of(root)
    assert json.loads(outcome.stdout) == report
    assert [c["status"] for c in report["checks"]] == ["passed", "error"]
    assert report["meets_threshold"] is True and report["errored_checks"] == 1
    assert report["run_passed"] is False
    run_dir = run_dir_of(root)
    assert "| Run Passed | `no` |" in (run_dir / "report.md").read_text("utf-8")
    assert '<property name="run_passed" value="false"' in junit.read_text("utf-8")
    # The console says the same, and rerunning score or report alone keeps the verdict.
    assert "Passed: no" in eb("stage", "report", "--run-dir", str(run_dir)).stdout
    assert eb("stage", "score", "--run-dir", str(run_dir)).exit_code == 1
    assert eb("stage", "report", "--run-dir", str(run_dir)).exit_code == 1


@pytest.mark.usefixtures("standins")
def test_a_fuse_tripped_by_the_last_check_still_aborts_a_perfect_run(
    project: Callable[..., Path], eb: Callable[..., Any]
) -> None:
    # The only judge passes and reports 103 tokens, which trips a budget of 100 as it ends:
    # every point earned, no error, nothing left unrun, and still the run was aborted.
    root = project(
        {"eval_checks/only.yaml": judge("only", "score=1")},
        config=CORE + '[harness]\nagent = "claude"\ntoken_fuse = 100\n',
    )
    outcome = eb("run", "--cwd", str(root))
    assert outcome.exit_code == 3, outcome.stderr
    report = report_of(root)
    assert report["aborted_by"] == "token_fuse"
    assert (report["points_earned"], report["errored_checks"], report["not_run_checks"]) == (
        1,
        0,
        0,
    )
    assert report["meets_threshold"] is True and report["run_passed"] is False
    run_dir = run_dir_of(root)
    assert "| Run Passed | `no` |" in (run_dir / "report.md").read_text("utf-8")
    assert eb("stage", "score", "--run-dir", str(run_dir)).exit_code == 3
    assert eb("stage", "report", "--run-dir", str(run_dir)).exit_code == 3


# --- the first stop reason wins -----------------------------------------------------------------


def test_a_later_stop_never_rewrites_the_first_reason() -> None:
    stop = StopSignal()
    assert not stop.is_set() and stop_reason(cancel=stop) == "interrupt"
    stop.stop(reason="token_fuse")
    stop.stop(reason="interrupt")
    stop.stop(reason="run_timeout")
    assert stop.is_set() and stop.reason == "token_fuse"
    assert stop_reason(cancel=stop) == "token_fuse"


def test_an_interrupt_after_a_fuse_keeps_the_fuse_as_the_reason(tmp_path: Path) -> None:
    # A caller that owns the StopSignal presses stop after the run timeout already tripped:
    # the report must still name the fuse, and the unrun check must say why it did not run.
    root = tmp_path / "project"
    root.mkdir()
    checks = [
        planned_inline(id="slow", script="import time\ntime.sleep(20)\n", project_root=root),
        planned_inline(id="later", script="pass\n", project_root=root),
    ]
    cancel = StopSignal()

    def interrupt_after(check: PlannedCheck, result: CheckResult) -> None:
        cancel.stop(reason="interrupt")

    doc = execute(
        config=make_config(project_root=root, max_parallel_checks=1, run_timeout_seconds=1),
        plan=make_plan(checks=checks),
        guard=make_guard(),
        run_dir=tmp_path / "run",
        cancel=cancel,
        on_result=interrupt_after,
    )
    slow, later = doc.results
    assert slow.error_detail == "Stopped: run timeout reached"
    assert later.error_detail == "Not run: run timeout reached"
    assert doc.aborted_by == "run_timeout" and doc.not_run == ["later"]


# --- gemini: only a successful result event lets a verdict through ------------------------------

VERDICT = '{"score": 1, "reason": "looks right"}'


def gemini_stream(*, status: str | None) -> str:
    """A gemini stream-json transcript: a verdict in the assistant deltas, then a result."""
    result: dict[str, Any] = {"type": "result", "stats": {"total_tokens": 7}}
    if status is not None:
        result["status"] = status
    lines = [
        {"type": "init", "session_id": "s1", "model": "gemini-2.5-pro"},
        {"type": "message", "role": "assistant", "content": VERDICT[:12], "delta": True},
        {"type": "message", "role": "assistant", "content": VERDICT[12:], "delta": True},
        result,
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


@pytest.mark.parametrize("status", ["cancelled", "Success", "", None])
def test_gemini_result_that_is_not_a_success_is_no_verdict(
    tmp_path: Path, status: str | None
) -> None:
    path = tmp_path / "stdout.txt"
    path.write_text(gemini_stream(status=status), encoding="utf-8")
    found = extract_verdict(dialect="gemini", stdout_path=path)
    assert found.verdict is None
    assert found.problem == f"the agent's result event has status {json.dumps(status)}"
    assert found.usage_event is not None and found.usage_event["stats"] == {"total_tokens": 7}
    # The same stream with a successful result is a verdict: only the status decides.
    path.write_text(gemini_stream(status="success"), encoding="utf-8")
    assert extract_verdict(dialect="gemini", stdout_path=path).verdict == (1, "looks right")


GEMINI_LIKE = """\
import json, re, sys
prompt = sys.argv[sys.argv.index("-p") + 1]
status = re.search(r"status=(\\w+)", prompt).group(1)
for event in (
    {"type": "message", "role": "assistant", "content": '{"score": 1, ', "delta": True},
    {"type": "message", "role": "assistant", "content": '"reason": "fine"}', "delta": True},
    {"type": "result", "status": status, "stats": {"total_tokens": 5}},
):
    print(json.dumps(event))
"""


def test_a_cancelled_gemini_run_is_an_error_through_eb_run(
    project: Callable[..., Path], eb: Callable[..., Any], tmp_path: Path
) -> None:
    agent = tmp_path / "gemini_like.py"
    agent.write_text(GEMINI_LIKE, encoding="utf-8")
    config = CORE + textwrap.dedent(
        f"""\
        pass_threshold = 0.5
        [harness]
        agent = "gemini_like"
        [agents.gemini_like]
        command = [{json.dumps(PYTHON)}, {json.dumps(str(agent))}]
        prompt_flag = "-p"
        model_flag = ""
        output_dialect = "gemini"
        """
    )
    root = project(
        {
            "eval_checks/a_done.yaml": judge("a_done", "status=success"),
            "eval_checks/b_cancelled.yaml": judge("b_cancelled", "status=cancelled"),
        },
        config=config,
    )
    outcome = eb("run", "--cwd", str(root))
    assert outcome.exit_code == 1, outcome.stderr
    done, cancelled = report_of(root)["checks"]
    assert (done["status"], done["reason"]) == ("passed", "fine")
    assert (cancelled["status"], cancelled["score"]) == ("error", 0)
    assert cancelled["details"]["verdict_problem"] == (
        'the agent\'s result event has status "cancelled"'
    )
