"""opencode's `run` output read into a transcript: its stderr's tool lines beside stdout's answer.

The stderr texts are what opencode 1.18.33 printed against the model server (tests/model_server.py
scripting a tool call), byte for byte.
"""

from __future__ import annotations

from typing import Any

from eval_banana.core.masking import NO_SECRETS
from eval_banana.transcripts.live import TranscriptBuilder
from eval_banana.transcripts.reading import WHOLE_BYTES

VERDICT = '{"score": 1, "reason": "The model server was told to pass."}'
HEADER = "\x1b[0m\n> build · test-model\n\x1b[0m\n"
READ = HEADER + "\x1b[0m→ \x1b[0mRead README.md\n"
READ_FAILED = (
    HEADER + "\x1b[0m✗ \x1b[0mRead missing.md failed\n"
    "\x1b[91m\x1b[1mError: \x1b[0mFile not found: /tmp/project/missing.md\n"
)
SHELL = HEADER + '\x1b[0m$ \x1b[0mprintf "a\\n\\nb\\n"\na\n\nb\n\x1b[0m\n'
MODEL_ERROR = HEADER + "\x1b[91m\x1b[1mError: \x1b[0mscripted failure from the test model server\n"


def events(*, stderr: str, stdout: str = VERDICT + "\n", chunk: int = 7) -> list[dict[str, Any]]:
    builder = TranscriptBuilder(dialect="text", max_chars=2000, masker=NO_SECRETS)
    data = stderr.encode()
    for start in range(0, len(data), chunk):  # in small pieces, as a pipe may give them
        builder.stderr(data[start : start + chunk])
    builder.stdout(stdout.encode())
    return builder.events()


def brief(found: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (event["kind"], event.get("tool"), event.get("arguments") or event.get("text"))
        for event in found
    ]


def test_an_inline_tool_is_a_call_and_stdout_the_answer() -> None:
    assert brief(events(stderr=READ)) == [
        ("tool_call", "Read", "README.md"),
        ("answer", None, VERDICT),
    ]


def test_a_failed_tools_error_is_its_result_not_an_error_of_the_judge() -> None:
    assert brief(events(stderr=READ_FAILED)) == [
        ("tool_call", "Read", "missing.md"),
        ("tool_result", "Read", "Error: File not found: /tmp/project/missing.md"),
        ("answer", None, VERDICT),
    ]


def test_a_shell_blocks_output_with_blank_lines_is_one_result() -> None:
    assert brief(events(stderr=SHELL)) == [
        ("tool_call", "bash", '{"command": "printf \\"a\\\\n\\\\nb\\\\n\\""}'),
        ("tool_result", "bash", "a\n\nb"),
        ("answer", None, VERDICT),
    ]


def test_the_models_error_is_an_error_once() -> None:
    found = brief(events(stderr=MODEL_ERROR, stdout=""))
    assert found == [("error", None, "scripted failure from the test model server")]


def test_another_text_agents_stderr_is_read_for_its_error_lines_as_before() -> None:
    stderr = "starting\n" * 20 + "Error: provider said 401 unauthorized\n"
    assert brief(events(stderr=stderr)) == [
        ("answer", None, VERDICT),
        ("error", None, "Error: provider said 401 unauthorized"),
    ]


def test_a_long_stderr_keeps_the_tool_calls_of_its_start_and_its_end() -> None:
    noise = "\x1b[0m$ \x1b[0mcat big.log\n" + "log line of the big file\n" * (WHOLE_BYTES // 20)
    stderr = READ + noise + "\x1b[0m\n\x1b[0m→ \x1b[0mRead LAST.md\n"
    found = events(stderr=stderr, chunk=1 << 16)
    calls = [event.get("arguments") for event in found if event["kind"] == "tool_call"]
    assert calls[0] == "README.md" and calls[-1] == "LAST.md", calls
    assert any(event["kind"] == "skipped" for event in found)
    assert found[-1]["kind"] == "answer" and found[-1]["text"] == VERDICT
