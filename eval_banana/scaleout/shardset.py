"""The shard run folders `eb merge` is given: read each one (shardrun.py), and refuse any set
that is not every shard of one plan exactly once.

Every refusal is a `MergeError` (a setup error, exit 2) that names the folder and the problem.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from pathlib import Path

from eval_banana.checks.shard import in_shard, relative_source, rows_digest
from eval_banana.core.words import first_and_count
from eval_banana.models.config import Settings
from eval_banana.scaleout.shardagents import check_same_agent, check_same_judging
from eval_banana.scaleout.shardrun import ShardRun, read_shard, refuse
from eval_banana.settings.table import SETTINGS_BY_NAME, VERDICT_SETTINGS, show

# How many missing shards a refused merge names before it counts the rest.
_NAMED_MISSING = 20

# Settings every shard must share: those the settings table marks as shaping the verdict (the
# threshold, --fail-on-flaky, the environment policy, the judges' agent and model, ...).
# Timeouts, parallelism and fuses are each job's own budget and may differ.
MATCHING_SETTINGS: tuple[str, ...] = tuple(spec.name for spec in VERDICT_SETTINGS)


def setting_value(*, settings: Settings, name: str) -> object:
    section, key = name.split(".", 1)
    return getattr(getattr(settings, section), key)


def _check_same_plan(*, runs: Sequence[ShardRun]) -> None:
    first = runs[0]
    for run in runs[1:]:
        if run.shard.total != first.shard.total:
            raise refuse(
                f"{run.label} and {first.label} cut the selection into different numbers of shards",
                run_dir=run.run_dir,
                hint="Every shard of one run uses the same N in --shard K/N.",
            )
        _check_same_balance(run=run, first=first)
        if run.plan.selection_digest != first.plan.selection_digest:
            raise refuse(
                f"{run.label} is a shard of another plan than {first.label} (their selection "
                "digests differ: other checks, other definitions or another selection)",
                run_dir=run.run_dir,
                hint="Merge shards of one commit and one selection only.",
            )
        if _plan_digest(run) != _plan_digest(first):
            raise refuse(
                f"{run.label} ran part of plan {_plan_digest(run) or '(none)'}, {first.label} "
                f"of plan {_plan_digest(first) or '(none)'}",
                run_dir=run.run_dir,
                hint="Merge the --select runs of one `eb plan` document only.",
            )
        _check_same_gates(run=run, first=first)
        _check_same_settings(run=run, first=first)
        check_same_agent(run=run, first=first)
    check_same_judging(runs=runs)


def _check_same_gates(*, run: ShardRun, first: ShardRun) -> None:
    """The shards must gate each family at one min_pass_rate: a case's definition digest leaves
    the gate out (editing it re-runs no case), so shards run on either side of an edit share
    their selection digest, and the merged verdict would take one shard's gate for all."""
    mine, theirs = run.plan.family_gates, first.plan.family_gates
    for family in sorted(mine.keys() | theirs.keys()):
        if mine.get(family) != theirs.get(family):
            raise refuse(
                f"{run.label} gates family '{family}' at {_gate(mine.get(family))}, "
                f"{first.label} at {_gate(theirs.get(family))}",
                run_dir=run.run_dir,
                hint=f"The check file of '{family}' was edited between the shards' runs: rerun "
                "every shard from one commit, then merge their folders.",
            )


def _gate(rate: float | None) -> str:
    return "no min_pass_rate" if rate is None else f"min_pass_rate {show(rate)}"


def _check_same_settings(*, run: ShardRun, first: ShardRun) -> None:
    """The shards must share every setting that shapes the verdict: the merged run takes the
    first shard's, and would pass by its rules what another shard failed by its own."""
    for name in MATCHING_SETTINGS:
        mine = setting_value(settings=run.config.settings, name=name)
        theirs = setting_value(settings=first.config.settings, name=name)
        if mine != theirs:
            raise refuse(
                f"{run.label} ran with {name} = {_stated(run=run, name=name, value=mine)}, "
                f"{first.label} with {_stated(run=first, name=name, value=theirs)}",
                run_dir=run.run_dir,
                hint=f"Run every shard with the same {name} ({_ways_to_set(name=name)}), then "
                "merge their folders: the shards must share each setting that shapes the "
                "verdict (docs/scale-out.md lists them).",
            )


def _stated(*, run: ShardRun, name: str, value: object) -> str:
    """A shard's value of a setting as a message shows it, with where it came from."""
    spec = SETTINGS_BY_NAME[name]
    origin = {
        "cli": f"from {spec.flag}",
        "env": f"from {spec.env}",
        "project": f"from [{spec.section}] {spec.key} in its config file",
        "default": "the default",
    }.get(run.config.sources.get(name) or "")
    shown = "unset" if value is None else show(value)
    return f"{shown} ({origin})" if origin else shown


def _ways_to_set(*, name: str) -> str:
    """Where a setting is given: its flag, its variable and its config key."""
    spec = SETTINGS_BY_NAME[name]
    ways = [way for way in (spec.flag, spec.env) if way is not None]
    ways.append(f"[{spec.section}] {spec.key} in .eval-banana/config.toml")
    return ", ".join(ways[:-1]) + f" or {ways[-1]}" if len(ways) > 1 else ways[0]


def _plan_digest(run: ShardRun) -> str | None:
    """The plan digest a --select run recorded (null for a list of ids, or no --select)."""
    select = run.plan.selection.select
    return select.plan_digest if select is not None else None


def _check_same_balance(*, run: ShardRun, first: ShardRun) -> None:
    """Shards split by history must have read the same history, or a check may sit in two
    shards or in none. Parts of a `--select` file were dealt by the file, whatever history
    each worker held: the plan checks below (one plan, each check once) stand for the split."""
    if run.plan.selection.select is not None and first.plan.selection.select is not None:
        return
    mine, theirs = run.shard, first.shard
    if mine.balance != theirs.balance:
        raise refuse(
            f"{run.label} was split with --balance {mine.balance}, {first.label} with "
            f"--balance {theirs.balance}",
            run_dir=run.run_dir,
            hint="Every shard of one run uses the same [core] shard_balance.",
        )
    if mine.history_digest != theirs.history_digest:
        raise refuse(
            f"{run.label} and {first.label} were split by different run histories (durations "
            f"{mine.history_digest} and {theirs.history_digest})",
            run_dir=run.run_dir,
            hint="Give every shard job the same history folder (restore it before the matrix "
            "starts, see docs/scheduling.md), then rerun the shards.",
        )


def _check_each_shard_once(*, runs: Sequence[ShardRun]) -> None:
    total = runs[0].shard.total
    seen: dict[int, ShardRun] = {}
    for run in runs:
        earlier = seen.get(run.shard.index)
        if earlier is not None:
            raise refuse(
                f"shard {run.shard.index} of {total} is given twice: {earlier.run_dir} and "
                f"{run.run_dir}",
                run_dir=run.run_dir,
                hint="Pass each shard's run folder once.",
            )
        seen[run.shard.index] = run
    if len(seen) < total:
        # N comes from the shards' own files: never count up to it (an edited N of 10**9
        # would be a list of a billion numbers). The first few missing ones are named.
        unseen = (index for index in range(1, total + 1) if index not in seen)
        missing = list(itertools.islice(unseen, _NAMED_MISSING))
        names = ", ".join(str(index) for index in missing)
        more = total - len(seen) - len(missing)
        if more:
            names += f" and {more} more"
        raise refuse(
            f"missing shard {names} of {total} (got {', '.join(str(k) for k in sorted(seen))})",
            hint="Pass the run folder of every shard 1..N; a shard that received no check "
            "still writes one.",
        )


def _check_checks(*, runs: Sequence[ShardRun]) -> None:
    """No check in two shards, each in its own slice, and together exactly the plan's selection."""
    owner: dict[str, ShardRun] = {}
    for run in runs:
        for check in run.plan.checks:
            earlier = owner.get(check.id)
            if earlier is not None:
                raise refuse(
                    f"check '{check.id}' is in two shards: {earlier.label} and {run.label}",
                    run_dir=run.run_dir,
                    hint="Each check runs in exactly one shard; rerun the shards.",
                )
            owner[check.id] = run
    for run in runs:
        if run.plan.selection.select is not None:
            # A --select run's part was dealt by its plan (maybe by history, not by hash): the
            # checks above and below (each once, together the plan) are what holds it.
            continue
        for check in run.plan.checks:
            # A split by history cannot be recomputed here; the digests above vouch for it.
            if run.shard.balance == "hash" and not in_shard(check_id=check.id, shard=run.shard):
                raise refuse(
                    f"{run.label} holds check '{check.id}', which is not in its slice (made "
                    "by an eb that splits differently?)",
                    run_dir=run.run_dir,
                    hint="Run every shard with the same version of eb.",
                )
    first = runs[0]
    union = rows_digest(
        rows=(
            (
                relative_source(source_path=check.source_path, project_root=run.project_root),
                check.id,
                check.check_definition_sha256,
            )
            for run in runs
            for check in run.plan.checks
        )
    )
    if union != first.plan.selection_digest or len(owner) != first.plan.selected_checks:
        unrun = _in_no_part(runs=runs, held=owner.keys())
        if unrun:
            raise refuse(
                f"the parts together hold {len(owner)} checks, which are not the "
                f"{first.plan.selected_checks} checks their plan selected: "
                f"{first_and_count([repr(i) for i in unrun], shown=_NAMED_MISSING)} ran in no "
                f"part (the plan gave {'it' if len(unrun) == 1 else 'them'} no shard of "
                f"1..{first.shard.total})",
                hint="Each check of the plan must be in one of its parts 1..N: make the plan "
                "again with `eb plan --shards N --format json` and rerun the parts.",
            )
        raise refuse(
            f"the shards together hold {len(owner)} checks, which are not the "
            f"{first.plan.selected_checks} checks their plan selected",
            hint="A shard folder was changed after its run; rerun the shards.",
        )


def _in_no_part(*, runs: Sequence[ShardRun], held: Collection[str]) -> list[str]:
    """The ids the `--select` file of every part names that no part ran (a plan that put a
    check in no part 1..N): empty when the parts are no --select runs, or hold every id."""
    selects = [run.plan.selection.select for run in runs]
    if any(select is None for select in selects):
        return []
    named = {check_id for select in selects if select is not None for check_id in select.plan_ids}
    return sorted(named.difference(held))


def read_shard_set(*, run_dirs: Sequence[Path]) -> list[ShardRun]:
    """Every shard of one plan exactly once, sorted by shard index; anything else refused."""
    runs = [read_shard(run_dir=run_dir) for run_dir in run_dirs]
    _check_same_plan(runs=runs)
    _check_each_shard_once(runs=runs)
    _check_checks(runs=runs)
    return sorted(runs, key=lambda run: run.shard.index)
