"""The verdict cache per dataset case: one edited row re-runs one judge, whatever else is cached.

The family reads the whole project (no `inputs:`), so only leaving its own files out of each
case's input state (their content is in the case's definition digest) keeps the others cached.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.cache.rig import Project, judge, make_project

FAMILY = """\
schema_version: 1
id: qa_judge
type: harness_judge
description: "Answer to {{ case.question }}"
instructions: Judge whether the answer below is right.
cases_from: data/qa.jsonl
"""


def _rows(count: int) -> list[dict[str, Any]]:
    return [{"id": f"q{n:02d}", "question": f"q{n}", "answer": f"a{n}"} for n in range(count)]


def _write_rows(project: Project, rows: list[dict[str, Any]]) -> None:
    project.write({"data/qa.jsonl": _jsonl(rows)})


def _family(tmp_path: Path, eb: Callable[..., Any], *, count: int) -> Project:
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={"qa": FAMILY},
        files={"README.md": "# Project\n"},
        extra_config="",
    )
    _write_rows(project, _rows(count))
    return project


def test_editing_one_row_of_a_cached_family_starts_one_agent(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    project = _family(tmp_path, eb, count=50)
    first = project.run()
    assert first["total_checks"] == 50 and project.agent_starts() == 50
    assert project.misses() == set() and project.agent_starts() == 50

    rows = _rows(50)
    rows[17]["answer"] = "a different answer"
    _write_rows(project, rows)
    assert project.misses() == {"qa_judge[q17]"}
    assert project.agent_starts() == 51

    rows.append({"id": "q50", "question": "q50", "answer": "a50"})
    _write_rows(project, rows)
    assert project.misses() == {"qa_judge[q50]"}
    assert project.agent_starts() == 52


def test_a_judge_reads_its_case_in_a_fenced_block(tmp_path: Path, eb: Callable[..., Any]) -> None:
    project = _family(tmp_path, eb, count=2)
    project.run()
    prompts = [json.loads(line)[-1] for line in project.log.read_text().splitlines()]
    ours = next(prompt for prompt in prompts if '"id": "q01"' in prompt)
    assert "Judge whether the answer below is right.\n\nCase q01:\n```json\n" in ours
    assert '"answer": "a1"' in ours and "Answer to q1" in ours
    assert '"a0"' not in ours and len(prompts) == 2


def test_placeholders_replace_the_fenced_block(tmp_path: Path, eb: Callable[..., Any]) -> None:
    project = _family(tmp_path, eb, count=1)
    project.write(
        {
            "eval_checks/qa.yaml": FAMILY.replace(
                "Judge whether the answer below is right.",
                "'Is {{ case.answer }} right for {{ case.question }}? {{{{ stays'",
            )
        }
    )
    project.run()
    prompt = json.loads(project.log.read_text().splitlines()[-1])[-1]
    assert "Is a0 right for q0? {{ stays" in prompt
    assert "```json" not in prompt


def test_a_rows_at_sign_never_names_a_file_for_the_agent(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # claude, gemini and grok attach `@name` in a prompt as a file (tests/agents_real shows it
    # on each CLI): a row's text is data, so its `@` reaches the agent made inert, while a
    # check author's own `@` outside a family is sent as written.
    project = _family(tmp_path, eb, count=0)
    rows = [{"id": "mail", "question": "Mail support@example.com", "answer": "see @README.md"}]
    _write_rows(project, rows)
    project.write(
        {
            "eval_checks/plain.yaml": judge("plain", instructions="Read @README.md first."),
            "eval_checks/placed.yaml": FAMILY.replace("id: qa_judge", "id: placed").replace(
                "Judge whether the answer below is right.", "'Is {{ case.answer }} right?'"
            ),
        }
    )
    project.run()
    prompts = [json.loads(line)[-1] for line in project.log.read_text().splitlines()]
    fenced = next(prompt for prompt in prompts if "```json" in prompt)
    placed = next(prompt for prompt in prompts if "right?" in prompt)
    plain = next(prompt for prompt in prompts if "Judge plain." in prompt)
    joined = "@\u2060"
    assert f"Mail support{joined}example.com" in fenced
    assert f'"see {joined}README.md"' in fenced
    assert f"Is see {joined}README.md right?" in placed
    assert f"Answer to Mail support{joined}example.com" in placed
    assert "Read @README.md first." in plain and joined not in plain
    # What the run folder says was sent is what was sent.
    run_dir = max((project.root / ".eval-banana" / "results").iterdir())
    sent = [path.read_text() for path in (run_dir / "checks").glob("placed_*.prompt.txt")]
    assert sent == [placed]
    # The report shows the row as it is: only the prompt differs.
    report = json.loads((run_dir / "report.json").read_text())
    described = {check["check_id"]: check["description"] for check in report["checks"]}
    assert described["placed[mail]"] == "Answer to Mail support@example.com"


def test_an_uncalibrated_judge_family_is_one_warning_naming_its_case_count(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # More cases than the guard names one by one (20): one line per case would be cut short.
    project = _family(tmp_path, eb, count=30)
    warned = project.eb("validate", "--cwd", str(project.root))
    assert warned.exit_code == 0, warned.stderr
    assert (
        warned.stderr.count("warning: Judge family 'qa_judge' (30 cases) has no calibration") == 1
    )
    assert "Judge check 'qa_judge[" not in warned.stderr
    assert "more judge checks" not in warned.stderr
    refused = project.eb("validate", "--cwd", str(project.root), "--require-calibration")
    assert refused.exit_code == 2
    assert refused.stderr.count("Judge family 'qa_judge' (30 cases)") == 1
    assert "Judge check 'qa_judge[" not in refused.stderr


def test_a_large_familys_log_lists_what_did_not_pass_and_its_replay_the_same(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    """In a CI log (stderr not a terminal) a family of 25 cases gives its two failures a line
    each and its 23 passes one count; a cached run and a replayed one log the same."""
    project = _family(tmp_path, eb, count=25)
    rows = _rows(25)
    for failing in (4, 19):
        rows[failing]["answer"] = "SCORE_ZERO"
    _write_rows(project, rows)

    def logged(stderr: str) -> list[str]:
        lines = [line for line in stderr.splitlines() if line.startswith("[")]
        assert lines[-1].startswith("[25/25] 23 cases passed (")
        # A failure's position and time vary from run to run; its id and status do not.
        return sorted(re.sub(r"^\[\d+/25\] |\(.*\)$", "", line) for line in lines)

    # No --json: progress is logged. Judged, then every verdict cached (the run is kept),
    # then replayed whole.
    judged, cached, replayed = (project.eb("run", "--cwd", str(project.root)) for _ in range(3))
    assert {judged.exit_code, cached.exit_code, replayed.exit_code} == {1}
    assert project.agent_starts() == 25
    assert "Replayed run" in replayed.stderr and "Replayed run" not in cached.stderr
    expected = ["23 cases passed ", "qa_judge[q04]: failed ", "qa_judge[q19]: failed "]
    assert logged(judged.stderr) == logged(cached.stderr) == logged(replayed.stderr) == expected


# -- a whole-run replay watches the datasets ------------------------------------------------------

# A family that declares its inputs: its dataset is in none of them (a row is in its case's
# definition digest), so the replay has to watch the dataset itself.
DECLARED = FAMILY.replace("cases_from: data/qa.jsonl", "cases_from: {source}\ninputs: [README.md]")


def _declared(tmp_path: Path, eb: Callable[..., Any], *, source: str, count: int) -> Project:
    """The family of `count` rows, declaring its inputs, its cases from `source`."""
    project = _family(tmp_path, eb, count=count)
    project.write({"eval_checks/qa.yaml": DECLARED.format(source=source)})
    return project


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def _kept_replay(project: Project, replays: list[bool], *, checks: int) -> None:
    """Runs until the last is a replay of the family's `checks` cases."""
    project.run()
    project.run()  # fully cached: kept
    assert project.run()["total_checks"] == checks
    assert replays[-1] is True


def test_a_replay_is_not_taken_once_a_row_of_a_declared_inputs_family_changes(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool]
) -> None:
    project = _declared(tmp_path, eb, source="data/qa.jsonl", count=5)
    _kept_replay(project, replays, checks=5)
    starts = project.agent_starts()
    rows = _rows(5)
    rows[3]["answer"] = "a different answer"
    _write_rows(project, rows)
    assert project.misses() == {"qa_judge[q03]"}  # the edited row is judged again
    assert replays[-1] is False and project.agent_starts() == starts + 1


def test_a_file_a_cases_from_glob_gains_or_loses_is_no_replay_of_the_old_family(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool]
) -> None:
    project = _declared(tmp_path, eb, source='"data/*.jsonl"', count=3)
    _kept_replay(project, replays, checks=3)
    more = [{"id": "m1", "question": "m", "answer": "n"}]
    project.write({"data/more.jsonl": _jsonl(more)})
    report = project.run()
    assert replays[-1] is False and report["total_checks"] == 4
    assert project.misses() == set()
    (project.root / "data" / "more.jsonl").unlink()
    # The replay kept last (one per key) is the four cases': it does not hold for three.
    assert project.run()["total_checks"] == 3 and replays[-1] is False
    assert project.run()["total_checks"] == 3 and replays[-1] is True


def test_a_dataset_edited_through_a_symlink_is_no_replay(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool]
) -> None:
    # The dataset lives outside the project, linked in: its link never changes, its rows do.
    outside = tmp_path / "shared" / "qa.jsonl"
    outside.parent.mkdir()
    outside.write_text(_jsonl(_rows(3)))
    project = _declared(tmp_path, eb, source="data/qa.jsonl", count=3)
    (project.root / "data" / "qa.jsonl").unlink()
    (project.root / "data" / "qa.jsonl").symlink_to(outside)
    _kept_replay(project, replays, checks=3)
    starts = project.agent_starts()
    rows = _rows(3)
    rows[1]["answer"] = "another answer"
    outside.write_text(_jsonl(rows))
    assert project.misses() == {"qa_judge[q01]"}
    assert replays[-1] is False and project.agent_starts() == starts + 1
