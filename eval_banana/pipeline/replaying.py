"""`eb run` and the run replay (docs/incremental.md#replaying-a-whole-run): when a run may be
replayed, the replay itself as the console shows it, and keeping a finished run as one.

A run may use a replay when the verdict cache is read (`on`, `read-only`) and may keep one when
it is `on` (both unless `[cache] replay = false`); never with --flat-output (the folder's path is
not the run's own) or --changed-since (the selection follows a git revision, which no key names).
What only shows the result (--json, --no-html, the JUnit file, annotations, the step summary) is
no part of the key: the replay shows its results the way this run asks.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.cache.replay import Replayed, replay_run
from eval_banana.cache.replay_key import (
    replay_key,
    watched_datasets,
    watched_ids,
    watched_paths,
)
from eval_banana.cache.replay_record import RunTaken, record_replay
from eval_banana.cache.store import CacheStore
from eval_banana.checks.inputs import CheckInputs
from eval_banana.core import forked
from eval_banana.core.errors import OutputDirError
from eval_banana.core.files import sha256_bytes, write_bytes_atomic
from eval_banana.models.stages import ConfigDoc, DiscoverDoc, PlanDoc, ReportDoc, ReportFault
from eval_banana.pipeline.reporttargets import (
    ReportTarget,
    names_any,
    plan_files_read,
    refuse_reports_over,
)
from eval_banana.pipeline.request import RunRequest
from eval_banana.reporting import ReportExtras, write_extra_reports
from eval_banana.reporting.console import Console, ProgressReporter
from eval_banana.settings.folders import STEP_SUMMARY_ENV, cache_dir, history_dir
from eval_banana.stagefiles.layout import REPORT_HTML, REPORT_JSON
from eval_banana.stagefiles.read import read_stage
from eval_banana.stagefiles.write import write_stage_model

if TYPE_CHECKING:
    from eval_banana.history.trend import Recent


def key_for(*, config: ConfigDoc, discovered: DiscoverDoc, request: RunRequest) -> str | None:
    """The replay key of this run, or None when it may neither use nor keep a replay."""
    if (
        config.settings.cache.mode not in ("on", "read-only")
        or not config.settings.cache.replay
        or request.flat_output
        or config.selection.changed_since is not None
    ):
        return None
    return replay_key(config=config, discovered=discovered, environ=os.environ)


def replay(
    *,
    config: ConfigDoc,
    discovered: DiscoverDoc,
    run_dir: Path,
    digests: dict[str, str],
    key: str,
    request: RunRequest,
    cancel: threading.Event,
    console: Console,
    contents: Mapping[str, bytes],
    targets: list[ReportTarget],
) -> Replayed | None:
    """The run replayed into `run_dir` and reported, or None: it goes the usual way.
    `contents`: the check files' bytes as discovery read them."""
    extras = request.extras if request.extras is not None else ReportExtras()
    marks = _begin_marks(config=config, key=key, html=extras.html)
    try:
        attempt = replay_run(
            config=config,
            discovered=discovered,
            run_dir=run_dir,
            digests=digests,
            key=key,
            cancel=cancel,
            contents=contents,
            json_line=request.json_line,
            html=extras.html,
        )
    except BaseException:
        marks.abandon()
        raise
    if attempt.warning is not None:
        console.warn(attempt.warning)
    replayed = attempt.replayed
    if replayed is None:
        marks.abandon()
        return None
    try:
        # The replayed run's plan names the scripts and datasets it read, as the usual way's;
        # read back (a 1,000-case plan costs tens of ms) only to say which one a report is
        # named like: the kept run's watched files, read before, tell whether any is.
        if names_any(targets=targets, paths=replayed.watched):
            plan = read_stage(run_dir=run_dir, stage="validate")
            refuse_reports_over(
                targets=targets, read=plan_files_read(config=config, checks=plan.checks)
            )
    except BaseException:
        marks.abandon()
        raise
    ProgressReporter(console=console, total=len(replayed.progress)).replayed(
        lines=replayed.progress, folded=replayed.folded
    )
    console.notice(
        f"Replayed run {replayed.from_run_id}: every verdict is cached and nothing it read "
        "has changed (docs/incremental.md#replaying-a-whole-run)."
    )
    extras.config = config
    html = run_dir / REPORT_HTML
    # The kept run wrote no page (it ran with --no-html): render this run's from the replayed
    # report, as the usual way would from the same report.
    render_page = extras.html and not replayed.html
    if replayed.html:
        extras.page_digest = _redraw_marks(history=marks.finish(), page=html, console=console)
        extras.page_finished = True  # the outputs below leave it as it is
        extras.written.append(html)
    elif render_page:
        extras.history_dir = _history_folder(config=config)
        extras.history = marks.finish()
    else:
        marks.abandon()
    if render_page or _reads_report(config=config, extras=extras):
        write_extra_reports(
            extras=extras,
            run_dir=run_dir,
            report=replayed.load_report(),
            report_md=replayed.report_md,
            junit_xml=config.settings.core.junit_xml,
        )
    # stages/report.json came from the kept run's: it records this run's page (or none) and
    # the reports this run could not write.
    _record_beside(run_dir=run_dir, digest=extras.page_digest, faults=extras.faults)
    if not console.quiet:
        report = replayed.load_report()
        console.summary(
            report=report,
            report_path=run_dir / REPORT_JSON,
            html_path=html if html in extras.written else None,
            places=extras.case_places(report=report),
        )
    extras.tell_faults(warn=console.warn)
    return replayed


def _history_folder(*, config: ConfigDoc) -> Path | None:
    return None if config.settings.history.mode == "off" else history_dir(config=config)


def _begin_marks(*, config: ConfigDoc, key: str, html: bool) -> forked.Pending[dict[str, Recent]]:
    """Each check's recorded runs, as report.html's marks count them, read as the history is
    when the replay starts: in a forked child beside the replay where the records are big
    enough to pay (twenty records of 1,000 checks are most of a replay's time), and only
    when the run asks for report.html and a replay is kept under `key` (else the run goes
    the usual way, which reads them)."""
    folder = _history_folder(config=config)
    kept = CacheStore(folder=cache_dir(config=config), max_bytes=0).replay_path(key=key)
    if folder is None or not html or not kept.is_file():
        return forked.start(work=dict, fork=False)
    from eval_banana.reporting.marks import begin_recent_history, recent_history

    begun = begin_recent_history(run_id=config.run_id, history_dir=folder)
    if begun is not None:
        return begun
    return forked.start(
        work=lambda: recent_history(run_id=config.run_id, history_dir=folder), fork=False
    )


def _redraw_marks(*, history: dict[str, Recent], page: Path, console: Console) -> str:
    """Give the replayed report.html the history marks of now: the kept run's page drew the
    history of when it ran. Only its marks are redrawn (from the page's own history block),
    never the whole page: a replay stays a matter of filling in and linking files. The digest
    of the page as it is left."""
    from eval_banana.reporting.marks import NoMarks, redraw

    try:
        text = page.read_bytes()
        try:
            redrawn = redraw(page=text, history=history)
        except NoMarks as exc:
            console.warn(f"Kept the replayed {page} as it was kept: {exc}")
            return sha256_bytes(data=text)
        if redrawn is not text:
            write_bytes_atomic(path=page, data=redrawn)
        return sha256_bytes(data=redrawn)
    except OSError as exc:
        raise OutputDirError(f"Cannot write the HTML report to {page}: {exc}") from exc


def _record_beside(*, run_dir: Path, digest: str | None, faults: list[ReportFault]) -> None:
    """Record in stages/report.json the digest of report.html as the replay left it (None: no
    page) and the reports it could not write (the page, the JUnit file), when it records
    others: the replay filled the stage file in from the kept run's, before the page it brought
    had this run's values and marks."""
    doc: ReportDoc = read_stage(run_dir=run_dir, stage="report")
    if (doc.report_html_sha256, doc.report_faults) != (digest, faults):
        updated = doc.model_copy(update={"report_html_sha256": digest, "report_faults": faults})
        write_stage_model(run_dir=run_dir, stage="report", model=updated)


def _reads_report(*, config: ConfigDoc, extras: ReportExtras) -> bool:
    """Whether the outputs beyond the run folder need the report: a JUnit file, annotations,
    the GitHub step summary. Otherwise a replayed run never parses its report.json."""
    return bool(
        config.settings.core.junit_xml or extras.annotations or extras.environ.get(STEP_SUMMARY_ENV)
    )


class Recorder:
    """What keeping this run as a replay needs from before its checks run: the reader of the
    input states its verdict keys use, and the files its plan read, as they were then."""

    def __init__(
        self, *, config: ConfigDoc, plan: PlanDoc, key: str, contents: Mapping[str, bytes]
    ) -> None:
        self.key = key
        self.inputs = CheckInputs(
            config=config, definitions=[c.definition for c in plan.checks], known=contents
        )
        self.watched = watched_ids(paths=watched_paths(config=config, checks=plan.checks))
        self.datasets = watched_datasets(config=config, checks=plan.checks, contents=contents)

    @classmethod
    def begin(
        cls, *, config: ConfigDoc, plan: PlanDoc, key: str | None, contents: Mapping[str, bytes]
    ) -> Recorder | None:
        if key is None or config.settings.cache.mode != "on":
            return None
        return cls(config=config, plan=plan, key=key, contents=contents)

    def keep(self, *, run: RunTaken, console: Console) -> None:
        """Keep the finished run as the replay of its key, when it can be kept."""
        settings = run.config.settings
        store = CacheStore(
            folder=cache_dir(config=run.config), max_bytes=settings.cache.max_mb * 1024 * 1024
        )
        from eval_banana.isolation.state import cache_writes

        try:
            with cache_writes(cache=store.folder) as ours:
                # Not while another run's checks execute: its watch would blame them.
                if (
                    ours
                    and self.datasets is not None
                    and record_replay(
                        run=run,
                        key=self.key,
                        store=store,
                        inputs=self.inputs,
                        watched=self.watched,
                        datasets=self.datasets,
                    )
                ):
                    store.evict()
        except OSError as exc:
            console.warn(f"Cannot keep this run for replaying in {store.folder}: {exc}")
