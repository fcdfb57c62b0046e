"""`eb history`: each check over the last runs; `eb history import DIR...` gathers records.

Reads the history folder only (docs/history.md): no check is loaded, nothing is run.
"""

from __future__ import annotations

import argparse
import errno
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.commands import common
from eval_banana.core.errors import LinkLoopError, UsageError
from eval_banana.core.words import given_value, one_line, plural, visible

if TYPE_CHECKING:
    from collections.abc import Iterable

    from eval_banana.history.read import Focus
    from eval_banana.history.record import HistoryRecord
    from eval_banana.history.show import Asked, ListingName

# The most subfolders a refused import names (an artifacts download may hold dozens).
_FOLDERS_NAMED = 8
# The runs shown when neither --last nor --since chooses them.
DEFAULT_LAST = 30


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{given_value(text)} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{given_value(text)} must be 1 or more")
    return value


def configure(*, parser: argparse.ArgumentParser) -> None:
    common.add_common(parser, selection=False)
    parser.add_argument(
        "--check-id",
        action="append",
        default=[],
        metavar="ID",
        help="Only this check, or every id matching a shell-style glob; repeatable.",
    )
    parser.add_argument(
        "--tag",
        action="append",
        default=[],
        metavar="EXPR",
        help="Only checks whose recorded tags match (as `eb run --tag`); repeatable.",
    )
    parser.add_argument(
        "-k", "--keyword", metavar="EXPR", help="Only checks whose id matches, as `eb run -k`."
    )
    parser.add_argument(
        "--last",
        type=_positive,
        metavar="N",
        help=f"The last N runs (default {DEFAULT_LAST}; with --since, every run since then).",
    )
    parser.add_argument(
        "--since",
        metavar="REF|DATE",
        help="Only runs started at or after a date (YYYY-MM-DD, or an ISO-8601 time) or the "
        "commit time of a git revision.",
    )
    listing = parser.add_mutually_exclusive_group()
    listing.add_argument(
        "--flaky",
        action="store_true",
        help="Only checks that flipped between passing and not at least --min-flips times on "
        "one definition.",
    )
    listing.add_argument("--slowest", action="store_true", help="Checks by median duration.")
    listing.add_argument("--costliest", action="store_true", help="Checks by total cost.")
    parser.add_argument(
        "--min-flips", type=_positive, default=2, metavar="N", help="For --flaky (default 2)."
    )
    common.add_format(parser, choices=("text", "md", "json"), default="text", help="Default: text.")
    parser.add_argument(
        "--html",
        metavar="PATH",
        help="Write a self-contained page of the same window instead: the suite's pass "
        "rate, duration and cost per run as charts, a heat strip per check, filters. Not with "
        "--flaky, --slowest or --costliest (the page has its own filters).",
    )
    common.add_setting_flags(parser, command="history")
    actions = parser.add_subparsers(dest="action", metavar="{import}")
    imports = actions.add_parser(
        "import",
        help="Copy the run records of other history folders (CI artifacts of other runners) "
        "into this project's, skipping run ids it has.",
    )
    imports.add_argument("dirs", nargs="+", metavar="DIR", help="History folders to copy from.")


def _import(*, folder: Path, sources: list[str], keep: int) -> int:
    """Copy the records of `sources` into `folder`, then remove the oldest past `keep` (`[history]
    keep`), as every run and merge does: a gather job that only imports stays bounded too."""
    from eval_banana.history.store import import_records, prune

    paths = [Path(source) for source in sources]
    for path in paths:
        if not path.is_dir():
            raise UsageError(
                f"eb history import: {path} is not a folder; give the history folders "
                "(e.g. another runner's .eval-banana/history) to copy records from"
            )
        _refuse_records_only_below(path=path)
    done = import_records(sources=paths, folder=folder)
    for path, why in done.refused:
        # Another runner's files: a name or a reason quoting a record, shown on one line.
        print(f"warning: skipped {visible(str(path))}: {one_line(why)}", file=sys.stderr)
    print(
        f"Imported {plural(count=len(done.copied), noun='run record')} into {folder}; "
        f"{len(done.updated)} updated, {len(done.duplicates)} already there, "
        f"{len(done.refused)} refused."
    )
    removed = prune(folder=folder, keep=keep)
    if removed:
        print(
            f"Removed the {plural(count=len(removed), noun='oldest record')} past "
            f"[history] keep = {keep}."
        )
    return 0


def _refuse_records_only_below(*, path: Path) -> None:
    """Import reads the folders it is given, not what lies below them: a folder whose records
    are all in subfolders (a CI artifacts download, one per job; another project's root) is
    refused naming them, before anything is copied. Its own JSON files that are no record (a
    project root's package.json, `.eval-banana`'s lastfailed.json) do not count. One holding
    no JSON file and no record below is a warning."""
    from eval_banana.history.store import any_record, folders_holding_records, import_files

    files = import_files(folder=path)
    below = folders_holding_records(folder=path)
    if not below:
        if not files:
            print(f"warning: {path} holds no run record (no *.json file)", file=sys.stderr)
        return  # any file there that is no record is refused by name
    if any_record(paths=files):
        return
    named = below[:_FOLDERS_NAMED]
    more = " ..." if len(below) > len(named) else ""
    raise UsageError(
        f"eb history import: {path} holds no run record itself (no subfolder is read); the "
        f"records are in {', '.join(map(str, named))}{more}",
        hint="Give the folders that hold them: eb history import "
        + " ".join(shlex.quote(str(one)) for one in named)
        + more,
    )


def _last(*, args: argparse.Namespace) -> int | None:
    """How many runs the window holds at most (None: no limit). `--since` alone asks for every
    run since that moment: a silent default of 30 hid the rest of a busy week."""
    if args.last is not None:
        return int(args.last)
    return None if args.since is not None else DEFAULT_LAST


def _listing(args: argparse.Namespace) -> ListingName:
    if args.flaky:
        return "flaky"
    if args.slowest:
        return "slowest"
    return "costliest" if args.costliest else "all"


def _refuse_listing_on_page(*, args: argparse.Namespace) -> None:
    """`--html` draws every check of the window; `--flaky`, `--slowest` and `--costliest` choose
    a text list, and beside the page they would drop checks from it unasked (the page has its
    own "Flaky only" filter), so the combination is refused."""
    listing = _listing(args)
    if args.html is None or listing == "all":
        return
    raise UsageError(
        f"--{listing} and --html cannot be combined: the history page shows every check of "
        "the window (--last, --since, --check-id, -k and --tag choose them)",
        hint=f'Write the page without --{listing} and use its own filters ("Flaky only" '
        f"keeps the checks that flipped --min-flips times); `eb history --{listing}` prints "
        "the list.",
    )


def _refuse_page_target(*, args: argparse.Namespace) -> None:
    """`--html PATH` a symbolic link loop is refused before any record is read: no file is
    there to write (a shell's `>` refuses it), and the page must never replace the link."""
    from eval_banana.core.files import link_loop

    if args.html is not None and link_loop(path=Path(args.html)):
        raise _page_loop(path=args.html)


def _page_loop(*, path: object) -> LinkLoopError:
    """`--html PATH` names a symbolic link loop (before the page is written, or since)."""
    from eval_banana.core.files import LOOP_FIX

    return LinkLoopError(
        f"Cannot write the history page to {path}: --html names a symbolic link loop",
        file=str(path),
        hint=f"{LOOP_FIX}, or give --html another path",
    )


def _page(
    *,
    records: Iterable[HistoryRecord],
    total: int,
    asked: Asked,
    folder: Path,
    path: Path,
    focus: Focus,
) -> int:
    """`--html PATH`: the history page of the window asked for."""
    from eval_banana.core.errors import OutputDirError
    from eval_banana.history.trend import build_picture
    from eval_banana.reporting.history_html import write_history_html

    picture = build_picture(
        newest_first=records, total=total, asked=asked, folder=str(folder), focus=focus
    )
    try:
        write_history_html(picture=picture, min_flips=asked.min_flips, path=path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a loop made since it was checked: told as then
            raise _page_loop(path=path) from None
        raise OutputDirError(f"Cannot write the history page to {path}: {exc}") from exc
    runs, checks = len(picture.view.runs), len(picture.view.checks)
    print(f"Wrote {path}: {plural(count=runs, noun='run')}, {plural(count=checks, noun='check')}.")
    return 0


def run(args: argparse.Namespace) -> int:
    from eval_banana.checks.keywords import compile_selector
    from eval_banana.history.read import Focus, newest_first, record_paths
    from eval_banana.history.render import to_markdown, to_text
    from eval_banana.history.show import Asked, build_view
    from eval_banana.history.since import since_moment
    from eval_banana.settings.folders import history_dir

    config = common.settings_config(args)
    folder = history_dir(config=config)
    if args.action == "import":
        return _import(folder=folder, sources=list(args.dirs), keep=config.settings.history.keep)
    _refuse_listing_on_page(args=args)
    _refuse_page_target(args=args)
    asked = Asked(
        last=_last(args=args),
        since=None
        if args.since is None
        else since_moment(text=args.since, root=config.project_root),
        check_ids=list(args.check_id),
        selector=compile_selector(keyword=args.keyword, tags=list(args.tag)),
        listing=_listing(args),
        min_flips=args.min_flips,
    )
    paths = record_paths(folder=folder)
    focus = Focus()
    records = newest_first(
        paths=paths,
        warn=lambda message: print(f"warning: {message}", file=sys.stderr),
        focus=focus,
    )
    if args.html is not None:
        return _page(
            records=records,
            total=len(paths),
            asked=asked,
            folder=folder,
            path=Path(args.html),
            focus=focus,
        )
    view = build_view(
        newest_first=records, total=len(paths), asked=asked, folder=str(folder), focus=focus
    )
    if args.format == "json":
        from eval_banana.core import canonjson

        sys.stdout.write(canonjson.dumps(view) + "\n")
    elif args.format == "md":
        sys.stdout.write(to_markdown(view))
    else:
        sys.stdout.write(to_text(view))
    return 0
