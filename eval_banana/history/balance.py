"""Shards balanced by time: `--shard K/N --balance history` (docs/scheduling.md).

The split is longest-processing-time: the checks with a recorded duration, longest first (ties
by id), each go to the shard with the least expected time so far (ties: the lowest shard). A
check with no recorded duration is placed by the id hash, as without balancing, and counts as
the median known check while the rest are placed. Every input is a value, so each CI job that
reads the same history computes the same split, and `history_digest` names that history.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import statistics
from collections.abc import Mapping, Sequence

from eval_banana.checks.shard import shard_of
from eval_banana.core.errors import ConfigError
from eval_banana.history.read import Warn
from eval_banana.history.recent import latest_seconds, recent_timings
from eval_banana.models.stages import ConfigDoc
from eval_banana.settings.folders import history_dir

_DIGEST_PREFIX = b"eval-banana shard durations v1\n"


def balance_shards(
    *, ids: Sequence[str], expected: Mapping[str, float], total: int
) -> dict[str, int]:
    """Check id -> its 1-based shard among `total`, balancing the seconds in `expected`.

    Ids absent from `expected` go where the hash puts them (`shard_of`); the others are dealt
    longest first to the least loaded shard. The result depends on the values only, never on
    the order of `ids`.
    """
    assignment: dict[str, int] = {}
    loads = [0.0] * total
    known = sorted({check_id for check_id in ids if check_id in expected})
    stand_in = statistics.median(expected[check_id] for check_id in known) if known else 0.0
    for check_id in sorted(set(ids)):
        if check_id not in expected:
            shard = shard_of(check_id=check_id, total=total)
            assignment[check_id] = shard
            loads[shard - 1] += stand_in
    # A heap of (load, shard index): the least loaded shard, the lowest index on a tie.
    heap = [(load, index) for index, load in enumerate(loads)]
    heapq.heapify(heap)
    for check_id in sorted(known, key=lambda check_id: (-expected[check_id], check_id)):
        load, index = heapq.heappop(heap)
        assignment[check_id] = index + 1
        heapq.heappush(heap, (load + max(0.0, expected[check_id]), index))
    return assignment


def durations_digest(*, durations: Mapping[str, float]) -> str:
    """`sha256:<hex>` of a durations table: equal tables, equal digests, on any machine."""
    # Python writes a float as the shortest text that reads back to it: the same everywhere.
    data = json.dumps(dict(durations), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return f"sha256:{hashlib.sha256(_DIGEST_PREFIX + data.encode()).hexdigest()}"


def resolve_balance(*, config: ConfigDoc, warn: Warn | None = None) -> ConfigDoc:
    """`config` with its shard split by history when `[core] shard_balance` asks for it: the
    durations table read now is recorded in config.json, with its digest on the shard.

    A `--select` run is left as it is: its file dealt its part (the plan's split, or the
    hash), so the history this worker happens to hold splits nothing."""
    shard = config.selection.shard
    if shard is None or config.selection.select is not None:
        return config
    if config.settings.core.shard_balance != "history":
        return config
    folder = history_dir(config=config)
    try:
        # A shard's own record covers its slice only; read, it would let shard 1's record
        # change the split shard 2 computes after it on the same machine. Merged runs hold
        # every check.
        recent = recent_timings(folder=folder, unsharded=True, warn=warn)
    except OSError as exc:
        raise ConfigError(
            f"--balance history cannot read the history folder {folder}: {exc.strerror or exc}",
            file=str(folder),
            field_path="history.dir",
            hint="Make the folder readable, point [history] dir at the history to split by, "
            "or split by the id hash (--balance hash).",
        ) from None
    durations = latest_seconds(runs=recent)
    balanced = shard.model_copy(
        update={"balance": "history", "history_digest": durations_digest(durations=durations)}
    )
    selection = config.selection.model_copy(update={"shard": balanced})
    return config.model_copy(update={"selection": selection, "shard_durations": durations})
