"""One shard run folder `eb merge` is given, read back and checked on its own: every stage file
vouched for by the next one's recorded digest, and its results those of its own plan.

Every refusal is a `MergeError` (a setup error, exit 2) that names the folder and the problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.core.errors import MergeError, StageFileError
from eval_banana.models.config import Shard
from eval_banana.models.stages import (
    ConfigDoc,
    ExecuteDoc,
    GuardDoc,
    PlanDoc,
    ReportDoc,
    ScoreDoc,
)
from eval_banana.settings.rundir import run_folder_hint
from eval_banana.stagefiles.agreement import (
    results_against_plan,
    results_against_verdicts,
    unresulted,
)
from eval_banana.stagefiles.layout import stage_path
from eval_banana.stagefiles.read import STAGE_INPUTS, StageRead, read_stage_file, stage_digest
from eval_banana.stagefiles.text import file_element_texts

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


def refuse(message: str, *, run_dir: Path | None = None, hint: str | None = None) -> MergeError:
    return MergeError(
        f"Cannot merge: {message}", file=str(run_dir) if run_dir is not None else None, hint=hint
    )


def _read(*, run_dir: Path, stage: str, vouched: str | None = None) -> StageRead:
    try:
        return read_stage_file(run_dir=run_dir, stage=stage, vouched=vouched)
    except StageFileError as exc:
        raise refuse(
            f"{run_dir}: {exc.message}",
            run_dir=run_dir,
            hint="Each folder must be the run "
            "folder of one finished `eb run --shard K/N`, as that job left it.",
        ) from None


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
            raise refuse(
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
        raise refuse(
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
        raise refuse(
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
        raise refuse(
            f"{run_dir} is not a shard: its run had no --shard",
            run_dir=run_dir,
            hint="Merge the run folders of `eb run --shard K/N` jobs, one for each K (with "
            "--select PLAN, `eb run --select PLAN --shard K/N`).",
        )
    if plan.selection_digest is None or plan.selected_checks is None:
        raise refuse(
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
    found = results_against_plan(plan=plan, execute=execute) or results_against_verdicts(execute)
    missing = unresulted(plan=plan, execute=execute)
    if found is None and not missing:
        return
    problem = (
        f"at {found[0]}: {found[1]}"
        if found is not None
        else f"holds no result for planned check {missing[0]!r}"
    )
    raise refuse(
        f"{run_dir}: stages/execute.json {problem}",
        run_dir=run_dir,
        hint="Bring the shard up to date (eb update --run-dir <shard folder>) or rerun it "
        "(eb run --shard K/N), then merge again.",
    )
