"""`eb list`: one TSV line per selected check (id, type, description, file).

A check whose file says `skip:` gets a fifth column, `skipped: <reason>`. Files are shown
relative to the project root; the count and the root go to stderr, so the TSV stays clean.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import PurePath

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
    from eval_banana.pipeline.request import load_config
    from eval_banana.settings.rundir import new_run_id
    from eval_banana.stages.discover import discover
    from eval_banana.stages.validate import NO_CHECKS, validate

    config = load_config(request=common.request(args), run_id=new_run_id())
    contents: dict[str, bytes] = {}
    if config.selection.changed_since is not None:
        from eval_banana.incremental.changed import prefetch

        prefetch(config=config)  # git compares while the check files are found and read
    discovered = discover(config=config, inputs={}, contents=contents)
    for message in common.project_warnings(config=config, discovered=discovered):
        print(f"warning: {message}", file=sys.stderr)
    outcome = validate(
        config=config, discovered=discovered, inputs={}, contents=contents, require_scripts=False
    )
    plan = outcome.plan
    # An empty selection lists nothing and is not an error here, as in eval-banana
    # (docs/compatibility.md#validation-and-selection).
    if not plan.ok and [problem.message for problem in plan.errors] != [NO_CHECKS]:
        outcome.raise_if_failed()
    details: dict[str, list[str]] = {}
    if args.inputs:
        from eval_banana.checks.inputs import input_lines

        lines = input_lines(config=config, definitions=[c.definition for c in plan.checks])
        details = {check.id: found for check, found in zip(plan.checks, lines, strict=True)}
    root = config.project_root
    rows = [
        (
            check.source_path,
            check.id,
            _line(check.id, check.type, check.description, _shown(check.source_path, root)),
        )
        for check in plan.checks
    ]
    rows += [
        (
            item.source_path,
            item.check_id,
            _line(item.check_id, item.check_type, item.description, _shown(item.source_path, root))
            + f"\tskipped: {_one_line(item.reason)}",
        )
        for item in plan.skipped
    ]
    for _, check_id, line in sorted(rows, key=lambda row: row[0]):
        print(line)
        for detail in details.get(check_id, []):
            print(detail)
    sys.stdout.flush()
    print(
        _count_line(checks=len(plan.checks), skipped=len(plan.skipped), root=root), file=sys.stderr
    )
    return 0


def _shown(source: str, root: str) -> str:
    """A check file relative to the project root (`/`-separated); absolute when outside it."""
    try:
        return PurePath(source).relative_to(root).as_posix()
    except ValueError:
        return source


def _count_line(*, checks: int, skipped: int, root: str) -> str:
    noun = "check" if checks == 1 else "checks"
    extra = f" and {skipped} skipped" if skipped else ""
    return f"{checks} {noun}{extra} listed (project root: {root})"


def _line(*fields: str) -> str:
    return "\t".join(fields)


def _one_line(text: str) -> str:
    """A skip reason in one TSV cell: tabs and line breaks become spaces."""
    return " ".join(text.split())
