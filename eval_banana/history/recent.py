"""The newest runs of the history, and the order a run starts its checks in by them.

Scheduling and balancing read only the newest RECENT_RUNS records: a check's recent times say
most about its next one, and reading a few dozen files costs a run nothing it would notice,
where the whole history (up to `[history] keep` runs) could.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from eval_banana.history.durations import expected_durations
from eval_banana.history.read import LOG, BadRecord, Warn, read_record, record_paths
from eval_banana.history.record import HistoryRecord

RECENT_RUNS = 30


def recent_records(
    *, folder: Path, runs: int = RECENT_RUNS, warn: Warn | None = None
) -> list[HistoryRecord]:
    """The newest `runs` readable records in `folder`, oldest first (none: no folder)."""
    say = warn if warn is not None else LOG.warning
    records: list[HistoryRecord] = []
    # Names begin with the start time: the last names are the newest runs.
    for path in reversed(record_paths(folder=folder)):
        if len(records) >= runs:
            break
        try:
            records.append(read_record(path=path))
        except BadRecord as exc:
            say(f"skipped {path} in the run history: {exc}")
    records.sort(key=lambda record: (record.started_at, record.run_id))
    return records


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
    *, folder: Path, ids: Sequence[str], digests: Mapping[str, str], warn: Warn | None = None
) -> list[int]:
    """Positions into `ids` (checks whose definitions are `digests`, by id), longest expected
    first by the history in `folder`; plan order when it holds no run of them."""
    try:
        records = recent_records(folder=folder, warn=warn)
    except OSError as exc:
        # The order is an optimisation: an unreadable history costs it, never the run.
        (warn if warn is not None else LOG.warning)(
            f"could not read the run history in {folder} ({exc.strerror or exc}); "
            "checks start in plan order"
        )
        records = []
    if not records:
        return list(range(len(ids)))
    return longest_first(ids=ids, expected=expected_durations(records=records, digests=digests))
