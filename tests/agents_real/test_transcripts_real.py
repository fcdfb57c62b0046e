"""Transcripts of the real CLIs: the tool calls an agent made are in the judge's transcript.

The model server answers a judge's first request with a call of the agent's own shell tool
and the request that brings the tool's output back with the verdict; the agent really runs
the command, and `checks/<stem>.transcript.jsonl` must hold the call, its output and the answer.
Only the agents whose tool calls the model server can script over their API are here
(opencode speaks Chat Completions; claude's transcript of tool calls is covered by its
recorded stream-json).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents_real.runner import Runtime, User, eb_run, project_for
from tests.agents_real.setups import SETUPS
from tests.model_server import PASS_TEXT, ModelServer

TIMEOUT_S = 240
# (agent, the tool the model calls, its arguments)
TOOL_AGENTS = [("opencode", "bash", {"command": "ls -a"})]


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(("agent", "tool", "arguments"), TOOL_AGENTS)
def test_the_real_agents_tool_call_is_in_its_transcript(
    agent: str,
    tool: str,
    arguments: dict[str, str],
    model_server: ModelServer,
    runtimes: dict[str, tuple[User, Runtime]],
    scratch: Path,
) -> None:
    setup = SETUPS[agent]
    user, runtime = runtimes["root"]
    model_server.script_when(
        "case-tool", text=PASS_TEXT, tool_call=tool, tool_arguments=json.dumps(arguments)
    )
    project = project_for(
        base=scratch,
        setup=setup,
        server_url=model_server.url,
        model=setup.model,
        cases={"tool_case": "case-tool"},
        timeout_seconds=TIMEOUT_S,
    )
    done = eb_run(project=project, user=user, runtime=runtime)
    check = project.checks()["tool_case"]
    context = json.dumps(check, indent=1)[:4000] + done.stderr[-2000:]
    assert check["status"] == "passed", context
    # The agent really ran the tool: its result went back to the model.
    bodies = [request.body for request in model_server.model_requests(marker="case-tool")]
    assert any(
        message.get("role") == "tool"
        for body in bodies
        if isinstance(body, dict)
        for message in body.get("messages") or []
        if isinstance(message, dict)
    ), context
    events = _events(project.run_dir() / check["details"]["transcript_path"])
    calls = [event for event in events if event["kind"] == "tool_call"]
    assert [call["tool"] for call in calls] == [tool], events
    assert arguments["command"] in calls[0]["arguments"], events
    results = [event for event in events if event["kind"] == "tool_result"]
    # `ls -a` in the project lists what eb's project holds.
    assert results and "eval_checks" in results[0]["text"], events
    answers = [event for event in events if event["kind"] == "answer"]
    assert [json.loads(answer["text"]) for answer in answers] == [json.loads(PASS_TEXT)], events
    kinds = [event["kind"] for event in events]
    assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("answer")
