"""Shards: `--shard K/N` keeps the selected checks whose id falls in slice K of N.

A check's slice depends on its id and N alone (numbered families are dealt round evenly, see
`shard_of`), so adding or removing one check never moves another one between shards, and
every CI job computes the same split without talking to the others. The plan records a digest
of the whole selection (before the shard filter), which is how `eb merge` tells shards of one
plan from shards of another.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence

from eval_banana.core.digits import ascii_whole
from eval_banana.core.errors import UsageError
from eval_banana.core.words import given_value
from eval_banana.models.config import MAX_SHARDS, Shard
from eval_banana.models.stages import PlannedCheck

AUTO = "auto"
_DIGEST_PREFIX = b"eval-banana selection v1\n"
# 2**64 divided by the golden ratio: successive multiples of it, taken modulo 2**64, are as evenly
# spread as any sequence can be (the three-gap theorem); Knuth's "Fibonacci hashing" constant.
_GOLDEN_STEP = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1
_LAST_NUMBER = re.compile(r"[0-9]+(?=[^0-9]*$)")
_SHARD_HINT = "Write --shard K/N with whole numbers 1 <= K <= N (e.g. --shard 2/4), or auto."


def _whole(text: str, *, what: str, given: str) -> int:
    stripped = text.strip()
    number = ascii_whole(stripped)
    if number is None and stripped.isascii() and stripped.isdigit():
        return MAX_SHARDS + 1  # too many digits to read: past any K or N eb takes
    if number is None:
        raise UsageError(
            f"--shard {given_value(given)}: {what} is not a whole number", hint=_SHARD_HINT
        )
    return number


def _checked(*, index: int, total: int, given: str) -> Shard:
    if total < 1 or not 1 <= index <= total:
        raise UsageError(
            f"--shard {given_value(given)}: K must lie between 1 and N, and N must be at least 1",
            hint=_SHARD_HINT,
        )
    if total > MAX_SHARDS:
        raise UsageError(
            f"--shard {given_value(given)}: N can be at most {MAX_SHARDS:,}", hint=_SHARD_HINT
        )
    return Shard(index=index, total=total)


def parse_shard(*, text: str, environ: Mapping[str, str]) -> Shard:
    """`K/N`, or `auto` (the CI engine's own variables, shardenv.py); else a usage error."""
    if text.strip().lower() == AUTO:
        from eval_banana.checks.shardenv import shard_from_environment

        return shard_from_environment(environ=environ)
    head, slash, tail = text.partition("/")
    # `2/3/4` has one slash too many: that is the form, not a number, that is wrong.
    if not slash or "/" in tail:
        raise UsageError(f"--shard {given_value(text)} is not of the form K/N", hint=_SHARD_HINT)
    index = _whole(head, what="K", given=text)
    total = _whole(tail, what="N", given=text)
    return _checked(index=index, total=total, given=text)


def shard_of(*, check_id: str, total: int) -> int:
    """The 1-based slice of `check_id` among `total`: its place on the unit circle, cut in N.

    An id without digits is placed by its SHA-256 alone. An id with digits is placed by the
    SHA-256 of its family (the id with its last run of digits taken out) plus that number times
    the golden ratio: the members of a numbered family (`case_001`, `case_002`, ...) step
    round the circle by an irrational amount, so however many there are and whatever their
    stride, they fill the N slices within a check or two of evenly. Numbered cases of one family
    tend to cost alike, so this evens the shards' run times as well as their counts. Either way
    the place is a function of the id alone.
    """
    return (_place(check_id=check_id) * total >> 64) + 1


def _place(*, check_id: str) -> int:
    """A 64-bit point on the circle for `check_id` (see `shard_of`)."""
    number = _LAST_NUMBER.search(check_id)
    if number is None:
        return _hash64(text=check_id)
    family = f"{check_id[: number.start()]}\0{check_id[number.end() :]}"
    # The last 18 digits are plenty to tell a family's members apart, and keep int() cheap.
    step = int(number.group()[-18:]) * _GOLDEN_STEP
    return (_hash64(text=family) + step) & _MASK64


def _hash64(*, text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def in_shard(*, check_id: str, shard: Shard) -> bool:
    return shard_of(check_id=check_id, total=shard.total) == shard.index


def shard_checks(*, checks: Iterable[PlannedCheck], shard: Shard) -> list[PlannedCheck]:
    """The checks of `shard`, in their given order."""
    return [check for check in checks if in_shard(check_id=check.id, shard=shard)]


def relative_source(*, source_path: str, project_root: str) -> str:
    """The check file's path relative to the project root (POSIX), or as is when outside it.

    CI jobs may check the project out at different absolute paths; this is what they share.
    Both paths are resolved absolute paths, so a prefix test is exact (and cheap per check).
    """
    prefix = project_root.rstrip("/") + "/"
    return source_path[len(prefix) :] if source_path.startswith(prefix) else source_path


def selection_digest(*, checks: Iterable[PlannedCheck], project_root: str) -> str:
    """`sha256:<hex>` over (relative path, id, definition digest) of each check, by that path."""
    # A family's cases share one source path (and come together): each path is made
    # relative once.
    relative: dict[str, str] = {}
    rows: list[tuple[str, str, str]] = []
    source = shown = ""
    for check in checks:
        if check.source_path != source:
            source = check.source_path
            shown = relative.get(source) or relative.setdefault(
                source, relative_source(source_path=source, project_root=project_root)
            )
        rows.append((shown, check.id, check.check_definition_sha256))
    return rows_digest(rows=rows)


def rows_digest(*, rows: Iterable[tuple[str, str, str]]) -> str:
    """The selection digest of (relative path, id, definition digest) rows, in path order.

    Each field ends with a NUL, which no path, id or digest can contain: the rows cannot run
    into each other.
    """
    lines = sorted(f"{relative}\0{check_id}\0{digest}\0" for relative, check_id, digest in rows)
    digest = hashlib.sha256(_DIGEST_PREFIX)
    digest.update("".join(lines).encode())  # one update: the same bytes as one per line
    return f"sha256:{digest.hexdigest()}"


def empty_reason(*, shard: Shard, selected: int) -> str:
    """What a report says when a shard received none of the selected checks."""
    plural = "check" if selected == 1 else "checks"
    return f"shard {shard.index}/{shard.total} received none of the {selected} selected {plural}"


def split_counts(*, check_ids: Sequence[str], total: int) -> list[int]:
    """How many of `check_ids` each of the `total` shards receives (index 0 is shard 1)."""
    counts = [0] * total
    for check_id in check_ids:
        counts[shard_of(check_id=check_id, total=total) - 1] += 1
    return counts
