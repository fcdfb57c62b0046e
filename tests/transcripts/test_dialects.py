"""Each built-in agent's output, as its stand-in prints it, read into a transcript.

`ok` and `error_result` replay what the real CLIs printed (tests/agents/recordings/); the
stand-ins' hand-made modes add a tool call and its result where the CLI's format has them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from eval_banana.models.result import CheckResult
from tests.harness.judge_rig import AGENT_NAMES, Rig

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "schemas" / "transcript-event.schema.json").read_text()
)
VERDICT = {"score": 1, "reason": "The stand-in was told to give 1."}


def events_of(*, rig: Rig, result: CheckResult) -> list[dict[str, Any]]:
    path = result.details["transcript_path"]
    assert path is not None, result
    lines = (rig.run_dir / path).read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    for event in events:
        jsonschema.validate(event, SCHEMA)
    return events


def run(rig: Rig, *, agent: str, mode: str, **env: str) -> CheckResult:
    rig.env.update({"STANDIN_MODE": mode, "LLM_MODEL": "openai/test-model", **env})
    return rig.run(agent=agent)


@pytest.mark.parametrize("agent", AGENT_NAMES)
def test_the_recorded_answer_is_the_transcripts_answer(rig: Rig, agent: str) -> None:
    result = run(rig, agent=agent, mode="ok")
    assert result.status == "passed", result.error_detail
    events = events_of(rig=rig, result=result)
    answers = [event for event in events if event["kind"] == "answer"]
    assert len(answers) == 1
    assert json.loads(answers[0]["text"]) == VERDICT
    assert result.details["transcript_path"] == f"checks/{rig_stem(result)}.transcript.jsonl"


def rig_stem(result: CheckResult) -> str:
    from eval_banana.core.stem import artifact_stem

    return artifact_stem(check_id=result.check_id)


@pytest.mark.parametrize("agent", AGENT_NAMES)
def test_the_recorded_failure_is_an_error_event(rig: Rig, agent: str) -> None:
    result = run(rig, agent=agent, mode="error_result")
    assert result.status == "error"
    errors = [
        event["text"] for event in events_of(rig=rig, result=result) if event["kind"] == "error"
    ]
    # Every recording is the model server's scripted HTTP 500 (or codex's "high demand").
    assert any("scripted failure" in text or "high demand" in text for text in errors), errors


# Modes whose output holds a tool call: (agent, mode, tool name, an argument's text).
TOOL_CALLS = [
    ("claude", "big", "Read", "README.md"),
    ("gemini", "big", "read_file", "file_path"),
    ("openhands", "agent_message", "terminal", "cat README.md"),
    ("codex", "big", "exec", "cat README.md"),
    # Replays real `opencode run` output: its shell tool's line and output on stderr.
    ("opencode", "tool", "bash", "ls -a"),
]


@pytest.mark.parametrize(("agent", "mode", "tool", "argument"), TOOL_CALLS)
def test_tool_calls_and_their_results_are_kept(
    rig: Rig, agent: str, mode: str, tool: str, argument: str
) -> None:
    result = run(rig, agent=agent, mode=mode, STANDIN_BYTES="2000")
    assert result.status == "passed", result.error_detail
    events = events_of(rig=rig, result=result)
    calls = [event for event in events if event["kind"] == "tool_call"]
    assert calls and calls[0]["tool"] == tool
    assert argument in calls[0]["arguments"]
    results = [event for event in events if event["kind"] == "tool_result"]
    assert results and results[0]["tool"] == tool
    kinds = [event["kind"] for event in events]
    assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("answer")
    answer = next(event for event in events if event["kind"] == "answer")
    if agent != "codex":  # codex's stdout in this mode is prose after its final message
        assert json.loads(answer["text"]) == VERDICT


def test_usage_is_an_event(rig: Rig) -> None:
    result = run(rig, agent="claude", mode="ok")
    usage = [
        event["usage"] for event in events_of(rig=rig, result=result) if event["kind"] == "usage"
    ]
    assert usage and usage[0]["input_tokens"] == 120 and "cost_usd" in usage[0]


def test_transcripts_off_writes_none(rig: Rig) -> None:
    rig.env["STANDIN_MODE"] = "ok"
    result = rig.run(agent="claude", harness={"transcripts": False})
    assert result.status == "passed"
    assert result.details["transcript_path"] is None
    assert not list((rig.run_dir / "checks").glob("*.transcript.jsonl"))


def test_each_text_is_cut_to_transcript_max_chars(rig: Rig) -> None:
    reason = "r" * 500
    rig.env.update({"STANDIN_MODE": "big", "STANDIN_BYTES": "3000", "STANDIN_REASON": reason})
    result = rig.run(agent="claude", harness={"transcript_max_chars": 100})
    events = events_of(rig=rig, result=result)
    texts = [event.get("text") or event.get("arguments") or "" for event in events]
    assert max(len(text) for text in texts) == 100
    answer = next(event for event in events if event["kind"] == "answer")
    # An answer keeps its end, where the verdict is; the cut says how much was left out.
    assert (
        answer["text"].endswith('"}')
        and answer["cut"] == len(json.dumps({"score": 1, "reason": reason})) - 100
    )


def test_a_secret_is_masked_even_where_a_cut_falls_inside_it(rig: Rig) -> None:
    secret = "sk-live-0123456789abcdef"
    # The answer keeps its last 60 characters: the cut falls in the middle of the secret.
    reason = "x" * 30 + secret + "y" * 45
    rig.env.update({"STANDIN_MODE": "ok", "STANDIN_REASON": reason, "DEMO_API_KEY": secret})
    result = rig.run(agent="claude", harness={"transcript_max_chars": 60})
    path = rig.run_dir / result.details["transcript_path"]
    text = path.read_text(encoding="utf-8")
    assert "***" in text
    for size in range(6, len(secret) + 1):
        assert secret[-size:] not in text and secret[:size] not in text


def test_codex_tokens_used_that_are_no_count_leave_no_usage_and_no_traceback() -> None:
    """'²' passes str.isdigit() and int() refuses it; so does a run of 5,000 digits."""
    from eval_banana.core.masking import NO_SECRETS
    from eval_banana.transcripts.codexdialect import Codex
    from eval_banana.transcripts.reading import Line
    from eval_banana.transcripts.sink import Sink

    for told, usage in (("1,234", [{"total_tokens": 1234}]), ("\u00b2", []), ("9" * 5000, [])):
        sink = Sink(max_chars=1000, masker=NO_SECRETS)
        parser = Codex(sink=sink)
        for text in ("--------", "header", "--------", "tokens used", told):
            parser.feed(Line(text=text, size=len(text)))
        parser.finish()
        found = [event.get("usage") for event in sink.seen() if event.get("kind") == "usage"]
        assert found == usage, told


def _strict_json(line: str) -> Any:
    """json.loads as every other JSON reader reads: NaN and Infinity are no JSON."""

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(line, parse_constant=refuse)


@pytest.mark.parametrize(
    ("cost", "tokens"),
    [("NaN", '"input_tokens":3'), ("Infinity", '"input_tokens":3'), ("-0.5", '"input_tokens":-3')],
)
def test_a_cost_or_count_that_is_no_amount_stays_out_of_the_transcript(
    tmp_path: Path, cost: str, tokens: str
) -> None:
    """A claude result may say `"total_cost_usd": NaN` (Python's json writes it) or a negative
    amount: the transcript leaves it out, as details.usage does, so its file stays JSON (and
    the page's JSON.parse can open it)."""
    from eval_banana.core.masking import NO_SECRETS
    from eval_banana.transcripts.record import transcript_events, write_transcript

    verdict = json.dumps(json.dumps(VERDICT))
    stdout = tmp_path / "stdout.txt"
    stdout.write_text(
        f'{{"type":"result","subtype":"success","is_error":false,"result":{verdict},'
        f'"usage":{{{tokens},"output_tokens":4}},"total_cost_usd":{cost}}}\n'
    )
    events = transcript_events(
        dialect="claude", stdout_path=stdout, stderr_path=None, max_chars=1000, masker=NO_SECRETS
    )
    target = tmp_path / "t.transcript.jsonl"
    write_transcript(events=events, target=target)
    lines = [_strict_json(line) for line in target.read_text(encoding="utf-8").splitlines()]
    for event in lines:
        jsonschema.validate(event, SCHEMA)
    (usage,) = [event["usage"] for event in lines if event["kind"] == "usage"]
    expected = (
        {"output_tokens": 4} if tokens.endswith("-3") else {"input_tokens": 3, "output_tokens": 4}
    )
    assert usage == expected
