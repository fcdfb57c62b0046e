"""A value quoted in a reason keeps its runs of spaces in every report: `"Release  notes"` (two
spaces) read as `"Release notes"` beside the string found, and the failure read as none."""

from __future__ import annotations

import html
import re
from pathlib import Path

from markdown_it import MarkdownIt

from eval_banana.core.words import one_line
from tests.reporting.conftest import latest_run_dir, run_eb

CHECK = """\
schema_version: 1
id: titled
type: assertions
description: whitespace-sensitive values
artifact: out/a.json
assert:
  - {path: title, op: equals, value: "Release  notes"}
"""
SAID = 'title equals "Release  notes": found the string "Release notes"'


def test_one_line_keeps_runs_of_spaces_and_folds_line_breaks() -> None:
    assert one_line(' a  "x   y"\n\t b\r\n') == 'a  "x   y" b'


def test_a_two_space_value_reads_as_written_in_every_report(tmp_path: Path) -> None:
    (tmp_path / ".eval-banana").mkdir()
    (tmp_path / ".eval-banana" / "config.toml").write_text("", encoding="utf-8")
    (tmp_path / "eval_checks").mkdir()
    (tmp_path / "eval_checks" / "titled.yaml").write_text(CHECK, encoding="utf-8")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.json").write_text('{"title": "Release notes"}', encoding="utf-8")
    junit = tmp_path / "junit.xml"
    run = run_eb("run", "--cwd", str(tmp_path), "--cache", "off", "--junit-xml", str(junit))
    assert run.returncode == 1, run.stderr
    printed = run.stdout + run.stderr
    assert f"- titled: failed - 1 of 1 assertions failed: {SAID}" in printed  # the console
    assert f"FAILED titled - 1 of 1 assertions failed: {SAID}" in printed  # the recap
    run_dir = latest_run_dir(tmp_path)
    # report.md as a Markdown reader shows it (the step summary), where spaces fold unless kept.
    rendered = (
        MarkdownIt("commonmark")
        .enable("table")
        .render((run_dir / "report.md").read_text(encoding="utf-8"))
    )
    shown = html.unescape(re.sub(r"<[^>]+>", "", rendered)).replace("\xa0", " ")
    assert SAID in shown
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    row = re.search(r'<td class="why" title="[^"]*">([^<]*)</td>', page)
    assert row is not None and SAID in html.unescape(row.group(1))
    # The row's cell is drawn without folding its spaces.
    assert re.search(r"td\.why \{[^}]*white-space:pre;", page)
    assert SAID in html.unescape(junit.read_text(encoding="utf-8"))
