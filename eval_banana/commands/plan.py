"""`eb plan`: what `eb run` with the same flags would execute, and where; nothing runs."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import TYPE_CHECKING

from eval_banana.commands import common
from eval_banana.core.errors import UsageError
from eval_banana.core.words import dollars_text, plural
from eval_banana.models.config import MAX_SHARDS
from eval_banana.runners.results import FAMILY_CASES_LISTED

if TYPE_CHECKING:
    from eval_banana.models.plan import PlanCheckEntry, PlanDocument

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
        "--cases",
        action="store_true",
        help="Give every case of a dataset family a row of its own (by default a family of "
        f"more than {FAMILY_CASES_LISTED} cases is one row with their counts and totals).",
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
    _refuse_balance_without_shards(args=args)
    built = build_plan(request=PlanRequest(run=common.request(args), shards=args.shards))
    if built.warnings:
        from eval_banana.reporting.console import Console

        Console().warn_each(built.warnings)
    document = built.document
    if args.format == "json":
        sys.stdout.write(
            json.dumps(document.model_dump(by_alias=True), ensure_ascii=False, allow_nan=False)
        )
        sys.stdout.write("\n")
    else:
        _print_table(document=document, cases=args.cases)
    return 0


def _refuse_balance_without_shards(*, args: argparse.Namespace) -> None:
    """`--balance` says how shards are dealt: with no `--shards N` (nor `--shard K/N`) there
    are none, and a plan that ignored it would let the caller believe it had been balanced."""
    # An absent setting flag leaves no attribute; [core] shard_balance alone is no request.
    balance = getattr(args, "balance", None)
    if balance is None or args.shards is not None or args.shard is not None:
        return
    raise UsageError(
        f"--balance {balance} needs --shards N: without shards there is nothing to balance",
        hint=f"Deal the plan into N parts with --shards N --balance {balance}, or drop --balance.",
    )


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def _cost(value: float | None) -> str:
    """Dollars as `eb history` shows them: a check that costs $0.00004 never reads as free."""
    return "-" if value is None else dollars_text(value)


def _check_row(*, position: int, entry: PlanCheckEntry, shards: bool) -> list[str]:
    row = [
        str(position),
        entry.id,
        entry.family or "-",
        entry.type,
        entry.definition_digest.removeprefix("sha256:")[:12],
        entry.cache,
        _seconds(entry.expected_seconds),
        _cost(entry.expected_cost_usd),
    ]
    return [*row, str(entry.shard)] if shards else row


def _total(values: list[float | None]) -> float | None:
    """A sum of expectations, unknown (None) when any of them is."""
    return None if any(value is None for value in values) else sum(v or 0.0 for v in values)


def _family_row(*, position: int, entries: list[PlanCheckEntry], shards: bool) -> list[str]:
    """A large family as one row: `<family>[*]` (what --check-id takes for all its cases), its
    cases' cache statuses counted, their expected time and cost summed."""
    statuses = Counter(entry.cache for entry in entries)
    cache = ", ".join(
        f"{statuses[status]} {status}" for status in ("hit", "miss", "off") if statuses[status]
    )
    row = [
        str(position),
        f"{entries[0].family}[*]",
        entries[0].family or "-",
        ", ".join(sorted({entry.type for entry in entries})),
        plural(count=len(entries), noun="case"),
        cache,
        _seconds(_total([entry.expected_seconds for entry in entries])),
        _cost(_total([entry.expected_cost_usd for entry in entries])),
    ]
    if not shards:
        return row
    return [*row, ", ".join(str(shard) for shard in sorted({e.shard or 0 for e in entries}))]


def _table_rows(*, document: PlanDocument, cases: bool) -> tuple[list[list[str]], bool]:
    """The table's rows in plan order, and whether a family was folded into one. A family of
    more than FAMILY_CASES_LISTED cases is one row at its first case's place unless `cases`:
    10,000 rows take Rich seconds to draw and no reader reads them."""
    shards = document.shards is not None
    sizes = Counter(entry.family for entry in document.checks if entry.family is not None)
    folded = (
        set() if cases else {name for name, size in sizes.items() if size > FAMILY_CASES_LISTED}
    )
    families: dict[str, list[PlanCheckEntry]] = {}
    order: list[tuple[int, PlanCheckEntry | str]] = []  # a check, or a folded family's name
    for position, entry in enumerate(document.checks, start=1):
        if entry.family in folded:
            if entry.family not in families:
                order.append((position, entry.family))
            families.setdefault(entry.family, []).append(entry)
        else:
            order.append((position, entry))
    rows = [
        _family_row(position=position, entries=families[item], shards=shards)
        if isinstance(item, str)
        else _check_row(position=position, entry=item, shards=shards)
        for position, item in order
    ]
    return rows, bool(folded)


def _print_table(*, document: PlanDocument, cases: bool) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"eb plan: {plural(count=len(document.checks), noun='check')}")
    rows, folded = _table_rows(document=document, cases=cases)
    # An id is never cut short (a reader copies it into --check-id); the other columns give way.
    longest = max((len(row[1]) for row in rows), default=2)
    table.add_column("#")
    table.add_column("id", no_wrap=True, min_width=longest)
    for column in ("family", "type", "definition", "cache", "expected", "cost"):
        table.add_column(column)
    if document.shards is not None:
        table.add_column("shard")
    for row in rows:
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
            f"{_seconds(total.expected_seconds)}, cost "
            f"{_cost(total.expected_cost_usd)}",
            highlight=False,
        )
    if document.skipped:
        console.print(f"skipped: {', '.join(item.id for item in document.skipped)}")
    if folded:
        console.print(
            f"A dataset family of more than {FAMILY_CASES_LISTED} cases is one row (<family>[*]); "
            "`eb plan --cases` gives each case its own, `--format json` lists them all.",
            highlight=False,
        )
    console.print(f"plan digest: {document.plan_digest}", highlight=False)
    if document.selection_digest not in (None, document.plan_digest):
        # --shard K/N: the digest every shard's run records lies over the whole selection.
        console.print(
            f"selection digest: {document.selection_digest} (before --shard)", highlight=False
        )
