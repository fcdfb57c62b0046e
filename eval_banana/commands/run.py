"""`eb run`: the whole pipeline; the exit code is the CI verdict."""

from __future__ import annotations

import argparse
import json
import os
import threading
from functools import partial

from eval_banana.commands import common
from eval_banana.errors import UsageError

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


def run(args: argparse.Namespace) -> int:
    from eval_banana.console import Console
    from eval_banana.pipeline import run_pipeline
    from eval_banana.reporting.runcli import prepare_report_options, stamp_result
    from eval_banana.request import load_config
    from eval_banana.rundir import new_run_id

    if args.flat_output and "core.output_dir" not in common.cli_values(args):
        raise UsageError("--flat-output requires an explicit --output-dir")
    extras, result_out = prepare_report_options(args=args, environ=os.environ)
    request = common.request(args, flat_output=args.flat_output, extras=extras)
    stamp = partial(
        stamp_result,
        result_out=result_out,
        extras=extras,
        cli_values=request.cli_values,
        load_config=lambda: load_config(request=request, run_id=new_run_id()),
    )
    cancel = threading.Event()
    console = Console(quiet=args.json)
    try:
        with common.stop_on_signals(cancel):
            outcome = run_pipeline(request=request, cancel=cancel, console=console)
    except BaseException as exc:
        stamp(error=exc)  # --result-out is written for every failure after option parsing
        raise
    stamp(error=None)
    if args.json:
        print(json.dumps(outcome.report, ensure_ascii=False))
    return outcome.exit_code
