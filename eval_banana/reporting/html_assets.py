"""The inline stylesheet and script of report.html (nothing loaded from the network).

Kept as Python strings so the wheel needs no extra package data. The script renders a check's
details only when its row is expanded (from the JSON blob in the page), and filters by toggling
one class per row; the rows come in groups the browser lays out only near the screen
(`content-visibility`), so a 10,000-check report opens and filters in about a second.
"""

from __future__ import annotations

# Only inline styles and scripts, nothing from anywhere else: the browser enforces that too.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)

CSS = """
:root { --bg:#fff; --fg:#1d2127; --muted:#5b6470; --line:#d9dee5; --soft:#f4f6f9;
  --pass:#137333; --pass-bg:#e6f4ea; --fail:#b3261e; --fail-bg:#fce8e6;
  --err:#8a5300; --err-bg:#fef3d6; --nr:#55606e; --nr-bg:#eceff3; --accent:#1a5fb4; }
@media (prefers-color-scheme: dark) {
  :root { --bg:#15181c; --fg:#e4e7eb; --muted:#9aa4b0; --line:#2f353d; --soft:#1e2227;
    --pass:#7fd89a; --pass-bg:#173524; --fail:#ff9c92; --fail-bg:#42201d;
    --err:#f2c46b; --err-bg:#3a2e12; --nr:#b5bec9; --nr-bg:#2a2f36; --accent:#8ab4f8; }
}
* { box-sizing: border-box; }
body { margin:0; padding:24px; background:var(--bg); color:var(--fg);
  font:14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
h1 { font-size:20px; margin:0 0 12px; }
h1 small { color:var(--muted); font-weight:normal; font-size:14px; }
a { color:var(--accent); }
.top { display:flex; flex-wrap:wrap; gap:16px; align-items:stretch; margin-bottom:16px; }
.verdict { padding:12px 20px; border-radius:8px; font-size:22px; font-weight:700;
  display:flex; flex-direction:column; justify-content:center; }
.verdict small { font-size:13px; font-weight:normal; }
.v-passed { background:var(--pass-bg); color:var(--pass); }
.v-failed { background:var(--fail-bg); color:var(--fail); }
.v-aborted { background:var(--err-bg); color:var(--err); }
.facts { display:grid; grid-template-columns:auto auto; gap:2px 16px; align-content:center;
  margin:0; }
.facts dt { color:var(--muted); }
.facts dd { margin:0; font-variant-numeric:tabular-nums; }
.bar { display:flex; flex-wrap:wrap; gap:8px; align-items:center; margin:8px 0 12px; }
.bar button { border:1px solid var(--line); background:var(--soft); color:var(--fg);
  border-radius:16px; padding:4px 12px; cursor:pointer; font:inherit; }
.bar button[aria-pressed="true"] { background:var(--accent); border-color:var(--accent);
  color:var(--bg); }
.bar select, .bar input { font:inherit; padding:4px 8px; border:1px solid var(--line);
  border-radius:6px; background:var(--bg); color:var(--fg); }
#shown { color:var(--muted); margin-left:auto; }
table { border-collapse:collapse; width:100%; table-layout:fixed; }
col.c-id { width:26%; } col.c-st { width:10.5em; } col.c-type { width:9em; }
col.c-tags { width:13%; } col.c-ms { width:6.5em; }
td { overflow-wrap:anywhere; }
tbody.rows { content-visibility:auto;
  contain-intrinsic-block-size:auto calc(var(--n, 0) * 34px); }
tbody.hide { display:none; }
th, td { text-align:left; padding:6px 10px; border-bottom:1px solid var(--line);
  vertical-align:top; }
th { background:var(--soft); position:sticky; top:0; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
tr.hide { display:none; }
/* pre, not nowrap: the reason is one line already, and a value's runs of spaces show. */
td.why { max-width:36em; overflow:hidden; text-overflow:ellipsis; white-space:pre; }
.g-passed td.why { color:var(--muted); }
button.x { border:0; background:none; color:var(--fg); font:inherit; cursor:pointer;
  padding:0; text-align:left; font-family:ui-monospace, SFMono-Regular, Menlo, monospace; }
button.x::before { content:"\\25B8"; display:inline-block; width:1.1em; color:var(--muted); }
button.x[aria-expanded="true"]::before { content:"\\25BE"; }
.st { border-radius:10px; padding:1px 8px; white-space:nowrap; font-size:13px; }
td.stc { overflow:hidden; }
.sn { display:block; margin-top:2px; color:var(--muted); font-size:12px; line-height:1.3;
  overflow-wrap:anywhere; }
.ec { display:block; margin-top:2px; color:var(--err); font-size:12px; line-height:1.3;
  overflow-wrap:anywhere; }
.ec-infrastructure { color:var(--muted); }
.g-passed .st { background:var(--pass-bg); color:var(--pass); }
.g-failed .st { background:var(--fail-bg); color:var(--fail); }
.g-error .st { background:var(--err-bg); color:var(--err); }
.g-notrun .st { background:var(--nr-bg); color:var(--nr); }
.g-skipped .st { background:var(--nr-bg); color:var(--nr); font-style:italic; }
.flaky { display:inline-block; white-space:nowrap; border-radius:10px; padding:1px 8px;
  font-size:12px; background:var(--err-bg); color:var(--err); border:1px dashed var(--err); }
.tag { display:inline-block; border:1px solid var(--line); border-radius:4px; padding:0 6px;
  margin:0 4px 2px 0; font-size:12px; color:var(--muted); }
tr.d > td { background:var(--soft); padding:12px 16px 16px 32px; }
tr.d h3 { font-size:13px; margin:12px 0 4px; color:var(--muted); text-transform:uppercase;
  letter-spacing:.04em; }
tr.d h3:first-child { margin-top:0; }
tr.d pre { margin:0; padding:8px 10px; background:var(--bg); border:1px solid var(--line);
  border-radius:6px; white-space:pre-wrap; word-break:break-word; max-height:360px;
  overflow:auto; font:12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
tr.d .note { color:var(--muted); font-size:12px; margin-top:4px; }
tr.d dl { display:grid; grid-template-columns:max-content auto; gap:2px 12px; margin:0; }
tr.d dt { color:var(--muted); }
tr.d dd { margin:0; word-break:break-all; }
noscript p { color:var(--muted); }
.tr { display:flex; flex-direction:column; gap:6px; max-height:640px; overflow:auto;
  padding:8px; background:var(--bg); border:1px solid var(--line); border-radius:6px; }
.tr .msg { border-left:3px solid var(--line); padding:2px 10px; }
.tr .who { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
.tr .txt { white-space:pre-wrap; overflow-wrap:anywhere; }
.tr .m-user { border-color:var(--nr); } .tr .m-assistant { border-color:var(--accent); }
.tr .m-thinking { border-color:var(--line); color:var(--muted); }
.tr .answer { border-left-width:6px; padding:6px 10px; border-radius:4px; }
.tr .a-pass { border-color:var(--pass); background:var(--pass-bg); }
.tr .a-fail { border-color:var(--fail); background:var(--fail-bg); }
.tr .a-other { border-color:var(--err); background:var(--err-bg); }
.tr details.tool { border:1px solid var(--line); border-radius:4px; padding:2px 8px; }
.tr details.tool summary { cursor:pointer; font-family:ui-monospace, SFMono-Regular, Menlo,
  monospace; font-size:12px; overflow:hidden; text-overflow:ellipsis; white-space:nowrap; }
.tr .tn { font-weight:700; }
.tr .ta { color:var(--muted); }
.tr .tl { color:var(--muted); font-size:12px; margin-top:4px; }
.tr .err { color:var(--err); background:var(--err-bg); padding:4px 10px; border-radius:4px;
  white-space:pre-wrap; overflow-wrap:anywhere; }
.tr .trn { color:var(--muted); font-size:12px; }
svg.spark { display:block; margin:3px 0 0 1.1em; }
svg.spark .s-p { fill:var(--pass); } svg.spark .s-f { fill:var(--fail); }
svg.spark .s-e { fill:var(--err); }
.hb { display:inline-block; white-space:nowrap; border-radius:10px; padding:1px 8px;
  font-size:12px; margin-top:2px; }
.hb-new { background:var(--fail-bg); color:var(--fail); border:1px solid var(--fail); }
.hb-fixed { background:var(--pass-bg); color:var(--pass); border:1px solid var(--pass); }
.hb-flaky { background:var(--err-bg); color:var(--err); border:1px dashed var(--err); }
@media (max-width: 1000px) {
  /* A narrow window keeps the id and the reason readable: the type and tags columns give way
     (an expanded row lists both), the status column narrows and its notes wrap under it. */
  body { padding:16px; }
  col.c-id { width:26%; } col.c-st { width:7.5em; } col.c-ms { width:5.5em; }
  col.c-type, col.c-tags { width:0; }
  #checks.report tr > :nth-child(4), #checks.report tr > :nth-child(5) { padding:0;
    overflow:hidden; visibility:hidden; white-space:nowrap; }
  th.num { white-space:normal; }
}
@media (max-width: 600px) {
  /* A phone: each check is a card, its id on a line of its own, the status beside the
     reason (wrapped in full), then its type, tags and duration; no column is squeezed. */
  body { padding:10px; }
  #checks.report, #checks.report tbody.rows, #checks.report tr.d,
  #checks.report tr.d > td { display:block; }
  #checks.report colgroup, #checks.report thead { display:none; }
  #checks.report tr.r { display:grid; grid-template-columns:auto minmax(0, 1fr) auto;
    border-bottom:1px solid var(--line); padding:4px 0; }
  #checks.report tr.r > td { border:0; padding:2px 6px; min-width:0; }
  #checks.report tr.r > td:nth-child(1) { grid-row:1; grid-column:1 / -1; }
  #checks.report tr.r > td:nth-child(2) { grid-row:2; grid-column:1; }
  #checks.report tr.r > td.why { grid-row:2; grid-column:2 / -1; max-width:none;
    white-space:pre-wrap; overflow-wrap:anywhere; }
  #checks.report tr.r > td:nth-child(4), #checks.report tr.r > td:nth-child(5),
  #checks.report tr.r > td:nth-child(6) { grid-row:3; color:var(--muted); font-size:12px;
    visibility:visible; overflow:visible; white-space:normal; }
  #checks.report tr.r > td:nth-child(4) { grid-column:1; }
  #checks.report tr.r > td:nth-child(5) { grid-column:2; }
  #checks.report tr.r > td:nth-child(6) { grid-column:3; }
  #checks.report tr.d > td { padding:10px 8px 12px; }
  #checks.report tbody.hide, #checks.report tr.hide { display:none; }
}
@media print {
  /* Paper has no tooltip and no scrolling: every reason in full, every row laid out. */
  body { padding:0; }
  th { position:static; }
  tbody.rows { content-visibility:visible; }
  td.why { white-space:pre-wrap; overflow:visible; text-overflow:clip; max-width:none; }
  tr.r { break-inside:avoid; }
}
"""

JS = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("eb-data").textContent);
  var table = document.getElementById("checks");
  // Fixed lists, not live collections: every class toggled below would make a live one
  // search the table again on its next access, which is quadratic (a minute at 10,000 checks).
  // The rows come in <tbody> groups that the browser lays out only near the screen; a group
  // with no row shown is hidden, and `--n` sizes the others before they are laid out.
  // Groups past the first ones arrive inside <template>s (parsed, not built): their rows are
  // filtered there too, and each is attached when the reader nears it or the browser is idle.
  var parts = Array.prototype.map.call(table.querySelectorAll("tbody.rows, template.later"),
    function (node) {
      var later = node.tagName === "TEMPLATE";
      var group = later ? node.content.querySelector("tbody") : node;
      return { group: group, holder: later ? node : null,
               rows: Array.prototype.slice.call(group.getElementsByClassName("r")) };
    });
  var waiting = parts.filter(function (part) { return part.holder !== null; });
  var total = 0;
  for (var p = 0; p < parts.length; p++) { total += parts[p].rows.length; }
  var shown = document.getElementById("shown");
  // `exact`: the one id a family's case button chose (`data-exact` on the id filter), matched
  // whole, so `qa[x]` does not show `preqa[x]`; typed text matches as a substring.
  var state = { g: "all", tag: "", q: "", exact: "", flaky: false };

  // A check's files by the letters the page data lists (eval_banana/reporting/html_evidence.py).
  var FILES = { o: ["stdout", ".stdout.txt"], e: ["stderr", ".stderr.txt"],
                p: ["prompt", ".prompt.txt"], r: ["result", ".json"],
                t: ["transcript", ".transcript.jsonl"] };

  function linksOf(c) {
    var links = { stdout: null, stderr: null, prompt: c.prompt_link || null, result: null,
                  transcript: null };
    var letters = c.files || "";
    for (var k = 0; k < letters.length; k++) {
      var file = FILES[letters.charAt(k)];
      if (file) { links[file[0]] = "checks/" + c.stem + file[1]; }
    }
    return links;
  }

  function visible(c) {
    if (state.g !== "all" && c.g !== state.g) { return false; }
    if (state.flaky && !c.flaky) { return false; }
    if (state.tag && (c.tags || []).indexOf(state.tag) < 0) { return false; }
    if (state.exact) { return c.id === state.exact; }
    if (state.q && c.id.toLowerCase().indexOf(state.q) < 0) { return false; }
    return true;
  }

  function attach(part) {
    if (part.holder === null) { return; }
    part.holder.parentNode.replaceChild(part.group, part.holder);
    part.holder = null;
  }

  function attachNext() {
    while (waiting.length && waiting[0].holder === null) { waiting.shift(); }
    if (!waiting.length) { table.setAttribute("data-rows", "complete"); return false; }
    attach(waiting.shift());
    return true;
  }

  // The end of what is attached is near the screen (scrolled there, or a filter left little
  // to show): attach the next group, and look again, until the end is out of reach.
  var sentinel = document.getElementById("rows-end");
  if (waiting.length && window.IntersectionObserver) {
    var watcher = new IntersectionObserver(function (seen) {
      if (seen[seen.length - 1].isIntersecting && attachNext()) {
        watcher.unobserve(sentinel);
        watcher.observe(sentinel);
      }
    }, { rootMargin: "1500px" });
    watcher.observe(sentinel);
  }
  // The rest while the browser has nothing else to do, so find-in-page sees every check; not in
  // the first seconds, which belong to the reader's first filter or scroll.
  var idle = window.requestIdleCallback || function (f) { return setTimeout(f, 50); };
  function whenIdle() { if (attachNext()) { idle(whenIdle); } }
  setTimeout(function () { idle(whenIdle); }, 3000);
  // Printing takes what is attached: every group first (a `beforeprint` event, or the print
  // media query where a browser prints without one).
  function attachAll() { while (attachNext()) { /* the next group */ } }
  window.addEventListener("beforeprint", attachAll);
  var printing = window.matchMedia ? window.matchMedia("print") : null;
  if (printing) {
    var onPrint = function (query) { if (query.matches) { attachAll(); } };
    if (printing.addEventListener) { printing.addEventListener("change", onPrint); }
    else if (printing.addListener) { printing.addListener(onPrint); }
  }

  function count(n) { shown.textContent = n + " of " + total + " checks shown"; }

  function apply() {
    var all = 0;
    for (var p = 0; p < parts.length; p++) {
      var rows = parts[p].rows;
      var oks = [];
      var here = 0;
      for (var k = 0; k < rows.length; k++) {
        oks.push(visible(data[+rows[k].getAttribute("data-i")]));
        if (oks[k]) { here++; }
      }
      // A group with no row shown is hidden whole: its rows keep their classes until it shows
      // again (toggling 10,000 rows one by one costs the browser a style pass over each).
      for (k = 0; here > 0 && k < rows.length; k++) {
        var row = rows[k];
        row.classList.toggle("hide", !oks[k]);
        var next = row.nextElementSibling;
        if (next && next.classList.contains("d")) { next.classList.toggle("hide", !oks[k]); }
      }
      parts[p].group.classList.toggle("hide", here === 0);
      parts[p].group.style.setProperty("--n", String(here));
      all += here;
    }
    count(all);
  }

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    if (cls) { node.className = cls; }
    return node;
  }

  function link(href, text) {
    var a = el("a", text);
    a.setAttribute("href", href);
    return a;
  }

  function section(cell, title, text, href, note) {
    if (text === null || text === undefined || text === "") {
      if (!href) { return; }
    }
    cell.appendChild(el("h3", title));
    if (text !== null && text !== undefined && text !== "") { cell.appendChild(el("pre", text)); }
    if (note || href) {
      var p = el("div", note ? note + " " : "", "note");
      if (href) { p.appendChild(link(href, href)); }
      cell.appendChild(p);
    }
  }

  function cutNote(ev) {
    return ev.cut ? "[\u2026 " + ev.cut + " more characters in the raw output]" : "";
  }

  // The note sits where the text was cut: an answer keeps its end, everything else its start.
  function withCutNote(ev, text) {
    var note = cutNote(ev);
    if (!note) { return text; }
    return ev.kind === "answer" ? note + "\n" + text : text + "\n" + note;
  }

  // A judge's transcript, from its own JSON element, parsed only now that its row is open.
  function transcript(cell, c, i, links) {
    var node = document.getElementById("tr-" + i);
    if (!node) { return; }
    var events = JSON.parse(node.textContent);
    cell.appendChild(el("h3", "Transcript"));
    var box = el("div", null, "tr");
    var calls = {};
    var verdict = c.g === "passed" ? "a-pass" : (c.g === "failed" ? "a-fail" : "a-other");
    for (var k = 0; k < events.length; k++) {
      var ev = events[k];
      var text = withCutNote(ev, ev.text || "");
      if (ev.kind === "tool_call") {
        var call = el("details", null, "tool");
        var summary = el("summary");
        summary.appendChild(el("span", ev.tool || "tool", "tn"));
        summary.appendChild(el("span", " " + (ev.arguments || "").slice(0, 160), "ta"));
        call.appendChild(summary);
        call.appendChild(el("div", "Arguments", "tl"));
        call.appendChild(el("pre", withCutNote(ev, ev.arguments || "")));
        box.appendChild(call);
        if (ev.call_id) { calls[ev.call_id] = call; }
      } else if (ev.kind === "tool_result") {
        var owner = ev.call_id ? calls[ev.call_id] : null;
        if (!owner) {
          owner = el("details", null, "tool");
          var lone = el("summary");
          lone.appendChild(el("span", "result of " + (ev.tool || "a tool"), "tn"));
          owner.appendChild(lone);
          box.appendChild(owner);
        }
        owner.appendChild(el("div", "Result", "tl"));
        owner.appendChild(el("pre", text));
      } else if (ev.kind === "message" || ev.kind === "answer") {
        var answer = ev.kind === "answer";
        var msg = el("div", null, "msg m-" + (ev.role || "assistant") +
                     (answer ? " answer " + verdict : ""));
        msg.appendChild(el("div", answer ? "answer \u2014 " + c.label : (ev.role || "assistant"),
                           "who"));
        msg.appendChild(el("div", text, "txt"));
        box.appendChild(msg);
      } else if (ev.kind === "error") {
        box.appendChild(el("div", "error: " + text, "err"));
      } else if (ev.kind === "usage") {
        var parts = [];
        for (var key in ev.usage) { parts.push(key + " " + ev.usage[key]); }
        box.appendChild(el("div", "usage: " + parts.join(", "), "trn"));
      } else {
        box.appendChild(el("div", "\u2026 " + (ev.text || "left out"), "trn"));
      }
    }
    cell.appendChild(box);
    var p = el("div", "Raw output: ", "note");
    var raw = links.stdout || links.stderr;
    if (raw) { p.appendChild(link(raw, raw)); p.appendChild(document.createTextNode(" \u00b7 ")); }
    if (links.transcript) { p.appendChild(link(links.transcript, links.transcript)); }
    cell.appendChild(p);
  }

  // `type`: the row's Type cell, which a narrow window does not show (nor the Tags column).
  function details(c, i, type) {
    var links = linksOf(c);
    var cell = el("td");
    cell.colSpan = 6;
    cell.appendChild(el("h3", "Check"));
    var dl = el("dl");
    var facts = [["Description", c.desc], ["File", c.file], ["Status", c.label],
      ["Type", type], ["Tags", (c.tags || []).join(", ")],
      ["Expect", c.expect], ["Observed", c.observed], ["Exit code", c.exit],
      ["Duration", c.ms + " ms"]];
    for (var k = 0; k < facts.length; k++) {
      if (facts[k][1] === null || facts[k][1] === undefined || facts[k][1] === "") { continue; }
      dl.appendChild(el("dt", facts[k][0]));
      dl.appendChild(el("dd", facts[k][1]));
    }
    cell.appendChild(dl);
    section(cell, "Reason", c.reason);
    section(cell, "Error", c.error);
    if (c.tr) { transcript(cell, c, i, links); }
    if (c.prompt != null || links.prompt) {
      section(cell, "Prompt", c.prompt, links.prompt,
        c.prompt_cut ? "Prompt cut to its first " + c.prompt_limit + " characters; full prompt:"
                     : "Prompt file:");
    }
    section(cell, "Stdout (tail)", c.stdout, links.stdout, links.stdout ? "Full stdout:" : "");
    section(cell, "Stderr (tail)", c.stderr, links.stderr, links.stderr ? "Full stderr:" : "");
    if (c.samples && c.samples.length) {
      cell.appendChild(el("h3", "Samples"));
      var list = el("ol", null, "samples");
      for (var n = 0; n < c.samples.length; n++) {
        var sample = c.samples[n];
        var item = el("li", sample.status + (sample.why ? ": " + sample.why : ""));
        var names = ["transcript", "stdout", "stderr", "prompt", "result"];
        for (var m = 0; m < names.length; m++) {
          var target = sample.links[names[m]];
          if (target) {
            item.appendChild(document.createTextNode(" "));
            item.appendChild(link(target, names[m]));
          }
        }
        list.appendChild(item);
      }
      cell.appendChild(list);
    }
    section(cell, "Details", c.details ? JSON.stringify(c.details, null, 2) : "");
    if (links.result) {
      var p = el("div", "Check result: ", "note");
      p.appendChild(link(links.result, links.result));
      cell.appendChild(p);
    }
    var tr = el("tr", null, "d");
    tr.appendChild(cell);
    return tr;
  }

  function toggle(row) {
    var button = row.querySelector("button.x");
    var next = row.nextElementSibling;
    if (next && next.classList.contains("d")) {
      row.parentNode.removeChild(next);
      button.setAttribute("aria-expanded", "false");
      return;
    }
    var i = +row.getAttribute("data-i");
    row.parentNode.insertBefore(details(data[i], i, row.children[3].textContent),
                                row.nextSibling);
    button.setAttribute("aria-expanded", "true");
  }

  table.addEventListener("click", function (event) {
    var button = event.target.closest("button.x");
    if (button) { toggle(button.closest("tr")); }
  });

  var groups = document.querySelectorAll("#status-filter button");
  for (var g = 0; g < groups.length; g++) {
    groups[g].addEventListener("click", function (event) {
      state.g = event.currentTarget.getAttribute("data-g");
      for (var k = 0; k < groups.length; k++) {
        groups[k].setAttribute("aria-pressed", String(groups[k] === event.currentTarget));
      }
      apply();
    });
  }
  var flakyFilter = document.getElementById("flaky-filter");
  if (flakyFilter) {
    flakyFilter.addEventListener("click", function () {
      state.flaky = !state.flaky;
      flakyFilter.setAttribute("aria-pressed", String(state.flaky));
      apply();
    });
  }
  document.getElementById("tag-filter").addEventListener("change", function (event) {
    state.tag = event.target.value;
    apply();
  });
  document.getElementById("id-filter").addEventListener("input", function (event) {
    var input = event.target;
    // A keystroke (a trusted event) turns a chosen case's id back into typed text.
    if (event.isTrusted) { input.removeAttribute("data-exact"); }
    state.q = input.value.trim().toLowerCase();
    state.exact = input.getAttribute("data-exact") || "";
    apply();
  });
  document.getElementById("filters").hidden = false;
  // Every row starts shown: nothing to toggle until a filter is chosen.
  count(total);
})();
"""

# Dataset families (docs/datasets.md): a table of families above the checks, each row opening
# into its cases, failures first. Only pages of runs with families carry these, so every other
# page keeps exactly its bytes. The case list follows the same status, tag and id filters as
# the checks table, reading them from the page (the checks' script keeps its state to itself).
FAMILY_CSS = """
#families { margin:12px 0 16px; }
#families caption { text-align:left; font-weight:600; padding:0 0 6px; }
/* Sized by their contents, not fixed shares: numbers and headers never run together. */
#families { table-layout:auto; }
#families col.f-id { width:26%; } #families col.f-gate { width:30%; }
#families td.num, #families th.num { text-align:right; }
#families th.num { white-space:normal; }
#families tr.fam.gate-broken .gate { color:var(--fail); font-weight:600; }
#families tr.fam.gate-held .gate { color:var(--pass); }
tr.fd > td { background:var(--soft); padding:8px 16px 12px 32px; }
tr.fd table { table-layout:fixed; }
tr.fd tr.fcase td:first-child { width:22%; } tr.fd tr.fcase td.stc { width:8em; }
tr.fd td { padding:3px 8px; border-bottom:1px solid var(--line); }
tr.fd .fshown { color:var(--muted); font-size:12px; margin:0 0 4px; }
tr.fd button.fc { border:0; background:none; color:var(--accent); cursor:pointer; padding:0;
  font:12px ui-monospace, SFMono-Regular, Menlo, monospace; text-align:left; }
tr.fd td.why { max-width:48em; }
@media (max-width: 600px) {
  /* A phone: a family's id on its line, then its counts, each named, then its gate; a
     case's id on its line, its status beside its reason, wrapped in full. */
  #families, #families > tbody, #families tr.fd, #families tr.fd > td { display:block; }
  #families colgroup, #families thead { display:none; }
  #families caption { display:block; }
  #families tr.fam { display:flex; flex-wrap:wrap; gap:0 10px; padding:4px 0;
    border-bottom:1px solid var(--line); }
  #families tr.fam > td { border:0; padding:2px 6px; }
  #families tr.fam > td:first-child, #families tr.fam > td.gate { flex-basis:100%; }
  #families tr.fam > td.num::before { color:var(--muted); }
  #families tr.fam > td:nth-child(2)::before { content:"pass rate "; }
  #families tr.fam > td:nth-child(3)::before { content:"cases "; }
  #families tr.fam > td:nth-child(4)::before { content:"passed "; }
  #families tr.fam > td:nth-child(5)::before { content:"failed "; }
  #families tr.fam > td:nth-child(6)::before { content:"errored "; }
  tr.fd > td { padding:6px 4px 8px 8px; }
  tr.fd table, tr.fd tbody { display:block; }
  tr.fd tr.fcase { display:grid; grid-template-columns:auto minmax(0, 1fr);
    border-bottom:1px solid var(--line); }
  tr.fd tr.fcase.hide { display:none; }
  tr.fd tr.fcase > td { border:0; width:auto; min-width:0; }
  tr.fd tr.fcase td:first-child { grid-column:1 / -1; width:auto; }
  tr.fd tr.fcase td.stc { width:auto; }
  tr.fd td.why { white-space:pre-wrap; overflow-wrap:anywhere; max-width:none; }
}
@media print {
  tr.fd td.why { white-space:pre-wrap; max-width:none; }
}
"""

FAMILY_JS = r"""
(function () {
  "use strict";
  var fams = JSON.parse(document.getElementById("eb-families").textContent);
  var data = JSON.parse(document.getElementById("eb-data").textContent);
  var table = document.getElementById("families");

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    if (cls) { node.className = cls; }
    return node;
  }

  // The checks table's filters, read from its controls.
  function filters() {
    var pressed = document.querySelector('#status-filter button[aria-pressed="true"]');
    var flaky = document.getElementById("flaky-filter");
    return { g: pressed ? pressed.getAttribute("data-g") : "all",
             tag: document.getElementById("tag-filter").value,
             q: document.getElementById("id-filter").value.trim().toLowerCase(),
             exact: document.getElementById("id-filter").getAttribute("data-exact") || "",
             flaky: !!flaky && flaky.getAttribute("aria-pressed") === "true" };
  }

  function visible(c, f) {
    if (f.g !== "all" && c.g !== f.g) { return false; }
    if (f.flaky && !c.flaky) { return false; }
    if (f.tag && (c.tags || []).indexOf(f.tag) < 0) { return false; }
    if (f.exact) { return c.id === f.exact; }
    if (f.q && c.id.toLowerCase().indexOf(f.q) < 0) { return false; }
    return true;
  }

  function refresh(detail) {
    var f = filters();
    var rows = detail.getElementsByClassName("fcase");
    var here = 0;
    for (var k = 0; k < rows.length; k++) {
      var ok = visible(data[+rows[k].getAttribute("data-i")], f);
      rows[k].classList.toggle("hide", !ok);
      if (ok) { here++; }
    }
    detail.querySelector(".fshown").textContent =
      here + " of " + rows.length + " cases shown, failures first";
  }

  function cases(fam) {
    var cell = el("td");
    cell.colSpan = 7;
    cell.appendChild(el("div", "", "fshown"));
    var list = el("table");
    for (var k = 0; k < fam.members.length; k++) {
      var c = data[fam.members[k]];
      var tr = el("tr", null, "fcase g-" + c.g);
      tr.setAttribute("data-i", String(fam.members[k]));
      var id = el("td");
      var button = el("button", c.id, "fc");
      button.type = "button";
      button.title = "Show this case in the checks table";
      id.appendChild(button);
      tr.appendChild(id);
      var st = el("td", null, "stc");
      st.appendChild(el("span", c.label.split(" (")[0], "st"));
      tr.appendChild(st);
      var why = fam.why[k] !== undefined ? fam.why[k]
        : String(c.reason || c.error || "").trim()
          .replace(/\s*[\t\n\v\f\r\x1c-\x1f\x85\u2028\u2029]\s*/g, " ");
      var reason = el("td", why, "why");
      reason.title = why;
      tr.appendChild(reason);
      list.appendChild(tr);
    }
    cell.appendChild(list);
    var detail = el("tr", null, "fd");
    detail.appendChild(cell);
    refresh(detail);
    return detail;
  }

  function toggle(row) {
    var button = row.querySelector("button.x");
    var next = row.nextElementSibling;
    if (next && next.classList.contains("fd")) {
      row.parentNode.removeChild(next);
      button.setAttribute("aria-expanded", "false");
      return;
    }
    row.parentNode.insertBefore(cases(fams[+row.getAttribute("data-f")]), row.nextSibling);
    button.setAttribute("aria-expanded", "true");
  }

  table.addEventListener("click", function (event) {
    var show = event.target.closest("button.fc");
    if (show) {
      // The case's own row: the id filter narrows the checks table to exactly that id (not
      // to every id containing it), and (the event bubbling up to the filter bar, as a typed
      // id does) the open case lists too.
      var input = document.getElementById("id-filter");
      input.value = show.textContent;
      input.setAttribute("data-exact", show.textContent);
      input.dispatchEvent(new Event("input", { bubbles: true }));
      document.getElementById("checks").scrollIntoView();
      return;
    }
    var button = event.target.closest("button.x");
    if (button) { toggle(button.closest("tr")); }
  });

  function refreshAll() {
    var open = table.getElementsByClassName("fd");
    for (var k = 0; k < open.length; k++) { refresh(open[k]); }
  }
  // After the checks' own handlers have run (they are registered first).
  var bar = document.getElementById("filters");
  bar.addEventListener("click", function () { setTimeout(refreshAll, 0); });
  bar.addEventListener("change", refreshAll);
  bar.addEventListener("input", refreshAll);
})();
"""
