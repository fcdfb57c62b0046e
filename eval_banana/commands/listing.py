"""`eb list`: one TSV line per selected check (id, type, description, file)."""

from __future__ import annotations

import argparse

from eval_banana.commands import common


def configure(*, parser: argparse.ArgumentParser) -> None:
    common.add_common(parser)
    common.add_incremental(parser)
    parser.add_argument(
        "--inputs",
        action="store_true",
        help="Below each check, show the files its `inputs:` patterns match now.",
    )
    common.add_setting_flags(parser, command="list")


def run(args: argparse.Namespace) -> int:
    from eval_banana.request import load_config
    from eval_banana.rundir import new_run_id
    from eval_banana.stages.discover import discover
    from eval_banana.stages.validate import NO_CHECKS, validate

    config = load_config(request=common.request(args), run_id=new_run_id())
    contents: dict[str, bytes] = {}
    discovered = discover(config=config, inputs={}, contents=contents)
    outcome = validate(config=config, discovered=discovered, inputs={}, contents=contents)
    plan = outcome.plan
    # An empty selection lists nothing and is not an error here (B-79).
    if not plan.ok and [problem.message for problem in plan.errors] != [NO_CHECKS]:
        outcome.raise_if_failed()
    details: list[list[str]] = [[] for _ in plan.checks]
    if args.inputs:
        from eval_banana.inputstate import input_lines

        details = input_lines(config=config, definitions=[c.definition for c in plan.checks])
    for check, lines in zip(plan.checks, details, strict=True):
        print(f"{check.id}\t{check.type}\t{check.description}\t{check.source_path}")
        for line in lines:
            print(line)
    return 0
