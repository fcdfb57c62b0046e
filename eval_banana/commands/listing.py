"""`eb list`: one TSV line per selected check (id, type, description, file)."""

from __future__ import annotations

import argparse

from eval_banana.commands import common


def configure(*, parser: argparse.ArgumentParser) -> None:
    common.add_common(parser)
    common.add_setting_flags(parser, command="list")


def run(args: argparse.Namespace) -> int:
    from eval_banana.request import load_config
    from eval_banana.rundir import new_run_id
    from eval_banana.stages.discover import discover
    from eval_banana.stages.validate import NO_CHECKS, validate

    config = load_config(request=common.request(args), run_id=new_run_id())
    contents: dict[str, bytes] = {}
    discovered = discover(config=config, inputs={}, contents=contents)
    outcome = validate(
        config=config, discovered=discovered, inputs={}, contents=contents, require_scripts=False
    )
    plan = outcome.plan
    # An empty selection lists nothing and is not an error here (B-79).
    if not plan.ok and [problem.message for problem in plan.errors] != [NO_CHECKS]:
        outcome.raise_if_failed()
    for check in plan.checks:
        print(f"{check.id}\t{check.type}\t{check.description}\t{check.source_path}")
    return 0
