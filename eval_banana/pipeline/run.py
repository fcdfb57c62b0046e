"""`eb run`: the seven stages chained in one process, every stage file still written.

Each step hands its document to the next in memory (no re-reading) and records the digest of
the file it wrote, so downstream files name their inputs exactly.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.checks.problemerrors import selected_nothing
from eval_banana.core import forked
from eval_banana.core.errors import (
    ChangeSelectionError,
    DefinitionError,
    EvalBananaError,
    PlanSelectError,
    ReportOverwriteError,
    RunAborted,
    WriteFault,
)
from eval_banana.history.gitstate import GitProbe
from eval_banana.models.stages import ConfigDoc, ScoreDoc
from eval_banana.pipeline.finish import (
    begin_html,
    begin_marks,
    finish_run,
    record_history,
)
from eval_banana.pipeline.lateinterrupt import interrupted_late
from eval_banana.pipeline.outcome import RunOutcome
from eval_banana.pipeline.remembering import remember_failures, remembered_before
from eval_banana.pipeline.reporttargets import (
    ReportTarget,
    check_files_read,
    plan_files_read,
    refuse_reports_over,
    report_targets,
    settings_read,
)
from eval_banana.pipeline.request import RunRequest, load_config
from eval_banana.pipeline.writers import writing_run
from eval_banana.reporting.console import Console, ProgressReporter
from eval_banana.runners.faults import FaultLog
from eval_banana.settings.folders import refuse_junit_target
from eval_banana.settings.rundir import (
    RunFolder,
    discard_run_dir,
    new_run_id,
    open_run_dir,
    prune_runs,
)
from eval_banana.stages import discover as discover_stage
from eval_banana.stages.config import (
    config_warning_lines,
    outside_project_warning,
    write_config_stage,
)

if TYPE_CHECKING:
    from eval_banana.history.trend import Recent


def run_pipeline(*, request: RunRequest, cancel: threading.Event, console: Console) -> RunOutcome:
    """Run every stage; setup errors raise (exit 2) after writing the stage files so far."""
    config = load_config(request=request, run_id=new_run_id())
    outside = outside_project_warning(config=config)
    # Said before the walk: a --check-dir such as /tmp may take a while to walk.
    far_checks = discover_stage.check_dir_outside_warning(config=config)
    for message in [*config_warning_lines(config=config), outside, far_checks]:
        if message is not None:
            console.warn(message)
    refuse_junit_target(config=config)  # before the run folder: nothing ran, nothing is left
    targets = report_targets(config=config, outputs=request.outputs, environ=request.environ)
    refuse_reports_over(targets=targets, read=settings_read(config=config))
    folder = open_run_dir(config=config, flat_output=request.flat_output)
    # Held to the end: `eb update` and `eb stage` refuse the folder, `eb status` says the run
    # is still going, keep_runs leaves it alone.
    with writing_run(run_dir=folder.path):
        return _written(
            config=config,
            folder=folder,
            request=request,
            cancel=cancel,
            console=console,
            targets=targets,
        )


def _written(
    *,
    config: ConfigDoc,
    folder: RunFolder,
    request: RunRequest,
    cancel: threading.Event,
    console: Console,
    targets: list[ReportTarget],
) -> RunOutcome:
    """The run in its run folder, just made: its stages, then the pruning of older runs."""
    run_dir = folder.path
    digests = {"config": write_config_stage(run_dir=run_dir, doc=config)}
    if config.selection.changed_since is not None:
        from eval_banana.incremental.changed import prefetch

        prefetch(config=config)  # git compares while the check files are found and read
    probe = _git_probe(config=config)
    try:
        with _state_read_ahead(config=config):
            outcome = _stages(
                config=config,
                run_dir=run_dir,
                digests=digests,
                request=request,
                cancel=cancel,
                console=console,
                probe=probe,
                targets=targets,
            )
    except DefinitionError as exc:
        if selected_nothing(exc):
            discard_run_dir(folder=folder)  # nothing could run: nothing is left behind
        raise
    except PlanSelectError:
        discard_run_dir(folder=folder)  # --select refused: nothing ran, nothing is left behind
        raise
    except ChangeSelectionError:
        # --changed-since git cannot answer (an unknown revision, no repository): a setup
        # error told before any check, so like the others it leaves no run folder.
        discard_run_dir(folder=folder)
        raise
    except ReportOverwriteError:
        discard_run_dir(folder=folder)  # a report over a file it reads: nothing ran
        raise
    finally:
        if probe is not None:
            probe.close()
    for problem in prune_runs(config=config, current=run_dir):
        console.warn(problem)
    if cancel.is_set() and outcome.exit_code != RunAborted.exit_code:
        # Past its history record, the run's reports stand as written; it still stopped.
        raise RunAborted(
            "Interrupted while the run was finishing, after its reports were written. "
            f"Report: {run_dir / 'report.json'}"
        )
    return outcome


def _git_probe(*, config: ConfigDoc) -> GitProbe | None:
    """The commit the run starts on, for its history record (None: history is off)."""
    if config.settings.history.mode == "off":
        return None
    from eval_banana.history.gitstate import begin

    return begin(root=config.project_root)


def _state_read_ahead(*, config: ConfigDoc) -> contextlib.AbstractContextManager[None]:
    """With the verdict cache: git walks the tree for the keys while the check files are found
    and read (`prefetched_state`)."""
    if config.settings.cache.mode == "off":
        return contextlib.nullcontext()
    from eval_banana.projectstate.prefetch import prefetched_state
    from eval_banana.settings.folders import own_folders

    return prefetched_state(root=config.project_root, skip_folders=own_folders(config=config))


def _stages(
    *,
    config: ConfigDoc,
    run_dir: Path,
    digests: dict[str, str],
    request: RunRequest,
    cancel: threading.Event,
    console: Console,
    probe: GitProbe | None,
    targets: list[ReportTarget],
) -> RunOutcome:
    """discover, validate, guard, execute, then `finish_run`: every stage after config."""
    contents: dict[str, bytes] = {}
    discovered = discover_stage.discover(
        config=config, inputs={"config": digests["config"]}, contents=contents
    )
    digests["discover"] = discover_stage.write_discover_stage(run_dir=run_dir, doc=discovered)
    refuse_reports_over(targets=targets, read=check_files_read(discovered=discovered))
    nested = discover_stage.nested_projects_warning(config=config, discovered=discovered)
    if nested is not None:
        console.warn(nested)
    key: str | None = None
    # The replay machinery is loaded only where the verdict cache is in use: a run without
    # it is spared some 15 ms of imports before its first check starts.
    if config.settings.cache.mode != "off":
        from eval_banana.pipeline import replaying

        key = replaying.key_for(config=config, discovered=discovered, request=request)
    if key is not None:
        replayed = replaying.replay(
            config=config,
            discovered=discovered,
            run_dir=run_dir,
            digests=digests,
            key=key,
            request=request,
            cancel=cancel,
            console=console,
            contents=contents,
            targets=targets,
        )
        if replayed is not None:
            record_history(
                config=config,
                report=replayed.load_report,
                kind="replay",
                exit_code=replayed.exit_code,
                console=console,
                replayed_from=replayed.from_run_id,
                probe=probe,
            )
            return RunOutcome(
                run_dir=run_dir,
                load_report=replayed.load_report,
                json_line=replayed.json_line,
                score=replayed.score,
                exit_code=replayed.exit_code,
                digests=replayed.digests,
            )
    # Loaded past the replay: a replayed run validates, guards and executes nothing.
    from eval_banana.stages import execute as execute_stage
    from eval_banana.stages import guard as guard_stage
    from eval_banana.stages import validate as validate_stage

    outcome = validate_stage.validate(
        config=config,
        discovered=discovered,
        inputs={"config": digests["config"], "discover": digests["discover"]},
        contents=contents,
    )
    digests["validate"] = validate_stage.write_validate_stage(run_dir=run_dir, outcome=outcome)
    outcome.raise_if_failed()
    plan = outcome.plan
    if targets:
        refuse_reports_over(
            targets=targets, read=plan_files_read(config=config, checks=plan.checks)
        )
    # Before any check starts: a --last-failed that runs every check says so before it pays.
    console.warn_each(plan.warnings)

    guarded = guard_stage.guard(
        config=config,
        plan=plan,
        inputs={"config": digests["config"], "validate": digests["validate"]},
    )
    digests["guard"] = guard_stage.write_guard_stage(run_dir=run_dir, doc=guarded)
    guard_stage.raise_if_refused(guarded)
    console.warn_each(guarded.warnings)

    recorder = (
        None
        if key is None
        else replaying.Recorder.begin(config=config, plan=plan, key=key, contents=contents)
    )
    faults = FaultLog()
    marks = begin_marks(config=config, extras=request.extras)
    # What --last-failed remembers, read before a check can rewrite it.
    before = remembered_before(config=config)
    try:
        with ProgressReporter.over(checks=plan.checks, console=console) as progress:
            executed = execute_stage.execute(
                config=config,
                plan=plan,
                guard=guarded,
                run_dir=run_dir,
                cancel=cancel,
                inputs={k: digests[k] for k in ("config", "validate", "guard")},
                on_start=progress.started,
                on_result=progress.finished,
                check_inputs=None if recorder is None else recorder.inputs,
                faults=faults,
            )
    except BaseException:
        if marks is not None:
            marks.abandon()
        raise
    history = None if marks is None else _read_marks(marks)
    executed = interrupted_late(executed=executed, cancel=cancel) or executed
    page = begin_html(
        run_dir=run_dir, config=config, executed=executed, extras=request.extras, history=history
    )
    try:
        digests["execute"] = execute_stage.write_execute_stage(run_dir=run_dir, doc=executed)
        # The plan's own are in the report with the rest, and were told before the run.
        console.warn_each([w for w in executed.warnings if w not in plan.warnings])
        remember_failures(
            config=config,
            executed=executed,
            before=before,
            defined=outcome.defined_ids,
            console=console,
            cancel=cancel,
        )
        finished = finish_run(
            run_dir=run_dir,
            config=config,
            executed=executed,
            digests=digests,
            extras=request.extras,
            console=console,
            page=page,
            probe=probe,
            history=history,
            cancel=cancel,
        )
    except BaseException as exc:
        if page is not None:
            page.abandon()  # finished already when the reports were written (RunAborted)
        if isinstance(exc, RunAborted | WriteFault):
            # A run aborted by a write fault says which file and why, in one line (exit 3);
            # it keeps no replay (the recorder below is never reached).
            faults.raise_first()
        raise
    _note_nothing_launched(score=finished.score, console=console)
    if recorder is not None and not cancel.is_set():  # an interrupted run keeps no replay
        from eval_banana.cache.replay_record import RunTaken

        run = RunTaken(
            config=config,
            discovered=discovered,
            plan=plan,
            guard=guarded,
            executed=executed,
            scored=finished.score,
            run_dir=run_dir,
            digests=digests,
            report=finished.report,
            exit_code=finished.exit_code,
        )
        recorder.keep(run=run, console=console)
    return finished


def _note_nothing_launched(*, score: ScoreDoc, console: Console) -> None:
    """Say so when every verdict came from the cache: `-x` or a failure stopped nothing."""
    if score.total_checks and score.cached_checks == score.total_checks:
        console.notice(
            "Nothing was launched: every check's verdict came from the verdict cache "
            f"({score.cached_checks} cached; `--cache refresh` runs them again)."
        )


def _read_marks(marks: forked.Pending[dict[str, Recent]]) -> dict[str, Recent] | None:
    """The marks read beside the run, or None when that went wrong: the page then reads them
    itself, and says so the way it always did."""
    try:
        return marks.finish()
    except (EvalBananaError, OSError):
        return None
