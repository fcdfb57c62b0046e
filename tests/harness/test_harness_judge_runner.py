"""run_harness_judge end to end with the stand-in agents as real subprocesses."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from eval_banana.core.stem import artifact_stem
from eval_banana.harness.prompt import PROMPT_VERSION, build_prompt
from eval_banana.runners.harness_judge import NO_VERDICT, run_harness_judge
from tests.harness.judge_rig import AGENT_NAMES, Rig, judge_check

STEM = artifact_stem(check_id="judge")
B139_KEYS = ["model", "agent_type", "reasoning_effort", "timeout_seconds", "raw_response_path"]
# openhands has no default model and refuses to start without LLM_MODEL.
NEEDS_MODEL = {"openhands": "openhands-test-model"}


def _harness(agent: str, **extra: Any) -> dict[str, Any]:
    return {"model": NEEDS_MODEL[agent], **extra} if agent in NEEDS_MODEL else dict(extra)


def _prompt_path(rig: Rig, stem: str = STEM) -> Path:
    return rig.run_dir / "checks" / f"{stem}.prompt.txt"


@pytest.mark.parametrize("agent", AGENT_NAMES)
@pytest.mark.parametrize("score", [1, 0])
def test_each_builtin_agent_end_to_end(rig: Rig, agent: str, score: int) -> None:
    reason = f"{agent} judged {score}"
    result = rig.run(
        agent=agent,
        harness=_harness(agent),
        env={"STANDIN_SCORE": str(score), "STANDIN_REASON": reason},
    )
    assert (result.status, result.score, result.reason) == (
        "passed" if score else "failed",
        score,
        reason,
    ), (result.error_detail, result.stderr)
    assert result.exit_code == 0 and result.error_detail is None
    assert list(result.details)[:5] == B139_KEYS
    assert result.details["agent_type"] == agent
    assert result.details["timeout_seconds"] == 20
    assert result.details["prompt_version"] == PROMPT_VERSION
    assert result.details["raw_response_path"] == f"checks/{STEM}.stdout.txt"
    assert (rig.run_dir / "checks" / f"{STEM}.stdout.txt").stat().st_size > 0
    check = judge_check(id="judge", project_root=rig.root)
    expected_prompt = build_prompt(
        description=check.description, instructions=str(check.definition["instructions"])
    )
    assert _prompt_path(rig).read_bytes() == expected_prompt.encode("utf-8")
    (received,) = rig.received()
    assert received["argv"][-1] == expected_prompt  # the prompt is one argv element, last
    assert received["stdin_is_devnull"] is True
    assert received["cwd"] == str(rig.root)
    env = received["env"]
    assert (env["CI"], env["PYTHONUNBUFFERED"]) == ("1", "1")
    assert env["EVAL_BANANA_PROJECT_ROOT"] == str(rig.root)
    assert env["EVAL_BANANA_HARNESS_AGENT"] == agent
    assert result.details["effective_command"][-1] == "{prompt}"


SELECTIONS = {
    # agent: (model, effort) that the template can deliver; the stand-in verifies the channel.
    "claude": ("claude-opus-x", "high"),
    "codex": ("gpt-test", "low"),
    "gemini": ("gemini-test", None),
    "grok": ("grok-test", "medium"),
    "openhands": ("openhands-test", None),
    "opencode": ("anthropic/claude-test", "max"),
    "pi": ("pi-test", "minimal"),
}


@pytest.mark.parametrize("agent", AGENT_NAMES)
def test_model_and_effort_reach_the_agent(rig: Rig, agent: str) -> None:
    model, effort = SELECTIONS[agent]
    harness: dict[str, Any] = {"model": "ignored-by-check-override"}
    if effort:
        harness["reasoning_effort"] = effort
    check = judge_check(id="judge", project_root=rig.root, model=model)
    result = rig.run(
        agent=agent,
        check=check,
        harness=harness,
        env={"STANDIN_EXPECT_MODEL": model, "STANDIN_EXPECT_EFFORT": effort or ""},
    )
    assert result.status == "passed", (result.error_detail, result.stderr)
    assert (result.details["model"], result.details["reasoning_effort"]) == (model, effort)
    if agent == "claude":
        env = rig.received()[0]["env"]
        assert env["ANTHROPIC_MODEL"] == env["ANTHROPIC_DEFAULT_OPUS_MODEL"] == model


def test_template_defaults_reach_the_agent(rig: Rig) -> None:
    result = rig.run(
        agent="codex",
        env={"STANDIN_EXPECT_MODEL": "gpt-5.6-sol", "STANDIN_EXPECT_EFFORT": "high"},
    )
    assert result.status == "passed", result.stderr
    assert (result.details["model"], result.details["reasoning_effort"]) == ("gpt-5.6-sol", "high")


def test_stand_in_rejects_a_wrong_model_channel(rig: Rig) -> None:
    # The stand-in's own check: a model the template did not send fails like a real mismatch.
    result = rig.run(agent="grok", env={"STANDIN_EXPECT_MODEL": "something-else"})
    assert result.status == "error"
    assert result.error_detail == (
        f"Agent exited with code 1: {NO_VERDICT} The agent reported: "
        "grok stand-in: expected model 'something-else', received 'grok-4.5'"
    )
    assert "expected model 'something-else'" in result.stderr


WRONG_FLAGS = [
    # (agent, [agents.<name>] override, harness extra, exit code, stderr or stdout fragment)
    (
        "claude",
        {
            "shared_flags": [
                "-p",
                "--dangerously-skip-permissions",
                "--output-format",
                "stream-json",
            ]
        },
        {},
        1,
        "Error: When using --print, --output-format=stream-json requires --verbose",
    ),
    ("claude", {"shared_flags": ["-p", "--bogus"]}, {}, 1, "error: unknown option '--bogus'"),
    ("codex", {"command": ["codex"]}, {}, 1, "Error: stdin is not a terminal"),
    ("codex", {"shared_flags": ["--full-auto"]}, {}, 2, "unexpected argument '--full-auto'"),
    ("codex", {}, {"reasoning_effort": "extreme"}, 1, "unknown variant `extreme`"),
    ("gemini", {"prompt_flag": ""}, {}, 1, "positional prompt"),
    ("gemini", {}, {"env": {"GEMINI_CLI_TRUST_WORKSPACE": "false"}}, 55, "trusted directory"),
    ("grok", {"prompt_flag": "--prompt"}, {}, 2, "unexpected argument '--prompt'"),
    ("openhands", {}, {}, 1, "Missing required environment variable(s): LLM_MODEL"),
    ("openhands", {"prompt_flag": "--task-file"}, {"model": "m"}, 2, "unrecognized arguments"),
    ("opencode", {"command": ["opencode"]}, {}, 1, "failed to change directory"),
    ("pi", {"command": ["pi", "--no-session"]}, {}, 1, "interactive mode needs a terminal"),
]


@pytest.mark.parametrize(("agent", "table", "harness", "code", "fragment"), WRONG_FLAGS)
def test_a_wrong_flag_makes_the_stand_in_fail(
    rig: Rig, agent: str, table: dict[str, Any], harness: dict[str, Any], code: int, fragment: str
) -> None:
    result = rig.run(agent=agent, agents={agent: table} if table else None, harness=harness)
    assert result.status == "error"
    assert result.exit_code == code
    # eval-banana's text, then the agent's own complaint: the detail names the cause.
    detail = result.error_detail or ""
    assert detail.startswith(f"Agent exited with code {code}: {NO_VERDICT} The agent reported: ")
    assert fragment in detail
    assert fragment in result.stderr + result.stdout
    assert _prompt_path(rig).exists()  # kept when the agent fails


def test_nonzero_exit_with_a_verdict_is_still_an_error(rig: Rig) -> None:
    for agent in ("codex", "claude", "pi"):
        result = rig.run(agent=agent, env={"STANDIN_MODE": "verdict_exit1"})
        assert result.status == "error", agent
        assert result.error_detail == "Harness judge agent exited with code 1"
        assert (result.exit_code, result.reason) == (1, None)


def test_exit_zero_without_a_verdict(rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="eval_banana.runners.harness_judge"):
        result = rig.run(agent="pi", env={"STANDIN_MODE": "no_verdict"})
    assert (result.status, result.exit_code, result.error_detail) == ("error", 0, NO_VERDICT)
    assert f"Harness judge check judge failed: {NO_VERDICT}" in caplog.messages
    assert result.details["verdict_problem"] is not None


@pytest.mark.parametrize(
    ("agent", "mode", "exit_code"),
    [
        ("claude", "no_verdict", 0),  # a decoy verdict sits in an earlier tool result
        ("claude", "error_after_success", 0),
        ("claude", "non_string_result", 0),
        ("claude", "error_result", 1),
        ("claude", "api_error", 1),
        ("gemini", "error_result", 244),  # the real CLI after an HTTP 500 from the model
        ("gemini", "invalid_stream", 0),  # status error with exit 0 is still no verdict
        ("gemini", "turn_limit", 53),
        ("gemini", "auth", 41),
        ("grok", "error_result", 1),
        ("grok", "max_turns", 0),
        ("codex", "error_result", 1),
        ("openhands", "no_verdict", 0),
        ("opencode", "error_result", 1),
        ("pi", "error_result", 1),
    ],
)
def test_failure_variants_never_pass(rig: Rig, agent: str, mode: str, exit_code: int) -> None:
    result = rig.run(agent=agent, harness=_harness(agent), env={"STANDIN_MODE": mode})
    assert result.status == "error"
    assert result.score == 0
    assert result.exit_code == exit_code
    prefix = "" if exit_code == 0 else f"Agent exited with code {exit_code}: "
    assert (result.error_detail or "").startswith(prefix + NO_VERDICT)


def test_openhands_agent_message_ending(rig: Rig) -> None:
    result = rig.run(
        agent="openhands", harness=_harness("openhands"), env={"STANDIN_MODE": "agent_message"}
    )
    assert result.status == "passed", result.details


def _is_gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")  # a zombie waiting for PID 1 no longer runs


def test_timeout_kills_the_whole_process_group(rig: Rig, tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    result = rig.run(
        agent="claude",
        harness={"timeout_seconds": 1},
        env={"STANDIN_MODE": "sleep", "STANDIN_CHILD_PID": str(pid_file)},
    )
    assert time.monotonic() - started < 15
    assert result.status == "error"
    assert result.error_detail == "Harness judge subprocess timed out after 1 seconds"
    assert result.exit_code is None and result.reason is None
    assert result.stdout == "partial output before the hang\n"  # partial output is kept
    assert result.details["raw_response_path"] == f"checks/{STEM}.stdout.txt"
    assert _prompt_path(rig).exists()
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while not _is_gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _is_gone(child), "the agent's child process outlived the timeout"


def test_cancel_stops_a_running_judge(rig: Rig, tmp_path: Path) -> None:
    cancel = threading.Event()
    ctx = rig.context(
        agent="pi",
        cancel=cancel,
        env={"STANDIN_MODE": "sleep", "STANDIN_CHILD_PID": str(tmp_path / "pid")},
    )
    box: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: box.update(result=run_harness_judge(ctx)))
    worker.start()
    deadline = time.monotonic() + 10
    while not (tmp_path / "pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    cancel.set()
    worker.join(timeout=15)
    result = box["result"]
    assert result.status == "error"
    assert result.error_detail.startswith("Stopped: ")


def test_cannot_inject_fails_before_anything_is_written(rig: Rig) -> None:
    result = rig.run(agent="gemini", harness={"model": "g", "reasoning_effort": "high"})
    assert result.status == "error"
    assert result.error_detail == (
        "Harness judge agent template 'gemini' cannot inject the selected reasoning effort "
        "'high' (configure reasoning_effort_flag with an {effort} placeholder)"
    )
    assert result.exit_code is None
    assert (result.details["model"], result.details["reasoning_effort"]) == (None, None)
    assert list(result.details)[:5] == B139_KEYS
    assert (result.stdout, result.stderr) == ("", "")
    assert not _prompt_path(rig).exists()
    assert rig.received() == []


def test_missing_executable_is_a_launch_error(rig: Rig) -> None:
    result = rig.run(agent="mine", agents={"mine": {"command": ["no-such-agent-xyz"]}})
    assert result.status == "error"
    assert result.error_detail == (
        "FileNotFoundError: [Errno 2] No such file or directory: 'no-such-agent-xyz'"
    )
    assert result.exit_code is None
    assert result.details["raw_response_path"] is None
    assert result.details["not_started"] is True
    assert _prompt_path(rig).exists()


def test_no_agent_defensive_path(rig: Rig) -> None:
    result = rig.run(agent=None, harness={"timeout_seconds": 33})
    assert result.status == "error"
    assert result.error_detail == "Harness judge requires config.harness_agent to be set"
    assert result.details == {
        "timeout_seconds": 33,
        "error_class": "infrastructure",
        "error_cause": "agent setup",
        "error_transient": False,  # it would fail the same way again: never retried
        "not_started": True,  # nothing ran: the run history counts it as an early error
    }


def test_a_prompt_holding_a_nul_character_is_a_setup_error_not_a_python_one(rig: Rig) -> None:
    # A case's field placed in the instructions can hold U+0000; exec refused it with
    # "ValueError: embedded null byte".
    check = judge_check(id="judge", project_root=rig.root, instructions="Judge a\0b.")
    result = rig.run(agent="pi", check=check)
    assert result.status == "error"
    assert result.error_detail == (
        "Harness judge prompt holds a NUL character (U+0000), which no command line can carry: "
        "remove it from the instructions or the case's field they place"
    )
    assert rig.received() == []


def test_prompt_too_large_for_one_argument(rig: Rig) -> None:
    check = judge_check(id="judge", project_root=rig.root, instructions="x" * 200_000)
    result = rig.run(agent="pi", check=check)
    assert result.status == "error"
    assert result.error_detail is not None
    assert result.error_detail.startswith("Harness judge prompt is ")
    assert result.error_detail.endswith(
        " bytes, above the per-argument limit of the operating system"
    )
    assert _prompt_path(rig).exists()
    assert rig.received() == []


def test_tokens_reported_for_the_fuse(rig: Rig) -> None:
    claude = rig.run(agent="claude")
    codex = rig.run(agent="codex")
    grok = rig.run(agent="grok")
    # The stand-ins replay the real CLIs' output for one model answer of 120 + 30 tokens.
    assert rig.tokens == [150, 150]
    assert claude.details["usage"] == {
        "dialect": "claude",
        "input_tokens": 120,
        "output_tokens": 30,
        "total_tokens": 150,
        "cost_usd": 0.00135,
    }
    assert codex.details["usage"] == {"dialect": "codex", "total_tokens": 150}
    assert grok.details["usage"] is None


def test_cost_reported_for_the_fuse(rig: Rig) -> None:
    costs: list[float] = []
    context = rig.context(agent="claude")
    context.report_cost = costs.append
    run_harness_judge(context)
    assert costs == [0.00135]


def test_an_effort_the_agent_rejects_is_recorded(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    # pi warns about a level it does not know and goes on with its own default.
    with caplog.at_level(logging.WARNING, logger="eval_banana.runners.harness_judge"):
        result = rig.run(agent="pi", harness={"reasoning_effort": "huge"})
    assert result.status == "passed"
    assert result.details["reasoning_effort"] == "huge"
    effort = result.details["effort"]
    assert effort["requested"] == "huge" and effort["given"] == ["--thinking", "huge"]
    assert (
        effort["status"] == "rejected" and 'Invalid thinking level "huge"' in effort["agent_said"]
    )
    assert any("did not use reasoning effort 'huge'" in message for message in caplog.messages)


def test_codex_confirms_its_effort_and_others_do_not(rig: Rig) -> None:
    codex = rig.run(agent="codex")
    assert codex.details["effort"] == {
        "requested": "high",
        "given": ["-c", "model_reasoning_effort=high"],
        "status": "confirmed",
        "agent_said": "reasoning effort: high",
    }
    claude = rig.run(agent="claude", harness={"reasoning_effort": "low"})
    assert claude.details["effort"]["status"] == "unconfirmed"
    assert claude.details["effort"]["agent_said"] is None
    assert rig.run(agent="gemini").details["effort"] is None  # none requested


def test_large_output_and_bounded_streams(rig: Rig) -> None:
    result = rig.run(agent="claude", env={"STANDIN_MODE": "stderr_big", "STANDIN_BYTES": "30000"})
    assert result.status == "passed"
    assert result.stderr.startswith(
        "[eval-banana: stderr truncated to the last 2000 characters; "
        f"full output at checks/{STEM}.stderr.txt]\n"
    )
    assert (rig.run_dir / "checks" / f"{STEM}.stderr.txt").stat().st_size > 30000
    big = rig.run(agent="grok", env={"STANDIN_MODE": "big", "STANDIN_BYTES": str(3 << 20)})
    assert big.status == "passed"
    assert big.stdout.startswith("[eval-banana: stdout truncated to the last 2000 characters")
    assert (rig.run_dir / "checks" / f"{STEM}.stdout.txt").stat().st_size > 3 << 20


def test_provider_env_placeholders_and_harness_env_reach_the_agent(rig: Rig) -> None:
    result = rig.run(
        agent="mine",
        agents={
            "mine": {
                "command": ["pi", "--print"],
                "model_flag": "",
                "provider_env": {"PI_KEY": "k-{env:SOURCE_SECRET}", "CI": "provider"},
            }
        },
        harness={"env": {"EXTRA": "{env:SOURCE_SECRET}", "CI": "harness"}},
        env={"SOURCE_SECRET": "s3cr3t"},
    )
    assert result.status == "passed", result.stderr
    env = rig.received()[0]["env"]
    assert (env["PI_KEY"], env["EXTRA"], env["CI"]) == (
        "k-s3cr3t",
        "{env:SOURCE_SECRET}",
        "harness",
    )
    assert env["EVAL_BANANA_HARNESS_AGENT"] == "mine"
    # No value from the environment is written into the result.
    assert "s3cr3t" not in json.dumps(result.model_dump())


def test_prompt_file_is_written_before_launch(rig: Rig) -> None:
    """The agent can read its own prompt file: it exists before the process starts."""
    result = rig.run(
        agent="sh",
        agents={
            "sh": {
                "command": [
                    "sh",
                    "-c",
                    f'test -f "$EVAL_BANANA_PROJECT_ROOT/../run/checks/{STEM}.prompt.txt" '
                    "&& echo '{\"score\": 1}'",
                ],
                "model_flag": "",
            }
        },
    )
    assert result.status == "passed", (result.stdout, result.stderr)
    assert os.path.getsize(_prompt_path(rig)) > 0


def test_claude_as_root_needs_the_templates_sandbox_variable(rig: Rig) -> None:
    # Claude Code refuses --dangerously-skip-permissions as root unless IS_SANDBOX=1 says it
    # runs in a sandbox; the built-in template sets it, so a root CI job just works.
    assert rig.run(agent="claude").status == "passed"
    received = rig.received()[-1]
    assert received["env"]["IS_SANDBOX"] == "1"
    if os.geteuid() != 0:
        return  # the refusal below is the root-only behaviour
    without = rig.run(agent="claude", agents={"claude": {"fixed_env": {}}})
    assert without.status == "error"
    assert "cannot be used with root/sudo privileges" in (without.error_detail or "")


def test_openhands_rate_limited_after_a_plan_is_an_infrastructure_error(
    rig: Rig, tmp_path: Path
) -> None:
    # OpenHands exits 0 after a failed model call: a verdict in the plan before it must not pass.
    plan = {
        "kind": "MessageEvent",
        "source": "agent",
        "llm_message": {"content": [{"type": "text", "text": 'Plan: {"score": 1, "reason": "x"}'}]},
    }
    error = {"kind": "ConversationErrorEvent", "code": "LLMRateLimitError", "detail": "HTTP 429"}
    script = tmp_path / "agent.py"
    script.write_text(
        f"print({json.dumps(json.dumps(plan))})\nprint({json.dumps(json.dumps(error))})\n"
    )
    agent = {
        "command": [sys.executable, str(script)],
        "model_flag": "",
        "output_dialect": "openhands",
    }
    result = rig.run(agent="mine", agents={"mine": agent})
    assert result.status == "error"
    assert result.details["error_class"] == "infrastructure"
    assert result.details["verdict_problem"] == (
        "the conversation ended in an error event (ConversationErrorEvent) after the agent's answer"
    )
