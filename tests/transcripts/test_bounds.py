"""A transcript is bounded by its limits, not by what the agent printed."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from eval_banana.core.masking import NO_SECRETS
from eval_banana.transcripts.record import record_transcript, transcript_events
from eval_banana.transcripts.repair import repair
from eval_banana.transcripts.sink import HEAD_EVENTS, TAIL_EVENTS

MB = 1_000_000
VERDICT = '{"score": 1, "reason": "read to the end"}'


def line(event: dict[str, object]) -> bytes:
    return json.dumps(event).encode() + b"\n"


def tool_round(index: int) -> bytes:
    call = {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Step {index}: reading a {{brace"},
                {
                    "type": "tool_use",
                    "id": f"t{index}",
                    "name": "Read",
                    "input": {"file_path": f"f{index}.py"},
                },
            ],
        },
    }
    result = {
        "type": "user",
        "message": {
            "content": [
                {"type": "tool_result", "tool_use_id": f"t{index}", "content": "x = 1\n" * 100}
            ]
        },
    }
    return line(call) + line(result)


def final() -> bytes:
    return line({"type": "result", "subtype": "success", "is_error": False, "result": VERDICT})


def write_stream(path: Path, *, size: int) -> None:
    block = b"".join(tool_round(index) for index in range(100))
    with path.open("wb") as handle:
        written = 0
        while written < size:
            handle.write(block)
            written += len(block)
        handle.write(final())


def test_a_50_mb_stream_gives_a_small_transcript_with_its_start_and_end(tmp_path: Path) -> None:
    stdout = tmp_path / "out.txt"
    write_stream(stdout, size=50 * MB)
    target = tmp_path / "t.transcript.jsonl"
    tracemalloc.start()
    count = record_transcript(
        dialect="claude",
        stdout_path=stdout,
        stderr_path=None,
        target=target,
        max_chars=2000,
        masker=NO_SECRETS,
    )
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count <= HEAD_EVENTS + TAIL_EVENTS + 1
    assert target.stat().st_size < 1 * MB
    assert peak < 16 * MB
    events = [json.loads(text) for text in target.read_text().splitlines()]
    assert events[1] == {
        "kind": "tool_call",
        "tool": "Read",
        "call_id": "t0",
        "arguments": '{"file_path": "f0.py"}',
    }
    skipped = [event for event in events if event["kind"] == "skipped"]
    assert len(skipped) == 1 and skipped[0]["cut"] > 45 * MB
    assert events[-1] == {"kind": "answer", "text": VERDICT}


def test_a_50_mb_line_is_read_in_part(tmp_path: Path) -> None:
    stdout = tmp_path / "out.txt"
    huge = {
        "type": "user",
        "message": {
            "content": [{"type": "tool_result", "tool_use_id": "t0", "content": "y" * 50 * MB}]
        },
    }
    stdout.write_bytes(tool_round(0)[: tool_round(0).index(b"\n") + 1] + line(huge) + final())
    tracemalloc.start()
    events = transcript_events(
        dialect="claude", stdout_path=stdout, stderr_path=None, max_chars=500, masker=NO_SECRETS
    )
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 16 * MB
    result = next(event for event in events if event["kind"] == "tool_result")
    assert result["tool"] == "Read" and result["text"] == "y" * 500 and result["cut"] > 0
    assert events[-1] == {"kind": "answer", "text": VERDICT}


def test_a_plain_answer_on_one_long_line_keeps_its_end(tmp_path: Path) -> None:
    stdout = tmp_path / "out.txt"
    stdout.write_text("Looking at {the} files. " * 300_000 + VERDICT + "\n")
    events = transcript_events(
        dialect="text", stdout_path=stdout, stderr_path=None, max_chars=200, masker=NO_SECRETS
    )
    (answer,) = events
    assert answer["kind"] == "answer" and answer["text"].endswith(VERDICT)
    assert len(answer["text"]) <= 200 and answer["cut"] > 7 * MB


def test_many_events_keep_the_first_and_the_last(tmp_path: Path) -> None:
    stdout = tmp_path / "out.txt"
    # 400 rounds of three events (text, call, result), then the answer: 1,201 events.
    stdout.write_bytes(b"".join(tool_round(index) for index in range(400)) + final())
    events = transcript_events(
        dialect="claude", stdout_path=stdout, stderr_path=None, max_chars=100, masker=NO_SECRETS
    )
    assert len(events) == HEAD_EVENTS + TAIL_EVENTS + 1
    note = events[HEAD_EVENTS]
    assert note["kind"] == "skipped" and note["text"].startswith("901 events left out")
    assert events[-1]["kind"] == "answer"


def test_repair_closes_what_a_cut_left_open() -> None:
    whole = json.dumps({"type": "user", "items": [1, {"name": "Read", "text": "abc\\ndef"}]})
    assert repair(whole) == json.loads(whole)
    assert repair(whole[: whole.index("abc") + 4]) == {
        "type": "user",
        "items": [1, {"name": "Read", "text": "abc"}],
    }
    assert repair('{"a": "x\\u00') == {"a": "x"}
    assert repair('{"a": [1, 2, {"b": tru') == {"a": [1, 2, {}]}
    assert repair('{"a": 1, "lon') == {"a": 1}
    assert repair("[1, 2") is None


def test_a_long_gemini_message_cut_at_the_head_keeps_its_start(tmp_path: Path) -> None:
    # One message of 6 MB in deltas, then the result: the message open where the head ends is
    # not the answer (that is read from the end), so it keeps its start.
    stdout = tmp_path / "out.txt"
    deltas = b"".join(
        line({"type": "message", "role": "assistant", "content": f"step {i:07d}\n", "delta": True})
        for i in range(70_000)
    )
    stdout.write_bytes(deltas + line({"type": "result", "status": "success"}))
    events = transcript_events(
        dialect="gemini", stdout_path=stdout, stderr_path=None, max_chars=100, masker=NO_SECRETS
    )
    first = events[0]
    assert first["kind"] == "message" and first["text"].startswith("step 0000000\nstep 0000001")
    assert first["cut"] > 0


def test_a_long_line_is_joined_across_its_middle_even_between_escapes(tmp_path: Path) -> None:
    # Escapes (`\u00e9`, `\n`) everywhere: the start and the end are cut inside some of them.
    stdout = tmp_path / "out.txt"
    for shift in range(4):
        body = "x" * shift + "caf\u00e9\n" * 500_000
        result = {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": body + VERDICT,
        }
        stdout.write_bytes(line(result))
        (answer,) = transcript_events(
            dialect="claude", stdout_path=stdout, stderr_path=None, max_chars=80, masker=NO_SECRETS
        )
        assert answer["text"].endswith("caf\u00e9\n" + VERDICT), shift
        # The middle is counted as the bytes it took in the JSON line (an escape is 6 of them).
        assert 2 * MB < answer["cut"] < 10 * MB
    # A tool's output keeps its start, and counts everything after it.
    huge = {
        "type": "user",
        "message": {
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": "z" * 3 * MB}]
        },
    }
    stdout.write_bytes(line(huge))
    (result_event,) = transcript_events(
        dialect="claude", stdout_path=stdout, stderr_path=None, max_chars=80, masker=NO_SECRETS
    )
    assert result_event["text"] == "z" * 80 and result_event["cut"] == 3 * MB - 80
