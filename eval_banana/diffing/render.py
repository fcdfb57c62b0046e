"""A run diff as text (the terminal, CI logs), Markdown (a pull-request comment) or JSON."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from eval_banana.core.files import write_text_atomic
from eval_banana.core.words import percent_text, plural
from eval_banana.diffing.compare import DIFF_JSON
from eval_banana.models.diff import DiffEntry, DiffRun, FamilyChange, FamilySide, RunDiff
from eval_banana.reporttext.families import gate_of, rate_of_family
from eval_banana.reporttext.markdown import md_cell, md_text
from eval_banana.runners.results import STOP_REASON_TEXT

FORMATS: tuple[str, ...] = ("text", "md", "json")
# A pull-request comment holds at most 65,536 characters: long categories are cut, with a count.
MD_ROWS_PER_CATEGORY = 50
# A row's note is a reason's first line, which a judge can write as one line of thousands of
# characters: cut there, 50 rows of it stay well under the comment's limit (some 35,000
# characters with every character markup that Markdown escapes, 15,000 without).
MD_NOTE_CHARS = 300
TEXT_NOT_SELECTED_ROWS = 20

_LABELS = {
    "passed": "passed",
    "failed": "failed",
    "error": "error",
    "not_run": "not run",
    "stopped": "stopped",
}

# (attribute of RunDiff, heading); the order both text and Markdown list them in.
CATEGORIES: tuple[tuple[str, str], ...] = (
    ("regressions", "Regressions"),
    ("fixes", "Fixes"),
    ("could_not_judge", "Could not judge (infrastructure errors, not regressions)"),
    ("became_flaky", "Became flaky (its samples disagree in head)"),
    ("no_longer_flaky", "No longer flaky (its samples agree in head)"),
    ("still_failing", "Still failing"),
    ("new_checks", "New checks"),
    ("removed_checks", "Removed checks"),
    ("skipped_now", "Skipped now"),
    ("no_longer_skipped", "No longer skipped"),
    ("not_selected", "Not selected in head"),
    ("not_selected_in_base", "Not selected in base"),
    ("changed_definitions", "Changed definitions"),
)


# What a narrowed run left out says nothing of the change: a few of them, not thousands.
_UNSELECTED = frozenset({"not_selected", "not_selected_in_base"})


def _label(outcome: str | None, *, flaky: bool = False) -> str:
    """`passed`, or `passed (flaky)` when its samples disagreed in that run."""
    if outcome is None:
        return "absent"
    return f"{_LABELS[outcome]} (flaky)" if flaky else _LABELS[outcome]


def _skipped(reason: str) -> str:
    return f"skipped ({reason})" if reason else "skipped"


def _change(entry: DiffEntry, *, unselected: frozenset[str]) -> str:
    """`unselected`: the checks a narrowed base left out, which are not new."""
    base = _label(entry.base, flaky=entry.base_flaky)
    head = _label(entry.head, flaky=entry.head_flaky)
    if entry.skip_reason is not None:
        # Skipped on one side: `passed -> skipped (flaky upstream)`, or the other way round.
        base = _skipped(entry.skip_reason) if entry.base is None else base
        head = _skipped(entry.skip_reason) if entry.head is None else head
        return f"{base} -> {head}"
    if entry.base is None:
        shown = "not selected in base" if entry.check_id in unselected else "new"
        return f"{shown}, {head}"
    if entry.head is None:
        return f"was {base}"
    return f"{base} -> {head}"


def _unselected(diff: RunDiff) -> frozenset[str]:
    return frozenset(entry.check_id for entry in diff.not_selected_in_base)


def _percent(ratio: float) -> str:
    return percent_text(ratio, places=2)


def _signed(number: float, *, digits: int = 0) -> str:
    return f"{number:+.{digits}f}"


def _ratio(number: float, *, signed: bool = False) -> str:
    """A ratio with no trailing zeros: 1, 0.6, -0.0125."""
    text = f"{number:+.6f}" if signed else f"{number:.6f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def headline(diff: RunDiff) -> str:
    """`2 regressions, 1 family gate broken`, then which run was aborted and by what: a run cut
    short must never read as a plain `no regressions`."""
    count = len(diff.regressions)
    broke = sum(change.gate_broke for change in diff.families)
    parts = [plural(count=count, noun="regression")] if count else []
    if broke:
        parts.append(f"{plural(count=broke, noun='family gate')} broken")
    if diff.became_flaky:
        parts.append(f"{plural(count=len(diff.became_flaky), noun='check')} became flaky")
    aborted = [f"{name} run aborted ({run.aborted_by})" for name, run in _aborted_runs(diff)]
    verdict = ", ".join(parts) if count or broke else ", ".join(["no regressions", *parts])
    return "; ".join([verdict, *aborted])


def _aborted_runs(diff: RunDiff) -> list[tuple[str, DiffRun]]:
    """The sides whose run was aborted, head first (the run under judgement)."""
    return [
        (name, run) for name, run in (("head", diff.head), ("base", diff.base)) if run.aborted_by
    ]


def _why_aborted(run: DiffRun) -> str:
    """`interrupt: interrupted`, as the run's own console said it."""
    reason = run.aborted_by or ""
    return f"{reason}: {STOP_REASON_TEXT.get(reason, reason)}"


def flaky_warnings(diff: RunDiff) -> list[str]:
    """Why a flaky check is a regression or a fix, when it is: a run's verdict counted
    flakiness (fail_on_flaky), so it failed for samples that disagree, and the other run did
    not fail for the check."""
    lines = []
    regressed = sum(entry.head_flaky for entry in diff.regressions)
    if diff.head.fail_on_flaky and regressed:
        flaky = plural(count=regressed, noun="flaky check")
        verdict = "is a regression" if regressed == 1 else "are regressions"
        lines.append(
            f"The head run fails on flaky checks (fail_on_flaky): {flaky} the base run did not "
            f"fail for {verdict}."
        )
    fixed = sum(entry.base_flaky for entry in diff.fixes)
    if diff.base.fail_on_flaky and fixed:
        flaky = plural(count=fixed, noun="flaky check")
        verdict = "is a fix" if fixed == 1 else "are fixes"
        lines.append(
            f"The base run failed on flaky checks (fail_on_flaky): {flaky} the head run does not "
            f"fail for {verdict}."
        )
    return lines


def aborted_warnings(diff: RunDiff) -> list[str]:
    """One line per aborted run: what stopped it, how many of its checks it left without a
    verdict, and what the diff makes of them."""
    lines = []
    for name, run in _aborted_runs(diff):
        checks = plural(count=run.total_checks, noun="check")
        counted = (
            "each that passed in base, or is new, is a regression"
            if name == "head"
            else "each that does not pass in head is a regression"
        )
        lines.append(
            f"The {name} run was aborted ({_why_aborted(run)}): {run.unfinished_checks:,} of "
            f"its {checks} never started or stopped before a verdict; {counted}."
        )
    return lines


def _family_side(side: FamilySide | None) -> str:
    if side is None:
        return "absent"
    part = "" if side.of_cases is None else f", {side.cases:,} of its {side.of_cases:,} cases"
    rate = rate_of_family(pass_rate=side.pass_rate, cases=side.cases, gate=side.min_pass_rate)
    return f"{side.passed}/{side.cases} ({rate}{part})"


# A side's gate in a diff line, by `gate_of`: a shard defers its gate to `eb merge`, which
# is neither a gate held nor one that went away.
_GATE_WORDS = {
    "none": "none",
    "at_merge": "judged by eb merge",
    "unmeasured": "not measured",
    "held": "held",
    "broken": "NOT held",
}


def _gate(side: FamilySide | None) -> str:
    if side is None:
        return "none"
    state = gate_of(
        min_pass_rate=side.min_pass_rate,
        gate_at_merge=side.gate_at_merge,
        cases=side.cases,
        gate_held=side.gate_held,
    )
    return _GATE_WORDS[state]


def family_line(change: FamilyChange) -> str:
    """`qa: 2/3 (66.7%) -> 1/3 (33.3%); min_pass_rate 0.6 held -> NOT held`, or with each
    side's value when the gate itself changed: `...; min_pass_rate 0.8 held -> 0.9 NOT held`."""
    text = f"{change.family}: {_family_side(change.base)} -> {_family_side(change.head)}"
    base_rate, head_rate = _gate_rate(change.base), _gate_rate(change.head)
    if base_rate == head_rate:
        if base_rate is not None:
            text += f"; min_pass_rate {base_rate:g} {_gate(change.base)} -> {_gate(change.head)}"
    else:
        # One value for both sides would make `0.8 held -> NOT held` of one pass rate: each
        # side names its own (`0.8 held -> 0.9 NOT held`, `none -> 0.9 held`).
        text += (
            f"; min_pass_rate {_rated(rate=base_rate, side=change.base)} -> "
            f"{_rated(rate=head_rate, side=change.head)}"
        )
    return text + (" (the run fails for it now)" if change.gate_broke else "")


def _rated(*, rate: float | None, side: FamilySide | None) -> str:
    return _gate(side) if rate is None else f"{rate:g} {_gate(side)}"


def _gate_rate(side: FamilySide | None) -> float | None:
    """The gate a side names: its own, or the one a shard left to `eb merge`."""
    if side is None:
        return None
    return side.min_pass_rate if side.min_pass_rate is not None else side.gate_at_merge


def _side(name: str, run: DiffRun) -> str:
    selected = f", selected with {run.selection}" if run.selection else ""
    aborted = f", ABORTED ({_why_aborted(run)})" if run.aborted_by else ""
    return (
        f"{name}: {run.run_id} ({run.run_dir}): {run.points_earned}/{run.total_points} points, "
        f"{_percent(run.pass_rate)}, {'passed' if run.run_passed else 'not passed'}"
        f"{aborted}{_flaky_side(run)}{selected}"
    )


def _flaky_side(run: DiffRun) -> str:
    """`, 1 flaky check (fails the run: fail_on_flaky)`; "" with no flaky check."""
    if not run.flaky_checks:
        return ""
    fails = " (fails the run: fail_on_flaky)" if run.fail_on_flaky else ""
    return f", {plural(count=run.flaky_checks, noun='flaky check')}{fails}"


def render_text(diff: RunDiff) -> str:
    """Plain lines: the two runs, the score deltas, then every non-empty category in full."""
    lines = [
        _side("Base", diff.base),
        _side("Head", diff.head),
        f"Points earned: {diff.base.points_earned} -> {diff.head.points_earned} "
        f"({_signed(diff.points_earned_delta)})",
        f"Pass rate: {_ratio(diff.base.pass_rate)} -> {_ratio(diff.head.pass_rate)} "
        f"({_ratio(diff.pass_rate_delta, signed=True)}; "
        f"{_percent(diff.base.pass_rate)} -> {_percent(diff.head.pass_rate)})",
        *aborted_warnings(diff),
        *flaky_warnings(diff),
    ]
    unselected = _unselected(diff)
    listed: dict[str, str] = {}  # check id -> the heading it was first listed under
    for attribute, heading in CATEGORIES:
        entries: list[DiffEntry] = getattr(diff, attribute)
        if not entries:
            continue
        lines.append(f"{heading} ({len(entries)}):")
        shown = entries[:TEXT_NOT_SELECTED_ROWS] if attribute in _UNSELECTED else entries
        for entry in shown:
            told = _text_entry(
                entry,
                unselected=unselected,
                listed=listed,
                mark=attribute != "changed_definitions",
            )
            lines.append(f"  - {told}")
            listed.setdefault(entry.check_id, heading)
        if len(shown) < len(entries):
            lines.append(
                f"  ... and {len(entries) - len(shown):,} more (`eb diff --json` lists them)"
            )
    if diff.families:
        lines.append(f"Families changed ({len(diff.families)}):")
        lines.extend(f"  - {family_line(change)}" for change in diff.families)
    lines.append(f"Unchanged passing: {diff.unchanged_passing}")
    lines.append(f"Diff: {headline(diff)}")
    return "\n".join(lines) + "\n"


def _text_entry(
    entry: DiffEntry, *, unselected: frozenset[str], listed: dict[str, str], mark: bool
) -> str:
    """One check's line. A check whose definition changed says so (`mark`) where its verdict
    is told; under Changed definitions, one told above points there instead of repeating it."""
    change = _change(entry, unselected=unselected)
    earlier = listed.get(entry.check_id)
    if earlier is not None:
        return f"{entry.check_id}: {change} (under {earlier} above)"
    if mark and entry.definition_changed:
        change += ", definition changed"
    note = f" - {entry.summary}" if entry.summary else ""
    return f"{entry.check_id}: {change}{note}"


# The escapes a note holds for a control character (`\x1b`) or a bidirectional one (`\u202e`).
_ESCAPE = re.compile(r"\\x[0-9a-f]{2}|\\u[0-9a-f]{4}")


def _md_note(summary: str) -> str:
    """A row's note as `--format md` shows it: the summary cut after MD_NOTE_CHARS characters
    with an ellipsis (never inside an escape: `\\x1` alone would read as other words), then its
    Markdown escaped (so no cut splits an escape of that either)."""
    if len(summary) > MD_NOTE_CHARS:
        cut = MD_NOTE_CHARS
        nearby = _ESCAPE.finditer(summary, max(cut - 5, 0), cut + 5)
        cut = next((found.start() for found in nearby if found.start() < cut < found.end()), cut)
        summary = summary[:cut].rstrip() + "…"
    return md_text(summary)


def _md_table(entries: list[DiffEntry], *, unselected: frozenset[str]) -> list[str]:
    rows = ["| Check | Change | Definition | Note |", "| --- | --- | --- | --- |"]
    for entry in entries[:MD_ROWS_PER_CATEGORY]:
        change = _change(entry, unselected=unselected)
        rows.append(
            f"| `{md_cell(entry.check_id)}` | {md_cell(change)} | "
            f"{'changed' if entry.definition_changed else ''} | {_md_note(entry.summary)} |"
        )
    left = len(entries) - MD_ROWS_PER_CATEGORY
    if left > 0:
        rows += ["", f"... and {left:,} more (see diff.json or `eb diff --format json`)."]
    return rows


def _md_flaky(run: DiffRun) -> str:
    return f"{run.flaky_checks} (fail the run)" if run.fail_on_flaky else str(run.flaky_checks)


def _md_aborted(run: DiffRun) -> str:
    return f"**yes** ({md_cell(_why_aborted(run))})" if run.aborted_by else "no"


def _md_selection(flags: str | None) -> str:
    return f"`{md_cell(flags)}`" if flags else "every check"


def render_md(diff: RunDiff) -> str:
    """A pull-request comment: the verdict, the score table, regressions open, the rest folded."""
    base, head = diff.base, diff.head
    lines = [
        f"### eval-banana diff: {headline(diff)}",
        "",
        "| | base | head | change |",
        "| --- | --- | --- | --- |",
        f"| Run | `{md_cell(base.run_id)}` | `{md_cell(head.run_id)}` | |",
        f"| Points earned | {base.points_earned}/{base.total_points} | "
        f"{head.points_earned}/{head.total_points} | {_signed(diff.points_earned_delta)} |",
        f"| Pass rate | {_percent(base.pass_rate)} | {_percent(head.pass_rate)} | "
        f"{_signed(diff.pass_rate_delta * 100, digits=2)} pp |",
        f"| Run passed | {'yes' if base.run_passed else 'no'} | "
        f"{'yes' if head.run_passed else 'no'} | |",
    ]
    if base.selection or head.selection:
        lines.append(
            f"| Selection | {_md_selection(base.selection)} | {_md_selection(head.selection)} | |"
        )
    if base.flaky_checks or head.flaky_checks:
        lines.append(
            f"| Flaky checks | {_md_flaky(base)} | {_md_flaky(head)} | "
            f"{_signed(head.flaky_checks - base.flaky_checks)} |"
        )
    if base.aborted_by or head.aborted_by:
        lines.append(f"| Aborted | {_md_aborted(base)} | {_md_aborted(head)} | |")
    lines += [line for warning in aborted_warnings(diff) for line in ("", f"> **{warning}**")]
    lines += [line for warning in flaky_warnings(diff) for line in ("", f"> {warning}")]
    unselected = _unselected(diff)
    for attribute, heading in CATEGORIES:
        entries: list[DiffEntry] = getattr(diff, attribute)
        if not entries:
            continue
        title = f"{heading} ({len(entries)})"
        table = _md_table(entries, unselected=unselected)
        if attribute == "regressions":
            lines += ["", f"#### {title}", "", *table]
        else:
            lines += ["", f"<details><summary>{title}</summary>", "", *table]
            lines += ["", "</details>"]
    if diff.families:
        lines += ["", f"#### Families changed ({len(diff.families)})", ""]
        lines += [f"- {md_cell(family_line(change))}" for change in diff.families]
    passing = diff.unchanged_passing
    lines += [
        "",
        f"{plural(count=passing, noun='check')} pass{'es' if passing == 1 else ''} in both runs.",
    ]
    return "\n".join(lines) + "\n"


def render_json(diff: RunDiff) -> str:
    return (
        json.dumps(diff.model_dump(mode="json"), indent=2, ensure_ascii=False, allow_nan=False)
        + "\n"
    )


RENDERERS: dict[str, Callable[[RunDiff], str]] = {
    "text": render_text,
    "md": render_md,
    "json": render_json,
}


def write_diff(*, run_dir: Path, diff: RunDiff) -> Path:
    """`diff.json` in a run folder (`eb run --baseline`), written atomically."""
    path = run_dir / DIFF_JSON
    write_text_atomic(path=path, text=render_json(diff))
    return path
