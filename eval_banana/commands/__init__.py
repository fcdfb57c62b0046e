"""One module per `eb` subcommand: each has HELP, `configure(*, parser)` and `run(args) -> int`."""

from __future__ import annotations

from types import ModuleType


def all_commands() -> dict[str, ModuleType]:
    """Subcommand name -> module, in the order `eb --help` lists them."""
    from eval_banana.commands import init, listing, run, schema, stage, status, validate

    return {
        "init": init,
        "run": run,
        "list": listing,
        "validate": validate,
        "stage": stage,
        "status": status,
        "schema": schema,
    }
