"""The selection given to a stage rerun (`eb stage validate|execute --shard K/N --subset N ...`),
taken as `eb run` takes the same flags: the filters, then the subset, then the shard, split by
the same balance (docs/rerunning-stages.md)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from eval_banana.checks.planselect import narrow_plan, picked_checks
from eval_banana.history.balance import durations_digest, resolve_balance
from eval_banana.models.config import PlanSelection, Selection
from eval_banana.models.stages import ConfigDoc, PlanDoc, PlannedCheck
from eval_banana.stages.validate import shard_of_plan


def selecting(
    *, config: ConfigDoc, selection: Selection, cli_values: Mapping[str, object]
) -> ConfigDoc:
    """`config` with `selection` in place of its own, its shard split as `eb run` splits it: by
    the id hash, or under `--balance history` ([core] shard_balance) by recorded durations:
    the table config.json holds when its run was split by history (the one its matrix's jobs
    shared), else the history folder as it is now."""
    balance = cli_values.get("core.shard_balance")  # `--balance`: a setting flag
    if balance == "hash" or balance == "history":
        config = config.model_copy(deep=True)
        config.settings.core.shard_balance = balance
    shard = selection.shard
    if shard is None or selection.select is not None:
        # A --select run's part is the one its file dealt, recorded on its shard.
        return config.model_copy(update={"selection": selection})
    if config.settings.core.shard_balance != "history":
        hashed = shard.model_copy(update={"balance": "hash", "history_digest": None})
        return config.model_copy(
            update={"selection": selection.model_copy(update={"shard": hashed})}
        )
    recorded = config.shard_durations
    if recorded is None:
        return resolve_balance(config=config.model_copy(update={"selection": selection}))
    balanced = shard.model_copy(
        update={"balance": "history", "history_digest": durations_digest(durations=recorded)}
    )
    return config.model_copy(update={"selection": selection.model_copy(update={"shard": balanced})})


def narrowed_plan(*, plan: PlanDoc, config: ConfigDoc) -> PlanDoc:
    """The checks of `plan` that `config.selection` picks, as `eb run` picks them: the filters
    and the subset over the whole selection, then the shard's slice of what they kept."""
    selection = config.selection
    picked = picked_checks(
        checks=_before_the_shard(plan=plan, config=config),
        selection=selection,
        project_root=Path(config.project_root),
    )
    if selection.shard is not None:
        picked = shard_of_plan(checks=picked, shard=selection.shard, config=config)
    return narrow_plan(plan=plan, keep={check.id for check in picked}, selection=selection)


def _before_the_shard(*, plan: PlanDoc, config: ConfigDoc) -> list[PlannedCheck]:
    """The checks the selection is taken from: the plan's own, unless the plan holds one
    shard of its selection and what is picked depends on the other shards' checks too (a
    family's subset, a split by durations): then its whole selection, planned again in memory
    from the project as it is now."""
    selection = config.selection
    by_history = selection.shard is not None and selection.shard.balance == "history"
    if plan.selection.shard is None or (selection.subset is None and not by_history):
        return plan.checks
    from eval_banana.pipeline.request import validated_plan

    whole = plan.selection.model_copy(
        update={"shard": None, "select": _every_part(plan.selection.select)}
    )
    return validated_plan(config=config.model_copy(update={"selection": whole})).checks


def _every_part(select: PlanSelection | None) -> PlanSelection | None:
    """A `--select` file with every id it names (a shard's run executed only its part)."""
    if select is None:
        return None
    return select.model_copy(update={"ids": list(select.plan_ids)})
