"""codex's human transcript on stderr read into a transcript: where a command's output ends.

Codex prints an `exec` item as `exec`, the command line, its exit line, then the command's whole
output with no mark where it ends; the next item's line (`codex`, `exec`, `tokens used`) ends it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eval_banana.core.masking import NO_SECRETS
from eval_banana.transcripts.live import TranscriptBuilder
from tests.transcripts.judge_project import judged, project_with_agent

HEADER = "OpenAI Codex v0.171.0\n--------\nworkdir: /x\nmodel: m\n--------\nuser\nthe prompt\n"
EXEC = "exec\nbash -lc 'pip install -e . && ls' in /x\n exited 1 in 812ms:\n"
# What pip prints when it cannot install, then `ls` of a folder that holds a folder `tool`.
OUTPUT = (
    "Obtaining file:///x\n"
    "ERROR: Project file:///x has a 'pyproject.toml' and its build backend is missing\n"
    "README.md\nsrc\ntool\ntests\n"
)
ENDING = "codex\nThe package does not install.\ntokens used\n2,000\n"
VERDICT = {"score": 0, "reason": "the package does not install"}


def events(stderr: str) -> list[dict[str, Any]]:
    builder = TranscriptBuilder(dialect="codex", max_chars=2000, masker=NO_SECRETS)
    builder.stderr(stderr.encode())
    builder.stdout((json.dumps(VERDICT) + "\n").encode())
    return builder.events()


def brief(found: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(event["kind"], event.get("tool"), event.get("text")) for event in found]


def test_eb_run_keeps_a_commands_error_and_tool_lines_in_its_result(tmp_path: Path) -> None:
    agent = (
        "import sys\n"
        f"sys.stderr.write({HEADER + EXEC + OUTPUT + ENDING!r})\n"
        f"print({json.dumps(VERDICT)!r})\n"
    )
    root = project_with_agent(tmp_path / "project", agent=agent, dialect="codex")
    check, found = judged(root, exit_code=1)
    assert check["status"] == "failed"
    assert [event["kind"] for event in found] == [
        "message",
        "tool_call",
        "tool_result",
        "message",
        "usage",
        "answer",
    ]
    (result,) = [event for event in found if event["kind"] == "tool_result"]
    assert result["text"] == "exited 1 in 812ms:\n" + OUTPUT.rstrip("\n")
    assert "cut" not in result
    assert found[3]["text"] == "The package does not install."


def test_codex_errors_right_before_its_usage_total_are_its_own() -> None:
    # A turn that fails after a command: codex's ERROR line follows the command's output.
    stderr = HEADER + EXEC + OUTPUT + "ERROR: unexpected status 500\ntokens used\n2,000\n"
    assert brief(events(stderr))[2:5] == [
        ("tool_result", "exec", "exited 1 in 812ms:\n" + OUTPUT.rstrip("\n")),
        ("error", None, "unexpected status 500"),
        ("usage", None, None),
    ]


def test_codex_errors_that_end_the_stream_are_its_own() -> None:
    stderr = HEADER + EXEC + "README.md\nERROR: stream disconnected\n"
    assert brief(events(stderr))[2:4] == [
        ("tool_result", "exec", "exited 1 in 812ms:\nREADME.md"),
        ("error", None, "stream disconnected"),
    ]


def test_a_commands_output_ends_at_codexs_next_command() -> None:
    second = "exec\nbash -lc 'ls tool' in /x\n succeeded in 5ms:\nrun.py\n"
    found = brief(events(HEADER + EXEC + OUTPUT + second + ENDING))
    assert [event[0] for event in found] == [
        "message",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "message",
        "usage",
        "answer",
    ]
    assert found[4] == ("tool_result", "exec", "succeeded in 5ms:\nrun.py")
