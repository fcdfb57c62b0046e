"""The short texts every report adds to a run's figures and to a check's status: judge usage,
the shared cache's counts, errors by class, flaky checks, a halt at maxfail, a run that judged
nothing, a check's notes (control, attempts, samples, cached) and its one-line summary."""

from __future__ import annotations

from typing import Any

from eval_banana.core.words import dollars_text, plural, size_text
from eval_banana.models.repeats import is_flaky
from eval_banana.models.result import CheckResult
from eval_banana.runners.results import maxfail_text
from eval_banana.runners.retries import attempts_needed


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
        parts.append(dollars_text(usage["cost_usd"]))
    judges = usage.get("judges", 0)
    counted = ", ".join(parts) if parts else "no tokens or cost"
    return f"{counted}, as reported by {judges} judge{'s' if judges != 1 else ''}"


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


def nothing_judged(*, report: dict[str, Any]) -> str | None:
    """Why a run in which no check ran did not pass (its every selected check was skipped): a
    ratio of no checks is below no threshold, so that is not the reason. None for any other
    run, and for one that passes with no checks (`allow_empty`)."""
    if report.get("run_passed") or report.get("total_checks") != 0:
        return None
    if int(report.get("skipped_checks") or 0) > 0:
        return "every selected check was skipped, so nothing was judged"
    return "no check ran, so nothing was judged"


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
    """For a run that stopped launching at maxfail: why, how many checks did not run, and how
    many of the failures the verdict cache answered."""
    if report.get("halted_by") != "maxfail":
        return None
    line = (
        f"Run {maxfail_text(maxfail=int(report.get('maxfail') or 0))}; "
        f"{did_not_run(report=report)}."
    )
    cached = _cached_failures(report=report)
    if cached:
        # Reused verdicts are answered before any check starts and all shown, so a run can
        # list more failures than maxfail without having launched one of them.
        counted = plural(count=cached, noun="failed or errored check")
        line += (
            f" The verdict cache answered {counted} before any check started; "
            f"{'it counts' if cached == 1 else 'they count'} toward maxfail."
        )
    return line


def _cached_failures(*, report: dict[str, Any]) -> int:
    """How many failed or errored checks of `report` the verdict cache answered."""
    count = 0
    for check in report.get("checks") or []:
        cache = (check.get("details") or {}).get("cache")
        hit = isinstance(cache, dict) and cache.get("hit") is True
        count += hit and check.get("status") in ("failed", "error")
    return count


def did_not_run(*, report: dict[str, Any]) -> str:
    return f"{plural(count=int(report.get('not_run_checks') or 0), noun='check')} did not run"


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
