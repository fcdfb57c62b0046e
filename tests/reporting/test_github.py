"""GitHub Actions output: step summary appends and workflow-command annotations."""

from __future__ import annotations

from pathlib import Path

from eval_banana.reporting.github import (
    annotation,
    annotations,
    append_step_summary,
    escape_data,
    escape_property,
)
from tests.reporting.conftest import Run, run_eb, write_project


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


_FAIL = """\
schema_version: 1
id: broken
type: deterministic
description: Fails.
script: raise SystemExit(3)
"""
