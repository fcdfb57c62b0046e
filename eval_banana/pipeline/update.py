"""Rebuild a run folder as make rebuilds targets: what is not ok, in pipeline order, no more.

The reasons are `eb status`'s own (eval_banana.pipeline.status and the modules it asks):
this module decides nothing about staleness, it only reruns what that found and says why.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path

from eval_banana.core.errors import RunAborted, StageFileError
from eval_banana.core.words import one_line, plural
from eval_banana.models.stages import ConfigDoc, ExecuteDoc, GuardDoc, PlanDoc, ScoreDoc
from eval_banana.pipeline.definitionchanges import definition_changes, planned_for
from eval_banana.pipeline.interruptedmerge import refuse_interrupted_merge
from eval_banana.pipeline.remembering import remember_failures, remembered_before
from eval_banana.pipeline.rerun import RERUNS, StageRequest, refuse_taken_report_places
from eval_banana.pipeline.resultchanges import outdated_results
from eval_banana.pipeline.settingchanges import refuse_missing_agent, settings_in_folder
from eval_banana.pipeline.status import StageState, moved_project, run_status
from eval_banana.pipeline.writers import output_turn, writing_run
from eval_banana.reporting.console import Console, ProgressReporter
from eval_banana.runners.results import aborted_text
from eval_banana.stagefiles.layout import STAGE_NAMES, stage_path
from eval_banana.stagefiles.read import read_stage, upstream_digests

Out = Callable[[str], None]


def update_run(*, request: StageRequest, target: str = "report", out: Out = print) -> int:
    """Rerun the stages up to `target` that are not ok; the exit code is the run's verdict
    when `target` reaches score (as `eb run`'s), else 0 (3 if execute was interrupted). An
    aborted run raises RunAborted, once its reports and record are written, as `eb run` does.
    A folder another eb process is writing is refused (RunInUseError), and so is a merged run
    whose merge was interrupted before it brought in the shards' files (MergeInterruptedError):
    only merging them again completes it."""
    with writing_run(run_dir=request.run_dir):
        return _update(request=request, target=target, out=out)


def _update(*, request: StageRequest, target: str, out: Out) -> int:
    run_dir = request.run_dir
    wanted = STAGE_NAMES[: STAGE_NAMES.index(target) + 1]
    states = run_status(run_dir=run_dir)
    todo = [state for state in states if state.stage in wanted and state.state != "ok"]
    out(f"Run folder: {run_dir}")
    if any(state.stage == "execute" and state.state == "stale" for state in states):
        # Before any stage is rebuilt, whatever the target: nothing here can bring in what
        # only the shards of an interrupted merge hold.
        refuse_interrupted_merge(run_dir=run_dir)
    if not todo:
        out(f"Nothing to update: every stage up to {target} is ok.")
        verdict = _verdict(request=request, wanted=wanted, show=True)
        _raise_if_aborted(request=request, verdict=verdict, wanted=wanted)
        return verdict
    if any(state.stage == "report" for state in todo):
        # A report's place taken (a folder where report.html goes) is the user's to clear:
        # refused before a check runs again, not found once the verdict is shown.
        _refuse_taken_report_places(request=request)
    # Read before anything is rebuilt: which of a check's files changed (its yaml or script).
    # A run whose project moved names the files of the old folder: none is compared.
    moved = moved_project(run_dir=run_dir) is not None
    known = {} if moved else _definition_reasons(request=request)
    rerun = {state.stage for state in todo}
    code = 0
    ran_again: frozenset[str] = frozenset()
    # Only a folder with something to rebuild waits for the checks beside it.
    with output_turn(run_dir=run_dir, console=request.console, stop=request.cancel.is_set):
        for state in todo:
            out(_stage_line(state=state))
            if state.stage == "execute":
                stage_code, ran_again = _update_execute(request=request, known=known, out=out)
            else:
                stage_code = _rerun(request=request, stage=state.stage, rerun=rerun)
            code = max(code, stage_code)
        verdict = _verdict(request=request, wanted=wanted, show=False)
        if "report" in rerun and "report" in wanted:
            _record_rebuilt_run(request=request, exit_code=verdict, ran_again=ran_again)
    _raise_if_aborted(request=request, verdict=verdict, wanted=wanted)
    return verdict if "score" in wanted else code


def _refuse_taken_report_places(*, request: StageRequest) -> None:
    """`refuse_taken_report_places` under the settings config.json records (an update keeps
    the run's); with no readable config.json, the report stage asks once it is rebuilt."""
    try:
        config: ConfigDoc = read_stage(run_dir=request.run_dir, stage="config")
    except StageFileError:
        return
    refuse_taken_report_places(run_dir=request.run_dir, config=config)


def _raise_if_aborted(*, request: StageRequest, verdict: int, wanted: tuple[str, ...]) -> None:
    """An aborted run (an interrupt or a fuse while its checks ran again) ends as `eb run`'s
    does: its `Run aborted` line, exit 3. `verdict`: `_verdict`'s exit code."""
    if verdict != RunAborted.exit_code:
        return
    scored: ScoreDoc = read_stage(run_dir=request.run_dir, stage="score")
    if scored.aborted_by is None:
        return
    # The report names the checks that did not run; without it, score.json does.
    shown = (
        request.run_dir / "report.json"
        if "report" in wanted
        else stage_path(run_dir=request.run_dir, stage="score")
    )
    raise RunAborted(
        aborted_text(
            aborted_by=scored.aborted_by, not_run=scored.not_run_checks, report_json=str(shown)
        )
    )


def _record_rebuilt_run(
    *, request: StageRequest, exit_code: int, ran_again: frozenset[str]
) -> None:
    """The rebuilt run's record replaces the one it left in the history folder: `eb history`
    shows each run as its report now says, not as it was before the update, and what the
    results it replaced had spent stays spent. `ran_again`: the checks the update ran again (a
    replayed run that ran any is a replay no more)."""
    import json

    from eval_banana.history.record import RunKind
    from eval_banana.history.store import replayed_from
    from eval_banana.history.write import record_run
    from eval_banana.settings.folders import history_dir

    config: ConfigDoc = read_stage(run_dir=request.run_dir, stage="config")
    if config.settings.history.mode == "off":
        return  # no record to replace, and report.json (thousands of checks) is not parsed
    report = json.loads((request.run_dir / "report.json").read_bytes())
    # A merged run stays one: its record names the shards, whose own records it stands for.
    kind: RunKind = "merge" if report.get("merged_from") else "run"
    replayed = None
    if kind == "run" and not ran_again:
        # No check ran again: its verdicts are still the ones it replayed, and `eb history`
        # keeps showing it as the replay of that run.
        replayed = replayed_from(folder=history_dir(config=config), run_id=config.run_id)
    record_run(
        config=config,
        report=report,
        kind="replay" if replayed is not None else kind,
        exit_code=exit_code,
        warn=request.console.warn,
        replayed_from=replayed,
        replacing=True,
        ran_again=ran_again,
    )


def _stage_line(*, state: StageState) -> str:
    relative = state.path.relative_to(state.path.parent.parent)
    # One line, as `eb status` shows it: the detail quotes the project's words.
    detail = f" ({one_line(state.detail)})" if state.detail else ""
    return f"{state.stage:<9} {str(relative):<22} {state.state}{detail}: rerun"


def _rerun(*, request: StageRequest, stage: str, rerun: set[str]) -> int:
    """Any stage but execute (`_update_execute`) rerun as `eb stage` reruns it."""
    if stage == "validate":
        return RERUNS["validate"](_with_planned_selection(request=request))
    if stage == "score" and "report" in rerun:
        # The report stage prints the summary next; the score's verdict lines would repeat it.
        return RERUNS["score"](dataclasses.replace(request, console=Console(quiet=True)))
    return RERUNS[stage](request)


def _with_planned_selection(*, request: StageRequest) -> StageRequest:
    """The validate stage rebuilt under the selection plan.json recorded: `eb stage validate
    --check-id X` plans another selection than config.json's, and an update keeps it while
    config.json still holds the selection it held then. config.json is the run's request:
    once `eb stage config --check-id Y` changed its selection, the plan is rebuilt under that
    one, as `eb stage validate` would rebuild it."""
    try:
        plan: PlanDoc = read_stage(run_dir=request.run_dir, stage="validate")
        config: ConfigDoc = read_stage(run_dir=request.run_dir, stage="config")
    except StageFileError:
        return request  # no readable plan: config.json's selection is all there is
    if plan.selection == config.selection or planned_for(plan) != config.selection:
        return request
    values = dict(request.cli_values)
    if plan.selection.shard is not None:
        # Its shard is split as it was (config.json's durations when the run recorded them).
        values["core.shard_balance"] = plan.selection.shard.balance
    return dataclasses.replace(request, selection=plan.selection, cli_values=values)


def _definition_reasons(*, request: StageRequest) -> dict[str, str]:
    """Check id -> the file of its definition that changed, from the plan as it is now."""
    try:
        plan: PlanDoc = read_stage(run_dir=request.run_dir, stage="validate")
        return definition_changes(doc=plan, run_dir=request.run_dir)
    except StageFileError:
        return {}  # no readable plan: every check's reason is found against the new one


def _previous_results(*, request: StageRequest) -> ExecuteDoc | None:
    """The results recorded so far, or None when execute.json is missing or unreadable."""
    try:
        doc: ExecuteDoc = read_stage(run_dir=request.run_dir, stage="execute")
    except StageFileError:
        return None
    return doc


def _update_execute(
    *, request: StageRequest, known: dict[str, str], out: Out
) -> tuple[int, frozenset[str]]:
    """Run only the planned checks whose result is out of date; the others keep theirs, and a
    kept result whose checks/<stem>.json is gone or was edited is written there again from
    execute.json (where the reports read it from), no check run. The exit code, and the checks
    that ran again (their earlier results replaced)."""
    from eval_banana.pipeline.partial import (
        merge_results,
        refuse_taken_result_files,
        rewrite_kept_results,
    )
    from eval_banana.pipeline.runfiles import result_files_changed
    from eval_banana.stages import execute as execute_stage
    from eval_banana.stages import guard as guard_stage
    from eval_banana.stages import validate as validate_stage

    run_dir = request.run_dir
    inputs = upstream_digests(run_dir=run_dir, stage="execute")
    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    plan: PlanDoc = read_stage(run_dir=run_dir, stage="validate")
    validate_stage.raise_if_plan_failed(plan)
    guarded: GuardDoc = read_stage(run_dir=run_dir, stage="guard")
    guard_stage.raise_if_refused(guarded)
    previous = _previous_results(request=request)
    reasons = outdated_results(
        plan=plan,
        executed=previous,
        config=config,
        settings=settings_in_folder(config=config, guard=guarded),
        changed_files=known,
    )
    kept = len(plan.checks) - len(reasons)
    keeps = f"{kept} keeps its result" if kept == 1 else f"{kept} keep their results"
    out(f"  {len(reasons)} of {plural(count=len(plan.checks), noun='check')} to run again; {keeps}")
    for check_id, why in reasons.items():
        out(f"  rerun {check_id}: {one_line(why)}")
    found = result_files_changed(doc=previous, run_dir=run_dir) if previous is not None else {}
    # A folder where a result file goes is the user's to remove: refused before a check runs.
    refuse_taken_result_files(run_dir=run_dir, plan=plan, check_ids=found)
    # A check run again writes its own file.
    damaged = {check_id: why for check_id, why in found.items() if check_id not in reasons}
    for check_id, why in damaged.items():
        out(f"  rewrite {check_id}'s result file: {why}")
    narrowed = plan.model_copy(update={"checks": [c for c in plan.checks if c.id in reasons]})
    refuse_missing_agent(
        doc=guarded, checks=narrowed.checks, project_root=Path(config.project_root)
    )
    # What --last-failed remembers, read before a check can rewrite it (as `eb run` reads it).
    before = remembered_before(config=config)
    with ProgressReporter.over(checks=narrowed.checks, console=request.console) as progress:
        fresh = execute_stage.execute(
            config=config,
            plan=narrowed,
            guard=guarded,
            run_dir=run_dir,
            # With no check to run again, an interrupt stops nothing and loses no verdict: the
            # results kept are recorded whole, not as an aborted run's.
            cancel=request.cancel if narrowed.checks else threading.Event(),
            inputs=inputs,
            on_start=progress.started,
            on_result=progress.finished,
            environ=request.environ,
        )
    request.console.warn_each(fresh.warnings)  # as `eb run` shows them
    doc = rewrite_kept_results(
        run_dir=run_dir,
        plan=plan,
        merged=merge_results(plan=plan, fresh=fresh, previous=previous),
        previous=previous,
        damaged=damaged,
    )
    execute_stage.write_execute_stage(run_dir=run_dir, doc=doc)
    # The verdicts it reached are remembered as `eb run` remembers its own; a kept result is
    # none of them. It reads only the plan, so it cannot tell a gone check: it forgets none.
    remember_failures(
        config=config,
        executed=fresh,
        before=before,
        defined=None,
        console=request.console,
        cancel=request.cancel,
    )
    return 3 if doc.aborted_by else 0, frozenset(check.id for check in narrowed.checks)


def _verdict(*, request: StageRequest, wanted: tuple[str, ...], show: bool) -> int:
    """score.json's verdict as an exit code (0 passed, 1 not, 3 aborted), when it is wanted."""
    if "score" not in wanted or not stage_path(run_dir=request.run_dir, stage="score").is_file():
        return 0
    scored: ScoreDoc = read_stage(run_dir=request.run_dir, stage="score")
    if show:
        request.console.verdict(score=scored)
    return 0 if scored.run_passed else (3 if scored.aborted_by else 1)
