"""Verdict extraction: every rule, every dialect's canaries, linearity."""

from __future__ import annotations

import json
import re
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_banana.harness import scan, streamscan
from eval_banana.harness.eventlines import MAX_EVENT_LINE, OverlongLine, lines_from_end
from eval_banana.harness.prompt import build_prompt
from eval_banana.harness.scan import scan_text
from eval_banana.harness.usage import read_usage, usage_cost, usage_tokens
from eval_banana.harness.verdict import extract_from_text, extract_verdict
from eval_banana.harness.verdictobjects import ScanResult, Verdict

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def verdict_of(text: str) -> Verdict | None:
    return extract_from_text(text).verdict


# --- Step B: the last valid verdict in text ------------------------------------------------------


def test_two_verdicts_the_later_wins() -> None:
    text = '{"score": 1, "reason": "first"}\nthen\n{"score": 0, "reason": "second"}'
    assert verdict_of(text) == Verdict(0, "second")


@pytest.mark.parametrize(
    "later",
    [
        '{"score": 2, "reason": "bad"}',
        '{"score": "high"}',
        '{"score": null}',
        '{"score": 2, "score": 3}',
        '{"reason": "no score here"}',
        "{not json at all}",
        "{",
        "}",
        '{"score": 0 or 1, "reason": "<one or two sentences>"}',
    ],
)
def test_a_later_object_that_is_no_verdict_does_not_hide_an_earlier_verdict(later: str) -> None:
    assert verdict_of(f'{{"score": 1, "reason": "ok"}} and later {later}') == Verdict(1, "ok")


@pytest.mark.parametrize(
    ("later", "why"),
    [
        ('{"score": true}', '"score" was true, not the JSON integer 0 or 1'),
        ('{"score": false, "reason": "missing"}', '"score" was false, not the JSON integer'),
        ('{"score": "0"}', '"score" was "0", not the JSON integer 0 or 1'),
        ('{"score": 1.0}', '"score" was 1.0, not the JSON integer 0 or 1'),
        ('{"score": 0.0}', '"score" was 0.0, not the JSON integer 0 or 1'),
        ('{"score": 0, "reason": "x", "score": 0}', '"score" was given twice'),
        ('{"score": 2, "score": 0}', '"score" was given twice'),
        ('{"score": 0, "reason": "a", "reason": "b"}', '"reason" was given twice'),
        ('{"score": 0, "reason": ["no install"]}', '"reason" was list, not a string or null'),
        ('{"score": 1, "reason": 5}', '"reason" was int, not a string or null'),
    ],
)
def test_a_later_malformed_verdict_ends_the_search(later: str, why: str) -> None:
    # eval-banana read these as the final 0 (or 1): eb refuses them, and must not let the
    # earlier draft pass in their place.
    found = extract_from_text(f'Draft: {{"score": 1, "reason": "ok"}}\nFinal: {later}')
    assert found.verdict is None
    assert found.malformed
    assert found.problem is not None
    assert found.problem.startswith(f"the judge's last verdict is malformed: {why}")


def test_a_malformed_verdict_before_a_valid_one_is_superseded() -> None:
    found = extract_from_text('{"score": true} then {"score": 0, "reason": "final"}')
    assert found.verdict == Verdict(0, "final")
    assert not found.malformed


def test_a_malformed_outer_verdict_is_not_replaced_by_a_nested_criterion() -> None:
    text = json.dumps(
        {
            "score": 0,
            "reason": {"summary": "tests missing", "criteria": [{"name": "a", "score": 1}]},
        }
    )
    found = extract_from_text(text)
    assert found.verdict is None
    assert found.malformed
    assert found.problem is not None and '"reason" was dict' in found.problem
    # Nested in an object that is no verdict at all, a verdict is still found.
    assert verdict_of('{"score": 2, "items": [{"score": 1, "reason": "in"}]}') == Verdict(1, "in")


@pytest.mark.parametrize("score", ["true", '"1"', "1.0", "false", "0.0", "1e0", "null"])
def test_scores_other_than_json_integers_are_rejected(score: str) -> None:
    found = extract_from_text(f'{{"score": {score}, "reason": "x"}}')
    assert found.verdict is None
    assert found.problem is not None and "not the JSON integer 0 or 1" in found.problem


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('{"score": 0, "reason": "wrong total", "score": 1}', "score"),
        ('{"score": 1, "reason": "fine", "reason": "the total is wrong"}', "reason"),
        ('{"result": {"score": 0, "score": 1}}', "score"),
    ],
)
def test_a_verdict_that_names_a_key_twice_is_no_verdict(text: str, key: str) -> None:
    # json keeps the last value: `"score": 0, ..., "score": 1` passed on the judge's own denial.
    found = extract_from_text(f"My verdict: {text}")
    assert found.verdict is None
    assert found.problem == (
        f'the judge\'s last verdict is malformed: "{key}" was given twice, so which one the '
        "judge meant is unknown; no earlier or nested object stands in for it"
    )
    # Another key twice is the judge's own business: the verdict stands.
    assert verdict_of('{"score": 1, "reason": "ok", "notes": 1, "notes": 2}') == Verdict(1, "ok")


def test_reason_rules() -> None:
    assert verdict_of('{"score": 1}') == Verdict(1, None)
    assert verdict_of('{"score": 0, "reason": null, "extra": [1]}') == Verdict(0, None)
    assert verdict_of('{"score": 1, "reason": 5}') is None
    assert verdict_of('{"score": 1, "reason": ["a"]}') is None


def test_nested_verdicts() -> None:
    # A verdict nested in a larger (non-verdict) object is found.
    assert verdict_of('{"result": {"score": 1, "reason": "inner"}, "n": 2}') == Verdict(1, "inner")
    # If the larger object is itself a valid verdict, it wins: it ends later.
    outer = '{"score": 0, "reason": "outer", "detail": {"score": 1, "reason": "inner"}}'
    assert verdict_of(outer) == Verdict(0, "outer")
    # Nested in an object that never closes.
    assert verdict_of('{"a": [{"score": 1, "reason": "kept"}] oops') == Verdict(1, "kept")


def test_pretty_printed_and_fenced() -> None:
    pretty = 'Here it is:\n```json\n{\n  "score": 1,\n  "reason": "multi\\nline"\n}\n```\n'
    assert verdict_of(pretty) == Verdict(1, "multi\nline")


def test_braces_inside_strings() -> None:
    text = '{"score": 0, "reason": "saw {braces} and } and { and \\" quotes"}'
    assert verdict_of(text) == Verdict(0, 'saw {braces} and } and { and " quotes')


def test_stray_quote_before_the_verdict() -> None:
    # eval-banana's global string tracking missed this; per-candidate decoding finds it.
    text = 'The token " is odd. {"score": 1, "reason": "found"}'
    assert verdict_of(text) == Verdict(1, "found")
    text = 'He said "hi" and then " again {"score": 0, "reason": "found"} done'
    assert verdict_of(text) == Verdict(0, "found")
    assert verdict_of('{ " {"score": 1, "reason": "inside"}') == Verdict(1, "inside")


def test_prompt_echo_is_never_a_verdict() -> None:
    prompt = build_prompt(description="D", instructions="I")
    assert extract_from_text(prompt + "\n" + prompt).verdict is None


def test_nothing_at_all() -> None:
    found = extract_from_text("no json here")
    assert found.verdict is None
    assert found.problem == 'no JSON object with a "score" key was found'


# --- Step A: the terminal result event ------------------------------------------------------------


def _event(**fields: object) -> str:
    return json.dumps({"type": "result", "subtype": "success", "is_error": False, **fields})


def test_verdict_inside_quoted_result_string() -> None:
    # Step B alone cannot see it (it is JSON-escaped); Step A reads the result string.
    text = '{"type": "system"}\n' + _event(result='Done.\n{"score": 1, "reason": "in result"}')
    assert verdict_of(text) == Verdict(1, "in result")


def test_result_event_beats_earlier_lines() -> None:
    early = '{"score": 1, "reason": "from a tool result"}'
    text = early + "\n" + _event(result='{"score": 0, "reason": "final"}')
    assert verdict_of(text) == Verdict(0, "final")


def test_result_without_verdict_is_no_verdict_even_if_earlier_lines_have_one() -> None:
    text = '{"score": 1, "reason": "tool"}\n' + _event(result="I could not decide.")
    found = extract_from_text(text)
    assert found.verdict is None
    assert found.problem is not None and "final result text" in found.problem


def test_non_string_result_is_no_verdict() -> None:
    assert verdict_of(_event(result={"score": 1})) is None


def test_only_the_newest_result_event_counts() -> None:
    # Stricter than eval-banana: a failed newest result is an error, even after an older success.
    older = _event(result='{"score": 1, "reason": "old"}')
    newest = _event(subtype="error_max_turns", is_error=True)
    found = extract_from_text(older + "\n" + newest)
    assert found.verdict is None
    assert found.problem is not None and "error_max_turns" in found.problem
    # A plain verdict line before a failed result does not pass either.
    assert verdict_of('{"score": 1}\n' + newest) is None
    # is_error must be exactly false.
    assert verdict_of(_event(is_error=0, result='{"score": 1}')) is None
    assert verdict_of(_event(is_error=True, result='{"score": 1}')) is None


# --- Dialect canaries (known pass / known fail per dialect) --------------------------------------

CANARIES = [
    ("claude", "claude"),
    ("gemini", "gemini"),
    ("codex", "codex"),
    ("openhands", "openhands"),
    ("text", "text"),
]


@pytest.mark.parametrize(("dialect", "prefix"), CANARIES)
def test_dialect_canaries(dialect: str, prefix: str) -> None:
    passed = extract_verdict(dialect=dialect, stdout_path=FIXTURES / f"{prefix}_pass.stdout")
    failed = extract_verdict(dialect=dialect, stdout_path=FIXTURES / f"{prefix}_fail.stdout")
    assert passed.verdict == Verdict(1, "The README documents the install command.")
    assert failed.verdict == Verdict(0, "The README never mentions how to install the tool.")


def test_claude_failure_canaries() -> None:
    for name in ("claude_error_result", "claude_error_after_success"):
        found = extract_verdict(dialect="claude", stdout_path=FIXTURES / f"{name}.stdout")
        assert found.verdict is None, name
        assert found.problem is not None and "not a success" in found.problem


def test_gemini_needs_its_dialect_and_honours_error_status() -> None:
    # eval-banana's plain extractor never finds gemini's verdict ...
    assert (
        extract_verdict(dialect="text", stdout_path=FIXTURES / "gemini_pass.stdout").verdict is None
    )
    # ... and an error result is no verdict even though assistant text was streamed.
    found = extract_verdict(dialect="gemini", stdout_path=FIXTURES / "gemini_error_result.stdout")
    assert found.verdict is None
    assert found.problem is not None and '"error"' in found.problem


def test_gemini_ignores_the_user_echo(tmp_path: Path) -> None:
    lines = [
        {"type": "message", "role": "user", "content": '{"score": 1, "reason": "echo"}'},
        {"type": "message", "role": "assistant", "content": '{"score": ', "delta": True},
        {"type": "message", "role": "assistant", "content": '0, "reason": "split"}', "delta": True},
        {"type": "result", "status": "success", "stats": {"total_tokens": 5}},
    ]
    path = tmp_path / "out"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    found = extract_verdict(dialect="gemini", stdout_path=path)
    assert found.verdict == Verdict(0, "split")
    assert read_usage(dialect="gemini", usage_event=found.usage_event, stderr_path=None) == {
        "dialect": "gemini",
        "total_tokens": 5,
    }


def test_openhands_reads_the_finish_event_not_the_wrapped_panel() -> None:
    path = FIXTURES / "openhands_long_pass.stdout"
    found = extract_verdict(dialect="openhands", stdout_path=path)
    assert found.verdict is not None and found.verdict.score == 1
    assert found.verdict.reason is not None and found.verdict.reason.endswith("asks for.")
    # eval-banana's plain rule alone cannot find it: the panel wraps the JSON.
    assert extract_verdict(dialect="text", stdout_path=path).verdict is None


def test_empty_stdout_is_no_verdict() -> None:
    found = extract_verdict(dialect="claude", stdout_path=None)
    assert found.verdict is None and found.problem == "the agent printed nothing on stdout"


# --- usage ----------------------------------------------------------------------------------------


def test_usage_per_dialect() -> None:
    claude = extract_verdict(dialect="claude", stdout_path=FIXTURES / "claude_pass.stdout")
    usage = read_usage(dialect="claude", usage_event=claude.usage_event, stderr_path=None)
    # Real Claude Code output for one model answer of 120 input and 30 output tokens.
    assert usage == {
        "dialect": "claude",
        "input_tokens": 120,
        "output_tokens": 30,
        "total_tokens": 150,
        "cost_usd": 0.00135,
    }
    assert usage_tokens(usage) == 150
    assert usage_cost(usage) == 0.00135
    gemini = extract_verdict(dialect="gemini", stdout_path=FIXTURES / "gemini_pass.stdout")
    usage = read_usage(dialect="gemini", usage_event=gemini.usage_event, stderr_path=None)
    assert usage == {
        "dialect": "gemini",
        "input_tokens": 120,
        "output_tokens": 30,
        "total_tokens": 150,
    }
    codex = read_usage(
        dialect="codex", usage_event=None, stderr_path=FIXTURES / "codex_pass.stderr"
    )
    assert codex == {"dialect": "codex", "total_tokens": 150}
    for dialect in ("openhands", "text"):
        assert read_usage(dialect=dialect, usage_event=None, stderr_path=None) is None
    assert usage_tokens(None) is None


def test_codex_total_on_the_same_line(tmp_path: Path) -> None:
    stderr = tmp_path / "err"
    stderr.write_text("tokens used: 1,234\nmore\ntokens used\n\n  5_678\n")
    assert read_usage(dialect="codex", usage_event=None, stderr_path=stderr) == {
        "dialect": "codex",
        "total_tokens": 5678,
    }


def test_codex_digits_that_are_no_count_of_tokens_are_passed_over(tmp_path: Path) -> None:
    """'²' passes str.isdigit() and int() refuses it; so does a run of 5,000 digits."""
    stderr = tmp_path / "err"
    stderr.write_text(f"tokens used: 42\ntokens used: \u00b2\ntokens used\n{'9' * 5000}\n")
    assert read_usage(dialect="codex", usage_event=None, stderr_path=stderr) == {
        "dialect": "codex",
        "total_tokens": 42,
    }


# --- linear time: these inputs took eval-banana tens of seconds -----------------------------------


def test_ten_thousand_unmatched_closing_braces() -> None:
    text = "}" * 10_000 + '{"score": 1, "reason": "end"}'
    assert verdict_of(text) == Verdict(1, "end")


def test_prose_with_unbalanced_braces_and_quotes() -> None:
    text = ('Looking { at "files } and {braces " } ' * 4000) + '{"score": 0, "reason": "end"}'
    assert len(text) > 128_000
    assert verdict_of(text) == Verdict(0, "end")


def _decode_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Where the scan runs the JSON decoder from, as it does it (counted work, not time)."""
    calls: list[int] = []
    original = scan._attempt

    def counting(*, text: str, start: int) -> tuple[str, int, str]:
        calls.append(start)
        return original(text=text, start=start)

    monkeypatch.setattr(scan, "_attempt", counting)
    return calls


def test_failed_decodes_are_not_repeated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted work: each failed region's nested starts are skipped, not decoded again."""
    calls = _decode_calls(monkeypatch)
    nested = '{"a": ' * 3000 + '{"score": 1, "reason": "deep"}'  # never closed
    assert scan_text(nested).verdict == Verdict(1, "deep")
    assert len(calls) < 100  # not one decode per '{' (3001 of them)
    calls.clear()
    quoted = '{"a{"a' * 20_000 + ' {"score": 1}'
    assert scan_text(quoted).verdict == Verdict(1, None)
    assert len(calls) <= 2 * 40_001


@pytest.mark.parametrize(
    "line",
    ['{"k"', '{"k": x}', '{"k" {', '{"a\x01": 1}', '{"bad \\q escape": 1}', '{ "k"  ', '{"k": }'],
)
def test_braces_that_fail_within_their_first_key_are_never_decoded(
    monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    """Counted work: log lines dense with `{"` are passed over without running the decoder, one
    `{` at a time (50 MB of them took a minute)."""
    calls = _decode_calls(monkeypatch)
    text = (line + "\n") * 20_000 + '{"score": 0, "reason": "end"}'
    assert scan_text(text).verdict == Verdict(0, "end")
    assert len(calls) <= 2
    scanner = streamscan.StreamScanner(step=1000, reach=1000)
    scanner.feed(text)
    assert scanner.finish().verdict == Verdict(0, "end")


def test_deeply_nested_input_does_not_crash() -> None:
    text = "[" * 100_000 + '{"score": 1, "reason": "x"}' + "]" * 100_000
    assert verdict_of(text) == Verdict(1, "x")
    text = '{"a":' * 100_000 + '{"score": 1}'
    assert verdict_of(text) == Verdict(1, None)


def test_large_stream_json_with_result_event(tmp_path: Path) -> None:
    path = tmp_path / "stream.jsonl"
    event = json.dumps(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "x { " * 200}]}}
    )
    with path.open("w") as handle:
        for _ in range(5000):  # ~4 MB
            handle.write(event + "\n")
        handle.write(_event(result='{"score": 1, "reason": "big"}') + "\n")
    assert extract_verdict(dialect="claude", stdout_path=path).verdict == Verdict(1, "big")
    # Without the result event the whole stream goes through Step B, still linearly.
    text = path.read_text().rsplit("\n", 2)[0] + '\n{"score": 0, "reason": "plain"}\n'
    assert verdict_of(text) == Verdict(0, "plain")


def test_claude_dialect_without_any_result_event_falls_back_to_step_b(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_text('{"type": "system", "subtype": "init"}\n{"score": 1, "reason": "plain"}\n')
    assert extract_verdict(dialect="claude", stdout_path=path).verdict == Verdict(1, "plain")
    # ... but never when a result event exists, whatever it says.
    path.write_text('{"score": 1}\n' + _event(subtype="error_during_execution", is_error=True))
    assert extract_verdict(dialect="claude", stdout_path=path).verdict is None


# --- Reading a claude stream from its end ---------------------------------------------------------

line_bytes = st.binary(max_size=40).map(lambda data: data.replace(b"\n", b"").replace(b"\r", b""))


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(line_bytes, max_size=12),
    breaks=st.lists(st.sampled_from([b"\n", b"\r", b"\r\n"]), min_size=12, max_size=12),
    block=st.integers(min_value=1, max_value=17),
)
def test_lines_from_end_is_the_forward_split_reversed(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], breaks: list[bytes], block: int
) -> None:
    data = b"".join(line + brk for line, brk in zip(lines, breaks, strict=False))
    path = tmp_path_factory.mktemp("lines") / "out"
    path.write_bytes(data)
    expected = list(reversed(re.split(rb"[\r\n]", data)))
    assert list(lines_from_end(path=path, block=block)) == expected


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(
        st.sampled_from([b"ab", b'"result"', b'x"result"y', b"resu", b'lt"']), max_size=6
    )
    .map(b"".join)
    .flatmap(lambda one: st.lists(st.just(one) | line_bytes, max_size=5)),
    block=st.integers(min_value=1, max_value=7),
    over_block=st.integers(min_value=0, max_value=6),
)
def test_lines_from_end_notes_the_words_a_line_too_long_to_hold_has(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], block: int, over_block: int
) -> None:
    # The limit is never below a block (a line within one block is always read).
    max_line = block + over_block
    path = tmp_path_factory.mktemp("lines") / "out"
    path.write_bytes(b"\n".join(lines))
    expected = [
        OverlongLine(holds=frozenset({'"result"'} if b'"result"' in line else set()))
        if len(line) > max_line
        else line
        for line in reversed(b"\n".join(lines).split(b"\n"))
    ]
    found = lines_from_end(path=path, block=block, max_line=max_line, words=('"result"',))
    assert list(found) == expected


def test_a_result_line_longer_than_many_blocks_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "stream.jsonl"
    long_result = _event(result="x" * 300_000 + ' {"score": 1, "reason": "long"}')
    path.write_text('{"type": "system"}\n' + long_result + "\n" + '{"type": "user"}\n')
    assert extract_verdict(dialect="claude", stdout_path=path).verdict == Verdict(1, "long")


def test_a_final_result_too_long_to_read_is_no_verdict_whatever_came_before(
    tmp_path: Path,
) -> None:
    # A draft success, then the final result on a line longer than MAX_EVENT_LINE.
    draft = _event(result='{"score": 1, "reason": "draft"}')
    final = _event(result="x" * MAX_EVENT_LINE + ' {"score": 0, "reason": "final"}')
    path = tmp_path / "stream.jsonl"
    path.write_text(draft + "\n" + final + "\n")
    found = extract_verdict(dialect="claude", stdout_path=path)
    assert found.verdict is None
    assert found.problem == (
        'a line holding "result" is longer than the 8,388,608 characters an event line is read '
        "whole from: it may be the final result event, and no earlier one stands in for it; "
        "ask the agent for a shorter final answer, with the verdict as a small JSON object at "
        "its end"
    )
    # A long line that cannot be a result event hides nothing.
    path.write_text(draft + "\n" + "y" * MAX_EVENT_LINE + "\n")
    assert extract_verdict(dialect="claude", stdout_path=path).verdict == Verdict(1, "draft")


@pytest.mark.parametrize(
    "events",
    [
        ["ok1", "ok0"],
        ["ok0", "error"],
        ["error", "ok1"],
        ["ok1", "trailing-text"],
    ],
)
def test_claude_file_reader_agrees_with_the_in_memory_reader(
    tmp_path: Path, events: list[str]
) -> None:
    # The backwards file reader and the forward text reader must pick the same newest event.
    rendered = {
        "ok1": _event(result='{"score": 1, "reason": "a"}'),
        "ok0": _event(result='{"score": 0, "reason": "b"}'),
        "error": _event(subtype="error_max_turns", is_error=True),
        "trailing-text": 'done, "result" mentioned in prose',
    }
    filler = json.dumps({"type": "assistant", "text": '"result" {' * 50})
    text = "\n".join(part for name in events for part in (filler, rendered[name])) + "\n"
    path = tmp_path / "stream.jsonl"
    path.write_text(text)
    from_file = extract_verdict(dialect="claude", stdout_path=path)
    in_memory = extract_from_text(text)
    assert (from_file.verdict, from_file.problem) == (in_memory.verdict, in_memory.problem)


# --- Step B's shortcut for braces that cannot open an object -------------------------------------

_PIECES = st.sampled_from(
    [
        "{",
        "}",
        "[",
        "]",
        '"',
        "\\",
        ":",
        ",",
        " ",
        "\n",
        "\t",
        "x",
        "1",
        "0",
        "score",
        '"score"',
        '{"score": 1}',
        '{"score": 0, "reason": "r"}',
        '{ "score" : 1 }',
        '{"score": true}',
        '{"a": {"score": 1}}',
        "\\u0073",
        '{"reason": "x"}',
        "{ x",
        "{}",
        '{"k"\n',
        '{"k": x}',
        '{"k": ',
        "\x01",
        '"\\q',
        "\\u00",
        "-1",
        "NaN",
    ]
)


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(_PIECES, max_size=40))
def test_the_non_object_shortcut_never_changes_step_b(pieces: list[str]) -> None:
    text = "".join(pieces)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(scan, "SHORTCUT_NON_OBJECTS", False)
        without = scan_text(text)
    assert scan_text(text) == without


@settings(max_examples=600, deadline=None)
@given(
    pieces=st.lists(_PIECES, max_size=60),
    step=st.integers(min_value=1, max_value=12),
    splits=st.lists(st.integers(min_value=0, max_value=400), max_size=6),
)
def test_the_streaming_scan_agrees_with_the_whole_text_scan(
    pieces: list[str], step: int, splits: list[int]
) -> None:
    # Every verdict these pieces can build is shorter than the reach, so windowing must not
    # change the answer, however the text is cut into windows and into fed pieces.
    text = "".join(pieces)
    scanner = streamscan.StreamScanner(step=step, reach=len(text) + 1)
    previous = 0
    for cut in sorted(split % (len(text) + 1) for split in splits):
        scanner.feed(text[previous:cut])
        previous = cut
    scanner.feed(text[previous:])
    assert scanner.finish() == scan_text(text)


def test_a_verdict_on_a_window_boundary_is_found(tmp_path: Path) -> None:
    verdict = '{"score": 1, "reason": "across"}'
    for offset in range(-len(verdict), 2):
        text = "x" * (64 + offset) + verdict + " tail {"
        scanner = streamscan.StreamScanner(step=64, reach=64)
        scanner.feed(text)
        assert scanner.finish().verdict == Verdict(score=1, reason="across"), offset


def test_a_later_window_s_verdict_wins_even_early_in_its_window() -> None:
    # Windows of 64: the old verdict starts late in the second window (at 100), the new one early
    # in the third (at 130). Only positions counted from the start of the text order them.
    old = '{"score": 0, "reason": "old"}'
    new = '{"score": 1, "reason": "new"}'
    text = "x" * 100 + old + "y" * (130 - 100 - len(old)) + new + "z" * 300
    for piece in (1, 7, 64, len(text)):
        scanner = streamscan.StreamScanner(step=64, reach=64)
        for start in range(0, len(text), piece):
            scanner.feed(text[start : start + piece])
        assert scanner.finish() == scan_text(text), piece
        assert scan_text(text).verdict == Verdict(score=1, reason="new")


def test_a_malformed_verdict_in_a_later_window_ends_the_search() -> None:
    draft = '{"score": 1, "reason": "draft"}'
    final = '{"score": false, "reason": "final"}'
    text = "x" * 100 + draft + "y" * 60 + final + "z" * 300
    for piece in (1, 7, 64, len(text)):
        scanner = streamscan.StreamScanner(step=64, reach=64)
        for start in range(0, len(text), piece):
            scanner.feed(text[start : start + piece])
        found = scanner.finish()
        assert found == scan_text(text), piece
        assert found.verdict is None and found.malformed
    # The other way round, the later valid verdict stands.
    text = "x" * 100 + final + "y" * 60 + draft + "z" * 300
    scanner = streamscan.StreamScanner(step=64, reach=64)
    scanner.feed(text)
    assert scanner.finish().verdict == Verdict(score=1, reason="draft")


def _gemini_answer(text: str) -> str:
    return json.dumps({"type": "message", "role": "assistant", "content": text, "delta": True})


def _openhands_finish(text: str) -> str:
    action = {"kind": "FinishAction", "message": text}
    return json.dumps({"kind": "ActionEvent", "tool_name": "finish", "action": action})


@pytest.mark.parametrize(
    ("dialect", "lines"),
    [
        ("text", ['Draft: {"score": 1, "reason": "d"}', 'Final: {"score": "0"}']),
        (
            "claude",
            [
                _event(
                    result='Draft: {"score": 1, "reason": "d"} Final: {"score": false}',
                    # The constrained answer never stands in for a malformed one in the text.
                    structured_output={"score": 1, "reason": "d"},
                )
            ],
        ),
        ("gemini", [_gemini_answer('{"score": 1} then {"score": 0, "score": 0}')]),
        ("openhands", [_openhands_finish('{"score": 1} then {"score": 0, "reason": [1]}')]),
    ],
)
def test_every_dialect_refuses_to_let_a_draft_stand_in_for_a_malformed_final_verdict(
    tmp_path: Path, dialect: str, lines: list[str]
) -> None:
    path = tmp_path / "stdout.txt"
    path.write_text("\n".join(lines) + "\n")
    found = extract_verdict(dialect=dialect, stdout_path=path)
    assert found.verdict is None, found
    assert found.malformed
    assert found.problem is not None and "last verdict is malformed" in found.problem


def test_a_file_with_bytes_that_are_not_utf8_is_still_scanned(tmp_path: Path) -> None:
    path = tmp_path / "stdout.txt"
    path.write_bytes(
        b"\xff\xfe broken \xc3 bytes " + b'{"score": 1, "reason": "ok"}' + b" \xe2\x82"
    )
    assert streamscan.scan_file(path).verdict == Verdict(score=1, reason="ok")


@pytest.mark.parametrize("dialect", ["text", "codex", "claude", "gemini", "openhands"])
def test_every_dialect_reads_a_large_output_in_bounded_memory(tmp_path: Path, dialect: str) -> None:
    # 7 MB of stream-json events (braces and near-verdicts inside strings), a 9 MB line with no
    # newline inside, and no result event: each dialect reads it all, in bounded memory.
    import tracemalloc

    path = tmp_path / "stdout.txt"
    event = json.dumps(
        {"type": "assistant", "text": 'code {x} and {"score": 2} and { "a": [1, {"b": 2}] }' * 20}
    )
    with path.open("w") as handle:
        for index in range(6_000):
            handle.write(event + "\n")
            if index == 3_000:
                handle.write('{"score": 0, "reason": "the middle one"}\n')
                handle.write("x" * (9 << 20) + "\n")
    assert path.stat().st_size > 16_000_000
    tracemalloc.start()
    found = extract_verdict(dialect=dialect, stdout_path=path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    if dialect in ("text", "codex", "claude"):
        assert found.verdict == Verdict(score=0, reason="the middle one")
    else:
        assert found.verdict is None  # these read only their own event shapes
    assert peak < 24 * 1024 * 1024, f"peak {peak / 1e6:.0f} MB"


def _peak_bytes(action: Callable[[], object]) -> tuple[object, int]:
    """What `action` returned, and the most memory Python held for it at any moment."""
    tracemalloc.start()
    try:
        found = action()
        return found, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_stream_scanner_holds_no_more_than_its_window() -> None:
    # The small, fast form of the 50 MB memory tests (which mutation runs leave out): with
    # 1,000-character windows, a megabyte fed in pieces must never be held at once.
    def feed_a_megabyte() -> object:
        scanner = streamscan.StreamScanner(step=1000, reach=1000)
        for _ in range(10_000):
            scanner.feed("x" * 99 + "\n")
        scanner.feed('{"score": 1, "reason": "at the end"}\n')
        return scanner.finish()

    found, peak = _peak_bytes(feed_a_megabyte)
    assert found == ScanResult(verdict=Verdict(score=1, reason="at the end"), problem=None)
    assert peak < 50_000


def test_a_file_is_scanned_a_block_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    filler = "a line of output without braces\n" * 32_768  # 1 MiB
    with path.open("w", encoding="utf-8") as handle:
        for _ in range(13):
            handle.write(filler)
        handle.write('{"score": 0, "reason": "the last line"}\n')
    found, peak = _peak_bytes(lambda: streamscan.scan_file(path=path))
    assert found == ScanResult(verdict=Verdict(score=0, reason="the last line"), problem=None)
    # The scanner's window (step + reach) and a block or two, never the whole 13 MiB file.
    assert peak < streamscan.STREAM_STEP + streamscan.STREAM_REACH + 12 * streamscan._READ_BYTES
