"""Structured verdicts and error classes against the real CLIs and the stand-in model server.

- The structured-output flag of each CLI that has one (claude `--json-schema`, codex
  `--output-schema`): the CLI accepts it, the model server sees the verdict schema in the
  request, and a schema-conforming answer reads as the verdict.
- Each error class: the model server answering 429, 500 and 401 (infrastructure), an answer
  without a verdict (verdict), the agent killed by a signal and its binary missing
  (infrastructure); with `--retries 1` only the infrastructure errors start the agent again.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from eval_banana.harness.structured import VERDICT_SCHEMA
from tests.agents_real.runner import Project, Runtime, User, eb_run, project_for
from tests.agents_real.setups import SETUPS, Setup
from tests.model_server import NO_VERDICT_TEXT, PASS_TEXT, ModelServer

STRUCTURED_AGENTS = ("claude", "codex")
# Every agent for the model server's errors; the kill and the missing binary for two of them.
ERROR_AGENTS = tuple(sorted(SETUPS))
PROCESS_AGENTS = ("claude", "codex")
TIMEOUT_S = 240


def _project(
    *, base: Path, setup: Setup, server: ModelServer, cases: dict[str, str], extra: str = ""
) -> Project:
    return project_for(
        base=base,
        setup=setup,
        server_url=server.url,
        cases=cases,
        model=setup.model,
        timeout_seconds=TIMEOUT_S,
        extra_config=extra,
    )


def _run(project: Project, user: User, runtime: Runtime, *args: str) -> Any:
    done = eb_run(project=project, user=user, runtime=runtime, args=args)
    assert done.returncode in (0, 1, 3), f"eb run failed to run:\n{done.stdout}\n{done.stderr}"
    return done


def _sent_schema(*, agent: str, body: Any) -> Any:
    """The schema the CLI put in its request: claude's StructuredOutput tool, codex's format."""
    if not isinstance(body, dict):
        return None
    if agent == "claude":
        for tool in body.get("tools") or []:
            if isinstance(tool, dict) and tool.get("name") == "StructuredOutput":
                return tool.get("input_schema")
        return None
    text = body.get("text")
    form = text.get("format") if isinstance(text, dict) else None
    if isinstance(form, dict) and form.get("type") == "json_schema":
        return form.get("schema")
    return None


@pytest.mark.parametrize("agent", STRUCTURED_AGENTS)
def test_structured_output_flag_reaches_the_model_and_its_answer_is_the_verdict(
    agent: str,
    model_server: ModelServer,
    runtimes: dict[str, tuple[User, Runtime]],
    scratch: Path,
) -> None:
    setup = SETUPS[agent]
    user, runtime = runtimes["root"]
    # A model held to the schema: claude's answers through the StructuredOutput tool it was
    # offered; codex's final message is the object itself.
    tool = "StructuredOutput" if agent == "claude" else None
    model_server.script_when("case-structured", text=PASS_TEXT, tool_answer=tool)
    project = _project(
        base=scratch, setup=setup, server=model_server, cases={"structured": "case-structured"}
    )
    done = _run(project, user, runtime)
    check = project.checks()["structured"]
    context = json.dumps(check, indent=1)[:4000] + done.stderr[-2000:]
    assert check["status"] == "passed", context
    assert check["reason"] == json.loads(PASS_TEXT)["reason"]
    assert check["details"]["structured_output"] == {"requested": True, "honoured": True}, context
    requests = model_server.model_requests(marker="case-structured")
    sent = [_sent_schema(agent=agent, body=request.body) for request in requests]
    assert VERDICT_SCHEMA in sent, sent


@pytest.mark.parametrize("agent", STRUCTURED_AGENTS)
def test_structured_output_ignored_by_the_model_is_still_read(
    agent: str,
    model_server: ModelServer,
    runtimes: dict[str, tuple[User, Runtime]],
    scratch: Path,
) -> None:
    """A model that answers in words around the verdict: our strict reader still finds it."""
    setup = SETUPS[agent]
    user, runtime = runtimes["root"]
    model_server.script_when("case-loose", text=f"Here it is: {PASS_TEXT}")
    project = _project(
        base=scratch, setup=setup, server=model_server, cases={"loose": "case-loose"}
    )
    _run(project, user, runtime)
    check = project.checks()["loose"]
    assert check["status"] == "passed", json.dumps(check, indent=1)[:4000]
    assert check["details"]["structured_output"] == {"requested": True, "honoured": False}


ERROR_CASES = {
    "http429": ("case-http429", "infrastructure"),
    "http500": ("case-http500", "infrastructure"),
    "http401": ("case-http401", "infrastructure"),
    "prose": ("case-prose", "verdict"),
}


@pytest.mark.parametrize("agent", ERROR_AGENTS)
def test_error_classes_from_the_model_server_and_retries_only_for_infrastructure(
    agent: str,
    model_server: ModelServer,
    runtimes: dict[str, tuple[User, Runtime]],
    scratch: Path,
) -> None:
    setup = SETUPS[agent]
    user, runtime = runtimes["root"]
    model_server.script_when("case-http429", status=429, error_message="slow down please")
    model_server.script_when("case-http500", status=500, error_message="model server exploded")
    model_server.script_when("case-http401", status=401, error_message="model server bad key")
    model_server.script_when("case-prose", text=NO_VERDICT_TEXT)
    cases = {name: marker for name, (marker, _) in ERROR_CASES.items()}
    project = _project(base=scratch, setup=setup, server=model_server, cases=cases)
    done = _run(project, user, runtime, "--retries", "1")
    checks = project.checks()
    context = json.dumps(checks, indent=1)[:6000] + done.stderr[-2000:]
    for name, (_, expected) in ERROR_CASES.items():
        details = checks[name]["details"]
        assert checks[name]["status"] == "error", context
        assert details["error_class"] == expected, f"{name}: {details.get('error_cause')}"
        # Agent starts: a transient infrastructure error is tried again; a verdict error and
        # refused credentials (a retry would be refused the same way) are not.
        transient = expected == "infrastructure" and details.get("error_transient") is not False
        assert len(details["attempts"]) == (2 if transient else 1), name
    # Claude Code relays the server's 401 as such: it is never retried.
    if agent == "claude":
        assert checks["http401"]["details"]["error_transient"] is False, checks["http401"]
        assert len(checks["http401"]["details"]["attempts"]) == 1
    if agent in ("claude", "codex"):
        # Both relay the status or the rate limit; gemini words a 429 as a quota, opencode
        # says only the server's message.
        cause = checks["http429"]["details"]["error_cause"]
        assert "429" in cause or "rate limit" in cause, checks["http429"]["details"]
    report = project.report()
    counted = {entry["error_class"]: entry["count"] for entry in report["error_classes"]}
    assert counted == {"infrastructure": 3, "verdict": 1}, report["error_classes"]
    assert "4 errors: 3 infrastructure (" in done.stdout, done.stdout


def _agent_pids(marker: str) -> list[int]:
    """The outermost processes whose command line holds `marker` (the judge's agent)."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if marker.encode() in cmdline:
            found[int(entry.name)] = parent
    return [pid for pid, parent in found.items() if parent not in found]


@pytest.mark.parametrize("agent", PROCESS_AGENTS)
def test_a_killed_agent_is_an_infrastructure_error(
    agent: str,
    model_server: ModelServer,
    runtimes: dict[str, tuple[User, Runtime]],
    scratch: Path,
) -> None:
    setup = SETUPS[agent]
    user, runtime = runtimes["root"]
    model_server.script_when("case-killed", hang=True)
    project = _project(
        base=scratch, setup=setup, server=model_server, cases={"killed": "case-killed"}
    )
    outcome: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: outcome.update(done=_run(project, user, runtime)))
    runner.start()
    deadline = time.monotonic() + 120
    killed: list[int] = []
    # Once the agent has asked the model (and hangs on the answer), kill it from outside.
    while time.monotonic() < deadline and not killed:
        if model_server.model_requests(marker="case-killed"):
            for pid in _agent_pids("case-killed"):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        time.sleep(0.2)
    runner.join(timeout=300)
    assert killed, "the agent never reached the model server"
    check = project.checks()["killed"]
    details = check["details"]
    assert check["status"] == "error", json.dumps(check, indent=1)[:3000]
    assert details["error_class"] == "infrastructure", details
    assert "SIGKILL" in details["error_cause"], details


@pytest.mark.parametrize("agent", PROCESS_AGENTS)
def test_a_missing_agent_binary_is_an_infrastructure_error(
    agent: str,
    model_server: ModelServer,
    runtimes: dict[str, tuple[User, Runtime]],
    scratch: Path,
) -> None:
    """A wrapper (as npx or a shell line is) whose real CLI is gone: the shell's exit 127."""
    from eval_banana.harness.templates import BUILTIN_TEMPLATES

    setup = SETUPS[agent]
    user, runtime = runtimes["root"]
    command = ["sh", "-c", 'exec "$0" "$@"', f"/nonexistent/{agent}"]
    command += BUILTIN_TEMPLATES[agent].command[1:]
    extra = f"\n[agents.{agent}]\ncommand = {json.dumps(command)}\n"
    project = _project(
        base=scratch,
        setup=setup,
        server=model_server,
        cases={"missing": "case-missing"},
        extra=extra,
    )
    _run(project, user, runtime, "--retries", "1")
    details = project.checks()["missing"]["details"]
    assert details["error_class"] == "infrastructure", details
    assert details["error_cause"] == "agent CLI not found (exit 127)", details
    assert not model_server.model_requests(marker="case-missing")
