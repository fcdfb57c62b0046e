"""report.html's dataset families in a real headless Chromium (the browser suite, `-m browser`):
a family row opens into its cases, failures first, shows its gate, and follows the filters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_html_browser import VISIBLE_ROWS, _click, _no_errors_no_network, _open
from test_html_browser import browser as browser  # the Chromium of the browser suite
from test_html_families import family_run as family_run  # a real run with two families

from eval_banana.reporting.html import write_html
from tests.reporting.conftest import Run

pytestmark = pytest.mark.browser


def _page(run: Run) -> Path:
    path = run.run_dir / "report.html"
    write_html(report=run.report, run_dir=run.run_dir, path=path)
    return path


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
    assert statuses == ["failed", "failed", "passed", "passed", "passed", "passed"]
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
    # The id it sets narrows the open case list as typing it into the id filter does.
    assert "1 of 6 cases shown" in detail.text
    shown = [
        row.find_element(By.CSS_SELECTOR, "button.fc").text
        for row in detail.find_elements(By.CSS_SELECTOR, "tr.fcase")
        if row.is_displayed()
    ]
    assert shown == ["qa[q5]"]

    # Closing the family row removes its cases again.
    _click(browser, '#families tr.fam[data-f="0"] button.x')
    assert browser.find_elements(By.CSS_SELECTOR, "#families tr.fd") == []
    _no_errors_no_network(browser)
