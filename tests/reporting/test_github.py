"""GitHub Actions output: step summary appends and workflow-command annotations."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from xml.etree import ElementTree

from eval_banana.core.errors import Problem
from eval_banana.reporting.github import (
    ANNOTATED_PROBLEMS,
    SUMMARY_LIMIT_BYTES,
    annotation,
    annotations,
    append_step_summary,
    escape_data,
    escape_property,
    problem_annotation,
    problem_annotations,
    warning_annotations,
)
from tests.conftest import check_yaml
from tests.reporting.conftest import Run, latest_run_dir, run_eb, write_project


def test_step_summary_appends_when_set(finished_run: Run, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("## earlier step\n", encoding="utf-8")
    report_md = (finished_run.run_dir / "report.md").read_text(encoding="utf-8")
    assert append_step_summary(report_md=report_md, environ={"GITHUB_STEP_SUMMARY": str(summary)})
    assert summary.read_text(encoding="utf-8") == "## earlier step\n" + report_md


def test_step_summary_is_skipped_without_the_variable(tmp_path: Path) -> None:
    assert append_step_summary(report_md="# x\n", environ={}) is False
    assert append_step_summary(report_md="# x\n", environ={"GITHUB_STEP_SUMMARY": ""}) is False
    assert list(tmp_path.iterdir()) == []


def test_step_summary_is_cut_at_a_line_below_the_limit(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    report_md = "".join(f"| row {i} | ééé |\n" for i in range(1000))
    append_step_summary(
        report_md=report_md, environ={"GITHUB_STEP_SUMMARY": str(summary)}, limit_bytes=1000
    )
    text = summary.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) < 1200
    body, _, note = text.rpartition("\n\n")
    assert all(line.startswith("| row ") and line.endswith("|") for line in body.splitlines())
    assert "cut to fit GitHub's size limit" in note


def test_escaping_rules() -> None:
    assert escape_data("100% a\r\nb: c, d") == "100%25 a%0D%0Ab: c, d"
    assert escape_property("a,b:c%\n") == "a%2Cb%3Ac%25%0A"
    assert escape_data("a\tb\x1b[2K\x00\udcff") == "a\tb\\x1b[2K\\x00\\xff"
    assert escape_property("t\x07,") == "t\\x07%2C"


def test_annotations_for_failed_and_errored_checks(finished_run: Run) -> None:
    lines = annotations(report=finished_run.report)
    bad = [c for c in finished_run.report["checks"] if c["status"] in ("failed", "error")]
    assert len(lines) == len(bad) >= 3
    by_id = {c["check_id"]: line for c, line in zip(bad, lines, strict=True)}
    assert by_id["totals_match"] == (
        "::error file=eval_checks/fail.yaml,title=totals_match failed::exit code 1"
    )
    judge = by_id["answer_is_polite"]
    assert judge.startswith("::error file=eval_checks/judges/polite.yaml,title=answer_is_polite ")
    # The judge's reason has a newline, a colon and a percent sign: escaped in the message.
    assert judge.endswith("::The answer <b>ignores</b> the user & is rude.%0ASo: no, 100%25.")
    assert by_id["slow_thing"].startswith(
        "::error file=eval_checks/slow.yaml,title=slow_thing error"
    )
    assert "greeting_ok" not in "".join(lines)


_CONTROLS = """\
schema_version: 1
id: hostile
type: deterministic
description: A reason with control characters.
script: |
  import sys
  sys.exit("totals differ \\x1b[2K\\x1b[1A\\x1b[31mALL GREEN\\x1b[0m \\x00 \\x08\\x08 50% end")
"""


def test_an_annotation_shows_control_characters_as_the_console_does(tmp_path: Path) -> None:
    project = write_project(tmp_path / "proj", checks={"eval_checks/c.yaml": _CONTROLS})
    completed = run_eb("run", "--cwd", str(project), "--annotations", "github")
    assert completed.returncode == 1, completed.stderr
    shown = r"totals differ \x1b[2K\x1b[1A\x1b[31mALL GREEN\x1b[0m \x00 \x08\x08 50%"
    assert f"- hostile: failed - {shown} end" in completed.stdout.splitlines()
    # The same words in the annotation, its `%` as GitHub reads it.
    assert f"::error file=eval_checks/c.yaml,title=hostile failed::{shown}25 end" in (
        completed.stdout.splitlines()
    )
    assert not any(char in completed.stdout for char in "\x1b\x00\x08")


def test_annotation_properties_are_escaped() -> None:
    check = {
        "check_id": "a,b:c",
        "status": "error",
        "source_path": "/root/x,y:z.yaml",
        "error_detail": "line1\nline2",
        "details": {},
    }
    assert annotation(check=check, project_root="/root") == (
        "::error file=x%2Cy%3Az.yaml,title=a%2Cb%3Ac error::line1%0Aline2"
    )


def test_eb_run_prints_annotations_and_appends_summary(tmp_path: Path) -> None:
    project = write_project(tmp_path / "proj", checks={"eval_checks/fail.yaml": _FAIL})
    summary = tmp_path / "step-summary.md"
    completed = run_eb(
        "run", "--cwd", str(project), "--annotations", "github", GITHUB_STEP_SUMMARY=str(summary)
    )
    assert completed.returncode == 1, completed.stderr
    assert "::error file=eval_checks/fail.yaml,title=broken failed::exit code 3" in (
        completed.stdout.splitlines()
    )
    assert summary.read_text(encoding="utf-8").startswith("# eval-banana report\n")
    assert "| `broken` | `deterministic` | `failed` |" in summary.read_text(encoding="utf-8")


def test_the_report_starts_a_line_of_its_own_after_an_unended_summary(tmp_path: Path) -> None:
    # Another tool of the step wrote its summary with `printf` (no final line break): the
    # report was glued onto that line, `Build took **42 s**# eval-banana report`, its heading lost.
    project = write_project(tmp_path / "proj", checks={"eval_checks/fail.yaml": _FAIL})
    summary = tmp_path / "step-summary.md"
    summary.write_bytes(b"Build took **42 s**")
    completed = run_eb("run", "--cwd", str(project), GITHUB_STEP_SUMMARY=str(summary))
    assert completed.returncode == 1, completed.stderr
    report_md = (latest_run_dir(project) / "report.md").read_text(encoding="utf-8")
    assert summary.read_text(encoding="utf-8") == "Build took **42 s**\n" + report_md


def test_the_line_break_owed_to_an_unended_summary_counts_against_the_limit(
    tmp_path: Path,
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_bytes(b"x" * 99)
    report_md = "".join(f"| row {i} |\n" for i in range(100))
    # The report would just fit after the 99 bytes; the line break before it leaves it no room.
    limit = 99 + len(report_md.encode("utf-8"))
    append_step_summary(
        report_md=report_md, environ={"GITHUB_STEP_SUMMARY": str(summary)}, limit_bytes=limit
    )
    text = summary.read_bytes()
    assert text.startswith(b"x" * 99 + b"\n| row 0 |\n"), text[:120]
    assert len(text) <= limit, len(text)
    assert text.endswith(b"cut to fit GitHub's size limit; see report.md._\n")


def _failing_checks(count: int) -> dict[str, str]:
    """`count` checks that fail with a long reason: a report.md of some 20 KB."""
    return {
        f"eval_checks/f{i:03d}.yaml": (
            f"schema_version: 1\nid: f{i:03d}\ntype: deterministic\ndescription: Fails.\n"
            f"script: raise SystemExit('reason ' + 'x' * 400)\n"
        )
        for i in range(count)
    }


def test_the_step_summary_is_cut_to_the_room_the_step_has_left(tmp_path: Path) -> None:
    # Each run cut its own report to 900 KiB and never looked at the file: two runs in one
    # step (or one after another tool's summary) went over GitHub's 1 MiB, and GitHub then
    # shows none of the step's summary.
    project = write_project(tmp_path / "proj", checks=_failing_checks(40))
    summary = tmp_path / "step-summary.md"
    earlier = "## Unit tests\n" + "x" * 99 + "\n"
    summary.write_text(earlier * (SUMMARY_LIMIT_BYTES // len(earlier) - 40), encoding="utf-8")
    before = summary.stat().st_size
    first = run_eb("run", "--cwd", str(project), "--no-html", GITHUB_STEP_SUMMARY=str(summary))
    assert first.returncode == 1, first.stderr
    report_md = (latest_run_dir(project) / "report.md").read_bytes()
    assert len(report_md) > SUMMARY_LIMIT_BYTES - before, "the report must not fit"
    text = summary.read_text(encoding="utf-8")
    size = len(text.encode("utf-8"))
    assert SUMMARY_LIMIT_BYTES - 200 < size <= SUMMARY_LIMIT_BYTES, size
    added = text[len(earlier) * (before // len(earlier)) :]
    assert added.startswith("# eval-banana report\n"), added[:200]
    assert added.endswith(
        "\n_eval-banana: summary cut to fit GitHub's size limit; see report.md._\n"
    )
    # Another tool fills the step's summary up to just below GitHub's limit: the next run says
    # where its report is, and no more.
    text += "y" * (1024 * 1024 - 1_000 - len(text.encode("utf-8"))) + "\n"
    summary.write_text(text, encoding="utf-8")
    second = run_eb("run", "--cwd", str(project), "--no-html", GITHUB_STEP_SUMMARY=str(summary))
    assert second.returncode == 1, second.stderr
    after = summary.read_text(encoding="utf-8")
    assert after == text + (
        "_eval-banana: no room left in this step's summary (GitHub allows 1 MiB per step); "
        "the report is in report.md in the run folder._\n"
    )
    assert len(after.encode("utf-8")) <= 1024 * 1024


_FAIL = """\
schema_version: 1
id: broken
type: deterministic
description: Fails.
script: raise SystemExit(3)
"""


# -- problems that stop a run before it starts ------------------------------------------------


def test_a_problem_is_annotated_on_its_file_line_and_column() -> None:
    problem = Problem(
        message="unknown op, 'equalz'",
        file="/root/eval_checks/a,b.yaml",
        hint="did you mean 'equals'?\nsee docs",
        line=9,
        column=7,
    )
    assert problem_annotation(
        problem=problem, title="eval_banana definition error", project_root="/root"
    ) == (
        "::error file=eval_checks/a%2Cb.yaml,line=9,col=7,title=eval_banana definition error"
        "::unknown op, 'equalz'%0Ahint: did you mean 'equals'?%0Asee docs"
    )


def test_a_dataset_problem_keeps_its_project_relative_file_and_a_file_less_one_has_none() -> None:
    row = Problem(message="row 4 is ragged", file="data/qa.csv", line=4)
    bare = Problem(message="No checks found")
    lines = problem_annotations(problems=[row, bare], title="t", project_root="/root")
    assert lines == [
        "::error file=data/qa.csv,line=4,title=t::row 4 is ragged",
        "::error title=t::No checks found",
    ]


def test_only_the_first_problems_github_shows_are_annotated() -> None:
    problems = [Problem(message=f"row {n}", file="data/qa.jsonl", line=n) for n in range(1, 30)]
    lines = problem_annotations(problems=problems, title="t", project_root="/root")
    assert len(lines) == ANNOTATED_PROBLEMS == 10
    assert lines[-1] == "::error file=data/qa.jsonl,line=10,title=t::row 10"


_BAD_OP = """\
schema_version: 1
id: prices
type: assertions
description: Prices.
artifact: out/p.json
assert:
  - path: total
    op: equalz
    value: 1
"""

_FAMILY = """\
schema_version: 1
id: qa
type: deterministic
description: "case {{ case.n }}"
cases_from: data/qa.jsonl
script: pass
"""


def _broken_project(root: Path) -> Path:
    """A check with a bad field (line 8) and a family whose dataset's third row is a list."""
    project = write_project(
        root, checks={"eval_checks/prices.yaml": _BAD_OP, "eval_checks/qa.yaml": _FAMILY}
    )
    (project / "data").mkdir()
    (project / "data" / "qa.jsonl").write_text('{"n": "1"}\n{"n": "2"}\n[1, 2]\n')
    return project


_EXPECTED = [
    "::error file=eval_checks/prices.yaml,line=8,col=9,title=eval_banana definition error::"
    "Invalid check definition in ",
    "::error file=data/qa.jsonl,line=3,title=eval_banana definition error::data/qa.jsonl line 3: "
    "a case must be a mapping of field names to values, not a list%0Ahint: ",
]


def _assert_annotated(text: str) -> None:
    lines = [line for line in text.splitlines() if line.startswith("::error")]
    assert len(lines) == 2, text
    for line, start in zip(sorted(lines, reverse=True), _EXPECTED, strict=True):
        assert line.startswith(start), line


def test_eb_run_annotates_the_problems_that_stop_it_on_their_lines(tmp_path: Path) -> None:
    project = _broken_project(tmp_path / "proj")
    # Started from elsewhere: the files are still named relative to the project root.
    completed = run_eb("run", "--cwd", str(project), "--annotations", "github", cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    _assert_annotated(completed.stdout)
    assert "a case must be a mapping" in completed.stderr  # the usual message is still there
    plain = run_eb("run", "--cwd", str(project), cwd=tmp_path)
    assert plain.returncode == 2 and "::error" not in plain.stdout + plain.stderr


def test_eb_validate_annotates_with_and_without_json(tmp_path: Path) -> None:
    project = _broken_project(tmp_path / "proj")
    completed = run_eb("validate", "--cwd", str(project), "--annotations", "github")
    assert completed.returncode == 2, completed.stderr
    _assert_annotated(completed.stdout)
    as_json = run_eb("validate", "--cwd", str(project), "--annotations", "github", "--json")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["ok"] is False  # stdout stays one JSON document
    _assert_annotated(as_json.stderr)


def test_a_config_error_is_annotated_on_its_line_of_the_config_file(tmp_path: Path) -> None:
    project = write_project(tmp_path / "proj", checks={"eval_checks/fail.yaml": _FAIL})
    config = project / ".eval-banana" / "config.toml"
    config.write_text(config.read_text().replace("[core]\n", '[core]\nmax_parallel_checks = "x"\n'))
    completed = run_eb("run", "--cwd", str(project), "--annotations", "github", "--json")
    assert completed.returncode == 2
    assert json.loads(completed.stdout)["error"]["kind"] == "config_error"
    annotated = [line for line in completed.stderr.splitlines() if line.startswith("::error")]
    assert len(annotated) == 1
    assert annotated[0].startswith(
        "::error file=.eval-banana/config.toml,line=2,title=eval_banana config error::[core] "
        "max_parallel_checks must be a positive integer"
    )


def test_eb_validate_annotates_its_warnings_as_warnings(tmp_path: Path) -> None:
    """Two judges without calibration cases: a warning each, on its check file, and the
    project still validates."""
    project = write_project(tmp_path / "proj")
    completed = run_eb("validate", "--cwd", str(project), "--annotations", "github")
    assert completed.returncode == 0, completed.stderr
    warned = sorted(line for line in completed.stdout.splitlines() if line.startswith("::"))
    assert [line.split("::")[1] for line in warned] == [
        f"warning file=eval_checks/judges/{name}.yaml,title=eval_banana warning"
        for name in ("kind", "polite")
    ]
    assert all("has no calibration cases" in line for line in warned)


def test_a_config_keys_warning_is_annotated_on_its_line_by_validate_and_run(
    tmp_path: Path,
) -> None:
    project = write_project(tmp_path / "proj", checks={"eval_checks/fail.yaml": _FAIL})
    config = project / ".eval-banana" / "config.toml"
    config.write_text(config.read_text().replace("[core]\n", "[core]\nllm_timeout_seconds = 5\n"))
    expected = "::warning file=.eval-banana/config.toml,line=2,title=eval_banana warning::Ignored"
    for command in ("validate", "run"):
        completed = run_eb(command, "--cwd", str(project), "--annotations", "github")
        warned = [line for line in completed.stdout.splitlines() if line.startswith("::warning")]
        assert [line[: len(expected)] for line in warned] == [expected], completed.stdout
        assert "hint: delete it;" in warned[0]
        # The console still says it in one line, with its fix.
        assert "Ignored legacy key core.llm_timeout_seconds" in completed.stderr


def test_a_runs_warnings_are_annotated_as_warnings() -> None:
    report = {
        "project_root": "/repo",
        "checks": [],
        "warnings": [
            {"message": "The shared cache s3://team/eb failed: timed out; checks ran as on a miss"},
            {"message": "inputs: 'docs/*.md' matches no file", "file": "/repo/eval_checks/a.yaml"},
        ],
    }
    assert warning_annotations(report=report) == [
        "::warning title=eval_banana warning::The shared cache s3://team/eb failed: timed out; "
        "checks ran as on a miss",
        "::warning file=eval_checks/a.yaml,title=eval_banana warning::inputs: 'docs/*.md' "
        "matches no file",
    ]


# -- a failed case is annotated on its dataset row ----------------------------------------------

_GRADED_FAMILY = """\
schema_version: 1
id: qa
type: deterministic
description: "case {{ case.id }}"
cases_from: data/qa.jsonl
script: |
  import json, sys
  ctx = json.load(open(sys.argv[1]))
  sys.exit(0 if ctx["case"]["ok"] == "yes" else 1)
"""

_INLINE_FAMILY = """\
schema_version: 1
id: inline
type: deterministic
description: "case {{ case.id }}"
cases:
  - {id: fine, ok: "yes"}
  - id: broken
    ok: "no"
script: |
  import json, sys
  ctx = json.load(open(sys.argv[1]))
  sys.exit(0 if ctx["case"]["ok"] == "yes" else 1)
"""


def _row(case_id: str, ok: str) -> str:
    return json.dumps({"id": case_id, "ok": ok}) + "\n"


def _case_annotations(completed: subprocess.CompletedProcess[str]) -> list[str]:
    # With --json the annotations go to stderr.
    lines = (completed.stdout + "\n" + completed.stderr).splitlines()
    return sorted(line for line in lines if line.startswith("::error"))


def test_a_failed_case_is_annotated_on_its_dataset_row_even_after_rows_move(
    tmp_path: Path,
) -> None:
    project = write_project(
        tmp_path / "proj",
        checks={"eval_checks/qa.yaml": _GRADED_FAMILY, "eval_checks/inline.yaml": _INLINE_FAMILY},
    )
    with (project / ".eval-banana" / "config.toml").open("a") as config:
        config.write('\n[cache]\nmode = "on"\n')
    (project / "data").mkdir()
    dataset = project / "data" / "qa.jsonl"
    dataset.write_text(_row("a", "yes") + _row("b", "no") + _row("c", "yes") + _row("d", "no"))
    junit = tmp_path / "junit.xml"
    first = run_eb(
        "run",
        "--cwd",
        str(project),
        "--annotations",
        "github",
        "--junit-xml",
        str(junit),
        cwd=tmp_path,
    )
    assert first.returncode == 1, first.stderr
    # JUnit names a failed case's row by file and line too (reporters annotate from them); a
    # case that passed keeps its check file.
    cases = {case.get("name"): case.attrib for case in ElementTree.parse(junit).iter("testcase")}
    assert (cases["qa[b]"]["file"], cases["qa[b]"]["line"]) == ("data/qa.jsonl", "2")
    assert cases["qa[a]"]["file"] == "eval_checks/qa.yaml" and "line" not in cases["qa[a]"]
    assert _case_annotations(first) == [
        "::error file=data/qa.jsonl,line=2,title=qa[b] failed::exit code 1",
        "::error file=data/qa.jsonl,line=4,title=qa[d] failed::exit code 1",
        "::error file=eval_checks/inline.yaml,line=7,title=inline[broken] failed::exit code 1",
    ]
    # The console's recap names the rows too, as an editor opens them.
    assert "FAILED qa[b] - exit code 1 (data/qa.jsonl:2)" in first.stdout
    assert "FAILED inline[broken] - exit code 1 (eval_checks/inline.yaml:7)" in first.stdout
    # The same commit again: from the verdict cache, then as a whole-run replay; the
    # annotations stay on the rows.
    cached = run_eb("run", "--cwd", str(project), "--annotations", "github", cwd=tmp_path)
    assert _case_annotations(cached) == [
        line.replace(" failed::", " failed (cached)::") for line in _case_annotations(first)
    ]
    again = run_eb("run", "--cwd", str(project), "--annotations", "github", cwd=tmp_path)
    assert "Replayed run" in again.stdout + again.stderr
    assert _case_annotations(again) == _case_annotations(cached)
    assert "FAILED qa[d] - exit code 1 (data/qa.jsonl:4)" in again.stdout
    # Two rows added above: every verdict is reused, and the annotations follow the rows.
    dataset.write_text(_row("new1", "yes") + _row("new2", "yes") + dataset.read_text())
    moved = run_eb("run", "--cwd", str(project), "--annotations", "github", "--json", cwd=tmp_path)
    assert moved.returncode == 1, moved.stderr
    hits = {
        check["check_id"]
        for check in json.loads(moved.stdout)["checks"]
        if check["details"]["cache"]["hit"]
    }
    # (The inline family reads the whole project, which the dataset is part of.)
    assert hits == {"qa[a]", "qa[b]", "qa[c]", "qa[d]"}
    assert [line.split(",title")[0] for line in _case_annotations(moved)] == [
        "::error file=data/qa.jsonl,line=4",
        "::error file=data/qa.jsonl,line=6",
        "::error file=eval_checks/inline.yaml,line=7",
    ]


def test_a_case_without_a_place_is_annotated_on_its_check_file() -> None:
    report = {
        "project_root": "/p",
        "checks": [
            {
                "check_id": "qa[b]",
                "family": "qa",
                "source_path": "/p/eval_checks/qa.yaml",
                "status": "failed",
                "reason": "wrong",
            }
        ],
    }
    assert annotations(report=report, places={}) == [
        "::error file=eval_checks/qa.yaml,title=qa[b] failed::wrong"
    ]


def test_past_what_github_shows_of_a_step_the_other_failures_are_counted_in_a_notice() -> None:
    # A family of 5,000 failing cases printed 5,000 workflow commands; GitHub annotates ten.
    checks = [
        {
            "check_id": f"qa[{n}]",
            "family": "qa",
            "source_path": "/p/eval_checks/qa.yaml",
            "status": "error" if n == 3 else ("passed" if n == 5 else "failed"),
            "reason": f"wrong {n}",
        }
        for n in range(13)
    ]
    lines = annotations(report={"project_root": "/p", "checks": checks}, places={})
    shown = [n for n in range(13) if n != 5][:10]
    assert [line.split("::")[-1] for line in lines[:10]] == [f"wrong {n}" for n in shown]
    assert all(line.startswith("::error ") for line in lines[:10])
    assert lines[10:] == [
        "::notice title=eval_banana::2 more checks failed or errored than GitHub annotates for "
        "one step: the log above, report.md and report.html list every one"
    ]
    assert len(annotations(report={"project_root": "/p", "checks": checks[:11]}, places={})) == 10


def test_after_x_the_failure_that_stopped_the_run_is_annotated_and_not_run_checks_are_one_line(
    tmp_path: Path,
) -> None:
    """A check new to the history starts first (`schedule = history`); when it fails, -x keeps
    the ten others from starting. Annotated one by one in report order, those ten took
    GitHub's ten places and the failure got none."""
    checks = {f"eval_checks/c{n:02}.yaml": check_yaml(f"c{n:02}") for n in range(10)}
    project = write_project(tmp_path / "proj", checks=checks)
    assert run_eb("run", "--cwd", str(project)).returncode == 0  # records every duration
    (project / "eval_checks" / "z_new.yaml").write_text(
        check_yaml("z_new", script="raise SystemExit('totals do not match')")
    )
    completed = run_eb(
        "run", "--cwd", str(project), "-x", "--max-parallel-checks", "1", "--annotations", "github"
    )
    assert completed.returncode == 1, completed.stderr
    assert [line for line in completed.stdout.splitlines() if line.startswith("::")] == [
        "::error file=eval_checks/z_new.yaml,title=z_new failed::totals do not match",
        "::notice title=eval_banana not run::10 checks (c00, c01, c02, c03, c04 and 5 more) - "
        "stopped after 1 failed or errored check (maxfail 1)",
    ]


def test_an_aborted_run_says_why_in_its_first_annotation(tmp_path: Path) -> None:
    """Eleven checks fail, then the run timeout ends the slow one: the `::error` naming the
    abort came after the checks' ten, where GitHub (ten errors a step) dropped it."""
    checks = {
        f"eval_checks/c{n:02}.yaml": check_yaml(f"c{n:02}", script="raise SystemExit(1)")
        for n in range(11)
    }
    checks["eval_checks/z_slow.yaml"] = check_yaml("z_slow", script="import time; time.sleep(60)")
    project = write_project(tmp_path / "proj", checks=checks)
    completed = run_eb(
        *("run", "--cwd", str(project), "--annotations", "github"),
        *("--check-timeout-seconds", "0", "--run-timeout-seconds", "3"),
    )
    assert completed.returncode == 3, completed.stderr
    errors = [line for line in completed.stdout.splitlines() if line.startswith("::error")]
    report = json.loads((latest_run_dir(project) / "report.json").read_text())
    assert report["aborted_by"] == "run_timeout" and report["failed_checks"] == 11
    assert errors[0] == (
        "::error title=eval_banana aborted::Run aborted (run_timeout: run timeout reached); "
        f"0 checks did not run. Report: {report['output_dir']}/report.json"
    )
    assert len(errors) == ANNOTATED_PROBLEMS
    assert [line.split(",title=")[0] for line in errors[1:]] == [
        f"::error file=eval_checks/c{n:02}.yaml" for n in range(9)
    ]
    assert "::notice title=eval_banana::3 more checks failed or errored" in completed.stdout
    assert "Run aborted (run_timeout" in completed.stderr  # the console still says it


def test_a_case_whose_row_changed_since_it_ran_gets_no_place(tmp_path: Path) -> None:
    """The rows are read again when a run ends: a failed case whose row no longer holds what
    was judged (here edited after the run) gets no place, so it stays on its check file; the
    other failed case keeps its row."""
    from eval_banana.models.stages import ConfigDoc
    from eval_banana.reporting.caseplaces import failed_case_places

    project = write_project(tmp_path / "proj", checks={"eval_checks/qa.yaml": _GRADED_FAMILY})
    (project / "data").mkdir()
    dataset = project / "data" / "qa.jsonl"
    dataset.write_text(_row("a", "yes") + _row("b", "no") + _row("c", "yes") + _row("d", "no"))
    assert run_eb("run", "--cwd", str(project), cwd=tmp_path).returncode == 1
    run_dir = latest_run_dir(project)
    report = json.loads((run_dir / "report.json").read_text())
    config = ConfigDoc.model_validate(json.loads((run_dir / "stages" / "config.json").read_text()))
    places = failed_case_places(report=report, config=config)
    assert {check_id: (p.file, p.line) for check_id, p in places.items()} == {
        "qa[b]": ("data/qa.jsonl", 2),
        "qa[d]": ("data/qa.jsonl", 4),
    }
    dataset.write_text(
        _row("a", "yes") + _row("b", "still no") + _row("c", "yes") + _row("d", "no")
    )
    places = failed_case_places(report=report, config=config)
    assert {check_id: p.line for check_id, p in places.items()} == {"qa[d]": 4}
