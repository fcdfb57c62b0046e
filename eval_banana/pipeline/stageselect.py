"""The selection given to a stage rerun (`eb stage validate|execute --shard K/N --subset N ...`),
taken as `eb run` takes the same flags: the filters, then the subset, then the shard, split by
the same balance (docs/rerunning-stages.md)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from eval_banana.checks.planselect import narrow_plan, picked_checks
from eval_banana.history.balance import durations_digest, resolve_balance
from eval_banana.models.config import Selection
from eval_banana.models.stages import ConfigDoc, PlanDoc
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
    if shard is None:
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
    and the subset, then the shard's slice of what they kept."""
    selection = config.selection
    picked = picked_checks(
        checks=plan.checks, selection=selection, project_root=Path(config.project_root)
    )
    if selection.shard is not None:
        picked = shard_of_plan(checks=picked, shard=selection.shard, config=config)
    return narrow_plan(plan=plan, keep={check.id for check in picked}, selection=selection)
