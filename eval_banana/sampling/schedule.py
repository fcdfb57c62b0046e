"""Samples as work items of the execute stage's pool, and what one check's samples share.

A check with N samples becomes N items, next to each other in plan order, so its samples run
at the same time on the pool's threads (within `max_parallel_checks`) instead of in threads
of their own. A check with one sample stays one plain item, exactly as without sampling.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple

from eval_banana.models.repeats import sample_count
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import PlannedCheck

Gate = Literal["run", "stopped", "held"]


class Item(NamedTuple):
    """One unit of pool work: a check's position in the plan and its sample (None: unsampled)."""

    position: int
    sample: int | None


def plan_items(*, checks: Sequence[PlannedCheck], default_repeats: int) -> list[Item]:
    """The pool's items in plan order: one per unsampled check, N per check with N samples."""
    items: list[Item] = []
    for position, check in enumerate(checks):
        count = sample_count(definition=check.definition, default=default_repeats)
        if count <= 1:
            items.append(Item(position=position, sample=None))
        else:
            items.extend(Item(position=position, sample=k) for k in range(1, count + 1))
    return items


class SampleSet:
    """The samples of one check: whether the check starts at all, and their results."""

    def __init__(self, *, count: int) -> None:
        self.count = count
        self._lock = threading.Lock()
        self._gate: Gate | None = None
        self._results: list[CheckResult | None] = [None] * count
        self._records: list[dict[str, object] | None] = [None] * count
        self._left = count

    def open(self, *, decide: Callable[[], Gate]) -> Gate:
        """The check's gate, decided once by the first of its samples to get here.

        A check either starts (every sample runs) or never starts (a stop, maxfail): a run
        that stops launching never leaves a check with some samples begun and others held.
        """
        with self._lock:
            if self._gate is None:
                self._gate = decide()
            return self._gate

    def finish(
        self, *, sample: int, result: CheckResult, record: dict[str, object]
    ) -> tuple[list[CheckResult], list[dict[str, object]]] | None:
        """Store one sample's outcome; the last one to finish gets them all, in sample order."""
        with self._lock:
            self._results[sample - 1] = result
            self._records[sample - 1] = record
            self._left -= 1
            if self._left:
                return None
        results = [result for result in self._results if result is not None]
        records = [record for record in self._records if record is not None]
        assert len(results) == len(records) == self.count
        return results, records


def sample_sets_of(*, items: Sequence[Item]) -> dict[int, SampleSet]:
    """A SampleSet per sampled check (by plan position), sized by its number of items."""
    counts: dict[int, int] = {}
    for item in items:
        if item.sample is not None:
            counts[item.position] = counts.get(item.position, 0) + 1
    return {position: SampleSet(count=count) for position, count in counts.items()}
