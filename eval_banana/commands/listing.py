"""`eb list`: one TSV line per selected check (id, type, description, file).

A check whose file says `skip:` gets a fifth column, `skipped: <reason>`. Files are shown
relative to the project root; the count and the root go to stderr, so the TSV stays clean.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import PurePath
from typing import TYPE_CHECKING

from eval_banana.commands import common
from eval_banana.core.words import visible

if TYPE_CHECKING:
    from eval_banana.models.stages import PlanDoc


# The flags of other commands' machine-readable output: eb list's is its TSV lines.
_AS_JSON = (
    "eb list prints tab-separated lines; `eb plan --json` prints the same selection as JSON "
    "(each check's id, family, type, file and digest)"
)
ELSEWHERE = {"--json": _AS_JSON, "--format": _AS_JSON}


def configure(*, parser: argparse.ArgumentParser) -> None:
    common.add_common(parser)
    common.add_incremental(parser)
    parser.add_argument(
        "--inputs",
        action="store_true",
        help="Below each check, show the files its `inputs:` patterns match now.",
    )
    parser.add_argument(
        "--cases",
        action="store_true",
        help="List every case of a dataset family (by default a family is one line with its "
        "case count).",
    )
    common.add_setting_flags(parser, command="list")


def run(args: argparse.Namespace) -> int:
    from eval_banana.pipeline.request import load_config
    from eval_banana.settings.rundir import new_run_id
    from eval_banana.stages.discover import discover
    from eval_banana.stages.validate import validate

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
    if plan.warnings:  # what the selection warns of, as `eb run` says it before it starts
        from eval_banana.reporting.console import Console

        Console().warn_each(plan.warnings)
    # An empty selection lists nothing and is not an error here, as in eval-banana
    # (docs/compatibility.md#validation-and-selection).
    if not plan.ok and not plan.no_checks:
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
            _line(
                item.check_id,
                item.check_type,
                item.description,
                _shown(item.source_path, root),
                f"skipped: {item.reason}",
            ),
        )
        for item in plan.skipped
    ]
    if not args.cases:
        rows = _families_folded(rows=rows, plan=plan, root=root)
        # A folded family shows its inputs once: every case declares the family's patterns.
        for check in plan.checks:
            if check.family is not None and check.id in details:
                details.setdefault(check.family, details[check.id])
    for _, check_id, line in sorted(rows, key=lambda row: row[0]):
        print(line)
        for detail in details.get(check_id, []):
            print(detail)
    sys.stdout.flush()
    print(_count_line(plan=plan, root=root), file=sys.stderr)
    return 0


def _families_folded(
    *, rows: list[tuple[str, str, str]], plan: PlanDoc, root: str
) -> list[tuple[str, str, str]]:
    """Each dataset family's case rows as one row: its id, type, case count and file."""
    from eval_banana.core.caseid import family_of
    from eval_banana.core.words import plural

    planned: dict[str, list[str]] = {}
    skipped: dict[str, int] = {}
    for check in plan.checks:
        if check.family is not None:
            planned.setdefault(check.family, []).append(check.type)
    for item in plan.skipped:
        family = family_of(item.check_id)
        if family is not None:
            skipped[family] = skipped.get(family, 0) + 1
            planned.setdefault(family, []).append(item.check_type)
    folded: list[tuple[str, str, str]] = []
    shown: set[str] = set()
    for source, check_id, line in rows:
        family = family_of(check_id)
        if family is None or family not in planned:
            folded.append((source, check_id, line))
            continue
        if family in shown:
            continue
        shown.add(family)
        count = len(planned[family])
        extra = f", {skipped[family]} skipped" if family in skipped else ""
        running = count - skipped.get(family, 0)
        size = plan.family_sizes.get(family, running)
        if size > running:
            # A selection took part of the family (-k, --check-id, --subset, --shard): say so,
            # as a run's family line does, rather than read as the family's size.
            told = f"{running:,} of its {size:,} cases selected"
        else:
            told = plural(count=count, noun="case")
        text = f"dataset family: {told}{extra} (eb list --cases shows each)"
        folded.append(
            (source, family, _line(family, planned[family][0], text, _shown(source, root)))
        )
    return folded


def _shown(source: str, root: str) -> str:
    """A check file relative to the project root (`/`-separated); absolute when outside it."""
    try:
        return PurePath(source).relative_to(root).as_posix()
    except ValueError:
        return source


def _count_line(*, plan: PlanDoc, root: str) -> str:
    """How many checks were listed; with families, how many of them are their cases (a list
    of four rows under "9 checks listed" would otherwise read as a miscount)."""
    from eval_banana.core.caseid import family_of

    checks, skipped = len(plan.checks), len(plan.skipped)
    noun = "check" if checks == 1 else "checks"
    extra = f" and {skipped} skipped" if skipped else ""
    families: dict[str, int] = {}
    for check_id in [check.id for check in plan.checks] + [item.check_id for item in plan.skipped]:
        family = family_of(check_id)
        if family is not None:
            families[family] = families.get(family, 0) + 1
    cases = ""
    if families:
        of = "dataset family" if len(families) == 1 else "dataset families"
        # With skipped checks listed too, "of them" would read as "of the checks".
        among = f"of these {checks + skipped:,} are" if skipped else "of them"
        cases = f", {sum(families.values()):,} {among} the cases of {len(families):,} {of}"
    return f"{checks:,} {noun}{extra} listed{cases} (project root: {root})"


_BREAKS = re.compile(r"[\t\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")


def _line(*fields: str) -> str:
    """One TSV line: a field's own tabs and line breaks (a `description: |` block, a dataset
    cell with a line break) become spaces, or they would cut the line."""
    return "\t".join(_one_line(field) for field in fields)


def _one_line(field: str) -> str:
    """A field on one line, each other control character (an ESC that clears the screen or
    retitles the terminal) and bidirectional control shown as its escape, as `eb run` shows a
    reason; a field without line breaks keeps its spaces as written."""
    return visible(" ".join(field.split()) if _BREAKS.search(field) else field)
