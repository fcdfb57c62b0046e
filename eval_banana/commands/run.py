"""`eb run`: the whole pipeline; the exit code is the CI verdict."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval_banana.commands import common
from eval_banana.core.errors import UsageError

if TYPE_CHECKING:
    from eval_banana.diffing.summary import RunSummary

EPILOG = common.EXIT_HELP


def configure(*, parser: argparse.ArgumentParser) -> None:
    from eval_banana.commands.report_flags import add_report_arguments

    common.add_common(parser)
    common.add_incremental(parser)
    common.add_setting_flags(parser, command="run")
    parser.add_argument(
        "--flat-output",
        action="store_true",
        help="Write the run straight into --output-dir (must be absent or empty).",
    )
    parser.add_argument(
        "--json", action="store_true", help="Print the report (or the error) as one JSON object."
    )
    add_report_arguments(parser)
    add_select_arguments(parser)
    parser.add_argument(
        "--baseline",
        metavar="RUN_DIR",
        help="An earlier run folder (or 'latest', the newest finished run, read before this "
        "run starts): print the diff against it after the summary and write diff.json into "
        "the run folder. The exit code stays this run's verdict.",
    )


def add_select_arguments(parser: argparse.ArgumentParser) -> None:
    """--select and --allow-stale-plan: run exactly the checks a scheduler handed this worker."""
    parser.add_argument(
        "--select",
        metavar="FILE",
        help="Run exactly the checks FILE names ('-': standard input): an `eb plan --format "
        "json` document, a JSON list of ids, or one id per line. Every id must be in this "
        "run's selection. With --shard K/N, part K of them (the plan's own split when it was "
        "made with --shards N). See docs/scale-out.md.",
    )
    parser.add_argument(
        "--allow-stale-plan",
        action="store_true",
        help="With --select PLAN: run although the plan's checks changed since `eb plan`.",
    )


def run(args: argparse.Namespace) -> int:
    from eval_banana.pipeline.request import load_config
    from eval_banana.pipeline.run import run_pipeline
    from eval_banana.reporting.console import Console
    from eval_banana.reporting.runcli import (
        prepare_report_options,
        stamp_and_remember,
        stamp_result,
    )
    from eval_banana.settings.rundir import new_run_id

    if args.flat_output and "core.output_dir" not in common.cli_values(args):
        raise UsageError("--flat-output requires an explicit --output-dir")
    if args.allow_stale_plan and args.select is None:
        raise UsageError("--allow-stale-plan needs --select PLAN")
    extras, result_out = prepare_report_options(args=args, environ=os.environ)
    baseline = _read_baseline(args) if args.baseline else None
    request = common.request(
        args,
        flat_output=args.flat_output,
        extras=extras,
        outputs=() if result_out is None else (result_out.path,),
    )
    stamp = partial(
        stamp_result,
        result_out=result_out,
        extras=extras,
        cli_values=request.cli_values,
        load_config=lambda: load_config(request=request, run_id=new_run_id()),
    )
    cancel = threading.Event()
    # A signal noted while a report waits for the project's turn writes it at once.
    extras.stop = cancel.is_set
    console = Console(quiet=args.json)
    finished = partial(
        stamp_and_remember, stamp=stamp, extras=extras, result_out=result_out, console=console
    )
    try:
        with common.stop_on_signals(cancel):
            outcome = run_pipeline(request=request, cancel=cancel, console=console)
    except BaseException as exc:
        # --result-out is written for every failure after option parsing; a signal meanwhile
        # ends its wait for the project's turn, as during the run.
        with common.stop_on_signals(cancel):
            finished(error=exc)
        if baseline is not None and extras.report is not None:
            _show_diff(baseline=baseline, report=extras.report, quiet=args.json)  # aborted run
        raise
    if result_out is not None and extras.report is None:
        extras.report = outcome.report  # a replayed run reads its report when asked for it
    try:
        # A signal while the document waits for the project's turn writes it at once, and
        # ends eb as it would have a moment later (`Interrupted.`, exit 3).
        with common.signals_held_back(cancel):
            finished(error=None)
    finally:  # a document that could not be written ends the run after the diff is shown
        if baseline is not None:
            _show_diff(baseline=baseline, report=outcome.report, quiet=args.json)
    if args.json:
        # After diff.json: the files are written before anything is said on stdout.
        print(outcome.json_line)
    return outcome.exit_code


def _read_baseline(args: argparse.Namespace) -> RunSummary:
    """The baseline run, read before anything runs: a wrong folder must not cost a whole run."""
    from eval_banana.commands.diff import resolve_run
    from eval_banana.diffing.summary import load_run

    return load_run(run_dir=resolve_run(args, given=args.baseline))


def _show_diff(*, baseline: RunSummary, report: dict[str, Any], quiet: bool) -> None:
    """diff.json in the run folder; the text diff after the summary (not with --json)."""
    from eval_banana.diffing.compare import compare
    from eval_banana.diffing.narrowed import read_narrowed
    from eval_banana.diffing.render import render_text, write_diff
    from eval_banana.diffing.summary import summarize_report
    from eval_banana.stagefiles.layout import REPORT_JSON

    run_dir = Path(str(report["output_dir"]))
    head = summarize_report(
        report=report,
        path=run_dir / REPORT_JSON,
        run_dir=run_dir,
        narrowed=read_narrowed(run_dir=run_dir),
    )
    diff = compare(base=baseline, head=head)
    write_diff(run_dir=run_dir, diff=diff)
    if not quiet:
        sys.stdout.write(render_text(diff))
        sys.stdout.flush()
