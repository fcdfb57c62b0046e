"""`eb validate`: green only when `eb run` could start (B-82, B-83 [improve], D-9)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from eval_banana.commands import common


def configure(*, parser: argparse.ArgumentParser) -> None:
    common.add_common(parser)
    common.add_setting_flags(parser, command="validate")
    parser.add_argument(
        "--allow-empty", action="store_true", help="Succeed even when no check is found."
    )
    parser.add_argument(
        "--run-dir", help="Also write the config, discover, validate and guard stage files here."
    )
    parser.add_argument("files", nargs="*", help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from eval_banana.request import load_config
    from eval_banana.rundir import new_run_id
    from eval_banana.stages import discover as discover_stage
    from eval_banana.stages import guard as guard_stage
    from eval_banana.stages import validate as validate_stage
    from eval_banana.stages.config import write_config_stage

    config = load_config(request=common.request(args), run_id=new_run_id())
    run_dir = Path(args.run_dir).resolve() if args.run_dir else None
    digests: dict[str, str] = {}
    if run_dir is not None:
        (run_dir / "stages").mkdir(parents=True, exist_ok=True)
        digests["config"] = write_config_stage(run_dir=run_dir, doc=config)
    contents: dict[str, bytes] = {}
    discovered = discover_stage.discover(config=config, inputs=dict(digests), contents=contents)
    if run_dir is not None:
        digests["discover"] = discover_stage.write_discover_stage(run_dir=run_dir, doc=discovered)
    outcome = validate_stage.validate(
        config=config, discovered=discovered, inputs=dict(digests), contents=contents
    )
    if run_dir is not None:
        digests["validate"] = validate_stage.write_validate_stage(run_dir=run_dir, outcome=outcome)
    plan = outcome.plan
    problems = list(plan.errors)
    if args.allow_empty and [p.message for p in problems] == [validate_stage.NO_CHECKS]:
        print("Validated 0 checks successfully.")
        return 0
    # A plan whose only errors are missing scripts still has its checks: guard them too, so one
    # `eb validate` reports every problem at once.
    if plan.checks:
        guarded = guard_stage.guard(
            config=config,
            plan=plan,
            inputs={k: v for k, v in digests.items() if k in ("config", "validate")},
            mode="validate",
        )
        if run_dir is not None:
            guard_stage.write_guard_stage(run_dir=run_dir, doc=guarded)
        problems.extend(guarded.problems)
        for warning in guarded.warnings:
            print(f"warning: {warning.message}", file=sys.stderr)
    for warning in plan.warnings:
        print(f"warning: {warning.message}", file=sys.stderr)
    if problems:
        validate_stage.raise_problems(problems)
    skipped = len(plan.skipped)
    if skipped:
        # Skipped checks were validated too; say how many of them will not run.
        total = len(plan.checks) + skipped
        print(f"Validated {total} checks successfully ({skipped} skipped).")
    else:
        print(f"Validated {len(plan.checks)} checks successfully.")
    return 0
