"""The transcript is built while the agent's output is read, not from its files afterwards."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from eval_banana.core.masking import NO_SECRETS
from eval_banana.runners.process import ProcessOutcome, run_process
from eval_banana.transcripts.live import TranscriptBuilder
from eval_banana.transcripts.reading import LINE_CAP, LineSplitter, RawLine
from eval_banana.transcripts.record import transcript_events
from eval_banana.transcripts.sink import Event

VERDICT = '{"score": 1, "reason": "the README says so"}'
TOOL_USE = {
    "type": "assistant",
    "message": {
        "content": [
            {"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": "pip install"}}
        ]
    },
}
RESULT = {"type": "result", "subtype": "success", "is_error": False, "result": VERDICT}
# A stand-in agent: one tool call, then it waits (up to a minute) for the go file, then answers.
AGENT = f"""
import json, os, sys, time
print(json.dumps({TOOL_USE!r}), flush=True)
print("thinking on stderr", file=sys.stderr, flush=True)
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.02)
print(json.dumps({RESULT!r}), flush=True)
"""


# Past the transcript's head: 250 tool calls, then it waits for the go file.
MANY = """
import json, os, sys, time
for index in range(250):
    print(json.dumps({"type": "assistant", "message": {"content": [{"type": "tool_use",
        "id": f"t{index}", "name": "Read", "input": {"file_path": f"f{index}.py"}}]}}))
sys.stdout.flush()
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.02)
"""


def _follow(
    *, tmp_path: Path, code: str, go: Path, builder: TranscriptBuilder
) -> tuple[threading.Thread, list[ProcessOutcome]]:
    outcomes: list[ProcessOutcome] = []

    def run() -> None:
        outcomes.append(
            run_process(
                argv=[sys.executable, "-c", code, str(go)],
                cwd=tmp_path,
                env={"PATH": "/usr/bin:/bin"},
                stdout_path=tmp_path / "out.txt",
                stderr_path=tmp_path / "err.txt",
                timeout_s=120,
                cancel=threading.Event(),
                follow=builder,
            )
        )

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcomes


def _seen_once(*, builder: TranscriptBuilder, count: int) -> list[Event]:
    """The builder's events once it holds `count` of them (or after 30 s, whatever it holds)."""
    deadline = time.monotonic() + 30
    while len(builder.seen()) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return builder.seen()


def test_the_tool_call_is_an_event_before_the_agent_exits(tmp_path: Path) -> None:
    go = tmp_path / "go"
    builder = TranscriptBuilder(dialect="claude", max_chars=2000, masker=NO_SECRETS)
    thread, outcomes = _follow(tmp_path=tmp_path, code=AGENT, go=go, builder=builder)
    try:
        seen = _seen_once(builder=builder, count=1)
        # The agent is still waiting for the go file: it has not exited, and yet the event is in.
        assert thread.is_alive() and not outcomes
        assert seen == [
            {
                "kind": "tool_call",
                "tool": "Grep",
                "call_id": "t1",
                "arguments": '{"pattern": "pip install"}',
            }
        ]
    finally:
        go.touch()
        thread.join(timeout=60)
    (outcome,) = outcomes
    assert outcome.exit_code == 0
    events = builder.events()
    assert [event["kind"] for event in events] == ["tool_call", "answer"]
    assert events[1]["text"] == VERDICT
    # The same events as reading the finished files.
    assert events == transcript_events(
        dialect="claude",
        stdout_path=outcome.stdout_path,
        stderr_path=outcome.stderr_path,
        max_chars=2000,
        masker=NO_SECRETS,
    )


def test_a_long_line_in_small_pieces_is_the_line_read_at_once() -> None:
    line = b"{" + "é".encode() * (LINE_CAP // 2 + 70_001) + b"}\n"
    at_once = LineSplitter().feed(line)
    splitter = LineSplitter()
    pieces: list[RawLine] = []
    for start in range(0, len(line), 4099):
        pieces += splitter.feed(line[start : start + 4099])
    assert splitter.close() is None
    assert pieces == at_once
    (read,) = pieces
    assert read.size == len(line) and read.end is not None
    assert len(read.start) == LINE_CAP and 64 << 10 <= len(read.end) <= 128 << 10
    assert line.endswith(read.end)
    assert read.line(masker=NO_SECRETS).cut and read.line(masker=NO_SECRETS).end.endswith("é}")


def test_events_past_the_head_are_parsed_while_the_agent_pauses(tmp_path: Path) -> None:
    go = tmp_path / "go"
    builder = TranscriptBuilder(dialect="claude", max_chars=2000, masker=NO_SECRETS)
    thread, outcomes = _follow(tmp_path=tmp_path, code=MANY, go=go, builder=builder)
    try:
        seen = _seen_once(builder=builder, count=250)
        assert thread.is_alive() and not outcomes
        # The first 200 events and the last 50 so far (the end keeps up to 100).
        assert len(seen) == 250 and seen[-1]["call_id"] == "t249"
    finally:
        go.touch()
        thread.join(timeout=60)
    assert len(builder.events()) == 250


def test_the_exit_descriptor_wakes_when_the_child_exits_and_not_before(tmp_path: Path) -> None:
    import os
    import select
    import subprocess

    from eval_banana.runners.process import _exit_descriptor

    go = tmp_path / "go"
    waiting = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.01)\n"
    child = subprocess.Popen([sys.executable, "-c", waiting, str(go)])
    exited = _exit_descriptor(pid=child.pid)
    if exited is None:  # no pidfd here: the follower polls Popen.wait, tested below
        go.touch()
        child.wait(timeout=60)
        return
    try:
        assert select.select([exited], [], [], 0.2)[0] == []
        go.touch()
        # Readable once it exits, before anyone reaps it (the follower reaps it next).
        assert select.select([exited], [], [], 30)[0] == [exited]
        assert child.poll() == 0
    finally:
        os.close(exited)
        child.wait(timeout=60)


def test_the_follower_ends_with_the_child_exit_code_with_and_without_an_exit_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import eval_banana.runners.process as process

    code = "import sys, time\nprint('partial', flush=True)\ntime.sleep(0.3)\nsys.exit(7)\n"
    for found in (True, False):
        if not found:
            monkeypatch.setattr(process, "_exit_descriptor", lambda *, pid: None)
        builder = TranscriptBuilder(dialect="text", max_chars=2000, masker=NO_SECRETS)
        thread, outcomes = _follow(
            tmp_path=tmp_path, code=code, go=tmp_path / "go", builder=builder
        )
        thread.join(timeout=60)
        (outcome,) = outcomes
        assert (outcome.exit_code, outcome.timed_out) == (7, False)
        assert outcome.stdout_path is not None
        assert outcome.stdout_path.read_text() == "partial\n"
