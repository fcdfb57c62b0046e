"""`eb cache push`, `verify --remote` and `stats --remote`: the shared tier as an operator
tends it (docs/shared-cache.md, Operations); `prune --remote` is in remoteprune.py.

Prune and verify list what the remote holds, which a folder and S3 can and a plain HTTP cache
cannot: there they stop with an error saying so (such a cache evicts by itself). Stats says so
in its output instead: a count it cannot give is no failure.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from eval_banana.cache.entry import DIGEST_RE
from eval_banana.cache.operations import blob_damage
from eval_banana.cache.remotedoc import blobs
from eval_banana.cache.remotestore import Pushed
from eval_banana.cache.remotetier import RemoteTier
from eval_banana.cache.store import CacheStore
from eval_banana.core.errors import CacheOperationError
from eval_banana.core.files import sha256_bytes
from eval_banana.core.readback import loads_json
from eval_banana.core.secreturl import shown_url
from eval_banana.models.cacheops import DamagedBlob, RemoteTierStats
from eval_banana.models.config import CacheSettings
from eval_banana.remote.backend import (
    KINDS,
    Kind,
    ListingUnsupported,
    RemoteBackend,
    RemoteError,
    RemoteItem,
    SinkRefused,
)
from eval_banana.remote.digesting import Digesting
from eval_banana.remote.guarded import GuardedRemote
from eval_banana.remote.opening import open_backend
from eval_banana.remote.signing import SIGNING_KEY_VARIABLE, keyless_but_required, opened


def open_remote(
    *, settings: CacheSettings, environ: Mapping[str, str], source: str
) -> GuardedRemote:
    """The configured shared cache, for an operation; an error when none is set."""
    if not settings.remote:
        raise CacheOperationError(
            "No shared cache is set",
            file=source,
            field_path="cache.remote",
            hint="set [cache] remote in .eval-banana/config.toml, --cache-remote or "
            "EVAL_BANANA_CACHE_REMOTE",
        )
    try:
        backend = open_backend(
            url=settings.remote,
            endpoint=settings.remote_endpoint,
            timeout=float(settings.remote_timeout_seconds),
            environ=environ,
            source=source,
        )
    except RemoteError as exc:  # what its library refuses before any request (boto3's)
        raise CacheOperationError(
            f"The shared cache {shown_url(settings.remote)} cannot be used: {exc}",
            file=source,
            field_path="cache.remote",
            hint="an s3:// remote takes its endpoint from [cache] remote_endpoint (else "
            "AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL), its region and profile from the AWS_* "
            "variables: correct the one named",
        ) from None
    return GuardedRemote(backend=backend, concurrency=settings.remote_concurrency)


def push(
    *, settings: CacheSettings, store: CacheStore, environ: Mapping[str, str], source: str
) -> tuple[Pushed, GuardedRemote]:
    """Upload every local entry (and the files it names) the remote lacks."""
    if settings.remote and settings.remote_mode != "read-write":
        raise CacheOperationError(
            f"[cache] remote_mode is {settings.remote_mode}: eb cache push only writes to a "
            "read-write shared cache",
            file=source,
            field_path="cache.remote_mode",
            hint='set remote_mode = "read-write" (on trusted runners only)',
        )
    key_text = environ.get(SIGNING_KEY_VARIABLE, "")
    if keyless_but_required(require_signature=settings.require_signature, key=key_text):
        raise CacheOperationError(
            f"[cache] require_signature is on but {SIGNING_KEY_VARIABLE} is not set: the "
            "entries eb cache push would store are unsigned, and no runner would reuse them",
            file=source,
            field_path="cache.require_signature",
            hint=f"set {SIGNING_KEY_VARIABLE} from your CI's secret store for this step",
        )
    remote = open_remote(settings=settings, environ=environ, source=source)
    tier = RemoteTier(
        remote=remote,
        store=store,
        writes=True,
        signing_key=key_text.encode("utf-8") if key_text else None,
        require_signature=settings.require_signature,
        warn=lambda message, file, hint: None,  # push reports its own counts and first error
    )
    keys = [f"sha256:{name}" for name in _local_names(store=store)]
    return tier.push(keys=keys), remote


def _local_names(*, store: CacheStore) -> list[str]:
    from eval_banana.cache.operations import stored_files

    names = []
    for item in stored_files(folder=store.folder, part="entries"):
        stem = item.path.name.removesuffix(".json")
        if item.path.name.endswith(".json") and len(stem) == 64:
            names.append(stem)
    return sorted(names)


def listing(*, remote: GuardedRemote, kind: Kind) -> list[RemoteItem]:
    """What the remote holds of a kind; an error naming why it cannot be listed."""
    try:
        return list(_items(backend=remote.backend, kind=kind))
    except ListingUnsupported as exc:
        raise CacheOperationError(
            f"--remote cannot work on this shared cache: {exc}",
            field_path="cache.remote",
            hint="--remote works with a folder or S3 remote; an HTTP cache (bazel-remote, "
            "nginx) has no listing, and evicts by its own size settings. Without --remote the "
            "command works on the local folder",
        ) from None
    except RemoteError as exc:
        raise CacheOperationError(
            f"The shared cache {remote.url} cannot be listed: {exc}"
        ) from None


def _items(*, backend: RemoteBackend, kind: Kind) -> Iterator[RemoteItem]:
    yield from backend.list(kind=kind)


class RemoteVerified(NamedTuple):
    """What `verify --remote` checked and found."""

    blobs: int  # blobs fetched and re-hashed
    entries: int  # entries fetched for their inline files
    inline: int  # inline files re-hashed
    damaged: list[DamagedBlob]


def verify_remote(*, remote: GuardedRemote) -> RemoteVerified:
    """Fetch and re-hash every remote blob (streamed, never whole in memory) and every file
    an entry carries inline; the damaged or unreadable ones."""
    blobs = listing(remote=remote, kind="cas")
    entries = listing(remote=remote, kind="ac")
    found = remote.each(work=lambda item: _blob_problem(remote=remote, name=item.name), items=blobs)
    damaged = [
        DamagedBlob(tier="remote", name=item.name, problem=problem)
        for item, problem in zip(blobs, found, strict=True)
        if problem is not None
    ]
    inline = remote.each(
        work=lambda item: _inline_problems(remote=remote, name=item.name), items=entries
    )
    for _, problems in inline:
        damaged.extend(problems)
    return RemoteVerified(
        blobs=len(blobs),
        entries=len(entries),
        inline=sum(count for count, _ in inline),
        damaged=damaged,
    )


def _blob_problem(*, remote: GuardedRemote, name: str) -> str | None:
    sink = Digesting(file=None, limit=None)
    try:
        moved = remote.get_into(kind="cas", name=name, sink=sink)
    except RemoteError as exc:
        return f"could not be fetched ({exc})"
    if moved is None:
        return None  # removed since it was listed
    return blob_damage(name=name, digest=sink.found()[0], problem=None)


def _inline_problems(*, remote: GuardedRemote, name: str) -> tuple[int, list[DamagedBlob]]:
    """(inline files checked, the damaged ones) of one remote entry. An entry that cannot be
    fetched or read is reported too: its files could not be checked."""

    def damaged(problem: str, file: str = name) -> DamagedBlob:
        return DamagedBlob(tier="remote", name=file, entry=name, problem=problem)

    try:
        data = remote.get(kind="ac", name=name)
    except RemoteError as exc:
        return 0, [damaged(f"entry ac/{name} could not be fetched ({exc})")]
    except SinkRefused as exc:
        return 0, [damaged(f"entry ac/{name} {exc}")]
    if data is None:
        return 0, []  # removed since it was listed
    try:
        document = loads_json(opened(data).text)
    except ValueError:
        return 0, [damaged(f"entry ac/{name} is not valid JSON (truncated or foreign)")]
    raw = document.get("inline", {}) if type(document) is dict else None
    if type(raw) is not dict:
        return 0, [damaged(f"entry ac/{name} is not a shared cache entry")]
    sizes = _recorded_sizes(entry=document.get("entry"))
    problems = []
    for digest, encoded in raw.items():
        problem = _inline_problem(digest=digest, encoded=encoded, sizes=sizes)
        if problem is not None:
            file = _hex_of(digest) or name
            problems.append(damaged(f"carried inline in entry ac/{name}: {problem}", file))
    return len(raw), problems


def _inline_problem(*, digest: object, encoded: object, sizes: Mapping[str, int]) -> str | None:
    """Why one inline file does not hold (its name, its encoding, its digest, its size)."""
    if type(digest) is not str or not DIGEST_RE.match(digest) or type(encoded) is not str:
        return "it is not named by its digest"
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return "it is not base64"
    damage = blob_damage(name=digest.split(":", 1)[1], digest=sha256_bytes(data=data), problem=None)
    if damage is not None:
        return damage
    if digest in sizes and sizes[digest] != len(data):
        return f"it has {len(data)} bytes where the entry records {sizes[digest]}"
    return None


def _recorded_sizes(*, entry: object) -> dict[str, int]:
    """The size an entry records for each file it names (none when it names them oddly)."""
    try:
        return {blob.sha256: blob.size for blob in blobs(entry=entry)}  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError, AttributeError):
        return {}


def _hex_of(digest: object) -> str | None:
    if type(digest) is str and DIGEST_RE.match(digest):
        return digest.split(":", 1)[1]
    return None


def remote_stats(*, remote: GuardedRemote) -> RemoteTierStats:
    """What the shared cache holds, as it lists it; a cache that cannot list says so (its
    counts are null), and one that fails to answer is an error."""
    try:
        entries = list(_items(backend=remote.backend, kind="ac"))
        blobs = list(_items(backend=remote.backend, kind="cas"))
        unfinished = unfinished_writes(remote=remote)
    except ListingUnsupported:
        return RemoteTierStats(url=remote.url, listing="unsupported")
    except RemoteError as exc:
        raise CacheOperationError(
            f"The shared cache {remote.url} cannot be listed: {exc}"
        ) from None
    entry_bytes = sum(item.size for item in entries)
    blob_bytes = sum(item.size for item in blobs)
    unfinished_bytes = sum(item.size for _, item in unfinished)
    return RemoteTierStats(
        url=remote.url,
        listing="listed",
        entries=len(entries),
        entry_bytes=entry_bytes,
        blobs=len(blobs),
        blob_bytes=blob_bytes,
        unfinished=len(unfinished),
        unfinished_bytes=unfinished_bytes,
        total_bytes=entry_bytes + blob_bytes + unfinished_bytes,
    )


def unfinished_writes(*, remote: GuardedRemote) -> list[tuple[Kind, RemoteItem]]:
    """The files of writes to the remote that never finished, or are under way (a folder's
    hidden temporary files), by kind."""
    return [(kind, item) for kind in KINDS for item in remote.backend.unfinished(kind=kind)]
