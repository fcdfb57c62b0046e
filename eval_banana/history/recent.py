"""The newest runs' timings, and the order a run starts its checks in by them.

Scheduling and balancing read only the newest RECENT_RUNS records, and of each only what a
duration or a cost needs (id, definition digest, duration, cost, cached, early error, whether
the run was a shard, and the shard runs a merge merged): a check's recent times say most about
its next one, and every `eb run` reads them before its first check starts. Each run counts once,
as in `eb history` (`merges`): a merged run stands for its shard runs, which would otherwise
count every check of the merge twice. Validating thirty records of a thousand checks
against their schema would cost a run seconds; a file that does not hold these fields is
skipped instead. The medians here are the only ones: `durations` applies them to records read
whole.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.harness.usage import MOST_DOLLARS
from eval_banana.history.lanes import planned_order
from eval_banana.history.merges import each_run_once
from eval_banana.history.read import LOG, BadRecord, Warn, newest_parsed, record_json, record_paths
from eval_banana.history.record import HistoryRecord

RECENT_RUNS = 30


class Timing(NamedTuple):
    """One check in one recorded run, as far as its time and cost go."""

    check_id: str
    digest: str
    seconds: float
    # Dollars the check cost when it ran and its agent reported a cost: for a reused verdict,
    # in the run that made it (as `seconds` is), though this run spent nothing on it.
    cost_usd: float | None = None
    # How many samples it took, and the mean seconds of one (None: it took one, `seconds`).
    samples: int = 1
    sample_seconds: float | None = None


def _one_sample_seconds(timing: Timing) -> float:
    """How long one sample of the check took in that run."""
    if timing.sample_seconds is not None:
        return timing.sample_seconds
    return timing.seconds / timing.samples


def _one_sample_cost(timing: Timing) -> float | None:
    """What one sample of the check cost in that run (its samples' costs are summed)."""
    return None if timing.cost_usd is None else timing.cost_usd / timing.samples


class RunTimings(NamedTuple):
    """A recorded run's timings: the checks that say how long they take (no early errors)."""

    sharded: bool
    timings: list[Timing]
    run_id: str = ""
    # `eb merge`: the run ids of the shard runs it merged.
    merged_from: tuple[str, ...] = ()


def _timings_of(document: Any) -> RunTimings:
    """The timings in a record document (BadRecord when it has none in the recorded form).

    Ids and digests are interned: the thirty records read share one copy of each (their own
    copies of 10,000 checks' were 50 MB)."""
    try:
        selection = document.get("selection") or {}
        timings = [
            Timing(
                check_id=_interned(check["id"]),
                digest=_interned(check["digest"]),
                seconds=check["duration_ms"] / 1000,
                cost_usd=_money(
                    check.get("verdict_cost_usd")
                    if check.get("cached", False)
                    else check.get("cost_usd")
                ),
                samples=_sample_count(check.get("samples", 1)),
                sample_seconds=_sample_seconds(check.get("sample_ms")),
            )
            for check in document["checks"]
            if not check.get("early_error", False)
        ]
        sharded = selection.get("shard") is not None
        run_id = document["run_id"]
        merged_from = tuple(document.get("merged_from") or ())
    except KeyError as exc:
        raise BadRecord(f"it is not an eb run record ({_missing(exc.args[0])})") from None
    except (AttributeError, TypeError):
        raise BadRecord(
            "it is not an eb run record (not an object whose checks are a list of objects)"
        ) from None
    if type(run_id) is not str or any(type(source) is not str for source in merged_from):
        raise BadRecord("it is not an eb run record (a run id that is not text)")
    return RunTimings(
        sharded=sharded, timings=timings, run_id=_interned(run_id), merged_from=merged_from
    )


def _missing(field: object) -> str:
    """What a KeyError of `_timings_of` means, in words: the record's checks are only indexed
    as a whole, the rest are fields of one check."""
    if field in ("checks", "run_id"):
        return f"it has no {field}"
    return f"a check has no {field}"


def _money(value: Any) -> float | None:
    """A recorded cost: dollars, 0 or more, or None; an amount past MOST_DOLLARS (recorded
    before eb had the ceiling) is no amount, as it would be reported now."""
    if value is None:
        return None
    if type(value) not in (int, float) or not value >= 0:
        raise BadRecord("it is not an eb run record (a check's cost is not an amount)")
    return float(value) if value <= MOST_DOLLARS else None


def _sample_count(value: Any) -> int:
    if type(value) is not int or value < 1:
        raise BadRecord("it is not an eb run record (a check's samples is not a count)")
    return value


def _sample_seconds(value: Any) -> float | None:
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise BadRecord("it is not an eb run record (a check's sample_ms is not a duration)")
    return value / 1000


def _interned(value: Any) -> str:
    """A check's id or digest, one copy shared by every record that holds it."""
    if type(value) is not str:
        raise BadRecord("it is not an eb run record (a check without an id or digest)")
    return sys.intern(value)


def recent_timings(
    *, folder: Path, runs: int = RECENT_RUNS, unsharded: bool = False, warn: Warn | None = None
) -> list[RunTimings]:
    """The timings of the newest `runs` readable records in `folder`, oldest first, each run
    once: the shard runs a merge among them merged are left out (`unsharded`: every shard run
    is, merged or not)."""
    stream: Iterable[RunTimings] = newest_parsed(
        paths=record_paths(folder=folder),
        parse=lambda data: _timings_of(record_json(data)),
        warn=warn,
    )
    if unsharded:
        stream = (timings for timings in stream if not timings.sharded)
    # Taken one by one, so no record past the newest `runs` runs is read. A shard run waits for
    # its merge only as many records as are taken: a history of shard runs no merge names (each
    # CI job keeping its own) reads at most twice the runs, not SHARD_LOOKAHEAD more, before
    # every `eb run` starts its checks.
    once = each_run_once(newest_first=stream, is_shard=lambda run: run.sharded, lookahead=runs)
    found = list(itertools.islice(once, runs))
    found.reverse()
    return found


def timings_of_record(record: HistoryRecord) -> RunTimings:
    """The timings of a record read whole (`read.load_records`), by the same rules."""
    return RunTimings(
        run_id=record.run_id,
        merged_from=tuple(record.merged_from),
        sharded=record.selection.shard is not None,
        timings=[
            Timing(
                check_id=check.id,
                digest=check.digest,
                seconds=check.duration_ms / 1000,
                cost_usd=check.verdict_cost_usd if check.cached else check.cost_usd,
                samples=check.samples,
                sample_seconds=_sample_seconds(check.sample_ms),
            )
            for check in record.checks
            if not check.early_error
        ],
    )


def _medians(
    timings: Iterable[Timing],
    keep: Mapping[str, str],
    value: Callable[[Timing], float | None] = lambda timing: timing.seconds,
) -> dict[str, float]:
    seen: dict[str, list[float]] = {}
    for timing in timings:
        number = value(timing)
        if number is not None and keep.get(timing.check_id) == timing.digest:
            seen.setdefault(timing.check_id, []).append(number)
    return {check_id: median(values) for check_id, values in sorted(seen.items())}


def median(values: Sequence[float]) -> float:
    """statistics.median, without the 4 ms its import (fractions, decimal) adds to every run."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def expected_seconds(
    *,
    runs: Sequence[RunTimings],
    digests: Mapping[str, str],
    samples: Mapping[str, int] | None = None,
) -> dict[str, float]:
    """Check id -> expected seconds on the definition digest in `digests`: the median seconds
    of one sample over its runs, times the samples it takes now (`samples`, by id; 1 where
    absent). A run that took four samples and one that took one thus say the same."""
    timings = (timing for run in runs for timing in run.timings)
    return _times(_medians(timings, digests, value=_one_sample_seconds), samples)


def expected_cost(
    *,
    runs: Sequence[RunTimings],
    digests: Mapping[str, str],
    samples: Mapping[str, int] | None = None,
) -> dict[str, float]:
    """Check id -> expected dollars on the digest in `digests`: the median cost of one sample
    over its runs (a reused verdict's, in the run that made it), times the samples it takes now
    (as `expected_seconds`)."""
    timings = (timing for run in runs for timing in run.timings)
    return _times(_medians(timings, digests, value=_one_sample_cost), samples)


def _times(per_sample: dict[str, float], samples: Mapping[str, int] | None) -> dict[str, float]:
    if not samples:
        return per_sample
    return {check_id: value * samples.get(check_id, 1) for check_id, value in per_sample.items()}


def latest_seconds(*, runs: Sequence[RunTimings]) -> dict[str, float]:
    """Check id -> the seconds of work it takes on the definition it last ran with: the
    median seconds of one sample over its runs, times the samples its latest run took.

    What a shard split reads: it is decided before the check files are read, so the definition
    a check has now is not known yet; the one it last ran with is, and a check's time rarely
    jumps with an edit. Its samples run side by side, so a sampled check's own duration is
    about one sample's, while a shard's workers spend the time of them all."""
    latest: dict[str, str] = {}
    samples: dict[str, int] = {}
    for run in runs:
        for timing in run.timings:
            latest[timing.check_id] = timing.digest
            samples[timing.check_id] = timing.samples
    timings = (timing for run in runs for timing in run.timings)
    return _times(_medians(timings, latest, value=_one_sample_seconds), samples)


def longest_first(*, ids: Sequence[str], expected: Mapping[str, float]) -> list[int]:
    """Positions into `ids` in the order to start them: ids with no expected duration first
    (nothing says they are short), then the longest expected; plan order breaks ties."""
    return sorted(
        range(len(ids)),
        key=lambda position: (
            ids[position] in expected,
            -expected.get(ids[position], 0.0),
            position,
        ),
    )


def start_order(
    *,
    folder: Path,
    ids: Sequence[str],
    digests: Mapping[str, str],
    samples: Mapping[str, int] | None = None,
    workers: int = 1,
    warn: Warn | None = None,
) -> list[int]:
    """Positions into `ids` (checks whose definitions are `digests` and that take `samples`, by
    id) in the order to start them on `workers` workers by the history in `folder`: unknown
    checks first, then the longest expected first, refined so the workers are expected to end
    together (`history.lanes`); plan order when the history holds no run of them."""
    try:
        runs = recent_timings(folder=folder, warn=warn)
    except OSError as exc:
        # The order is an optimisation: an unreadable history costs it, never the run.
        (warn if warn is not None else LOG.warning)(
            f"could not read the run history in {folder} ({exc.strerror or exc}); "
            "checks start in plan order"
        )
        runs = []
    if not runs:
        return list(range(len(ids)))
    expected = expected_seconds(runs=runs, digests=digests, samples=samples)
    order = longest_first(ids=ids, expected=expected)
    unknown = sum(1 for check_id in ids if check_id not in expected)
    known = order[unknown:]
    planned = planned_order(
        durations=[expected[ids[position]] for position in known], workers=workers
    )
    return order[:unknown] + [known[index] for index in planned]
