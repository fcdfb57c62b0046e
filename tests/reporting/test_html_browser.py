"""report.html in a real headless Chromium (selenium + Debian's chromium-driver): the browser suite.

Marked `browser` and left out of the default `pytest` run, so a machine without Chromium passes
the README's test command; `.ci/run` installs Chromium and runs `pytest -m browser`. Run
explicitly where the browser is missing, the tests fail with what to install: the page's
scripts are not verified without a browser. tests/reporting/test_html.py checks the page's
markup without one.
"""

from __future__ import annotations

import copy
import json
import shutil
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from eval_banana.reporting.html import write_html
from eval_banana.reporting.html_evidence import PROMPT_LIMIT_CHARS
from eval_banana.reporting.html_rows import sorted_checks
from tests.reporting.conftest import Run

pytestmark = pytest.mark.browser

CHROMEDRIVER = Path("/usr/bin/chromedriver")
MISSING_BROWSER = (
    "report.html is tested in a real headless Chromium: install it with "
    "`apt-get install -y chromium chromium-driver` and `pip install -e '.[dev]'` (selenium)"
)

VISIBLE_ROWS = (
    "return Array.from(document.querySelectorAll('#checks tr.r'))"
    ".filter(function (r) { return r.offsetParent !== null; })"
    ".map(function (r) { return r.querySelector('button.x').textContent; });"
)
# The text under an opened row's "Details" heading.
DETAILS_TEXT = (
    "var heads = arguments[0].querySelectorAll('h3');"
    "for (var i = 0; i < heads.length; i++) {"
    "  if (heads[i].textContent === 'Details') { return heads[i].nextElementSibling.textContent; }"
    "}"
    "return null;"
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail(MISSING_BROWSER)
    if not CHROMEDRIVER.exists() or shutil.which("chromium") is None:
        pytest.fail(MISSING_BROWSER)
    options = webdriver.ChromeOptions()
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1280,900",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _open(browser: Any, path: Path) -> None:
    browser.get(path.as_uri())
    browser.get_log("browser")  # drop anything logged before this page


def _click(browser: Any, selector: str) -> None:
    from selenium.webdriver.common.by import By

    browser.find_element(By.CSS_SELECTOR, selector).click()


def _no_errors_no_network(browser: Any) -> None:
    severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0


def _write(run: Run) -> Path:
    path = run.run_dir / "report.html"
    write_html(report=run.report, run_dir=run.run_dir, path=path)
    return path


def test_filter_expand_and_screenshot(browser: Any, finished_run: Run, tmp_path: Path) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    _open(browser, _write(finished_run))
    verdict = browser.find_element(By.ID, "verdict").text
    assert verdict.startswith("FAILED")
    checks = finished_run.report["checks"]
    shown = browser.execute_script(VISIBLE_ROWS)
    assert len(shown) == len(checks)
    # Failures first, each row with its reason in view without expanding it.
    first = [c["check_id"] for c in checks if c["status"] == "failed" and c["check_id"] in shown]
    assert shown[: len(first)] == first
    polite = browser.find_element(
        By.CSS_SELECTOR, f'tr.r[data-i="{shown.index("answer_is_polite")}"]'
    )
    assert (
        "The answer <b>ignores</b> the user & is rude."
        in polite.find_element(By.CSS_SELECTOR, "td.why").text
    )

    _click(browser, '#status-filter button[data-g="failed"]')
    failed = [c["check_id"] for c in checks if c["status"] == "failed"]
    assert browser.execute_script(VISIBLE_ROWS) == failed
    assert (
        browser.find_element(By.ID, "shown").text == f"{len(failed)} of {len(checks)} checks shown"
    )

    judge_row = f'tr.r[data-i="{shown.index("answer_is_polite")}"]'
    _click(browser, f"{judge_row} button.x")
    detail = browser.find_element(By.CSS_SELECTOR, f"{judge_row} + tr.d")
    text = detail.text
    assert "REASON" in text.upper()
    assert "The answer <b>ignores</b> the user & is rude." in text
    assert "Is the answer polite?" in text  # the prompt, read from checks/<stem>.prompt.txt
    prompt_link = detail.find_element(By.PARTIAL_LINK_TEXT, ".prompt.txt").get_attribute("href")
    assert Path(prompt_link.removeprefix("file://")).is_file()
    stdout_link = detail.find_element(By.PARTIAL_LINK_TEXT, ".stdout.txt").get_attribute("href")
    assert Path(stdout_link.removeprefix("file://")).is_file()
    # The page lays out a check's details only when its row opens: indented JSON of them.
    laid_out = browser.execute_script(DETAILS_TEXT, detail)
    polite_check = next(c for c in checks if c["check_id"] == "answer_is_polite")
    assert polite_check["details"] and json.loads(laid_out) == polite_check["details"]
    assert laid_out.startswith('{\n  "')

    failed_row = f'tr.r[data-i="{shown.index("totals_match")}"]'
    _click(browser, f"{failed_row} button.x")
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.d")) == 2
    output = browser.find_element(By.CSS_SELECTOR, f"{failed_row} + tr.d").text
    assert "<script>alert(1)</script>" in output and "exit code" in output.lower()
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018

    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot))
    _assert_png(shot, min_width=1000)

    # Collapsing removes the details again; the failed filter still holds.
    _click(browser, f"{failed_row} button.x")
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.d")) == 1
    _click(browser, '#status-filter button[data-g="all"]')
    assert len(browser.execute_script(VISIBLE_ROWS)) == len(checks)
    _no_errors_no_network(browser)


def test_tag_filter_and_long_prompt(browser: Any, finished_run: Run) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _open(browser, _write(finished_run))
    Select(browser.find_element(By.ID, "tag-filter")).select_by_value("judge")
    in_page_order = sorted_checks(checks=finished_run.report["checks"])
    judges = [c["check_id"] for c in in_page_order if "judge" in c["tags"]]
    assert browser.execute_script(VISIBLE_ROWS) == judges and len(judges) == 2
    _click(browser, '#status-filter button[data-g="passed"]')
    assert browser.execute_script(VISIBLE_ROWS) == ["answer_is_kind"]
    _click(browser, "tr.r:not(.hide) button.x")
    text = browser.find_element(By.CSS_SELECTOR, "tr.d").text
    assert f"Prompt cut to its first {PROMPT_LIMIT_CHARS} characters" in text
    assert "word1199" not in text  # the end of the long prompt is only in the linked file
    _no_errors_no_network(browser)


def test_not_run_checks(browser: Any, aborted_run: Run) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, _write(aborted_run))
    assert browser.find_element(By.ID, "verdict").text.startswith("ABORTED")
    _click(browser, '#status-filter button[data-g="notrun"]')
    not_run = [c["check_id"] for c in aborted_run.report["checks"] if c["details"].get("not_run")]
    assert not_run and browser.execute_script(VISIBLE_ROWS) == not_run
    _no_errors_no_network(browser)


def test_two_thousand_checks_load_and_filter(browser: Any, finished_run: Run) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    report = copy.deepcopy(finished_run.report)
    templates = report["checks"]
    report["checks"] = []
    for i in range(2000):
        check = copy.deepcopy(templates[i % len(templates)])
        check["check_id"] = f"check_{i:04d}"
        check["tags"] = [f"group{i % 7}"] + (["odd"] if i % 2 else [])
        report["checks"].append(check)
    path = finished_run.run_dir.parent / "big" / "report.html"
    write_html(report=report, run_dir=finished_run.run_dir, path=path)
    _open(browser, path)
    # Rows past the first LIVE_ROWS are attached while the browser is idle.
    WebDriverWait(browser, 30).until(
        lambda b: b.find_element(By.ID, "checks").get_attribute("data-rows") == "complete"
    )
    assert len(browser.execute_script(VISIBLE_ROWS)) == 2000
    _click(browser, '#status-filter button[data-g="failed"]')
    failed = [c["check_id"] for c in report["checks"] if c["status"] == "failed"]
    assert browser.execute_script(VISIBLE_ROWS) == failed
    Select(browser.find_element(By.ID, "tag-filter")).select_by_value("group3")
    expected = [
        c["check_id"] for c in report["checks"] if c["status"] == "failed" and "group3" in c["tags"]
    ]
    assert browser.execute_script(VISIBLE_ROWS) == expected
    browser.find_element(By.ID, "id-filter").send_keys("check_19")
    narrowed = [i for i in expected if "check_19" in i]
    assert browser.execute_script(VISIBLE_ROWS) == narrowed
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.d")) == 0  # no details until asked
    _no_errors_no_network(browser)


def _assert_png(path: Path, *, min_width: int) -> None:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= min_width and height > 300


def test_rows_past_the_live_ones_are_filtered_and_attached(browser: Any, finished_run: Run) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from eval_banana.reporting.html_rows import LIVE_ROWS

    report = copy.deepcopy(finished_run.report)
    templates = [c for c in report["checks"] if c["status"] == "passed"]
    total = LIVE_ROWS + 500  # the last groups arrive in <template>s, not built on load
    report["checks"] = []
    for i in range(total):
        check = copy.deepcopy(templates[i % len(templates)])
        check["check_id"] = f"check_{i:04d}"
        report["checks"].append(check)
    path = finished_run.run_dir.parent / "bigger" / "report.html"
    write_html(report=report, run_dir=finished_run.run_dir, path=path)
    _open(browser, path)
    assert len(browser.execute_script(VISIBLE_ROWS)) <= LIVE_ROWS + 200
    # A check that only exists in a template yet is found by the id filter and shown.
    last = f"check_{total - 1:04d}"
    browser.find_element(By.ID, "id-filter").send_keys(last)
    WebDriverWait(browser, 20).until(lambda b: b.execute_script(VISIBLE_ROWS) == [last])
    assert browser.find_element(By.ID, "shown").text == f"1 of {total} checks shown"
    # In idle time every group is attached, so the whole table is there (and find-in-page
    # sees it); clearing the filter then shows every row, in order.
    WebDriverWait(browser, 30).until(
        lambda b: b.find_element(By.ID, "checks").get_attribute("data-rows") == "complete"
    )
    browser.find_element(By.ID, "id-filter").clear()
    browser.find_element(By.ID, "id-filter").send_keys(" ")
    shown = browser.execute_script(VISIBLE_ROWS)
    assert shown == [c["check_id"] for c in sorted_checks(checks=report["checks"])]
    _no_errors_no_network(browser)


# Every kind of status label the tool writes: a control (also cached), a plain cached pass,
# flaky samples (also on a control: the longest label), a failure, a check not run after
# --maxfail, and a skipped one. Flaky scripts count their samples outside the project, so the
# cached checks' inputs stay the same between the two runs; the failing check's input changes.
LABEL_CHECKS = {
    "eval_checks/a_control.yaml": """\
schema_version: 1
id: a_control_catches_the_planted_defect
type: deterministic
description: A control that stays cached.
expect: fail
inputs: ["eval_checks/a_control.yaml"]
script: raise SystemExit(1)
""",
    "eval_checks/b_cached.yaml": """\
schema_version: 1
id: b_cached
type: deterministic
description: A pass that stays cached.
inputs: ["eval_checks/b_cached.yaml"]
script: print("fine")
""",
    "eval_checks/c_flaky.yaml": """\
schema_version: 1
id: c_flaky_sometimes
type: deterministic
description: Fails one sample of three.
repeats: 3
aggregate: majority
script: |
  import pathlib
  p = pathlib.Path(r"{counts}") / "c.txt"
  n = int(p.read_text()) if p.exists() else 0
  p.write_text(str(n + 1))
  raise SystemExit(1 if n % 3 == 1 else 0)
""",
    "eval_checks/d_flaky_control.yaml": """\
schema_version: 1
id: d_flaky_control
type: deterministic
description: A control whose samples disagree.
expect: fail
repeats: 3
aggregate: majority
script: |
  import pathlib
  p = pathlib.Path(r"{counts}") / "d.txt"
  n = int(p.read_text()) if p.exists() else 0
  p.write_text(str(n + 1))
  raise SystemExit(0 if n % 3 == 1 else 1)
""",
    "eval_checks/e_skipped.yaml": """\
schema_version: 1
id: e_skipped
type: deterministic
description: Skipped.
skip: "Waiting for the new login page; the old one is gone."
script: print(1)
""",
    "eval_checks/m_fails.yaml": """\
schema_version: 1
id: m_fails
type: deterministic
description: Fails with a long reason, run again each time (its input changes).
inputs: ["basket.txt"]
script: |
  import sys
  print("the totals differ: expected 3 items in the basket but the page lists 4 " * 3)
  sys.exit(1)
""",
    "eval_checks/z_not_run.yaml": """\
schema_version: 1
id: z_not_run
type: deterministic
description: Never starts (the run stops launching at the first failure).
script: print(1)
""",
}
# Plan order: --maxfail must stop after m_fails, before z_not_run, whatever the history says.
LABEL_CONFIG = (
    '[core]\nmax_parallel_checks = 1\nschedule = "plan"\n\n[cache]\nmode = "on"\nreplay = false\n'
)

# For each shown row: the boxes of the status cell's parts and of the reason's text.
STATUS_BOXES = """
var found = [];
document.querySelectorAll('#checks tr.r').forEach(function (row) {
  if (row.offsetParent === null) { return; }
  var cell = row.children[1], why = row.querySelector('td.why');
  var range = document.createRange();
  range.selectNodeContents(why);
  var text = range.getBoundingClientRect(), box = cell.getBoundingClientRect();
  var pad = parseFloat(getComputedStyle(cell).paddingRight);
  var whyLeft = why.getBoundingClientRect().left + parseFloat(getComputedStyle(why).paddingLeft);
  Array.prototype.forEach.call(cell.children, function (part) {
    var r = part.getBoundingClientRect();
    found.push({id: row.querySelector('button.x').textContent, part: part.className,
                left: r.left, right: r.right, top: r.top, bottom: r.bottom,
                content_right: box.right - pad, why_left: whyLeft, text_empty: text.width === 0,
                text_left: text.left, text_right: text.right,
                text_top: text.top, text_bottom: text.bottom, label: cell.textContent});
  });
});
return found;
"""


@pytest.fixture(scope="module")
def labels_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    from tests.reporting.conftest import finish, run_eb

    base = tmp_path_factory.mktemp("labels")
    counts = base / "counts"
    counts.mkdir()
    project = base / "proj"
    (project / ".eval-banana").mkdir(parents=True)
    (project / ".eval-banana" / "config.toml").write_text(LABEL_CONFIG)
    for relative, text in LABEL_CHECKS.items():
        path = project / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("{counts}", str(counts)))
    (project / "basket.txt").write_text("3 items\n")
    assert run_eb("run", "--cwd", str(project), "--maxfail", "1").returncode == 1
    (project / "basket.txt").write_text("4 items\n")
    second = run_eb("run", "--cwd", str(project), "--maxfail", "1")
    assert second.returncode == 1, second.stderr
    return finish(project, second)


@pytest.mark.parametrize("width", [1280, 800])
def test_no_status_label_is_drawn_over_the_reason(
    browser: Any, labels_run: Run, tmp_path: Path, width: int
) -> None:
    from selenium.webdriver.common.by import By

    labels = {
        "a_control_catches_the_planted_defect": "passed (control: defect caught, cached)",
        "b_cached": "passed (cached)",
        "c_flaky_sometimes": "passed flaky (flaky, 2/3 samples passed)",
        "d_flaky_control": "passed flaky (control: defect caught, flaky, 1/3 samples passed)",
        "e_skipped": "skipped",
        "m_fails": "failed",
        "z_not_run": "not run",
    }
    shot = labels_run.run_dir / f"labels-{width}.png"  # kept beside the page to look at
    browser.set_window_size(width, 900)
    try:
        _open(browser, labels_run.run_dir / "report.html")
        assert abs(browser.execute_script("return window.outerWidth") - width) < 2
        boxes = browser.execute_script(STATUS_BOXES)
        assert browser.save_screenshot(str(shot))
    finally:
        browser.set_window_size(1280, 900)
    _assert_png(shot, min_width=width - 40)
    assert {box["id"] for box in boxes} == set(labels)
    for box in boxes:
        where = f"{box['id']} ({box['part']}) at {width} px: {box}"
        # Inside its own column, clear of the reason's text (not touching it either).
        assert box["right"] <= box["content_right"] + 0.5, where
        assert box["right"] + 8 <= box["why_left"], where
        apart = (
            box["text_empty"]
            or box["right"] <= box["text_left"]
            or box["left"] >= box["text_right"]
            or box["bottom"] <= box["text_top"]
            or box["top"] >= box["text_bottom"]
        )
        assert apart, where
    # Each label whole: the status pill, the flaky badge, then the notes.
    assert {box["id"]: " ".join(box["label"].split()) for box in boxes} == labels
    # The "All" filter counts the rows the facts call the total (skipped ones included).
    facts = browser.find_element(By.CSS_SELECTOR, "dl.facts").text
    all_chip = browser.find_element(By.CSS_SELECTOR, '#status-filter button[data-g="all"]').text
    assert all_chip == "All (7)"
    assert "7 total: 4 passed, 1 failed, 0 errored, 1 not run, 1 skipped" in facts


@pytest.fixture(scope="module")
def transcript_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of one judge whose agent called a tool (tests/transcripts/judge_project.py)."""
    from tests.transcripts.judge_project import run_dir_of, run_eb, write_project

    root = write_project(tmp_path_factory.mktemp("transcript") / "project")
    completed = run_eb(root)
    assert completed.returncode == 0, completed.stderr
    return run_dir_of(root)


def test_an_expanded_judge_shows_its_transcript(browser: Any, transcript_run: Path) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, transcript_run / "report.html")
    # Nothing of the transcript is laid out until its row opens.
    assert browser.execute_script("return document.querySelectorAll('.tr').length") == 0
    _click(browser, 'tr.r[data-i="0"] button.x')
    box = browser.find_element(By.CSS_SELECTOR, "tr.d .tr")
    text = box.text
    assert "Let me look for the install command." in text
    # The tool call is a collapsed block: its name and arguments in its summary line.
    summary = box.find_element(By.CSS_SELECTOR, "details.tool summary")
    assert "Grep" in summary.text and '"pattern": "pip install"' in summary.text
    assert "README.md:3: pip install banana" not in text  # its result waits inside
    summary.click()
    assert "README.md:3: pip install banana  # token ***" in box.text
    # The answer is the verdict, marked as the pass it gave.
    answer = box.find_element(By.CSS_SELECTOR, ".answer")
    assert "a-pass" in answer.get_attribute("class")
    assert "The README shows pip install banana." in answer.text
    detail = browser.find_element(By.CSS_SELECTOR, "tr.d")
    raw = detail.find_element(By.PARTIAL_LINK_TEXT, ".stdout.txt").get_attribute("href")
    assert Path(raw.removeprefix("file://")).is_file()
    saved = detail.find_element(By.PARTIAL_LINK_TEXT, ".transcript.jsonl").get_attribute("href")
    assert Path(saved.removeprefix("file://")).is_file()
    _no_errors_no_network(browser)


def test_a_long_transcript_shows_its_start_what_was_left_out_and_its_answer(
    browser: Any, tmp_path: Path
) -> None:
    """A real run of a judge that read 150 files: more than the page embeds of a transcript."""
    from selenium.webdriver.common.by import By

    from tests.transcripts.judge_project import run_dir_of, run_eb, write_project

    root = write_project(tmp_path / "project", long=True)
    completed = run_eb(root)
    assert completed.returncode == 1, completed.stderr
    _open(browser, run_dir_of(root) / "report.html")
    _click(browser, 'tr.r[data-i="0"] button.x')
    box = browser.find_element(By.CSS_SELECTOR, "tr.d .tr")
    shown = [child.get_attribute("class") for child in box.find_elements(By.XPATH, "./*")]
    notes = box.find_elements(By.CSS_SELECTOR, ".trn")
    assert "events (" in notes[0].text and "left out of this page; they are in" in notes[0].text
    # The tool calls before the note and after it, then the answer and the usage last.
    note_at = shown.index("trn")
    assert shown[0] == "tool" and shown[note_at + 1] == "tool"
    assert shown[-2:] == ["msg m-assistant answer a-fail", "trn"]
    assert "module 7 lacks tests" in box.find_element(By.CSS_SELECTOR, ".answer").text
    assert notes[-1].text.startswith("usage: input_tokens 1000")
    _no_errors_no_network(browser)


def test_an_errored_judge_row_shows_its_error_class(
    browser: Any, project: Callable[..., Path], eb: Callable[..., Any]
) -> None:
    """A real run: one judge's agent reports HTTP 429, another answers in prose."""
    from selenium.webdriver.common.by import By

    from tests.runners.test_retries import make, run_dir_of

    root = make(project, {"limited": "e429", "prose": "noverdict"}, retries=None)
    assert eb("run", "--cwd", str(root)).exit_code == 1
    _open(browser, run_dir_of(root) / "report.html")
    labels = {}
    for row in browser.find_elements(By.CSS_SELECTOR, "tr.r"):
        check_id = row.find_element(By.CSS_SELECTOR, "button.x").text
        label = row.find_element(By.CSS_SELECTOR, ".ec")
        assert label.is_displayed() and label.size["height"] > 0
        labels[check_id] = label.text
    assert labels == {"limited": "infrastructure: HTTP 429", "prose": "verdict: no valid verdict"}
    facts = browser.find_element(By.CSS_SELECTOR, "dl.facts").text
    assert "2 errors: 1 infrastructure (HTTP 429), 1 verdict" in facts
    _no_errors_no_network(browser)
