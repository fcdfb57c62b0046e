"""report.html's markup, read with the standard library's HTML parser (no browser needed).

The page's scripts are exercised in a real browser by test_html_browser.py (the `browser`
suite); this file checks what those scripts start from: the rows and their order, the reason
in each row, the filters' data attributes, the JSON blob the details come from, and that
nothing would make a browser load anything.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from eval_banana.reporting.common import summary
from eval_banana.reporting.html import render_html, write_html
from eval_banana.reporting.html_rows import GROUPS, ROW_REASON_LIMIT_CHARS
from eval_banana.stagefiles.layout import REPORT_HTML
from tests.reporting.conftest import Run


@dataclass
class Row:
    index: int
    group: str
    cells: list[str] = field(default_factory=list)
    reason_title: str | None = None

    @property
    def check_id(self) -> str:
        return self.cells[0]


class _Page(HTMLParser):
    """The parts of report.html the tests look at, plus everything that could load something."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[Row] = []
        self.filters: list[tuple[str, str]] = []  # (data-g, label)
        self.tag_options: list[tuple[str, str]] = []  # (value, label)
        self.inputs: list[dict[str, str | None]] = []
        self.filters_hidden = False
        self.blob = ""
        self.loads: list[tuple[str, str]] = []
        self.links: list[str] = []
        self.tags: set[str] = set()
        self.headers: list[str] = []
        self._cell: list[str] | None = None
        self._text: list[str] | None = None
        self._in_blob = False
        self._button: str | None = None
        self._option: str | None = None
        self._in_th = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.add(tag)
        for name, value in attrs:
            if name == "href" and tag == "a":
                self.links.append(value or "")
            elif name in ("src", "href", "srcset", "poster", "data", "action"):
                self.loads.append((tag, value or ""))
        classes = (found.get("class") or "").split()
        if tag == "tr" and "r" in classes:
            group = next(c.removeprefix("g-") for c in classes if c.startswith("g-"))
            self.rows.append(Row(index=int(found["data-i"] or -1), group=group))
        elif tag == "td" and self.rows and self._cell is None and self._open_row():
            self._cell = []
            if "why" in classes:
                self.rows[-1].reason_title = found.get("title")
        elif tag == "th":
            self._in_th, self._text = True, []
        elif tag == "div" and found.get("id") == "filters":
            self.filters_hidden = "hidden" in found
        elif tag == "button" and "data-g" in found:
            self._button, self._text = found["data-g"], []
        elif tag == "option":
            self._option, self._text = found.get("value") or "", []
        elif tag == "input":
            self.inputs.append(found)
        elif tag == "script" and found.get("id") == "eb-data":
            self._in_blob = True

    def _open_row(self) -> bool:
        return len(self.rows[-1].cells) < 6

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1].cells.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "th" and self._text is not None:
            self.headers.append("".join(self._text))
            self._in_th, self._text = False, None
        elif tag == "button" and self._button is not None and self._text is not None:
            self.filters.append((self._button, "".join(self._text)))
            self._button, self._text = None, None
        elif tag == "option" and self._option is not None and self._text is not None:
            self.tag_options.append((self._option, "".join(self._text)))
            self._option, self._text = None, None
        elif tag == "script":
            self._in_blob = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._text is not None:
            self._text.append(data)
        if self._in_blob:
            self.blob += data


def _page(run: Run, report: dict[str, Any] | None = None) -> tuple[str, _Page]:
    text = render_html(report=report or run.report, run_dir=run.run_dir)
    page = _Page()
    page.feed(text)
    page.close()
    return text, page


RANK = {key: rank for rank, (key, _) in enumerate(GROUPS)}


def _group(check: dict[str, Any]) -> str:
    if check["details"].get("not_run"):
        return "notrun"
    return str(check["status"])


def test_rows_come_failures_first_each_check_once(finished_run: Run) -> None:
    _, page = _page(finished_run)
    checks = {c["check_id"]: c for c in finished_run.report["checks"]}
    assert sorted(row.check_id for row in page.rows) == sorted(checks)
    assert [row.index for row in page.rows] == list(range(len(checks)))
    assert [row.group for row in page.rows] == [_group(checks[row.check_id]) for row in page.rows]
    ranks = [RANK[row.group] for row in page.rows]
    assert ranks == sorted(ranks) and ranks[0] == RANK["failed"]
    # Within a group the report's own order stands.
    report_order = list(checks)
    for key, _ in GROUPS:
        in_group = [row.check_id for row in page.rows if row.group == key]
        assert in_group == [i for i in report_order if i in in_group]
    assert page.headers == ["Check", "Status", "Reason", "Type", "Tags", "Duration"]


def test_each_row_shows_its_reason(finished_run: Run) -> None:
    _, page = _page(finished_run)
    rows = {row.check_id: row for row in page.rows}
    judge = rows["answer_is_polite"]
    assert judge.cells[1] == "failed"
    # Markup in a reason is shown as text; its lines are joined into one.
    assert judge.cells[2] == "The answer <b>ignores</b> the user & is rude. So: no, 100%."
    assert judge.reason_title == judge.cells[2]
    for row in page.rows:
        check = next(c for c in finished_run.report["checks"] if c["check_id"] == row.check_id)
        assert row.cells[2] == " ".join(summary(check=check).split())
        if row.group in ("failed", "error", "notrun"):
            assert row.cells[2], row.check_id  # nothing that needs attention is silent
    assert rows["greeting_ok"].cells[2] == ""


def test_a_long_reason_is_cut_to_one_bounded_line(finished_run: Run) -> None:
    report = copy.deepcopy(finished_run.report)
    failing = next(c for c in report["checks"] if c["check_id"] == "answer_is_polite")
    failing["reason"] = "why " * 1000
    _, page = _page(finished_run, report)
    row = next(row for row in page.rows if row.check_id == "answer_is_polite")
    assert len(row.cells[2]) == ROW_REASON_LIMIT_CHARS and row.cells[2].endswith("\u2026")


def test_filters_carry_the_groups_tags_and_counts(finished_run: Run) -> None:
    _, page = _page(finished_run)
    checks = finished_run.report["checks"]
    counts = {key: sum(1 for c in checks if _group(c) == key) for key, _ in GROUPS}
    assert page.filters == [("all", f"All ({len(checks)})")] + [
        (key, f"{label} ({counts[key]})") for key, label in GROUPS
    ]
    tags = sorted({tag for c in checks for tag in c["tags"]})
    assert page.tag_options[0] == ("", "All tags")
    assert [value for value, _ in page.tag_options[1:]] == tags
    assert ("judge", "judge (2)") in page.tag_options
    assert [i.get("id") for i in page.inputs] == ["id-filter"]
    assert page.filters_hidden  # the script shows the filters; without it they would not work


def test_the_blob_holds_one_entry_per_row(finished_run: Run) -> None:
    text, page = _page(finished_run)
    entries = json.loads(page.blob)
    assert len(entries) == len(page.rows)
    for row in page.rows:
        entry = entries[row.index]
        assert (entry["id"], entry["g"]) == (row.check_id, row.group)
    polite = next(e for e in entries if e["id"] == "answer_is_polite")
    assert polite["reason"].startswith("The answer <b>ignores</b>")
    assert "p" in polite["files"] and "Is the answer polite?" in polite["prompt"]
    # The page builds each link from the stem and a letter per file that exists.
    assert (finished_run.run_dir / "checks" / f"{polite['stem']}.prompt.txt").is_file()
    # A key with nothing to say is left out: no check spells out nulls and empty texts.
    empty = [(e["id"], k) for e in entries for k, v in e.items() if v is None or v in ("", [])]
    assert empty == [] and not any(v is False for e in entries for v in e.values())
    # No `<` survives inside the script element, so no check output can close it.
    blob_start = text.index('id="eb-data">')
    assert "<" not in text[blob_start + len('id="eb-data">') : text.index("</script>", blob_start)]


def test_not_run_rows(aborted_run: Run) -> None:
    _, page = _page(aborted_run)
    not_run = [row for row in page.rows if row.group == "notrun"]
    expected = [c["check_id"] for c in aborted_run.report["checks"] if c["details"].get("not_run")]
    assert [row.check_id for row in not_run] == expected and expected
    assert all(row.cells[1] == "not run" and row.cells[2].startswith("Not run") for row in not_run)


def test_single_file_with_nothing_to_load(finished_run: Run) -> None:
    path = finished_run.run_dir / "report.html"
    write_html(report=finished_run.report, run_dir=finished_run.run_dir, path=path)
    text = path.read_text(encoding="utf-8")
    page = _Page()
    page.feed(text)
    assert page.loads == []
    assert not page.tags & {"link", "img", "iframe", "object", "embed", "video", "audio"}
    assert all("://" not in link and not link.startswith("//") for link in page.links)
    assert "default-src 'none'" in text.replace("&#x27;", "'")
    # Markup from check output never reaches the page as markup.
    assert "<script>alert(1)</script>" not in text and "<b>ignores</b>" not in text
    assert Path(path).stat().st_size < 200_000


def test_a_forked_page_that_cannot_be_written_is_a_write_fault(
    finished_run: Run, tmp_path: Path
) -> None:
    from eval_banana.core import forked
    from eval_banana.core.errors import WriteFault
    from eval_banana.reporting import write_extra_reports

    (tmp_path / REPORT_HTML / "in-the-way").mkdir(parents=True)  # a folder where the page goes
    pending = forked.start(
        work=lambda: write_html(
            report=finished_run.report, run_dir=tmp_path, path=tmp_path / REPORT_HTML
        ),
        fork=True,
    )
    extras = write_extra_reports(
        extras=None,
        run_dir=tmp_path,
        report=finished_run.report,
        report_md="",
        junit_xml=None,
        html=pending,
    )
    assert pending.pid is None  # waited for and reaped
    assert extras.written == []
    # Told once the console has shown the verdict: the run ends with exit 3, naming the page.
    with pytest.raises(WriteFault, match="Cannot write .*report.html: "):
        extras.tell_faults(warn=print)


def _ended_by_ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)  # the child's SIGINT is the default: it dies of it
    time.sleep(30)


def test_a_page_whose_forked_child_was_stopped_is_rendered_in_place(
    finished_run: Run, tmp_path: Path
) -> None:
    from eval_banana.core import forked
    from eval_banana.reporting import write_extra_reports

    pending = forked.start(work=_ended_by_ctrl_c, fork=True)
    extras = write_extra_reports(
        extras=None,
        run_dir=tmp_path,
        report=finished_run.report,
        report_md="",
        junit_xml=None,
        html=pending,
    )
    page = tmp_path / REPORT_HTML
    assert page in extras.written
    assert page.read_text() == render_html(report=finished_run.report, run_dir=tmp_path)


def test_the_start_is_told_to_the_second_in_utc(finished_run: Run) -> None:
    report = {**finished_run.report, "started_at": "2026-12-05T02:48:39.377428+00:00"}
    text, _ = _page(finished_run, report)
    assert "<dt>Started</dt><dd>2026-12-05 02:48:39 UTC</dd>" in text
    assert "02:48:39.377428" not in text
    elsewhere = {**finished_run.report, "started_at": "2026-12-05T03:48:39.5+01:00"}
    assert "<dd>2026-12-05 03:48:39 +0100</dd>" in _page(finished_run, elsewhere)[0]
    # Not a time (a hand-edited report): shown as it is, not an error.
    odd = {**finished_run.report, "started_at": "yesterday"}
    assert "<dt>Started</dt><dd>yesterday</dd>" in _page(finished_run, odd)[0]
