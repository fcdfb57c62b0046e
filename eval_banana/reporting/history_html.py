"""`eb history --html PATH`: one self-contained page over the run history (nothing from the
network), in report.html's style.

The suite's pass rate, duration and cost per run are inline SVG line charts (one point per
run, drawn here). Each check's row carries a heat strip, one column per run: the strips of a
thousand checks over five hundred runs would be half a million SVG shapes, so the page holds
each check's outcomes as one short string and a small script paints a canvas per strip when
it nears the screen. Filters (tag, dataset family, flaky only, id) toggle one class per row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from eval_banana.core.caseid import family_of
from eval_banana.core.files import write_named_file
from eval_banana.core.words import dollars_text, percent_text
from eval_banana.history.render import (
    FAMILY_HEAD,
    FAMILY_KEY,
    family_cells,
    rate_text,
    run_note,
    story,
    window_cost_figure,
)
from eval_banana.history.summary import is_flaky
from eval_banana.history.trend import Picture, Timeline
from eval_banana.history.view import CheckRow, FamilyRow, RunRow
from eval_banana.reporting.html_assets import CONTENT_SECURITY_POLICY, CSS
from eval_banana.reporting.html_rows import escape
from eval_banana.reporting.marks import script_json

CHART_WIDTH = 640
CHART_HEIGHT = 150
_PAD = 36  # room for the axis labels, in the chart's units

PAGE_CSS = """
.charts { display:flex; flex-wrap:wrap; gap:16px; margin:8px 0 16px; }
.chart { border:1px solid var(--line); border-radius:8px; padding:8px 12px; background:var(--soft);
  flex:1 1 300px; min-width:0; }
.chart h2 { font-size:14px; margin:0 0 4px; }
.chart svg { width:100%; height:auto; display:block; }
.chart .axis { stroke:var(--line); stroke-width:1; }
.chart text { fill:var(--muted); font-size:10px; }
.chart polyline { fill:none; stroke:var(--accent); stroke-width:1.5; }
.chart circle { fill:var(--accent); }
.chart circle.bad { fill:var(--fail); }
.chart p.none { color:var(--muted); font-size:12px; margin:24px 0; }
col.h-id { width:24%; } col.h-strip { width:34%; } col.h-n { width:6.5em; }
canvas.strip { width:100%; height:14px; display:block; image-rendering:pixelated; }
tr.hide { display:none; }
td.id { font-family:ui-monospace, SFMono-Regular, Menlo, monospace; }
/* A check's note wraps in full: it is the page's sentence about the check, not a one-line
   reason, and a cut one read "fa…" in a narrow window. */
#checks td.why { white-space:normal; max-width:none; }
.legend span { display:inline-block; width:10px; height:10px; margin:0 4px 0 10px;
  vertical-align:middle; border-radius:2px; }
.legend .k-p { background:var(--pass); } .legend .k-f { background:var(--fail); }
.legend .k-e { background:var(--err); } .legend .k-a { background:var(--nr-bg); }
.legend .k-d { background:var(--fg); width:2px; }
table#families { width:auto; min-width:50%; }
table#families td.marks { font-family:ui-monospace, SFMono-Regular, Menlo, monospace;
  letter-spacing:1px; white-space:nowrap; }
@media (max-width: 1000px) {
  /* A narrow window keeps the note readable: the strip and the numbers give up room. */
  col.h-id { width:26%; } col.h-strip { width:24%; } col.h-n { width:4.8em; }
}
@media (max-width: 600px) {
  /* A phone: each check is a card, its id, its strip across the width, its numbers (each
     named), then its note; the families' run marks wrap instead of widening the page. */
  #checks, #checks > tbody { display:block; }
  #checks colgroup, #checks thead { display:none; }
  #checks tr.r { display:flex; flex-wrap:wrap; gap:0 12px; padding:4px 0;
    border-bottom:1px solid var(--line); }
  #checks tr.r > td { border:0; padding:2px 6px; text-align:left; }
  #checks tr.r > td:nth-child(1), #checks tr.r > td:nth-child(2),
  #checks tr.r > td.why { flex-basis:100%; }
  #checks tr.r > td.num::before { color:var(--muted); }
  #checks tr.r > td:nth-child(3)::before { content:"pass rate "; }
  #checks tr.r > td:nth-child(4)::before { content:"flips "; }
  #checks tr.r > td:nth-child(5)::before { content:"median "; }
  #checks tr.hide { display:none; }
  table#families { min-width:0; }
  table#families td.marks { white-space:normal; overflow-wrap:anywhere; }
}
@media print {
  /* On paper every strip is painted (the script paints them all first). */
  canvas.strip { break-inside:avoid; }
}
"""

PAGE_JS = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("eb-history").textContent);
  var rows = Array.prototype.slice.call(document.querySelectorAll("#checks tr.r"));
  var shown = document.getElementById("shown");
  var state = { tag: "", family: "", flaky: false, q: "" };
  var style = getComputedStyle(document.body);
  function color(name) { return style.getPropertyValue(name).trim(); }
  var COLORS = {
    p: color("--pass"), f: color("--fail"), e: color("--err"), "-": color("--nr-bg"),
    n: color("--nr-bg")
  };
  var MARK = color("--fg");
  var runs = data.runs.length;
  var CELL = Math.max(2, Math.min(12, Math.floor(720 / Math.max(runs, 1))));

  // One canvas per check, painted once: a column per run, one fill per colour.
  function paint(canvas) {
    if (canvas.getAttribute("data-drawn")) { return; }
    var c = data.checks[+canvas.getAttribute("data-i")];
    canvas.width = runs * CELL;
    canvas.height = 14;
    var ctx = canvas.getContext("2d");
    for (var letter in COLORS) {
      ctx.beginPath();
      for (var k = 0; k < c.s.length; k++) {
        if (c.s.charAt(k) === letter) { ctx.rect(k * CELL, 2, CELL, 12); }
      }
      ctx.fillStyle = COLORS[letter];
      ctx.fill();
    }
    ctx.fillStyle = MARK;
    for (var m = 0; m < c.c.length; m++) { ctx.fillRect(c.c[m] * CELL, 0, 1, 14); }
    canvas.setAttribute("data-drawn", "1");
  }

  var canvases = document.querySelectorAll("canvas.strip");
  if (window.IntersectionObserver) {
    var watcher = new IntersectionObserver(function (seen) {
      for (var k = 0; k < seen.length; k++) {
        if (seen[k].isIntersecting) { paint(seen[k].target); watcher.unobserve(seen[k].target); }
      }
    }, { rootMargin: "800px" });
    for (var k = 0; k < canvases.length; k++) { watcher.observe(canvases[k]); }
  } else {
    for (var n = 0; n < canvases.length; n++) { paint(canvases[n]); }
  }
  // Printing draws what is painted: every strip first, on `beforeprint`, or on the print
  // media query where a browser prints without that event.
  function paintAll() {
    for (var k = 0; k < canvases.length; k++) { paint(canvases[k]); }
  }
  window.addEventListener("beforeprint", paintAll);
  var printing = window.matchMedia ? window.matchMedia("print") : null;
  if (printing) {
    var onPrint = function (query) { if (query.matches) { paintAll(); } };
    if (printing.addEventListener) { printing.addEventListener("change", onPrint); }
    else if (printing.addListener) { printing.addListener(onPrint); }
  }

  // Which run is under the pointer, in the strip's tooltip.
  var WORDS = {
    p: "passed", f: "failed", e: "error", "-": "not in this run",
    n: "not run (the run stopped before it had an outcome)"
  };
  document.getElementById("checks").addEventListener("mousemove", function (event) {
    var canvas = event.target;
    if (!canvas.classList || !canvas.classList.contains("strip")) { return; }
    var box = canvas.getBoundingClientRect();
    var at = Math.floor((event.clientX - box.left) / box.width * runs);
    var run = data.runs[at];
    var c = data.checks[+canvas.getAttribute("data-i")];
    if (!run) { return; }
    canvas.title = run.id + " (" + run.at + (run.commit ? ", " + run.commit : "") + "): " +
      WORDS[c.s.charAt(at)] + (c.c.indexOf(at) >= 0 ? ", definition changed" : "") +
      (run.note ? "; run " + run.note : "");
  });

  function visible(c) {
    if (state.flaky && !c.k) { return false; }
    if (state.tag && (c.t || []).indexOf(state.tag) < 0) { return false; }
    if (state.family && c.f !== state.family) { return false; }
    if (state.q && c.id.toLowerCase().indexOf(state.q) < 0) { return false; }
    return true;
  }

  function apply() {
    var all = 0;
    for (var k = 0; k < rows.length; k++) {
      var ok = visible(data.checks[+rows[k].getAttribute("data-i")]);
      rows[k].classList.toggle("hide", !ok);
      if (ok) { all++; }
    }
    shown.textContent = all + " of " + rows.length + " checks shown";
  }

  document.getElementById("tag-filter").addEventListener("change", function (event) {
    state.tag = event.target.value; apply();
  });
  document.getElementById("family-filter").addEventListener("change", function (event) {
    state.family = event.target.value; apply();
  });
  document.getElementById("id-filter").addEventListener("input", function (event) {
    state.q = event.target.value.trim().toLowerCase(); apply();
  });
  var flaky = document.getElementById("flaky-filter");
  flaky.addEventListener("click", function () {
    state.flaky = !state.flaky;
    flaky.setAttribute("aria-pressed", String(state.flaky));
    apply();
  });
  document.getElementById("filters").hidden = false;
  shown.textContent = rows.length + " of " + rows.length + " checks shown";
})();
"""


def _seconds(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.2f} s"


def _number(value: float) -> str:
    return f"{value:.4g}"


def line_chart(
    *,
    title: str,
    runs: Sequence[RunRow],
    value: Callable[[RunRow], float | None],
    label: Callable[[float], str],
    floor_at_zero: bool = True,
    ceiling: float | None = None,
) -> str:
    """An SVG line chart with one point per run that has a value (oldest left), each point
    titled with its run; the axis is labelled at its lowest and highest value, or at
    `ceiling` when the values have a fixed top (a pass rate's 100 %)."""
    values = [value(run) for run in runs]
    known = [v for v in values if v is not None]
    if not known:
        # An empty axis labelled $1 and $0 would read as "nothing was spent".
        return (
            f'<div class="chart"><h2>{escape(title)}</h2>'
            f'<p class="none" data-points="0">No run in this window reported a '
            f"{escape(title.lower())}.</p></div>"
        )
    # A rate drawn against its own highest value would put a suite steady at 50 % at the
    # top of the chart, where a reader sees "all passed".
    top = ceiling if ceiling is not None else max(known, default=1.0) or 1.0
    low = 0.0 if floor_at_zero else min(known, default=0.0)
    span = (top - low) or 1.0
    width = CHART_WIDTH - _PAD - 8
    height = CHART_HEIGHT - 24
    step = width / max(len(runs) - 1, 1)
    points: list[str] = []
    dots: list[str] = []
    for index, (run, amount) in enumerate(zip(runs, values, strict=True)):
        if amount is None:
            continue
        x = _PAD + (index * step if len(runs) > 1 else width / 2)
        y = 8 + height - (amount - low) / span * height
        points.append(f"{x:.1f},{y:.1f}")
        bad = "" if run.passed else ' class="bad"'
        dots.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5"{bad}><title>'
            f"{escape(run.run_id)} ({escape(run.started_at[:19])}"
            f"{', ' + escape(run.commit[:7]) if run.commit else ''}): {escape(label(amount))}"
            f"{escape('; ' + run_note(run)) if run_note(run) else ''}"
            "</title></circle>"
        )
    bottom = 8 + height
    return (
        f'<div class="chart"><h2>{escape(title)}</h2>'
        f'<svg viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}" role="img" '
        f'aria-label="{escape(title)}, one point per run" data-points="{len(dots)}">'
        f'<line class="axis" x1="{_PAD}" y1="{bottom}" x2="{CHART_WIDTH - 8}" y2="{bottom}"/>'
        f'<line class="axis" x1="{_PAD}" y1="8" x2="{_PAD}" y2="{bottom}"/>'
        f'<text x="2" y="14">{escape(label(top))}</text>'
        f'<text x="2" y="{bottom}">{escape(label(low))}</text>'
        f'<text x="{_PAD}" y="{CHART_HEIGHT - 2}">oldest</text>'
        f'<text x="{CHART_WIDTH - 8}" y="{CHART_HEIGHT - 2}" text-anchor="end">newest</text>'
        f'<polyline points="{" ".join(points)}"/>{"".join(dots)}</svg></div>'
    )


def _charts(runs: Sequence[RunRow]) -> str:
    return "".join(
        [
            line_chart(
                title="Pass rate",
                runs=runs,
                value=lambda run: None if run.pass_rate is None else run.pass_rate * 100,
                label=lambda v: percent_text(v / 100, places=0),
                ceiling=100.0,
            ),
            line_chart(
                title="Duration",
                runs=runs,
                value=lambda run: run.duration_ms / 1000,
                label=lambda v: f"{_number(v)} s",
            ),
            line_chart(
                title="Cost",
                runs=runs,
                value=lambda run: run.cost_usd,
                label=dollars_text,
            ),
        ]
    )


def _family(row: CheckRow) -> str | None:
    return row.family if row.family is not None else family_of(row.id)


def _flaky(row: CheckRow, min_flips: int) -> bool:
    return is_flaky(row=row, min_flips=min_flips)  # as `eb history --flaky` lists them


def _options(*, everything: str, counts: dict[str, int]) -> str:
    return f'<option value="">{escape(everything)}</option>' + "".join(
        f'<option value="{escape(name)}">{escape(name)} ({count})</option>'
        for name, count in sorted(counts.items())
    )


def _filters(*, rows: Sequence[CheckRow], min_flips: int) -> str:
    tags: dict[str, int] = {}
    families: dict[str, int] = {}
    for row in rows:
        for tag in set(row.tags):
            tags[tag] = tags.get(tag, 0) + 1
        family = _family(row)
        if family is not None:
            families[family] = families.get(family, 0) + 1
    flaky = sum(_flaky(row, min_flips) for row in rows)
    return (
        '<div class="bar" id="filters" hidden>'
        '<button type="button" id="flaky-filter" aria-pressed="false">'
        f"Flaky only ({flaky})</button>"
        f'<label>Tag <select id="tag-filter">{_options(everything="All tags", counts=tags)}'
        "</select></label>"
        f'<label>Family <select id="family-filter">'
        f"{_options(everything='All families', counts=families)}</select></label>"
        '<label>Id <input id="id-filter" type="search" placeholder="filter by id"></label>'
        '<span id="shown"></span></div>'
    )


def _families_table(rows: Sequence[FamilyRow]) -> str:
    """Each dataset family over the runs, as `eb history` prints it: plain HTML, no script."""
    if not rows:
        return ""
    numeric = {1, 3, 4}  # cases, latest, lowest: right-aligned as their cells are
    head = "".join(
        f'<th class="num">{escape(name)}</th>' if place in numeric else f"<th>{escape(name)}</th>"
        for place, name in enumerate(FAMILY_HEAD)
    )
    body = "".join(
        f'<tr><td class="id">{escape(cells[0])}</td><td class="num">{escape(cells[1])}</td>'
        f'<td class="marks">{escape(cells[2])}</td>'
        + "".join(f'<td class="num">{escape(cell)}</td>' for cell in cells[3:])
        + "</tr>"
        for cells in map(family_cells, rows)
    )
    return (
        f"<h2>Dataset families ({len(rows)})</h2>"
        f'<div class="note">{escape(FAMILY_KEY)}.</div>'
        f'<table id="families"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    )


def _row(*, index: int, row: CheckRow, strip: str) -> str:
    tags = "".join(f'<span class="tag">{escape(tag)}</span>' for tag in row.tags)
    note = story(row)
    return (
        f'<tr class="r" data-i="{index}"><td class="id">{escape(row.id)} {tags}</td>'
        f'<td><canvas class="strip" data-i="{index}" role="img" '
        f'aria-label="{escape(strip)}"></canvas></td>'
        f'<td class="num">{rate_text(row.pass_rate)}</td><td class="num">{row.flips}</td>'
        f'<td class="num">{_seconds(row.median_ms)}</td>'
        f'<td class="why" title="{escape(note)}">{escape(note)}</td></tr>'
    )


def _data(*, picture: Picture, min_flips: int) -> dict[str, Any]:
    empty = Timeline(strip="", changes=[])
    checks = []
    for row in picture.view.checks:
        timeline = picture.timelines.get(row.id, empty)
        entry: dict[str, Any] = {"id": row.id, "s": timeline.strip, "c": timeline.changes}
        if row.tags:
            entry["t"] = row.tags
        family = _family(row)
        if family is not None:
            entry["f"] = family
        if _flaky(row, min_flips):
            entry["k"] = 1
        checks.append(entry)
    runs = [
        {
            "id": run.run_id,
            "at": run.started_at[:19],
            "commit": (run.commit or "")[:7],
            "note": run_note(run),
        }
        for run in picture.view.runs
    ]
    return {"runs": runs, "checks": checks}


def render_history_html(*, picture: Picture, min_flips: int) -> str:
    """The whole page as text."""
    view = picture.view
    runs = view.runs
    first = runs[0].started_at[:19] if runs else "-"
    latest = runs[-1].started_at[:19] if runs else "-"
    facts = [
        ("Runs shown", f"{len(runs)} of {view.records} recorded"),
        ("From", first),
        ("To", latest),
        ("Checks", str(len(view.checks))),
        # What the window cost together, as the text and Markdown say under their run table.
        ("Total cost", window_cost_figure(view)),
        ("Folder", view.folder),
    ]
    strips = (picture.timelines.get(row.id) for row in view.checks)
    body = "\n".join(
        _row(index=i, row=row, strip=(found.strip if found else ""))
        for i, (row, found) in enumerate(zip(view.checks, strips, strict=True))
    )
    empty = "" if runs else f"<p>No run recorded in {escape(view.folder)}.</p>"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{escape(CONTENT_SECURITY_POLICY)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>eval-banana history - {len(runs)} runs</title>
<style>{CSS}{PAGE_CSS}</style>
</head>
<body>
<h1>eval-banana history <small>{len(runs)} runs</small></h1>
<div class="top"><dl class="facts">{
        "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    }</dl></div>
{empty}
<div class="charts">{_charts(runs)}</div>
{_families_table(view.families)}
{_filters(rows=view.checks, min_flips=min_flips)}
<noscript><p>The heat strips and filters need JavaScript.</p></noscript>
<div class="note legend">Each strip: one column per run, oldest left.<span class="k-p"></span>passed
<span class="k-f"></span>failed<span class="k-e"></span>error<span class="k-a"></span>not in
that run, or not run in it<span class="k-d"></span>definition changed</div>
<table id="checks">
<colgroup><col class="h-id"><col class="h-strip"><col class="h-n"><col class="h-n"><col
class="h-n"><col></colgroup>
<thead><tr><th>Check</th><th>Outcomes per run</th><th class="num">Pass rate</th>
<th class="num">Flips</th><th class="num">Median</th><th>Note</th></tr></thead>
<tbody>
{body}
</tbody>
</table>
<script type="application/json" id="eb-history">{
        script_json(_data(picture=picture, min_flips=min_flips))
    }</script>
<script>{PAGE_JS}</script>
</body>
</html>
"""


def write_history_html(*, picture: Picture, min_flips: int, path: Path) -> None:
    """Write the history page for `picture` at `path`, atomically, or into the device or FIFO
    there (`write_named_file`)."""
    text = render_history_html(picture=picture, min_flips=min_flips)
    write_named_file(path=path, data=text.encode("utf-8", errors="replace"))
