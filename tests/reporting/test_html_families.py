"""report.html over a run with dataset families: a families table whose rows open into their
cases, failures first, with each family's pass rate, counts and gate.

The markup test runs anywhere; the `browser` one drives the page in a real headless Chromium
(see test_html_browser.py for the browser it needs).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from conftest import Run, finish, run_eb, write_project
from test_html_browser import VISIBLE_ROWS, _click, _no_errors_no_network, _open
from test_html_browser import browser as browser  # the module's Chromium, shared

from eval_banana.reporting.html import render_html, write_html

FAMILY = """\
schema_version: 1
id: {id}
type: deterministic
description: "case {{{{ case.id }}}}"
tags: [{tag}]
{extra}
cases:
{cases}
script: |
  import json, sys
  ctx = json.load(open(sys.argv[1]))
  if ctx["case"]["ok"] != "yes":
      print("case " + ctx["case_id"] + " said no")
      sys.exit(1)
"""

QA_CASES = [("q1", "yes"), ("q2", "no"), ("q3", "yes"), ("q4", "yes"), ("q5", "no"), ("q6", "yes")]


def _cases(rows: list[tuple[str, str]]) -> str:
    return "\n".join(f"  - {{id: {case}, ok: '{ok}'}}" for case, ok in rows)


CHECKS = {
    "eval_checks/plain.yaml": """\
schema_version: 1
id: plain_ok
type: deterministic
description: A plain check.
script: print("ok")
""",
    "eval_checks/qa.yaml": FAMILY.format(
        id="qa", tag="qa", extra="min_pass_rate: 0.9", cases=_cases(QA_CASES)
    ),
    "eval_checks/tone.yaml": FAMILY.format(
        id="tone", tag="tone", extra="", cases=_cases([("t1", "yes"), ("t2", "yes")])
    ),
}


@pytest.fixture(scope="module")
def family_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    project = write_project(tmp_path_factory.mktemp("families") / "proj", checks=CHECKS)
    completed = run_eb("run", "--cwd", str(project))
    assert completed.returncode == 1, completed.stderr  # qa at 4/6 is below its 0.9 gate
    return finish(project, completed)


def _page(run: Run) -> Path:
    path = run.run_dir / "report.html"
    write_html(report=run.report, run_dir=run.run_dir, path=path)
    return path


def test_a_row_per_family_with_rate_counts_and_gate(family_run: Run, finished_run: Run) -> None:
    text = render_html(report=family_run.report, run_dir=family_run.run_dir)
    rows = re.findall(r'<tr class="fam ([^"]+)" data-f="\d+">(.*?)</tr>', text)
    cells = [(css, re.findall(r"<td[^>]*>(?:<[^>]+>)*([^<]+)", row)) for css, row in rows]
    assert cells == [
        (
            "gate-broken",
            ["qa", "66.7%", "6", "4", "2", "0", "NOT held (min_pass_rate 0.9): the run fails"],
        ),
        ("gate-none", ["tone", "100.0%", "2", "2", "0", "0", "no gate"]),
    ]
    # A run without families keeps its page as it was: no table, no data, no script.
    plain = render_html(report=finished_run.report, run_dir=finished_run.run_dir)
    assert 'id="families"' not in plain and "eb-families" not in plain


@pytest.mark.browser
def test_a_family_row_opens_into_its_cases_failures_first(
    browser: Any, family_run: Run, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, _page(family_run))
    qa = browser.find_element(By.CSS_SELECTOR, '#families tr.fam[data-f="0"]')
    assert "NOT held (min_pass_rate 0.9)" in qa.find_element(By.CSS_SELECTOR, ".gate").text
    assert "66.7%" in qa.text
    assert browser.find_elements(By.CSS_SELECTOR, "#families tr.fd") == []
    _click(browser, '#families tr.fam[data-f="0"] button.x')
    detail = browser.find_element(By.CSS_SELECTOR, '#families tr.fam[data-f="0"] + tr.fd')
    cases = [
        row.find_element(By.CSS_SELECTOR, "button.fc").text
        for row in detail.find_elements(By.CSS_SELECTOR, "tr.fcase")
    ]
    # Failures first, then the passed cases, each group in the dataset's order.
    assert cases == ["qa[q2]", "qa[q5]", "qa[q1]", "qa[q3]", "qa[q4]", "qa[q6]"]
    statuses = [
        row.find_element(By.CSS_SELECTOR, ".st").text
        for row in detail.find_elements(By.CSS_SELECTOR, "tr.fcase")
    ]
    assert statuses[:2] == ["FAILED", "FAILED"] or statuses[:2] == ["failed", "failed"]
    assert "6 of 6 cases shown" in detail.text
    # Each case with the reason its row in the checks table shows.
    first = detail.find_elements(By.CSS_SELECTOR, "tr.fcase")[0]
    in_table = browser.find_element(By.CSS_SELECTOR, '#checks tr.r[data-i="0"] td.why').text
    assert in_table and first.find_element(By.CSS_SELECTOR, "td.why").text == in_table

    shot = tmp_path / "families.png"
    assert browser.save_screenshot(str(shot))

    # The checks table's filters narrow the open family's cases too.
    _click(browser, '#status-filter button[data-g="failed"]')
    shown = [
        row.find_element(By.CSS_SELECTOR, "button.fc").text
        for row in detail.find_elements(By.CSS_SELECTOR, "tr.fcase")
        if row.is_displayed()
    ]
    assert shown == ["qa[q2]", "qa[q5]"]
    assert "2 of 6 cases shown" in detail.text
    assert browser.execute_script(VISIBLE_ROWS) == ["qa[q2]", "qa[q5]"]

    # A case's id shows its own row in the checks table.
    _click(browser, '#status-filter button[data-g="all"]')
    detail.find_elements(By.CSS_SELECTOR, "button.fc")[1].click()
    assert browser.execute_script(VISIBLE_ROWS) == ["qa[q5]"]

    # Closing the family row removes its cases again.
    _click(browser, '#families tr.fam[data-f="0"] button.x')
    assert browser.find_elements(By.CSS_SELECTOR, "#families tr.fd") == []
    _no_errors_no_network(browser)
