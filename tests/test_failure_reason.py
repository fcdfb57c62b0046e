"""A failed deterministic check explains itself: what its script raised, everywhere a reason goes."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from eval_banana.runners.explain import MAX_REASON_CHARS, failure_reason
from tests.conftest import EbResult, check_yaml


def _stderr(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "stderr.txt"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


TRACEBACK = """\
Traceback (most recent call last):
  File "/tmp/x/inline_check.py", line 3, in <module>
    assert count == 3, f"expected 3, got {count!r}"
           ^^^^^^^^^^
AssertionError: expected 3, got '2'
"""


@pytest.mark.parametrize(
    ("stderr", "exit_code", "expected"),
    [
        (TRACEBACK, 1, "AssertionError: expected 3, got '2'"),
        # Chained: the last exception raised is the one reported.
        (
            TRACEBACK
            + "\nDuring handling of the above exception, another exception occurred:\n\n"
            + TRACEBACK.replace("AssertionError: expected 3, got '2'", "KeyError: 'total'"),
            1,
            "KeyError: 'total'",
        ),
        # Lines printed after the traceback do not hide it.
        (TRACEBACK + "cleanup done\n", 1, "AssertionError: expected 3, got '2'"),
        # A multi-line message: its first line, the type included.
        (
            TRACEBACK.replace("got '2'", "got '2'\nand more"),
            1,
            "AssertionError: expected 3, got '2'",
        ),
        ("warming up\nREADME.md is missing\n\n", 1, "README.md is missing"),
        ("", 2, "exit code 2"),
        ("   \n\n", 3, "exit code 3"),
        ("", -9, "exit code -9 (killed by SIGKILL)"),
        # sys.exit(-256): asked for by the script, not minus a signal number.
        ("", -256, "exit code -256"),
        (
            "  File \"c.py\", line 1\n    x = (\n        ^\nSyntaxError: '(' was never closed\n",
            1,
            "SyntaxError: '(' was never closed",
        ),
    ],
)
def test_the_reason_is_the_last_exception_else_the_last_line_else_the_exit_code(
    tmp_path: Path, stderr: str, exit_code: int, expected: str
) -> None:
    path = _stderr(tmp_path, stderr) if stderr else None
    assert failure_reason(stderr_path=path, exit_code=exit_code) == expected


GROUP = """\
  + Exception Group Traceback (most recent call last):
  |   File "/tmp/x/inline_check.py", line 2, in <module>
  |     raise ExceptionGroup("2 rows are wrong", errors)
  | ExceptionGroup: 2 rows are wrong (2 sub-exceptions)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "/tmp/x/inline_check.py", line 1, in check
    | ValueError: row 3: price is negative
    +---------------- 2 ----------------
    | + Exception Group Traceback (most recent call last):
    | | ExceptionGroup: inner (1 sub-exception)
    | +-+---------------- 1 ----------------
    |   | TypeError: row 7: price is text
    |   +------------------------------------
    +------------------------------------
"""


@pytest.mark.parametrize(
    ("stderr", "expected"),
    [
        (GROUP, "ExceptionGroup: 2 rows are wrong (2 sub-exceptions)"),
        # Cleanup printed after it does not hide it either.
        (GROUP + "cleanup done\n", "ExceptionGroup: 2 rows are wrong (2 sub-exceptions)"),
        # A plain traceback after a group: the last one wins.
        (
            GROUP
            + "\nDuring handling of the above exception, another exception occurred:\n\n"
            + TRACEBACK,
            "AssertionError: expected 3, got '2'",
        ),
    ],
)
def test_an_exception_group_s_reason_is_its_own_line_not_its_box(
    tmp_path: Path, stderr: str, expected: str
) -> None:
    assert failure_reason(stderr_path=_stderr(tmp_path, stderr), exit_code=1) == expected


def test_a_script_that_ended_through_sys_exit_is_told_by_its_last_line(tmp_path: Path) -> None:
    # A handled exception it logged is not the traceback it ended with: its exit message is.
    logged = "ERROR:root:optional setting missing\n" + TRACEBACK + "total() returned 3\n"
    path = _stderr(tmp_path, logged)
    assert failure_reason(stderr_path=path, exit_code=1, exited=True) == "total() returned 3"
    assert failure_reason(stderr_path=path, exit_code=1) == "AssertionError: expected 3, got '2'"


def test_the_reason_is_one_bounded_line(tmp_path: Path) -> None:
    long = "ValueError: " + "word\tafter   word " * 100
    reason = failure_reason(stderr_path=_stderr(tmp_path, f"x\n{long}\n"), exit_code=1)
    assert len(reason) == MAX_REASON_CHARS and reason.endswith("…")
    assert "\t" not in reason and "  " not in reason and "\n" not in reason


def test_a_huge_last_line_is_read_in_bounded_pieces(tmp_path: Path) -> None:
    # 20 MB without a newline after a real message line: the reason is the message line's.
    path = _stderr(tmp_path, b"the real message\n" + b"x" * (20 * 1024 * 1024))
    reason = failure_reason(stderr_path=path, exit_code=1)
    assert reason.startswith("x") and len(reason) == MAX_REASON_CHARS


def test_undecodable_bytes_do_not_break_the_reason(tmp_path: Path) -> None:
    path = _stderr(tmp_path, b"RuntimeError: bad \xff byte\n")
    assert failure_reason(stderr_path=path, exit_code=1) == "RuntimeError: bad \ufffd byte"


SCRIPT = """\
count = len("ab")
assert count == 3, f"expected 3, got {str(count)!r}"
"""


def test_the_reason_reaches_every_report(
    project: Callable[..., Path],
    eb: Callable[..., EbResult],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = project(
        {
            "eval_checks/counts.yaml": check_yaml("counts", script=SCRIPT),
            "eval_checks/ok.yaml": check_yaml("ok"),
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    summary = tmp_path / "summary.md"
    junit = tmp_path / "junit.xml"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    done = eb("run", "--cwd", str(root), "--junit-xml", str(junit), "--annotations", "github")
    expected = "AssertionError: expected 3, got '2'"
    assert done.exit_code == 1
    assert f"- counts: failed - {expected}" in done.stdout
    assert f"title=counts failed::{expected}" in done.stdout
    (run_dir,) = list((root / "runs").iterdir())
    report = json.loads((run_dir / "report.json").read_text())
    (counts,) = [check for check in report["checks"] if check["check_id"] == "counts"]
    assert counts["reason"] == expected and counts["exit_code"] == 1
    assert expected in counts["stderr"]  # the full stderr is still there
    assert f"- Reason: {expected}" in (run_dir / "report.md").read_text()
    assert expected in summary.read_text()
    assert expected in (run_dir / "report.html").read_text()
    failure = ET.parse(junit).getroot().find(".//testcase[@name='counts']/failure")
    assert failure is not None and failure.get("message") == f"failed: {expected}"


@pytest.mark.parametrize(
    ("files", "shown"),
    [
        ({"eval_checks/a.yaml": check_yaml("broken", script="x = (\n")}, "the inline script"),
        (
            {
                "eval_checks/a.yaml": "schema_version: 1\nid: broken\ntype: deterministic\n"
                "description: d.\nscript_path: probe.py\n",
                "eval_checks/probe.py": "import sys\nif True:\nprint('x')\n",
            },
            "probe.py",
        ),
    ],
)
def test_a_script_that_does_not_compile_is_an_error_even_for_a_control(
    project: Callable[..., Path], eb: Callable[..., EbResult], files: dict[str, str], shown: str
) -> None:
    # A syntax error says nothing about what the check checks: counted as a failure, it would
    # let a control check (expect: fail) report its defect as caught.
    control = {
        name: text.replace("type: deterministic", "type: deterministic\nexpect: fail")
        for name, text in files.items()
    }
    for variant in (files, control):
        root = project(variant, config='[core]\noutput_dir = "runs"\n')
        done = eb("run", "--cwd", str(root), "--no-html")
        assert done.exit_code == 1
        report = json.loads(next((root / "runs").glob("*/report.json")).read_text())
        (check,) = report["checks"]
        assert check["status"] == "error" and check["score"] == 0
        assert check["error_detail"].startswith("Deterministic script does not compile: ")
        assert check["error_detail"].endswith(f"{shown})")
        shutil.rmtree(root / "runs")
