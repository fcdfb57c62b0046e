"""The verdict cache's part in the execute stage: the session a run opens, and the verdicts it
stores once every check has ended."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.core.errors import WriteFault
from eval_banana.core.log import Logger
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, GuardDoc, PlanDoc, PlannedCheck
from eval_banana.runners.faults import FaultLog, fault_result
from eval_banana.runners.results import StopSignal, write_check_result

if TYPE_CHECKING:
    from eval_banana.cache.session import CacheSession
    from eval_banana.checks.inputs import CheckInputs

logger = Logger("eval_banana.cache.storing")
# Who holds the cache's lock shared: `eb calibrate` holds it as a run's checks do.
ANOTHER_PROCESS = "Another eb process (a run's checks or a calibration's judges)"


def open_cache(
    *,
    config: ConfigDoc,
    plan: PlanDoc,
    guard: GuardDoc,
    run_dir: Path,
    environ: Mapping[str, str] | None,
    check_inputs: CheckInputs | None,
    artifacts: Mapping[str, str],
) -> CacheSession | None:
    """The verdict cache for this run, when `[cache] mode` is not off and there are checks."""
    if config.settings.cache.mode == "off" or not plan.checks:
        return None
    from eval_banana.cache.session import CacheSession

    return CacheSession(
        config=config,
        plan=plan,
        harness=guard.harness,
        run_dir=run_dir,
        environ=os.environ if environ is None else environ,
        inputs=check_inputs,
        artifacts=artifacts,
    )


def store_all(
    *,
    cache: CacheSession,
    folder: Path,
    ran: list[int],
    checks: list[PlannedCheck],
    results: list[CheckResult | None],
    keep: bool,
    checks_dir: Path,
    faults: FaultLog,
    stop: StopSignal,
    interrupt: threading.Event | None = None,
) -> None:
    """Store the verdicts of the checks that ran and keep the cache within its size, when no
    other run's checks are executing with the same cache (its watch would blame them).
    `interrupt` (what a signal sets): once set, the uploads to the shared cache stop."""
    _keep_fetched(cache=cache, folder=folder, stop=stop)
    if not ran:  # nothing ran: nothing to store, but what was fetched may need room
        if cache.writes and not stop.is_set() and (cache.store.crowded or cache.fetched_locally):
            _tidy_reused(cache=cache, folder=folder)
        return
    from eval_banana.isolation.state import cache_writes

    # A read-only cache stores nothing, and needs no turn at the lock to store it.
    turn = cache_writes(cache=folder) if cache.writes else contextlib.nullcontext(False)
    with turn as ours:
        if cache.writes and not ours:
            logger.warning(
                f"{ANOTHER_PROCESS} is running with this cache: the verdicts of this run are "
                "not stored"
                + (
                    ", and the checks it ran keep the verdicts stored before it (run "
                    "--cache refresh again)"
                    if cache.mode == "refresh"
                    else ""
                )
            )
        store_verdicts(
            cache=cache,
            ran=ran,
            checks=checks,
            results=results,
            keep=ours and keep,
            turn=ours,
            checks_dir=checks_dir,
            faults=faults,
            stop=stop,
        )
        if ours and not stop.is_set():
            cache.store.renew_crowded()
            cache.finish(interrupt=interrupt)


def _keep_fetched(*, cache: CacheSession, folder: Path, stop: StopSignal) -> None:
    """Keep in the local folder what this run fetched from the shared cache while another
    run's checks executed with it, now in the cache's turn; without a turn, it is not kept."""
    if not cache.holds_fetched:
        return
    from eval_banana.isolation.state import cache_writes

    with cache_writes(cache=folder) as ours:
        if ours and not stop.is_set():
            cache.keep_fetched()
            return
    count = cache.release_fetched()
    if not stop.is_set():
        logger.warning(
            f"{ANOTHER_PROCESS} is running with this cache: the %d %s this run fetched "
            "from the shared cache %s not kept in the local folder (a later run fetches "
            "them again)",
            count,
            "verdict" if count == 1 else "verdicts",
            "is" if count == 1 else "are",
        )


def _tidy_reused(*, cache: CacheSession, folder: Path) -> None:
    """In the cache's turn: store again the blobs this run found at the link limit, and keep
    the folder within its size limit when this run fetched entries into it from the shared
    cache (a run that judged nothing stored nothing else)."""
    from eval_banana.isolation.state import cache_writes

    with cache_writes(cache=folder) as ours:
        if ours:
            cache.store.renew_crowded()
            if cache.fetched_locally:
                cache.store.evict()


def store_verdicts(
    *,
    cache: CacheSession,
    ran: list[int],
    checks: list[PlannedCheck],
    results: list[CheckResult | None],
    keep: bool,
    checks_dir: Path,
    faults: FaultLog,
    stop: StopSignal,
    turn: bool = True,
) -> None:
    """Store the verdicts of the checks that ran (`keep` False: none, eb's state was
    written meanwhile), once every check has ended: while checks run eb writes nothing of its
    own state, so a change seen there is never its own. A cache that cannot be written aborts
    the run: the check whose verdict failed to store is an error, and nothing more is stored.
    `turn`: whether this run may change the cache at all (no other run's checks execute)."""
    if keep and not stop.is_set():
        # A check may have written what another's key was taken from: read that again once.
        cache.confirm_keys(
            ran=[
                (checks[position], result)
                for position in ran
                if (result := results[position]) is not None
            ]
        )
    for position in sorted(ran):
        result = results[position]
        if result is None:
            continue
        check = checks[position]
        try:
            stored = cache.record(
                check=check, result=result, store=keep and not stop.is_set(), turn=turn
            )
        except WriteFault as fault:
            faults.add(fault=fault, stop=stop)
            stored = fault_result(check=check, fault=fault)
        if stored is not result:
            results[position] = stored
            try:
                write_check_result(checks_dir=checks_dir, stem=check.stem, result=stored)
            except WriteFault as fault:
                faults.add(fault=fault, stop=stop)
