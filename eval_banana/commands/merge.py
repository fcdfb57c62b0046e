"""`eb merge RUN_DIR...`: the shard runs of one plan as one run folder; exit code = verdict."""

from __future__ import annotations

import argparse
import os
import threading
from functools import partial
from pathlib import Path

from eval_banana.commands import common
from eval_banana.core.errors import UsageError

DESCRIPTION = (
    "Merge the run folders of `eb run --shard K/N` (every K of one N, each once) into one run "
    "folder, then score and report it as `eb run` would. The folders must be shards of one plan "
    "with the same pass threshold; anything else is refused (exit 2)."
)
EPILOG = common.EXIT_HELP


def configure(*, parser: argparse.ArgumentParser) -> None:
    from eval_banana.commands.report_flags import add_report_arguments

    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="A shard's run folder.")
    common.add_common(parser, selection=False)
    common.add_setting_flags(parser, command="merge")
    parser.add_argument(
        "--flat-output",
        action="store_true",
        help="Write the merged run straight into --output-dir (must be absent or empty).",
    )
    parser.add_argument(
        "--json", action="store_true", help="Print the report (or the error) as one JSON object."
    )
    add_report_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from eval_banana.pipeline.request import load_config
    from eval_banana.reporting.console import Console
    from eval_banana.reporting.runcli import (
        prepare_report_options,
        stamp_and_remember,
        stamp_result,
    )
    from eval_banana.scaleout.merge import MergeRequest, merge_shards
    from eval_banana.settings.rundir import new_run_id

    cli_values = common.cli_values(args)
    if args.flat_output and "core.output_dir" not in cli_values:
        raise UsageError("--flat-output requires an explicit --output-dir")
    extras, result_out = prepare_report_options(args=args, environ=os.environ)
    request = MergeRequest(
        run_dirs=[Path(path) for path in args.run_dirs],
        cwd=Path(args.cwd),
        cli_values=cli_values,
        environ=dict(os.environ),
        no_project_config=args.no_project_config,
        flat_output=args.flat_output,
        extras=extras,
        outputs=() if result_out is None else (result_out.path,),
    )
    stamp = partial(
        stamp_result,
        result_out=result_out,
        extras=extras,
        cli_values=cli_values,
        load_config=lambda: load_config(request=common.request(args), run_id=new_run_id()),
    )
    cancel = threading.Event()
    # A signal noted while a report waits for the project's turn writes it at once.
    extras.stop = cancel.is_set
    console = Console(quiet=args.json)
    finished = partial(
        stamp_and_remember, stamp=stamp, extras=extras, result_out=result_out, console=console
    )
    try:
        # As in `eb run`: a signal stops the merge, which still writes its reports, JUnit,
        # step summary and --result-out for an interrupted run (exit 3).
        with common.stop_on_signals(cancel):
            outcome = merge_shards(request=request, console=console, cancel=cancel)
    except BaseException as exc:
        # --result-out is written for every failure after option parsing; a signal meanwhile
        # ends its wait for the project's turn.
        with common.stop_on_signals(cancel):
            finished(error=exc)
        raise
    # A signal while the document waits for the project's turn writes it at once, and ends eb
    # as it would have a moment later (`Interrupted.`, exit 3).
    with common.signals_held_back(cancel):
        finished(error=None)
    if args.json:
        print(outcome.json_line)
    return outcome.exit_code
