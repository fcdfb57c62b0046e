"""The shared second tier of the verdict cache: fetching entries before checks start, and
storing new verdicts once they end (docs/shared-cache.md).

An entry travels as a remote document: the local entry without its MAC (that MAC is keyed by
the local secret, which never leaves the machine), its small stored files inline, signed with
EVAL_BANANA_CACHE_SIGNING_KEY when the run has it:

    {"signature": "hmac-sha256:<hex>", "$schema": ..., "kind": "eval-banana/remote-cache-entry",
     "key": ..., "key_version": 1, "tool_version": ..., "entry": {...}, "inline": {...}}

Larger files are blobs named by their digest (cas/<sha256 hex>). A fetched entry is checked as
a local one is (schema, key, check) plus its signature and every file's digest, and only then
kept in the local folder, signed with the local MAC; the lookups that follow read it there. A
remote entry that fails any of these is a miss, with a warning and a counter saying why, never
an error or a verdict.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, BinaryIO, Literal, NamedTuple

from eval_banana.cache.blobs import EMPTY_SHA256, Blob
from eval_banana.cache.entry import DIGEST_RE, entry_problem
from eval_banana.cache.places import SlotTaken
from eval_banana.cache.store import CacheStore
from eval_banana.core.files import sha256_bytes
from eval_banana.core.readback import loads_json
from eval_banana.core.secreturl import shown_url, unmasked
from eval_banana.core.version import tool_version
from eval_banana.core.words import plural
from eval_banana.models.config import CacheSettings
from eval_banana.remote.backend import RemoteError, SinkRefused
from eval_banana.remote.guarded import GuardedRemote, RemoteTally
from eval_banana.remote.opening import open_backend
from eval_banana.remote.signing import (
    SIGNING_KEY_VARIABLE,
    Opened,
    keyless_but_required,
    opened,
    sealed,
    signature_problem,
)
from eval_banana.settings.table import SETTINGS_BY_NAME, variable_of
from eval_banana.stagefiles.layout import SCHEMA_BASE

REMOTE_ENTRY_KIND = "eval-banana/remote-cache-entry"
REMOTE_ENTRY_SCHEMA = f"{SCHEMA_BASE}remote-cache-entry.schema.json"
# Files up to this size travel inside their entry: a cached judge is then one request.
INLINE_MAX = 16 * 1024
_PLACEHOLDER_MAC = "hmac-sha256:" + "0" * 64
Rejection = Literal["signature", "entry", "blob"]
PushOutcome = Literal["stored", "present", "unusable", "failed", "guarded"]
RemoveOutcome = Literal["removed", "absent", "guarded", "failed"]
# What a run asked of the shared cache, for the warning that says what its failures cost.
Asked = Literal["lookups", "uploads", "removals"]


class Pushed(NamedTuple):
    """What `eb cache push` did with each local entry."""

    stored: int
    present: int  # the remote held it already
    unusable: int  # its local MAC, schema or a file of it did not hold: not shared
    failed: int  # a request failed (counted in the tally)


# A warning of the shared tier: its message, the file it concerns, and its hint, which says
# what the failure cost the run (one of the HINT_* below).
Warn = Callable[[str, str | None, str], None]
_COUNTED = "the run's report counts what the shared cache did (docs/shared-cache.md)"
HINT_LOOKUPS = f"those checks ran as on a miss; {_COUNTED}"
HINT_UPLOADS = f"those verdicts are stored in the local cache only; {_COUNTED}"
HINT_REMOVALS = (
    "a runner whose local cache lacks those verdicts may still reuse the ones from before the "
    f"refresh; {_COUNTED}"
)
HINT_BOTH = (
    "the checks ran as on a miss, and their verdicts are stored in the local cache only; "
    f"{_COUNTED}"
)
_REMOTE_VARIABLE = variable_of("cache.remote")
_REMOTE_FLAG = SETTINGS_BY_NAME["cache.remote"].flag
# Refused entries named one by one, per reason; the rest are one line with their count (a cache
# written before signing was required refuses every entry: a thousand lines would say nothing).
REJECTIONS_NAMED = 3
_REASON_WORDS: dict[Rejection, str] = {
    "signature": "a missing or bad signature",
    "entry": "an entry that is not valid or not this check's",
    "blob": "a file missing or damaged",
}


class RemoteTier:
    """The remote as one run uses it: what it fetched, what it stores, and its counters."""

    def __init__(
        self,
        *,
        remote: GuardedRemote,
        store: CacheStore,
        writes: bool,
        signing_key: bytes | None,
        require_signature: bool,
        warn: Warn,
    ) -> None:
        self.remote = remote
        self.store = store
        self.writes = writes
        self._signing_key = signing_key
        self._require_signature = require_signature
        self._warn = warn
        self._lock = threading.Lock()
        self.fetched: set[str] = set()  # keys whose entry came from the remote in this run
        self.rejected: dict[Rejection, int] = {"signature": 0, "entry": 0, "blob": 0}
        self._refusals: list[tuple[Rejection, str]] = []  # told when the prefetch ends
        self.writes_done = 0
        # Verdicts stored locally only: the remote holds a sound entry under their key signed
        # with a signature this run cannot verify, which it never writes over.
        self.kept_local = 0
        self._queued: list[tuple[str, dict[str, Any]]] = []
        # Keys (-> check id) whose verdict from before a refresh went, to be removed remotely.
        self._dropped: dict[str, str] = {}
        # Keys whose remote entry this run has looked at, and those among them that hold a sound
        # entry sealed with a signature this run cannot verify (another signing key's, or any
        # signature when the run has no key): it never writes over those.
        self._examined: set[str] = set()
        self._guarded: set[str] = set()

    @classmethod
    def open(
        cls,
        *,
        settings: CacheSettings,
        store: CacheStore,
        reads: bool,
        local_writes: bool,
        environ: Mapping[str, str],
        source: str,
        warn: Warn,
    ) -> RemoteTier | None:
        """The run's remote tier, or None when none is set or `remote_mode` is off. `reads`:
        the run looks verdicts up; `local_writes`: it stores its own."""
        if not settings.remote or settings.remote_mode == "off":
            return None
        would_write = local_writes and settings.remote_mode == "read-write"
        hint = _hint_of(lookups=reads, uploads=would_write)
        url = unmasked(url=settings.remote, candidates=[environ.get(_REMOTE_VARIABLE)])
        if url is None:
            # A stage rerun (`eb update`) from a config.json, which never holds the password.
            from eval_banana.remote.http import TOKEN_VARIABLE

            warn(
                f"The shared cache {settings.remote} is not asked: stages/config.json records "
                f"its URL with the password masked. Set {_REMOTE_VARIABLE} to the URL with its "
                f"password (`eb update` also takes it as {_REMOTE_FLAG}), or use "
                f"{TOKEN_VARIABLE}, which is never written, to use it",
                None,
                hint,
            )
            return None
        key_text = environ.get(SIGNING_KEY_VARIABLE, "")
        try:
            backend = open_backend(
                url=url,
                endpoint=settings.remote_endpoint,
                timeout=float(settings.remote_timeout_seconds),
                environ=environ,
                source=source,
            )
        except RemoteError as exc:
            warn(f"The shared cache {shown_url(settings.remote)} cannot be used: {exc}", None, hint)
            return None
        # Required signatures and no key: nothing this run would write could ever be reused,
        # and its unsigned entries would take the place of signed ones (every runner with the
        # key would then miss them, and run those checks again).
        unsigned_only = keyless_but_required(
            require_signature=settings.require_signature, key=key_text
        )
        if unsigned_only and (reads or would_write):
            warn(
                f"[cache] require_signature is on but {SIGNING_KEY_VARIABLE} is not set: no "
                f"entry of the shared cache {backend.url} is reused or written in this run",
                None,
                hint,
            )
        return cls(
            remote=GuardedRemote(backend=backend, concurrency=settings.remote_concurrency),
            store=store,
            writes=would_write and not unsigned_only,
            signing_key=key_text.encode("utf-8") if key_text else None,
            require_signature=settings.require_signature,
            warn=warn,
        )

    def tally(self) -> RemoteTally:
        return self.remote.tally()

    # -- fetching ----------------------------------------------------------------------------

    def prefetch(self, *, wanted: Mapping[str, str]) -> None:
        """Fetch, check and keep locally the remote entries of `wanted` (key -> check id)
        that the local folder lacks, `remote_concurrency` at once."""
        if keyless_but_required(require_signature=self._require_signature, key=self._signing_key):
            return  # said when the tier was opened
        missing = [
            (key, check_id)
            for key, check_id in sorted(wanted.items())
            if not self.store.mark_used(key=key, touch=False)
        ]
        self.remote.each(
            work=lambda item: self._fetch(key=item[0], check_id=item[1]), items=missing
        )
        self._say_refusals()
        self._say_errors(asked="lookups")

    def _fetch(self, *, key: str, check_id: str) -> None:
        name = _hex(key)
        where = f"{self.remote.url} ac/{name}"
        try:
            data = self.remote.get(kind="ac", name=name)
        except RemoteError:
            return  # counted; the check runs as on a miss
        except SinkRefused as exc:
            self._examined_now(key=key, guarded=False)  # too large to be any runner's entry
            self._reject(
                reason="entry",
                message=f"Shared cache entry {where} for check '{check_id}' {exc}; "
                "it counts as a miss",
            )
            return
        self._examined_now(
            key=key,
            guarded=data is not None
            and self._sealed_by_another(data=data, key=key, check_id=check_id),
        )
        if data is None:
            return  # not stored remotely either: an ordinary miss
        found = self._entry(data=data, key=key, check_id=check_id, where=where)
        if found is None:
            return
        entry, inline = found
        try:
            problem = self._keep_files(entry=entry, inline=inline)
            if problem is None:
                self.store.write(key=key, document=entry)
        except SlotTaken as exc:
            # The local folder, not the remote, is damaged: the check runs as on a miss.
            self._warn(
                f"Shared cache entry {where} for check '{check_id}' cannot be kept: {exc}",
                str(exc.path),
                HINT_LOOKUPS,
            )
            return
        if problem is not None:
            self._reject(
                reason="blob",
                message=f"Shared cache entry {where} for check '{check_id}' {problem}; "
                "it counts as a miss",
            )
            return
        with self._lock:
            self.fetched.add(key)

    def _entry(
        self, *, data: bytes, key: str, check_id: str, where: str
    ) -> tuple[dict[str, Any], dict[str, bytes]] | None:
        """A fetched entry and its inline files, when all of it holds; else None (warned)."""
        found = opened(data)
        if self._signing_key is not None:
            problem = signature_problem(key=self._signing_key, found=found)
            if problem is not None:
                self._reject(
                    reason="signature",
                    message=f"Shared cache entry {where} for check '{check_id}' {problem}; "
                    "it counts as a miss",
                )
                return None
        problem, entry, inline = _parsed(text=found.text, key=key, check_id=check_id)
        if problem is not None:
            self._reject(
                reason="entry",
                message=f"Shared cache entry {where} for check '{check_id}' {problem}; "
                "it counts as a miss",
            )
            return None
        return entry, inline

    def _examined_now(self, *, key: str, guarded: bool) -> None:
        with self._lock:
            self._examined.add(key)
            if guarded:
                self._guarded.add(key)

    def _sealed_by_another(self, *, data: bytes, key: str, check_id: str) -> bool:
        """Whether a remote entry carries a signature this run cannot verify over an entry that
        is otherwise sound: most likely the verdict of runners that hold another signing key,
        which they would miss were it written over. An unsigned entry, one whose signature
        holds, and one whose text is damaged beyond its signature (no runner could reuse it)
        may be replaced."""
        found: Opened = opened(data)
        if found.signature is None:
            return False
        if (
            self._signing_key is not None
            and signature_problem(key=self._signing_key, found=found) is None
        ):
            return False
        problem, _, _ = _parsed(text=found.text, key=key, check_id=check_id)
        return problem is None

    def _keep_files(self, *, entry: Mapping[str, Any], inline: Mapping[str, bytes]) -> str | None:
        """Every file the entry names, checked against its digest and kept locally; the
        problem of the first that is missing or does not match, or None."""
        for blob in _blobs(entry=entry):
            if blob.size == 0 and blob.sha256 == EMPTY_SHA256:
                continue
            if _has_size(path=str(self.store.blob_path(sha256=blob.sha256)), size=blob.size):
                continue
            data = inline.get(blob.sha256)
            if data is not None:
                if len(data) != blob.size or sha256_bytes(data=data) != blob.sha256:
                    return f"names a file {blob.sha256} whose content has another digest (damaged)"
                self.store.put_bytes(data=data)
                continue
            problem = self.store.receive(blob=blob, fill=partial(self._download, blob=blob))
            if problem is not None:
                return problem
        return None

    def _download(self, file: BinaryIO, /, *, blob: Blob) -> str | None:
        """Stream a blob into `file`, hashing it as it comes; why it is not the blob the
        entry names, or None."""
        sink = Digesting(file=file, limit=blob.size)
        try:
            moved = self.remote.get_into(kind="cas", name=_hex(blob.sha256), sink=sink)
        except RemoteError as exc:
            return f"names a file {blob.sha256} that could not be fetched ({exc})"
        except SinkRefused as exc:
            if isinstance(exc.__cause__, OSError):
                raise exc.__cause__ from None  # the local disk: a write fault, as any other
            return f"names a file {blob.sha256} whose content has another digest (damaged)"
        if moved is None:
            return f"names a file {blob.sha256} the shared cache does not hold"
        if sink.found() != (blob.sha256, blob.size):
            return f"names a file {blob.sha256} whose content has another digest (damaged)"
        return None

    def _reject(self, *, reason: Rejection, message: str) -> None:
        with self._lock:
            self.rejected[reason] += 1
            self._refusals.append((reason, message))

    def _say_refusals(self) -> None:
        """Each refused entry for the first few of a reason (in a steady order: the lookups
        finish in any), then one line for the rest of that reason."""
        for reason, words in _REASON_WORDS.items():
            messages = sorted(message for why, message in self._refusals if why == reason)
            for message in messages[:REJECTIONS_NAMED]:
                self._warn(message, None, HINT_LOOKUPS)
            left = len(messages) - REJECTIONS_NAMED
            if left > 0:
                self._warn(
                    f"... and {plural(count=left, noun='more entry', nouns='more entries')}"
                    f" of the shared cache {self.remote.url} refused for {words}; they count "
                    "as misses (report.json cache.remote_rejected counts them all)",
                    None,
                    HINT_LOOKUPS,
                )
        self._refusals = []

    def _say_errors(self, *, asked: Asked, since: int = 0) -> None:
        """The requests that failed after the `since`th failure, and what that cost: checks
        that ran as on a miss (lookups), verdicts kept in the local tier only (uploads), or
        verdicts from before a refresh left on the remote (removals)."""
        tally = self.remote.tally()
        failed = tally.errors - since
        if failed > 0:
            stop = "; it was not asked again in this run" if tally.tripped else ""
            cost, hint = _COSTS[asked]
            self._warn(
                f"The shared cache {self.remote.url} failed "
                f"{plural(count=failed, noun='request')}{stop}; "
                f"{cost} (first error: {tally.first_error})",
                None,
                hint,
            )

    # -- storing -----------------------------------------------------------------------------

    def queue(self, *, key: str, document: Mapping[str, Any]) -> None:
        """A verdict stored locally, to be stored remotely at `upload`."""
        if self.writes:
            with self._lock:
                self._queued.append((key, dict(document)))

    def upload(self, *, keep: Callable[[str], bool]) -> None:
        """Store the queued verdicts whose local entry is still this run's (`keep(key)`),
        `remote_concurrency` at once; a failure is counted, never raised."""
        with self._lock:
            queued, self._queued = self._queued, []
        chosen = [(key, document) for key, document in queued if keep(key)]
        errors_before = self.remote.tally().errors
        outcomes = self.remote.each(
            work=lambda item: self._put_unless_guarded(key=item[0], document=item[1]),
            items=chosen,
        )
        self._say_errors(asked="uploads", since=errors_before)
        guarded = outcomes.count("guarded")
        with self._lock:
            self.kept_local += guarded
        if guarded:
            self._warn(
                f"{plural(count=guarded, noun='verdict')} of this run "
                f"{'was' if guarded == 1 else 'were'} stored in the local cache only: the "
                f"shared cache {self.remote.url} holds an entry under each key signed with a "
                "key this run cannot verify (another "
                f"{SIGNING_KEY_VARIABLE}, or none set here), and a run never writes over one "
                "(the runners holding that key still reuse it; docs/shared-cache.md)",
                None,
                HINT_UPLOADS,
            )

    def _put_unless_guarded(self, *, key: str, document: dict[str, Any]) -> PushOutcome:
        """Store one verdict of this run, unless the remote holds an entry under its key
        sealed with a signature this run cannot verify. An entry the lookups did not look at
        (`--cache refresh` looks nothing up) is fetched first."""
        if key not in self._examined:
            try:
                data = self.remote.get(kind="ac", name=_hex(key))
            except RemoteError:
                return "failed"  # counted; nothing is written blind
            except SinkRefused:
                data = None  # larger than any entry: damaged, no runner's verdict
            self._examined_now(
                key=key,
                guarded=data is not None
                and self._sealed_by_another(data=data, key=key, check_id=document["check_id"]),
            )
        if key in self._guarded:
            return "guarded"
        return self._put(key=key, document=document)

    def _put(self, *, key: str, document: dict[str, Any]) -> PushOutcome:
        """Store one verdict remotely: "stored", "unusable" (a local file of it went), or
        "failed" (a request failed, counted)."""
        inline: dict[str, str] = {}
        try:
            for blob in _blobs(entry=document):
                if blob.size == 0 and blob.sha256 == EMPTY_SHA256:
                    continue
                if blob.size <= INLINE_MAX:
                    data = self.store.read_blob(blob=blob)
                    if isinstance(data, str):
                        return "unusable"  # the local copy went meanwhile: nothing to share
                    inline[blob.sha256] = base64.b64encode(data).decode("ascii")
                elif not self._upload(blob=blob):
                    return "unusable"
            text = remote_text(key=key, entry=document, inline=inline)
            self.remote.put(
                kind="ac", name=_hex(key), data=sealed(key=self._signing_key, text=text)
            )
        except RemoteError:
            return "failed"  # counted
        with self._lock:
            self.writes_done += 1
        return "stored"

    def _upload(self, *, blob: Blob) -> bool:
        """Stream a local blob to the remote unless it holds it already (by HEAD); False when
        the local copy does not hold (its digest is checked first, from the same open file)."""
        source = self.store.open_blob(blob=blob)
        if isinstance(source, str):
            return False
        with source:
            if self.remote.head(kind="cas", name=_hex(blob.sha256)) != blob.size:
                self.remote.put_from(
                    kind="cas", name=_hex(blob.sha256), source=source, size=blob.size
                )
        return True

    # -- removing --------------------------------------------------------------------------

    def drop(self, *, key: str, check_id: str) -> None:
        """A verdict from before a refresh went locally: its remote entry goes at
        `remove_dropped`, or the next runner with an empty local cache would fetch it."""
        if self.writes:
            with self._lock:
                self._dropped[key] = check_id

    def remove_dropped(self) -> None:
        """Remove the remote entries `drop` named, except those this run stores anew,
        `remote_concurrency` at once; a failure is counted, never raised."""
        with self._lock:
            dropped, self._dropped = self._dropped, {}
            storing = {key for key, _ in self._queued}
        chosen = sorted(item for item in dropped.items() if item[0] not in storing)
        errors_before = self.remote.tally().errors
        outcomes = self.remote.each(
            work=lambda item: self._remove_unless_guarded(key=item[0], check_id=item[1]),
            items=chosen,
        )
        self._say_errors(asked="removals", since=errors_before)
        guarded = outcomes.count("guarded")
        if guarded:
            self._warn(
                f"{plural(count=guarded, noun='verdict')} from before this refresh "
                f"{'was' if guarded == 1 else 'were'} left in the shared cache "
                f"{self.remote.url}: it holds {'it' if guarded == 1 else 'each'} signed with a "
                f"key this run cannot verify (another {SIGNING_KEY_VARIABLE}, or none set "
                "here), and a run never removes one (docs/shared-cache.md)",
                None,
                HINT_REMOVALS,
            )

    def _remove_unless_guarded(self, *, key: str, check_id: str) -> RemoveOutcome:
        """Remove one remote entry, read first: one sealed with a signature this run cannot
        verify stays, as it would were this run writing over it."""
        name = _hex(key)
        try:
            data = self.remote.get(kind="ac", name=name)
        except RemoteError:
            return "failed"  # counted; nothing is removed blind
        except SinkRefused:
            data = b""  # larger than any entry: damaged, no runner's verdict
        if data is None:
            return "absent"
        if self._sealed_by_another(data=data, key=key, check_id=check_id):
            return "guarded"
        try:
            self.remote.delete(kind="ac", name=name)
        except RemoteError:
            return "failed"  # counted
        return "removed"

    def push(self, *, keys: Sequence[str]) -> Pushed:
        """Store the local entries of `keys` the remote lacks (`eb cache push`), checked by
        HEAD first, `remote_concurrency` at once. Only entries whose local MAC holds travel,
        without that MAC (it is keyed by the local secret, which never leaves the machine)."""
        outcomes = self.remote.each(work=lambda key: self._push_one(key=key), items=keys)
        return Pushed(
            stored=outcomes.count("stored"),
            present=outcomes.count("present"),
            unusable=outcomes.count("unusable"),
            failed=outcomes.count("failed"),
        )

    def _push_one(self, *, key: str) -> PushOutcome:
        try:
            if self.remote.head(kind="ac", name=_hex(key)) is not None:
                return "present"
        except RemoteError:
            return "failed"
        document = self.store.read(key=key).document
        if type(document) is not dict or entry_problem(document) is not None:
            return "unusable"  # a local entry that fails its MAC or its schema is never shared
        return self._put(key=key, document=document)


def _hint_of(*, lookups: bool, uploads: bool) -> str:
    """The hint of a warning that the shared cache is not used at all: what the run would
    have asked of it."""
    if lookups and uploads:
        return HINT_BOTH
    return HINT_LOOKUPS if lookups else HINT_UPLOADS


_COSTS: dict[Asked, tuple[str, str]] = {
    "lookups": ("those checks ran as on a miss", HINT_LOOKUPS),
    "uploads": ("those verdicts are stored in the local cache only", HINT_UPLOADS),
    "removals": (
        "the shared cache may still hold verdicts from before this refresh",
        HINT_REMOVALS,
    ),
}


def remote_text(*, key: str, entry: Mapping[str, Any], inline: Mapping[str, str]) -> bytes:
    """A remote document's text, before it is sealed."""
    body = {
        "$schema": REMOTE_ENTRY_SCHEMA,
        "schema_version": 1,
        "kind": REMOTE_ENTRY_KIND,
        "key": key,
        "key_version": 1,
        "tool_version": tool_version(),
        "entry": {name: value for name, value in entry.items() if name != "mac"},
        "inline": dict(inline),
    }
    return json.dumps(body, ensure_ascii=False).encode("utf-8") + b"\n"


_TOP = frozenset(
    {"$schema", "schema_version", "kind", "key", "key_version", "tool_version", "entry", "inline"}
)


def _parsed(
    *, text: bytes, key: str, check_id: str
) -> tuple[str | None, dict[str, Any], dict[str, bytes]]:
    """(problem, entry, inline files) of a remote document's text."""
    try:
        document = loads_json(text)
    except ValueError:
        return "is not valid JSON (truncated or foreign)", {}, {}
    if type(document) is not dict or not document.keys() <= _TOP:
        return "is not a shared cache entry", {}, {}
    if document.get("kind") != REMOTE_ENTRY_KIND or document.get("schema_version") != 1:
        return "is not a shared cache entry of this version", {}, {}
    if document.get("key_version") != 1 or document.get("key") != key:
        return "belongs to another key (a foreign entry)", {}, {}
    entry = document.get("entry")
    if type(entry) is not dict or "mac" in entry:
        return "holds no entry", {}, {}
    problem = entry_problem({"mac": _PLACEHOLDER_MAC, **entry})
    if problem is not None:
        return f"holds an entry that is not valid ({problem})", {}, {}
    if entry["key"] != key or entry["check_id"] != check_id:
        return "belongs to another key (a foreign entry)", {}, {}
    inline: dict[str, bytes] = {}
    raw = document.get("inline", {})
    if type(raw) is not dict:
        return "has inline files that are not an object", {}, {}
    for digest, encoded in raw.items():
        if not DIGEST_RE.match(digest) or type(encoded) is not str:
            return "has an inline file that is not named by its digest", {}, {}
        try:
            inline[digest] = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            return "has an inline file that is not base64", {}, {}
    return None, entry, inline


def _blobs(*, entry: Mapping[str, Any]) -> Sequence[Blob]:
    items = [*entry.get("files", []), entry.get("result_file")]
    return [
        Blob(sha256=item["sha256"], size=int(item["size"]))
        for item in items
        if isinstance(item, dict)
    ]


class Digesting:
    """A sink that hashes what it is given and passes it on to `file` (if any); past `limit`
    bytes it refuses more, so a remote that sends too much fills no disk."""

    def __init__(self, *, file: BinaryIO | None, limit: int | None) -> None:
        self.file = file
        self.limit = limit
        self.size = 0
        self._digest = hashlib.sha256()

    def write(self, data: bytes, /) -> int:
        self.size += len(data)
        if self.limit is not None and self.size > self.limit:
            raise SinkRefused(f"more than the {self.limit} bytes asked for")
        self._digest.update(data)
        if self.file is not None:
            try:
                self.file.write(data)
            except OSError as exc:
                raise SinkRefused(f"cannot be kept: {exc.strerror or exc}") from exc
        return len(data)

    def found(self) -> tuple[str, int]:
        """`sha256:<hex>` and the size of what was written."""
        return f"sha256:{self._digest.hexdigest()}", self.size


def _hex(digest: str) -> str:
    """The hex part of `sha256:<hex>`: an object's name on the remote."""
    return digest.split(":", 1)[1]


def _has_size(*, path: str, size: int) -> bool:
    try:
        return os.stat(path).st_size == size
    except OSError:
        return False
