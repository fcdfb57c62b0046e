"""`eb update [STAGE]`: rerun exactly what `eb status` finds not ok, up to STAGE (like make)."""

from __future__ import annotations

import argparse
import os
import threading

from eval_banana.commands import common
from eval_banana.stagefiles.layout import STAGE_NAMES

DESCRIPTION = (
    "Rerun, in pipeline order, exactly the stages of --run-dir that `eb status` finds stale, "
    "missing or invalid, up to STAGE (default: report), and say why. Within execute only the "
    "checks whose definition, script or `inputs:` files changed since their result was "
    "recorded run again; the others keep their results. A rerun of config keeps the setting "
    "flags the run was made with; to rerun a stage with other settings, use `eb stage`."
)
EPILOG = common.EXIT_HELP


def configure(*, parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "stage",
        nargs="?",
        default="report",
        choices=STAGE_NAMES,
        metavar="STAGE",
        help="The last stage to bring up to date (default: report).",
    )
    common.add_run_dir(parser)
    common.add_common(parser, selection=False)


def run(args: argparse.Namespace) -> int:
    from eval_banana.pipeline.rerun import StageRequest
    from eval_banana.pipeline.update import update_run
    from eval_banana.reporting.console import Console

    cancel = threading.Event()
    request = StageRequest(
        run_dir=common.resolve_run_dir(args),
        environ=dict(os.environ),
        no_project_config=args.no_project_config,
        verbose=args.verbose,
        console=Console(),
        cancel=cancel,
    )
    with common.stop_on_signals(cancel):
        return update_run(request=request, target=args.stage)
