"""`[harness] retries` end to end: a stand-in agent that fails before it answers.

The agent (a real process, a custom `[agents.flaky]` template) reads its script from the judge's
instructions, a line `plan=<name>:<step>,<step>,...`, and counts its calls in
`agent-state/calls-<name>.txt` beside the project (an agent that wrote into the project would
be caught by judge isolation): call n performs step n (the last step repeats). Steps:
`exit` (exit 3 with a message on stderr), `noverdict` (exit 0, prose only), `hang` (outlive
the judge timeout), `pass` / `fail` (a verdict), `e429` / `e401` (a failed result event with
that `api_error_status`, as Claude Code prints when the model server refuses, then exit 1),
`failexit` / `failhang` (the verdict 0, then exit 2 / outlive the timeout), `badexit` (a draft
verdict 1, then a malformed final `{"score": false}`, then exit 2), each optionally `+tokens`
(a result event reporting 30 tokens and $0.01, for the fuses).
"""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.core.stem import artifact_stem
from tests.conftest import PYTHON, EbResult

Project = Callable[..., Path]
Eb = Callable[..., EbResult]

AGENT = textwrap.dedent(
    """\
    import json, sys, time
    from pathlib import Path
    prompt = sys.argv[-1]
    line = next(l for l in prompt.splitlines() if l.strip().startswith("plan="))
    name, _, steps = line.strip()[len("plan="):].partition(":")
    state = Path(sys.argv[0]).resolve().parent.parent / "agent-state"
    state.mkdir(exist_ok=True)
    counter = state / f"calls-{name}.txt"
    call = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(call))
    step = steps.split(",")[min(call, len(steps.split(","))) - 1]
    step, _, extra = step.partition("+")
    print(f"attempt {call}: {step}")
    print(f"stderr of attempt {call}", file=sys.stderr)
    if extra == "tokens":
        print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                          "result": "thinking", "usage": {"input_tokens": 20, "output_tokens": 10},
                          "total_cost_usd": 0.01}))
    if step in ("failexit", "failhang"):
        print(json.dumps({"score": 0, "reason": f"verdict on attempt {call}"}), flush=True)
    if step == "badexit":
        print('Draft: {"score": 1, "reason": "at first glance"} Final: {"score": false}')
    if step in ("failexit", "badexit"):
        sys.exit(2)
    if step == "failhang":
        time.sleep(30)
    if step == "exit":
        sys.exit(3)
    if step in ("e429", "e401"):
        print(json.dumps({"type": "result", "subtype": "success", "is_error": True,
                          "api_error_status": int(step[1:]), "result": "API Error"}))
        sys.exit(1)
    if step == "hang":
        time.sleep(30)
    if step in ("pass", "fail"):
        score = 1 if step == "pass" else 0
        print(json.dumps({"score": score, "reason": f"verdict on attempt {call}"}))
    """
)


def config(*, retries: int | None, core: str = "", judge_timeout: int = 1) -> str:
    lines = [
        "[core]",
        'output_dir = "results"',
        "max_parallel_checks = 1",
        core,
        "[harness]",
        'agent = "flaky"',
        f"timeout_seconds = {judge_timeout}",
    ]
    if retries is not None:
        lines.append(f"retries = {retries}")
    lines += ["", "[agents.flaky]", f'command = ["{PYTHON}", "agent.py"]', 'model_flag = ""']
    return "\n".join(lines) + "\n"


def judge(check_id: str, plan: str) -> str:
    return textwrap.dedent(
        f"""\
        schema_version: 1
        id: {check_id}
        type: harness_judge
        description: Judge {check_id}.
        instructions: |
          Judge it.
          plan={check_id}:{plan}
        """
    )


def make(project: Project, checks: dict[str, str], *, retries: int | None, **options: Any) -> Path:
    files = {f"eval_checks/{name}.yaml": judge(name, plan) for name, plan in checks.items()}
    files["agent.py"] = AGENT
    return project(files, config=config(retries=retries, **options))


def calls(root: Path, check_id: str) -> int:
    path = root.parent / "agent-state" / f"calls-{check_id}.txt"
    return int(path.read_text()) if path.exists() else 0


def run_dir_of(root: Path) -> Path:
    (run_dir,) = (root / "results").iterdir()
    return run_dir


def checks_of(root: Path) -> dict[str, dict[str, Any]]:
    report = json.loads((run_dir_of(root) / "report.json").read_text())
    return {check["check_id"]: check for check in report["checks"]}


def test_an_agent_error_is_retried_and_every_attempt_keeps_its_evidence(
    project: Project, eb: Eb
) -> None:
    root = make(project, {"j": "exit,pass"}, retries=2)
    result = eb("run", "--cwd", str(root), "--junit-xml", "junit.xml")
    assert result.exit_code == 0, result.stderr + result.stdout
    assert calls(root, "j") == 2  # one retry, then the verdict stands

    check = checks_of(root)["j"]
    assert check["status"] == "passed" and check["reason"] == "verdict on attempt 2"
    stem = artifact_stem(check_id="j")
    first, second = check["details"]["attempts"]
    assert first["attempt"] == 1 and first["status"] == "error"
    assert first["agent_failure"] == "exit_code" and first["exit_code"] == 3
    assert first["error_detail"].startswith("Agent exited with code 3")
    assert first["evidence"] == {
        "stdout": f"checks/{stem}.attempt1.stdout.txt",
        "stderr": f"checks/{stem}.attempt1.stderr.txt",
        "prompt": f"checks/{stem}.attempt1.prompt.txt",
        "transcript": f"checks/{stem}.attempt1.transcript.jsonl",
        "result": f"checks/{stem}.attempt1.json",
    }
    assert second["attempt"] == 2 and second["status"] == "passed"
    assert second["evidence"] == {
        "stdout": f"checks/{stem}.stdout.txt",
        "stderr": f"checks/{stem}.stderr.txt",
        "prompt": f"checks/{stem}.prompt.txt",
        "transcript": f"checks/{stem}.transcript.jsonl",
        "result": f"checks/{stem}.json",
    }
    assert all(isinstance(item["duration_ms"], int) for item in (first, second))
    # The canonical files hold the final attempt; the first one's files hold the first.
    run_dir = run_dir_of(root)
    assert (run_dir / first["evidence"]["stdout"]).read_text() == "attempt 1: exit\n"
    assert (run_dir / first["evidence"]["stderr"]).read_text() == "stderr of attempt 1\n"
    assert "plan=j:exit,pass" in (run_dir / first["evidence"]["prompt"]).read_text()
    assert (run_dir / second["evidence"]["stdout"]).read_text().startswith("attempt 2: pass\n")
    kept = json.loads((run_dir / first["evidence"]["result"]).read_text())
    assert (
        kept["status"] == "error"
        and kept["details"]["raw_response_path"] == (first["evidence"]["stdout"])
    )
    canonical = json.loads((run_dir / "checks" / f"{stem}.json").read_text())
    assert canonical["status"] == "passed" and len(canonical["details"]["attempts"]) == 2
    assert canonical["details"]["raw_response_path"] == f"checks/{stem}.stdout.txt"

    # A pass that needed a retry is flagged in every report.
    assert "- j: passed (after 2 attempts) - verdict on attempt 2" in result.stdout
    markdown = (run_dir / "report.md").read_text()
    assert "| `j` | `harness_judge` | `passed` (after 2 attempts) |" in markdown
    assert "passed (after 2 attempts)" in (run_dir / "report.html").read_text()
    case = ET.parse(root / "junit.xml").getroot().find("testsuite/testcase")
    assert case is not None
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["attempts"] == "2" and properties["passed_on_retry"] == "true"


def test_a_retried_verdict_reused_with_transcripts_off_names_no_transcript(
    project: Project, eb: Eb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make(project, {"j": "exit,pass"}, retries=2)
    cache = ("--cache", "on", "--cache-dir", str(tmp_path / "cache"))
    assert eb("run", "--cwd", str(root), *cache).exit_code == 0
    first_dir = run_dir_of(root)
    monkeypatch.setenv("EVAL_BANANA_HARNESS_TRANSCRIPTS", "false")
    result = eb("run", "--cwd", str(root), *cache)
    assert result.exit_code == 0, result.stderr + result.stdout
    assert calls(root, "j") == 2  # the second run judged nothing
    (run_dir,) = [folder for folder in (root / "results").iterdir() if folder != first_dir]
    (check,) = json.loads((run_dir / "report.json").read_text())["checks"]
    assert check["details"]["cache"]["hit"] is True
    assert check["details"]["transcript_path"] is None
    first, second = check["details"]["attempts"]
    assert "transcript" not in first["evidence"] and "transcript" not in second["evidence"]
    assert not list((run_dir / "checks").glob("*.transcript.jsonl"))
    kept = json.loads((run_dir / first["evidence"]["result"]).read_text())
    assert kept["details"]["transcript_path"] is None
    assert (run_dir / first["evidence"]["stdout"]).read_text() == "attempt 1: exit\n"
    # The entry keeps its transcripts for a run that wants them.
    monkeypatch.delenv("EVAL_BANANA_HARNESS_TRANSCRIPTS")
    assert eb("run", "--cwd", str(root), *cache).exit_code == 0
    (third_dir,) = [
        folder for folder in (root / "results").iterdir() if folder not in (first_dir, run_dir)
    ]
    stem = artifact_stem(check_id="j")
    assert (third_dir / "checks" / f"{stem}.attempt1.transcript.jsonl").is_file()
    assert (third_dir / "checks" / f"{stem}.transcript.jsonl").is_file()


def test_a_failing_verdict_is_never_retried(project: Project, eb: Eb) -> None:
    root = make(project, {"j": "fail,pass"}, retries=3)
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 1
    assert calls(root, "j") == 1
    check = checks_of(root)["j"]
    assert check["status"] == "failed" and len(check["details"]["attempts"]) == 1
    assert "after" not in result.stdout  # nothing to flag: one attempt
    assert not list((run_dir_of(root) / "checks").glob("*.attempt*"))


@pytest.mark.parametrize("step", ["failexit", "failhang", "badexit"])
def test_a_verdict_printed_before_the_agent_failed_is_never_retried(
    project: Project, eb: Eb, step: str
) -> None:
    # The judge said 0 (or gave a malformed verdict), then exited 2 or hung: the non-zero exit
    # keeps it an error, but running it again would ask until it says 1.
    root = make(project, {"j": f"{step},pass"}, retries=2)
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 1, result.stdout
    assert calls(root, "j") == 1
    check = checks_of(root)["j"]
    assert check["status"] == "error" and len(check["details"]["attempts"]) == 1
    details = check["details"]
    assert details["error_class"] == "infrastructure"
    assert details["error_transient"] is False
    assert details["error_cause"].endswith("after answering")
    if step == "badexit":
        assert "printed_verdict" not in details
        assert "last verdict is malformed" in details["verdict_problem"]
    else:
        assert details["printed_verdict"] == {"score": 0, "reason": "verdict on attempt 1"}
    assert not list((run_dir_of(root) / "checks").glob("*.attempt*"))


def test_a_passing_verdict_is_never_retried(project: Project, eb: Eb) -> None:
    root = make(project, {"j": "pass,exit"}, retries=3)
    assert eb("run", "--cwd", str(root)).exit_code == 0
    assert calls(root, "j") == 1


@pytest.mark.parametrize("retries", [None, 0])
def test_without_retries_an_agent_error_stays_an_error_as_today(
    project: Project, eb: Eb, retries: int | None
) -> None:
    root = make(project, {"j": "exit,pass"}, retries=retries)
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 1
    assert calls(root, "j") == 1
    check = checks_of(root)["j"]
    assert check["status"] == "error" and "attempts" not in check["details"]
    assert check["details"]["agent_failure"] == "exit_code"
    assert not list((run_dir_of(root) / "checks").glob("*.attempt*"))


def test_exit_and_timeout_are_retried_until_retries_run_out(project: Project, eb: Eb) -> None:
    root = make(project, {"j": "exit,hang,exit,pass"}, retries=2)
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 1
    assert calls(root, "j") == 3  # the first run and two retries; the pass is never reached
    check = checks_of(root)["j"]
    assert check["status"] == "error" and check["details"]["agent_failure"] == "exit_code"
    assert check["details"]["error_class"] == "infrastructure"
    attempts = check["details"]["attempts"]
    assert [a["agent_failure"] for a in attempts] == ["exit_code", "timeout", "exit_code"]
    assert {a["error_class"] for a in attempts} == {"infrastructure"}
    assert "timed out after 1 seconds" in attempts[1]["error_detail"]
    assert "- j: error (after 3 attempts)" in result.stdout
    # The check's duration covers every attempt (the hang alone took the 1 s timeout).
    assert check["duration_ms"] >= 1000 > attempts[0]["duration_ms"]
    stem = artifact_stem(check_id="j")
    for n in (1, 2):
        assert (run_dir_of(root) / "checks" / f"{stem}.attempt{n}.json").is_file()
    assert not (run_dir_of(root) / "checks" / f"{stem}.attempt3.json").exists()


def test_a_verdict_error_is_not_retried(project: Project, eb: Eb) -> None:
    # The agent answered (exit 0) without a verdict: asking again would most likely get the
    # same answer, so the retries are not spent on it.
    root = make(project, {"j": "noverdict,pass"}, retries=3)
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 1, result.stderr
    assert calls(root, "j") == 1
    check = checks_of(root)["j"]
    assert check["status"] == "error" and check["details"]["agent_failure"] == "no_verdict"
    assert check["details"]["error_class"] == "verdict"
    assert len(check["details"]["attempts"]) == 1
    assert "1 error: 1 verdict" in result.stdout


def test_retries_from_the_flag_and_the_environment(
    project: Project, eb: Eb, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make(project, {"j": "exit,exit,pass"}, retries=None)
    assert eb("run", "--cwd", str(root), "--retries", "2").exit_code == 0
    assert calls(root, "j") == 3
    (root.parent / "agent-state" / "calls-j.txt").unlink()
    monkeypatch.setenv("EVAL_BANANA_HARNESS_RETRIES", "1")
    assert eb("run", "--cwd", str(root), "--output-dir", "results2").exit_code == 1
    assert calls(root, "j") == 2


def test_an_agent_that_cannot_be_started_is_not_retried(project: Project, eb: Eb) -> None:
    # The agent file is there (the guard accepts it) but cannot be executed: a setup problem
    # that a retry would only repeat.
    root = make(project, {"j": "pass"}, retries=3)
    broken = root / "broken-agent"
    broken.write_text("#!/no/such/interpreter\n")
    broken.chmod(0o755)
    config_file = root / ".eval-banana" / "config.toml"
    config_file.write_text(
        config_file.read_text().replace(f'["{PYTHON}", "agent.py"]', f'["{broken}"]')
    )
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 1, result.stderr
    check = checks_of(root)["j"]
    assert check["status"] == "error" and check["details"]["agent_failure"] is None
    assert "No such file or directory" in check["error_detail"]
    assert len(check["details"]["attempts"]) == 1
    assert not list((run_dir_of(root) / "checks").glob("*.attempt*"))


def test_retries_count_against_the_token_fuse_and_a_stop_is_never_retried(
    project: Project, eb: Eb
) -> None:
    # Each attempt reports 30 tokens; the budget is 50: the second attempt trips the fuse.
    root = make(project, {"j": "exit+tokens,exit+tokens,pass+tokens"}, retries=5)
    result = eb("run", "--cwd", str(root), "--token-fuse", "50")
    assert result.exit_code == 3, result.stderr  # aborted by the fuse
    assert calls(root, "j") == 2  # no third attempt once the run was stopping
    report = json.loads((run_dir_of(root) / "report.json").read_text())
    assert report["aborted_by"] == "token_fuse" and report["tokens_used"] == 60
    attempts = report["checks"][0]["details"]["attempts"]
    assert [a["usage"]["total_tokens"] for a in attempts] == [30, 30]


def test_every_attempt_is_charged_in_the_usage_the_reports_and_the_history_show(
    project: Project, eb: Eb
) -> None:
    # Three attempts of 30 tokens (20 in, 10 out) and $0.01 each: all three were paid for.
    root = make(project, {"j": "exit+tokens"}, retries=2)
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 1, result.stderr + result.stdout
    assert calls(root, "j") == 3
    line = "Judge usage: 90 tokens (60 in, 30 out), $0.0300, as reported by 1 judge"
    assert line in result.stdout
    run_dir = run_dir_of(root)
    assert line in (run_dir / "report.md").read_text()
    report = json.loads((run_dir / "report.json").read_text())
    assert report["tokens_used"] == 90
    assert report["judge_usage"] == {
        "judges": 1,
        "total_tokens": 90,
        "input_tokens": 60,
        "output_tokens": 30,
        "cost_usd": 0.03,
    }
    details = report["checks"][0]["details"]
    assert details["usage"] == {
        "dialect": "text",
        "input_tokens": 60,
        "output_tokens": 30,
        "total_tokens": 90,
        "cost_usd": 0.03,
    }
    assert [a["usage"]["total_tokens"] for a in details["attempts"]] == [30, 30, 30]
    history = json.loads(eb("history", "--cwd", str(root), "--format", "json").stdout)
    assert history["runs"][0]["cost_usd"] == 0.03
    assert history["checks"][0]["cost_usd"] == 0.03


def test_the_cost_fuse_and_the_reported_cost_count_the_same_attempts(
    project: Project, eb: Eb
) -> None:
    # $0.01 an attempt against a $0.02 fuse: the second attempt trips it, and the run says
    # it spent what tripped it, not the last attempt's cent.
    root = make(project, {"j": "exit+tokens"}, retries=5)
    result = eb("run", "--cwd", str(root), "--cost-fuse-usd", "0.02")
    assert result.exit_code == 3, result.stderr + result.stdout
    assert calls(root, "j") == 2
    report = json.loads((run_dir_of(root) / "report.json").read_text())
    assert report["aborted_by"] == "cost_fuse" and report["tokens_used"] == 60
    assert report["judge_usage"]["cost_usd"] == 0.02
    assert report["judge_usage"]["total_tokens"] == 60
    assert "Judge usage: 60 tokens (40 in, 20 out), $0.0200" in result.stdout


def test_the_samples_of_a_retried_judge_are_charged_for_every_attempt(
    project: Project, eb: Eb
) -> None:
    # Two samples of two attempts each: four agent runs of 30 tokens and $0.01.
    root = make(project, {"j": "exit+tokens"}, retries=1)
    result = eb("run", "--cwd", str(root), "--repeats", "2")
    assert result.exit_code == 1, result.stderr + result.stdout
    assert calls(root, "j") == 4
    report = json.loads((run_dir_of(root) / "report.json").read_text())
    assert report["tokens_used"] == 120
    assert report["judge_usage"]["total_tokens"] == 120
    assert report["judge_usage"]["cost_usd"] == 0.04
    details = report["checks"][0]["details"]
    assert details["usage"]["total_tokens"] == 120
    assert [sample["usage"]["total_tokens"] for sample in details["samples"]] == [60, 60]


def test_a_run_timeout_stop_is_not_retried(project: Project, eb: Eb) -> None:
    # The judge's own timeout is longer than the run's: the run timeout stops it first.
    root = make(
        project, {"j": "hang,pass"}, retries=3, core="run_timeout_seconds = 1", judge_timeout=20
    )
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 3, result.stderr
    assert calls(root, "j") == 1
    check = checks_of(root)["j"]
    assert check["error_detail"] == "Stopped: run timeout reached"
    assert len(check["details"]["attempts"]) == 1
    # A fuse ended it: the run's budget, not the provider or the judge.
    assert check["details"]["error_class"] == "budget"
    assert check["details"]["error_cause"] == "run timeout reached"
    assert "1 error: 1 budget" in result.stdout


def test_an_error_event_of_a_rate_limit_is_retried(project: Project, eb: Eb) -> None:
    root = make(project, {"j": "e429,pass"}, retries=2)
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 0, result.stderr + result.stdout
    assert calls(root, "j") == 2
    first, _ = checks_of(root)["j"]["details"]["attempts"]
    assert first["error_class"] == "infrastructure"


def test_refused_credentials_are_not_retried(project: Project, eb: Eb) -> None:
    root = make(project, {"j": "e401,pass"}, retries=2)
    assert eb("run", "--cwd", str(root)).exit_code == 1
    assert calls(root, "j") == 1
    details = checks_of(root)["j"]["details"]
    assert details["error_class"] == "infrastructure"
    assert details["error_cause"] == "authentication (HTTP 401)"
    assert details["error_transient"] is False and len(details["attempts"]) == 1


def _missing_cli_config(*, command: str) -> str:
    return config(retries=2).replace(f'command = ["{PYTHON}", "agent.py"]', f"command = {command}")


def test_a_missing_agent_cli_is_not_retried(project: Project, eb: Eb) -> None:
    # A wrapper (as `npx` or a shell line would be) whose real CLI is missing: exit 127. It logs
    # each start outside the project, so the test counts the attempts eb made.
    starts = Path(str(project({}, config=None))).parent / "starts.log"
    wrapper = json.dumps(["sh", "-c", f"echo start >> {starts}; exec no-such-agent-cli-4711"])
    root = project(
        {"eval_checks/j.yaml": judge("j", "pass")}, config=_missing_cli_config(command=wrapper)
    )
    assert eb("run", "--cwd", str(root)).exit_code == 1
    assert starts.read_text().splitlines() == ["start"]
    details = checks_of(root)["j"]["details"]
    assert details["error_class"] == "infrastructure" and details["agent_failure"] == "exit_code"
    assert details["error_cause"] == "agent CLI not found (exit 127)"
    assert details["error_transient"] is False and len(details["attempts"]) == 1
