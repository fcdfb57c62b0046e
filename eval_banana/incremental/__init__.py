"""Incremental selection: `--changed-since REF` and `--last-failed`.

`select_incremental` is what the validate stage calls once the check files are loaded;
`resolve_last_failed` runs before a new run folder exists, so "the newest earlier run" is
never the run being started, and records what it found in the config document's selection.

`units` reads the validate stage's units for it: each by its own id, a case through its row.

May import stagefiles, checks, datasets, settings, projectstate, models and core; the validate
stage calls it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from eval_banana.incremental.changed import CaseRows, changed_checks
from eval_banana.incremental.lastfailed import resolve_last_failed
from eval_banana.models.stages import ConfigDoc, ProblemModel

__all__ = ["CaseRows", "Incremental", "resolve_last_failed", "select_incremental"]

# At most this many remembered ids are named in the notice that none of them is selected.
_NAMED_IDS = 3


class Incremental(NamedTuple):
    """What the incremental selection keeps, and what the user should know about it."""

    kept: list[int]  # positions of the (check file, definition) pairs kept
    warnings: list[ProblemModel]


def select_incremental(
    *,
    config: ConfigDoc,
    checks: Sequence[tuple[str, dict[str, Any]]],
    cases: Sequence[CaseRows | None] = (),
) -> Incremental:
    """The (check file, definition) pairs the incremental selection keeps; `cases`, beside
    `checks`: the dataset cases among them, read by their row."""
    selection = config.selection
    kept = list(range(len(checks)))
    warnings: list[ProblemModel] = []
    if selection.last_failed:
        wanted = set(selection.last_failed_ids or ())
        failed = [i for i in kept if checks[i][1]["id"] in wanted]
        # A failure whose check says `skip:` now cannot run: listed as skipped beside the
        # failures that run, but alone it selects as no failure at all.
        runnable = [i for i in kept if not checks[i][1].get("skip")]
        if any(not checks[i][1].get("skip") for i in failed):
            kept = failed
        elif config.settings.core.last_failed_none == "skip":
            # None of the selected checks that can run failed last time: pytest's
            # --last-failed-no-failures none. A failure remembered for a check gone since is
            # said, or the empty run would read as "nothing failed".
            kept = []
            if wanted:
                skipped = sorted(checks[i][1]["id"] for i in failed)
                warnings.append(
                    _no_failure_runs(remembered=sorted(wanted), skipped=skipped, count=None)
                )
        elif wanted and runnable:  # (with none that can run, the run lists them skipped)
            skipped = sorted(checks[i][1]["id"] for i in failed)
            warnings.append(
                _no_failure_runs(remembered=sorted(wanted), skipped=skipped, count=len(runnable))
            )
    if selection.changed_since is not None and kept:
        chosen = changed_checks(
            config=config,
            revision=selection.changed_since,
            checks=[checks[i] for i in kept],
            cases=[cases[i] for i in kept] if cases else (),
        )
        kept = [kept[i] for i in chosen]
    return Incremental(kept=kept, warnings=warnings)


def _no_failure_runs(
    *, remembered: list[str], skipped: list[str], count: int | None
) -> ProblemModel:
    """Said when failures are remembered but none of them can run, so --last-failed selects
    every check (`count` of them: a run of judges asked for its failures should not cost the
    whole suite without a word) or, under `--last-failed-none skip` (`count` None), none (an
    empty run should not read as "nothing failed"). With none remembered, that is what
    --last-failed means, as in pytest; an unreadable record is warned about where it is read.
    `skipped`: the remembered ones that are selected but say `skip:` now."""
    named = ", ".join(remembered[:_NAMED_IDS]) + (", ..." if len(remembered) > _NAMED_IDS else "")
    one = len(remembered) == 1
    who = (
        f"the check remembered as failed ({named}) is"
        if one
        else f"the {len(remembered)} checks remembered as failed ({named}) are"
    )
    gone = "not among the selected checks (gone, renamed or filtered out)"
    if len(skipped) == len(remembered):
        why = f"skipped now (skip: in {'its check file' if one else 'their check files'})"
    elif skipped:
        shown = ", ".join(skipped[:_NAMED_IDS]) + (", ..." if len(skipped) > _NAMED_IDS else "")
        why = f"skipped now ({shown}) or {gone}"
    else:
        why = gone
    if count is None:
        return ProblemModel(
            message=f"--last-failed: {who} {why}, so no check runs (--last-failed-none skip)",
            hint="--last-failed-none all runs every selected check instead; a failure of a "
            "check that is gone stays remembered until lastfailed.json is deleted",
        )
    return ProblemModel(
        message=f"--last-failed: {who} {why}, so all {count} selected checks run, as "
        "pytest's --lf does",
        hint="--last-failed-none skip runs none instead",
    )
