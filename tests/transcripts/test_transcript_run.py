"""A real `eb run`: the judge's transcript file, its place in the result, the page's data."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from eval_banana.core.stem import artifact_stem
from eval_banana.reporting.html_evidence import TRANSCRIPT_PAGE_CHARS
from tests.transcripts.judge_project import (
    SECRET,
    VERDICT,
    judged,
    project_with_agent,
    run_dir_of,
    run_eb,
    write_project,
)


def test_eb_run_writes_the_transcript_masked_and_embeds_it(tmp_path: Path) -> None:
    root = write_project(tmp_path / "project")
    completed = run_eb(root)
    assert completed.returncode == 0, completed.stderr
    run_dir = run_dir_of(root)
    report = json.loads((run_dir / "report.json").read_text())
    (check,) = report["checks"]
    path = check["details"]["transcript_path"]
    assert path and path.endswith(".transcript.jsonl")
    text = (run_dir / path).read_text(encoding="utf-8")
    events = [json.loads(line) for line in text.splitlines()]
    assert [event["kind"] for event in events] == [
        "message",
        "tool_call",
        "tool_result",
        "answer",
        "usage",
    ]
    assert events[1]["tool"] == "Grep" and "pip install" in events[1]["arguments"]
    assert events[2]["tool"] == "Grep" and events[2]["text"].endswith("token ***")
    assert json.loads(events[3]["text"]) == VERDICT
    # No secret in the transcript, nor in the page that embeds it.
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert SECRET not in text and SECRET not in html
    assert '<script type="application/json" id="tr-0">' in html


def test_with_transcripts_off_there_is_none(tmp_path: Path) -> None:
    root = write_project(tmp_path / "project", transcripts=False)
    completed = run_eb(root)
    assert completed.returncode == 0, completed.stderr
    run_dir = run_dir_of(root)
    (check,) = json.loads((run_dir / "report.json").read_text())["checks"]
    assert check["details"]["transcript_path"] is None
    assert not list((run_dir / "checks").glob("*.transcript.jsonl"))
    assert 'id="tr-0"' not in (run_dir / "report.html").read_text(encoding="utf-8")


def test_a_cached_verdict_brings_its_transcript_back(tmp_path: Path) -> None:
    root = write_project(tmp_path / "project")
    cache = ["--cache", "on", "--cache-dir", str(tmp_path / "cache")]
    first = run_eb(root, *cache)
    assert first.returncode == 0, first.stderr
    first_dir = run_dir_of(root)
    (check,) = json.loads((first_dir / "report.json").read_text())["checks"]
    saved = (first_dir / check["details"]["transcript_path"]).read_bytes()
    second = run_eb(root, *cache)
    assert second.returncode == 0, second.stderr
    second_dir, reused = _reused_run(root=root, first_dir=first_dir)
    assert (second_dir / reused["details"]["transcript_path"]).read_bytes() == saved


def test_a_verdict_reused_with_transcripts_off_brings_no_transcript(tmp_path: Path) -> None:
    root = write_project(tmp_path / "project")
    cache = ["--cache", "on", "--cache-dir", str(tmp_path / "cache")]
    first = run_eb(root, *cache)
    assert first.returncode == 0, first.stderr
    first_dir = run_dir_of(root)
    config = root / ".eval-banana" / "config.toml"
    config.write_text(config.read_text().replace("[harness]\n", "[harness]\ntranscripts = false\n"))
    second = run_eb(root, *cache)
    assert second.returncode == 0, second.stderr
    second_dir, reused = _reused_run(root=root, first_dir=first_dir)
    assert reused["details"]["transcript_path"] is None
    result_file = second_dir / "checks" / f"{artifact_stem(check_id=reused['check_id'])}.json"
    assert json.loads(result_file.read_text())["details"]["transcript_path"] is None
    assert not list((second_dir / "checks").glob("*.transcript.jsonl"))
    assert 'id="tr-0"' not in (second_dir / "report.html").read_text(encoding="utf-8")


def test_a_text_agent_s_own_json_lines_are_its_answer(tmp_path: Path) -> None:
    # JSON lines with a "type" key that are not claude's events are the text agent's text:
    # they were dropped, leaving an empty transcript although the verdict was read from them.
    progress = {"type": "progress", "message": "reading README.md"}
    verdict = {"type": "verdict", "score": 0, "reason": "README has no install section"}
    agent = f"import json\nprint(json.dumps({progress!r}))\nprint(json.dumps({verdict!r}))\n"
    root = project_with_agent(tmp_path / "project", agent=agent, dialect="text")
    check, (answer,) = judged(root, exit_code=1)
    assert check["status"] == "failed"
    assert answer["kind"] == "answer"
    assert [json.loads(line) for line in answer["text"].splitlines()] == [progress, verdict]


def test_a_long_text_output_keeps_its_start_in_its_first_message(tmp_path: Path) -> None:
    # 6 MB of reasoning, then the verdict: the first message is the output's start, cut at its
    # end, and only the answer keeps its end.
    agent = (
        "import sys\n"
        'sys.stdout.write("FIRST LINE OF OUTPUT\\n")\n'
        'sys.stdout.write("".join(f"reasoning line {i:08d}\\n" for i in range(250_000)))\n'
        'print(\'{"score": 1, "reason": "long but fine"}\')\n'
    )
    root = project_with_agent(tmp_path / "project", agent=agent, dialect="text")
    _, (first, skipped, answer) = judged(root, exit_code=0)
    assert first["kind"] == "message"
    assert first["text"].startswith("FIRST LINE OF OUTPUT\nreasoning line 00000000\n")
    assert len(first["text"]) == 2000 and first["cut"] > 500_000
    assert skipped["kind"] == "skipped"
    assert answer["kind"] == "answer"
    assert answer["text"].endswith('{"score": 1, "reason": "long but fine"}')


def test_a_result_too_long_to_hold_keeps_its_verdict_and_counts_what_was_cut(
    tmp_path: Path,
) -> None:
    # A result text of 3 MB ending in the verdict: one line longer than the 1 MB eb holds of it.
    agent = (
        "import json\n"
        'text = "START " + "y" * (3 << 20) + \' {"score": 0, "reason": "huge fail"}\'\n'
        'print(json.dumps({"type": "result", "subtype": "success", "is_error": False,'
        ' "result": text, "session_id": "s", "usage": {"output_tokens": 9}}))\n'
    )
    root = project_with_agent(tmp_path / "project", agent=agent)
    check, (answer, *rest) = judged(root, exit_code=1)
    assert check["status"] == "failed"
    assert answer["kind"] == "answer"
    assert answer["text"].endswith('y {"score": 0, "reason": "huge fail"}')
    whole = len("START ") + (3 << 20) + len(' {"score": 0, "reason": "huge fail"}')
    assert len(answer["text"]) == 2000 and answer["cut"] == whole - 2000
    assert rest == [{"kind": "usage", "usage": {"output_tokens": 9}}]


def test_a_long_transcript_on_the_page_keeps_its_start_and_its_answer(tmp_path: Path) -> None:
    root = write_project(tmp_path / "project", long=True)
    completed = run_eb(root)
    assert completed.returncode == 1, completed.stderr
    run_dir = run_dir_of(root)
    (check,) = json.loads((run_dir / "report.json").read_text())["checks"]
    path = run_dir / check["details"]["transcript_path"]
    assert path.stat().st_size > TRANSCRIPT_PAGE_CHARS
    in_file = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    blob = re.search(r'<script type="application/json" id="tr-0">(.*?)</script>', html, re.S)
    assert blob is not None
    on_page = json.loads(blob.group(1))
    # The end of the file is on the page: the verdict and the usage reported with it.
    assert [event["kind"] for event in on_page[-2:]] == ["answer", "usage"]
    assert on_page[-2:] == in_file[-2:] and on_page[0] == in_file[0]
    (note,) = [event for event in on_page if "of this page" in event.get("text", "")]
    assert note["kind"] == "skipped"
    left_out = len(in_file) - len(on_page) + 1
    assert left_out > 0 and note["text"].startswith(f"{left_out} events (")
    assert note["text"].endswith(f"left out of this page; they are in {path.name}")
    assert len(blob.group(1)) <= TRANSCRIPT_PAGE_CHARS + 1000


def _reused_run(*, root: Path, first_dir: Path) -> tuple[Path, dict[str, Any]]:
    """The run folder made after `first_dir` and its one check, whose verdict was reused."""
    # Run ids sort by their second only: the second run's folder is the other one.
    (second_dir,) = [
        folder for folder in (root / ".eval-banana" / "results").iterdir() if folder != first_dir
    ]
    (reused,) = json.loads((second_dir / "report.json").read_text())["checks"]
    assert reused["details"]["cache"]["hit"] is True, reused["details"]["cache"]
    return second_dir, reused


NAN_COST_AGENT = """\
import json
verdict = json.dumps(VERDICT)
# Python's json writes NaN, and an agent built on it may report its cost so.
print('{"type":"result","subtype":"success","is_error":false,"result":%s,'
      '"usage":{"input_tokens":5,"output_tokens":7},"total_cost_usd":NaN}' % json.dumps(verdict))
"""


def test_a_nan_cost_leaves_the_transcript_and_the_page_json(tmp_path: Path) -> None:
    root = project_with_agent(
        tmp_path / "project", agent=NAN_COST_AGENT.replace("VERDICT", repr(VERDICT))
    )
    completed = run_eb(root)
    assert completed.returncode == 0, completed.stderr
    run_dir = run_dir_of(root)
    (check,) = json.loads((run_dir / "report.json").read_text())["checks"]

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    text = (run_dir / check["details"]["transcript_path"]).read_text(encoding="utf-8")
    events = [json.loads(line, parse_constant=refuse) for line in text.splitlines()]
    assert events[-1] == {"kind": "usage", "usage": {"input_tokens": 5, "output_tokens": 7}}
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    blob = re.search(r'<script type="application/json" id="tr-0">(.*?)</script>', html, re.S)
    assert blob is not None
    assert json.loads(blob.group(1), parse_constant=refuse)[-1] == events[-1]
