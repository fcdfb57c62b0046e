"""The history page and report.html's history marks in a real headless Chromium (`pytest -m
browser`, as tests/reporting/test_html_browser.py): they open without a console error, the
charts hold one point per run, the strips are painted, the filters work."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EbResult
from tests.reporting.history_sample import HOSTILE_ID
from tests.reporting.test_history_pages import (
    _isolated,  # noqa: F401  (the fixture, applied to these tests too)
    history_project,
    sample_project,
)
from tests.reporting.test_html_browser import (
    _assert_png,
    _click,
    _no_errors_no_network,
    _open,
    browser,  # noqa: F401  (the module's headless Chromium)
)

pytestmark = pytest.mark.browser
Eb = Callable[..., EbResult]

SHOWN_IDS = (
    "return Array.from(document.querySelectorAll('#checks tr.r'))"
    ".filter(function (r) { return r.offsetParent !== null; })"
    ".map(function (r) { return r.querySelector('td.id').firstChild.textContent.trim(); });"
)
# The colour of column `arguments[1]` of a strip's canvas (its middle row), as "r,g,b".
PIXEL = (
    "var canvas = arguments[0]; var cell = canvas.width / arguments[2];"
    "var d = canvas.getContext('2d').getImageData(Math.floor(arguments[1] * cell + cell / 2),"
    " 8, 1, 1).data; return d[0] + ',' + d[1] + ',' + d[2];"
)
CSS_COLOR = (
    "var probe = document.createElement('span'); probe.style.color = "
    "getComputedStyle(document.body).getPropertyValue(arguments[0]);"
    "document.body.appendChild(probe); var c = getComputedStyle(probe).color;"
    "probe.remove(); return c.replace(/[^0-9,]/g, '');"
)


def _strip(driver: Any, check_id: str) -> Any:
    from selenium.webdriver.common.by import By

    for row in driver.find_elements(By.CSS_SELECTOR, "#checks tr.r"):
        if row.find_element(By.CSS_SELECTOR, "td.id").text.split(" ")[0] == check_id:
            return row.find_element(By.CSS_SELECTOR, "canvas.strip")
    raise AssertionError(check_id)


def test_the_history_page_draws_and_filters(
    browser: Any,  # noqa: F811
    tmp_path: Path,
    eb: Eb,
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    root = tmp_path / "p"
    run_ids = sample_project(root)
    page = tmp_path / "history.html"
    assert eb("history", "--cwd", str(root), "--html", str(page)).exit_code == 0
    _open(browser, page)
    charts = browser.find_elements(By.CSS_SELECTOR, ".chart svg")
    assert [len(chart.find_elements(By.TAG_NAME, "circle")) for chart in charts] == [9, 9, 9]
    assert len(run_ids) == 9
    every = sorted(browser.execute_script(SHOWN_IDS))
    assert HOSTILE_ID in every and len(every) == 6

    # Each strip is painted, a column per run, in the status colours of the page.
    breaker = _strip(browser, "breaker")
    assert breaker.get_attribute("data-drawn") == "1"
    passed, failed = (browser.execute_script(CSS_COLOR, name) for name in ("--pass", "--fail"))
    assert browser.execute_script(PIXEL, breaker, 0, 9) == passed
    assert browser.execute_script(PIXEL, breaker, 7, 9) == failed
    flipper = _strip(browser, "flipper")
    colours = [browser.execute_script(PIXEL, flipper, column, 9) for column in range(9)]
    assert colours == [passed if column % 2 == 0 else failed for column in range(9)]

    _click(browser, "#flaky-filter")
    assert sorted(browser.execute_script(SHOWN_IDS)) == ["flipper", "refunds[late]"]
    assert browser.find_element(By.ID, "shown").text == "2 of 6 checks shown"
    _click(browser, "#flaky-filter")
    Select(browser.find_element(By.ID, "family-filter")).select_by_value("refunds")
    assert sorted(browser.execute_script(SHOWN_IDS)) == ["refunds[early]", "refunds[late]"]
    Select(browser.find_element(By.ID, "family-filter")).select_by_value("")
    Select(browser.find_element(By.ID, "tag-filter")).select_by_value("fast")
    assert sorted(browser.execute_script(SHOWN_IDS)) == ["breaker", "steady"]
    Select(browser.find_element(By.ID, "tag-filter")).select_by_value("")
    assert len(browser.execute_script(SHOWN_IDS)) == 6
    shot = tmp_path / "history.png"
    assert browser.save_screenshot(str(shot))
    _assert_png(shot, min_width=1000)
    _no_errors_no_network(browser)


def test_report_html_shows_history_badges_and_sparklines(
    browser: Any,  # noqa: F811
    tmp_path: Path,
    eb: Eb,
) -> None:
    from selenium.webdriver.common.by import By

    root = history_project(tmp_path / "p", counters=tmp_path / "counters")
    for _ in range(4):
        eb("run", "--cwd", str(root))
    pages = [run / "report.html" for run in (root / ".eval-banana" / "results").iterdir()]
    _open(browser, max(pages, key=lambda page: page.stat().st_mtime_ns))
    badges = {}
    for row in browser.find_elements(By.CSS_SELECTOR, "#checks tr.r"):
        check_id = row.find_element(By.CSS_SELECTOR, "button.x").text
        badges[check_id] = [b.text for b in row.find_elements(By.CSS_SELECTOR, ".hb")]
        spark = row.find_element(By.CSS_SELECTOR, "svg.spark")
        assert spark.get_attribute("data-n") == "4" and spark.size["width"] == 20
    assert badges == {
        "breaker": ["new failure"],
        "flipper": ["flaky in history"],
        "mender": ["fixed"],
        "steady": [],
    }
    _no_errors_no_network(browser)
