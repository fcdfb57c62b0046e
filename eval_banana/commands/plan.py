"""`eb plan`: what `eb run` with the same flags would execute, and where; nothing runs."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from eval_banana.commands import common
from eval_banana.core.errors import UsageError
from eval_banana.core.words import plural
from eval_banana.models.config import MAX_SHARDS

if TYPE_CHECKING:
    from eval_banana.models.plan import PlanDocument

DESCRIPTION = (
    "Print the checks `eb run` with the same selection flags would execute, in its order, each "
    "with its family, type, definition digest, cache status and expected duration and cost; "
    "and the plan digest. Validated as `eb run` validates (exit 2 on a setup error); nothing "
    "runs and no run folder is written. `eb run --select` runs a plan or a part of it."
)


def configure(*, parser: argparse.ArgumentParser) -> None:
    common.add_common(parser)
    common.add_incremental(parser)
    # eb run's own setting flags: a scheduler passes the plan the flags its workers get, and
    # the ones that shape a cache key (--cache, --repeats, the agent) shape the plan's statuses.
    common.add_setting_flags(parser, command="run")
    common.add_format(
        parser,
        choices=("table", "json"),
        default="table",
        help="A table (default) or one JSON document (`eb schema plan`).",
    )
    parser.add_argument(
        "--shards",
        type=int,
        metavar="N",
        help="Also deal the checks into N shards: each check's shard and each shard's "
        "expected total (`eb run --select PLAN --shard K/N` runs part K).",
    )
    # --balance is eb run's own setting flag ([core] shard_balance): how --shards deals.


def run(args: argparse.Namespace) -> int:
    from eval_banana.scaleout.plan import PlanRequest, build_plan

    if args.shards is not None and not 1 <= args.shards <= MAX_SHARDS:
        raise UsageError(
            f"--shards {args.shards}: N must lie between 1 and {MAX_SHARDS:,}",
            hint="e.g. --shards 3",
        )
    if args.shards is not None and args.shard is not None:
        raise UsageError(
            "--shards N and --shard K/N cannot be combined",
            hint="Plan the whole selection with --shards N; a worker runs part K with "
            "`eb run --select PLAN --shard K/N`.",
        )
    document = build_plan(request=PlanRequest(run=common.request(args), shards=args.shards))
    if args.format == "json":
        sys.stdout.write(json.dumps(document.model_dump(by_alias=True), ensure_ascii=False))
        sys.stdout.write("\n")
    else:
        _print_table(document=document)
    return 0


def _number(value: float | None, *, unit: str = "") -> str:
    return "-" if value is None else f"{value:.2f}{unit}"


def _print_table(*, document: PlanDocument) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"eb plan: {plural(count=len(document.checks), noun='check')}")
    # An id is never cut short (a reader copies it into --check-id); the other columns give way.
    longest = max((len(entry.id) for entry in document.checks), default=2)
    table.add_column("#")
    table.add_column("id", no_wrap=True, min_width=longest)
    for column in ("family", "type", "definition", "cache", "expected", "cost"):
        table.add_column(column)
    if document.shards is not None:
        table.add_column("shard")
    for position, entry in enumerate(document.checks, start=1):
        row = [
            str(position),
            entry.id,
            entry.family or "-",
            entry.type,
            entry.definition_digest.removeprefix("sha256:")[:12],
            entry.cache,
            _number(entry.expected_seconds, unit="s"),
            _number(entry.expected_cost_usd),
        ]
        if document.shards is not None:
            row.append(str(entry.shard))
        # Text, not markup: a case id's `[ship]` would otherwise be read as a style and dropped.
        table.add_row(*(Text(cell) for cell in row))
    # Piped or in a CI log Rich would assume 80 columns and cut the type and family names
    # short; the table is as wide as its cells need there (a terminal keeps its own width).
    console = Console(soft_wrap=True, markup=False, width=None if sys.stdout.isatty() else 250)
    console.print(table)
    for total in document.shard_totals:
        console.print(
            f"shard {total.index}/{document.shards}: {plural(count=total.checks, noun='check')}, "
            "expected "
            f"{_number(total.expected_seconds, unit='s')}, cost "
            f"{_number(total.expected_cost_usd)}",
            highlight=False,
        )
    if document.skipped:
        console.print(f"skipped: {', '.join(item.id for item in document.skipped)}")
    console.print(f"plan digest: {document.plan_digest}", highlight=False)
