"""Checks charged after they ran with a change to eb's own state (the verdict cache, the run
folders) or to the project: what the isolation session's looks at a check's start and end
could not tell."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from eval_banana.core.log import Logger
from eval_banana.core.words import visible
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, PlannedCheck
from eval_banana.runners.results import write_check_result

if TYPE_CHECKING:
    from eval_banana.isolation.detect import LateChanges
    from eval_banana.isolation.session import Command, IsolationSession, Seen
    from eval_banana.isolation.state import StateReport

logger = Logger("eval_banana.isolation.charges")
# One charge of a check, as the caller records it (its paths and when they were seen).
_Found = TypeVar("_Found")


def settle_state(
    *,
    report: StateReport,
    session: IsolationSession,
    config: ConfigDoc,
    checks: list[PlannedCheck],
    results: list[CheckResult | None],
    owners: Mapping[str, int],
    checks_dir: Path,
) -> bool:
    """After the checks: charge what the looks while they ran could not, remove whatever
    changed in the cache, and say what became of a changed calibration record (the watch put
    it back as it was before the checks); whether eb's state changed at all (then no verdict
    is stored)."""
    if not report.changed:
        return False
    charge_state_changes(
        report=report,
        config=config,
        checks=checks,
        results=results,
        owners=owners,
        checks_dir=checks_dir,
    )
    removed = session.state.drop_cache_changes()
    logger.warning(
        "eb's own files changed while checks ran (%s); no verdict of this run is stored, "
        "and %d changed files in the cache (or its record of the files it wrote) were removed",
        ", ".join(visible(path) for path in report.changed[:5]),
        len(removed),
    )
    if report.record_put_back is not None:
        logger.warning(
            "The calibration record %s changed while checks ran; it was %s",
            session.state.places.calibration_record,
            report.record_put_back,
        )
    return True


def charge_state_changes(
    *,
    report: StateReport,
    config: ConfigDoc,
    checks: list[PlannedCheck],
    results: list[CheckResult | None],
    owners: Mapping[str, int],
    checks_dir: Path,
) -> None:
    """Make the checks charged after they ran with a change to eb's state an `error`: those
    that started before a change seen while no check ran, and every check that ran when the
    change came before any (what a look at a check's start or end could not charge)."""
    from eval_banana.isolation.modes import check_mode
    from eval_banana.isolation.session import with_state_change

    # Assertions checks run in eb's own process: none of them started a process to blame.
    ran = [key for key, position in owners.items() if checks[position].type != "assertions"]
    # A check's samples each have a key of their own: their charges are the check's, once.
    charges: dict[int, list[tuple[list[str], str]]] = {}
    for key, found in state_charges(report=report, ran=ran).items():
        held = charges.setdefault(owners[key], [])
        held.extend(charge for charge in found if charge not in held)
    _charge(
        charges=charges,
        checks=checks,
        results=results,
        checks_dir=checks_dir,
        mark=lambda result, check, found: with_state_change(
            result=result,
            mode=check_mode(config=config, check=check),
            paths=found[0],
            when=found[1],
        ),
    )


def state_charges(
    *, report: StateReport, ran: Iterable[str], command: Command = "run"
) -> dict[str, list[tuple[list[str], str]]]:
    """The changes to eb's state each key (of those that `ran`) is charged with after it
    ended, and when each was seen: one seen while nothing ran falls on those that had started
    before, one seen before any started on every one that ran. `eb run` charges its checks
    and `eb calibrate` its samples by this (`command`: whose words)."""
    from eval_banana.isolation.session import LATE_WORDS

    whole, part = LATE_WORDS[command]
    charges: dict[str, list[tuple[list[str], str]]] = {}
    for key, paths in report.late.items():
        when = f"after this {part} started, while no {part} was running"
        charges.setdefault(key, []).append((paths, when))
    if report.unattributed:
        when = f"during this {whole} before any {part} started"
        for key in sorted(set(ran)):
            charges.setdefault(key, []).append((report.unattributed, when))
    return charges


def settle_project(
    *,
    report: LateChanges,
    config: ConfigDoc,
    checks: list[PlannedCheck],
    results: list[CheckResult | None],
    owners: Mapping[str, int],
    checks_dir: Path,
) -> bool:
    """After the checks: make the watched checks charged with a change to the project only once
    they had ended an `error` (`report`); whether the project changed under a watched check at
    all (then no verdict is stored: which verdicts rest on the changed files is unknown)."""
    from eval_banana.isolation.modes import check_mode
    from eval_banana.isolation.session import with_late_project_change

    # A check's samples each have a key of their own: their charges are the check's, merged.
    charges: dict[int, dict[Seen, set[str]]] = {}
    for key, found in late_charges(report=report).items():
        for seen, paths in found:
            charges.setdefault(owners[key], {}).setdefault(seen, set()).update(paths)
    _charge(
        charges={position: sorted(found.items()) for position, found in charges.items()},
        checks=checks,
        results=results,
        checks_dir=checks_dir,
        mark=lambda result, check, found: with_late_project_change(
            result=result,
            check=check,
            mode=check_mode(config=config, check=check),
            paths=sorted(found[1]),
            seen=found[0],
        ),
    )
    if not report.changed:
        return False
    logger.warning(
        "The project changed while watched checks ran (%s); no verdict of this run is stored",
        ", ".join(visible(path) for path in report.changed[:5]),
    )
    return True


def late_charges(*, report: LateChanges) -> dict[str, list[tuple[Seen, list[str]]]]:
    """The late changes each watched check (by its key) is charged with, and how each was
    seen: those seen while no watched check ran fall on the checks that had ended before,
    those only the last look found on every watched check that ran."""
    charges: dict[str, dict[Seen, set[str]]] = {}
    for key, paths in report.alone.items():
        charges.setdefault(key, {}).setdefault("alone", set()).update(paths)
    if report.at_end:
        for key in report.ran:
            charges.setdefault(key, {}).setdefault("at_end", set()).update(report.at_end)
    return {
        key: [(seen, sorted(paths)) for seen, paths in sorted(found.items())]
        for key, found in charges.items()
    }


def _charge(
    *,
    charges: Mapping[int, Sequence[_Found]],
    checks: list[PlannedCheck],
    results: list[CheckResult | None],
    checks_dir: Path,
    mark: Callable[[CheckResult, PlannedCheck, _Found], CheckResult],
) -> None:
    """Each charged check's result marked with its charges, one at a time (`mark`), and its
    result file written again; a check without a result (it never ran) is left alone."""
    for position, found in sorted(charges.items()):
        result = results[position]
        if result is None:
            continue
        check = checks[position]
        for charge in found:
            result = mark(result, check, charge)
        results[position] = result
        write_check_result(checks_dir=checks_dir, stem=check.stem, result=result)
