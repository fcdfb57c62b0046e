"""One module per `eb` subcommand: each has `configure(*, parser)` and `run(args) -> int`.

The names and one-line helps live here, so `eb <command>` imports only its own module.

The top of the house.

May import: scaleout, pipeline, publish, diffing, reporting, stages, cache, incremental,
calibration, remote, history, isolation, runners, stagefiles, checks, datasets, settings, models
and core.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# Subcommand -> (module, one-line help), in the order `eb --help` lists them.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": (
        "eval_banana.commands.init",
        "Write .eval-banana/config.toml, an example check and an example dataset family.",
    ),
    "run": ("eval_banana.commands.run", "Run the checks and write the reports."),
    "list": (
        "eval_banana.commands.listing",
        "List the discovered checks (id, type, description, path).",
    ),
    "validate": (
        "eval_banana.commands.validate",
        "Validate every check definition without running anything.",
    ),
    "plan": (
        "eval_banana.commands.plan",
        "Print what `eb run` would execute (cache status, expected time, shards); run nothing.",
    ),
    "calibrate": (
        "eval_banana.commands.calibrate",
        "Run each judge on its calibration cases; record how often it agreed.",
    ),
    "merge": (
        "eval_banana.commands.merge",
        "Merge the run folders of `eb run --shard K/N` (or --select parts) into one run; "
        "exit code = verdict.",
    ),
    "diff": (
        "eval_banana.commands.diff",
        "Compare two runs check by check: regressions, fixes, new and removed checks.",
    ),
    "stage": ("eval_banana.commands.stage", "Rerun one stage from the files in a run folder."),
    "status": (
        "eval_banana.commands.status",
        "Show each stage file: ok, missing, invalid, failed or stale.",
    ),
    "update": (
        "eval_banana.commands.update",
        "Rerun exactly the stale stages of a run (and only the changed checks), like make.",
    ),
    "history": (
        "eval_banana.commands.history",
        "Each check over the last runs: outcomes, flips, durations, cost; `import` gathers "
        "other runners' records.",
    ),
    "cache": (
        "eval_banana.commands.cache",
        "Look after the verdict cache: stats, prune, push (to the shared cache), verify.",
    ),
    "schema": (
        "eval_banana.commands.schema",
        "Print a published JSON Schema (check, config, report, stages/<stage>...).",
    ),
}

# The commands that run checks or rewrite a run: a file they cannot write aborts the run. The
# others (`eb list`, `eb status`...) say only what could not be written.
RUN_COMMANDS = frozenset({"run", "calibrate", "merge", "stage", "update"})


def command_module(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name][0])
