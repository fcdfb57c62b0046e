"""The checks table of report.html: a check as the page shows it (its group, label, reason
and trend), in page order, and its row, readable without JavaScript.

Rows come failures first, each with its reason on one line, in groups the browser lays out
only when they near the screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from eval_banana.core.words import one_line
from eval_banana.models.repeats import is_flaky
from eval_banana.reporting.common import (
    Check,
    error_class_label,
    is_not_run,
    status_label,
    summary,
)
from eval_banana.reporting.marks import Trend, trend_cells, trend_for

if TYPE_CHECKING:
    from collections.abc import Mapping

    from eval_banana.history.trend import Recent


ROW_REASON_LIMIT_CHARS = 300
# Rows per <tbody>: each group is laid out only when it nears the screen (CSS
# content-visibility). Past LIVE_ROWS the groups are sent inside <template> elements, which the
# browser parses without building the rows: building 10,000 live rows took seconds before the
# page showed anything. The script attaches them when the reader scrolls near them or the
# browser is idle; filters count and sort over every row either way.
ROWS_PER_GROUP = 200
LIVE_ROWS = 1000
# Also the order of the rows: what needs attention first, skipped checks last.
GROUPS = (
    ("failed", "Failed"),
    ("error", "Error"),
    ("notrun", "Not run"),
    ("passed", "Passed"),
    ("skipped", "Skipped"),
)
_GROUP_RANK = {key: rank for rank, (key, _) in enumerate(GROUPS)}

# html.escape's table, without importing the html package (it loads html.entities, ~1 ms).
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})


def escape(text: str) -> str:
    """`text` safe inside an element or a quoted attribute."""
    return text.translate(_ESCAPES)


def _group(*, check: Check) -> str:
    if is_not_run(check=check):
        return "notrun"
    status = str(check.get("status"))
    return status if status in ("passed", "failed", "error", "skipped") else "error"


def skipped_row(*, item: Check) -> Check:
    """A skipped check shaped like a result for the page only (report.json keeps it apart)."""
    return {**item, "status": "skipped", "duration_ms": 0, "details": {}}


def sorted_checks(*, checks: list[Check]) -> list[Check]:
    """Failed, then errored, then not run, then passed; report order within each group."""
    return sorted(checks, key=lambda check: _GROUP_RANK[_group(check=check)])


def row_reason(*, check: Check) -> str:
    """The reason shown in a check's row: one line, at most ROW_REASON_LIMIT_CHARS."""
    text = one_line(summary(check=check))
    if len(text) > ROW_REASON_LIMIT_CHARS:
        return text[: ROW_REASON_LIMIT_CHARS - 1] + "\u2026"
    return text


class Shown(NamedTuple):
    """A check as the page shows it, worked out once for both its row and its entry."""

    check: Check
    group: str
    label: str
    flaky: bool
    trend: Trend | None = None
    digest: str | None = None


def shown_checks(
    *, checks: list[Check], history: Mapping[str, Recent] | None = None
) -> list[Shown]:
    """The checks in page order (as sorted_checks), each with its group, label, flakiness and
    (from the run history, when given) its trend."""
    shown = []
    for check in checks:
        group = _group(check=check)
        found = check.get("check_definition_sha256")
        digest = found if isinstance(found, str) else None
        trend = None
        if history:
            recent = history.get(str(check.get("check_id", "")))
            trend = trend_for(group=group, digest=digest, recent=recent)
        shown.append(
            Shown(
                check=check,
                group=group,
                label=status_label(check=check),
                flaky=is_flaky(check.get("details")),
                trend=trend,
                digest=digest,
            )
        )
    shown.sort(key=lambda item: _GROUP_RANK[item.group])
    return shown


def duration_text(milliseconds: object) -> str:
    """A duration as the page writes it: milliseconds below ten seconds, seconds above."""
    value = milliseconds if isinstance(milliseconds, int) else 0
    return f"{value} ms" if value < 10_000 else f"{value / 1000:.1f} s"


class _Repeated:
    """Cell texts most rows share (a status label, a check type, a set of tags), escaped once."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.tag_cells: dict[tuple[str, ...], str] = {}

    def escaped(self, text: str) -> str:
        found = self.texts.get(text)
        if found is None:
            found = self.texts[text] = escape(text)
        return found

    def tags(self, tags: tuple[str, ...]) -> str:
        found = self.tag_cells.get(tags)
        if found is None:
            found = self.tag_cells[tags] = "".join(
                f'<span class="tag">{escape(tag)}</span>' for tag in tags
            )
        return found


def _row(*, index: int, shown: Shown, repeated: _Repeated) -> str:
    check = shown.check
    tags = repeated.tags(tuple(str(tag) for tag in check.get("tags") or ()))
    reason = escape(row_reason(check=check))
    badge = ' <span class="flaky">flaky</span>' if shown.flaky else ""
    spark, history_badges = trend_cells(shown.trend)
    badge += history_badges
    # The status word is the pill; its notes (control, attempts, samples, cached) wrap below
    # it inside the column, so no label, however long, is drawn over the reason.
    status, _, notes = shown.label.partition(" (")
    noted = f' <span class="sn">({repeated.escaped(notes)}</span>' if notes else ""
    error_class = error_class_label(check=check)
    if error_class is not None:
        # Why the judge errored, under its status: the provider's fault or the judge's.
        kind = escape(error_class.partition(":")[0])
        noted += f' <span class="ec ec-{kind}">{repeated.escaped(error_class)}</span>'
    return (
        f'<tr class="r g-{shown.group}" data-i="{index}">'
        f'<td><button class="x" type="button" aria-expanded="false">'
        f"{escape(str(check.get('check_id', '')))}</button>{spark}</td>"
        f'<td class="stc"><span class="st">{repeated.escaped(status)}</span>{badge}{noted}</td>'
        f'<td class="why" title="{reason}">{reason}</td>'
        f"<td>{repeated.escaped(str(check.get('check_type', '')))}</td>"
        f"<td>{tags}</td>"
        f'<td class="num">{escape(duration_text(check.get("duration_ms")))}</td></tr>'
    )


def row_groups(*, checks: list[Shown]) -> str:
    """The rows in <tbody> groups of ROWS_PER_GROUP; `--n` is how many of them are shown,
    which sizes a group the browser has not laid out yet (the script updates it on filter)."""
    groups = []
    repeated = _Repeated()
    for start in range(0, len(checks), ROWS_PER_GROUP):
        part = checks[start : start + ROWS_PER_GROUP]
        rows = "\n".join(
            _row(index=start + i, shown=item, repeated=repeated) for i, item in enumerate(part)
        )
        group = f'<tbody class="rows" style="--n:{len(part)}">\n{rows}\n</tbody>'
        if start >= LIVE_ROWS:
            group = f'<template class="later">{group}</template>'
        groups.append(group)
    return "\n".join(groups) or '<tbody class="rows"></tbody>'


def noscript_rows(*, count: int) -> str:
    """What the <noscript> note adds when the rows past LIVE_ROWS come only by script."""
    if count <= LIVE_ROWS:
        return ""
    return (
        f", and so do the checks after the first {LIVE_ROWS} of {count} (every check is in "
        '<a href="report.json">report.json</a> and <a href="report.md">report.md</a>)'
    )
