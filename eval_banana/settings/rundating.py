"""Whether what a run folder's config stage records can be that folder's own run.

`eb status`, `eb update` and `eb diff` take the run whose config stage records the latest
creation time for the newest. A folder copied into the output folder under another name, or one
whose record was edited to a later date, would then stand for the newest run: a check that
plants an earlier passing run there, dated in the future, turned a failing run green for all
three. eb records the moment each run was created, so a folder that records a moment still to
come is no run eb made. (Its name is no proof: `--flat-output` makes a run folder of any name,
inside the output folder too.)
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from eval_banana.core.moments import moment_or_none

# Another machine writing into a shared output folder may have its clock a little ahead.
CLOCK_SKEW = timedelta(minutes=5)


def recorded_moment(document: Any) -> str | None:
    """The run's creation time as its config stage records it (older runs: the stage's own)."""
    if not isinstance(document, dict):
        return None
    moment = document.get("run_created_at") or document.get("created_at")
    return moment if isinstance(moment, str) else None


def record_problem(*, document: dict[str, Any], now: datetime) -> str | None:
    """Why the config stage `document` cannot be a run eb made (it was created later than
    now), or None."""
    moment = recorded_moment(document)
    when = None if moment is None else moment_or_none(moment)
    if when is None:
        return f"records no creation time eb can read ({moment!r})"
    if when > now + CLOCK_SKEW:
        return f"records a creation time still to come ({moment})"
    return None


def created_before(*, document: dict[str, Any], moment: datetime) -> bool:
    """Whether the run `document` records was created before `moment`."""
    recorded = recorded_moment(document)
    when = None if recorded is None else moment_or_none(recorded)
    return when is None or when < moment
