"""Stage 7, report: report.json and report.md, plus stages/report.json."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

from eval_banana.core import canonjson
from eval_banana.core.files import write_json_atomic, write_model, write_text_atomic
from eval_banana.core.words import one_line, percent_text, plural, size_text
from eval_banana.models.repeats import is_flaky
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, ExecuteDoc, ReportDoc, ScoreDoc
from eval_banana.runners.results import elapsed_ms, maxfail_text
from eval_banana.runners.retries import attempts_needed
from eval_banana.stagefiles.layout import envelope, stage_path
from eval_banana.stages.execute import document_digest

REPORT_JSON = "report.json"
REPORT_MD = "report.md"
REPORT_SCHEMA_VERSION = 1

_NEWLINES = re.compile(r"[\r\n]+")


class ReportOutcome(NamedTuple):
    """What the report stage wrote: the report.json object, its stage document, the paths."""

    report: dict[str, Any]
    doc: ReportDoc
    report_json: Path
    report_md: Path
    markdown: str  # report.md's text, so later writers need not read it back
    digest: str


def build_report(
    *, run_dir: Path, config: ConfigDoc, execute: ExecuteDoc, score: ScoreDoc
) -> dict[str, Any]:
    """The report.json object: eval-banana's keys in its order, our additions after."""
    started = datetime.fromisoformat(execute.started_at)
    completed = datetime.fromisoformat(execute.completed_at)
    execution = config.settings.execution
    shard = config.selection.shard
    report: dict[str, Any] = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "run_id": execute.run_id,
        "project_root": config.project_root,
        "output_dir": str(run_dir.resolve()),
        "started_at": execute.started_at,
        "completed_at": execute.completed_at,
        "duration_ms": elapsed_ms(started=started, completed=completed),
        "total_checks": score.total_checks,
        "passed_checks": score.passed_checks,
        "failed_checks": score.failed_checks,
        "errored_checks": score.errored_checks,
        "points_earned": score.points_earned,
        "total_points": score.total_points,
        "percentage": score.percentage,
        "pass_threshold": score.pass_threshold,
        "meets_threshold": score.meets_threshold,
        "run_passed": score.run_passed,
        "checks": [result.model_dump(mode="json") for result in execute.results],
        # Additive keys: readers of schema_version 1 ignore what they do not know.
        "not_run_checks": score.not_run_checks,
        "aborted_by": score.aborted_by,
        "env_policy": execution.env,
        "env_allow": list(execution.env_allow),
        "env_allow_prefixes": list(execution.env_allow_prefixes),
        # Token fuse: what judges reported, and what the fuse could not see.
        "tokens_used": execute.tokens_used,
        "warnings": [warning.model_dump(mode="json") for warning in execute.warnings],
        # Selected checks whose file says `skip:`: listed, never run, outside every count.
        "skipped_checks": score.skipped_checks,
        "skipped": [skipped.model_dump(mode="json") for skipped in execute.skipped],
        # maxfail: launching stopped after that many failures; the rest are not run.
        "maxfail": config.settings.core.maxfail,
        "halted_by": score.halted_by,
        # Scale-out (docs/scale-out.md): the shard of a shard run, why a run with no check
        # passed, and the shard runs a merged run was gathered from.
        "shard": shard.model_dump(mode="json") if shard is not None else None,
        "allow_empty": execute.allow_empty,
        "merged_from": [source.model_dump(mode="json") for source in execute.merged_from],
        # What the judges reported about their own tokens and cost, totalled (score stage).
        "judge_usage": None
        if score.judge_usage is None
        else score.judge_usage.model_dump(mode="json"),
        # The verdict cache and incremental selection (docs/incremental.md).
        "cached_checks": score.cached_checks,
        "selection_note": selection_note(
            config=config, total=score.total_checks, skipped=score.skipped_checks
        ),
        # Sampled checks (docs/judges.md#repeats): how many disagreed with themselves.
        "flaky_checks": score.flaky_checks,
        "fail_on_flaky": score.fail_on_flaky,
        # Dataset families (docs/datasets.md): pass rate per family and its own gate.
        "families": [family.model_dump(mode="json") for family in score.families],
        # Why judges errored (details.error_class), counted: docs/judges.md#error-classes.
        "error_classes": [entry.model_dump(mode="json") for entry in score.error_classes],
        # What the verdict cache's tiers did (docs/shared-cache.md); null with the cache off.
        "cache": None if execute.cache is None else execute.cache.model_dump(mode="json"),
    }
    return report


GateState = Literal["none", "at_merge", "unmeasured", "held", "broken"]


def gate_state(*, family: dict[str, Any]) -> GateState:
    """What a family's own gate says (a report's family, as `gate_of` reads it)."""
    return gate_of(
        min_pass_rate=family.get("min_pass_rate"),
        gate_at_merge=family.get("gate_at_merge"),
        cases=int(family.get("cases") or 0),
        gate_held=bool(family.get("gate_held")),
    )


def gate_of(
    *, min_pass_rate: float | None, gate_at_merge: float | None, cases: int, gate_held: bool
) -> GateState:
    """What a family's own gate says: none set, judged by `eb merge` (a shard), not measured
    (no case of it ran: every one skipped, so a rate of 0/0 holds nothing), held or broken."""
    if min_pass_rate is None:
        return "none" if gate_at_merge is None else "at_merge"
    if not cases:
        return "unmeasured"
    return "held" if gate_held else "broken"


def family_lines(*, report: dict[str, Any]) -> list[str]:
    """One line per dataset family: its pass rate, and its gate when it sets one."""
    lines = []
    for family in report.get("families") or []:
        text = (
            f"Family {family['id']}: {family['passed']:,}/{family['cases']:,} cases passed "
            f"({family_rate(family=family)}{selected_part(family=family)})"
            if family["cases"]
            else f"Family {family['id']}: no case ran ({_why_none_ran(family=family)})"
        )
        gate, state = family.get("min_pass_rate"), gate_state(family=family)
        if state == "at_merge":
            text += f", min_pass_rate {family['gate_at_merge']!r} judged by eb merge"
        elif state != "none":
            text += (
                f", min_pass_rate {gate!r} "
                + {
                    "unmeasured": "not measured",
                    "held": "held",
                    "broken": "NOT held: the run fails",
                }[state]
            )
        lines.append(text)
    return lines


# The rate of a family none of whose cases ran: none was measured, and "0.0%" would read as
# every case failing.
NO_RATE = "-"


def family_rate(*, family: dict[str, Any]) -> str:
    """A report's family's pass rate, as `rate_of_family` shows it."""
    gate = family.get("min_pass_rate")
    return rate_of_family(
        pass_rate=float(family.get("pass_rate") or 0.0),
        cases=int(family.get("cases") or 0),
        gate=None if gate is None else float(gate),
    )


def rate_of_family(*, pass_rate: float, cases: int, gate: float | None) -> str:
    """A family's pass rate as a percentage that never reads as its gate or as 100 % when it
    is not (`percent_text`); NO_RATE when no case of it ran."""
    if not cases:
        return NO_RATE
    return percent_text(pass_rate, bounds=() if gate is None else (gate,))


def selected_part(*, family: dict[str, Any]) -> str:
    """`; 1 of its 6 cases selected` for a family the selection ran only part of, `; 1 of its
    5 cases ran` for one a stopped run did (`; 1 of its 50 cases ran, 5 selected` for both):
    its pass rate and gate are then those of that part. Nothing for a family run whole."""
    size = family.get("of_cases")
    if size is None:
        return ""
    cases, not_run = int(family["cases"]), int(family.get("not_run") or 0)
    if not not_run:
        return f"; {cases:,} of its {size:,} cases selected"
    selected = cases + not_run
    return f"; {cases:,} of its {size:,} cases ran" + (
        f", {selected:,} selected" if selected < size else ""
    )


def _why_none_ran(*, family: dict[str, Any]) -> str:
    if family.get("not_run"):
        size = family.get("of_cases") or family["not_run"]
        return f"the run stopped before any of its {size:,} cases"
    return "every one selected was skipped"


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


def family_cases_text(*, family: dict[str, Any]) -> str:
    """`5`; `1 of 50 (selected)` when the selection took part of the family; `1 of 5 (4 not
    run)` when the run stopped before the rest (`1 of 50 (5 selected, 4 not run)` for both)."""
    size = family.get("of_cases")
    if size is None:
        return str(family["cases"])
    cases, not_run = int(family["cases"]), int(family.get("not_run") or 0)
    if not not_run:
        return f"{cases} of {size} (selected)"
    selected = f"{cases + not_run} selected, " if cases + not_run < size else ""
    return f"{cases} of {size} ({selected}{not_run} not run)"


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


def selection_note(*, config: ConfigDoc, total: int, skipped: int) -> str | None:
    """Why a run that passed has no checks: its incremental selection kept none, or kept only
    checks that are skipped (which cannot run, so they count as no change)."""
    selection = config.selection
    if total:
        return None
    if selection.changed_since is not None:
        return _changed_since_note(ref=selection.changed_since, skipped=skipped)
    if selection.last_failed and config.settings.core.last_failed_none == "skip":
        return (
            "No check was selected: none of the selected checks failed the last time it ran, "
            "or those that did are skipped now (--last-failed-none skip)."
        )
    return None


def _changed_since_note(*, ref: str, skipped: int) -> str:
    """What --changed-since kept when it ran nothing: no check, or only skipped ones."""
    if not skipped:
        return f"No check was selected: no check's files changed since {ref}."
    if skipped == 1:
        changed = (
            f"the 1 check whose files changed since {ref} is skipped (skip: in its check file)"
        )
    else:
        changed = (
            f"all {skipped} checks whose files changed since {ref} are skipped "
            "(skip: in their check files)"
        )
    return f"No check ran: {changed}, and no other check's files changed."


def report_json_text(*, report: dict[str, Any]) -> str:
    """UTF-8 JSON, two-space indent, non-ASCII as-is, no final newline, as eval-banana writes it."""
    return canonjson.dumps(report)


def usage_summary(*, usage: dict[str, Any] | None) -> str | None:
    """One line for the judges' reported usage, e.g. `300 tokens (240 in, 60 out), $0.0011`."""
    if not usage:
        return None
    parts: list[str] = []
    tokens = usage.get("total_tokens")
    if tokens is not None:
        text = f"{tokens} tokens"
        if usage.get("input_tokens") is not None and usage.get("output_tokens") is not None:
            text += f" ({usage['input_tokens']} in, {usage['output_tokens']} out)"
        parts.append(text)
    if usage.get("cost_usd") is not None:
        parts.append(f"${usage['cost_usd']:.4f}")
    judges = usage.get("judges", 0)
    counted = ", ".join(parts) if parts else "no tokens or cost"
    return f"{counted}, as reported by {judges} judge{'s' if judges != 1 else ''}"


def md_cell(text: str) -> str:
    """`|` escaped, newlines collapsed: a value stays in its cell or line (unlike eval-banana)."""
    return _NEWLINES.sub(" ", text).replace("|", "\\|")


# What Markdown (GitHub's step summary and pull-request comments included) would read as
# something other than words: a link or an image (`[`, `]`), raw HTML or a comment that hides
# everything after it (`<`, `>`), an entity (`&`), a code span (a backtick), a table's next cell
# (`|`), and the backslash that would undo any of these escapes.
_MARKUP = re.compile(r"[\\`\[\]<>|&]")


def md_text(text: str) -> str:
    """Words eb did not write (a judge's reason, an agent's error, a skip reason) as one line
    of Markdown that shows exactly those words: each markup character is escaped, so a judge
    cannot put a link, an image or hidden text into a report or a pull-request comment."""
    return _MARKUP.sub(lambda found: "\\" + found.group(), one_line(text))


def control_note(*, check: dict[str, Any]) -> str | None:
    """A control check (expect: fail) is shown as a caught or a missed defect."""
    if check.get("expect") != "fail":
        return None
    if check.get("status") == "passed":
        return "control: defect caught"
    if check.get("status") == "failed":
        return "control: defect missed"
    return None


def attempts_note(*, check: dict[str, Any]) -> str | None:
    """A judge that needed retries says so, also when it passed in the end."""
    count = attempts_needed(details=check.get("details") or {})
    return f"after {count} attempts" if count > 1 else None


def samples_note(*, check: dict[str, Any]) -> str | None:
    """A sampled check says how its samples went: `flaky, 2/3 samples passed`."""
    details = check.get("details") or {}
    samples = details.get("samples")
    if not isinstance(samples, list) or not samples:
        return None
    passed = sum(
        1 for sample in samples if isinstance(sample, dict) and sample.get("status") == "passed"
    )
    tally = f"{passed}/{len(samples)} samples passed"
    return f"flaky, {tally}" if is_flaky(details) else tally


# The details that can add a note; most results have none of them (and are not controls).
_NOTED_DETAILS = frozenset({"attempts", "samples", "cache"})


def status_notes(*, check: dict[str, Any]) -> list[str]:
    """What a status is shown with: the control, attempts and samples notes, "cached"."""
    details = check.get("details") or {}
    if check.get("expect") != "fail" and _NOTED_DETAILS.isdisjoint(details):
        return []  # each report asks this of every check
    found = (control_note(check=check), attempts_note(check=check), samples_note(check=check))
    notes = [note for note in found if note]
    cache = details.get("cache")
    if isinstance(cache, dict) and cache.get("hit") is True:
        notes.append("cached")
    return notes


def flaky_line(*, report: dict[str, Any]) -> str | None:
    """How many checks were flaky, and whether that failed the run (--fail-on-flaky)."""
    count = int(report.get("flaky_checks") or 0)
    if not count:
        return None
    said = "check was flaky: its" if count == 1 else "checks were flaky: their"
    text = f"{count} {said} samples disagreed."
    if report.get("fail_on_flaky"):
        text += " The run fails on flaky checks (--fail-on-flaky)."
    return text


def errors_line(*, report: dict[str, Any]) -> str | None:
    """`3 errors: 2 infrastructure (HTTP 429), 1 verdict`: the errors by why they happened
    (None when no judge errored). Errors of checks that are not judges are counted as other;
    checks never started are not run, not errors (as the closing line counts them)."""
    classes = report.get("error_classes") or []
    if not classes:
        return None
    parts = []
    for entry in classes:
        text = f"{entry['count']} {entry['error_class']}"
        causes = [cause for cause in entry.get("causes") or {} if cause != entry["error_class"]]
        if entry["error_class"] == "infrastructure" and causes:
            text += f" ({', '.join(causes)})"
        parts.append(text)
    classed = sum(int(entry["count"]) for entry in classes)
    errored = int(report.get("errored_checks") or 0) - int(report.get("not_run_checks") or 0)
    other = errored - classed
    if other > 0:
        parts.append(f"{other} other")
    total = classed + max(other, 0)
    return f"{total} {'error' if total == 1 else 'errors'}: {', '.join(parts)}"


def cache_line(*, report: dict[str, Any]) -> str | None:
    """What the two tiers of the verdict cache did, when the run used a shared cache (other
    runs keep their text as it was): hits by tier, misses, writes, errors, what moved."""
    counts = report.get("cache")
    if not isinstance(counts, dict) or not counts.get("remote"):
        return None
    rejected = counts.get("remote_rejected") or {}
    refused = sum(int(value) for value in rejected.values())
    moved = int(counts.get("bytes_downloaded") or 0) + int(counts.get("bytes_uploaded") or 0)

    def said(key: str, noun: str, nouns: str | None = None) -> str:
        return plural(count=int(counts.get(key) or 0), noun=noun, nouns=nouns)

    # Said only when it happened: most runs never meet an entry signed with another key.
    kept_local = (
        f" ({said('remote_kept_local', 'verdict')} kept local: signed with a key this run "
        "cannot verify)"
        if counts.get("remote_kept_local")
        else ""
    )
    text = (
        f"Cache: {said('local_hits', 'local hit')}, {said('remote_hits', 'remote hit')}, "
        f"{said('misses', 'miss', 'misses')}; shared cache "
        f"{counts['remote']} ({counts.get('remote_mode')}): "
        f"{said('remote_writes', 'write')}{kept_local}, {said('remote_errors', 'error')}, "
        f"{plural(count=refused, noun='entry', nouns='entries')} refused, {size_text(moved)} moved"
    )
    if counts.get("remote_stopped"):
        text += "; not asked again after repeated failures"
    if counts.get("first_remote_error"):
        text += f"; first error: {counts['first_remote_error']}"
    return text


def status_note(*, check: dict[str, Any]) -> str | None:
    """The notes as one parenthetical text, or None."""
    notes = status_notes(check=check)
    return ", ".join(notes) if notes else None


def halt_line(*, report: dict[str, Any]) -> str | None:
    """For a run that stopped launching at maxfail: why, and how many checks did not run."""
    if report.get("halted_by") != "maxfail":
        return None
    return (
        f"Run {maxfail_text(maxfail=int(report.get('maxfail') or 0))}; "
        f"{_did_not_run(report=report)}."
    )


def _did_not_run(*, report: dict[str, Any]) -> str:
    return f"{plural(count=int(report.get('not_run_checks') or 0), noun='check')} did not run"


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
            f"Run aborted by `{report['aborted_by']}`; {_did_not_run(report=report)}.",
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


def write_reports(
    *,
    run_dir: Path,
    config: ConfigDoc,
    execute: ExecuteDoc,
    score: ScoreDoc,
    inputs: dict[str, str] | None = None,
    run_id: str | None = None,
    built: dict[str, Any] | None = None,
) -> ReportOutcome:
    """Write report.json, report.md and stages/report.json (before any console output).

    `built` is the report object when the caller has built it already (`build_report`).
    """
    report = (
        built
        if built is not None
        else build_report(run_dir=run_dir, config=config, execute=execute, score=score)
    )
    if run_id is not None:
        report["run_id"] = run_id
    json_path = run_dir / REPORT_JSON
    md_path = run_dir / REPORT_MD
    # As report_json_text gives it, written piece by piece.
    write_json_atomic(path=json_path, document=report, end="")
    markdown = render_markdown(report=report)
    write_text_atomic(path=md_path, text=markdown)
    if inputs is None:
        inputs = {
            "config": document_digest(doc=config),
            "execute": document_digest(doc=execute),
            "score": document_digest(doc=score),
        }
    document = envelope(stage="report", run_id=report["run_id"], inputs=inputs)
    document.update(report_json=str(json_path), report_md=str(md_path), extra_outputs=[])
    doc = ReportDoc.model_validate(document)
    digest = write_model(path=stage_path(run_dir=run_dir, stage="report"), model=doc)
    return ReportOutcome(
        report=report,
        doc=doc,
        report_json=json_path,
        report_md=md_path,
        markdown=markdown,
        digest=digest,
    )


def result_summary(*, result: CheckResult | dict[str, Any]) -> str:
    """The console summary of one check: reason, else error, else `exit code <n>`."""
    check = result.model_dump(mode="json") if isinstance(result, CheckResult) else result
    if check.get("reason"):
        return str(check["reason"])
    if check.get("error_detail"):
        return str(check["error_detail"])
    if (
        check.get("status") == "failed"
        and check.get("check_type") == "deterministic"
        and check.get("exit_code") is not None
    ):
        return f"exit code {check['exit_code']}"
    return ""
