"""An object too long for the streaming scan to read whole never lets an earlier verdict win."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_banana.harness.scan import scan_text
from eval_banana.harness.streamscan import StreamScanner
from eval_banana.harness.verdictobjects import ScanResult, Verdict
from tests.conftest import EbResult

UNREAD = 'may hold a "score" key but is longer than the 64 characters'
DRAFT = '{"score": 1, "reason": "draft"}\n'


def streamed(text: str, *, piece: int = 7) -> ScanResult:
    """`text` scanned in windows of 64 characters, fed `piece` characters at a time."""
    scanner = StreamScanner(step=64, reach=64)
    for start in range(0, len(text), piece):
        scanner.feed(text[start : start + piece])
    return scanner.finish()


def _long(obj: dict[str, object]) -> str:
    return json.dumps(obj) + "\n"


EVIDENCE = ["an excerpt of a file, quoted " + str(index) for index in range(10)]


@pytest.mark.parametrize("piece", [1, 7, 50])
@pytest.mark.parametrize(
    "final",
    [
        _long({"evidence": EVIDENCE, "score": 0, "reason": "final"}),
        _long({"x": 1, "inner": {"score": 0, "evidence": EVIDENCE}}),
        # The key spelled with escapes, and an escaped quote in the long string before it.
        '{"evidence": "' + "q" * 100 + '\\" and \\\\", "\\u0073core" : 0}\n',
    ],
    ids=["score last", "nested long verdict", "escaped key"],
)
def test_a_long_object_holding_a_score_after_the_last_verdict_is_an_error(
    final: str, piece: int
) -> None:
    assert scan_text(DRAFT + final).verdict == Verdict(0, "final") or "final" not in final
    found = streamed(DRAFT + final, piece=piece)
    assert found.verdict is None
    assert found.problem is not None and UNREAD in found.problem, found.problem
    # A verdict printed after it is read as usual.
    after = '{"score": 0, "reason": "after"}'
    assert streamed(DRAFT + final + after, piece=piece).verdict == Verdict(0, "after")


@pytest.mark.parametrize(
    "final",
    [
        # A long object without a score key of its own: the verdict nested in it is read.
        _long({"log": EVIDENCE, "verdict": {"score": 0, "reason": "nested"}}),
        # "score" only as a value, or as a key of a short object inside it.
        _long({"log": EVIDENCE, "metric": "score", "parts": [{"score": 5}]}),
        # Never closed: no object at all.
        '{"evidence": "' + "q" * 200,
    ],
)
def test_a_long_object_without_a_score_key_of_its_own_hides_nothing(final: str) -> None:
    assert streamed(DRAFT + final) == scan_text(DRAFT + final)


PIECES = st.sampled_from(
    [
        DRAFT, '{"score": 0, "reason": "r"}', '{"a": ', '"score": 0', '"score"', ": 1", ", ",
        "}", "]", "[", "{", '"', "\\", "\\u0073", "x" * 40, '"' + "y" * 40 + '"', "\n",
        '{"score": 1, "long": "' + "z" * 70 + '"}', '{"reason": "w"}',
    ]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(PIECES, max_size=40), piece=st.integers(min_value=1, max_value=80))
def test_the_streaming_scan_never_gives_another_verdict_than_the_whole_text(
    pieces: list[str], piece: int
) -> None:
    # Fail closed: in windows too small for some objects, the answer is the whole text's one,
    # or no verdict at all.
    text = "".join(pieces)
    whole, found = scan_text(text), streamed(text, piece=piece)
    if found.verdict is not None:
        assert found.verdict == whole.verdict


def _errored_judge(
    *, eb: Callable[..., EbResult], project: Callable[..., Path], agent: Path, dialect: str
) -> dict[str, Any]:
    """`eb run` of one judge whose agent is the script `agent`, read in `dialect`: the run must
    fail and the judge be an `error`; its result in report.json."""
    config = (
        '[harness]\nagent = "custom"\ntimeout_seconds = 60\n\n[agents.custom]\n'
        f"command = [{json.dumps(sys.executable)}, {json.dumps(str(agent))}]\n"
        f'model_flag = ""\noutput_dialect = "{dialect}"\n'
    )
    check = (
        "schema_version: 1\nid: judge\ntype: harness_judge\ndescription: README is fine\n"
        "instructions: Read README.md and score it.\n"
    )
    root = project({"eval_checks/judge.yaml": check, "README.md": "# readme\n"}, config=config)
    out = agent.parent / "out"
    result = eb("run", "--cwd", str(root), "--output-dir", str(out), "--flat-output")
    assert result.exit_code != 0
    (found,) = json.loads((out / "report.json").read_text())["checks"]
    assert found["status"] == "error", found
    return dict(found)


def test_eb_run_refuses_a_draft_verdict_before_a_final_report_too_long_to_read(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    # A judge prints a draft verdict, then its final one with 6 MB of evidence before the score.
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import json\n"
        'print(json.dumps({"score": 1, "reason": "draft: looks fine"}))\n'
        'evidence = [{"file": f"src/mod{i}.py", "excerpt": "def f():\\n    return 1\\n" * 20}'
        " for i in range(12000)]\n"
        'print(json.dumps({"evidence": evidence, "score": 0, "reason": "Final: no tests."}))\n'
    )
    found = _errored_judge(eb=eb, project=project, agent=agent, dialect="text")
    problem = found["details"]["verdict_problem"]
    assert problem.startswith(
        'the object starting at character 45 may hold a "score" key but is longer'
    )
    assert "2,097,152 characters" in problem


def test_eb_run_refuses_a_draft_result_before_a_final_result_too_long_to_read(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    # A claude-style judge prints a successful draft result, then its final result event with
    # 9 MB of text before the score: the draft must not pass the check.
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import json\n"
        'done = {"type": "result", "subtype": "success", "is_error": False}\n'
        'print(json.dumps({**done, "result": \'{"score": 1, "reason": "draft"}\'}))\n'
        'final = "x" * (9 << 20) + \' {"score": 0, "reason": "final"}\'\n'
        'print(json.dumps({**done, "result": final}))\n'
    )
    found = _errored_judge(eb=eb, project=project, agent=agent, dialect="claude")
    problem = found["details"]["verdict_problem"]
    assert problem.startswith('a line holding "result" is longer than the 8,388,608 characters')
