"""Extra report formats over a finished run: HTML, JUnit XML, GitHub output, result document.

Every writer is a pure function of `report.json`'s object (plus the run folder for links);
`write_extra_reports` is the one call the pipeline makes after report.json and report.md exist.
`history_html` writes the page of `eb history --html` (read through the history package).

May import: stages, cache, history, isolation, reporttext, runners, stagefiles, checks, datasets,
settings, models, projectstate and core.

The pipeline and the commands call it.
"""

# No `from __future__ import annotations`: it would clash with the re-exported `annotations()`.
import contextlib
import errno
import importlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from eval_banana.core import forked
from eval_banana.core.errors import LinkLoopError, Problem, WriteFault, problem_of
from eval_banana.core.files import fault_clearing_earlier, never_stop
from eval_banana.core.record import Field, Record
from eval_banana.models.stages import ConfigDoc, ReportFault
from eval_banana.settings.folders import STEP_SUMMARY_ENV, junit_file, summary_loop
from eval_banana.stagefiles.layout import REPORT_HTML

# The page's and GitHub's writers are loaded when first used: a replayed run that brings its
# kept report.html and prints its JSON line uses neither (some 10 ms of imports).
if TYPE_CHECKING:
    from eval_banana.reporting.github import annotations, append_step_summary
    from eval_banana.reporting.html import write_html
    from eval_banana.stages.report import ReportsBeside

_LOADED_WHEN_USED = {
    "annotations": "eval_banana.reporting.github",
    "append_step_summary": "eval_banana.reporting.github",
    "warning_annotations": "eval_banana.reporting.github",
    "write_html": "eval_banana.reporting.html",
}


def __getattr__(name: str) -> Any:
    """The writers re-exported here, loaded on first use (`_LOADED_WHEN_USED`)."""
    module = _LOADED_WHEN_USED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "ReportExtras",
    "annotations",
    "append_step_summary",
    "await_result_reader",
    "close_result_reader",
    "finish_page",
    "forks_html",
    "reports_beside",
    "start_html",
    "write_extra_reports",
    "write_html",
]


# What went wrong with an output whose failure costs only itself (`ReportExtras.warned`).
WarningKind = Literal["fifo_unread", "summary_loop", "summary_not_appended"]


class ReportExtras(Record):
    """What `eb run` asked for beyond report.json/report.md, and what the run produced."""

    html: bool = True
    annotations: str | None = None
    environ: Mapping[str, str] = Field(default_factory=dict)
    annotation_stream: TextIO | None = None
    # Filled in by write_extra_reports, so the caller can stamp a result document even when
    # the run ends with an exception (RunAborted) after the reports were written.
    report: dict[str, Any] | None = None
    report_md: str | None = None
    # The history folder, for report.html's sparklines and badges (None: history is off).
    history_dir: Path | None = None
    # Its records for those marks when read already (None: the page reads them).
    history: Mapping[str, Any] | None = None
    written: list[Path] = Field(default_factory=list)
    # Whether the `--annotations github` lines were printed (an aborted run's abort among them).
    annotated: bool = False
    # The run's settings, to find the failed cases' dataset rows (None: the cases are named
    # by their check files).
    config: ConfigDoc | None = None
    # Check id -> where a failed case's row is, once found (`ReportExtras.case_places`).
    places: dict[str, Problem] | None = None
    # The first report the run could not write (report.html, the JUnit file): the run ends
    # with it (exit 3) once the console has shown the verdict (`tell_faults`).
    fault: WriteFault | LinkLoopError | None = None
    # report.html once finished (`finish_page`): whether it was, and the digest of the page
    # written (None: none asked for, or it could not be written).
    page_finished: bool = False
    page_digest: str | None = None
    # Whether the JUnit file was written, or tried (`finish_junit`): once per report stage.
    junit_finished: bool = False
    # report.html and the JUnit file when they could not be written, with why: recorded in
    # stages/report.json, so `eb status` calls the report stage stale and `eb update` writes
    # them again.
    faults: list[ReportFault] = Field(default_factory=list)
    # Outputs whose failure costs only themselves (the step summary): warnings to tell, each
    # with its fix when it has one.
    warnings: list[Problem] = Field(default_factory=list)
    # Which of them were added, by the output's path and the kind of warning: reports written
    # again (an interrupted run) meet the same output the same way, told once (`_warn_once`).
    warned: set[tuple[str, WarningKind]] = Field(default_factory=set)
    # Whether the run is stopping (a signal its handler only noted): a report waiting for the
    # project's turn is then written at once (reporting/projectturn.py).
    stop: Callable[[], bool] | None = None
    # `--result-out` naming a FIFO or device: its path, and the descriptor opened on it once
    # the run's reports are written, before the run's account is final (`await_result_reader`):
    # a signal while the FIFO waits for its reader then stops the run, which every report and
    # its record say, rather than a green account ending in exit 3. The command closes it.
    result_path: Path | None = None
    result_opened: int | None = None

    def begin_reports(self) -> None:
        """Ready for the report stage to write report.html and the JUnit file: a stage
        written again (the run interrupted while its reports were written) writes them again,
        and records the new page's digest and faults. The run's fault goes with them: a report
        the first pass could not write and this one writes is no fault of the run's (its JUnit
        file would tell it, and the run end with it, while stages/report.json records none)."""
        self.page_finished, self.junit_finished = False, False
        self.page_digest, self.faults, self.fault = None, [], None

    def tell_faults(self, *, warn: Callable[..., None]) -> None:
        """Warn of each output that could not be written (`warn(message, hint=...)`, as
        `Console.warn`), then raise the first report that could not (exit 3): called after the
        console summary, so the verdict is still shown."""
        for warning in self.warnings:
            warn(warning.message, hint=warning.hint)
        if self.fault is not None:
            raise self.fault

    def case_places(self, *, report: Mapping[str, Any]) -> dict[str, Problem]:
        """Where the failed cases' rows are, found when first asked: a run whose outputs
        name no failed case (a plain `--json` run) never reads its datasets again."""
        if self.places is None:
            if self.config is None:
                return {}
            from eval_banana.reporting.caseplaces import failed_case_places

            self.places = failed_case_places(report=report, config=self.config)
        return self.places


# Below this many checks report.html renders in a few hundredths of a second: not worth a fork.
HTML_FORK_CHECKS = 1_000


def forks_html(*, extras: ReportExtras | None, checks: int) -> bool:
    """Whether report.html is rendered in a forked child: asked for, and big enough to pay."""
    wanted = extras is None or extras.html
    return wanted and forked.worth_forking(items=checks, threshold=HTML_FORK_CHECKS)


def start_html(
    *, extras: ReportExtras | None, report: dict[str, Any], run_dir: Path
) -> forked.Pending[str] | None:
    """Begin report.html beside the rest of the report stage (forked where that pays), or
    None when the run asked for no HTML; `write_extra_reports` finishes it."""
    if extras is not None and not extras.html:
        return None
    from eval_banana.reporting.html import write_html  # loaded before a fork, not in it

    checks = report.get("checks")
    count = len(checks) if isinstance(checks, list) else 0
    history_dir = extras.history_dir if extras is not None else None
    history = extras.history if extras is not None else None
    return forked.start(
        work=lambda: write_html(
            report=report,
            run_dir=run_dir,
            path=run_dir / REPORT_HTML,
            history_dir=history_dir,
            history=history,
        ),
        fork=forks_html(extras=extras, checks=count),
    )


def _finish_html(
    *,
    html: forked.Pending[str] | None,
    report: dict[str, Any],
    run_dir: Path,
    path: Path,
    extras: ReportExtras,
) -> str:
    """Wait for the page begun by `start_html` (or render it here when none was begun); render
    it here too if its child was ended by a signal (Ctrl-C reaches the whole process group):
    an interrupted run keeps its page. The digest of the page written."""
    from eval_banana.reporting.html import write_html

    def render() -> str:
        return write_html(
            report=report,
            run_dir=run_dir,
            path=path,
            history_dir=extras.history_dir,
            history=extras.history,
        )

    if html is None:
        return render()
    return html.finish_or_redo(redo=render)


def finish_page(
    *,
    extras: ReportExtras,
    run_dir: Path,
    report: dict[str, Any],
    html: forked.Pending[str] | None = None,
) -> str | None:
    """report.html finished (begun by `start_html`, or rendered here) when the run asks for
    it, once: the digest of the page, which stages/report.json records so `eb status` sees it
    gone or edited; None when none was asked for or it could not be written (`extras.fault`
    then holds why, told after the verdict)."""
    if not extras.html or extras.page_finished:
        return extras.page_digest
    extras.page_finished = True
    path = run_dir / REPORT_HTML
    try:
        extras.page_digest = _finish_html(
            html=html, report=report, run_dir=run_dir, path=path, extras=extras
        )
    except (OSError, WriteFault, LinkLoopError) as exc:
        # A report CI reads is missing: a fault of the run (exit 3), never a setup error
        # (the checks ran); the rest is still written and the verdict still shown.
        if isinstance(exc, WriteFault):
            # An earlier page (`eb stage report`, `eb update`) would show the verdict it drew.
            exc = fault_clearing_earlier(fault=exc, path=path, fix=exc.hint)
        _note_fault(extras=extras, report="report.html", path=path, exc=exc)
        return None
    extras.written.append(path)
    return extras.page_digest


def finish_junit(
    *, extras: ReportExtras, run_dir: Path, report: dict[str, Any], junit_xml: str | None
) -> None:
    """The JUnit file (`junit_xml`: [core] junit_xml, --junit-xml) written when the run asks
    for it, once, after report.html: a page that could not be written is told in it (the run
    ends with exit 3). One that cannot be written is a fault of the run, told after the verdict
    and recorded in stages/report.json."""
    if not junit_xml or extras.junit_finished:
        return
    extras.junit_finished = True
    project_root = Path(str(report.get("project_root") or run_dir))
    path = junit_path(setting=junit_xml, project_root=project_root)
    try:
        # xml.etree is loaded only by runs that ask for JUnit.
        from eval_banana.reporting.junit import write_junit

        places = extras.case_places(report=report)
        # A FIFO's reader is waited for before the project's turn: no other run waits on it.
        with (
            _opened_into(extras=extras, path=path) as opened,
            _project_turn(extras=extras, path=path),
        ):
            write_junit(
                report=report,
                project_root=project_root,
                path=path,
                places=places,
                # report.html not written: the run ends with exit 3, which the file shows.
                fault=None if extras.fault is None else extras.fault.message,
                opened=opened,
                stop=extras.stop,
            )
    except InterruptedError:
        # Its FIFO's reader never came before a signal: the run is interrupted, which its
        # reports say once written again (pipeline/finish.py), not a fault of its own.
        _warn_once(
            extras=extras,
            path=path,
            kind="fifo_unread",
            warning=Problem(message=_unread(path=path)),
        )
    except (OSError, WriteFault, LinkLoopError) as exc:
        # As report.html's (`finish_page`): a fault of the run, told after the verdict.
        _note_fault(extras=extras, report="junit_xml", path=path, exc=exc)
    else:
        extras.written.append(path)


def reports_beside(
    *,
    extras: ReportExtras,
    run_dir: Path,
    report: dict[str, Any],
    junit_xml: str | None,
    html: forked.Pending[str] | None,
    earlier: WriteFault | None,
) -> "ReportsBeside":
    """report.html and the JUnit file, written by the report stage before stages/report.json,
    as that records them: the page's digest and the reports that could not be written.
    `earlier`: report.md's fault (None: written), the run's to end with (exit 3) and which the
    JUnit file tells, as a page's."""
    from eval_banana.stages.report import ReportsBeside  # the report stage loads it already

    if earlier is not None and extras.fault is None:
        extras.fault = earlier
    digest = finish_page(extras=extras, run_dir=run_dir, report=report, html=html)
    finish_junit(extras=extras, run_dir=run_dir, report=report, junit_xml=junit_xml)
    return ReportsBeside(page_digest=digest, faults=tuple(extras.faults))


def _note_fault(
    *,
    extras: ReportExtras,
    report: Literal["report.html", "junit_xml"],
    path: Path,
    exc: OSError | WriteFault | LinkLoopError,
) -> None:
    """A report that could not be written: recorded for stages/report.json with its cause,
    and the run's fault (exit 3) when it is the first."""
    fault = _report_fault(path=path, exc=exc)
    cause = fault.cause if isinstance(fault, WriteFault) else fault.message
    earlier = fault.earlier if isinstance(fault, WriteFault) else ""
    extras.faults.append(
        ReportFault(report=report, path=str(path), cause=cause, earlier=earlier or None)
    )
    if extras.fault is None:
        extras.fault = fault


def _report_fault(
    *, path: Path, exc: OSError | WriteFault | LinkLoopError
) -> WriteFault | LinkLoopError:
    """The fault of a report that could not be written, named by the report's own path (not
    the temporary file beside it)."""
    if isinstance(exc, (WriteFault, LinkLoopError)):
        return exc
    return WriteFault.at(path=path, exc=exc)


def _project_turn(
    *, extras: ReportExtras, path: Path | None
) -> contextlib.AbstractContextManager[None]:
    """The project's turn while `path` is written, when it lies inside the project: another
    run's judges running there would take it for their write (reporting/projectturn.py)."""
    if path is None:
        return contextlib.nullcontext()
    from eval_banana.reporting.projectturn import writing_into_project

    return writing_into_project(config=extras.config, paths=[path], stop=extras.stop)


def junit_path(*, setting: str, project_root: Path) -> Path:
    """`[core] junit_xml` / `--junit-xml`: a relative path is joined to the project root."""
    return junit_file(setting=setting, project_root=project_root)


def _summary_text(*, extras: ReportExtras) -> str:
    """report.md for the step summary; when report.html or the JUnit file could not be written,
    after a paragraph saying the run ends with exit 3 for it (report.md, written before them,
    keeps the verdict the checks earned)."""
    report_md = extras.report_md or ""
    if extras.fault is None:
        return report_md
    from eval_banana.reporttext.markdown import ended_after_report

    return ended_after_report(message=extras.fault.message) + report_md


def write_extra_reports(
    *,
    extras: ReportExtras | None,
    run_dir: Path,
    report: dict[str, Any],
    report_md: str,
    junit_xml: str | None,
    html: forked.Pending[str] | None = None,
) -> ReportExtras:
    """Write report.html (or finish `html`, begun by `start_html`) and the JUnit file, each
    unless `reports_beside` wrote it already, and the GitHub outputs asked for; return
    `extras`, holding what could not be written (`ReportExtras.tell_faults` tells it after the
    console summary)."""
    from eval_banana.reporting.github import annotations, append_step_summary, warning_annotations

    extras = extras if extras is not None else ReportExtras()
    extras.report, extras.report_md = report, report_md
    finish_page(extras=extras, run_dir=run_dir, report=report, html=html)
    finish_junit(extras=extras, run_dir=run_dir, report=report, junit_xml=junit_xml)
    if extras.annotations == "github":
        stream = extras.annotation_stream if extras.annotation_stream is not None else sys.stdout
        for line in [
            *annotations(report=report, places=extras.case_places(report=report)),
            *warning_annotations(
                report=report,
                before=extras.config.warnings if extras.config is not None else (),
            ),
        ]:
            print(line, file=stream)
        stream.flush()
        extras.annotated = True
    summary = extras.environ.get(STEP_SUMMARY_ENV)
    summary_path = Path(summary) if summary else None
    try:
        with (
            _opened_into(extras=extras, path=summary_path) as opened,
            _project_turn(extras=extras, path=summary_path),
        ):
            append_step_summary(
                report_md=_summary_text(extras=extras),
                environ=extras.environ,
                opened=opened,
                stop=extras.stop if extras.stop is not None else never_stop,
            )
    except OSError as exc:
        # A copy of report.md for the job's page, not a report CI reads: a container step can
        # pass the variable on without the runner's file, and that must not sink the verdict.
        named = Path(summary or "")
        if exc.errno == errno.ELOOP:  # told in the words of the other reports' refusal
            warning = problem_of(summary_loop(path=named))
            _warn_once(extras=extras, path=named, kind="summary_loop", warning=warning)
            return extras
        _warn_once(
            extras=extras,
            path=named,
            kind="summary_not_appended",
            warning=Problem(
                message=f"could not append the report to ${STEP_SUMMARY_ENV} "
                f"({extras.environ.get(STEP_SUMMARY_ENV)}): {exc.strerror or exc}; "
                "report.md in the run folder holds it"
            ),
        )
    return extras


def _unread(*, path: Path) -> str:
    return (
        f"{path} was not written: the run was stopped while it waited for a reader of the FIFO; "
        "the run folder's reports hold the run"
    )


def _warn_once(*, extras: ReportExtras, path: Path, kind: WarningKind, warning: Problem) -> None:
    """`warning` (of `kind`, about the output at `path`) added to those told after the
    summary, unless a pass before it (reports written again for an interrupted run) added one
    of that kind about that path already: its words may differ (another errno) for the same
    trouble, which is told once."""
    key = (str(path), kind)
    if key not in extras.warned:
        extras.warned.add(key)
        extras.warnings.append(warning)


def await_result_reader(*, extras: ReportExtras) -> None:
    """`--result-out` naming a FIFO: its reader waited for now, while a signal still makes the
    run an interrupted one (pipeline/finish.py), and the descriptor kept for the document; a
    signal meanwhile ends the wait, and the document is then written only if a reader comes
    by the time it is (`stamp_result`)."""
    if extras.result_path is None or extras.result_opened is not None:
        return
    from eval_banana.core.files import open_into

    stop = extras.stop if extras.stop is not None else never_stop
    # Stopped: the stopped run's document is tried once more, waiting for nothing.
    with contextlib.suppress(OSError):
        extras.result_opened = open_into(path=extras.result_path, stop=stop)


def close_result_reader(*, extras: ReportExtras) -> None:
    """The `--result-out` FIFO's descriptor closed, once the document is written (or not)."""
    if extras.result_opened is not None:
        with contextlib.suppress(OSError):
            os.close(extras.result_opened)
        extras.result_opened = None


@contextlib.contextmanager
def _opened_into(*, extras: ReportExtras, path: Path | None) -> Iterator[int | None]:
    """The FIFO or device at `path` opened once it has a reader (`open_into`; a signal ends
    the wait, InterruptedError), closed after; None for a file replaced whole, or no path."""
    if path is None:
        yield None
        return
    from eval_banana.core.files import open_into

    fd = open_into(path=path, stop=extras.stop if extras.stop is not None else never_stop)
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)
