"""report.html: one self-contained page over a finished run (nothing from the network).

Assembled here from its parts: the verdict, the run's facts and the filters; the checks table
(`html_rows`: rendered readable without JavaScript, failures first); the dataset families
(`html_families`); each check's details (`html_evidence`) in one JSON blob, turned into DOM
only when a row is expanded.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval_banana.core.files import write_pieces_atomic
from eval_banana.core.words import percent_text
from eval_banana.models.repeats import is_flaky
from eval_banana.reporting.common import Check, skipped_checks
from eval_banana.reporting.html_assets import CONTENT_SECURITY_POLICY, CSS, JS
from eval_banana.reporting.html_evidence import (
    check_entry,
    evidence_names,
    transcript_scripts,
)
from eval_banana.reporting.html_families import families_block
from eval_banana.reporting.html_rows import (
    GROUPS,
    Shown,
    duration_text,
    escape,
    noscript_rows,
    row_groups,
    shown_checks,
    skipped_row,
)
from eval_banana.reporting.marks import MarkedRow, recent_history, script_json, trend_block
from eval_banana.reporting.reasons import failure_reasons, threshold_text
from eval_banana.reporttext.notes import errors_line
from eval_banana.runners.results import shown_time

if TYPE_CHECKING:
    from collections.abc import Mapping

    from eval_banana.history.trend import Recent


def _verdict(*, report: dict[str, Any]) -> tuple[str, str, str]:
    """(css class, headline, one-line explanation)."""
    if report.get("aborted_by"):
        return (
            "v-aborted",
            "ABORTED",
            f"stopped by {report['aborted_by']}; {report.get('not_run_checks', 0)} not run",
        )
    if report.get("run_passed") and report.get("allow_empty"):
        return "v-passed", "PASSED", f"no checks ran: {report['allow_empty']}"
    if report.get("run_passed") and report.get("selection_note"):
        return "v-passed", "PASSED", str(report["selection_note"])
    if report.get("run_passed"):
        return "v-passed", "PASSED", f"meets the {threshold_text(report=report)}"
    # Each reason the run failed: a failed check is none of its own (it counts against the
    # threshold), and a family's gate or --fail-on-flaky fails a run whose threshold is met.
    return "v-failed", "FAILED", "; ".join(failure_reasons(report=report))


def _percentage(*, report: dict[str, Any]) -> str:
    """The run's points as a percentage beside its verdict. report.json's `percentage` is
    rounded to one decimal as eval-banana's is, so 9,999 points of 10,000 read 100.0 there; the
    page says 99.99 %, which neither reads as every check passing nor as the threshold met."""
    total = int(report.get("total_points") or 0)
    earned = int(report.get("points_earned") or 0)
    threshold = float(report.get("pass_threshold", 1.0))
    return percent_text(earned / total if total else 0.0, bounds=(threshold,))


def _facts(*, report: dict[str, Any], groups: Counter[str]) -> str:
    pairs = [
        ("Score", f"{report.get('points_earned')}/{report.get('total_points')}"),
        ("Percentage", _percentage(report=report)),
        ("Pass threshold", repr(report.get("pass_threshold"))),
        (
            # Every row of the table, as the "All (N)" filter counts them: skipped ones too.
            "Checks",
            f"{sum(groups.values())} total: {groups['passed']} passed, "
            f"{groups['failed']} failed, {groups['error']} errored, {groups['notrun']} not run"
            + (f", {groups['skipped']} skipped" if groups["skipped"] else "")
            + (f"; {report['cached_checks']} cached" if report.get("cached_checks") else ""),
        ),
        *([("Errors", errors)] if (errors := errors_line(report=report)) else []),
        ("Run ID", str(report.get("run_id", ""))),
        # To the second: report.json keeps the exact time.
        ("Started", shown_time(str(report.get("started_at") or ""))),
        ("Duration", duration_text(report.get("duration_ms"))),
        ("Project", str(report.get("project_root", ""))),
    ]
    return "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in pairs)


def _filters(*, checks: list[Check], groups: Counter[str]) -> str:
    buttons = [
        f'<button type="button" data-g="all" aria-pressed="true">All ({len(checks)})</button>'
    ]
    buttons += [
        f'<button type="button" data-g="{key}" aria-pressed="false">'
        f"{label} ({groups[key]})</button>"
        for key, label in GROUPS
    ]
    sampled = [check for check in checks if (check.get("details") or {}).get("samples")]
    flaky_button = ""
    if sampled:
        # Only where checks took samples: other pages keep exactly their filters.
        flaky = sum(1 for check in sampled if is_flaky(check.get("details")))
        flaky_button = (
            '<button type="button" id="flaky-filter" aria-pressed="false">'
            f"Flaky only ({flaky})</button>"
        )
    tags: Counter[str] = Counter(str(tag) for check in checks for tag in check.get("tags") or [])
    options = ['<option value="">All tags</option>'] + [
        f'<option value="{escape(tag)}">{escape(tag)} ({count})</option>'
        for tag, count in sorted(tags.items())
    ]
    return (
        '<div class="bar" id="filters" hidden>'
        f'<span id="status-filter" role="group" aria-label="Status">{"".join(buttons)}</span>'
        f"{flaky_button}"
        f'<label>Tag <select id="tag-filter">{"".join(options)}</select></label>'
        '<label>Id <input id="id-filter" type="search" placeholder="filter by id"></label>'
        '<span id="shown"></span></div>'
    )


def render_html(
    *, report: dict[str, Any], run_dir: Path, history: Mapping[str, Recent] | None = None
) -> str:
    """The whole report.html page as text; `history`: each check's recorded runs before this
    one (`recent_history`), for its sparkline and badges."""
    return "".join(html_pieces(report=report, run_dir=run_dir, history=history))


def html_pieces(
    *, report: dict[str, Any], run_dir: Path, history: Mapping[str, Recent] | None = None
) -> list[str]:
    """report.html as the pieces `render_html` joins: the page of 10,000 checks is some tens of
    megabytes, written piece by piece instead of joined and encoded whole first."""
    skipped = [skipped_row(item=item) for item in skipped_checks(report=report)]
    shown = shown_checks(checks=[*report.get("checks", []), *skipped], history=history)
    checks = [item.check for item in shown]
    root = str(report.get("project_root", ""))
    groups: Counter[str] = Counter(item.group for item in shown)
    css_class, headline, explanation = _verdict(report=report)
    present = evidence_names(run_dir=run_dir)
    entries = [
        check_entry(shown=item, run_dir=run_dir, project_root=root, present=present)
        for item in shown
    ]
    rows = row_groups(checks=shown)
    transcripts = transcript_scripts(entries=entries, run_dir=run_dir)
    families = families_block(report=report, shown=shown)
    head = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{escape(CONTENT_SECURITY_POLICY)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>eval-banana report {escape(str(report.get("run_id", "")))} - {headline}</title>
<style>{CSS}{families.css}</style>
</head>
<body>
<h1>eval-banana report <small>{escape(str(report.get("run_id", "")))}</small></h1>
<div class="top">
<div class="verdict {css_class}" id="verdict">{headline}<small>{escape(explanation)}</small></div>
<dl class="facts">{_facts(report=report, groups=groups)}</dl>
</div>
<div class="note">Files: <a href="report.json">report.json</a> ·
<a href="report.md">report.md</a> · <a href="checks/">checks/</a></div>
{families.table}{_filters(checks=checks, groups=groups)}
<noscript><p>Filters and per-check details need JavaScript{noscript_rows(count=len(checks))};
the check files are in <a href="checks/">checks/</a>.</p></noscript>
<table id="checks" class="report">
<colgroup><col class="c-id"><col class="c-st"><col class="c-why"><col class="c-type"><col
class="c-tags"><col class="c-ms"></colgroup>
<thead><tr><th>Check</th><th>Status</th><th>Reason</th><th>Type</th><th>Tags</th>
<th class="num">Duration</th></tr></thead>
"""
    return [
        head,
        rows,
        '\n</table>\n<div id="rows-end"></div>\n<script type="application/json" id="eb-data">',
        script_json(entries),
        "</script>\n",
        _marked_rows(shown=shown),
        transcripts,
        f"\n<script>{JS}</script>\n{families.data}{families.script}</body>\n</html>\n",
    ]


def _marked_rows(*, shown: list[Shown]) -> str:
    """The `eb-trend` block: what each row's history marks are drawn from (`marks.redraw`)."""
    rows = [
        MarkedRow(
            check_id=str(item.check.get("check_id", "")),
            group=item.group,
            digest=item.digest,
            trend=item.trend,
        )
        for item in shown
    ]
    return trend_block(rows=rows)


def _record_name(*, report: dict[str, Any]) -> str | None:
    """The name this run's history record has (or will have): the marks count only the runs
    recorded before it, as when it ran (`eb stage report` may redraw an older run's page)."""
    started, run_id = report.get("started_at"), report.get("run_id")
    if not isinstance(started, str) or not isinstance(run_id, str) or not started:
        return None
    from eval_banana.history.store import record_name

    return record_name(started_at=started, run_id=run_id)


def _own_shards(*, report: dict[str, Any]) -> list[str]:
    """The shard runs a merged run merged (report.json's `merged_from`): that run itself, not
    runs before it, in its marks."""
    sources = report.get("merged_from")
    if not isinstance(sources, list):
        return []
    ids = (source.get("run_id") for source in sources if isinstance(source, dict))
    return [run_id for run_id in ids if isinstance(run_id, str)]


def write_html(
    *,
    report: dict[str, Any],
    run_dir: Path,
    path: Path,
    history_dir: Path | None = None,
    history: Mapping[str, Recent] | None = None,
) -> str:
    """Write report.html for `report` at `path` (links are relative to `run_dir`); with
    `history_dir`, each check's sparkline and badges come from the records there (`history`:
    those records read already). Return the digest of the page's bytes, which
    stages/report.json records."""
    if history is None:
        history = recent_history(
            run_id=str(report.get("run_id", "")) or None,
            history_dir=history_dir,
            before=_record_name(report=report),
            own_shards=_own_shards(report=report),
        )
    pieces = html_pieces(report=report, run_dir=run_dir, history=history)
    return write_pieces_atomic(path=path, pieces=pieces)
