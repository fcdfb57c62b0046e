"""The report stage and the console."""

from __future__ import annotations

import io
import json
import os
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema

from eval_banana.models.report import ReportJson
from eval_banana.models.result import CheckResult
from eval_banana.reporting.console import Console, ProgressReporter, print_summary, summary_lines
from eval_banana.runners.results import FAMILY_CASES_LISTED, build_result, error_result
from eval_banana.stagefiles.read import read_stage
from eval_banana.stages.report import build_report, report_json_text, write_reports
from eval_banana.stages.score import score
from tests.builders import RUN_ID, make_config, make_execute, planned_inline, planned_judge

ROOT = Path("/project")
REPO = Path(__file__).resolve().parents[2]
MOMENT = datetime(2026, 11, 30, 0, 24, 31, 189726, tzinfo=UTC)
LATER = MOMENT + timedelta(milliseconds=1234, microseconds=900)

REPORT_KEYS = [
    "schema_version",
    "run_id",
    "project_root",
    "output_dir",
    "started_at",
    "completed_at",
    "duration_ms",
    "total_checks",
    "passed_checks",
    "failed_checks",
    "errored_checks",
    "points_earned",
    "total_points",
    "percentage",
    "pass_threshold",
    "meets_threshold",
    "run_passed",
    "checks",
    "not_run_checks",
    "aborted_by",
    "env_policy",
    "env_allow",
    "env_allow_prefixes",
    "tokens_used",
    "warnings",
    "skipped_checks",
    "skipped",
    "maxfail",
    "halted_by",
    "shard",
    "allow_empty",
    "merged_from",
    "judge_usage",
    "cached_checks",
    "selection_note",
    "flaky_checks",
    "fail_on_flaky",
    "families",
    "error_classes",
    "cache",
    "updated_at",
]
CHECK_KEYS = [
    "check_id",
    "check_type",
    "check_definition_sha256",
    "description",
    "source_path",
    "tags",
    "status",
    "score",
    "started_at",
    "completed_at",
    "duration_ms",
    "reason",
    "error_detail",
    "stdout",
    "stderr",
    "exit_code",
    "details",
    "expect",
    "observed_status",
    "family",
]


def sample_results() -> list[CheckResult]:
    ok = planned_inline(id="ok", script="pass", project_root=ROOT, description="Crème brûlée")
    bad = planned_inline(id="bad", script="pass", project_root=ROOT)
    broken = planned_inline(id="broken", script="pass", project_root=ROOT)
    judge = planned_judge(id="judge", project_root=ROOT)
    control = planned_inline(id="ctl", script="pass", project_root=ROOT, expect="fail")
    return [
        build_result(check=ok, status="passed", started=MOMENT, completed=LATER, exit_code=0),
        build_result(check=bad, status="failed", started=MOMENT, completed=LATER, exit_code=4),
        error_result(
            check=broken, started=MOMENT, completed=LATER, error_detail="one | two\nthree"
        ),
        build_result(
            check=judge,
            status="failed",
            started=MOMENT,
            completed=LATER,
            reason="multi\r\nline | reason",
            exit_code=0,
        ),
        build_result(check=control, status="passed", started=MOMENT, completed=LATER),
    ]


def written(tmp_path: Path, **config: Any) -> tuple[dict[str, Any], Path]:
    cfg = make_config(project_root=ROOT, **config)
    execute = make_execute(results=sample_results())
    scored = score(config=cfg, execute=execute)
    outcome = write_reports(run_dir=tmp_path, config=cfg, execute=execute, score=scored)
    return outcome.report, tmp_path


def test_report_json_keys_order_and_format(tmp_path: Path) -> None:
    report, run_dir = written(tmp_path)
    text = (run_dir / "report.json").read_text(encoding="utf-8")
    assert not text.endswith("\n")
    assert "Crème brûlée" in text  # non-ASCII as-is
    assert text.startswith('{\n  "schema_version": 1,\n  "run_id": ')
    data = json.loads(text)
    assert data == report
    assert text == report_json_text(report=report)  # written piece by piece, the same text
    assert list(data) == REPORT_KEYS
    assert [list(check) for check in data["checks"]] == [CHECK_KEYS] * 5
    assert data["run_id"] == RUN_ID
    assert data["output_dir"] == str(run_dir.resolve())
    assert data["project_root"] == str(ROOT)
    assert data["duration_ms"] == 2310  # 00:24:31.189726 -> 00:24:33.500000, truncated
    assert data["started_at"] == "2026-11-30T00:24:31.189726+00:00"
    assert (data["total_checks"], data["points_earned"], data["percentage"]) == (5, 2, 40.0)
    assert data["checks"][0]["duration_ms"] == 1234
    assert data["checks"][0]["started_at"] == "2026-11-30T00:24:31.189726+00:00"
    assert data["run_passed"] is False and data["aborted_by"] is None
    assert data["env_policy"] == "inherit"


def test_an_execute_json_without_its_allow_lists_is_reported_with_config_jsons(
    tmp_path: Path,
) -> None:
    # Written before eb recorded the lists, it ran under config.json's (and its own policy).
    config = make_config(
        project_root=ROOT, env="allowlist", env_allow=["KEEP_ME"], env_allow_prefixes=["APP_"]
    )
    older = make_execute(results=sample_results()).model_copy(update={"env_policy": "allowlist"})
    assert older.env_allow is None and older.env_allow_prefixes is None
    scored = score(config=config, execute=older)
    report = build_report(run_dir=tmp_path, config=config, execute=older, score=scored)
    assert (report["env_policy"], report["env_allow"], report["env_allow_prefixes"]) == (
        "allowlist",
        ["KEEP_ME"],
        ["APP_"],
    )


def test_report_md_exact_text(tmp_path: Path) -> None:
    _, run_dir = written(tmp_path, pass_threshold=0.5)
    expected = f"""# eval-banana report

| Field | Value |
| --- | --- |
| Run ID | `{RUN_ID}` |
| Score | `2/5` |
| Percentage | `40.0%` |
| Pass Threshold | `0.5` |
| Run Passed | `no` |

| Check ID | Type | Status | Score | Duration (ms) |
| --- | --- | --- | --- | --- |
| `ok` | `deterministic` | `passed` | `1` | `1234` |
| `bad` | `deterministic` | `failed` | `0` | `1234` |
| `broken` | `deterministic` | `error` | `0` | `1234` |
| `judge` | `harness_judge` | `failed` | `0` | `1234` |
| `ctl` | `deterministic` | `passed` (control: defect caught) | `1` | `1234` |

## broken

- Status: `error`
- Error: one \\| two three

## judge

- Status: `failed`
- Reason: multi line \\| reason
"""
    assert (run_dir / "report.md").read_text(encoding="utf-8") == expected


def test_report_md_threshold_prints_like_python(tmp_path: Path) -> None:
    _, run_dir = written(tmp_path)
    assert "| Pass Threshold | `1.0` |" in (run_dir / "report.md").read_text()


def test_stage_document_is_written(tmp_path: Path) -> None:
    _, run_dir = written(tmp_path)
    doc = read_stage(run_dir=run_dir, stage="report")
    assert doc.report_json == str(run_dir / "report.json")
    assert doc.report_md == str(run_dir / "report.md")
    assert set(doc.inputs) == {"config", "execute", "score"}


def test_summary_lines_exact(tmp_path: Path) -> None:
    report, run_dir = written(tmp_path)
    out = io.StringIO()
    print_summary(report=report, report_path=run_dir / "report.json", stream=out)
    assert out.getvalue() == (
        f"Run ID: {RUN_ID}\n"
        "Score: 2/5\n"
        "Percentage: 40.0%\n"
        "Passed: no\n"
        f"Report: {run_dir / 'report.json'}\n"
        "- ok: passed\n"
        "- bad: failed - exit code 4\n"
        # A reason stays on its check's line (eval-banana printed its line breaks).
        "- broken: error - one | two three\n"
        "- judge: failed - multi line | reason\n"
        "- ctl: passed (control: defect caught)\n"
        # The screen ends as pytest's does: the failed and errored checks, then the counts.
        "\n"
        "Failed and errored checks:\n"
        "FAILED bad - exit code 4 (eval_checks/bad.yaml)\n"
        "FAILED judge - multi line | reason (eval_checks/judge.yaml)\n"
        "ERROR broken - one | two three (eval_checks/broken.yaml)\n"
        "2 failed, 2 passed, 1 errored, 0 skipped, 0 not run in 2.3s\n"
    )
    assert "\x1b" not in out.getvalue()


def test_summary_passed_yes_and_long_lines_unwrapped() -> None:
    report = {
        "run_id": "r",
        "points_earned": 1,
        "total_points": 1,
        "percentage": 100.0,
        "run_passed": True,
        "checks": [{"check_id": "x" * 300, "check_type": "deterministic", "status": "passed"}],
    }
    lines = summary_lines(report=report, report_path=Path("/r/report.json"))
    assert lines[3] == "Passed: yes"
    out = io.StringIO()
    Console(stdout=out).summary(report=report, report_path=Path("/r/report.json"))
    assert out.getvalue().splitlines()[-2] == "- " + "x" * 300 + ": passed"
    assert out.getvalue().splitlines()[-1] == (
        "0 failed, 1 passed, 0 errored, 0 skipped, 0 not run in 0.0s"
    )
    quiet = io.StringIO()
    Console(quiet=True, stdout=quiet).summary(report=report, report_path=Path("/r/report.json"))
    assert quiet.getvalue() == ""


def test_a_reason_can_neither_start_a_line_nor_move_the_cursor() -> None:
    # A judge's reason (an LLM's words about untrusted output) or a script's last stderr line:
    # printed as it was, a line break followed by `::warning::` became a GitHub Actions
    # workflow command, and an escape sequence could erase what eb printed before it.
    reason = "bad\n::warning::injected\n\x1b[2Kfake PASSED\x07"
    report = {
        "run_id": "r",
        "points_earned": 0,
        "total_points": 2,
        "percentage": 0.0,
        "run_passed": False,
        "checks": [
            {
                "check_id": "judge",
                "check_type": "harness_judge",
                "status": "failed",
                "reason": reason,
            },
            {
                "check_id": "tool",
                "check_type": "deterministic",
                "status": "error",
                "error_detail": reason,
            },
        ],
        "skipped": [{"check_id": "later", "reason": "waits\n::error::x"}],
    }
    out = io.StringIO()
    Console(stdout=out).summary(report=report, report_path=Path("/r/report.json"))
    printed = out.getvalue()
    shown = "bad ::warning::injected \\x1b[2Kfake PASSED\\x07"
    assert f"- judge: failed - {shown}\n" in printed
    assert f"FAILED judge - {shown}\n" in printed and f"ERROR tool - {shown}\n" in printed
    assert "- later: skipped - waits ::error::x\n" in printed
    assert not [line for line in printed.splitlines() if line.startswith("::")]
    assert "\x1b" not in printed and "\x07" not in printed


def _drain(fd: int) -> bytes:
    """Everything written to a pty so far (non-blocking reads)."""
    os.set_blocking(fd, False)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return b"".join(chunks)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def test_summary_on_a_terminal_uses_rich_and_keeps_the_text() -> None:
    primary, secondary = os.openpty()
    with open(secondary, "w") as tty:
        report = {
            "run_id": "r",
            "points_earned": 0,
            "total_points": 1,
            "percentage": 0.0,
            "run_passed": False,
            "checks": [{"check_id": "c", "check_type": "x", "status": "failed"}],
        }
        print_summary(report=report, report_path=Path("/r/report.json"), stream=tty)
        tty.flush()
        time.sleep(0.1)
        raw = _drain(primary).decode()
    os.close(primary)
    assert "\x1b[" in raw  # styled by rich
    plain = re.sub(r"\x1b\[[0-9;]*m", "", raw).replace("\r\n", "\n")
    assert plain == (
        "Run ID: r\nScore: 0/1\nPercentage: 0.0%\nPassed: no\nReport: /r/report.json\n- c: failed\n"
        "\nFailed and errored checks:\nFAILED c\n"
        "1 failed, 0 passed, 0 errored, 0 skipped, 0 not run in 0.0s\n"
    )


def _result(status: str) -> CheckResult:
    check = planned_inline(id="c1", script="pass", project_root=ROOT)
    return build_result(check=check, status=status, started=MOMENT, completed=LATER)  # type: ignore[arg-type]


def test_progress_prints_one_line_per_finished_check_off_terminal() -> None:
    err = io.StringIO()
    console = Console(stderr=err, stdout=io.StringIO())
    check = planned_inline(id="c1", script="pass", project_root=ROOT)
    with ProgressReporter(console=console, total=10) as progress:
        progress.started(check)
        assert err.getvalue() == ""  # silent until a check finishes
        progress.finished(check, _result("failed"))
        progress.finished(check, _result("passed"))
    assert err.getvalue() == "[1/10] c1: failed (1234 ms)\n[2/10] c1: passed (1234 ms)\n"


def _case(family: str, number: int) -> Any:
    check = planned_inline(id=family, script="pass", project_root=ROOT)
    return check.model_copy(update={"id": f"{family}[c{number:02d}]", "family": family})


def test_progress_in_a_log_counts_a_large_familys_passing_cases() -> None:
    """A family of more cases than a log lists: its failures, errors and flaky passes keep
    their lines, its other passes are counted (told at the end, said why once); a family of
    FAMILY_CASES_LISTED cases and a plain check keep a line each, as eval-banana prints them."""
    err = io.StringIO()
    big = [_case("big", n) for n in range(FAMILY_CASES_LISTED + 1)]
    small = [_case("small", n) for n in range(FAMILY_CASES_LISTED)]
    plain = planned_inline(id="plain", script="pass", project_root=ROOT)
    checks = [*big, *small, plain]
    flaky = _result("passed").model_copy(update={"details": {"flaky": True}})
    outcome = {"big[c03]": _result("failed"), "big[c05]": _result("error"), "big[c07]": flaky}
    with ProgressReporter.over(checks=checks, console=Console(stderr=err)) as progress:
        for check in checks:
            progress.started(check)
            progress.finished(check, outcome.get(check.id, _result("passed")))
    lines = err.getvalue().splitlines()
    assert lines[:3] == [
        "[4/42] big[c03]: failed (1234 ms)",
        "[6/42] big[c05]: error (1234 ms)",
        "[8/42] big[c07]: passed (flaky, 1234 ms)",
    ]
    assert [line for line in lines if line.startswith("[") and "small[" in line] == [
        f"[{22 + n}/42] small[c{n:02d}]: passed (1234 ms)" for n in range(FAMILY_CASES_LISTED)
    ]
    assert lines[-2:] == [
        "[42/42] plain: passed (1234 ms)",
        "[42/42] 18 cases passed (a dataset family of more than 20 cases logs only the cases "
        "that did not pass; report.md lists every case)",
    ]
    assert len(lines) == 3 + FAMILY_CASES_LISTED + 2


def test_progress_in_a_log_tells_the_count_as_it_goes_with_the_checks_running() -> None:
    """Told at most every `count_every_s` while checks run (here: at once), each count is of
    the cases since the last and names the checks still running; the reason is said once."""
    err = io.StringIO()
    cases = [_case("big", n) for n in range(FAMILY_CASES_LISTED + 5)]
    with ProgressReporter.over(checks=cases, console=Console(stderr=err)) as progress:
        progress.count_every_s = 0
        for check in cases:
            progress.started(check)
        progress.finished(cases[0], _result("passed"))
        progress.finished(cases[1], _result("passed"))
    lines = err.getvalue().splitlines()
    assert lines[0].startswith("[1/25] 1 case passed (a dataset family of more than 20 ")
    assert lines[0].endswith("; running: big[c01], big[c02], big[c03], big[c04] (+20)")
    assert lines[1] == "[2/25] 1 case passed; running: big[c02], big[c03], big[c04], big[c05] (+19)"
    assert len(lines) == 2  # nothing left uncounted at the end


def test_a_replayed_run_folds_the_lines_its_run_folded() -> None:
    err = io.StringIO()
    lines = [f"big[c{n}]: passed (cached, 3 ms)" for n in range(4)]
    ProgressReporter(console=Console(stderr=err), total=4).replayed(lines=lines, folded=[0, 2, 3])
    assert err.getvalue().splitlines() == [
        "[2/4] big[c1]: passed (cached, 3 ms)",
        "[4/4] 3 cases passed (a dataset family of more than 20 cases logs only the cases that "
        "did not pass; report.md lists every case)",
    ]


def test_progress_quiet_prints_nothing() -> None:
    err = io.StringIO()
    check = planned_inline(id="c1", script="pass", project_root=ROOT)
    with ProgressReporter(console=Console(quiet=True, stderr=err), total=1) as progress:
        progress.started(check)
        progress.finished(check, _result("passed"))
    assert err.getvalue() == ""


def test_progress_on_a_terminal_is_live_with_counts_and_current_ids() -> None:
    primary, secondary = os.openpty()
    chunks: list[bytes] = []
    with open(secondary, "w") as tty:
        console = Console(stderr=tty, stdout=io.StringIO())
        first = planned_inline(id="first-check", script="pass", project_root=ROOT)
        # A case id: its brackets read like a style tag, and must be shown as written.
        second = planned_inline(id="second-check", script="pass", project_root=ROOT)
        second = second.model_copy(update={"id": "second-check[bold]"})
        with ProgressReporter(console=console, total=2) as progress:
            progress.started(first)
            progress.started(second)
            time.sleep(0.3)
            chunks.append(_drain(primary))
            progress.finished(first, _result("passed"))
            time.sleep(0.3)
            chunks.append(_drain(primary))
    os.close(primary)
    text = b"".join(chunks).decode(errors="replace")
    assert "0/2 checks" in text and "first-check, second-check[bold]" in text
    assert "1/2 checks" in text
    assert "[1/2]" not in text  # the plain CI line is not used on a terminal
    assert "failed" not in text  # no failure yet, so none is shown


def test_progress_on_a_terminal_shows_the_failures_so_far() -> None:
    primary, secondary = os.openpty()
    chunks: list[bytes] = []
    with open(secondary, "w") as tty:
        console = Console(stderr=tty, stdout=io.StringIO())
        checks = [planned_inline(id=f"c{n}", script="pass", project_root=ROOT) for n in range(4)]
        with ProgressReporter(console=console, total=4) as progress:
            for check in checks:
                progress.started(check)
            progress.finished(checks[0], _result("failed"))
            progress.finished(checks[1], _result("error"))
            time.sleep(0.3)
            chunks.append(_drain(primary))
            progress.finished(checks[2], _result("failed"))
            time.sleep(0.3)
            chunks.append(_drain(primary))
    os.close(primary)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode(errors="replace"))
    assert "2/4 checks" in text and "1 failed, 1 errored" in text
    assert "3/4 checks" in text and "2 failed, 1 errored" in text


def test_progress_line_keeps_one_parenthesis() -> None:
    from eval_banana.runners.results import progress_line

    cached = _result("passed").model_copy(update={"details": {"cache": {"hit": True}}})
    assert progress_line(check_id="c1", result=cached) == "c1: passed (cached, 1234 ms)"
    assert progress_line(check_id="c1", result=_result("failed")) == "c1: failed (1234 ms)"


def test_report_json_matches_the_published_model_and_schema(tmp_path: Path) -> None:
    report, run_dir = written(tmp_path)
    data = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    assert ReportJson.model_validate(data).model_dump(mode="json") == data
    schema = json.loads((REPO / "schemas" / "report.schema.json").read_text())
    jsonschema.validate(data, schema)
