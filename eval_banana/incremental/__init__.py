"""Incremental selection: `--changed-since REF` and `--last-failed`.

`select_incremental` is what the validate stage calls once the check files are loaded;
`resolve_last_failed` runs before a new run folder exists, so "the newest earlier run" is
never the run being started, and records what it found in the config document's selection.

May import stagefiles, settings, projectstate, models and core; the validate stage calls it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eval_banana.incremental.changed import CaseRows, changed_checks
from eval_banana.incremental.lastfailed import resolve_last_failed
from eval_banana.models.stages import ConfigDoc

__all__ = ["CaseRows", "resolve_last_failed", "select_incremental"]


def select_incremental(
    *,
    config: ConfigDoc,
    checks: Sequence[tuple[str, dict[str, Any]]],
    cases: Sequence[CaseRows | None] = (),
) -> list[int]:
    """Positions of the (check file, definition) pairs the incremental selection keeps;
    `cases`, beside `checks`: the dataset cases among them, read by their row."""
    selection = config.selection
    kept = list(range(len(checks)))
    if selection.last_failed:
        wanted = set(selection.last_failed_ids or ())
        failed = [i for i in kept if checks[i][1]["id"] in wanted]
        # None of the selected checks failed last time: pytest's --last-failed-no-failures.
        if failed or config.settings.core.last_failed_none == "skip":
            kept = failed
    if selection.changed_since is not None and kept:
        chosen = changed_checks(
            config=config,
            revision=selection.changed_since,
            checks=[checks[i] for i in kept],
            cases=[cases[i] for i in kept] if cases else (),
        )
        kept = [kept[i] for i in chosen]
    return kept
