"""A run's last stages and its record: score.json, the reports (report.html begun beside the
run when a fork pays, its history marks read ahead) and the run's history record, written again
for an aborted run when a signal came while they were written (`eb run`, `eb merge`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval_banana.core import forked
from eval_banana.core.errors import RunAborted
from eval_banana.history.gitstate import GitProbe
from eval_banana.history.record import RunKind
from eval_banana.models.stages import ConfigDoc, ExecuteDoc, ScoreDoc
from eval_banana.pipeline.lateinterrupt import interrupted_late
from eval_banana.pipeline.outcome import RunOutcome
from eval_banana.reporting import (
    ReportExtras,
    await_result_reader,
    forks_html,
    reports_beside,
    start_html,
    write_extra_reports,
)
from eval_banana.reporting.console import Console
from eval_banana.runners.results import aborted_text
from eval_banana.stagefiles.layout import REPORT_HTML

if TYPE_CHECKING:
    from eval_banana.history.trend import Recent
    from eval_banana.stages.report import ReportOutcome


def publish_report(
    *,
    run_dir: Path,
    config: ConfigDoc,
    execute: ExecuteDoc,
    score: ScoreDoc,
    inputs: dict[str, str],
    extras: ReportExtras | None,
    console: Console,
    page: forked.Pending[str] | None = None,
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
    extras.begin_reports()
    html_job = (
        page if page is not None else start_html(extras=extras, report=built, run_dir=run_dir)
    )
    try:
        # stages/report.json is written once the page and the JUnit file are, to record the
        # page's digest and what could not be written.
        report = report_stage.write_reports(
            run_dir=run_dir,
            config=config,
            execute=execute,
            score=score,
            inputs=inputs,
            built=built,
            beside=lambda written, md_fault: reports_beside(
                extras=extras,
                run_dir=run_dir,
                report=written,
                junit_xml=config.settings.core.junit_xml,
                html=html_job,
                earlier=md_fault,
            ),
        )
        written = write_extra_reports(
            extras=extras,
            run_dir=run_dir,
            report=report.report,
            report_md=report.markdown,
            junit_xml=config.settings.core.junit_xml,
            html=html_job,
        ).written
        # --result-out's FIFO, its reader waited for while a signal still stops the run.
        await_result_reader(extras=extras)
    except BaseException:
        if html_job is not None:
            html_job.abandon()
        raise
    if extras.stop is not None and extras.stop() and execute.aborted_by is None:
        # A signal came while they were written: they are written again for an interrupted
        # run (`finish_run`), whose summary is the one shown, not a green one before it.
        return report
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


def record_history(
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


def begin_html(
    *,
    run_dir: Path,
    config: ConfigDoc,
    executed: ExecuteDoc,
    extras: ReportExtras | None,
    history: Mapping[str, Recent] | None = None,
) -> forked.Pending[str] | None:
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

    def render() -> str:
        # The score stage's inputs only name its upstream files in score.json, not written here.
        scored = score_stage.score(config=config, execute=executed, inputs={})
        report = report_stage.build_report(
            run_dir=run_dir, config=config, execute=executed, score=scored
        )
        return write_html(
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
    page: forked.Pending[str] | None = None,
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
            record_history(
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
    page: forked.Pending[str] | None,
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
