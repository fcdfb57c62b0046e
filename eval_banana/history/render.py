"""`eb history` as text (the default) and as Markdown, from the view object."""

from __future__ import annotations

from collections.abc import Sequence

from eval_banana.core.words import dollars_text, percent_text, plural, visible
from eval_banana.history.view import CheckRow, FamilyRow, HistoryView, RunRef, RunRow


def _seconds(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.2f}s"


def rate_text(rate: float | None, *, threshold: float | None = None) -> str:
    """A rate in `eb history`'s whole percents, `-` where none was measured; with more places
    where whole ones would round it onto or past the `threshold` it is judged by (2/3 under
    0.667 reads `66.67%`, never `67%` beside "below the threshold 66.7%"), as a family's rate
    never reads as its gate (`percent_text`'s bounds)."""
    if rate is None:
        return "-"
    return percent_text(rate, places=0, bounds=() if threshold is None else (threshold,))


def _cost(cost: float | None) -> str:
    return "-" if cost is None else dollars_text(cost)


def _commit(commit: str | None, dirty: bool = False) -> str:
    return "-" if commit is None else commit[:7] + ("+" if dirty else "")


def _ref(ref: RunRef) -> str:
    commit = f" (commit {ref.commit[:7]})" if ref.commit else ""
    return f"run {ref.run_id}{commit}"


def _streak_story(row: CheckRow) -> str:
    """ "failed since run X (commit abc1234), last passed in run Y", or "" when passing; when
    the streak began with an edit of the check, it says so: not a regression of one check."""
    since = row.failing_since
    if since is None:
        return ""
    edited = row.definition_changes[-1] if row.definition_changes else None
    if edited is not None and edited.run_id == since.run_id:
        text = f"definition changed in {_ref(since)}; {row.status} since then"
        if row.last_passed is None:
            return f"{text}, never passed in the history"
        return f"{text}, last passed in {_ref(row.last_passed)} on its earlier definition"
    text = f"{row.status} since {_ref(since)}"
    if row.last_passed is None:
        return f"{text}, never passed in the history"
    return f"{text}, last passed in {_ref(row.last_passed)}"


def story(row: CheckRow) -> str:
    """What the check's note says: its failing streak (see `_streak_story`), the run its
    definition last changed in when the streak does not already say so, and the runs its own
    samples disagreed in; "" for a steady check passing on one definition."""
    parts = [_streak_story(row)]
    edited = row.definition_changes[-1] if row.definition_changes else None
    if edited is not None and not parts[0].startswith("definition changed"):
        parts.append(f"definition changed in {_ref(edited)}")
    if row.flaky_runs:
        parts.append(f"samples disagreed in {plural(count=row.flaky_runs, noun='run')}")
    return "; ".join(part for part in parts if part)


# Between two marks of a check's strip: its definition changed in the run after it.
EDIT_MARK = "|"


def strip_text(row: CheckRow, *, run_ids: Sequence[str]) -> str:
    """The check's strip with `EDIT_MARK` before each run (of `run_ids`, the window's) its
    definition changed in."""
    edited = {ref.run_id for ref in row.definition_changes}
    if not edited:
        return row.strip
    return "".join(
        (EDIT_MARK if run_id in edited else "") + mark
        for run_id, mark in zip(run_ids, row.strip, strict=True)
    )


def run_note(run: RunRow) -> str:
    """Why a failed run did not pass (`1 check was flaky (--fail-on-flaky)`), then
    "aborted (interrupt): 2 of 3 checks not run, 1 stopped"; "" for a run that passed with
    every check run to an outcome. `not run` is the count the run's own console said."""
    parts = list(run.failed_because)
    if run.not_run or run.stopped or run.aborted_by is not None:
        parts.append(_not_run_note(run))
    return "; ".join(parts)


def _not_run_note(run: RunRow) -> str:
    not_run = f"{run.not_run} of {run.checks} checks not run"
    if run.stopped:
        not_run += f", {run.stopped} stopped"
    return not_run if run.aborted_by is None else f"aborted ({run.aborted_by}): {not_run}"


def verdict_text(run: RunRow) -> str:
    """The run's verdict as its row says it: a run that did not pass stands out in capitals."""
    if run.passed:
        return "passed"
    return "ABORTED" if run.aborted_by is not None else "FAILED"


def _run_cells(run: RunRow) -> list[str]:
    return [
        run.run_id,
        run.kind,
        _commit(run.commit, run.dirty),
        verdict_text(run),
        # Out of the checks it ran, as its rate: the checks it did not run are in the note.
        f"{run.passed_checks}/{run.checks - run.not_run - run.stopped}",
        rate_text(run.pass_rate, threshold=run.pass_threshold),
        _seconds(run.duration_ms),
        _cost(run.cost_usd),
        run_note(run),
    ]


_RUN_HEAD = ["run", "kind", "commit", "verdict", "passed", "rate", "duration", "cost", "note"]
# How to read a family's strip, said once above its table.
FAMILY_KEY = "▁ to █ the pass rate of a run of every case, ◦ part of them, · not run"
_CHECK_HEAD = ["check", "outcomes", "rate", "flips", "median", "p90", "cost", "note"]


def _check_cells(row: CheckRow, *, run_ids: Sequence[str]) -> list[str]:
    return [
        row.id,
        strip_text(row, run_ids=run_ids),
        rate_text(row.pass_rate),
        str(row.flips),
        _seconds(row.median_ms),
        _seconds(row.p90_ms),
        _cost(row.cost_usd),
        story(row),
    ]


FAMILY_HEAD = ["family", "cases", "pass rate by run", "latest", "lowest"]


def family_cells(row: FamilyRow) -> list[str]:
    return [
        row.id,
        str(row.cases),
        row.strip,
        rate_text(row.latest_rate),
        rate_text(row.lowest_rate),
    ]


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    # A record's words (a run id, a check id, why a run was aborted) may come from another
    # runner's history (`eb history import`): a control character in one is shown as `\xNN`.
    rows = [[visible(cell) for cell in cells] for cells in rows]
    widths = [max(len(cells[i]) for cells in [head, *rows]) for i in range(len(head))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()
        for cells in [head, *rows]
    ]


def window_cost(view: HistoryView) -> str:
    """What the runs shown cost together, said under their table: the history answers what the
    suite costs per week."""
    return f"Total cost of the {plural(count=len(view.runs), noun='run')} shown: " + (
        window_cost_figure(view) + "."
    )


def window_cost_figure(view: HistoryView) -> str:
    """The window's cost (`view.cost_usd`), as the text, Markdown and the --html page say it:
    the runs that reported no cost are left out of the sum, and counted, so a sum of some of
    them never reads as the whole window's."""
    if view.cost_usd is None:
        return "no cost reported"
    text = dollars_text(view.cost_usd)
    if view.runs_without_cost:
        text += f"; {plural(count=view.runs_without_cost, noun='run')} reported no cost (left out)"
    return text


def _title(view: HistoryView) -> str:
    shown = {"all": "checks", "flaky": "flaky checks", "slowest": "slowest checks"}
    return shown.get(view.listing, "costliest checks")


def to_text(view: HistoryView) -> str:
    if not view.runs:
        return f"No run recorded in {view.folder} (in the window asked for).\n"
    lines = [f"Runs ({len(view.runs)} of {view.records} recorded, oldest first):"]
    lines += _table(_RUN_HEAD, [_run_cells(run) for run in view.runs])
    lines.append(window_cost(view))
    if view.families:
        lines += ["", f"Dataset families ({len(view.families)}; {FAMILY_KEY}):"]
        lines += _table(FAMILY_HEAD, [family_cells(row) for row in view.families])
    lines += ["", f"{_title(view).capitalize()} ({len(view.checks)}):"]
    if view.checks:
        run_ids = [run.run_id for run in view.runs]
        lines += _table(_CHECK_HEAD, [_check_cells(row, run_ids=run_ids) for row in view.checks])
    else:
        lines.append("none")
    return "\n".join(lines) + "\n"


def _md_cell(text: str) -> str:
    return visible(text).replace("|", "\\|") or " "


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "| " + " | ".join("---" for _ in head) + " |",
        *("| " + " | ".join(_md_cell(cell) for cell in cells) + " |" for cells in rows),
    ]


def to_markdown(view: HistoryView) -> str:
    lines = ["# Run history", ""]
    if not view.runs:
        return "\n".join([*lines, f"No run recorded in `{view.folder}`.", ""])
    lines += [f"## Runs ({len(view.runs)} of {view.records} recorded, oldest first)", ""]
    lines += _md_table(_RUN_HEAD, [_run_cells(run) for run in view.runs])
    lines += ["", window_cost(view)]
    if view.families:
        lines += ["", f"## Dataset families ({len(view.families)})", "", f"{FAMILY_KEY}.", ""]
        lines += _md_table(FAMILY_HEAD, [family_cells(row) for row in view.families])
    lines += ["", f"## {_title(view).capitalize()} ({len(view.checks)})", ""]
    if view.checks:
        run_ids = [run.run_id for run in view.runs]
        rows = [
            [f"`{cells[0]}`", f"`{cells[1]}`", *cells[2:]]
            for cells in (_check_cells(row, run_ids=run_ids) for row in view.checks)
        ]
        lines += _md_table(_CHECK_HEAD, rows)
    else:
        lines.append("None.")
    return "\n".join(lines) + "\n"
