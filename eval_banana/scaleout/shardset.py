"""The shard run folders `eb merge` is given: read each one, and refuse any set that is not
every shard of one plan exactly once.

Every refusal is a `MergeError` (a setup error, exit 2) that names the folder and the problem.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.checks.shard import in_shard, relative_source, rows_digest
from eval_banana.core.errors import MergeError, StageFileError
from eval_banana.core.words import first_and_count
from eval_banana.models.config import Settings, Shard
from eval_banana.models.stages import (
    ConfigDoc,
    ExecuteDoc,
    GuardDoc,
    PlanDoc,
    ReportDoc,
    ScoreDoc,
)
from eval_banana.settings.rundir import run_folder_hint
from eval_banana.settings.table import SETTINGS_BY_NAME, VERDICT_SETTINGS, show
from eval_banana.stagefiles.agreement import results_against_plan, unresulted
from eval_banana.stagefiles.layout import stage_path
from eval_banana.stagefiles.read import STAGE_INPUTS, StageRead, read_stage_file, stage_digest
from eval_banana.stagefiles.text import file_element_texts

# How many missing shards a refused merge names before it counts the rest.
_NAMED_MISSING = 20

# Settings every shard must share: those the settings table marks as shaping the verdict (the
# threshold, --fail-on-flaky, the environment policy, the judges' agent and model, ...).
# Timeouts, parallelism and fuses are each job's own budget and may differ.
MATCHING_SETTINGS: tuple[str, ...] = tuple(spec.name for spec in VERDICT_SETTINGS)


class ShardRun(NamedTuple):
    """One shard's run folder, read back and checked on its own."""

    run_dir: Path
    config: ConfigDoc
    plan: PlanDoc
    guard: GuardDoc
    execute: ExecuteDoc
    # Every stage file's digest as read (`sha256:<hex>`), by stage name.
    digests: dict[str, str]
    # `id()` of planned checks and results -> their text in this shard's files (stagetext.py).
    texts: dict[int, tuple[str, str]]

    @property
    def shard(self) -> Shard:
        shard = self.plan.selection.shard
        assert shard is not None  # read_shard refuses plans without one
        return shard

    @property
    def project_root(self) -> str:
        return self.config.project_root

    @property
    def label(self) -> str:
        return f"{self.run_dir} (shard {self.shard.index}/{self.shard.total})"


def _refuse(message: str, *, run_dir: Path | None = None, hint: str | None = None) -> MergeError:
    return MergeError(
        f"Cannot merge: {message}", file=str(run_dir) if run_dir is not None else None, hint=hint
    )


def _read(*, run_dir: Path, stage: str, vouched: str | None = None) -> StageRead:
    try:
        return read_stage_file(run_dir=run_dir, stage=stage, vouched=vouched)
    except StageFileError as exc:
        raise _refuse(
            f"{run_dir}: {exc.message}",
            run_dir=run_dir,
            hint="Each folder must be the run "
            "folder of one finished `eb run --shard K/N`, as that job left it.",
        ) from None


# What had happened by the time each stage file was written from the ones before it: how a
# refusal says when a file it was made from changed.
_MADE_WHEN: dict[str, str] = {
    "execute": "the checks ran",
    "score": "the run was scored",
    "report": "the run was reported",
    "guard": "the run was guarded",
    "validate": "the checks were planned",
    "discover": "the check files were found",
}


def check_chain(*, run_dir: Path, docs: Mapping[str, Any], digests: Mapping[str, str]) -> None:
    """Every stage file must still have the digest the stage files made from it recorded.

    `docs` are the documents read a moment ago (by stage) and `digests` the digests of every
    stage file's bytes then. An edit after the fact (a failing execute.json turned into a pass
    after its score stage, say) breaks a link and the whole shard is refused.
    """
    for stage, when in _MADE_WHEN.items():
        if stage not in docs:
            continue
        for upstream in STAGE_INPUTS[stage]:
            if docs[stage].inputs.get(upstream) == digests[upstream]:
                continue
            relative = stage_path(run_dir=run_dir, stage=upstream).relative_to(run_dir)
            made = stage_path(run_dir=run_dir, stage=stage).relative_to(run_dir)
            raise _refuse(
                f"{run_dir}: {relative} changed after {when} ({made} was made from another "
                "version of it)",
                run_dir=run_dir,
                hint="Merge the shard folders as their runs left them; rerun the shard "
                "(eb run --shard K/N) if one was edited.",
            )


def _file_digest(*, run_dir: Path, stage: str) -> str:
    """The digest of a stage file read only to be checked against its record (discover.json)."""
    digest = stage_digest(run_dir=run_dir, stage=stage)
    if digest is None:
        raise _refuse(
            f"{run_dir}: {stage_path(run_dir=run_dir, stage=stage).relative_to(run_dir)} is "
            "missing",
            run_dir=run_dir,
            hint="Each folder must be the run folder of one finished `eb run --shard K/N`, as "
            "that job left it.",
        )
    return digest


def read_shard(*, run_dir: Path) -> ShardRun:
    """Read and check one shard folder: a finished run of `eb run --shard K/N`."""
    if not stage_path(run_dir=run_dir, stage="config").is_file():
        raise _refuse(
            f"{run_dir} is not a run folder (it has no stages/config.json)",
            run_dir=run_dir,
            hint=run_folder_hint(
                folder=run_dir,
                after=": `eb run --output-dir DIR` makes its run folder under DIR, so pass DIR/* "
                "for each shard (or run the shards with --flat-output).",
                otherwise="Pass the folders `eb run --shard K/N` wrote (the ones holding "
                "report.json).",
            ),
        )
    # Read from the last stage back: each file is vouched for by the digest the next one
    # recorded, so the large ones (plan.json, execute.json) need no second check while they
    # still have it; the chain is then checked link by link.
    report_read = _read(run_dir=run_dir, stage="report")
    report: ReportDoc = report_read.doc
    score_read = _read(run_dir=run_dir, stage="score", vouched=report.inputs.get("score"))
    scored: ScoreDoc = score_read.doc
    execute_read = _read(run_dir=run_dir, stage="execute", vouched=scored.inputs.get("execute"))
    execute: ExecuteDoc = execute_read.doc
    config_read = _read(run_dir=run_dir, stage="config", vouched=execute.inputs.get("config"))
    plan_read = _read(run_dir=run_dir, stage="validate", vouched=execute.inputs.get("validate"))
    guard_read = _read(run_dir=run_dir, stage="guard", vouched=execute.inputs.get("guard"))
    config: ConfigDoc = config_read.doc
    plan: PlanDoc = plan_read.doc
    if plan.selection.shard is None:
        raise _refuse(
            f"{run_dir} is not a shard: its run had no --shard",
            run_dir=run_dir,
            hint="Merge the run folders of `eb run --shard K/N` jobs, one for each K (with "
            "--select PLAN, `eb run --select PLAN --shard K/N`).",
        )
    if plan.selection_digest is None or plan.selected_checks is None:
        raise _refuse(
            f"{run_dir}: its plan.json records no selection digest (an older eb made it)",
            run_dir=run_dir,
            hint="Rerun the shards with this version of eb.",
        )
    guard: GuardDoc = guard_read.doc
    reads = {
        "config": config_read,
        "validate": plan_read,
        "guard": guard_read,
        "execute": execute_read,
        "score": score_read,
        "report": report_read,
    }
    digests = {stage: read.sha256() for stage, read in reads.items()}
    # discover.json is not used here (the merge reads the first shard's): its digest is checked.
    digests["discover"] = _file_digest(run_dir=run_dir, stage="discover")
    # discover.json's own link (to config.json) is checked where it is read (mergedstages.py).
    check_chain(
        run_dir=run_dir,
        docs={stage: read.doc for stage, read in reads.items()},
        digests=digests,
    )
    _check_results(run_dir=run_dir, plan=plan, execute=execute)
    return ShardRun(
        run_dir=run_dir,
        config=config,
        plan=plan,
        guard=guard,
        execute=execute,
        digests=digests,
        texts={
            **file_element_texts(data=plan_read.data, field="checks", elements=plan.checks),
            **file_element_texts(data=execute_read.data, field="results", elements=execute.results),
        },
    )


def _check_results(*, run_dir: Path, plan: PlanDoc, execute: ExecuteDoc) -> None:
    """The shard's results must be its plan's: one per planned check, in plan order, each
    judged on the planned definition."""
    found = results_against_plan(plan=plan, execute=execute)
    missing = unresulted(plan=plan, execute=execute)
    if found is None and not missing:
        return
    problem = (
        f"at {found[0]}: {found[1]}"
        if found is not None
        else f"holds no result for planned check {missing[0]!r}"
    )
    raise _refuse(
        f"{run_dir}: stages/execute.json {problem}",
        run_dir=run_dir,
        hint="Bring the shard up to date (eb update --run-dir <shard folder>) or rerun it "
        "(eb run --shard K/N), then merge again.",
    )


def setting_value(*, settings: Settings, name: str) -> object:
    section, key = name.split(".", 1)
    return getattr(getattr(settings, section), key)


def _check_same_plan(*, runs: Sequence[ShardRun]) -> None:
    first = runs[0]
    for run in runs[1:]:
        if run.shard.total != first.shard.total:
            raise _refuse(
                f"{run.label} and {first.label} cut the selection into different numbers of shards",
                run_dir=run.run_dir,
                hint="Every shard of one run uses the same N in --shard K/N.",
            )
        _check_same_balance(run=run, first=first)
        if run.plan.selection_digest != first.plan.selection_digest:
            raise _refuse(
                f"{run.label} is a shard of another plan than {first.label} (their selection "
                "digests differ: other checks, other definitions or another selection)",
                run_dir=run.run_dir,
                hint="Merge shards of one commit and one selection only.",
            )
        if _plan_digest(run) != _plan_digest(first):
            raise _refuse(
                f"{run.label} ran part of plan {_plan_digest(run) or '(none)'}, {first.label} "
                f"of plan {_plan_digest(first) or '(none)'}",
                run_dir=run.run_dir,
                hint="Merge the --select runs of one `eb plan` document only.",
            )
        _check_same_settings(run=run, first=first)


def _check_same_settings(*, run: ShardRun, first: ShardRun) -> None:
    """The shards must share every setting that shapes the verdict: the merged run takes the
    first shard's, and would pass by its rules what another shard failed by its own."""
    for name in MATCHING_SETTINGS:
        mine = setting_value(settings=run.config.settings, name=name)
        theirs = setting_value(settings=first.config.settings, name=name)
        if mine != theirs:
            raise _refuse(
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
        raise _refuse(
            f"{run.label} was split with --balance {mine.balance}, {first.label} with "
            f"--balance {theirs.balance}",
            run_dir=run.run_dir,
            hint="Every shard of one run uses the same [core] shard_balance.",
        )
    if mine.history_digest != theirs.history_digest:
        raise _refuse(
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
            raise _refuse(
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
        raise _refuse(
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
                raise _refuse(
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
                raise _refuse(
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
            raise _refuse(
                f"the parts together hold {len(owner)} checks, which are not the "
                f"{first.plan.selected_checks} checks their plan selected: "
                f"{first_and_count([repr(i) for i in unrun], shown=_NAMED_MISSING)} ran in no "
                f"part (the plan gave {'it' if len(unrun) == 1 else 'them'} no shard of "
                f"1..{first.shard.total})",
                hint="Each check of the plan must be in one of its parts 1..N: make the plan "
                "again with `eb plan --shards N --format json` and rerun the parts.",
            )
        raise _refuse(
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
