"""How evenly a stable shard assignment spreads check ids (W10's split row and its study).

    python bench/split.py [--sets N] [--checks N] [--shards N]

A stable assignment gives each check a shard from its id (and N) alone, so adding or removing
one check moves no other. For ids that have nothing to do with the function, a well-mixed one
gives every id an independent, uniform shard: the counts are then multinomial whatever the
function is, and `exact_within` gives the chance that all of them lie within the tolerance.
Ids that teams write are not like that: most of a big suite is numbered families. eb's own
assignment spreads a family's members evenly (see `eval_banana.checks.shard.shard_of`). The study
compares it with plain hashes on the benchmark's own ids and on id sets of three shapes: random
strings, one numbered family, and suites of many families plus named ids.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import statistics
import string
import sys
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.generate import FULL, Sizes, w10_base_checks  # noqa: E402
from eval_banana.checks.shard import shard_of, split_counts  # noqa: E402

TOLERANCE = 0.05  # the target: every shard within 5 % of an even share
SEED = 17
_MASK64 = (1 << 64) - 1

Assignment = Callable[[str, int], int]  # (check id, N) -> 0-based shard


def _eb_split(check_id: str, total: int) -> int:
    return shard_of(check_id=check_id, total=total) - 1


def _sha256_mod(check_id: str, total: int) -> int:
    return int.from_bytes(hashlib.sha256(check_id.encode()).digest()[:8], "big") % total


def _sha256_key(check_id: str) -> int:
    return int.from_bytes(hashlib.sha256(check_id.encode()).digest()[:8], "big")


def _blake2b_mod(check_id: str, total: int) -> int:
    digest = hashlib.blake2b(check_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % total


def _md5_mod(check_id: str, total: int) -> int:
    return int.from_bytes(hashlib.md5(check_id.encode()).digest()[:8], "big") % total


def _sha256_tail_mod(check_id: str, total: int) -> int:
    return int.from_bytes(hashlib.sha256(check_id.encode()).digest()[-8:], "big") % total


def _fnv1a_mod(check_id: str, total: int) -> int:
    value = 0xCBF29CE484222325
    for byte in check_id.encode():
        value = ((value ^ byte) * 0x100000001B3) & _MASK64
    return value % total


def _crc32_mod(check_id: str, total: int) -> int:
    return zlib.crc32(check_id.encode()) % total


def jump_bucket(*, key: int, buckets: int) -> int:
    """Lamping and Veach's jump consistent hash: a 64-bit key's bucket among `buckets`.

    Its own strength is a change of N (going from N to N + 1 moves only 1/(N + 1) of the keys);
    for a fixed N it is one more function of the key alone.
    """
    bucket, jump = -1, 0
    while jump < buckets:
        bucket = jump
        key = (key * 2862933555777941757 + 1) & _MASK64
        jump = int((bucket + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return bucket


def _jump_sha256(check_id: str, total: int) -> int:
    return jump_bucket(key=_sha256_key(check_id), buckets=total)


ASSIGNMENTS: dict[str, Assignment] = {
    "eb: numbered families stepped by the golden ratio, other ids by SHA-256": _eb_split,
    "SHA-256 (first 8 bytes) mod N (eb before 2026-12)": _sha256_mod,
    "SHA-256 (last 8 bytes) mod N": _sha256_tail_mod,
    "BLAKE2b-64 mod N": _blake2b_mod,
    "MD5 (first 8 bytes) mod N": _md5_mod,
    "jump consistent hash of SHA-256": _jump_sha256,
    "FNV-1a 64 mod N": _fnv1a_mod,
    "CRC-32 mod N (linear, not mixed)": _crc32_mod,
}


def deviation(*, counts: Sequence[int]) -> float:
    """The largest shard's distance from an even share, as a fraction of that share."""
    even = sum(counts) / len(counts)
    return max(abs(count - even) for count in counts) / even


def counts_of(*, ids: Sequence[str], total: int, assign: Assignment) -> list[int]:
    counts = [0] * total
    for check_id in ids:
        counts[assign(check_id, total)] += 1
    return counts


def random_ids(*, rng: random.Random, count: int) -> list[str]:
    """Ids with no structure: 12 random characters of the id alphabet."""
    alphabet = string.ascii_lowercase + string.digits + "_"
    return ["".join(rng.choices(alphabet, k=12)) for _ in range(count)]


def sequential_ids(*, rng: random.Random, count: int) -> list[str]:
    """Ids shaped like the benchmark's (a word, then consecutive numbers), another word and
    another start each time: what the benchmark's ids are one draw of."""
    prefix = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 8)))
    start = rng.randrange(0, 90_000)
    return [f"{prefix}_{start + index:05d}" for index in range(count)]


def family_ids(*, rng: random.Random, count: int) -> list[str]:
    """A suite as teams grow one: numbered families of 5 to 400 cases (a word, a number, maybe
    a suffix), each numbered from its own start with its own stride, and a third of the ids
    named one by one."""
    ids: set[str] = set(random_words(rng=rng, count=count // 3))
    while len(ids) < count:
        word = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 8)))
        suffix = rng.choice(["", "", "_judge", "_v2"])
        start, stride = rng.randrange(0, 100), rng.choice([1, 1, 1, 2, 5, 10])
        for index in range(rng.randint(5, 400)):
            ids.add(f"{word}_{start + index * stride:03d}{suffix}")
    return sorted(ids)[:count] if len(ids) > count else sorted(ids)


def random_words(*, rng: random.Random, count: int) -> list[str]:
    """Named ids without digits: two to four words of the lower-case alphabet."""
    return [
        "_".join(
            "".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9)))
            for _ in range(rng.randint(2, 4))
        )
        for _ in range(count)
    ]


def exact_within(*, checks: int, shards: int, tolerance: float = TOLERANCE) -> float:
    """The chance that `checks` independent uniform draws over `shards` leave every count
    within `tolerance` of an even share: multinomial counts, computed as independent Poisson
    counts conditioned on their sum (truncated to the allowed range, then convolved)."""
    even = checks / shards
    low, high = math.ceil(even * (1 - tolerance)), math.floor(even * (1 + tolerance))

    def poisson(mean: float, value: int) -> float:
        return math.exp(value * math.log(mean) - mean - math.lgamma(value + 1))

    allowed = [poisson(even, value) for value in range(low, high + 1)]
    # Distribution of the sum of the counts so far, each restricted to [low, high].
    total, offset = [1.0], 0
    for _ in range(shards):
        grown = [0.0] * (len(total) + len(allowed) - 1)
        for i, left in enumerate(total):
            if left:
                for j, right in enumerate(allowed):
                    grown[i + j] += left * right
        total, offset = grown, offset + low
    index = checks - offset
    inside = total[index] if 0 <= index < len(total) else 0.0
    return inside / poisson(float(checks), checks)


def _percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def sample(
    *, assign: Assignment, make: Callable[..., list[str]], sets: int, checks: int, shards: int
) -> list[float]:
    """The largest deviation of `sets` id sets made by `make`, the same sets for every
    assignment (the generator is seeded alike)."""
    rng = random.Random(SEED)
    return sorted(
        deviation(counts=counts_of(ids=make(rng=rng, count=checks), total=shards, assign=assign))
        for _ in range(sets)
    )


def summary(deviations: Sequence[float], *, of_them: str = "") -> str:
    """ "62.5% (median 4.6%, worst 8.9%)": the share within the tolerance, then the spread."""
    within = sum(1 for value in deviations if value <= TOLERANCE) / len(deviations)
    median = statistics.median(deviations)
    worst = deviations[-1]
    return f"{_percent(within)}{of_them} (median {_percent(median)}, worst {_percent(worst)})"


def notes(*, sizes: Sizes) -> list[str]:
    """The bench's lines on eb's split of the W10 ids (a count, not a timing)."""
    ids = list(w10_base_checks(sizes=sizes))
    total = sizes.w10_shards
    counts = split_counts(check_ids=ids, total=total)
    worst = deviation(counts=counts)
    sets = 200 if sizes is FULL else 20
    scattered, grown = (
        sample(assign=_eb_split, make=make, sets=sets, checks=len(ids), shards=total)
        for make in (random_ids, family_ids)
    )
    exact = exact_within(checks=len(ids), shards=total)
    return [
        f"- W10 split: {len(ids)} ids into {total} shards: {min(counts)} to {max(counts)} per "
        f"shard (largest deviation {_percent(worst)} of {len(ids) / total:g}; target ≤ 5%: "
        f"{'met' if worst <= TOLERANCE else 'NO'}). Over {sets} suites of {len(ids)} ids grown "
        f"as numbered families and named ids, within 5% in {summary(grown, of_them=' of them')}"
        f"; over {sets} sets of random 12-character ids (no families to spread, so a plain "
        f"hash), in {summary(scattered)}, where any stable, well-mixed assignment has a "
        f"{_percent(exact)} chance (multinomial counts; `python bench/split.py` compares "
        "assignments)."
    ]


def study(*, sets: int, checks: int, shards: int) -> str:
    """A markdown table: each assignment on the benchmark's ids and on three shapes of id set."""
    bench_ids = [f"check_{index:05d}" for index in range(checks)]
    lines = [
        f"{checks} ids into {shards} shards; share of id sets whose largest shard is within 5% "
        f"of {checks / shards:g} ({sets} sets of each shape, the same sets for every row):",
        "",
        "| assignment | benchmark's ids: largest deviation | random ids: within 5% | "
        "word + consecutive numbers: within 5% | numbered families and named ids: within 5% |",
        "|---|---|---|---|---|",
    ]
    shape = {"sets": sets, "checks": checks, "shards": shards}
    for name, assign in ASSIGNMENTS.items():
        own = deviation(counts=counts_of(ids=bench_ids, total=shards, assign=assign))
        cells = [
            summary(sample(assign=assign, make=make, **shape))
            for make in (random_ids, sequential_ids, family_ids)
        ]
        lines.append(f"| {name} | {_percent(own)} | {' | '.join(cells)} |")
    exact = exact_within(checks=checks, shards=shards)
    lines += [
        "",
        f"Independent uniform shards (multinomial counts, exact): {_percent(exact)}.",
    ]
    for more in (20_000, 30_000, 50_000):
        chance = exact_within(checks=more, shards=shards)
        lines.append(f"At {more} checks over {shards} shards: {_percent(chance)}.")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/split.py", description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=1000, help="Random id sets per shape.")
    parser.add_argument("--checks", type=int, default=FULL.w10_checks, help="Ids per set.")
    parser.add_argument("--shards", type=int, default=FULL.w10_shards, help="N.")
    args = parser.parse_args(argv)
    print(study(sets=args.sets, checks=args.checks, shards=args.shards))
    return 0


if __name__ == "__main__":
    sys.exit(main())
