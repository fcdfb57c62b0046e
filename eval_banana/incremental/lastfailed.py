"""--last-failed, as pytest's --lf: the checks that failed the last time they ran.

Every `eb run` (and every `eb update` that runs checks again, and `eb stage execute`) updates
`.eval-banana/lastfailed.json` (settings/folders.py) from the checks it ran: a failed or
errored check is remembered, and so is a flaky one (its samples disagreed) when the run's
verdict counts flakiness (`--fail-on-flaky`): it failed that run. A passed one is forgotten,
and a check the run did not run (another `-k`, a `--tag`, stopped before it started) keeps its
entry.
So a failure survives any number of partial runs until a run that runs it passes it, or a run
that read every check file finds no check of its id (deleted or renamed): that one forgets it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from eval_banana.models.lastfailed import FailedCheck, LastFailedDoc
from eval_banana.models.repeats import is_flaky
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, ProblemModel
from eval_banana.settings.folders import last_failed_path
from eval_banana.stagefiles.schemafiles import read_packaged_document


class UnreadableMemory(Exception):
    """lastfailed.json exists but is not a file eb can read; `str()` says why."""


def read_memory(*, path: Path) -> LastFailedDoc | None:
    """The remembered failures at `path`; None when there are none yet."""
    document = read_packaged_document(
        path=path,
        name="lastfailed",
        what="eb's record of failed checks",
        unreadable=UnreadableMemory,
    )
    if document is None:
        return None
    return LastFailedDoc.model_validate(document)


def remembered(*, config: ConfigDoc) -> dict[str, FailedCheck]:
    """Check id -> how it failed the last time it ran; empty when the record is unreadable
    (it is rewritten by the next run, as pytest treats a damaged cache)."""
    try:
        memory = read_memory(path=last_failed_path(config=config))
    except UnreadableMemory:
        return {}
    return dict(memory.failed) if memory is not None else {}


def resolve_last_failed(*, config: ConfigDoc) -> ConfigDoc:
    """`config` with the remembered failures (and the newest run that failed one of them)
    recorded in its selection; null ids when no check is remembered as failed. A record that
    cannot be read remembers nothing, and says so: --last-failed then selects as when no
    check failed, which is every check by default."""
    path = last_failed_path(config=config)
    warnings = list(config.warnings)
    try:
        memory = read_memory(path=path)
    except UnreadableMemory as exc:
        memory = None
        chosen = "every check" if config.settings.core.last_failed_none == "all" else "none"
        warnings.append(
            ProblemModel(
                message=f"--last-failed remembers no failed check, so it selects {chosen}: {exc}",
                file=str(path),
                hint="remove or repair the record; a run that can write it writes it anew",
            )
        )
    failed = dict(memory.failed) if memory is not None else {}
    selection = config.selection.model_copy(
        update={
            "last_failed_run_id": max((e.run_id for e in failed.values()), default=None),
            "last_failed_ids": sorted(failed) or None,
        }
    )
    return config.model_copy(update={"selection": selection, "warnings": warnings})


def updated_failures(
    *,
    earlier: dict[str, FailedCheck],
    results: Sequence[CheckResult],
    run_id: str,
    defined: frozenset[str] | None = None,
    flaky_fails: bool = False,
) -> dict[str, FailedCheck]:
    """`earlier` after a run with `results`: failures in, passes out, the rest as they were,
    but for those whose check no check file defines now (`defined`: every id the run's check
    files define; None when its selection read only some of them): no run could pass them,
    so they would be remembered for good. `flaky_fails`: the run's verdict counts a flaky
    check as a failure (--fail-on-flaky), so one that passed with disagreeing samples is in."""
    failed = (
        dict(earlier)
        if defined is None
        else {check_id: entry for check_id, entry in earlier.items() if check_id in defined}
    )
    for result in results:
        if result.details.get("not_run"):
            continue  # stopped before it started: this run says nothing about it
        if result.status != "passed":
            failed[result.check_id] = FailedCheck(status=result.status, run_id=run_id)
        elif flaky_fails and is_flaky(result.details):
            failed[result.check_id] = FailedCheck(status="flaky", run_id=run_id)
        else:
            failed.pop(result.check_id, None)
    return failed


def remember_results(
    *,
    config: ConfigDoc,
    results: Sequence[CheckResult],
    before: Mapping[str, FailedCheck],
    defined: frozenset[str] | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> None:
    """Update lastfailed.json from a run's results (atomically); no file while none failed.
    `defined`: every id the run's check files define (`updated_failures`); `stop`: whether the
    run is stopping (a wait for the record's turn then ends, InterruptedError).

    `before`: what the record remembered before the run's checks ran. A check can rewrite the
    record while it runs, so what the record says at the end is not taken alone: a failure
    remembered before stays unless this run passed that check (another run beside this one
    that passed it meanwhile is undone; the check is only run once more). Failures the record
    gained meanwhile (another run's) are kept.

    Two runs ending together take turns at the record (`holding_file`: a lock on the file
    itself), so each reads what the other wrote and neither's failures are lost.

    Raises OSError when it cannot be written (the caller warns: the run itself stands).
    """
    from eval_banana.core.files import write_model
    from eval_banana.core.turns import holding_file

    path = last_failed_path(config=config)
    # A flaky check failed a run whose verdict counts flakiness: rerun it as a failure.
    flaky_fails = config.settings.core.fail_on_flaky
    if not path.exists() and not updated_failures(
        earlier=dict(before),
        results=results,
        run_id=config.run_id,
        defined=defined,
        flaky_fails=flaky_fails,
    ):
        return  # none failed, and no record to forget one in: none is made
    path.parent.mkdir(parents=True, exist_ok=True)
    with holding_file(path=path, first=lambda: _record_bytes(failed={}), stop=stop):
        now = remembered(config=config)
        failed = updated_failures(
            earlier={**before, **now},
            results=results,
            run_id=config.run_id,
            defined=defined,
            flaky_fails=flaky_fails,
        )
        if failed == now:
            return
        write_model(path=path, model=_record(failed=failed))


def _record(*, failed: dict[str, FailedCheck]) -> LastFailedDoc:
    from eval_banana.core.version import tool_version
    from eval_banana.runners.results import iso, utc_now

    return LastFailedDoc(
        tool_version=tool_version(),
        updated_at=iso(utc_now()),
        failed=dict(sorted(failed.items())),
    )


def _record_bytes(*, failed: dict[str, FailedCheck]) -> bytes:
    """The record's bytes, as `write_model` writes them."""
    from eval_banana.core.files import stage_json_bytes

    return stage_json_bytes(document=_record(failed=failed))
