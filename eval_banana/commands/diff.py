"""`eb diff [BASE [HEAD]]`: two runs compared check by check (by default the project's last
two); exit 1 when something regressed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.commands import common
from eval_banana.core.realpaths import real_path

if TYPE_CHECKING:
    from eval_banana.models.stages import ConfigDoc

DESCRIPTION = (
    "Compare two run folders check by check: regressions (passed before, failed, errored or "
    "not run now; and new checks that do not pass), fixes, still failing, new and removed "
    "checks, changed definitions, and the score deltas. Exit 1 when there is a regression."
)
EPILOG = """exit codes:
  0  no regression
  1  at least one regression
  2  setup or usage error: a folder is not a run, or its report cannot be read
"""
LATEST = "latest"
PREVIOUS = "previous"  # the run before the newest


def configure(*, parser: argparse.ArgumentParser) -> None:
    from eval_banana.diffing.render import FORMATS

    parser.add_argument(
        "base",
        metavar="BASE",
        nargs="?",
        default=PREVIOUS,
        help=f"Run folder of the earlier run, '{LATEST}' or '{PREVIOUS}' (default): the "
        "finished run before the newest under the output folder of the project found from "
        "--cwd.",
    )
    parser.add_argument(
        "head",
        metavar="HEAD",
        nargs="?",
        default=LATEST,
        help=f"Run folder of the run to judge, or '{LATEST}' (default): the newest finished run "
        "(one with its report.json) under the output folder of the project found from --cwd. "
        "`eb diff` alone compares the last two finished runs.",
    )
    common.add_format(
        parser,
        choices=tuple(FORMATS),
        default="text",
        help="text (default), md (for a pull-request comment) or json (eb schema diff).",
    )
    common.add_common(parser, selection=False)


def resolve_run(args: argparse.Namespace, *, given: str) -> Path:
    """A run folder as given, or one of the project's newest two finished runs (found from
    --cwd)."""
    if given not in (LATEST, PREVIOUS):
        return real_path(given)
    from eval_banana.core.errors import RunFolderError
    from eval_banana.pipeline.request import load_config
    from eval_banana.settings.rundir import new_run_id, newest_finished_runs

    config = load_config(request=common.request(args), run_id=new_run_id())
    wanted = 1 if given == LATEST else 2
    runs = newest_finished_runs(config=config, count=wanted)
    if len(runs) < wanted:
        found = "no finished run found" if not runs else "only one finished run found"
        raise RunFolderError(
            f"'{given}': {found} under {config.settings.core.output_dir} "
            f"(project {config.project_root}){_unfinished(config=config)}",
            hint="Run `eb run` first, or pass a run folder."
            if not runs
            else "Run `eb run` again to have two runs to compare, or pass the earlier run's "
            "folder as BASE.",
        )
    return runs[0]


def _unfinished(*, config: ConfigDoc) -> str:
    """What the message adds about the run folders passed over for want of a report.json."""
    from eval_banana.settings.rundir import is_finished_run, run_dirs

    count = sum(not is_finished_run(folder=run) for run in run_dirs(config=config))
    if not count:
        return ""
    folders = "1 run folder there has" if count == 1 else f"{count} run folders there have"
    return f"; {folders} no report.json (still running, or stopped before its report)"


def run(args: argparse.Namespace) -> int:
    from eval_banana.diffing.compare import compare
    from eval_banana.diffing.render import RENDERERS
    from eval_banana.diffing.summary import load_run

    base = load_run(run_dir=resolve_run(args, given=args.base))
    head = load_run(run_dir=resolve_run(args, given=args.head))
    diff = compare(base=base, head=head)
    sys.stdout.write(RENDERERS[args.format](diff))
    return 1 if diff.regressed else 0
