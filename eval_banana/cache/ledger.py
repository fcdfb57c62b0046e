"""What the cache folder weighs, remembered between runs (`<dir>/size.json`).

Keeping the folder within `[cache] max_mb` means knowing its size, and the only way to know it
is to stat every entry, blob and kept run: on a cache of tens of thousands of files that walk
is the largest cost of a run that stored one verdict. The ledger holds the size the last walk
counted plus what runs stored since, and a run skips the walk while that estimate is at most
half the limit and the last walk is less than a day old.

The estimate can only err high, or low by a little: files removed by hand or by `eb cache
prune` make it high (a walk comes sooner, and corrects it); two runs storing at the same moment
may each miss the other's addition (low by one run's verdicts). The half-limit margin and the
daily walk keep the folder within its limit either way. A ledger that cannot be read or written
costs a walk, never a run. `CacheSizeLedger` is the single source of
`schemas/cache-size.schema.json`.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import NamedTuple

from eval_banana.core.errors import WriteFault
from eval_banana.core.files import OWNER_ONLY_FOLDER, read_bytes, write_bytes_atomic
from eval_banana.core.readback import loads_json
from eval_banana.core.record import Field, Record

LEDGER_NAME = "size.json"
# The longest a run trusts the ledger without a walk, and the share of the limit it may reach.
WALK_EVERY_SECONDS = 24 * 3600
SKIP_WHILE_UNDER = 0.5


class CacheSizeLedger(Record):
    """`<cache dir>/size.json`: the cache folder's size as eb last knew it."""

    model_config = {"extra": "forbid"}

    size_bytes: int = Field(
        ge=0,
        description="Bytes the last full walk of the folder counted, plus what runs stored since.",
    )
    walked_at: float = Field(
        description="When eb last walked the whole folder, in seconds since the epoch (UTC)."
    )


class KnownSize(NamedTuple):
    size_bytes: int
    walked_at: float


def ledger_path(*, folder: Path) -> Path:
    return folder / LEDGER_NAME


def is_ledger(path: Path) -> bool:
    """The ledger or one of its temporary siblings (never evicted as a stray file)."""
    return path.name == LEDGER_NAME or path.name.startswith(f".{LEDGER_NAME}.")


def known_size(*, folder: Path, now: float) -> KnownSize | None:
    """The ledger's figures while they can be trusted; None when the ledger is absent,
    unreadable, not eb's, from the future or older than a day."""
    try:
        document = loads_json(read_bytes(path=str(ledger_path(folder=folder))))
    except (OSError, ValueError):
        return None
    # Checked by hand: every run that stores a verdict reads it, and a schema validator is
    # more start-up than the walk it spares on a small cache.
    if type(document) is not dict or set(document) != {"size_bytes", "walked_at"}:
        return None
    size, walked_at = document["size_bytes"], document["walked_at"]
    if type(size) is not int or size < 0 or type(walked_at) not in (int, float):
        return None
    if not 0 <= now - walked_at < WALK_EVERY_SECONDS:
        return None
    return KnownSize(size_bytes=size, walked_at=float(walked_at))


def walk_needed(*, known: KnownSize | None, added: int, max_bytes: int) -> bool:
    """Whether eviction must walk the folder: no trusted figure, or one too near the limit."""
    return known is None or known.size_bytes + added > max_bytes * SKIP_WHILE_UNDER


def remember_size(*, folder: Path, size_bytes: int, walked_at: float) -> None:
    """Write the ledger; a ledger that cannot be written only costs the next run a walk."""
    ledger = CacheSizeLedger(size_bytes=max(0, size_bytes), walked_at=walked_at)
    data = json.dumps(ledger.model_dump(), indent=1, allow_nan=False).encode() + b"\n"
    with contextlib.suppress(OSError, WriteFault):
        write_bytes_atomic(
            path=ledger_path(folder=folder), data=data, folder_mode=OWNER_ONLY_FOLDER
        )
