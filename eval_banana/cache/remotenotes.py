"""What the shared tier tells a run: its warnings, and the hint each carries of what the failure
cost the run (docs/shared-cache.md). Refused entries are named a few per reason, failed
requests counted in one line per thing asked."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from eval_banana.core.words import one_line, plural
from eval_banana.remote.guarded import GuardedRemote

Rejection = Literal["signature", "entry", "blob"]
# What a run asked of the shared cache, for the warning that says what its failures cost.
Asked = Literal["lookups", "uploads", "removals"]


# A warning of the shared tier: its message, the file it concerns, and its hint, which says
# what the failure cost the run (one of the HINT_* below).
Warn = Callable[[str, str | None, str], None]
_COUNTED = "the run's report counts what the shared cache did (docs/shared-cache.md)"
HINT_LOOKUPS = f"those checks ran as on a miss; {_COUNTED}"
HINT_UPLOADS = f"those verdicts are stored in the local cache only; {_COUNTED}"
HINT_REMOVALS = (
    "a runner whose local cache lacks those verdicts may still reuse the ones from before the "
    f"refresh; {_COUNTED}"
)
HINT_BOTH = (
    "the checks ran as on a miss, and their verdicts are stored in the local cache only; "
    f"{_COUNTED}"
)
# Refused entries named one by one, per reason; the rest are one line with their count (a cache
# written before signing was required refuses every entry: a thousand lines would say nothing).
REJECTIONS_NAMED = 3
_REASON_WORDS: dict[Rejection, str] = {
    "signature": "a missing or bad signature",
    "entry": "an entry that is not valid or not this check's",
    "blob": "a file missing or damaged",
}


def hint_of(*, lookups: bool, uploads: bool) -> str:
    """The hint of a warning that the shared cache is not used at all: what the run would
    have asked of it."""
    if lookups and uploads:
        return HINT_BOTH
    return HINT_LOOKUPS if lookups else HINT_UPLOADS


_COSTS: dict[Asked, tuple[str, str]] = {
    "lookups": ("those checks ran as on a miss", HINT_LOOKUPS),
    "uploads": ("those verdicts are stored in the local cache only", HINT_UPLOADS),
    "removals": (
        "the shared cache may still hold verdicts from before this refresh",
        HINT_REMOVALS,
    ),
}


def say_refusals(*, refusals: Sequence[tuple[Rejection, str]], url: str, warn: Warn) -> None:
    """Each refused entry for the first few of a reason (in a steady order: the lookups
    finish in any), then one line for the rest of that reason."""
    for reason, words in _REASON_WORDS.items():
        messages = sorted(message for why, message in refusals if why == reason)
        for message in messages[:REJECTIONS_NAMED]:
            warn(message, None, HINT_LOOKUPS)
        left = len(messages) - REJECTIONS_NAMED
        if left > 0:
            warn(
                f"... and {plural(count=left, noun='more entry', nouns='more entries')}"
                f" of the shared cache {url} refused for {words}; they count "
                "as misses (report.json cache.remote_rejected counts them all)",
                None,
                HINT_LOOKUPS,
            )


def say_errors(*, remote: GuardedRemote, asked: Asked, warn: Warn, since: int = 0) -> None:
    """The requests that failed after the `since`th failure, and what that cost: checks
    that ran as on a miss (lookups), verdicts kept in the local tier only (uploads), or
    verdicts from before a refresh left on the remote (removals)."""
    tally = remote.tally()
    failed = tally.errors - since
    if failed > 0:
        stop = "; it was not asked again in this run" if tally.tripped else ""
        cost, hint = _COSTS[asked]
        warn(
            f"The shared cache {remote.url} failed "
            f"{plural(count=failed, noun='request')}{stop}; "
            f"{cost} (first error: {one_line(str(tally.first_error))})",
            None,
            hint,
        )
