"""`eb run`'s report flags: HTML, GitHub annotations and the `--result-out` document.

cli.py adds the flags with `add_report_arguments`, calls `prepare_report_options` before the
run (usage errors and a refused target stop here, before any config is loaded), and
`stamp_result` after the run or after its failure.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from eval_banana.core.realpaths import real_path
from eval_banana.core.version import tool_version
from eval_banana.reporting import ReportExtras, await_result_reader, close_result_reader

if TYPE_CHECKING:
    from eval_banana.models.stages import ConfigDoc
    from eval_banana.reporting.console import Console

# The result document and git observation (reporting.result_doc, reporting.gitobs) are imported
# only by runs that use --result-out or --provenance-field: every other run skips their cost.


class ResultOut(NamedTuple):
    """A `--result-out` request, checked, with the git state seen before the run."""

    path: Path
    fmt: str
    provenance: dict[str, str | None]
    observed_before: dict[str, str | None]
    cwd: Path


def prepare_report_options(
    *, args: argparse.Namespace, environ: Mapping[str, str]
) -> tuple[ReportExtras, ResultOut | None]:
    """Validate the report flags and, with --result-out, check the target and observe git."""
    as_json = bool(getattr(args, "json", False))
    extras = ReportExtras(
        html=not args.no_html,
        annotations=args.annotations,
        environ=dict(environ),
        annotation_stream=sys.stderr if as_json else sys.stdout,
    )
    if args.result_out is None and not args.provenance_field:
        return extras, None
    from eval_banana.reporting.gitobs import observe_git
    from eval_banana.reporting.result_doc import (
        build_provenance,
        check_result_target,
        parse_provenance_fields,
    )

    fields = parse_provenance_fields(values=list(args.provenance_field or []))
    if args.result_out is None:
        return extras, None
    path = Path(args.result_out)
    check_result_target(path=path, shown=args.result_out)
    extras.result_path = path
    cwd = real_path(args.cwd)
    return extras, ResultOut(
        path=path,
        fmt=args.result_format,
        provenance=build_provenance(attempt=args.provenance_attempt, fields=fields),
        observed_before=observe_git(cwd=cwd),
        cwd=cwd,
    )


def _float_or(value: object, default: float) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default


def _effective(
    *, report: dict[str, Any] | None, cli_values: Mapping[str, object], load: Callable[[], Any]
) -> tuple[float, str | None]:
    """(pass threshold, harness agent): from the config when it loads, else from the flags."""
    agent: object
    try:
        settings = load().settings
        threshold, agent = float(settings.core.pass_threshold), settings.harness.agent
    except Exception:  # the config never loaded: fall back to the flags
        threshold = _float_or(cli_values.get("core.pass_threshold"), 1.0)
        agent = cli_values.get("harness.agent")
    if report is not None:
        threshold = float(report.get("pass_threshold", threshold))
    return threshold, (str(agent) if agent else None)


def stamp_result(
    *,
    result_out: ResultOut | None,
    extras: ReportExtras,
    error: BaseException | None,
    cli_values: Mapping[str, object],
    load_config: Callable[[], Any],
) -> None:
    """Write the result document for a finished or failed run (nothing for usage errors)."""
    if result_out is None:
        return
    from eval_banana.reporting.gitobs import git_commit
    from eval_banana.reporting.result_doc import (
        build_result_document,
        classify_failure,
        failure_message,
        render_result,
        report_copy,
        write_result,
    )

    report = extras.report
    # extras.report is filled once report.json and report.md are written (`write_extra_reports`).
    reported = report is not None
    status = "completed" if error is None else classify_failure(error=error, reported=reported)
    if status is None:
        return
    threshold, agent = _effective(report=report, cli_values=cli_values, load=load_config)
    message = None if error is None else failure_message(error=error)
    document = build_result_document(
        status=status,
        report=report,
        error=message,
        pass_threshold=threshold,
        harness_family=agent,
        observed_before=result_out.observed_before,
        commit_after=git_commit(cwd=result_out.cwd),
        provenance=result_out.provenance,
        tool_version=tool_version(),
    )
    copied = None
    if report is not None and extras.report_md is not None:
        copied = report_copy(report=report, report_md=extras.report_md, error=message)
    text = render_result(document=document, report_md=copied, fmt=result_out.fmt)
    from eval_banana.reporting.projectturn import writing_into_project

    # A FIFO's reader waited for before the project's turn (or already, by `finish_run`).
    await_result_reader(extras=extras)
    try:
        with writing_into_project(config=extras.config, paths=[result_out.path], stop=extras.stop):
            write_result(
                path=result_out.path,
                text=text,
                opened=extras.result_opened,
                stop=extras.stop,
            )
    finally:
        close_result_reader(extras=extras)


def stamp_and_remember(
    *,
    stamp: Callable[..., None],
    error: BaseException | None,
    extras: ReportExtras,
    result_out: ResultOut | None,
    console: Console,
) -> None:
    """The result document written (`stamp`, a `stamp_result` given all but `error`), then the
    files the run wrote noted (`remember_outputs`), also when the document cannot be written (a
    full disk, a link a check made a loop): the reports written before it stand all the same.
    After a run that failed with `error`, which the run still ends with, the document's own
    failure is a warning; after a finished run it ends the run (exit 3), once the files are
    noted."""
    from eval_banana.core.errors import EvalBananaError

    try:
        stamp(error=error)
    except EvalBananaError as fault:
        if error is None:
            raise
        console.warn(fault.message, hint=fault.hint)
    finally:
        remember_outputs(extras=extras, result_out=result_out)


def remember_outputs(*, extras: ReportExtras, result_out: ResultOut | None) -> None:
    """Note the files this run (or merge) wrote beside its run folder inside the project (the
    JUnit file, --result-out, the step summary): a later run without those flags still counts
    them as eb's own while they hold what this run wrote (settings/written.py)."""
    config = extras.config
    if config is None:
        return
    from eval_banana.settings.folders import STEP_SUMMARY_ENV, junit_file
    from eval_banana.settings.written import remember_written

    paths = [Path(path) for path in config.outputs]
    junit = config.settings.core.junit_xml
    if junit:
        paths.append(junit_file(setting=junit, project_root=Path(config.project_root)))
    if result_out is not None:
        paths.append(result_out.path)
    summary = extras.environ.get(STEP_SUMMARY_ENV)
    if summary:
        paths.append(Path(summary))
    remember_written(config=config, paths=paths, key=lambda: _signing_key(config=config))


def _signing_key(*, config: ConfigDoc) -> bytes | None:
    """The verdict cache's secret, which signs the record of the files eb wrote; made (with
    the cache folder, marked as the cache makes it) when missing, but by a run whose cache is
    read-only, which makes no secret. None when there is none to use."""
    from eval_banana.cache.store import CacheStore
    from eval_banana.settings.folders import cache_dir

    store = CacheStore(folder=cache_dir(config=config), max_bytes=0)
    found = store.secret(create=config.settings.cache.mode != "read-only")
    return found if isinstance(found, bytes) else None
