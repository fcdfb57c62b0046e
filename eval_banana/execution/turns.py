"""Which check starts when: longest expected first by the run history, balanced over the
workers, else plan order."""

from __future__ import annotations

from eval_banana.models.repeats import sample_count
from eval_banana.models.stages import ConfigDoc, PlannedCheck
from eval_banana.runners import IN_PROCESS
from eval_banana.settings.folders import history_dir


def start_ranks(
    *, config: ConfigDoc, checks: list[PlannedCheck], to_start: list[int], workers: int
) -> dict[int, int]:
    """Plan position (of those in `to_start`) -> its turn to start: longest expected first by
    the run history (`[core] schedule = history`), balanced over `workers`, else plan order.
    Only the start order changes: results, stage files and reports stay in plan order.

    Checks that all run in this process (assertions) keep plan order: one thread takes them one
    after another whatever their order, their times are milliseconds, and reading thirty
    records of 10,000 checks to order them cost such a run 0.8 s."""
    if (
        config.settings.core.schedule == "plan"
        or len(to_start) < 2
        or all(checks[position].type in IN_PROCESS for position in to_start)
    ):
        return {position: turn for turn, position in enumerate(to_start)}
    from eval_banana.history.recent import start_order

    starting = [checks[position] for position in to_start]
    order = start_order(
        folder=history_dir(config=config),
        ids=[check.id for check in starting],
        digests={check.id: check.check_definition_sha256 for check in starting},
        samples={
            check.id: sample_count(
                definition=check.definition, default=config.settings.core.repeats
            )
            for check in starting
        },
        workers=workers,
    )
    return {to_start[index]: turn for turn, index in enumerate(order)}
