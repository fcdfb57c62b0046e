"""report.html and the history page at a phone's, a small window's and a desktop's width, and
printed, in a real headless Chromium (the browser suite, `-m browser`): every check's id and
reason stay readable, nothing widens the page, printing loses no reason, note or strip, and a
dataset case's button shows exactly that case."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EbResult
from tests.reporting.test_html_browser import (
    VISIBLE_ROWS,
    _no_errors_no_network,
    _open,
    browser,  # noqa: F401  (the module's headless Chromium)
)

pytestmark = pytest.mark.browser
Eb = Callable[..., EbResult]

LONG_ID = "login_page_rejects_bad_password"
REASON = "expected HTTP 401 from /login but got 200 OK; the body was the dashboard page"
CASES = 90  # enough strips that most are far below the first screen

CHECK = """\
schema_version: 1
type: deterministic
id: {id}
description: d
tags: [security, checkout-flow, smoke]
script: |
  import sys; print({reason!r}, file=sys.stderr); sys.exit(1)
"""
FAMILY = """\
schema_version: 1
type: deterministic
id: {id}
description: d
{cases}
script: |
  import sys, json
  case = json.load(open(sys.argv[1]))["case"]["id"]
  if case in ("c05", "c80", "x"):
      print({reason!r}, file=sys.stderr); sys.exit(1)
"""

# Each table's header cells and each shown row's cells: their boxes and whether their text
# fits them (a cell cut, or text running into the next cell, has scrollWidth > clientWidth).
CELLS = """
var out = {page: document.documentElement.scrollWidth, inner: window.innerWidth, cells: []};
document.querySelectorAll('table#checks tr.r, table#families tr').forEach(function (row) {
  if (row.offsetParent === null) { return; }
  Array.prototype.forEach.call(row.children, function (cell, k) {
    var box = cell.getBoundingClientRect();
    if (box.width === 0 || getComputedStyle(cell).visibility === 'hidden') { return; }
    out.cells.push({table: row.closest('table').id, row: row.className, k: k,
                    cls: cell.className, text: cell.textContent.trim(),
                    width: box.width, fits: cell.scrollWidth <= cell.clientWidth + 1});
  });
});
return out;
"""
# The box of the long id's button.
ID_BOX = (
    "var b = Array.from(document.querySelectorAll('#checks button.x'))"
    f".find(function (x) {{ return x.textContent === '{LONG_ID}'; }});"
    "var r = b.getBoundingClientRect(); return {width: r.width, height: r.height,"
    " line: parseFloat(getComputedStyle(b).lineHeight)};"
)


@pytest.fixture(scope="module")
def narrow_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from tests.reporting.conftest import run_eb

    root = tmp_path_factory.mktemp("narrow") / "proj"
    (root / "eval_checks").mkdir(parents=True)
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text("")
    (root / "eval_checks" / "a.yaml").write_text(CHECK.format(id=LONG_ID, reason=REASON))
    rows = "".join(json.dumps({"id": f"c{k:02d}"}) + "\n" for k in range(CASES))
    (root / "rows.jsonl").write_text(rows)
    (root / "eval_checks" / "fam.yaml").write_text(
        FAMILY.format(id="fam", cases="cases_from: rows.jsonl", reason=REASON)
    )
    for name in ("qa", "preqa"):
        (root / "eval_checks" / f"{name}.yaml").write_text(
            FAMILY.format(id=name, cases="cases: [{id: x}, {id: y}]", reason=REASON)
        )
    for _ in range(2):
        assert run_eb("run", "--cwd", str(root)).returncode == 1
    history = root / "history.html"
    assert run_eb("history", "--cwd", str(root), "--html", str(history)).returncode == 0
    yield root


def _report(root: Path) -> Path:
    runs = sorted((root / ".eval-banana" / "results").iterdir())
    return runs[-1] / "report.html"


def _at_width(driver: Any, width: int, *, height: int = 900) -> None:
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500},
    )


def _shot(driver: Any, path: Path) -> None:
    path.write_bytes(base64.b64decode(driver.execute_cdp_cmd("Page.captureScreenshot", {})["data"]))


@pytest.mark.parametrize("width", [1280, 800, 390])
def test_report_html_keeps_ids_and_reasons_readable(
    browser: Any,  # noqa: F811
    narrow_project: Path,
    width: int,
) -> None:
    page = _report(narrow_project)
    _at_width(browser, width)
    try:
        _open(browser, page)
        found = browser.execute_script(CELLS)
        box = browser.execute_script(ID_BOX)
        _shot(browser, page.parent / f"narrow-{width}.png")  # kept beside the page to look at
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert found["page"] <= found["inner"], f"the page scrolls sideways at {width} px"
    # The id on at most three lines, not a character a line; the reason given room (and, on a
    # phone, wrapped in full).
    assert box["width"] >= 150 and box["height"] <= 3 * box["line"] + 1, box
    reasons = [cell for cell in found["cells"] if cell["cls"] == "why" and REASON in cell["text"]]
    assert reasons and all(cell["width"] >= 240 for cell in reasons), reasons
    assert all(cell["fits"] for cell in reasons if width == 390), reasons
    # No header or number in the families table runs into its neighbour.
    families = [cell for cell in found["cells"] if cell["table"] == "families"]
    assert families and all(cell["fits"] for cell in families), families
    _no_errors_no_network(browser)


@pytest.mark.parametrize("width", [1280, 800, 390])
def test_the_history_page_keeps_notes_readable(
    browser: Any,  # noqa: F811
    narrow_project: Path,
    width: int,
) -> None:
    page = narrow_project / "history.html"
    _at_width(browser, width)
    try:
        _open(browser, page)
        found = browser.execute_script(CELLS)
        _shot(browser, narrow_project / f"history-{width}.png")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert found["page"] <= found["inner"], f"the page scrolls sideways at {width} px"
    notes = [cell for cell in found["cells"] if cell["cls"] == "why" and cell["text"]]
    assert notes and all(cell["width"] >= 150 and cell["fits"] for cell in notes), notes
    _no_errors_no_network(browser)


def _printed_text(driver: Any) -> str:
    """The PDF Chromium prints, as its text: the words of each page's content stream are what
    the reader gets, so a cut reason or note is missing there."""
    pdf = base64.b64decode(driver.execute_cdp_cmd("Page.printToPDF", {})["data"])
    assert pdf.startswith(b"%PDF")
    return pdf.decode("latin-1")


def test_printing_the_history_page_paints_every_strip_and_every_note(
    browser: Any,  # noqa: F811
    narrow_project: Path,
) -> None:
    _open(browser, narrow_project / "history.html")
    count = "return document.querySelectorAll('canvas.strip').length"
    drawn = "return document.querySelectorAll('canvas.strip[data-drawn]').length"
    total = browser.execute_script(count)
    assert total == CASES + 5
    assert browser.execute_script(drawn) < total  # only those near the screen, before printing
    _printed_text(browser)
    assert browser.execute_script(drawn) == total
    # In print, each note is laid out in full: wrapped, not cut to its first letters.
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    try:
        cut = browser.execute_script(
            "return Array.from(document.querySelectorAll('#checks td.why'))"
            ".filter(function (c) { return c.scrollWidth > c.clientWidth + 1; }).length"
        )
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
    assert cut == 0


def test_printing_report_html_shows_every_reason_whole(
    browser: Any,  # noqa: F811
    narrow_project: Path,
) -> None:
    _open(browser, _report(narrow_project))
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    # A page as wide as a printed one (A4/Letter less margins, in CSS pixels).
    _at_width(browser, 720)
    try:
        found = browser.execute_script(CELLS)
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    reasons = [cell for cell in found["cells"] if cell["cls"] == "why" and REASON in cell["text"]]
    assert len(reasons) == 3 + 2 and all(cell["fits"] for cell in reasons), reasons
    families = [cell for cell in found["cells"] if cell["table"] == "families"]
    assert families and all(cell["fits"] for cell in families), families


def test_a_case_button_shows_exactly_that_case(
    browser: Any,  # noqa: F811
    narrow_project: Path,
) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, _report(narrow_project))
    qa = [
        row
        for row in browser.find_elements(By.CSS_SELECTOR, "#families tr.fam")
        if row.text.split()[0] == "qa"
    ][0]
    qa.find_element(By.CSS_SELECTOR, "button.x").click()
    case = [b for b in browser.find_elements(By.CSS_SELECTOR, "button.fc") if b.text == "qa[x]"]
    case[0].click()
    assert browser.execute_script(VISIBLE_ROWS) == ["qa[x]"]  # not preqa[x] as well
    detail = browser.find_element(By.CSS_SELECTOR, "#families tr.fd")
    assert "1 of 2 cases shown" in detail.text
    # Typed text still matches as part of an id.
    field = browser.find_element(By.ID, "id-filter")
    field.clear()
    field.send_keys("qa[x")
    assert sorted(browser.execute_script(VISIBLE_ROWS)) == ["preqa[x]", "qa[x]"]
    _no_errors_no_network(browser)
