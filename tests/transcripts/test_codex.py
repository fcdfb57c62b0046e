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
    check, found = _judged_codex(tmp_path=tmp_path, stderr=HEADER + EXEC + OUTPUT + ENDING)
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


# An MCP tool call as codex prints it. Older codex (its header says `research preview`): the
# call on one `tool` line as it starts, the same invocation with its status when it ends, then
# the result's JSON pretty-printed.
OLDER_HEADER = HEADER.replace("v0.171.0", "v0.99.0 (research preview)")
OLDER_CALL = (
    'tool docs.search({"query":"install"})\n'
    'docs.search({"query":"install"}) success in 12ms:\n'
    '{\n  "content": [\n    {\n      "text": "pip install -e .",\n      "type": "text"\n'
    "    }\n  ]\n}\n"
)
# Newer codex: a line when the call starts and one when it ends, with neither arguments nor
# result; a failed call's error message follows its line. Its reasoning has no line before it.
NEWER_CALLS = (
    "mcp: docs/search started\n"
    "mcp: docs/search (completed)\n"
    "**Reading the install section**\n"
    "mcp: docs/fetch started\n"
    "mcp: docs/fetch (failed)\n"
    "tool 'fetch' not found on server 'docs'\n"
)


def test_older_codexs_tool_line_is_a_tool_call_and_its_json_the_result() -> None:
    found = events(OLDER_HEADER + "thinking\n**Looking it up**\n" + OLDER_CALL + ENDING)
    assert [event["kind"] for event in found] == [
        "message",
        "message",
        "tool_call",
        "tool_result",
        "message",
        "usage",
        "answer",
    ]
    assert found[1]["text"] == "**Looking it up**"
    call, result = found[2], found[3]
    assert (call["tool"], json.loads(call["arguments"])) == ("docs.search", {"query": "install"})
    assert result["call_id"] == call["call_id"] and result["tool"] == "docs.search"
    assert result["text"].splitlines()[0] == "success in 12ms:"
    assert json.loads("\n".join(result["text"].splitlines()[1:]))["content"][0]["text"] == (
        "pip install -e ."
    )


def test_newer_codexs_mcp_lines_are_tool_calls_and_results() -> None:
    found = events(HEADER + NEWER_CALLS + EXEC + OUTPUT + ENDING)
    assert brief(found)[:7] == [
        ("message", None, "the prompt"),
        ("tool_call", "docs/search", None),
        ("tool_result", "docs/search", "completed"),
        ("message", None, "**Reading the install section**"),
        ("tool_call", "docs/fetch", None),
        ("tool_result", "docs/fetch", "failed\ntool 'fetch' not found on server 'docs'"),
        ("tool_call", "exec", None),
    ]
    assert found[3]["role"] == "thinking"
    assert found[1]["call_id"] == found[2]["call_id"] != found[4]["call_id"]


def test_a_commands_output_ends_at_codexs_mcp_line() -> None:
    found = brief(events(HEADER + EXEC + "README.md\n" + NEWER_CALLS + ENDING))
    assert found[1:5] == [
        ("tool_call", "exec", None),
        ("tool_result", "exec", "exited 1 in 812ms:\nREADME.md"),
        ("tool_call", "docs/search", None),
        ("tool_result", "docs/search", "completed"),
    ]


def test_an_error_line_inside_codexs_message_is_the_messages_text() -> None:
    message = (
        "pip printed this line:\n"
        "ERROR: Could not find a version that satisfies the requirement banana\n"
        "so the package does not install."
    )
    found = brief(events(HEADER + "codex\n" + message + "\ntokens used\n2,000\n"))
    assert found == [
        ("message", None, "the prompt"),
        ("message", None, message),
        ("usage", None, None),
        ("answer", None, json.dumps(VERDICT)),
    ]


def test_codexs_own_errors_after_its_message_stay_errors() -> None:
    stderr = HEADER + "codex\nLet me check.\nERROR: stream disconnected\nexec\n" + EXEC[5:]
    assert brief(events(stderr))[1:4] == [
        ("message", None, "Let me check."),
        ("error", None, "stream disconnected"),
        ("tool_call", "exec", None),
    ]


def test_eb_run_reads_codexs_mcp_calls_and_keeps_error_lines_in_its_message(
    tmp_path: Path,
) -> None:
    message = "pip said:\nERROR: No matching distribution found for banana\nso it fails."
    stderr = HEADER + NEWER_CALLS + "codex\n" + message + "\ntokens used\n2,000\n"
    check, found = _judged_codex(tmp_path=tmp_path, stderr=stderr)
    assert check["status"] == "failed"
    assert [event["kind"] for event in found] == [
        "message",
        "tool_call",
        "tool_result",
        "message",
        "tool_call",
        "tool_result",
        "message",
        "usage",
        "answer",
    ]
    assert [event.get("tool") for event in found if event["kind"] == "tool_call"] == [
        "docs/search",
        "docs/fetch",
    ]
    assert found[6]["text"] == message


def _judged_codex(*, tmp_path: Path, stderr: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A codex judge that writes `stderr` and prints a failing verdict, run through `eb run`:
    its check and the transcript events eb read."""
    agent = f"import sys\nsys.stderr.write({stderr!r})\nprint({json.dumps(VERDICT)!r})\n"
    root = project_with_agent(tmp_path / "project", agent=agent, dialect="codex")
    return judged(root, exit_code=1)
