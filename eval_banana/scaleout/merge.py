"""`eb merge`: the shard runs of one plan become one complete run folder, scored and reported
exactly as `eb run` scores and reports a run on one machine.

The merged folder has all seven stage files, each valid against its schema and chained to the
others by digests (so `eb status` works on it), the shards' evidence (`checks/<stem>.*`) and
frozen scripts (`stages/snapshots/`) hard-linked where the file system allows, else copied, and
every result in the order one machine would have planned it. CI jobs may check the project out
at different absolute paths: paths under a shard's project root are moved under the merge's.

The stage files are made in `mergedstages`, the evidence is brought by `shardevidence`; this
module runs the two side by side (the links in forked children) and scores the result.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from eval_banana.core import forked
from eval_banana.core.errors import RunAborted
from eval_banana.core.files import write_model
from eval_banana.core.realpaths import real_path
from eval_banana.models.config import Selection
from eval_banana.models.stages import ConfigDoc, ExecuteDoc
from eval_banana.pipeline.finish import finish_run
from eval_banana.pipeline.lateinterrupt import interrupted_late
from eval_banana.pipeline.outcome import RunOutcome
from eval_banana.pipeline.reporttargets import (
    plan_files_read,
    refuse_reports_inside,
    refuse_reports_over,
    report_targets,
    settings_read,
)
from eval_banana.pipeline.writers import writing_run
from eval_banana.reporting import ReportExtras
from eval_banana.reporting.console import Console
from eval_banana.scaleout import mergedstages, shardevidence
from eval_banana.scaleout.shardinputs import refuse_other_inputs
from eval_banana.scaleout.shardrun import ShardRun
from eval_banana.scaleout.shardset import read_shard_set
from eval_banana.settings.folders import refuse_junit_target
from eval_banana.settings.rundir import discard_run_dir, new_run_id, open_run_dir, prune_runs
from eval_banana.stagefiles.layout import stage_path
from eval_banana.stages.config import resolve_config, write_config_stage
from eval_banana.stages.execute import write_execute_stage

# Below this many evidence files the links take a few hundredths of a second: not worth a fork.
LINK_FORK_FILES = 2_000


class MergeRequest(NamedTuple):
    """What `eb merge` was asked to do."""

    run_dirs: Sequence[Path]
    cwd: Path
    cli_values: Mapping[str, object]
    environ: Mapping[str, str]
    no_project_config: bool = False
    flat_output: bool = False
    extras: ReportExtras | None = None
    outputs: tuple[Path, ...] = ()  # --result-out


def merge_shards(*, request: MergeRequest, console: Console, cancel: threading.Event) -> RunOutcome:
    """Check the shard folders, write the merged run folder, score and report it.

    `cancel`: what a signal sets (SIGINT, SIGTERM, SIGHUP), as in `eb run`. The merge then
    stops bringing the shards' evidence (its forked children are ended, not waited for) and
    writes the rest of its run folder for a run that was interrupted: stage files, reports,
    JUnit and step summary say so, and RunAborted (exit 3) ends it.
    """
    runs = read_shard_set(run_dirs=[real_path(path) for path in request.run_dirs])
    evidence = shardevidence.shard_evidence(runs=runs)
    snapshots = shardevidence.shard_snapshots(runs=runs)
    local = resolve_config(
        cwd=request.cwd,
        cli_values=request.cli_values,
        environ=request.environ,
        no_project_config=request.no_project_config,
        selection=Selection(),
        run_id=new_run_id(),
    )
    first = runs[0]
    config = mergedstages.merged_config(local=local, first=first)
    refuse_junit_target(config=config)
    # Every shard's checks, at the paths of this checkout, in one machine's plan order.
    ordered = mergedstages.order(runs=runs, config=config)
    for relative in ordered.listed_by_id:
        console.warn(
            f"the cases of {relative} are listed by case id, not in their dataset's order: a "
            "shard made by an older eb does not record each case's place (merge shards made "
            "by one eb version to keep that order)"
        )
    # As `eb run` refuses them: a report over the config file, a check file, a script or a
    # dataset the shards' plan names would break the next run.
    targets = report_targets(config=config, outputs=request.outputs, environ=request.environ)
    refuse_reports_over(
        targets=targets,
        read={
            **settings_read(config=config),
            **{check.source_path: "a check file" for check in ordered.checks},
            **plan_files_read(config=config, checks=ordered.checks),
        },
    )
    # Nor a report inside a shard folder being merged: it would break this merge and the next.
    refuse_reports_inside(
        targets=targets,
        folders={str(run.run_dir): f"the folder of shard {run.shard.index}" for run in runs},
    )
    # The shards tested the code of this checkout, or the merged verdict is on other code.
    refuse_other_inputs(runs=runs, checks=ordered.checks, config=config)
    folder = open_run_dir(config=config, flat_output=request.flat_output)
    run_dir = folder.path
    # Held to the end, as `eb run` holds its folder: `eb status` says the merge is still going,
    # `eb update` and `eb stage` refuse the folder, keep_runs leaves it alone.
    with writing_run(run_dir=run_dir):
        try:
            made = _merged_files(
                run_dir=run_dir,
                runs=runs,
                evidence=evidence,
                snapshots=snapshots,
                config=config,
                ordered=ordered,
                cancel=cancel,
            )
        except RunAborted:
            raise
        except Exception:
            # Refused before any report: a refused merge leaves no run folder behind, not a
            # part of one that no report completes and `keep_runs` never counts.
            discard_run_dir(folder=folder)
            raise
        return _reported(
            run_dir=run_dir,
            made=made,
            config=config,
            request=request,
            console=console,
            cancel=cancel,
        )


class _MergedFiles(NamedTuple):
    """The merged folder's stage files and evidence, written: what its reports are made of."""

    executed: ExecuteDoc
    digests: dict[str, str]
    brought: bool  # every shard's evidence is in (else an interrupt kept some out)


def _merged_files(
    *,
    run_dir: Path,
    runs: Sequence[ShardRun],
    evidence: Sequence[shardevidence.ShardEvidence],
    snapshots: Mapping[str, str],
    config: ConfigDoc,
    ordered: mergedstages.MergedOrder,
    cancel: threading.Event,
) -> _MergedFiles:
    """Write the merged run folder's stage files and bring in the shards' evidence, its
    output folders included, before anything is reported. An error leaves no forked child
    at work in the folder."""
    first = runs[0]
    digests = {"config": write_config_stage(run_dir=run_dir, doc=config)}
    discovered = mergedstages.merged_discover(first=first, config=config, inputs=dict(digests))
    digests["discover"] = write_model(
        path=stage_path(run_dir=run_dir, stage="discover"),
        model=discovered.doc,
        rendered=discovered.texts,
    )

    # Thousands of links are system calls, not Python: a forked child makes them while this
    # process writes the stage files.
    # A child ended by a signal (the kernel's out-of-memory killer, say) leaves its work part
    # done; it is done again here, over what the child made (a Ctrl-C stops this process too).
    def bring_evidence() -> None:
        shardevidence.bring_evidence(snapshots=snapshots, evidence=evidence, run_dir=run_dir)

    def bring_folders() -> None:
        shardevidence.bring_folders(evidence=evidence, run_dir=run_dir)

    links = forked.start(
        work=bring_evidence,
        fork=forked.worth_forking(
            items=sum(len(listed.names) for listed in evidence), threshold=LINK_FORK_FILES
        ),
    )
    # The checks' output folders (mostly empty: each is looked into) in another child, which
    # nothing waits for until the evidence is in.
    try:
        folders = forked.start(
            work=bring_folders,
            fork=forked.worth_forking(
                items=sum(len(listed.folders) for listed in evidence), threshold=LINK_FORK_FILES
            ),
            background=True,
        )
    except BaseException:
        links.abandon()  # a Ctrl-C between the two forks must not leave the links' child behind
        raise
    try:
        executed = mergedstages.write_merged_stages(
            runs=runs, first=first, ordered=ordered, config=config, digests=digests, run_dir=run_dir
        )
    except BaseException as exc:
        _settle(links, folders, error=exc)
        raise
    # report.html lists checks/ to link each check's files: the links come first. The output
    # folders are in before any report too: a signal while they are brought records the run
    # as not complete, and a merge refused while bringing them writes no report.
    try:
        brought = _bring(links, redo=bring_evidence, stop=cancel.is_set)
        brought = _bring(folders, redo=bring_folders, stop=cancel.is_set) and brought
    except BaseException:
        folders.abandon()  # nothing of the merge goes on without it
        raise
    return _MergedFiles(executed=executed, digests=digests, brought=brought)


def _reported(
    *,
    run_dir: Path,
    made: _MergedFiles,
    config: ConfigDoc,
    request: MergeRequest,
    console: Console,
    cancel: threading.Event,
) -> RunOutcome:
    """Score and report the merged run folder whose files `made` wrote."""
    executed, digests, brought = made
    stopped = interrupted_late(executed=executed, cancel=cancel) or executed
    if not brought:
        # Files only the shards hold stayed out: `eb update` must never call the folder
        # complete (it refuses it), and `eb status` names the merge to run again.
        stopped = stopped.model_copy(update={"merge_interrupted": True})
    if stopped is not executed:
        # Interrupted: the run is written as one, as `eb run` writes a run interrupted after
        # its checks ended (every result stands; `aborted_by: interrupt`, exit 3).
        executed = stopped
        digests["execute"] = write_execute_stage(run_dir=run_dir, doc=executed)
    # The reports are the last of the run folder written: a signal from here on leaves it
    # whole (an interrupted run, its reports and record written again, or ones that stand).
    outcome = finish_run(
        run_dir=run_dir,
        config=config,
        executed=executed,
        digests=digests,
        extras=request.extras,
        console=console,
        kind="merge",
        cancel=cancel,
    )
    for problem in prune_runs(config=config, current=run_dir):
        console.warn(problem)
    if cancel.is_set() and outcome.exit_code != RunAborted.exit_code:
        # Past its history record, the merge's reports stand as written; it still stopped.
        raise RunAborted(
            "Interrupted while the merge was finishing, after its reports were written. "
            f"Report: {run_dir / 'report.json'}"
        )
    return outcome


def _bring(
    pending: forked.Pending[None], *, redo: Callable[[], None], stop: Callable[[], bool]
) -> bool:
    """The shards' evidence brought by `pending` (done again here over what a child ended by
    a signal left part done), unless the merge was interrupted (`stop`): then what is not
    linked yet stays out, and a child still at it is ended rather than waited for, so the
    interrupted merge writes its reports at once. Whether all of it was brought."""
    if stop() or not pending.ready(stop=stop):
        pending.abandon()
        return False
    try:
        pending.finish()
    except forked.ForkedWorkStopped:
        if stop():  # a Ctrl-C sent to the process group ends the child too
            return False
        redo()
    return True


def _settle(*pending: forked.Pending[None], error: BaseException) -> None:
    """Settle forked work while `error` is on its way: it is the one shown.

    After an ordinary error the children finish, so the folder is as complete as it can be.
    After an interrupt (Ctrl-C, or a termination turned into one) they are stopped: a
    Ctrl-C sent to eb alone never reaches them, and waiting on them would keep the user
    waiting for work the run no longer wants.
    """
    for work in pending:
        if not isinstance(error, Exception):
            work.abandon()
            continue
        with contextlib.suppress(Exception):
            work.finish()
