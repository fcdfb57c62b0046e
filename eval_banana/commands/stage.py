"""`eb stage <name>`: rerun one stage from the files in a run folder."""

from __future__ import annotations

import argparse
import os
import threading

from eval_banana.commands import common
from eval_banana.stagefiles.layout import STAGE_NAMES

DESCRIPTION = (
    "Rerun one stage from the stage files in --run-dir and rewrite its output. "
    "`eb stage report` never executes a check."
)
EPILOG = common.EXIT_HELP


def configure(*, parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=STAGE_NAMES, help="The stage to rerun.")
    common.add_run_dir(parser)
    common.add_common(parser)
    common.add_setting_flags(parser, command="run")


def run(args: argparse.Namespace) -> int:
    from eval_banana.pipeline.rerun import StageRequest, rerun_stage
    from eval_banana.reporting.console import Console

    given = common.selection(args)
    cancel = threading.Event()
    request = StageRequest(
        run_dir=common.resolve_run_dir(args),
        cli_values=common.cli_values(args),
        environ=dict(os.environ),
        selection=given if common.selection_given(args) else None,
        no_project_config=args.no_project_config,
        verbose=args.verbose,
        settings_now=True,
        console=Console(),
        cancel=cancel,
    )
    with common.stop_on_signals(cancel):
        return rerun_stage(request=request, stage=args.name)
