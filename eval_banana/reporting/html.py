"""report.html: one self-contained page over a finished run (nothing from the network).

The table rows are rendered here (readable without JavaScript), failures first, each with its
reason on one line, in groups the browser lays out only when they near the screen; each check's
details live in one JSON blob and are turned into DOM only when a row is expanded.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from eval_banana.core.caseid import family_of
from eval_banana.core.files import write_pieces_atomic
from eval_banana.core.stem import artifact_stem
from eval_banana.core.words import percent_text
from eval_banana.models.repeats import is_flaky
from eval_banana.reporting.common import (
    Check,
    check_relpath,
    error_class_label,
    is_control,
    is_not_run,
    skipped_checks,
    status_label,
    summary,
    tail,
)
from eval_banana.reporting.html_assets import (
    CONTENT_SECURITY_POLICY,
    CSS,
    FAMILY_CSS,
    FAMILY_JS,
    JS,
)
from eval_banana.reporting.marks import (
    MarkedRow,
    Trend,
    recent_history,
    script_json,
    trend_block,
    trend_cells,
    trend_for,
)
from eval_banana.reporting.reasons import failure_reasons, threshold_text
from eval_banana.reporttext.families import family_cases_text, family_rate, gate_state
from eval_banana.reporttext.notes import errors_line
from eval_banana.runners.results import shown_time

if TYPE_CHECKING:
    from collections.abc import Mapping

    from eval_banana.history.trend import Recent

REPORT_HTML = "report.html"
PROMPT_LIMIT_CHARS = 4000
STDERR_LIMIT_CHARS = 2000
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
    return text.translate(_ESCAPES)


def _group(*, check: Check) -> str:
    if is_not_run(check=check):
        return "notrun"
    status = str(check.get("status"))
    return status if status in ("passed", "failed", "error", "skipped") else "error"


def _skipped_row(*, item: Check) -> Check:
    """A skipped check shaped like a result for the page only (report.json keeps it apart)."""
    return {**item, "status": "skipped", "duration_ms": 0, "details": {}}


def sorted_checks(*, checks: list[Check]) -> list[Check]:
    """Failed, then errored, then not run, then passed; report order within each group."""
    return sorted(checks, key=lambda check: _GROUP_RANK[_group(check=check)])


def row_reason(*, check: Check) -> str:
    """The reason shown in a check's row: one line, at most ROW_REASON_LIMIT_CHARS."""
    text = " ".join(summary(check=check).split())
    if len(text) > ROW_REASON_LIMIT_CHARS:
        return text[: ROW_REASON_LIMIT_CHARS - 1] + "\u2026"
    return text


def _read_prompt(*, path: Path) -> tuple[str | None, bool]:
    """The first PROMPT_LIMIT_CHARS characters of a judge prompt file, and whether it was cut."""
    try:
        with path.open("rb") as handle:
            head = handle.read(PROMPT_LIMIT_CHARS * 4 + 4)
    except OSError:
        return None, False
    text = head.decode("utf-8", errors="replace")
    if len(text) > PROMPT_LIMIT_CHARS:
        return text[:PROMPT_LIMIT_CHARS], True
    return text, False


def evidence_names(*, run_dir: Path) -> frozenset[str]:
    """The files in checks/, listed once: a stat per link costs seconds at 10,000 checks."""
    try:
        with os.scandir(run_dir / "checks") as entries:
            return frozenset(entry.name for entry in entries)
    except OSError:
        return frozenset()


# Which of a check's files exist, one letter each; the page builds `checks/<stem><suffix>`
# (html_assets.JS, FILES). Whole paths would be a quarter of the page's data at 10,000 checks.
_FILE_LETTERS = (
    ("o", ".stdout.txt"),
    ("e", ".stderr.txt"),
    ("p", ".prompt.txt"),
    ("r", ".json"),
    ("t", ".transcript.jsonl"),
)
# The most characters of one judge's transcript the page embeds (the file has all of it).
TRANSCRIPT_PAGE_CHARS = 200_000


def _files(*, present: frozenset[str], stem: str) -> str:
    """The letters of this check's files that exist."""
    return "".join(letter for letter, suffix in _FILE_LETTERS if stem + suffix in present)


class _Shown(NamedTuple):
    """A check as the page shows it, worked out once for both its row and its entry."""

    check: Check
    group: str
    label: str
    flaky: bool
    trend: Trend | None = None
    digest: str | None = None


def _shown(*, checks: list[Check], history: Mapping[str, Recent] | None = None) -> list[_Shown]:
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
            _Shown(
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


def _samples(*, check: Check) -> list[dict[str, Any]]:
    """A sampled check's samples for the page: outcome, one line of why, links to evidence."""
    found = (check.get("details") or {}).get("samples")
    if not isinstance(found, list):
        return []
    shown = []
    for sample in found:
        if not isinstance(sample, dict):
            continue
        found = sample.get("evidence")
        evidence: dict[str, object] = found if isinstance(found, dict) else {}
        why = sample.get("reason") or sample.get("error_detail") or ""
        shown.append(
            {
                "n": sample.get("sample"),
                "status": sample.get("status"),
                "why": " ".join(str(why).split())[:ROW_REASON_LIMIT_CHARS],
                "links": {key: str(value) for key, value in evidence.items()},
            }
        )
    return shown


# The page data's key for each text a check may have (left out when empty).
_TEXT_FIELDS = (
    ("desc", "description"),
    ("reason", "reason"),
    ("error", "error_detail"),
    ("stdout", "stdout"),
)


def _entry(
    *, shown: _Shown, run_dir: Path, project_root: str, present: frozenset[str]
) -> dict[str, Any]:
    """What the page's script needs for one check (bounded: no full prompt or stderr).

    Only what this check has: a key left out reads as empty (the script treats a missing key
    as null, false or an empty list), so 10,000 passed checks do not each spell out a dozen
    nulls.
    """
    check = shown.check
    check_id = str(check.get("check_id", ""))
    stem = artifact_stem(check_id=check_id)
    files = _files(present=present, stem=stem)
    entry: dict[str, Any] = {
        "id": check_id,
        "g": shown.group,
        "label": shown.label,
        "stem": stem,
        "files": files,
        "ms": check.get("duration_ms", 0),
    }
    tags = check.get("tags")
    if tags:
        entry["tags"] = [str(tag) for tag in tags]
    for key, field in _TEXT_FIELDS:
        value = check.get(field)
        if value:
            entry[key] = value
    relative = check_relpath(check=check, project_root=project_root)
    if relative:
        entry["file"] = relative
    if check.get("exit_code") is not None:
        entry["exit"] = check["exit_code"]
    samples = _samples(check=check)
    if samples:
        entry["samples"] = samples
    details = check.get("details")
    if details:
        # The object itself: the page lays it out only when its row is opened, so a run of
        # 10,000 checks does not print 10,000 indented texts nobody may read.
        entry["details"] = details
    if is_control(check=check):
        entry["expect"] = "fail (control check)"
        entry["observed"] = check.get("observed_status")
    if shown.flaky:
        entry["flaky"] = True
    stderr, stderr_cut = tail(text=str(check.get("stderr") or ""), limit=STDERR_LIMIT_CHARS)
    if stderr_cut:
        stderr = f"[stderr cut to its last {STDERR_LIMIT_CHARS} characters]\n{stderr}"
    if stderr:
        entry["stderr"] = stderr
    prompt_link = f"checks/{stem}.prompt.txt" if "p" in files else None
    if prompt_link is None and samples and "prompt" in samples[0]["links"]:
        prompt_link = entry["prompt_link"] = samples[0]["links"]["prompt"]  # all asked alike
    if prompt_link is not None:
        prompt, prompt_cut = _read_prompt(path=run_dir / prompt_link)
        if prompt is not None:
            entry["prompt"] = prompt
        if prompt_cut:
            entry.update(prompt_cut=True, prompt_limit=PROMPT_LIMIT_CHARS)
    return entry


def transcript_blob(*, path: Path) -> str | None:
    """A judge's transcript as the text of a JSON array, safe inside <script>, or None.

    The JSONL lines are joined as they are, not parsed: a page of 1,000 judges is written
    without decoding their events, and the browser parses one only when its row opens. Past
    TRANSCRIPT_PAGE_CHARS, whole lines stop and a `skipped` event says where the rest is.
    """
    try:
        with path.open("rb") as handle:
            head = handle.read(TRANSCRIPT_PAGE_CHARS + 1)
    except OSError:
        return None
    lines = head.decode("utf-8", errors="replace").splitlines()
    if len(head) > TRANSCRIPT_PAGE_CHARS:
        lines = lines[:-1]  # the last line may be cut
        note = {"kind": "skipped", "text": f"the rest is in {path.name}"}
        lines.append(json.dumps(note))
    text = "[" + ",".join(line for line in lines if line.strip()) + "]"
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _transcripts(*, entries: list[dict[str, Any]], run_dir: Path) -> str:
    """One <script type="application/json" id="tr-N"> per row with a transcript (N: the row's
    data-i); its entry gets `tr` so the script knows to look."""
    blobs = []
    for index, entry in enumerate(entries):
        if "t" not in entry["files"]:
            continue
        blob = transcript_blob(path=run_dir / "checks" / f"{entry['stem']}.transcript.jsonl")
        if blob is None:
            continue
        entry["tr"] = 1
        blobs.append(f'<script type="application/json" id="tr-{index}">{blob}</script>')
    return "\n".join(blobs)


def _duration(milliseconds: object) -> str:
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


def _row(*, index: int, shown: _Shown, repeated: _Repeated) -> str:
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
        f'<td class="num">{escape(_duration(check.get("duration_ms")))}</td></tr>'
    )


def _row_groups(*, checks: list[_Shown]) -> str:
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


def _noscript_rows(*, count: int) -> str:
    if count <= LIVE_ROWS:
        return ""
    return (
        f", and so do the checks after the first {LIVE_ROWS} of {count} (every check is in "
        '<a href="report.json">report.json</a> and <a href="report.md">report.md</a>)'
    )


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
        ("Duration", _duration(report.get("duration_ms"))),
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


def _gate_text(*, family: dict[str, Any]) -> tuple[str, str]:
    """(row class, gate cell) of a dataset family."""
    gate, state = family.get("min_pass_rate"), gate_state(family=family)
    if state == "at_merge":
        return "gate-none", f"judged by eb merge (min_pass_rate {family['gate_at_merge']!r})"
    if state == "none":
        return "gate-none", "no gate"
    if state == "unmeasured":
        return "gate-none", f"not measured: no case ran (min_pass_rate {gate!r})"
    if state == "held":
        return "gate-held", f"held (min_pass_rate {gate!r})"
    return "gate-broken", f"NOT held (min_pass_rate {gate!r}): the run fails"


def _family_row(*, index: int, family: dict[str, Any]) -> str:
    css_class, gate = _gate_text(family=family)
    # Only part of the family ran: its rate and gate are those of that part, and the cell says
    # whether the selection took that part or the run stopped before the rest, as report.md's.
    ran = escape(family_cases_text(family=family))
    counts = f'<td class="num">{ran}</td>' + "".join(
        f'<td class="num">{int(family.get(key) or 0)}</td>'
        for key in ("passed", "failed", "errored")
    )
    return (
        f'<tr class="fam {css_class}" data-f="{index}">'
        f'<td><button class="x" type="button" aria-expanded="false">'
        f"{escape(str(family.get('id', '')))}</button></td>"
        f'<td class="num">{family_rate(family=family)}</td>{counts}'
        f'<td class="gate">{escape(gate)}</td></tr>'
    )


class _Families(NamedTuple):
    """The families table and its script's data; empty for a run without dataset families."""

    table: str
    data: str
    css: str
    script: str


def _families(*, report: dict[str, Any], shown: list[_Shown]) -> _Families:
    """A row per dataset family, which the page opens into its cases: their indices into the
    page data, in page order (so failures first, as in the checks table)."""
    families = [item for item in report.get("families") or [] if isinstance(item, dict)]
    if not families:
        return _Families(table="", data="", css="", script="")
    members: dict[str, list[int]] = {str(family.get("id")): [] for family in families}
    # The one-line reason of each case that did not pass, as its row in the checks table shows
    # it (`exit code 1` has no text of its own in the page data); a passed case's list line
    # reads its reason from the page data, so 10,000 passed cases add nothing here.
    reasons: dict[str, dict[int, str]] = {family_id: {} for family_id in members}
    for index, item in enumerate(shown):
        family_id = family_of(str(item.check.get("check_id") or ""))
        if family_id in members:
            if item.group not in ("passed", "skipped"):
                reasons[family_id][len(members[family_id])] = row_reason(check=item.check)
            members[family_id].append(index)
    rows = "\n".join(
        _family_row(index=index, family=family) for index, family in enumerate(families)
    )
    table = (
        '<table id="families">\n<caption>Dataset families</caption>\n'
        '<colgroup><col class="f-id"><col><col><col><col><col><col class="f-gate"></colgroup>\n'
        '<thead><tr><th>Family</th><th class="num">Pass rate</th><th class="num">Cases</th>'
        '<th class="num">Passed</th><th class="num">Failed</th><th class="num">Errored</th>'
        "<th>Gate</th></tr></thead>\n"
        f"<tbody>\n{rows}\n</tbody>\n</table>\n"
    )
    data = [
        {"id": family_id, "members": members[family_id], "why": reasons[family_id]}
        for family_id in (str(family.get("id")) for family in families)
    ]
    return _Families(
        table=table,
        data=f'<script type="application/json" id="eb-families">{script_json(data)}</script>\n',
        css=FAMILY_CSS,
        script=f"<script>{FAMILY_JS}</script>\n",
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
    skipped = [_skipped_row(item=item) for item in skipped_checks(report=report)]
    shown = _shown(checks=[*report.get("checks", []), *skipped], history=history)
    checks = [item.check for item in shown]
    root = str(report.get("project_root", ""))
    groups: Counter[str] = Counter(item.group for item in shown)
    css_class, headline, explanation = _verdict(report=report)
    present = evidence_names(run_dir=run_dir)
    entries = [
        _entry(shown=item, run_dir=run_dir, project_root=root, present=present) for item in shown
    ]
    rows = _row_groups(checks=shown)
    transcripts = _transcripts(entries=entries, run_dir=run_dir)
    families = _families(report=report, shown=shown)
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
<noscript><p>Filters and per-check details need JavaScript{_noscript_rows(count=len(checks))};
the check files are in <a href="checks/">checks/</a>.</p></noscript>
<table id="checks">
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


def _marked_rows(*, shown: list[_Shown]) -> str:
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


def write_html(
    *,
    report: dict[str, Any],
    run_dir: Path,
    path: Path,
    history_dir: Path | None = None,
    history: Mapping[str, Recent] | None = None,
) -> None:
    """Write report.html for `report` at `path` (links are relative to `run_dir`); with
    `history_dir`, each check's sparkline and badges come from the records there (`history`:
    those records read already)."""
    if history is None:
        history = recent_history(
            run_id=str(report.get("run_id", "")) or None,
            history_dir=history_dir,
            before=_record_name(report=report),
        )
    pieces = html_pieces(report=report, run_dir=run_dir, history=history)
    write_pieces_atomic(path=path, pieces=pieces)
