"""Why a run did not pass, in words, from plain counts and flags: report.html's verdict
(`reporting.reasons`, from a report object) and `eb history` (`history.verdicts`, from a run's
record) both say it, so each reason is worded here, once."""

from __future__ import annotations

from collections.abc import Sequence

from eval_banana.core.words import first_and_count, plural

# Families named before `and N more`: a run of hundreds of broken gates keeps a short verdict.
_FAMILIES_NAMED = 10


def below_threshold(*, pass_threshold: float) -> str:
    """The ratio of checks passed fell short of the run's threshold."""
    return f"below the {threshold_text(pass_threshold=pass_threshold)}"


def threshold_text(*, pass_threshold: float) -> str:
    """`threshold 80%`: the run's pass threshold as its verdict names it."""
    return f"threshold {pass_threshold * 100:g}%"


def errored(*, errored: int, not_run: int) -> str | None:
    """Checks that errored; a check a stopped run never started is recorded as an error, but
    it did not error."""
    count = errored - not_run
    return f"{plural(count=count, noun='check')} errored" if count > 0 else None


def flaky(*, flaky: int, fail_on_flaky: bool) -> str | None:
    """Checks whose samples disagreed, when --fail-on-flaky made that fail the run."""
    if not flaky or not fail_on_flaky:
        return None
    said = "check was" if flaky == 1 else "checks were"
    return f"{flaky:,} {said} flaky (--fail-on-flaky)"


def gates_not_held(*, families: Sequence[str]) -> str | None:
    """The dataset families whose min_pass_rate gate did not hold."""
    if not families:
        return None
    if len(families) == 1:
        return f"the gate of family {families[0]} did not hold"
    named = first_and_count(families, shown=_FAMILIES_NAMED)
    return f"the gates of families {named} did not hold"
