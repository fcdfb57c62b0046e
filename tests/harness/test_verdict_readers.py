"""The gemini and openhands readers on their edge cases, down to the exact `verdict_problem`.

`details.verdict_problem` is what a user reads when a judge gave no verdict, so its text is
pinned here; each case also pins which event the reader takes the answer from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eval_banana.harness.eventlines import MAX_EVENT_LINE
from eval_banana.harness.verdict import Extraction, extract_from_text, extract_verdict
from eval_banana.harness.verdictobjects import Verdict

NO_SCORE = 'no JSON object with a "score" key was found'
# A text too long for an event line holding it to be read.
HUGE = "x" * MAX_EVENT_LINE + " "
TOO_LONG = "is longer than the 8,388,608 characters an event line is read whole from: it may be"


def write_lines(path: Path, lines: list[Any]) -> Path:
    """One line per item: dicts as JSON, strings as they are."""
    text = "".join((item if isinstance(item, str) else json.dumps(item)) + "\n" for item in lines)
    path.write_text(text, encoding="utf-8")
    return path


def read(dialect: str, path: Path) -> Extraction:
    return extract_verdict(dialect=dialect, stdout_path=path)


# --- gemini -------------------------------------------------------------------------------------


def said(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": text, "delta": True}


SUCCESS = {"type": "result", "status": "success", "stats": {"total_tokens": 3}}


def test_gemini_without_a_result_event_still_reads_the_messages(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "out", [said('{"score": 1, "reason": "ok"}')])
    assert read("gemini", path) == Extraction(verdict=Verdict(1, "ok"), problem=None)


def test_gemini_problem_texts_with_and_without_a_result_event(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "a", [said("I could not decide."), SUCCESS])
    found = read("gemini", path)
    assert found == Extraction(
        verdict=None, problem=f"in the assistant's last message, {NO_SCORE}", usage_event=SUCCESS
    )
    path = write_lines(tmp_path / "b", [said("I could not decide.")])
    assert read("gemini", path) == Extraction(
        verdict=None,
        problem=f"in the assistant's last message, {NO_SCORE} (and no result event was printed)",
    )


@pytest.mark.parametrize(
    ("error", "suffix"),
    [
        (
            {"type": "InvalidStreamError", "message": "Model stream ended empty"},
            ": Model stream ended empty",
        ),
        ({"type": "InvalidStreamError"}, ""),
        ({"type": "X", "message": 5}, ""),
        ("a plain string", ""),
    ],
)
def test_gemini_error_result_names_the_error_message(
    tmp_path: Path, error: object, suffix: str
) -> None:
    result = {"type": "result", "status": "error", "error": error}
    path = write_lines(tmp_path / "out", [said('{"score": 1}'), result])
    found = read("gemini", path)
    assert found.verdict is None and found.usage_event == result
    assert found.problem == f'the agent\'s result event has status "error"{suffix}'


def test_gemini_reads_only_assistant_messages(tmp_path: Path) -> None:
    # A user message after the answer (an echo, a follow-up prompt) never supplies the verdict.
    user = {"type": "message", "role": "user", "content": '{"score": 1, "reason": "echo"}'}
    path = write_lines(tmp_path / "out", [said('{"score": 0, "reason": "no"}'), user, SUCCESS])
    assert read("gemini", path).verdict == Verdict(0, "no")
    # An assistant-role event that is not a message is not part of the answer either.
    tool = {"type": "tool_use", "role": "assistant", "content": '{"score": 1, "reason": "tool"}'}
    path = write_lines(tmp_path / "out2", [said('{"score": 0, "reason": "no"}'), tool, SUCCESS])
    assert read("gemini", path).verdict == Verdict(0, "no")


def test_gemini_reads_only_the_last_message_not_an_earlier_turn(tmp_path: Path) -> None:
    # A draft verdict before a tool call is not the answer: the last message has none.
    tool_use = {"type": "tool_use", "tool_name": "read_file", "tool_id": "r1", "parameters": {}}
    tool_result = {"type": "tool_result", "tool_id": "r1", "status": "success", "output": "x"}
    lines = [
        said('Draft: {"score": 1, "reason": "draft"}'),
        tool_use,
        tool_result,
        said("Having read it: the check does NOT hold (score 0)."),
        SUCCESS,
    ]
    found = read("gemini", write_lines(tmp_path / "a", lines))
    assert found == Extraction(
        verdict=None, problem=f"in the assistant's last message, {NO_SCORE}", usage_event=SUCCESS
    )
    # The last message's deltas are still joined, whatever the turns before it said.
    lines = [*lines[:3], said('{"score": 0, '), said('"reason": "split"}'), SUCCESS]
    assert read("gemini", write_lines(tmp_path / "b", lines)).verdict == Verdict(0, "split")
    # Any event between deltas ends the message, and so does a line too long to read.

    overlong = "x" * MAX_EVENT_LINE
    lines = [said('{"score": 1, "reason": "early"}'), overlong, said("no verdict here")]
    assert read("gemini", write_lines(tmp_path / "c", lines)).verdict is None
    lines = [said('{"score": 1, "reason": "early"}'), {"type": "error"}, said("none")]
    assert read("gemini", write_lines(tmp_path / "d", lines)).verdict is None


def test_gemini_a_last_message_too_long_to_read_is_no_verdict(tmp_path: Path) -> None:
    # A draft verdict, a tool call, then the final message on a line too long to read.
    tool_use = {"type": "tool_use", "tool_name": "read_file", "tool_id": "r1"}
    draft = said('{"score": 1, "reason": "draft"}')
    final = said(HUGE + '{"score": 0, "reason": "final"}')
    found = read("gemini", write_lines(tmp_path / "a", [draft, tool_use, final, SUCCESS]))
    assert found.verdict is None
    assert found.problem is not None
    assert found.problem.startswith('a line holding "assistant" ' + TOO_LONG)
    assert found.problem.endswith(
        "it may be the assistant's last message, and no earlier one "
        "stands in for it; ask the agent for a shorter final answer, with the verdict as a small "
        "JSON object at its end"
    )
    # A message after it is read as before, and so is a long line that is no message.
    after = said('{"score": 0, "reason": "after"}')
    lines = [draft, final, after, SUCCESS]
    assert read("gemini", write_lines(tmp_path / "b", lines)).verdict == Verdict(0, "after")
    lines = [draft, {"type": "tool_result", "tool_id": "r1", "output": HUGE}, SUCCESS]
    assert read("gemini", write_lines(tmp_path / "c", lines)).verdict == Verdict(1, "draft")
    # A result event too long to read after a readable one: the older one is no result.
    huge_result = {**SUCCESS, "note": HUGE}
    found = read("gemini", write_lines(tmp_path / "d", [draft, SUCCESS, huge_result]))
    assert found.verdict is None
    assert found.problem is not None
    assert found.problem.startswith('a line holding "result" ' + TOO_LONG + " the final result")


def test_gemini_skips_plain_lines_that_mention_the_assistant(tmp_path: Path) -> None:
    lines = ['the "assistant" is warming up', said('{"score": 1, "reason": "after"}'), SUCCESS]
    assert read("gemini", write_lines(tmp_path / "out", lines)).verdict == Verdict(1, "after")


def test_gemini_survives_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "out", [said('{"score": 1, "reason": "caf\u00e9"}'), SUCCESS])
    path.write_bytes(b'{"type": "tool_result", "output": "\xff\xfe"}\n' + path.read_bytes())
    assert read("gemini", path).verdict == Verdict(1, "caf\u00e9")


# --- openhands ----------------------------------------------------------------------------------


def action(*, message: object, tool_name: str = "finish", kind: str = "FinishAction") -> dict:
    return {
        "kind": "ActionEvent",
        "source": "agent",
        "tool_name": tool_name,
        "action": {"message": message, "kind": kind},
    }


def agent_message(*parts: object, source: str = "agent") -> dict:
    return {
        "kind": "MessageEvent",
        "source": source,
        "llm_message": {"role": "assistant", "content": list(parts)},
    }


def test_openhands_finish_is_recognised_by_tool_name_or_by_action_kind(tmp_path: Path) -> None:
    by_tool = action(message='{"score": 1, "reason": "tool"}', kind="SomethingNew")
    path = write_lines(tmp_path / "a", [by_tool])
    assert read("openhands", path).verdict == Verdict(1, "tool")
    by_kind = action(message='{"score": 0, "reason": "kind"}', tool_name="done")
    path = write_lines(tmp_path / "b", [by_kind])
    assert read("openhands", path).verdict == Verdict(0, "kind")


def test_openhands_ignores_actions_that_do_not_finish(tmp_path: Path) -> None:
    finish = action(message='{"score": 0, "reason": "final"}')
    other = action(message='{"score": 1, "reason": "a tool call"}', tool_name="terminal", kind="X")
    path = write_lines(tmp_path / "out", [finish, other])
    assert read("openhands", path).verdict == Verdict(0, "final")


def test_openhands_ignores_malformed_finish_events(tmp_path: Path) -> None:
    good = action(message='{"score": 1, "reason": "good"}')
    broken = [
        {"kind": "ActionEvent", "tool_name": "finish", "action": "not an object"},
        action(message=5),
        {"kind": "MessageEvent", "source": "agent", "llm_message": "not an object"},
        {"kind": "MessageEvent", "source": "agent", "llm_message": {"content": "a string"}},
    ]
    path = write_lines(tmp_path / "out", [good, *broken])
    assert read("openhands", path).verdict == Verdict(1, "good")


def test_openhands_reads_agent_messages_and_not_user_ones(tmp_path: Path) -> None:
    agent = agent_message({"type": "text", "text": '{"score": 0, "reason": "agent"}'})
    user = agent_message({"type": "text", "text": '{"score": 1, "reason": "user"}'}, source="user")
    path = write_lines(tmp_path / "out", [agent, user])
    assert read("openhands", path).verdict == Verdict(0, "agent")


def test_openhands_joins_the_text_parts_of_a_message_with_newlines(tmp_path: Path) -> None:
    message = agent_message(
        {"type": "text", "text": '{"score": 1,'},
        "a part that is not an object",
        {"type": "image", "url": "x"},
        {"type": "text", "text": '"reason": "split"}'},
    )
    path = write_lines(tmp_path / "out", [message])
    found = read("openhands", path)
    assert found == Extraction(verdict=Verdict(1, "split"), problem=None)


def test_openhands_skips_plain_lines_that_mention_kind(tmp_path: Path) -> None:
    lines = ['the "kind" of output we print', action(message='{"score": 1, "reason": "late"}')]
    assert read("openhands", write_lines(tmp_path / "out", lines)).verdict == Verdict(1, "late")


def test_openhands_a_final_message_too_long_to_read_is_no_verdict(tmp_path: Path) -> None:
    draft = agent_message({"type": "text", "text": '{"score": 1, "reason": "draft"}'})
    for name, final in (
        ("finish", action(message=HUGE + '{"score": 0, "reason": "final"}')),
        ("message", agent_message({"type": "text", "text": HUGE + '{"score": 0}'})),
    ):
        found = read("openhands", write_lines(tmp_path / name, [draft, final]))
        assert found.verdict is None, name
        assert found.problem is not None
        assert found.problem.startswith('a line holding "MessageEvent" or "finish" ' + TOO_LONG)
    # An observation too long to read is no answer: the finish before it still counts.
    finish = action(message='{"score": 1, "reason": "done"}')
    observation = {"kind": "ObservationEvent", "observation": {"content": HUGE}}
    path = write_lines(tmp_path / "observed", [finish, observation])
    assert read("openhands", path).verdict == Verdict(1, "done")


def test_openhands_problem_texts(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "a", ["Agent is working", {"kind": "ObservationEvent"}])
    assert read("openhands", path) == Extraction(
        verdict=None, problem="no finish action or agent message event was printed"
    )
    path = write_lines(tmp_path / "b", [action(message="I could not decide.")])
    assert read("openhands", path) == Extraction(
        verdict=None, problem=f"in the agent's final message, {NO_SCORE}"
    )


def test_openhands_keeps_the_newest_error_event_with_or_without_an_answer(
    tmp_path: Path,
) -> None:
    first = {"kind": "AgentErrorEvent", "error": "tool failed"}
    last = {"kind": "ConversationErrorEvent", "detail": "LLM call failed"}
    # Reading goes on after an error event: a later one replaces it, a later answer counts.
    path = write_lines(tmp_path / "a", [first, last])
    assert read("openhands", path) == Extraction(
        verdict=None,
        problem="no finish action or agent message event was printed",
        error_event=last,
    )
    path = write_lines(tmp_path / "b", [first, action(message='{"score": 1, "reason": "ok"}')])
    assert read("openhands", path) == Extraction(
        verdict=Verdict(1, "ok"), problem=None, error_event=first
    )


def test_openhands_a_conversation_ending_in_an_error_event_has_no_verdict(
    tmp_path: Path,
) -> None:
    plan = agent_message({"type": "text", "text": 'Plan: I will answer {"score": 1}'})
    limited = {"kind": "ConversationErrorEvent", "code": "LLMRateLimitError", "detail": "429"}
    ended = (
        "the conversation ended in an error event (ConversationErrorEvent) after the agent's answer"
    )
    path = write_lines(tmp_path / "a", ["Starting OpenHands...", plan, limited])
    assert read("openhands", path) == Extraction(verdict=None, problem=ended, error_event=limited)
    # After a finish action too: the failed end wins, as a failed final result does for claude.
    finish = action(message='{"score": 1, "reason": "done"}')
    path = write_lines(tmp_path / "b", [finish, limited])
    assert read("openhands", path) == Extraction(verdict=None, problem=ended, error_event=limited)
    # An answer after the error (the agent recovered) is read.
    path = write_lines(tmp_path / "c", [plan, limited, finish])
    assert read("openhands", path).verdict == Verdict(1, "done")


def test_openhands_a_message_the_agent_acted_after_is_not_its_answer(tmp_path: Path) -> None:
    plan = agent_message({"type": "text", "text": '{"score": 1, "reason": "early"}'})
    tool = action(message=None, tool_name="terminal", kind="ExecuteBashAction")
    path = write_lines(tmp_path / "a", [plan, tool, {"kind": "ObservationEvent"}])
    assert read("openhands", path) == Extraction(
        verdict=None, problem="the agent acted after its last message and printed no finish action"
    )
    # Its next message, or a finish action, is the answer again.
    last = agent_message({"type": "text", "text": '{"score": 0, "reason": "last"}'})
    path = write_lines(tmp_path / "b", [plan, tool, last])
    assert read("openhands", path).verdict == Verdict(0, "last")


def test_event_lines_at_the_length_limit_and_beyond(tmp_path: Path) -> None:
    """Lines up to MAX_EVENT_LINE characters are read; longer ones are skipped whole."""

    good = json.dumps(action(message='{"score": 1, "reason": "kept"}'))
    bad = json.dumps(action(message='{"score": 0, "reason": "overlong"}'))
    # Exactly at the limit, its line break included.
    at_limit = good + " " * (MAX_EVENT_LINE - 1 - len(good)) + "\n"
    path = tmp_path / "at-limit"
    path.write_text(at_limit, encoding="utf-8")
    assert read("openhands", path).verdict == Verdict(1, "kept")
    # A longer line that starts with a whole event is skipped, and the line after it is read.
    overlong = bad + " " * MAX_EVENT_LINE + "\n"
    path = tmp_path / "overlong"
    path.write_text(overlong + good + "\n", encoding="utf-8")
    assert read("openhands", path).verdict == Verdict(1, "kept")
    # Only the overlong line: nothing is read from it.
    path.write_text(overlong, encoding="utf-8")
    assert read("openhands", path).verdict is None
    # The last line needs no line break.
    path.write_text(good, encoding="utf-8")
    assert read("openhands", path).verdict == Verdict(1, "kept")


# --- the newest result event in plain text ------------------------------------------------------


def test_a_result_event_after_text_that_starts_with_the_word_result() -> None:
    event = {"type": "result", "subtype": "success", "is_error": False, "result": '{"score": 0}'}
    text = '"result" is what we print at the end\n' + json.dumps(event) + "\n"
    found = extract_from_text(text)
    assert found.verdict == Verdict(0, None) and found.usage_event == event
