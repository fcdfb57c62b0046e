"""`eb stage <name>` / `invoke eval.<name>`: rerun one stage from the files in a run folder."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from eval_banana.history.balance import resolve_balance
from eval_banana.incremental.changed import pin_changed_since
from eval_banana.models.config import Selection
from eval_banana.models.stages import ConfigDoc, DiscoverDoc, ExecuteDoc, GuardDoc, PlanDoc
from eval_banana.pipeline.agreeing import refuse_disagreement
from eval_banana.pipeline.partial import merge_results, rewrite_kept_results
from eval_banana.pipeline.relocation import relocation
from eval_banana.pipeline.remembering import remember_failures, remembered_before
from eval_banana.pipeline.stageselect import narrowed_plan, selecting
from eval_banana.pipeline.stagesettings import stage_settings
from eval_banana.reporting.console import Console, ProgressReporter
from eval_banana.settings.folders import junit_file, refuse_junit_target
from eval_banana.stagefiles.layout import REPORT_HTML, REPORT_JSON, REPORT_MD, stage_path
from eval_banana.stagefiles.read import read_stage, refuse_stale_chain, upstream_digests
from eval_banana.stagefiles.write import refuse_wrong_place
from eval_banana.stages import discover as discover_stage
from eval_banana.stages import execute as execute_stage
from eval_banana.stages import guard as guard_stage
from eval_banana.stages import score as score_stage
from eval_banana.stages import validate as validate_stage
from eval_banana.stages.config import resolve_config, write_config_stage

# What to do about a folder where the JUnit file goes, once it is removed (or instead).
_JUNIT_PLACE_FIX = (
    "then rerun the report stage (eb update, or eb stage report), which writes it; or write "
    "it elsewhere with eb stage report --junit-xml PATH"
)


@dataclass(frozen=True)
class StageRequest:
    run_dir: Path
    cli_values: Mapping[str, object] = field(default_factory=dict)
    environ: Mapping[str, str] = field(default_factory=dict)
    selection: Selection | None = None
    no_project_config: bool = False
    verbose: bool = False  # `eb stage score --verbose` also lists every check
    # `eb stage`: the setting flags and EVAL_BANANA_* variables given now apply to the stage
    # it reruns; `eb update` rebuilds a run under the settings config.json recorded.
    settings_now: bool = False
    console: Console = field(default_factory=Console)
    cancel: threading.Event = field(default_factory=threading.Event)


def _config(request: StageRequest) -> ConfigDoc:
    doc: ConfigDoc = read_stage(run_dir=request.run_dir, stage="config")
    return doc


def _settings(request: StageRequest, *, stage: str) -> ConfigDoc:
    """config.json's settings, with those given now laid over the ones `stage` reads."""
    config = _config(request)
    if not request.settings_now:
        return config
    return stage_settings(
        stage=stage,
        config=config,
        cli_values=request.cli_values,
        environ=request.environ,
        selection=request.selection,
    )


def rerun_config(request: StageRequest) -> int:
    """Resolve the configuration again for the same project (where it is now), run id and
    selection, under the setting flags the run was made with; a flag given now replaces the
    run's for its setting."""
    previous = _config(request)
    doc = resolved_again(
        previous=previous,
        run_dir=request.run_dir,
        environ=request.environ,
        cli_values=request.cli_values,
        no_project_config=request.no_project_config,
        selection=request.selection,
    )
    # The run was created once: a rerun of its config stage does not make it the newest run.
    doc = doc.model_copy(update={"run_created_at": previous.run_created_at or previous.created_at})
    # A selection given now is a new request: its --changed-since is pinned to the commit its
    # revision names now (the run's own keeps the commit it was pinned to).
    doc = pin_changed_since(config=doc)
    if request.selection is None:
        # The same selection splits by the same durations: the history may have grown since.
        doc = doc.model_copy(update={"shard_durations": previous.shard_durations})
    else:
        # A new shard splits as `eb run` would split it: under --balance history, by the
        # history as it is now.
        doc = resolve_balance(config=doc)
    write_config_stage(run_dir=request.run_dir, doc=doc)
    return 0


def resolved_again(
    *,
    previous: ConfigDoc,
    run_dir: Path,
    environ: Mapping[str, str],
    cli_values: Mapping[str, object] | None = None,
    no_project_config: bool = False,
    selection: Selection | None = None,
) -> ConfigDoc:
    """The run's configuration resolved again, as its config stage resolves it when rerun:
    the same project (where it is now), run id and selection, under the setting flags the run
    was made with; `cli_values` given now replace the run's for their settings."""
    # A project moved or copied since takes the run along: it is resolved where it is now.
    moved = relocation(run_dir=run_dir, config=previous)
    return resolve_config(
        cwd=moved.now_in if moved is not None else Path(previous.project_root),
        cli_values={**_recorded_flags(config=previous), **(cli_values or {})},
        environ=environ,
        no_project_config=no_project_config or previous.no_project_config,
        selection=selection or previous.selection,
        run_id=previous.run_id,
    )


def _recorded_flags(*, config: ConfigDoc) -> dict[str, object]:
    """The setting flags the run was made with, as config.json recorded them (setting -> value):
    its config stage, rerun to take in an edited config file, is still that run."""
    values: dict[str, object] = {}
    for name, source in config.sources.items():
        section, _, key = name.partition(".")
        if source == "cli" and key:
            value = getattr(getattr(config.settings, section), key)
            # A flag given empty (`--harness-agent ""`) left its setting unset: recorded as
            # null, it is given empty again.
            values[name] = "" if value is None else value
    return values


def rerun_discover(request: StageRequest) -> int:
    """Find the check files again; `--check-dir` given here walks that folder instead."""
    inputs = upstream_digests(run_dir=request.run_dir, stage="discover")
    config = _settings(request, stage="discover")
    given = request.selection
    # Only its folder is read here (any other selection flag was refused above).
    if given is not None and given.check_dir is not None:
        walked = config.selection.model_copy(update={"check_dir": given.check_dir})
        config = config.model_copy(update={"selection": walked})
        _warn_far_checks(config=config, console=request.console)
    doc = discover_stage.discover(config=config, inputs=inputs)
    discover_stage.write_discover_stage(run_dir=request.run_dir, doc=doc)
    return 0


def rerun_validate(request: StageRequest) -> int:
    """Plan again; a selection given here (--check-id, --tag, --shard, ...) replaces config's,
    its checks found as `eb run` finds them: walked again, in memory, when discover.json
    walked another folder than its --check-dir (or than the project root, without one)."""
    inputs = upstream_digests(run_dir=request.run_dir, stage="validate")
    recorded = _settings(request, stage="validate")
    config = recorded
    discovered: DiscoverDoc = read_stage(run_dir=request.run_dir, stage="discover")
    contents: dict[str, bytes] | None = None
    if request.selection is not None:
        config = selecting(
            config=recorded, selection=request.selection, cli_values=request.cli_values
        )
        # Planned as `eb run` plans it: --changed-since against the commit it names now.
        config = pin_changed_since(config=config)
        if discovered.roots != [discover_stage.walked_root(config=config)]:
            _warn_far_checks(config=config, console=request.console)
            contents = {}
            discovered = discover_stage.discover(config=config, inputs={}, contents=contents)
    outcome = validate_stage.validate(
        config=config, discovered=discovered, inputs=inputs, contents=contents
    )
    if outcome.plan.selection != recorded.selection:
        # The request config.json holds, beside the selection applied instead: `eb update`
        # keeps this plan's selection only while config.json's is still that one.
        outcome.plan.config_selection = recorded.selection
    validate_stage.write_validate_stage(run_dir=request.run_dir, outcome=outcome)
    outcome.raise_if_failed()
    return 0


def _warn_far_checks(*, config: ConfigDoc, console: Console) -> None:
    """Said before the walk, as `eb run` says it: a --check-dir outside the project."""
    far_checks = discover_stage.check_dir_outside_warning(config=config)
    if far_checks is not None:
        console.warn(far_checks)


def rerun_guard(request: StageRequest) -> int:
    inputs = upstream_digests(run_dir=request.run_dir, stage="guard")
    plan: PlanDoc = read_stage(run_dir=request.run_dir, stage="validate")
    validate_stage.raise_if_plan_failed(plan)
    doc = guard_stage.guard(config=_settings(request, stage="guard"), plan=plan, inputs=inputs)
    guard_stage.write_guard_stage(run_dir=request.run_dir, doc=doc)
    guard_stage.raise_if_refused(doc)
    return 0


def rerun_execute(request: StageRequest) -> int:
    """Run the plan again; with a selection, only the selected checks (the others keep theirs)."""
    inputs = upstream_digests(run_dir=request.run_dir, stage="execute")
    plan: PlanDoc = read_stage(run_dir=request.run_dir, stage="validate")
    validate_stage.raise_if_plan_failed(plan)
    guarded: GuardDoc = read_stage(run_dir=request.run_dir, stage="guard")
    guard_stage.raise_if_refused(guarded)
    config = _settings(request, stage="execute")
    previous = None
    if request.selection is not None:
        previous = _previous_execute(run_dir=request.run_dir)
        plan = narrowed_plan(
            plan=plan,
            config=selecting(
                config=config, selection=request.selection, cli_values=request.cli_values
            ),
        )
    # The judges it runs, gated again when --repeats changed what the guard gated.
    guard_stage.raise_if_gate_refuses_repeats(
        config=config,
        plan=plan,
        guarded=guarded,
        gated_repeats=_config(request).settings.core.repeats,
    )
    # What --last-failed remembers, read before a check can rewrite it (as `eb run` reads it).
    before = remembered_before(config=config)
    with ProgressReporter.over(checks=plan.checks, console=request.console) as progress:
        fresh = execute_stage.execute(
            config=config,
            plan=plan,
            guard=guarded,
            run_dir=request.run_dir,
            cancel=request.cancel,
            inputs=inputs,
            on_start=progress.started,
            on_result=progress.finished,
            environ=request.environ,
        )
    doc = fresh
    if request.selection is not None:
        full_plan: PlanDoc = read_stage(run_dir=request.run_dir, stage="validate")
        doc = rewrite_kept_results(
            run_dir=request.run_dir,
            plan=full_plan,
            merged=merge_results(plan=full_plan, fresh=fresh, previous=previous),
            previous=previous,
        )
    execute_stage.write_execute_stage(run_dir=request.run_dir, doc=doc)
    # The verdicts it reached are remembered as `eb run` and `eb update` remember theirs: the
    # checks it ran, not a result kept from before. It reads only the plan, so it cannot tell
    # a check gone from the check files: it forgets none.
    remember_failures(
        config=config,
        executed=fresh,
        before=before,
        defined=None,
        console=request.console,
        cancel=request.cancel,
    )
    return 3 if doc.aborted_by else 0


def _previous_execute(*, run_dir: Path) -> ExecuteDoc | None:
    """The execute.json a selective rerun keeps the other results from (None when absent)."""
    if not stage_path(run_dir=run_dir, stage="execute").is_file():
        return None
    doc: ExecuteDoc = read_stage(run_dir=run_dir, stage="execute")
    return doc


def rerun_score(request: StageRequest) -> int:
    """Score again; `--pass-threshold` and `--fail-on-flaky` given now override config.json's."""
    inputs = upstream_digests(run_dir=request.run_dir, stage="score")
    refuse_stale_chain(run_dir=request.run_dir, through="execute")
    refuse_disagreement(run_dir=request.run_dir, through="execute")
    config = _settings(request, stage="score")
    executed: ExecuteDoc = read_stage(run_dir=request.run_dir, stage="execute")
    doc = score_stage.score(config=config, execute=executed, inputs=inputs)
    score_stage.write_score_stage(run_dir=request.run_dir, doc=doc)
    request.console.verdict(score=doc, results=executed.results if request.verbose else ())
    return 0 if doc.run_passed else (3 if doc.aborted_by else 1)


def refuse_taken_report_places(*, run_dir: Path, config: ConfigDoc) -> None:
    """Refuse, before a report is written again (`eb stage report`, and `eb update` before it
    runs any stage), a report whose place something else holds: a folder where report.json,
    report.md, report.html or the JUnit file goes, a file where one of their folders should
    be. eb never removes what it did not make, and a rename cannot replace a folder; found
    only once the checks' verdict was shown, it ended the command as a write fault (exit 3)."""
    for name in (REPORT_JSON, REPORT_MD, REPORT_HTML):
        refuse_wrong_place(path=run_dir / name, stage="report")
    setting = config.settings.core.junit_xml
    if setting:
        junit = junit_file(setting=setting, project_root=Path(config.project_root))
        refuse_wrong_place(path=junit, stage="report", fix=_JUNIT_PLACE_FIX)
    refuse_junit_target(config=config)  # a link loop, a socket, a disk


def rerun_report(request: StageRequest) -> int:
    """Rewrite the reports from execute.json and score.json; never runs a check."""
    from eval_banana.pipeline.finish import publish_report

    inputs = upstream_digests(run_dir=request.run_dir, stage="report")
    refuse_stale_chain(run_dir=request.run_dir, through="score")
    refuse_disagreement(run_dir=request.run_dir, through="score")
    scored = read_stage(run_dir=request.run_dir, stage="score")
    # `--junit-xml`, `--history` and `--history-dir` here override config.json's: the history
    # marks of report.html are drawn from that folder, or none when it is off.
    config = _settings(request, stage="report")
    refuse_taken_report_places(run_dir=request.run_dir, config=config)
    publish_report(
        run_dir=request.run_dir,
        config=config,
        execute=read_stage(run_dir=request.run_dir, stage="execute"),
        score=scored,
        inputs=inputs,
        extras=None,
        console=request.console,
    )
    return 0 if scored.run_passed else (3 if scored.aborted_by else 1)


RERUNS: dict[str, Callable[[StageRequest], int]] = {
    "config": rerun_config,
    "discover": rerun_discover,
    "validate": rerun_validate,
    "guard": rerun_guard,
    "execute": rerun_execute,
    "score": rerun_score,
    "report": rerun_report,
}


def rerun_stage(*, request: StageRequest, stage: str) -> int:
    """`eb stage <stage>`: rerun it in a run folder no other eb process is writing, once no
    other run's checks execute beside it (pipeline/writers.py)."""
    from eval_banana.pipeline.writers import rewriting_run

    with rewriting_run(
        run_dir=request.run_dir, console=request.console, stop=request.cancel.is_set
    ):
        return RERUNS[stage](request)
