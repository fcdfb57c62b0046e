"""Run fuses (issue 6): a judge-token budget and a wall-clock limit for the run.

When a fuse trips no new check starts, running ones are stopped, unrun checks are `Not run`
errors (never failures), the report names the fuse, and `eb run` exits 3.
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.runners.fuses import RunFuses
from eval_banana.runners.results import StopSignal
from eval_banana.stages.execute import execute
from eval_banana.stages.score import score
from tests.builders import make_config, make_guard, make_plan, planned_inline
from tests.conftest import STANDIN_AGENTS, check_yaml
from tests.processes import eb_process

SLEEPER = textwrap.dedent(
    """
    import json, sys, time
    out = json.load(open(sys.argv[1]))["output_dir"]
    open(out + "/started", "w").close()
    time.sleep(60)
    """
)


def judge(check_id: str, directive: str = "score=1") -> str:
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


def report_of(root: Path) -> dict[str, Any]:
    (path,) = root.glob("results/*/report.json")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


# --- the fuse object ---------------------------------------------------------------------------


def test_token_fuse_counts_reports_and_trips_at_the_budget() -> None:
    stop = StopSignal()
    fuses = RunFuses(stop=stop, token_budget=250, run_timeout_s=0)
    assert fuses.tokens_used is None
    fuses.report_tokens(100)
    fuses.report_tokens(100)
    assert fuses.tokens_used == 200 and not stop.is_set()
    fuses.report_tokens(50)
    assert stop.is_set() and stop.reason == "token_fuse" and fuses.tripped == "token_fuse"


def test_token_fuse_zero_is_off_but_still_counts() -> None:
    stop = StopSignal()
    fuses = RunFuses(stop=stop, token_budget=0, run_timeout_s=0)
    fuses.report_tokens(10**9)
    assert not stop.is_set() and fuses.tokens_used == 10**9


def test_token_fuse_counts_reports_from_many_threads_exactly() -> None:
    fuses = RunFuses(stop=StopSignal(), token_budget=0, run_timeout_s=0)

    def report_many() -> None:
        for _ in range(1000):
            fuses.report_tokens(1)

    threads = [threading.Thread(target=report_many) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fuses.tokens_used == 8000


def test_run_timer_trips_and_an_earlier_stop_keeps_its_reason() -> None:
    stop = StopSignal()
    with RunFuses(stop=stop, token_budget=0, run_timeout_s=0.1) as fuses:
        assert stop.wait(timeout=5)
    assert stop.reason == "run_timeout" and fuses.tripped == "run_timeout"
    interrupted = StopSignal()
    interrupted.stop(reason="interrupt")
    late = RunFuses(stop=interrupted, token_budget=1, run_timeout_s=0)
    late.report_tokens(5)
    assert interrupted.reason == "interrupt" and late.tripped is None


def test_closed_run_timer_never_trips() -> None:
    stop = StopSignal()
    with RunFuses(stop=stop, token_budget=0, run_timeout_s=0.2):
        pass
    time.sleep(0.4)
    assert not stop.is_set()


# --- the run timeout in the execute stage ------------------------------------------------------


def test_run_timeout_stops_the_running_check_and_skips_the_rest(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    checks = [
        planned_inline(id="quick", script="pass\n", project_root=root),
        planned_inline(id="slow", script=SLEEPER, project_root=root),
        planned_inline(id="later", script="pass\n", project_root=root),
        planned_inline(
            id="control", script="raise SystemExit(1)\n", project_root=root, expect="fail"
        ),
    ]
    config = make_config(project_root=root, max_parallel_checks=1, run_timeout_seconds=1)
    began = time.monotonic()
    doc = execute(
        config=config,
        plan=make_plan(checks=checks),
        guard=make_guard(),
        run_dir=tmp_path / "run",
        cancel=threading.Event(),
    )
    assert time.monotonic() - began < 10
    quick, slow, later, control = doc.results
    assert quick.status == "passed"
    assert (slow.status, slow.error_detail) == ("error", "Stopped: run timeout reached")
    for unrun in (later, control):
        assert (unrun.status, unrun.score) == ("error", 0)
        assert unrun.error_detail == "Not run: run timeout reached"
        assert unrun.details == {"not_run": True}
    # A control that never ran caught nothing: it stays an error.
    assert control.expect == "fail" and control.observed_status == "error"
    assert doc.aborted_by == "run_timeout" and doc.not_run == ["later", "control"]
    scored = score(config=config, execute=doc)
    assert (scored.failed_checks, scored.errored_checks, scored.not_run_checks) == (0, 3, 2)
    assert scored.status == "aborted" and not scored.run_passed


def test_run_timeout_through_eb_run_exits_3_and_names_the_fuse(
    project: Callable[..., Path], eb: Callable[..., Any]
) -> None:
    root = project(
        {
            "eval_checks/a_slow.yaml": check_yaml("a_slow", script="import time\ntime.sleep(60)\n"),
            "eval_checks/b_next.yaml": check_yaml("b_next", script="raise SystemExit(1)\n"),
        },
        config='[core]\noutput_dir = "results"\nmax_parallel_checks = 1\n',
    )
    began = time.monotonic()
    outcome = eb("run", "--cwd", str(root), "--run-timeout-seconds", "1")
    assert time.monotonic() - began < 15
    assert outcome.exit_code == 3
    assert "run_timeout" in outcome.stderr
    report = report_of(root)
    assert report["aborted_by"] == "run_timeout" and report["not_run_checks"] == 1
    assert report["failed_checks"] == 0 and report["run_passed"] is False
    statuses = [(c["check_id"], c["status"], c["error_detail"]) for c in report["checks"]]
    # b_next would have failed, but it never ran: it is not counted as a failure.
    assert statuses == [
        ("a_slow", "error", "Stopped: run timeout reached"),
        ("b_next", "error", "Not run: run timeout reached"),
    ]
    md = next(root.glob("results/*/report.md")).read_text(encoding="utf-8")
    assert "Run aborted by `run_timeout`; 1 check did not run." in md
    # On the console the check that never started is `not run`, apart from the stopped one.
    assert "- a_slow: error - Stopped: run timeout reached\n" in outcome.stdout
    assert "- not run: 1 check (b_next) - run timeout reached\n" in outcome.stdout
    assert "- b_next: error" not in outcome.stdout
    assert outcome.stdout.splitlines()[-1].startswith(
        "0 failed, 0 passed, 1 errored, 0 skipped, 1 not run in "
    )


# --- the fuses through eb run with the claude stand-in (real output: 150 tokens, $0.00135) --


@pytest.fixture
def standins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{STANDIN_AGENTS}{os.pathsep}{os.environ['PATH']}")


JUDGE_CONFIG = """\
[core]
output_dir = "results"
max_parallel_checks = {parallel}

[harness]
agent = "{agent}"
timeout_seconds = 60
token_fuse = {fuse}
"""


@pytest.mark.usefixtures("standins")
def test_token_fuse_trips_stops_running_judges_and_skips_the_rest(
    project: Callable[..., Path], eb: Callable[..., Any]
) -> None:
    root = project(
        {
            "eval_checks/a_first.yaml": judge("a_first", "score=0"),
            "eval_checks/b_slow.yaml": judge("b_slow", "sleep=60"),
            "eval_checks/c_never.yaml": judge("c_never", "score=0"),
            "eval_checks/d_never.yaml": check_yaml("d_never", script="raise SystemExit(1)\n"),
        },
        config=JUDGE_CONFIG.format(parallel=2, agent="claude", fuse=100),
    )
    began = time.monotonic()
    outcome = eb("run", "--cwd", str(root))
    assert time.monotonic() - began < 30
    assert outcome.exit_code == 3, outcome.stderr
    assert "token_fuse" in outcome.stderr
    report = report_of(root)
    assert report["aborted_by"] == "token_fuse" and report["tokens_used"] == 150
    checks = {c["check_id"]: c for c in report["checks"]}
    # The judge whose report tripped the fuse keeps its verdict; that one is a real failure.
    assert checks["a_first"]["status"] == "failed"
    assert checks["a_first"]["details"]["usage"]["total_tokens"] == 150
    assert checks["b_slow"]["error_detail"] == "Stopped: token fuse tripped"
    for name in ("c_never", "d_never"):
        assert checks[name]["status"] == "error"
        assert checks[name]["error_detail"] == "Not run: token fuse tripped"
    assert (report["failed_checks"], report["not_run_checks"]) == (1, 2)
    # Only the judge the fuse stopped errored; the two never started are not run. report.json's
    # errored_checks still counts every `error` status (eval-banana's field).
    assert report["errored_checks"] == 3
    assert report["error_classes"] == [
        {"error_class": "budget", "count": 1, "causes": {"token fuse tripped": 1}}
    ]
    assert checks["c_never"]["details"]["error_class"] == "budget"
    assert "1 error: 1 budget" in outcome.stdout.splitlines()
    assert outcome.stdout.splitlines()[-1].startswith(
        "1 failed, 0 passed, 1 errored, 0 skipped, 2 not run"
    )
    run_dir = next(root.glob("results/*/report.md")).parent
    assert "\n1 error: 1 budget\n" in (run_dir / "report.md").read_text(encoding="utf-8")
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "<dt>Errors</dt><dd>1 error: 1 budget</dd>" in html
    execute_doc = json.loads(next(root.glob("results/*/stages/execute.json")).read_text())
    assert execute_doc["tokens_used"] == 150 and execute_doc["aborted_by"] == "token_fuse"


def test_a_sampled_judge_the_fuse_stopped_between_samples_ran_and_was_stopped(
    project: Callable[..., Path],
) -> None:
    # One sample at a time, 150 tokens each: the second sample trips the fuse, so the third
    # and the next check never start. The sampled judge ran and spent tokens: it was stopped,
    # not "not run".
    root = project(
        {
            "eval_checks/a_sampled.yaml": judge("a_sampled") + "repeats: 3\naggregate: majority\n",
            "eval_checks/b_never.yaml": judge("b_never"),
        },
        config=JUDGE_CONFIG.format(parallel=1, agent="claude", fuse=200),
    )
    env = {**os.environ, "PATH": f"{STANDIN_AGENTS}{os.pathsep}{os.environ['PATH']}"}
    outcome = eb_process(root, "run", env=env)
    assert outcome.returncode == 3, outcome.stderr
    report = report_of(root)
    assert (report["not_run_checks"], report["tokens_used"]) == (1, 300)
    checks = {c["check_id"]: c for c in report["checks"]}
    sampled = checks["a_sampled"]
    details = sampled["details"]
    assert sampled["status"] == "error" and "not_run" not in details
    assert sampled["error_detail"] == "Stopped: token fuse tripped (1 of 3 samples did not finish)"
    assert details["stopped"] is True and details["usage"]["total_tokens"] == 300
    assert [sample["not_run"] for sample in details["samples"]] == [False, False, True]
    assert report["error_classes"] == [
        {"error_class": "budget", "count": 1, "causes": {"token fuse tripped": 1}}
    ]
    assert checks["b_never"]["details"]["not_run"] is True
    lines = outcome.stdout.splitlines()
    assert "- not run: 1 check (b_never) - token fuse tripped" in lines
    assert lines[-1].startswith("0 failed, 0 passed, 1 errored, 0 skipped, 1 not run")


@pytest.mark.usefixtures("standins")
def test_token_fuse_below_budget_counts_and_does_not_trip(
    project: Callable[..., Path], eb: Callable[..., Any]
) -> None:
    root = project(
        {f"eval_checks/j{n}.yaml": judge(f"j{n}") for n in range(3)},
        config=JUDGE_CONFIG.format(parallel=3, agent="claude", fuse=1000),
    )
    outcome = eb("run", "--cwd", str(root), "--json")
    assert outcome.exit_code == 0, outcome.stderr
    report = json.loads(outcome.stdout)
    assert report["tokens_used"] == 450 and report["aborted_by"] is None
    assert report["judge_usage"] == {
        "judges": 3,
        "total_tokens": 450,
        "input_tokens": 360,
        "output_tokens": 90,
        "cost_usd": 0.00405,
    }
    assert report["warnings"] == [] and report["run_passed"] is True


@pytest.mark.usefixtures("standins")
def test_judge_without_usage_is_a_warning_and_never_trips_the_fuse(
    project: Callable[..., Path], eb: Callable[..., Any]
) -> None:
    # pi prints plain text: no usage for the fuse to read.
    root = project(
        {"eval_checks/j.yaml": judge("j")},
        config=JUDGE_CONFIG.format(parallel=1, agent="pi", fuse=1),
    )
    outcome = eb("run", "--cwd", str(root))
    assert outcome.exit_code == 0, outcome.stderr
    assert "reported no token usage; the token fuse could not count it" in outcome.stderr
    report = report_of(root)
    assert report["tokens_used"] is None and report["aborted_by"] is None
    assert report["checks"][0]["details"]["usage"] is None
    (warning,) = report["warnings"]
    assert warning["message"].startswith("Judge check 'j' reported no token usage")
    assert warning["file"] == report["checks"][0]["source_path"]


# --- the cost fuse ------------------------------------------------------------------------------


def test_cost_fuse_counts_reports_and_trips_at_the_budget() -> None:
    stop = StopSignal()
    fuses = RunFuses(stop=stop, token_budget=0, run_timeout_s=0, cost_budget_usd=0.01)
    assert fuses.cost_usd is None
    fuses.report_cost(0.004)
    fuses.report_cost(-1.0)  # a bogus report never lowers the count
    fuses.report_cost(float("nan"))
    assert not stop.is_set() and fuses.cost_usd == pytest.approx(0.004)
    fuses.report_cost(0.006)
    assert stop.is_set() and stop.reason == "cost_fuse" and fuses.tripped == "cost_fuse"


def test_cost_fuse_zero_is_off_and_the_first_fuse_keeps_its_reason() -> None:
    stop = StopSignal()
    fuses = RunFuses(stop=stop, token_budget=10, run_timeout_s=0, cost_budget_usd=0)
    fuses.report_cost(1000.0)
    assert not stop.is_set() and fuses.cost_usd == 1000.0
    fuses.report_tokens(10)
    both = RunFuses(stop=stop, token_budget=0, run_timeout_s=0, cost_budget_usd=0.5)
    both.report_cost(1.0)
    assert stop.reason == "token_fuse"  # the token fuse tripped first


@pytest.mark.usefixtures("standins")
def test_cost_fuse_stops_the_run_like_the_token_fuse(
    project: Callable[..., Path], eb: Callable[..., Any]
) -> None:
    root = project(
        {
            "eval_checks/a_first.yaml": judge("a_first", "score=1"),
            "eval_checks/b_never.yaml": judge("b_never"),
            "eval_checks/c_never.yaml": judge("c_never"),
        },
        config=JUDGE_CONFIG.format(parallel=1, agent="claude", fuse=0),
    )
    outcome = eb("run", "--cwd", str(root), "--cost-fuse-usd", "0.001")
    assert outcome.exit_code == 3, outcome.stderr
    assert "cost_fuse" in outcome.stderr
    report = report_of(root)
    assert report["aborted_by"] == "cost_fuse"
    assert report["judge_usage"]["cost_usd"] == 0.00135
    checks = {c["check_id"]: c for c in report["checks"]}
    assert checks["a_first"]["status"] == "passed"
    for name in ("b_never", "c_never"):
        assert checks[name]["error_detail"] == "Not run: cost fuse tripped"
    md = next(root.glob("results/*/report.md")).read_text(encoding="utf-8")
    assert "Run aborted by `cost_fuse`; 2 checks did not run." in md
    assert "Judge usage: 150 tokens (120 in, 30 out), $0.0014, as reported by 1 judge." in md
    assert "Judge usage: 150 tokens (120 in, 30 out), $0.0014, as reported by 1 judge" in (
        outcome.stdout + outcome.stderr
    )
    score_doc = json.loads(next(root.glob("results/*/stages/score.json")).read_text())
    assert score_doc["aborted_by"] == "cost_fuse" and score_doc["judge_usage"]["judges"] == 1
    execute_doc = json.loads(next(root.glob("results/*/stages/execute.json")).read_text())
    assert execute_doc["cost_usd"] == 0.00135


@pytest.mark.usefixtures("standins")
def test_cost_fuse_from_the_config_and_the_environment(
    project: Callable[..., Path], eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {f"eval_checks/j{n}.yaml": judge(f"j{n}") for n in range(2)}
    config = JUDGE_CONFIG.format(parallel=1, agent="claude", fuse=0)
    root = project(files, config=config + "cost_fuse_usd = 0.001\n")
    assert eb("run", "--cwd", str(root)).exit_code == 3
    assert report_of(root)["aborted_by"] == "cost_fuse"
    # The environment wins over the file; a budget above the spend lets the run finish.
    monkeypatch.setenv("EVAL_BANANA_HARNESS_COST_FUSE_USD", "5")
    for run in (root / "results").iterdir():
        shutil.rmtree(run)
    assert eb("run", "--cwd", str(root)).exit_code == 0
