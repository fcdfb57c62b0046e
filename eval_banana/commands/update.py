"""`eb update [STAGE]`: rerun exactly what `eb status` finds not ok, up to STAGE (like make)."""

from __future__ import annotations

import argparse
import os
import threading
from pathlib import Path

from eval_banana.commands import common
from eval_banana.settings.table import SETTINGS_BY_NAME
from eval_banana.stagefiles.layout import STAGE_NAMES

# `--cache-remote` here gives back the secret of the run's own shared cache URL, which
# stages/config.json records masked; it is no setting to change (an update keeps the run's).
_REMOTE = SETTINGS_BY_NAME["cache.remote"]


def _setting_flag_hints() -> dict[str, str]:
    """Each setting flag of `eb run` -> where it applies instead: an update reruns a run under
    the settings it was made with (docs/rerunning-stages.md)."""
    from eval_banana.pipeline.stagesettings import stage_reading
    from eval_banana.settings.table import SETTINGS

    flags = {
        str(spec.flag): spec.name
        for spec in SETTINGS
        if spec.flag is not None and "run" in spec.commands and spec.flag != _REMOTE.flag
    }
    switches = {str(spec.flag) for spec in SETTINGS if spec.kind == "boolean"}
    switches |= {"-x", "--exitfirst"}  # pytest's spelling of --maxfail 1
    flags["-x"] = flags["--exitfirst"] = "core.maxfail"
    hints: dict[str, str] = {}
    for flag, name in flags.items():
        given = flag if flag in switches else f"{flag} ..."
        hints[flag] = (
            "eb update takes no setting flags: it reruns the run with the settings it was made "
            f"with. To rerun the stage that reads it: `eb stage {stage_reading(name=name)} "
            f"{given}`; for a new run: `eb run {given}`"
        )
    return hints


# A setting flag, refused by name (its value would be taken for STAGE).
ELSEWHERE = _setting_flag_hints()

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
    parser.add_argument(
        str(_REMOTE.flag),
        dest="cache_remote",
        metavar=_REMOTE.metavar,
        help="The run's shared cache URL with its password, which stages/config.json records "
        f"masked (as {_REMOTE.env} gives it; the URL must be the one the run was made with).",
    )
    common.add_common(parser, selection=False)


def run(args: argparse.Namespace) -> int:
    from eval_banana.pipeline.rerun import StageRequest
    from eval_banana.pipeline.update import update_run
    from eval_banana.reporting.console import Console

    cancel = threading.Event()
    run_dir = common.resolve_run_dir(args)
    environ = dict(os.environ)
    if args.cache_remote:
        environ[str(_REMOTE.env)] = _own_remote(run_dir=run_dir, given=args.cache_remote)
    request = StageRequest(
        run_dir=run_dir,
        environ=environ,
        no_project_config=args.no_project_config,
        verbose=args.verbose,
        console=Console(),
        cancel=cancel,
    )
    with common.stop_on_signals(cancel):
        return update_run(request=request, target=args.stage)


def _own_remote(*, run_dir: Path, given: str) -> str:
    """`given`, when it is the URL the run recorded (masked the same way); else a usage error:
    an update reruns the run as it was configured, and another remote is another setting."""
    from eval_banana.core.errors import UsageError
    from eval_banana.core.secreturl import shown_url
    from eval_banana.models.stages import ConfigDoc
    from eval_banana.stagefiles.read import read_stage

    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    recorded = config.settings.cache.remote
    if recorded is not None and shown_url(given) == recorded:
        return given
    what = f"its shared cache is {recorded}" if recorded else "it used no shared cache"
    raise UsageError(
        f"{_REMOTE.flag} {shown_url(given)} is not the URL this run was made with: {what}",
        hint=f"give {_REMOTE.flag} the run's own URL with its password; to use another "
        "remote, run `eb run` with it",
    )
