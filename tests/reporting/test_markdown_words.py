"""A judge's words in Markdown: report.md, the GitHub step summary and `eb diff --format md`
(a pull-request comment) show what the judge wrote, and nothing a Markdown reader would act
on: no link with hidden target, no image fetched, no HTML, no comment hiding the rest."""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

from markdown_it import MarkdownIt

from eval_banana.core.words import one_line
from eval_banana.reporttext.markdown import md_text
from tests.reporting.conftest import latest_run_dir, run_eb

# What a prompt-injected judge (or a hostile test's output) would write into a reason.
HOSTILE = (
    "Looks wrong. ![px](https://evil.example/p.png?d=1) [Approve here](https://evil.example/a)"
    " <img src=x onerror=alert(1)> <b>bold</b> &lt;tag&gt; `code` \\[kept\\] a | b"
    " </details> <!-- everything after this is hidden"
)


def _rendered(markdown: str) -> str:
    """The HTML a CommonMark reader with GitHub's tables makes of `markdown`."""
    return MarkdownIt("commonmark").enable("table").render(markdown)


def _text_of(rendered: str) -> str:
    """The words a reader sees in `rendered` (tags dropped, entities read)."""
    return html.unescape(re.sub(r"<[^>]+>", "", rendered))


def _assert_inert(rendered: str) -> None:
    # eb's own code spans stay; the judge's backticks must not make one.
    for made in ("<a ", "<img", "<b>", "<!--", "<code>code</code>"):
        assert made not in rendered, (made, rendered)


def test_md_text_renders_as_the_words_and_nothing_else() -> None:
    for where in (f"- Reason: {md_text(HOSTILE)}", f"| `id` | {md_text(HOSTILE)} |"):
        markdown = where if where.startswith("-") else f"| a | b |\n| --- | --- |\n{where}"
        rendered = _rendered(markdown)
        _assert_inert(rendered)
        assert one_line(HOSTILE) in _text_of(rendered)


def test_md_text_keeps_one_line() -> None:
    assert md_text("two\nlines\r\n\tand\x1b[2K") == "two lines and\\\\x1b\\[2K"


AGENT = f"""\
import json, sys
if "PASS-ME" in sys.argv[-1]:
    print(json.dumps({{"score": 1, "reason": "fine"}}))
else:
    print(json.dumps({{"score": 0, "reason": {HOSTILE!r}}}))
"""

CONFIG = f"""\
[harness]
agent = "hostile"
isolation = "off"

[agents.hostile]
command = [{json.dumps(sys.executable)}, "agent.py"]
"""


def _judge(instructions: str) -> str:
    return (
        "schema_version: 1\nid: verdict\ntype: harness_judge\ndescription: A judge.\n"
        f"instructions: {instructions}\n"
    )


def test_a_hostile_reason_is_inert_in_report_md_the_step_summary_and_eb_diff(
    tmp_path: Path,
) -> None:
    project = tmp_path / "proj"
    (project / ".eval-banana").mkdir(parents=True)
    (project / ".eval-banana" / "config.toml").write_text(CONFIG, encoding="utf-8")
    (project / "agent.py").write_text(AGENT, encoding="utf-8")
    (project / "eval_checks").mkdir()
    check = project / "eval_checks" / "verdict.yaml"
    check.write_text(_judge("PASS-ME"), encoding="utf-8")
    passed = run_eb("run", "--cwd", str(project), "--cache", "off")
    assert passed.returncode == 0, passed.stderr
    base = latest_run_dir(project)

    check.write_text(_judge("Grade it."), encoding="utf-8")
    summary = tmp_path / "summary.md"
    failed = run_eb(
        "run", "--cwd", str(project), "--cache", "off", GITHUB_STEP_SUMMARY=str(summary)
    )
    assert failed.returncode == 1, failed.stderr
    head = latest_run_dir(project)
    report_md = (head / "report.md").read_text(encoding="utf-8")
    assert summary.read_text(encoding="utf-8") == report_md
    rendered = _rendered(report_md)
    _assert_inert(rendered)
    assert one_line(HOSTILE) in _text_of(rendered)
    assert "Approve here" in json.loads((head / "report.json").read_text())["checks"][0]["reason"]

    diff = run_eb("diff", str(base), str(head), "--format", "md")
    assert diff.returncode == 1, diff.stderr
    comment = _rendered(diff.stdout)
    _assert_inert(comment)
    assert "Regressions (1)" in _text_of(comment)
    assert one_line(HOSTILE).split(" <!--")[0] in _text_of(comment)
