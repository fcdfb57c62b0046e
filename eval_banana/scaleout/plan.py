"""`eb plan`: the checks a run would execute, validated as `eb run` validates them, nothing run.

The config, discover, validate and guard stages run in memory exactly as for `eb run` (no run
folder is written); then each planned check gets its cache status (its verdict-cache key, and
whether an entry is stored under it), what history expects of it, and with `--shards N` the
shard it lands in. The plan digest ties a plan to the project it was made from: `eb run
--select` recomputes it over the named checks and refuses a plan that no longer holds.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from eval_banana.checks.shard import relative_source, rows_digest, shard_of
from eval_banana.core.caseid import family_of
from eval_banana.core.version import tool_version
from eval_banana.history.balance import balance_shards
from eval_banana.history.recent import (
    expected_cost,
    expected_seconds,
    latest_seconds,
    recent_timings,
)
from eval_banana.models.plan import (
    Balance,
    CacheStatus,
    PlanCheckEntry,
    PlanDocument,
    PlanShardTotal,
    PlanSkippedEntry,
)
from eval_banana.models.repeats import sample_count
from eval_banana.models.stages import (
    ConfigDoc,
    PlanDoc,
    PlannedCheck,
    ProblemModel,
    ResolvedHarness,
)
from eval_banana.pipeline.request import RunRequest, load_config, validated_plan
from eval_banana.settings.folders import history_dir
from eval_banana.settings.rundir import new_run_id
from eval_banana.stagefiles.layout import SCHEMA_BASE

if TYPE_CHECKING:
    from eval_banana.cache.store import CacheStore

PLAN_SCHEMA = f"{SCHEMA_BASE}plan.schema.json"


class Expected(NamedTuple):
    """What history expects of one check; None where it knows nothing."""

    seconds: float | None
    cost_usd: float | None


def expected_from_history(
    *, config: ConfigDoc, checks: Sequence[PlannedCheck]
) -> Mapping[str, Expected] | None:
    """Check id -> its expected duration and cost: the medians over the newest recorded runs on
    the check's current definition (the rules of `eval_banana.history.durations`, as the start
    order of `eb run` uses them); None when history is off or holds no run."""
    if config.settings.history.mode == "off":
        return None
    runs = recent_timings(folder=history_dir(config=config))
    if not runs:
        return None
    digests = {check.id: check.check_definition_sha256 for check in checks}
    # What one sample took, times the samples the run will take (its `repeats`, or --repeats).
    samples = {
        check.id: sample_count(definition=check.definition, default=config.settings.core.repeats)
        for check in checks
    }
    seconds = expected_seconds(runs=runs, digests=digests, samples=samples)
    costs = expected_cost(runs=runs, digests=digests, samples=samples)
    return {
        check_id: Expected(seconds=seconds.get(check_id), cost_usd=costs.get(check_id))
        for check_id in digests
        if check_id in seconds or check_id in costs
    }


def split_durations(*, config: ConfigDoc) -> dict[str, float]:
    """The durations `eb run --shard K/N --balance history` splits by (the newest runs that
    were not shards, each check on the definition it last ran with), so `eb plan --shards N
    --balance history` shows the very split those shard jobs will cut."""
    if config.settings.history.mode == "off":
        return {}
    runs = recent_timings(folder=history_dir(config=config), unsharded=True)
    return latest_seconds(runs=runs)


class PlanRequest(NamedTuple):
    run: RunRequest
    shards: int | None


def plan_digest(*, rows: Sequence[tuple[str, str, str]]) -> str:
    """sha256 over the planned checks' (source, id, definition digest), sorted: the selection
    digest (eval_banana.checks.shard) of exactly these checks."""
    return rows_digest(rows=rows)


class BuiltPlan(NamedTuple):
    document: PlanDocument
    warnings: list[ProblemModel]  # what the selection warns of, as `eb run` says it first


def build_plan(*, request: PlanRequest) -> BuiltPlan:
    """The plan of the run `request` describes; setup errors raise as `eb run` raises them."""
    config = load_config(request=request.run, run_id=new_run_id())
    plan, harness = _validated(config=config)
    statuses = cache_statuses(config=config, plan=plan, harness=harness, environ=os.environ)
    expected = expected_from_history(config=config, checks=plan.checks) or {}
    entries = [
        plan_entry(check=check, config=config, cache=statuses[check.id], expected=expected)
        for check in plan.checks
    ]
    shard_totals: list[PlanShardTotal] = []
    balance: Balance | None = None
    if request.shards is not None:
        # `--balance` / [core] shard_balance: the setting `eb run --shard K/N` splits by.
        wanted: Balance = config.settings.core.shard_balance
        assigned, balance = assign_shards(
            ids=[entry.id for entry in entries],
            total=request.shards,
            balance=wanted,
            durations=split_durations(config=config) if wanted == "history" else {},
        )
        for entry in entries:
            entry.shard = assigned[entry.id]
        shard_totals = _shard_totals(entries=entries, total=request.shards)
    document = PlanDocument.model_validate(
        {
            "$schema": PLAN_SCHEMA,
            "tool_version": tool_version(),
            "project_root": config.project_root,
            "plan_digest": plan_digest(
                rows=[(entry.source, entry.id, entry.definition_digest) for entry in entries]
            ),
            # Before the shard cut, as the run's plan.json digests it: what every job shares.
            "selection_digest": plan.selection_digest,
            "selection": config.selection,
            "cache_mode": config.settings.cache.mode,
            "shards": request.shards,
            "balance": balance,
            "checks": entries,
            "skipped": [
                PlanSkippedEntry(id=item.check_id, reason=item.reason) for item in plan.skipped
            ],
            "shard_totals": shard_totals,
            "expected_seconds": _sum(entry.expected_seconds for entry in entries),
            "expected_cost_usd": _sum(entry.expected_cost_usd for entry in entries),
        }
    )
    return BuiltPlan(document=document, warnings=list(plan.warnings))


def _validated(*, config: ConfigDoc) -> tuple[PlanDoc, ResolvedHarness | None]:
    """discover, validate and guard as `eb run` runs them; their refusals raise the same way."""
    from eval_banana.stages import guard as guard_stage

    plan = validated_plan(config=config)
    guarded = guard_stage.guard(config=config, plan=plan, inputs={})
    guard_stage.raise_if_refused(guarded)
    return plan, guarded.harness


def plan_entry(
    *, check: PlannedCheck, config: ConfigDoc, cache: CacheStatus, expected: Mapping[str, Expected]
) -> PlanCheckEntry:
    found = expected.get(check.id)
    return PlanCheckEntry(
        id=check.id,
        family=family_of(check.id),
        type=check.type,
        source=relative_source(source_path=check.source_path, project_root=config.project_root),
        definition_digest=check.check_definition_sha256,
        cache=cache,
        expected_seconds=found.seconds if found else None,
        expected_cost_usd=found.cost_usd if found else None,
        shard=None,
    )


def cache_statuses(
    *,
    config: ConfigDoc,
    plan: PlanDoc,
    harness: ResolvedHarness | None,
    environ: Mapping[str, str],
) -> dict[str, CacheStatus]:
    """Check id -> would its verdict come from the cache: the key the execute stage computes,
    and whether an entry is stored under it (one stat per check; the entry's MAC and files are
    checked when a run reuses it, so a damaged entry shows 'hit' here and runs then)."""
    mode = config.settings.cache.mode
    if mode == "off":
        return dict.fromkeys((check.id for check in plan.checks), "off")
    keys = _keys(config=config, plan=plan, harness=harness, environ=environ)
    if keys is None:
        return dict.fromkeys((check.id for check in plan.checks), "off")
    from eval_banana.cache.store import CacheStore
    from eval_banana.settings.folders import cache_dir

    store = CacheStore(folder=cache_dir(config=config), max_bytes=0)
    readable = mode != "refresh" and store.folder.is_dir()
    statuses: dict[str, CacheStatus] = {}
    for check in plan.checks:
        key = keys.get(check.stem)
        if key is None:
            statuses[check.id] = "off"
        elif readable and _reusable(config=config, check=check, store=store, key=key):
            statuses[check.id] = "hit"
        else:
            statuses[check.id] = "miss"
    return statuses


def _reusable(*, config: ConfigDoc, check: PlannedCheck, store: CacheStore, key: str) -> bool:
    """Whether a run would reuse the entry under `key`: one is stored and, for an isolated
    check, was judged under isolation as strict as the run's (the run's own rule). Only a
    watched check's entry is read; a damaged one still shows as a hit (the run checks it)."""
    from eval_banana.cache.entry import entry_problem
    from eval_banana.cache.reuse import isolated_as_strictly
    from eval_banana.isolation.modes import check_mode

    if not os.path.isfile(store.entry_file(key=key)):
        return False
    if check_mode(config=config, check=check) == "off":
        return True  # an unisolated check takes any verdict: no need to read it
    document = store.read(key=key).document
    if document is None or entry_problem(document) is not None:
        return True
    return isolated_as_strictly(config=config, check=check, document=document)


def _keys(
    *,
    config: ConfigDoc,
    plan: PlanDoc,
    harness: ResolvedHarness | None,
    environ: Mapping[str, str],
) -> dict[str, str] | None:
    """Stem -> verdict key, as the cache session computes them; None when the cache cannot key
    this run (then it is off for the run too)."""
    from eval_banana.cache.components import KeyContext, check_components
    from eval_banana.cache.key import verdict_key
    from eval_banana.checks.inputs import CheckInputs, artifact_ids
    from eval_banana.core.errors import ProjectStateError
    from eval_banana.projectstate.git import NotARepository

    try:
        context = KeyContext(
            settings=config.settings,
            project_root=Path(config.project_root),
            harness=harness,
            inputs=CheckInputs(config=config, definitions=[c.definition for c in plan.checks]),
            environ=environ,
            artifacts=artifact_ids(checks=plan.checks, project_root=Path(config.project_root)),
        )
        keys: dict[str, str] = {}
        for check in plan.checks:
            components = check_components(check=check, context=context)
            if components is not None:
                keys[check.stem] = verdict_key(components=components)
    except (ProjectStateError, NotARepository, OSError):
        return None
    return keys


def assign_shards(
    *, ids: Sequence[str], total: int, balance: Balance, durations: Mapping[str, float]
) -> tuple[dict[str, int], Balance]:
    """Check id -> shard (1..total), and the balance used.

    'hash' is `--shard K/N`'s split (a function of the id and N alone); 'history' is the split
    of `--shard K/N --balance history` over `durations` (`balance_shards`, one rule for both
    commands). With no duration known for any planned check it is the hash split, and says so.
    """
    if balance == "hash" or not any(check_id in durations for check_id in ids):
        return {check_id: shard_of(check_id=check_id, total=total) for check_id in ids}, "hash"
    return balance_shards(ids=ids, expected=durations, total=total), "history"


def _shard_totals(*, entries: Sequence[PlanCheckEntry], total: int) -> list[PlanShardTotal]:
    totals = []
    for index in range(1, total + 1):
        mine = [entry for entry in entries if entry.shard == index]
        totals.append(
            PlanShardTotal(
                index=index,
                checks=len(mine),
                expected_seconds=_sum(entry.expected_seconds for entry in mine),
                expected_cost_usd=_sum(entry.expected_cost_usd for entry in mine),
            )
        )
    return totals


def _sum(values: Iterable[float | None]) -> float | None:
    """The sum of the known values; None when none is known."""
    known = [value for value in values if value is not None]
    return float(sum(known)) if known else None
