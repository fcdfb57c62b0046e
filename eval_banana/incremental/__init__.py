"""Incremental selection: `--changed-since REF` and `--last-failed`.

`select_incremental` is what the validate stage calls once the check files are loaded;
`resolve_last_failed` runs before a new run folder exists, so "the newest earlier run" is
never the run being started, and records what it found in the config document's selection.

`units` reads the validate stage's units for it: each by its own id, a case through its row.

May import: runners, stagefiles, checks, datasets, settings, models, projectstate and core.

The validate stage calls it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from eval_banana.incremental.changed import CaseRows, changed_checks, compared_revision
from eval_banana.incremental.lastfailed import resolve_last_failed
from eval_banana.models.stages import ConfigDoc, ProblemModel
from eval_banana.settings.origin import origin_in

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
    defined: frozenset[str] | None = None,
) -> Incremental:
    """The (check file, definition) pairs the incremental selection keeps; `cases`, beside
    `checks`: the dataset cases among them, read by their row; `defined`: every id the
    project's check files define, selected or not (None: not known), so a remembered failure
    whose check is gone is told from one filtered out."""
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
                    _no_failure_runs(
                        remembered=_Remembered.sorted_out(
                            wanted=wanted, skipped=skipped, defined=defined
                        ),
                        count=None,
                        config=config,
                    )
                )
        elif wanted and runnable:  # (with none that can run, the run lists them skipped)
            skipped = sorted(checks[i][1]["id"] for i in failed)
            warnings.append(
                _no_failure_runs(
                    remembered=_Remembered.sorted_out(
                        wanted=wanted, skipped=skipped, defined=defined
                    ),
                    count=len(runnable),
                    config=config,
                )
            )
    revision = compared_revision(selection=selection)
    if revision is not None and kept:
        chosen = changed_checks(
            config=config,
            revision=revision,
            checks=[checks[i] for i in kept],
            cases=[cases[i] for i in kept] if cases else (),
        )
        kept = [kept[i] for i in chosen]
    return Incremental(kept=kept, warnings=warnings)


class _Remembered(NamedTuple):
    """The remembered failures none of which runs, by why: skipped now, gone (no check file
    defines them now), or left out of the selection."""

    ids: list[str]
    skipped: list[str]
    gone: list[str]
    gone_known: bool  # whether the run read every check file, so `gone` is all that is gone

    @classmethod
    def sorted_out(
        cls, *, wanted: set[str], skipped: list[str], defined: frozenset[str] | None
    ) -> _Remembered:
        gone = sorted(wanted - defined) if defined is not None else []
        return cls(ids=sorted(wanted), skipped=skipped, gone=gone, gone_known=defined is not None)


def _named(ids: list[str]) -> str:
    return ", ".join(ids[:_NAMED_IDS]) + (", ..." if len(ids) > _NAMED_IDS else "")


def _why_none_runs(*, remembered: _Remembered) -> str:
    """Why none of the remembered failures runs: each reason, with the ids it holds when the
    failures do not all share it."""
    ids, skipped, gone = remembered.ids, remembered.skipped, remembered.gone
    one = len(ids) == 1
    left_out = len(ids) - len(skipped) - len(gone)
    reasons: list[str] = []
    if skipped:
        where = f"skip: in {'its check file' if one else 'their check files'}"
        reasons.append(f"skipped now ({where if len(skipped) == len(ids) else _named(skipped)})")
    if gone:
        # The run that says so forgets them when it records its results.
        them = "it" if len(gone) == 1 else "them"
        where = f"no check file defines {them} now; eb run forgets {them}"
        reasons.append(f"gone ({where if len(gone) == len(ids) else f'{_named(gone)}: {where}'})")
    if left_out:
        why = "filtered out" if remembered.gone_known else "gone, renamed or filtered out"
        reasons.append(f"not among the selected checks ({why})")
    return " or ".join(reasons)


def _no_failure_runs(
    *, remembered: _Remembered, count: int | None, config: ConfigDoc
) -> ProblemModel:
    """Said when failures are remembered but none of them can run, so --last-failed selects
    every check (`count` of them: a run of judges asked for its failures should not cost the
    whole suite without a word) or, under `--last-failed-none skip` (`count` None), none (an
    empty run should not read as "nothing failed"). With none remembered, that is what
    --last-failed means, as in pytest; an unreadable record is warned about where it is read."""
    ids = remembered.ids
    who = (
        f"the check remembered as failed ({_named(ids)}) is"
        if len(ids) == 1
        else f"the {len(ids)} checks remembered as failed ({_named(ids)}) are"
    )
    why = _why_none_runs(remembered=remembered)
    if count is None:
        # Named where it was set (a variable or the file may say skip, with no flag given).
        origin = origin_in(config=config, name="core.last_failed_none")
        return ProblemModel(
            message=f"--last-failed: {who} {why}, so no check runs ({origin.given('skip')})",
            hint=f"{origin.to_set('all')} to run every selected check instead",
            file=origin.file,
            field_path="core.last_failed_none" if origin.file else None,
            line=origin.line,
        )
    return ProblemModel(
        message=f"--last-failed: {who} {why}, so all {count} selected checks run, as "
        "pytest's --lf does",
        hint="--last-failed-none skip runs none instead",
    )
