"""An errored judge's class and cause, per row: in JUnit's `<error type=...>` and report.html.

A real `eb run` of two stand-in judges: one whose agent reports HTTP 429 in its result event
(infrastructure), one that answers in prose (verdict).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from tests.runners.test_retries import Eb, Project, make, run_dir_of


def _errored_run(project: Project, eb: Eb) -> tuple[ET.Element, str]:
    root = make(project, {"limited": "e429", "prose": "noverdict"}, retries=None)
    result = eb("run", "--cwd", str(root), "--junit-xml", "junit.xml")
    assert result.exit_code == 1, result.stderr + result.stdout
    html = (run_dir_of(root) / "report.html").read_text(encoding="utf-8")
    return ET.parse(root / "junit.xml").getroot(), html


def _error_of(tree: ET.Element, name: str) -> ET.Element:
    case = tree.find(f"testsuite/testcase[@name='{name}']")
    assert case is not None
    error = case.find("error")
    assert error is not None
    return error


def test_junit_error_type_is_the_error_class_and_the_message_leads_with_the_cause(
    project: Project, eb: Eb
) -> None:
    tree, _ = _errored_run(project, eb)
    limited = _error_of(tree, "limited")
    assert limited.get("type") == "infrastructure"
    assert (limited.get("message") or "").startswith("infrastructure (HTTP 429): Agent exited")
    prose = _error_of(tree, "prose")
    assert prose.get("type") == "verdict"
    assert (prose.get("message") or "").startswith("verdict (no valid verdict): Harness judge")


def _row(html: str, check_id: str) -> str:
    for row in re.findall(r'<tr class="r [^"]*".*?</tr>', html, flags=re.S):
        if f">{check_id}</button>" in row:
            return str(row)
    raise AssertionError(f"no row for {check_id}")


def test_report_html_rows_name_the_error_class_and_the_page_counts_them(
    project: Project, eb: Eb
) -> None:
    _, html = _errored_run(project, eb)
    limited = _row(html, "limited")
    assert '<span class="ec ec-infrastructure">infrastructure: HTTP 429</span>' in limited
    prose = _row(html, "prose")
    assert '<span class="ec ec-verdict">verdict: no valid verdict</span>' in prose
    assert "<dt>Errors</dt><dd>2 errors: 1 infrastructure (HTTP 429), 1 verdict</dd>" in html
