"""`eb cache stats|prune|push|verify`: look after the verdict cache (docs/shared-cache.md).

Reads the configuration as `eb run` does; runs no check.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.commands import common
from eval_banana.core.errors import CacheOperationError
from eval_banana.core.words import given_value, one_line, percent_text, plural, size_text, visible
from eval_banana.settings.folders import cache_settings
from eval_banana.settings.table import variable_of

if TYPE_CHECKING:
    from eval_banana.models.cacheops import RemoteTierStats
    from eval_banana.models.stages import ConfigDoc
    from eval_banana.remote.guarded import GuardedRemote, RemoteTally

_MIB = 1024 * 1024
_ACTIONS = {
    "stats": "Entries, blobs and bytes of the local cache (with --remote, the shared cache's "
    "too), and the hit rate of the last runs.",
    "prune": "Remove entries unused for --older-than DAYS, then the oldest beyond --max-mb "
    "(local; with --remote, the shared cache).",
    "push": "Upload the local entries and their files the shared cache lacks (signed when "
    "EVAL_BANANA_CACHE_SIGNING_KEY is set).",
    "verify": "Re-hash every stored file (with --remote, the shared cache's blobs and the "
    "files its entries carry inline too); exit 1 if any is damaged.",
}


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{given_value(text)} is not a number") from None
    if not math.isfinite(value):
        # float() takes 'nan' and 'inf': a limit of neither prunes nothing or fails to size.
        raise argparse.ArgumentTypeError(f"{given_value(text)} is not a finite number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"{given_value(text)} must be 0 or more")
    return value


def configure(*, parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="{stats,prune,push,verify}")
    actions.required = True
    for name, help_text in _ACTIONS.items():
        sub = actions.add_parser(name, help=help_text, description=help_text)
        common.add_common(sub, selection=False)
        common.add_setting_flags(sub, command="cache")
        if name == "stats":
            sub.add_argument(
                "--last",
                type=int,
                default=10,
                metavar="N",
                help="The hit rate over the last N recorded runs (default 10).",
            )
        if name in ("stats", "verify"):
            sub.add_argument("--json", action="store_true", help="Print the published JSON.")
        if name == "prune":
            sub.add_argument(
                "--older-than",
                type=_non_negative,
                metavar="DAYS",
                help="Remove entries not used for this many days.",
            )
            sub.add_argument(
                "--max-mb",
                type=_non_negative,
                metavar="N",
                help="Then remove the least recently used until at most N MiB are left.",
            )
        if name in ("prune", "verify", "stats"):
            sub.add_argument(
                "--remote",
                action="store_true",
                help="Also the shared cache ([cache] remote), if it can list "
                "what it holds (a folder or S3).",
            )


def _source(config: ConfigDoc) -> str:
    return config.config_file or variable_of("cache.remote")


def _opened(config: ConfigDoc) -> GuardedRemote:
    """The configured shared cache, for an operation (an error when none is set)."""
    from eval_banana.cache.remoteops import open_remote

    return open_remote(
        settings=cache_settings(config=config), environ=dict(os.environ), source=_source(config)
    )


def run(args: argparse.Namespace) -> int:
    from eval_banana.settings.folders import cache_dir

    config = common.settings_config(args)
    if args.action == "push" or args.remote:
        from eval_banana.stages.config import remote_endpoint_error

        # Told where it was set, as a run tells it; a run with the cache off never asks the
        # shared cache, so its config stage leaves the endpoint alone.
        unusable = remote_endpoint_error(config=config)
        if unusable is not None:
            raise unusable
    folder = cache_dir(config=config)
    if args.action == "stats":
        return _stats(
            config=config,
            folder=folder,
            last=max(1, args.last),
            as_json=args.json,
            remote=args.remote,
        )
    if args.action == "prune":
        return _prune(config=config, folder=folder, args=args)
    if args.action == "push":
        return _push(config=config, folder=folder)
    return _verify(config=config, folder=folder, remote=args.remote, as_json=args.json)


def _stats(*, config: ConfigDoc, folder: Path, last: int, as_json: bool, remote: bool) -> int:
    from itertools import islice

    from eval_banana.cache.operations import hit_rate, local_stats
    from eval_banana.history.read import newest_first, record_paths
    from eval_banana.models.cacheops import CacheStatsDoc
    from eval_banana.settings.folders import history_dir

    records = islice(
        newest_first(
            paths=record_paths(folder=history_dir(config=config)),
            warn=lambda message: print(f"warning: {message}", file=sys.stderr),
        ),
        last,
    )
    doc = CacheStatsDoc(
        local=local_stats(folder=folder),
        remote=_remote_stats(config=config) if remote else None,
        hit_rate=hit_rate(totals=((r.totals.checks, r.totals.cached) for r in records)),
    )
    if as_json:
        from eval_banana.core import canonjson

        sys.stdout.write(canonjson.dumps(doc) + "\n")
        return 0
    local, rate = doc.local, doc.hit_rate
    print(
        f"Cache {local.folder}: {_entries(local.entries)} ({size_text(local.entry_bytes)}), "
        f"{plural(count=local.blobs, noun='blob')} ({size_text(local.blob_bytes)}), "
        f"{plural(count=local.kept_runs, noun='kept run')} "
        f"({size_text(local.kept_run_bytes)})"
        f"{_unfinished_sized(count=local.unfinished, size=local.unfinished_bytes)}; "
        f"{size_text(local.total_bytes)} in all "
        f"(`[cache] max_mb` keeps at most {config.settings.cache.max_mb} MiB)."
    )
    if doc.remote is not None:
        print(_remote_line(stats=doc.remote))
    elif config.settings.cache.remote:
        from eval_banana.core.secreturl import shown_url

        # Asking a remote costs requests; say it is there and how to count it.
        print(
            f"Shared cache {shown_url(config.settings.cache.remote)}: not asked "
            "(`eb cache stats --remote` counts it)."
        )
    if rate.rate is None:
        print("Hit rate: no run recorded in the history folder yet.")
    else:
        print(
            f"Hit rate of the last {plural(count=rate.runs, noun='run')} (history records): "
            f"{rate.cached} of {plural(count=rate.checks, noun='check')} reused "
            f"({percent_text(rate.rate)})."
        )
    return 0


def _remote_stats(*, config: ConfigDoc) -> RemoteTierStats:
    from eval_banana.cache.remoteops import remote_stats

    return remote_stats(remote=_opened(config))


def _remote_line(*, stats: RemoteTierStats) -> str:
    if stats.listing == "unsupported":
        return (
            f"Shared cache {stats.url}: no counts, it cannot list what it holds (a plain HTTP "
            "cache, which evicts by its own settings)."
        )
    return (
        f"Shared cache {stats.url}: {_entries(stats.entries or 0)} "
        f"({size_text(stats.entry_bytes or 0)}), {plural(count=stats.blobs or 0, noun='blob')} "
        f"({size_text(stats.blob_bytes or 0)})"
        f"{_unfinished_sized(count=stats.unfinished or 0, size=stats.unfinished_bytes or 0)}; "
        f"{size_text(stats.total_bytes or 0)} in all."
    )


def _unfinished_sized(*, count: int, size: int) -> str:
    """`, 1 unfinished write (400.0 MiB)`, when there are any: files of writes under way, or
    of writers killed part-way, which `eb cache prune` removes once no longer written to."""
    return f"{_unfinished(count)} ({size_text(size)})" if count else ""


def _prune(*, config: ConfigDoc, folder: Path, args: argparse.Namespace) -> int:
    from eval_banana.cache.operations import now, prune_local, stale_before
    from eval_banana.cache.store import CacheStore
    from eval_banana.isolation.state import cache_writes

    if args.older_than is None and args.max_mb is None:
        raise CacheOperationError(
            "eb cache prune: nothing to prune by",
            hint="give --older-than DAYS, --max-mb N or both",
        )
    max_bytes = None if args.max_mb is None else int(args.max_mb * _MIB)
    moment = now()
    stale = stale_before(
        now=moment, remote_timeout_seconds=config.settings.cache.remote_timeout_seconds
    )
    remote, plan = None, None
    if args.remote:  # what the remote's prune will delete, found before any deletion
        from eval_banana.cache.remoteprune import plan_prune

        remote = _opened(config)
        plan = plan_prune(
            remote=remote,
            older_than_days=args.older_than,
            max_bytes=max_bytes,
            now=moment,
            stale_before=stale,
        )
    with cache_writes(cache=folder) as alone:
        if not alone:
            raise CacheOperationError(
                f"The cache {folder} is in use by a run (its lock {folder / '.lock'}, or the "
                "folder itself, is held); "
                "nothing was pruned",
                hint="prune once that run has ended",
            )
        done = prune_local(
            store=CacheStore(folder=folder, max_bytes=0),
            older_than_days=args.older_than,
            max_bytes=max_bytes,
            now=moment,
            stale_before=stale,
        )
    runs = f", {plural(count=done.kept_runs, noun='kept run')}" if done.kept_runs else ""
    print(
        f"Pruned {folder}: {_entries(done.entries)}{runs}{_unfinished(done.unfinished)} and "
        f"{plural(count=done.blobs, noun='blob')}, {size_text(done.bytes_freed)} freed."
    )
    if remote is None or plan is None:
        return 0
    from eval_banana.cache.remoteprune import prune_remote

    found = prune_remote(remote=remote, plan=plan)
    tally = remote.tally()
    print(
        f"Pruned {remote.url}: {_entries(found.pruned.entries)}"
        f"{_unfinished(found.pruned.unfinished)} and "
        f"{plural(count=found.pruned.blobs, noun='blob')}, {size_text(found.pruned.bytes_freed)} "
        f"freed ({plural(count=tally.requests, noun='request')})"
        + (f"; {plural(count=found.failed, noun='deletion')} failed." if found.failed else ".")
    )
    if found.failed:
        _say_failures(tally=tally)
        return 1
    return 0


def _say_failures(*, tally: RemoteTally) -> None:
    """The requests to the shared cache that failed, once, after the counts."""
    stopped = "; not asked again after repeated failures" if tally.tripped else ""
    print(
        f"error: the shared cache failed {plural(count=tally.errors, noun='request')} (first "
        f"error: {one_line(str(tally.first_error))}){stopped}",
        file=sys.stderr,
    )


def _push(*, config: ConfigDoc, folder: Path) -> int:
    from eval_banana.cache.remoteops import push
    from eval_banana.cache.store import CacheStore

    done, remote = push(
        settings=cache_settings(config=config),
        store=CacheStore(folder=folder, max_bytes=0),
        environ=dict(os.environ),
        source=_source(config),
    )
    tally = remote.tally()
    print(
        f"Pushed to {remote.url}: {_entries(done.stored)} stored, {done.present} already "
        f"there, {done.unusable} not shared (their local MAC, schema or files did not hold), "
        f"{_unverified(done.unverified)}{_oversized(done.oversized)}{done.failed} failed; "
        f"{size_text(tally.bytes_up)} uploaded{_replaced(done.replaced)}."
    )
    if done.failed:
        _say_failures(tally=tally)
        return 1
    return 0


def _unverified(count: int) -> str:
    """The entries push did not sign, when there are any: their verdicts were fetched from a
    shared cache without a check under this signing key (or by an older eb, which did not
    record where they came from), and a signature would vouch for them to every runner."""
    from eval_banana.remote.signing import SIGNING_KEY_VARIABLE

    if not count:
        return ""
    return (
        f"{count} not signed (fetched from a shared cache without a check under this "
        f"{SIGNING_KEY_VARIABLE}, or stored by an eb that did not record where they came "
        "from), "
    )


def _oversized(count: int) -> str:
    """The entries too large to share, when there are any: no runner reads that much."""
    from eval_banana.remote.backend import ENTRY_MAX_BYTES

    if not count:
        return ""
    return f"{count} too large to share (over the {ENTRY_MAX_BYTES:,} bytes a runner reads), "


def _replaced(count: int) -> str:
    """The blobs the shared cache held damaged (their size, other content) that push sent
    again, when there are any."""
    if not count:
        return ""
    return (
        f", {plural(count=count, noun='file')} the shared cache held damaged (its size, "
        "other content) sent again"
    )


def _verify(*, config: ConfigDoc, folder: Path, remote: bool, as_json: bool) -> int:
    from eval_banana.cache.operations import verify_local
    from eval_banana.cache.remoteops import RemoteVerified
    from eval_banana.models.cacheops import CacheVerifyDoc

    local = verify_local(folder=folder)
    damaged = local.damaged
    remote_url: str | None = None
    found = RemoteVerified(blobs=0, entries=0, inline=0, damaged=[])
    requests = 0
    if remote:
        from eval_banana.cache.remoteops import verify_remote

        opened = _opened(config)
        remote_url = opened.url
        found = verify_remote(remote=opened)
        requests = opened.tally().requests
        damaged = [*damaged, *found.damaged]
    doc = CacheVerifyDoc(
        local_folder=str(folder),
        local_blobs=local.blobs,
        local_entries=local.entries,
        local_kept_runs=local.kept_runs,
        remote=remote_url,
        remote_blobs=found.blobs,
        remote_entries=found.entries,
        remote_inline=found.inline,
        remote_requests=requests,
        damaged=damaged,
        ok=not damaged,
    )
    if as_json:
        from eval_banana.core import canonjson

        sys.stdout.write(canonjson.dumps(doc) + "\n")
    else:
        where = (
            f" and {plural(count=found.blobs, noun='blob')} and "
            f"{plural(count=found.inline, noun='inline file')} of {_entries(found.entries)} "
            f"in {remote_url} ({plural(count=requests, noun='request')})"
            if remote_url
            else ""
        )
        print(
            f"Verified {plural(count=local.blobs, noun='blob')}, {_entries(local.entries)} "
            f"and {plural(count=local.kept_runs, noun='kept run')} in {folder}{where}: "
            f"{len(damaged)} damaged."
        )
        # A shared cache's object names (and the problems that quote them) are whatever its
        # writers made them: each on its line, never a line (a `::` workflow command) of its own.
        for item in damaged:
            kind = "" if item.kind == "blob" else f" {item.kind.replace('_', ' ')}"
            print(f"  damaged ({item.tier}){kind} {visible(item.name)}: {visible(item.problem)}")
    return 0 if doc.ok else 1


def _unfinished(count: int) -> str:
    """`, 2 unfinished writes` after a tier's entries, when there are any."""
    return f", {plural(count=count, noun='unfinished write')}" if count else ""


def _entries(count: int) -> str:
    return plural(count=count, noun="entry", nouns="entries")
