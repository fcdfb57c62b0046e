"""The stage files of a merged run (`eb merge`): config, discover, plan, guard and execute made
from the shards' own, with every check and result in the order one machine would have planned
them, and paths under a shard's project root moved under the merge's.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from eval_banana.checks.shard import relative_source
from eval_banana.core.files import write_model
from eval_banana.harness.usage import dollars_sum
from eval_banana.models.config import Selection
from eval_banana.models.result import CheckResult, SkippedCheck
from eval_banana.models.stages import (
    ConfigDoc,
    DiscoverDoc,
    ExecuteDoc,
    GuardDoc,
    PlanDoc,
    PlannedCheck,
    ProblemModel,
    ShardSource,
)
from eval_banana.scaleout.shardrun import ShardRun, check_chain
from eval_banana.stagefiles.layout import envelope, stage_path
from eval_banana.stagefiles.read import read_stage_file
from eval_banana.stagefiles.text import file_element_texts
from eval_banana.stages.execute import execution_ms, write_execute_stage

# Settings that shape this merge's own outputs: taken from the merge's command line and config,
# not from the shards (every other setting is the shards').
# The merge's own, not the shards': where it writes (and how many earlier runs it keeps there),
# and where its run history lives (the merging machine's history, which `eb merge --history`
# and [history] name).
OUTPUT_SETTINGS: tuple[str, ...] = (
    "core.output_dir",
    "core.keep_runs",
    "core.junit_xml",
    "history.mode",
    "history.dir",
    "history.keep",
)


class _Roots(NamedTuple):
    """Moves a path from one shard's project root to the merged run's."""

    old: str
    new: str

    def move(self, path: str) -> str:
        if self.old == self.new:
            return path
        if path.rstrip("/") == self.old.rstrip("/"):  # the root itself (discover.json's roots)
            return self.new
        prefix = self.old.rstrip("/") + "/"
        if not path.startswith(prefix):
            return path
        return self.new.rstrip("/") + "/" + path[len(prefix) :]


def _roots(*, run: ShardRun, config: ConfigDoc) -> _Roots:
    return _Roots(old=run.project_root, new=config.project_root)


def merged_config(*, local: ConfigDoc, first: ShardRun) -> ConfigDoc:
    """The shards' settings (they agree on the ones that matter), in the merge's project, with
    the merge's own output folder, JUnit target and run history; no shard."""
    settings = first.config.settings.model_copy(deep=True)
    for name in OUTPUT_SETTINGS:  # one list says which, for the values and their sources
        table, _, key = name.partition(".")
        setattr(getattr(settings, table), key, getattr(getattr(local.settings, table), key))
    sources = dict(first.config.sources)
    sources.update({name: local.sources[name] for name in OUTPUT_SETTINGS})
    selection: Selection = first.plan.selection.model_copy(update={"shard": None})
    if selection.select is not None:
        # The merged run executed the whole plan, every part of it once.
        whole = selection.select.model_copy(update={"ids": list(selection.select.plan_ids)})
        selection = selection.model_copy(update={"select": whole})
    return local.model_copy(
        update={"settings": settings, "sources": sources, "selection": selection}
    )


class _Discovered(NamedTuple):
    doc: DiscoverDoc
    # `id()` of files left as the first shard listed them -> their text there (stagefiles/text.py).
    texts: dict[int, tuple[str, str]]


def merged_discover(*, first: ShardRun, config: ConfigDoc, inputs: dict[str, str]) -> _Discovered:
    """What the shards discovered (the first one's list; they share one selection)."""
    # Vouched for by the digest the shard's plan recorded, as the shard's other files are.
    read = read_stage_file(
        run_dir=first.run_dir, stage="discover", vouched=first.plan.inputs.get("discover")
    )
    doc: DiscoverDoc = read.doc
    check_chain(run_dir=first.run_dir, docs={"discover": doc}, digests=first.digests)
    roots = _roots(run=first, config=config)
    files = doc.files
    texts: dict[int, tuple[str, str]] = {}
    if roots.old != roots.new:
        files = [item.model_copy(update={"path": roots.move(item.path)}) for item in doc.files]
    else:
        texts = file_element_texts(data=read.data, field="files", elements=files)
    merged = doc.model_copy(
        update={
            **envelope(stage="discover", run_id=config.run_id, inputs=inputs),
            "roots": [roots.move(root) for root in doc.roots],
            "check_dirs": [roots.move(folder) for folder in doc.check_dirs],
            "files": files,
        }
    )
    return _Discovered(doc=merged, texts=texts)


class MergedOrder(NamedTuple):
    """The union of the shards' checks and results, in one machine's plan order, and the
    checks their files skip (every shard lists all of them: `skip:` is outside the split)."""

    checks: list[PlannedCheck]
    results: list[CheckResult]
    skipped: list[SkippedCheck]
    # Check files whose cases are listed by id: a shard an older eb made records no case's
    # place in its dataset (`case_index`), so no merge can interleave them as one machine did.
    listed_by_id: list[str]


def _skipped(*, runs: Sequence[ShardRun], config: ConfigDoc) -> list[SkippedCheck]:
    """Each skipped check once, in one machine's order, under the merge's project root."""
    found: dict[tuple[str, str], SkippedCheck] = {}
    for run in runs:
        roots = _roots(run=run, config=config)
        for item in run.plan.skipped:
            relative = relative_source(source_path=item.source_path, project_root=run.project_root)
            if (relative, item.check_id) not in found:
                moved = roots.move(item.source_path)
                found[(relative, item.check_id)] = (
                    item
                    if moved == item.source_path
                    else item.model_copy(update={"source_path": moved})
                )
    # By file only, and stably: within a family the cases stay in the order the shards list
    # them, which is the dataset's (a sort by id would put `b` before `a` when `a` came first).
    return [found[key] for key in sorted(found, key=lambda key: key[0])]


def order(*, runs: Sequence[ShardRun], config: ConfigDoc) -> MergedOrder:
    """Check files by path, a family's cases in dataset order: the shards split a family by
    case id, so the cases of one file come from several shards and their order in any one
    shard's plan says nothing about the others'."""
    rows: list[tuple[str, PlannedCheck, CheckResult]] = []
    for run in runs:
        roots = _roots(run=run, config=config)
        for check, result in zip(run.plan.checks, run.execute.results, strict=True):
            relative = relative_source(source_path=check.source_path, project_root=run.project_root)
            if roots.old == roots.new:  # the usual CI case: every job checks out at one path
                rows.append((relative, check, result))
                continue
            moved = check.model_copy(
                update={
                    "source_path": roots.move(check.source_path),
                    "script_path": roots.move(check.script_path) if check.script_path else None,
                }
            )
            rows.append(
                (relative, moved, result.model_copy(update={"source_path": moved.source_path}))
            )
    by_id = {relative for relative, check, _ in rows if check.family and check.case_index is None}
    rows.sort(key=lambda row: _place(relative=row[0], check=row[1], by_id=by_id))
    return MergedOrder(
        checks=[row[1] for row in rows],
        results=[row[2] for row in rows],
        skipped=_skipped(runs=runs, config=config),
        listed_by_id=sorted(by_id),
    )


def _place(*, relative: str, check: PlannedCheck, by_id: Collection[str]) -> tuple[str, int, str]:
    """Where a check goes in the merged order: its file, then its case's place in the dataset,
    or its case id where some shard did not record that place (positional ids, zero-padded,
    still sort in dataset order)."""
    if relative in by_id:
        return relative, 0, check.case_id or ""
    return relative, check.case_index or 0, ""


# The plan's maps keyed by family id: each shard's holds only the families it planned, so the
# merged plan holds them all (shards of one plan agree on a family both planned).
_FAMILY_MAPS = (
    "family_gates",
    "family_sizes",
    "family_file_rows",
    "family_case_ids",
    "family_picks",
    "family_calibration",
)


def _merged_plan(
    *,
    runs: Sequence[ShardRun],
    first: ShardRun,
    ordered: MergedOrder,
    config: ConfigDoc,
    inputs: dict[str, str],
) -> PlanDoc:
    families = {
        name: {key: value for run in runs for key, value in getattr(run.plan, name).items()}
        for name in _FAMILY_MAPS
    }
    return first.plan.model_copy(
        update={
            **envelope(stage="validate", run_id=config.run_id, inputs=inputs),
            "ok": True,
            "selection": config.selection,
            "checks": ordered.checks,
            "skipped": ordered.skipped,
            "errors": [],
            "allow_empty": None,
            **families,
        }
    )


def _unique(problems: Sequence[ProblemModel]) -> list[ProblemModel]:
    return list({(p.message, p.file): p for p in problems}.values())


def _merged_guard(
    *, runs: Sequence[ShardRun], ordered: MergedOrder, config: ConfigDoc, inputs: dict[str, str]
) -> GuardDoc:
    # Every shard that ran judges resolved the same agent (shardagents.py refuses others):
    # the first one's stands for all.
    harness = next((run.guard.harness for run in runs if run.guard.harness is not None), None)
    return GuardDoc.model_validate(
        {
            **envelope(stage="guard", run_id=config.run_id, inputs=inputs),
            "ok": True,
            "judge_checks": [c.id for c in ordered.checks if c.type == "harness_judge"],
            "harness": harness,
            "problems": [],
            "warnings": _unique([w for run in runs for w in run.guard.warnings]),
        }
    )


def _tokens(runs: Sequence[ShardRun]) -> int | None:
    counted = [run.execute.tokens_used for run in runs if run.execute.tokens_used is not None]
    return sum(counted) if counted else None


def _cost(runs: Sequence[ShardRun]) -> float | None:
    spent = [run.execute.cost_usd for run in runs if run.execute.cost_usd is not None]
    return dollars_sum(spent) if spent else None


def _merged_times(runs: Sequence[ShardRun]) -> dict[str, object]:
    """The merged run's times: it starts with its first shard and completes with the last
    checks any shard ran. A shard brought up to date by `eb update` keeps its first start and
    counts only its own time plus its updates' (docs/rerunning-stages.md), so the merged
    duration runs from the earliest start to the latest of each shard's start plus its own
    duration, never over the time between a shard's run and its update."""
    started = min(run.execute.started_at for run in runs)
    # ISO-8601 UTC strings of one format sort as the moments they name.
    times: dict[str, object] = {
        "started_at": started,
        "completed_at": max(run.execute.completed_at for run in runs),
    }
    updated = [run.execute.updated_at for run in runs if run.execute.updated_at is not None]
    if not updated:
        return times  # no shard was updated: its span is the duration, as for one run
    ends = [
        datetime.fromisoformat(run.execute.started_at)
        + timedelta(milliseconds=execution_ms(doc=run.execute))
        for run in runs
    ]
    wall = max(ends) - datetime.fromisoformat(started)
    return {
        **times,
        "duration_ms": round(wall / timedelta(milliseconds=1)),
        "updated_at": max(updated),
    }


def _merged_execute(
    *, runs: Sequence[ShardRun], ordered: MergedOrder, config: ConfigDoc, inputs: dict[str, str]
) -> ExecuteDoc:
    # Any shard's stop stops the merged run: a fuse tripped in shard 3 of 4 aborts it, and a
    # shard that stopped launching at maxfail halts it, as the same stop would on one machine.
    aborted = next((run.execute.aborted_by for run in runs if run.execute.aborted_by), None)
    # The maxfail the halting shard ran under is the one the merged run stopped at.
    halting = next((run for run in runs if run.execute.halted_by), runs[0])
    return ExecuteDoc.model_validate(
        {
            **envelope(stage="execute", run_id=config.run_id, inputs=inputs),
            **_merged_times(runs),
            "results": ordered.results,
            "aborted_by": aborted,
            "not_run": [r.check_id for r in ordered.results if r.details.get("not_run") is True],
            # The environment the checks ran under, as the first shard's execute.json records
            # it, as maxfail is carried: the report states this, not config.json's.
            "env_policy": runs[0].execute.env_policy,
            "env_allow": runs[0].execute.env_allow,
            "env_allow_prefixes": runs[0].execute.env_allow_prefixes,
            "skipped": ordered.skipped,
            # Every shard's plan holds the gates of the whole selection; any shard may be empty.
            "family_gates": {
                family: rate for run in runs for family, rate in run.plan.family_gates.items()
            },
            "family_sizes": {
                family: size for run in runs for family, size in run.plan.family_sizes.items()
            },
            "halted_by": halting.execute.halted_by,
            "maxfail": halting.execute.maxfail,
            "tokens_used": _tokens(runs),
            "cost_usd": _cost(runs),
            "warnings": _unique([w for run in runs for w in run.execute.warnings]),
            "merged_from": [
                ShardSource(
                    shard=run.shard.index,
                    total=run.shard.total,
                    run_id=run.execute.run_id,
                    run_dir=str(run.run_dir),
                    checks=len(run.execute.results),
                )
                for run in runs
            ],
            "input_digests": {
                check_id: digest
                for run in runs
                for check_id, digest in run.execute.input_digests.items()
            },
            "artifact_ids": {
                check_id: found
                for run in runs
                for check_id, found in run.execute.artifact_ids.items()
            },
            "tracked_input_digests": {
                check_id: digest
                for run in runs
                for check_id, digest in run.execute.tracked_input_digests.items()
            },
            # The settings each shard's results were decided under, as each shard recorded them.
            "verdict_settings": {
                check_id: digest
                for run in runs
                for check_id, digest in run.execute.verdict_settings.items()
            },
            "verdict_setting_parts": {
                digest: parts
                for run in runs
                for digest, parts in run.execute.verdict_setting_parts.items()
            },
            # Each shard's checks/<stem>.json is linked in as it is (shardevidence.py).
            "result_file_digests": {
                check_id: digest
                for run in runs
                for check_id, digest in run.execute.result_file_digests.items()
            },
            # As each shard recorded them when its results were made: a shard's result edited
            # by hand stays one the merged run is told of.
            "verdict_digests": {
                check_id: digest
                for run in runs
                for check_id, digest in run.execute.verdict_digests.items()
            },
        }
    )


def write_merged_stages(
    *,
    runs: Sequence[ShardRun],
    first: ShardRun,
    ordered: MergedOrder,
    config: ConfigDoc,
    digests: dict[str, str],
    run_dir: Path,
) -> ExecuteDoc:
    """The merged plan, guard and execute files (their digests added to `digests`)."""
    plan = _merged_plan(
        runs=runs, first=first, ordered=ordered, config=config, inputs=dict(digests)
    )
    plan_path = stage_path(run_dir=run_dir, stage="validate")
    # Checks and results that stay as the shards wrote them are copied as text, not rewritten.
    texts = {key: text for run in runs for key, text in run.texts.items()}
    digests["validate"] = write_model(path=plan_path, model=plan, rendered=texts)
    guarded = _merged_guard(
        runs=runs,
        ordered=ordered,
        config=config,
        inputs={k: digests[k] for k in ("config", "validate")},
    )
    digests["guard"] = write_model(path=stage_path(run_dir=run_dir, stage="guard"), model=guarded)
    executed = _merged_execute(
        runs=runs,
        ordered=ordered,
        config=config,
        inputs={k: digests[k] for k in ("config", "validate", "guard")},
    )
    digests["execute"] = write_execute_stage(run_dir=run_dir, doc=executed, rendered=texts)
    return executed
