"""An interrupt that comes once a run's checks have all ended: while eb writes execute.json,
the reports or the run's history record (one while the verdicts are stored or uploaded is seen
by the execute stage). The signal handler only sets the run's cancel event; this reads it."""

from __future__ import annotations

import threading

from eval_banana.models.stages import ExecuteDoc


def interrupted_late(*, executed: ExecuteDoc, cancel: threading.Event | None) -> ExecuteDoc | None:
    """`executed` stopped by the interrupt `cancel` says came, when its checks had all ended
    without a stop (their results stand as they are); None when no such interrupt came, or
    the run had stopped already."""
    if cancel is None or not cancel.is_set() or executed.aborted_by is not None:
        return None
    return executed.model_copy(update={"aborted_by": "interrupt"})
