"""report.md: eval-banana's layout, with a family table before the checks, and the escaping
that keeps words eb did not write (a judge's reason, an agent's error) as words in any Markdown
reader (the step summary, a pull-request comment)."""

from __future__ import annotations

import re
from typing import Any

from eval_banana.core.words import one_line
from eval_banana.reporttext.families import family_cases_text, family_rate, gate_state
from eval_banana.reporttext.notes import (
    cache_line,
    did_not_run,
    errors_line,
    flaky_line,
    halt_line,
    nothing_judged,
    status_note,
    usage_summary,
)

_NEWLINES = re.compile(r"[\r\n]+")


def md_cell(text: str) -> str:
    """`|` escaped, newlines collapsed: a value stays in its cell or line (unlike eval-banana)."""
    return _NEWLINES.sub(" ", text).replace("|", "\\|")


# What Markdown (GitHub's step summary and pull-request comments included) would read as
# something other than words: a link or an image (`[`, `]`), raw HTML or a comment that hides
# everything after it (`<`, `>`), an entity (`&`), a code span (a backtick), a table's next cell
# (`|`), and the backslash that would undo any of these escapes.
_MARKUP = re.compile(r"[\\`\[\]<>|&]")
# A space after a space: a Markdown reader shows a run of spaces as one, so a value quoted in a
# reason (`"Release  notes"`) would read as another; each space after the first is kept as
# a no-break space.
_SPACE_AFTER_SPACE = re.compile(r"(?<= ) ")


def md_text(text: str) -> str:
    """Words eb did not write (a judge's reason, an agent's error, a skip reason) as one line
    of Markdown that shows exactly those words: each markup character is escaped, so a judge
    cannot put a link, an image or hidden text into a report or a pull-request comment."""
    escaped = _MARKUP.sub(lambda found: "\\" + found.group(), one_line(text))
    return _SPACE_AFTER_SPACE.sub("&nbsp;", escaped)


def _gate_cell(*, family: dict[str, Any]) -> str:
    gate, state = family.get("min_pass_rate"), gate_state(family=family)
    if state == "at_merge":
        return f"min_pass_rate {family['gate_at_merge']!r} judged by eb merge"
    if state == "none":
        return "none"
    if state == "unmeasured":
        return f"min_pass_rate {gate!r} not measured: no case ran"
    if state == "held":
        return f"min_pass_rate {gate!r} held"
    return f"**min_pass_rate {gate!r} NOT held**: the run fails"


def family_table(*, report: dict[str, Any]) -> list[str]:
    """report.md's table of dataset families (none without one): a row each with its counts,
    pass rate and gate. It comes before the checks, so a step summary cut to fit GitHub's
    size limit still shows every family."""
    families = report.get("families") or []
    if not families:
        return []
    lines = [
        "| Family | Cases | Passed | Failed | Errored | Pass rate | Gate |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for family in families:
        lines.append(
            f"| `{md_cell(str(family['id']))}` | {family_cases_text(family=family)} "
            f"| {family['passed']} | {family['failed']} | {family['errored']} "
            f"| {family_rate(family=family)} | {_gate_cell(family=family)} |"
        )
    return lines


def _status_cell(*, check: dict[str, Any]) -> str:
    note = status_note(check=check)
    cell = f"`{md_cell(str(check['status']))}`"
    return f"{cell} ({note})" if note else cell


def render_markdown(*, report: dict[str, Any]) -> str:
    """report.md as eval-banana writes it (docs/compatibility.md#report-md), one final newline."""
    lines = [
        "# eval-banana report",
        "",
        "| Field | Value |",
        "| --- | --- |",
        f"| Run ID | `{md_cell(report['run_id'])}` |",
        f"| Score | `{report['points_earned']}/{report['total_points']}` |",
        f"| Percentage | `{report['percentage']:.1f}%` |",
        f"| Pass Threshold | `{report['pass_threshold']!r}` |",
        f"| Run Passed | `{'yes' if report['run_passed'] else 'no'}` |",
        "",
    ]
    families = family_table(report=report)
    if families:
        # Only runs with dataset families; other runs keep eval-banana's exact text.
        lines += [*families, ""]
    lines += [
        "| Check ID | Type | Status | Score | Duration (ms) |",
        "| --- | --- | --- | --- | --- |",
    ]
    checks: list[dict[str, Any]] = report["checks"]
    skipped: list[dict[str, Any]] = report.get("skipped") or []
    for check in checks:
        lines.append(
            f"| `{md_cell(check['check_id'])}` | `{md_cell(check['check_type'])}` "
            f"| {_status_cell(check=check)} | `{check['score']}` | `{check['duration_ms']}` |"
        )
    for item in skipped:
        lines.append(
            f"| `{md_cell(item['check_id'])}` | `{md_cell(item['check_type'])}` "
            "| `skipped` | - | - |"
        )
    if report.get("allow_empty"):
        lines += ["", f"No checks ran: {md_text(str(report['allow_empty']))}."]
    judged = nothing_judged(report=report)
    if judged is not None:
        lines += ["", f"No checks ran: {judged}."]
    usage = usage_summary(usage=report.get("judge_usage"))
    if usage is not None:
        # Only when judges reported usage; other runs keep eval-banana's exact text.
        lines += ["", f"Judge usage: {md_cell(usage)}."]
    cached = cache_line(report=report)
    if cached is not None:
        lines += ["", md_text(cached) + "."]
    if report.get("selection_note"):
        lines += ["", md_cell(str(report["selection_note"]))]
    if report.get("aborted_by"):
        # Only for runs a fuse or an interrupt stopped; a complete run keeps eval-banana's text.
        lines += [
            "",
            f"Run aborted by `{report['aborted_by']}`; {did_not_run(report=report)}.",
        ]
    halted = halt_line(report=report)
    if halted is not None:
        lines += ["", halted]
    flaky = flaky_line(report=report)
    if flaky is not None:
        lines += ["", flaky]
    errors = errors_line(report=report)
    if errors is not None:
        lines += ["", md_text(errors)]
    for check in checks:
        reason, error = check.get("reason"), check.get("error_detail")
        if not reason and not error:
            continue
        lines += ["", f"## {md_cell(check['check_id'])}", "", f"- Status: `{check['status']}`"]
        if reason:
            lines.append(f"- Reason: {md_text(reason)}")
        if error:
            lines.append(f"- Error: {md_text(error)}")
        error_class = (check.get("details") or {}).get("error_class")
        if error and isinstance(error_class, str):
            cause = check["details"].get("error_cause")
            note = f" ({md_text(str(cause))})" if cause else ""
            lines.append(f"- Error class: `{md_cell(error_class)}`{note}")
    for item in skipped:
        lines += [
            "",
            f"## {md_cell(item['check_id'])}",
            "",
            "- Status: `skipped`",
            f"- Reason: {md_text(item['reason'])}",
        ]
    return "\n".join(lines) + "\n"


def ended_after_report(*, message: str) -> str:
    """The paragraph put before a copy of report.md (the step summary, the `--result-out`
    document) when the run ended with exit 3 after report.md was written (report.html or the
    JUnit file could not be written, a signal while the run was finishing): report.md keeps
    the verdict the checks earned, so the copy says what became of the run."""
    said = md_text(message).rstrip(".")
    return (
        f"**eb ended this run with exit 3 after writing this report:** {said}. The report "
        "below holds the verdict the checks earned; the run did not pass.\n\n"
    )
