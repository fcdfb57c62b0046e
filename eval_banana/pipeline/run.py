"""`eb run`: the seven stages chained in one process, every stage file still written.

Each step hands its document to the next in memory (no re-reading) and records the digest of
the file it wrote, so downstream files name their inputs exactly.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval_banana.checks.problemerrors import selected_nothing
from eval_banana.core import forked
from eval_banana.core.errors import (
    DefinitionError,
    EvalBananaError,
    PlanSelectError,
    RunAborted,
    WriteFault,
)
from eval_banana.history.gitstate import GitProbe
from eval_banana.history.record import RunKind
from eval_banana.models.stages import ConfigDoc, ExecuteDoc, ScoreDoc
from eval_banana.pipeline.lateinterrupt import interrupted_late
from eval_banana.pipeline.request import RunRequest, load_config
from eval_banana.reporting import ReportExtras, forks_html, start_html, write_extra_reports
from eval_banana.reporting.console import Console, ProgressReporter
from eval_banana.runners.faults import FaultLog
from eval_banana.runners.results import aborted_text
from eval_banana.settings.folders import refuse_junit_target
from eval_banana.settings.rundir import discard_run_dir, new_run_id, open_run_dir, prune_runs
from eval_banana.stagefiles.layout import REPORT_HTML
from eval_banana.stages import discover as discover_stage
from eval_banana.stages.config import (
    config_warning_lines,
    outside_project_warning,
    write_config_stage,
)

if TYPE_CHECKING:
    from eval_banana.history.trend import Recent
    from eval_banana.models.lastfailed import FailedCheck
    from eval_banana.stages.report import ReportOutcome

__all__ = [
    "RunOutcome",
    "RunRequest",
    "finish_run",
    "load_config",
    "publish_report",
    "run_pipeline",
]


class RunOutcome:
    """A finished run: its folder, report, score, exit code and stage file digests.

    A replayed run parses its report.json only when something asks for the report: a run with
    --json prints the line its replay kept (`json_line`), which equals the report dumped.
    """

    def __init__(
        self,
        *,
        run_dir: Path,
        score: ScoreDoc,
        exit_code: int,
        digests: dict[str, str],
        report: dict[str, Any] | None = None,
        load_report: Callable[[], dict[str, Any]] | None = None,
        json_line: str | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.score = score
        self.exit_code = exit_code
        self.digests = digests
        self._report = report
        self._load_report = load_report
        self._json_line = json_line

    @property
    def report(self) -> dict[str, Any]:
        if self._report is None:
            assert self._load_report is not None, "a run outcome has a report or its loader"
            self._report = self._load_report()
        return self._report

    @property
    def json_line(self) -> str:
        """The report as `--json` prints it: one line of JSON."""
        if self._json_line is None:
            self._json_line = json.dumps(self.report, ensure_ascii=False)
        return self._json_line


def publish_report(
    *,
    run_dir: Path,
    config: ConfigDoc,
    execute: ExecuteDoc,
    score: ScoreDoc,
    inputs: dict[str, str],
    extras: ReportExtras | None,
    console: Console,
    page: forked.Pending[None] | None = None,
    history: Mapping[str, Recent] | None = None,
) -> ReportOutcome:
    """The report stage as users see it: the report files first, then the console summary.

    report.html, the biggest of them, is begun first so a big run can render it in parallel
    (or was begun already: `page`, from `begin_html`); `history`: the records for its marks,
    read already (`begin_marks`).
    """
    from eval_banana.stages import report as report_stage

    built = report_stage.build_report(run_dir=run_dir, config=config, execute=execute, score=score)
    extras = extras if extras is not None else ReportExtras()
    extras.history_dir = history_folder(config=config)
    extras.config = config
    extras.history = history
    html_job = (
        page if page is not None else start_html(extras=extras, report=built, run_dir=run_dir)
    )
    try:
        report = report_stage.write_reports(
            run_dir=run_dir, config=config, execute=execute, score=score, inputs=inputs, built=built
        )
        written = write_extra_reports(
            extras=extras,
            run_dir=run_dir,
            report=report.report,
            report_md=report.markdown,
            junit_xml=config.settings.core.junit_xml,
            html=html_job,
        ).written
    except BaseException:
        if html_job is not None:
            html_job.abandon()
        raise
    html = run_dir / REPORT_HTML
    console.summary(
        report=report.report,
        report_path=report.report_json,
        html_path=html if html in written else None,
        places=None if console.quiet else extras.case_places(report=report.report),
    )
    # A report that could not be written ends the run (exit 3) after the verdict was shown.
    extras.tell_faults(warn=console.warn)
    return report


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
    folder = open_run_dir(config=config, flat_output=request.flat_output)
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
            )
    except DefinitionError as exc:
        if selected_nothing(exc):
            discard_run_dir(folder=folder)  # nothing could run: nothing is left behind
        raise
    except PlanSelectError:
        discard_run_dir(folder=folder)  # --select refused: nothing ran, nothing is left behind
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
) -> RunOutcome:
    """discover, validate, guard, execute, then `finish_run`: every stage after config."""
    contents: dict[str, bytes] = {}
    discovered = discover_stage.discover(
        config=config, inputs={"config": digests["config"]}, contents=contents
    )
    digests["discover"] = discover_stage.write_discover_stage(run_dir=run_dir, doc=discovered)
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
        )
        if replayed is not None:
            _record_history(
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
    from eval_banana.incremental.lastfailed import remembered

    remembered_before = remembered(config=config)
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
        _remember_failures(
            config=config,
            executed=executed,
            before=remembered_before,
            defined=outcome.defined_ids,
            console=console,
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


def _remember_failures(
    *,
    config: ConfigDoc,
    executed: ExecuteDoc,
    before: Mapping[str, FailedCheck],
    defined: frozenset[str] | None,
    console: Console,
) -> None:
    """What --last-failed will rerun; a record that cannot be written costs only that.
    `before`: what it remembered before the checks ran; `defined`: the ids the check files
    define, so a failure of a check gone since is forgotten."""
    from eval_banana.incremental.lastfailed import remember_results
    from eval_banana.settings.folders import last_failed_path

    try:
        remember_results(config=config, results=executed.results, before=before, defined=defined)
    except (WriteFault, OSError) as exc:
        # A read-only checkout, a folder in the record's place: the run's verdict stands.
        said = WriteFault.told(path=last_failed_path(config=config), exc=exc)
        console.warn(f"could not record the failed checks for --last-failed: {said}")


def _record_history(
    *,
    config: ConfigDoc,
    report: dict[str, Any] | Callable[[], dict[str, Any]],
    kind: RunKind,
    exit_code: int,
    console: Console,
    replayed_from: str | None = None,
    probe: GitProbe | None = None,
    replacing: bool = False,
) -> None:
    """The run's record in the history folder; a record that cannot be written is a warning.
    `replacing`: the run's earlier record goes (its reports were written again)."""
    from eval_banana.history.write import record_run

    record_run(
        config=config,
        report=report,
        kind=kind,
        exit_code=exit_code,
        warn=console.warn,
        replayed_from=replayed_from,
        git=probe,
        replacing=replacing,
    )


def _note_nothing_launched(*, score: ScoreDoc, console: Console) -> None:
    """Say so when every verdict came from the cache: `-x` or a failure stopped nothing."""
    if score.total_checks and score.cached_checks == score.total_checks:
        console.notice(
            "Nothing was launched: every check's verdict came from the verdict cache "
            f"({score.cached_checks} cached; `--cache refresh` runs them again)."
        )


def begin_marks(
    *, config: ConfigDoc, extras: ReportExtras | None
) -> forked.Pending[dict[str, Recent]] | None:
    """report.html's history marks, read in a forked child while the checks run when the
    records are big enough to pay (twenty records of 1,000 checks take a tenth of a second to
    read, which the end of the run would wait for); else None, and the page reads them when it
    is rendered."""
    folder = history_folder(config=config)
    if folder is None or (extras is not None and not extras.html):
        return None
    from eval_banana.reporting.marks import begin_recent_history

    return begin_recent_history(run_id=config.run_id, history_dir=folder)


def _read_marks(marks: forked.Pending[dict[str, Recent]]) -> dict[str, Recent] | None:
    """The marks read beside the run, or None when that went wrong: the page then reads them
    itself, and says so the way it always did."""
    try:
        return marks.finish()
    except (EvalBananaError, OSError):
        return None


def begin_html(
    *,
    run_dir: Path,
    config: ConfigDoc,
    executed: ExecuteDoc,
    extras: ReportExtras | None,
    history: Mapping[str, Recent] | None = None,
) -> forked.Pending[None] | None:
    """report.html begun in a forked child as soon as the results are known, when a fork pays;
    else None (the report stage renders it). The child scores and builds the report object
    itself, the same object the report stage builds (report.json holds no stage file digest),
    so the page is rendered while this process writes execute.json, score.json and the rest.
    `history`: the records for the page's marks, read already (`begin_marks`).
    """
    if not forks_html(extras=extras, checks=len(executed.results)):
        return None
    from eval_banana.reporting.html import write_html
    from eval_banana.stages import report as report_stage
    from eval_banana.stages import score as score_stage

    def render() -> None:
        # The score stage's inputs only name its upstream files in score.json, not written here.
        scored = score_stage.score(config=config, execute=executed, inputs={})
        report = report_stage.build_report(
            run_dir=run_dir, config=config, execute=executed, score=scored
        )
        write_html(
            report=report,
            run_dir=run_dir,
            path=run_dir / REPORT_HTML,
            history_dir=history_folder(config=config),
            history=history,
        )

    return forked.start(work=render, fork=True)


def history_folder(*, config: ConfigDoc) -> Path | None:
    """Where report.html finds each check's recorded runs; None when history is off."""
    if config.settings.history.mode == "off":
        return None
    from eval_banana.settings.folders import history_dir

    return history_dir(config=config)


def finish_run(
    *,
    run_dir: Path,
    config: ConfigDoc,
    executed: ExecuteDoc,
    digests: dict[str, str],
    extras: ReportExtras | None,
    console: Console,
    page: forked.Pending[None] | None = None,
    kind: RunKind = "run",
    probe: GitProbe | None = None,
    history: Mapping[str, Recent] | None = None,
    cancel: threading.Event | None = None,
) -> RunOutcome:
    """The score and report stages over a written execute.json (`eb run`, `eb merge`); `page`:
    report.html when begun already (`begin_html`). The run's record goes into the history
    folder once its reports are written (`kind`: which command ran it; `probe`: the commit
    observed when it started). `cancel`: what a signal sets; one that came by the time the
    record is written makes the run aborted, its stage files, reports and record written again.

    An aborted run raises RunAborted (exit 3) once its reports and record are written.
    """
    from eval_banana.reporttext.notes import halt_line

    replacing = False
    while True:
        report, scored, exit_code = _score_and_publish(
            run_dir=run_dir,
            config=config,
            executed=executed,
            digests=digests,
            extras=extras,
            console=console,
            page=page,
            history=history,
        )
        page = None  # a page written again is rendered again, from the stopped run
        late = interrupted_late(executed=executed, cancel=cancel)
        if late is None:
            _record_history(
                config=config,
                report=report.report,
                kind=kind,
                exit_code=exit_code,
                console=console,
                probe=probe,
                replacing=replacing,
            )
            late = interrupted_late(executed=executed, cancel=cancel)
            if late is None:
                break
        console.warn(
            "Interrupted while the run's reports were written: they are written again, "
            "for a run that was interrupted"
        )
        executed, replacing = late, True
        from eval_banana.stages.execute import write_execute_stage

        digests["execute"] = write_execute_stage(run_dir=run_dir, doc=executed)
    if scored.aborted_by is not None:
        raise RunAborted(
            aborted_text(
                aborted_by=scored.aborted_by,
                not_run=scored.not_run_checks,
                report_json=str(run_dir / "report.json"),
            ),
            # The reports' annotations begin with it, where GitHub still shows it.
            annotated=extras is not None and extras.annotated,
        )
    halted = halt_line(report=report.report)
    if halted is not None:
        console.notice(halted)
    return RunOutcome(
        run_dir=run_dir,
        report=report.report,
        score=scored,
        exit_code=exit_code,
        digests=digests,
    )


def _score_and_publish(
    *,
    run_dir: Path,
    config: ConfigDoc,
    executed: ExecuteDoc,
    digests: dict[str, str],
    extras: ReportExtras | None,
    console: Console,
    page: forked.Pending[None] | None,
    history: Mapping[str, Recent] | None,
) -> tuple[ReportOutcome, ScoreDoc, int]:
    """score.json and the reports of `executed`; the report, the score and the exit code."""
    from eval_banana.stages import score as score_stage

    scored = score_stage.score(
        config=config,
        execute=executed,
        inputs={"config": digests["config"], "execute": digests["execute"]},
    )
    digests["score"] = score_stage.write_score_stage(run_dir=run_dir, doc=scored)
    report = publish_report(
        run_dir=run_dir,
        config=config,
        execute=executed,
        score=scored,
        inputs={k: digests[k] for k in ("config", "execute", "score")},
        extras=extras,
        console=console,
        page=page,
        history=history,
    )
    exit_code = (
        RunAborted.exit_code if scored.aborted_by is not None else 0 if scored.run_passed else 1
    )
    return report, scored, exit_code
