"""What `--last-failed` remembers of the checks a run ran: `eb run`, `eb update` and `eb stage
execute` record their verdicts in `lastfailed.json` alike, so a failure an update (or a rerun of
the execute stage) finds is rerun by the next `eb run --last-failed`, and one it fixed is
forgotten."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from eval_banana.core.errors import WriteFault
from eval_banana.models.stages import ConfigDoc, ExecuteDoc
from eval_banana.reporting.console import Console

if TYPE_CHECKING:
    from eval_banana.models.lastfailed import FailedCheck


def remembered_before(*, config: ConfigDoc) -> dict[str, FailedCheck]:
    """What --last-failed remembers now: read before a check can rewrite the record."""
    from eval_banana.incremental.lastfailed import remembered

    return remembered(config=config)


def remember_failures(
    *,
    config: ConfigDoc,
    executed: ExecuteDoc,
    before: Mapping[str, FailedCheck],
    defined: frozenset[str] | None,
    console: Console,
    cancel: threading.Event,
) -> None:
    """What --last-failed will rerun; a record that cannot be written costs only that.
    `executed`: the checks this run or update ran (a result it kept from before is not a
    verdict it reached); `before`: what it remembered before the checks ran; `defined`: the
    ids the check files define, so a failure of a check gone since is forgotten (None: not
    known, nothing is forgotten). A wait for the record's turn ends with `cancel` (SIGTERM,
    Ctrl-C): the run then finishes its reports and stops."""
    from eval_banana.incremental.lastfailed import remember_results
    from eval_banana.settings.folders import last_failed_path

    try:
        remember_results(
            config=config,
            results=executed.results,
            before=before,
            defined=defined,
            stop=cancel.is_set,
        )
    except (WriteFault, OSError) as exc:
        # A read-only checkout, a folder in the record's place: the run's verdict stands.
        said = WriteFault.told(path=last_failed_path(config=config), exc=exc)
        console.warn(f"could not record the failed checks for --last-failed: {said}")
