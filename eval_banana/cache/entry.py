"""A cache entry: one stored verdict, the single source of `schemas/cache-entry.schema.json`.

Entries are read on every cached run, so they are checked by `entry_problem` (standard library,
no jsonschema import on the everyday path); a test holds it to the published schema.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from eval_banana.core.mac import MAC_PATTERN
from eval_banana.core.record import Field, Record
from eval_banana.stagefiles.layout import SCHEMA_BASE

ENTRY_KIND = "eval-banana/verdict-cache-entry"
ENTRY_SCHEMA = f"{SCHEMA_BASE}cache-entry.schema.json"
# A content digest or key, as every cache file writes one.
DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"
DIGEST_RE = re.compile(DIGEST_PATTERN)
MAC_RE = re.compile(MAC_PATTERN)
# Names of the stored files: the check's stdout, stderr, prompt and transcript, a retried
# judge's earlier attempts' files and results, and a deterministic check's evidence.
FILE_NAME_PATTERN = (
    r"^((attempt[1-9][0-9]*\.)?(stdout\.txt|stderr\.txt|prompt\.txt|transcript\.jsonl)|"
    r"attempt[1-9][0-9]*\.json|"
    r"evidence/(?!/)(?!\.\.?(/|$))(?!.*/\.\.?(/|$))[^\0\\]+)$"
)
_FILE_NAME_RE = re.compile(FILE_NAME_PATTERN)


class CachedFile(Record):
    model_config = {"extra": "forbid"}

    name: str = Field(
        description="stdout.txt, stderr.txt, prompt.txt and transcript.jsonl (a judge's), "
        "attempt<n>.<those> and attempt<n>.json (a retried judge's earlier attempts), or "
        "evidence/<path> (a deterministic check's output_dir).",
        # As schema text only: pydantic's regex engine has no look-ahead.
        json_schema_extra={"pattern": FILE_NAME_PATTERN},
    )
    sha256: str = Field(pattern=DIGEST_PATTERN, description="Content digest; the blob's name.")
    size: int = Field(ge=0)


class CachedResultFile(Record):
    """checks/<stem>.json as a reuse writes it, and what its text was rendered for."""

    model_config = {"extra": "forbid"}

    sha256: str = Field(pattern=DIGEST_PATTERN, description="Content digest; the blob's name.")
    size: int = Field(ge=0)
    source_path: str | None = Field(
        default=None,
        description="The check file the text names. A reuse at this path, with the same "
        "`layout`, links the text without rendering its own to compare (absent in older "
        "entries: the reuse compares).",
    )
    layout: str | None = Field(
        default=None,
        description="The result layout the text was written in (eb's result fields and how a "
        "reuse fills them); another layout renders afresh.",
    )


class CachedOrigin(Record):
    """Where a stored verdict came from: what `eb cache push` may sign with a signing key."""

    model_config = {"extra": "forbid"}

    by: Literal["judged", "fetched"] = Field(
        description="judged: a run on this machine ran the check; fetched: a run kept it from "
        "the shared cache."
    )
    verified_with: str | None = Field(
        default=None,
        pattern=MAC_PATTERN,
        description="A fetched verdict whose signature held: HMAC-SHA-256 of its key under the "
        "EVAL_BANANA_CACHE_SIGNING_KEY that checked it (the key itself is never stored). "
        "Absent: fetched without a signature check, which no push signs.",
    )


class CachedResult(Record):
    """The parts of a check result that a reuse restores; identity comes from the plan."""

    model_config = {"extra": "forbid"}

    status: Literal["passed", "failed"]
    score: Literal[0, 1]
    observed_status: Literal["passed", "failed"]
    reason: str | None = None
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    details: dict[str, Any] = Field(default_factory=dict)
    # When the verdict was produced; a reused result reports these (absent in older entries).
    started_at: str | None = None
    completed_at: str | None = None
    duration_ms: int | None = Field(default=None, ge=0)


class CacheEntry(Record):
    """One stored verdict: `<cache dir>/entries/<2 hex>/<key hex>.json`."""

    model_config = {"extra": "forbid", "populate_by_name": True}

    mac: str = Field(
        pattern=MAC_PATTERN,
        description="HMAC-SHA256 of the entry's text without this member, keyed by the "
        "cache's secret (<cache dir>/secret.key); written first. An entry without a valid MAC "
        "is a miss.",
    )
    schema_uri: str = Field(alias="$schema")
    schema_version: Literal[1] = 1
    kind: Literal["eval-banana/verdict-cache-entry"] = "eval-banana/verdict-cache-entry"
    key: str = Field(pattern=DIGEST_PATTERN, description="The verdict key this entry answers.")
    key_version: Literal[1] = 1
    tool_version: str
    check_id: str
    check_type: str
    check_definition_sha256: str = Field(pattern=DIGEST_PATTERN)
    expect: Literal["pass", "fail"]
    from_run_id: str = Field(description="The run that produced the verdict.")
    stored_at: str = Field(description="When it was stored (ISO 8601, UTC).")
    result: CachedResult
    files: list[CachedFile] = Field(default_factory=list)
    result_file: CachedResultFile | None = Field(
        default=None,
        description="checks/<stem>.json exactly as a reuse of this verdict writes it, as a "
        "blob: a reuse links it instead of creating a file when its own text is that text.",
    )
    origin: CachedOrigin | None = Field(
        default=None,
        description="Judged here, or fetched from the shared cache (and whether its signature "
        "was checked). Absent in entries older eb stored: `eb cache push` with a signing key "
        "counts them as unverified and does not sign them. Never travels to the shared cache.",
    )


_TOP_KEYS = frozenset(spec.alias or name for name, spec in CacheEntry.model_fields.items())
_REQUIRED_TOP = tuple(
    (name, spec.alias or name)
    for name, spec in CacheEntry.model_fields.items()
    if spec.is_required()
)
_RESULT_KEYS = frozenset(CachedResult.model_fields)
_REQUIRED_RESULT = ("status", "score", "observed_status")


def _is_int(value: object) -> bool:
    # JSON Schema's "integer": an int, or a float without a fraction (never a boolean).
    return type(value) is int or (type(value) is float and value.is_integer())


def _is(value: object, constant: int) -> bool:
    return _is_int(value) and value == constant


def _text(value: object) -> bool:
    return type(value) is str


_FILE_KEYS = frozenset({"name", "sha256", "size"})
_RESULT_FILE_KEYS = frozenset({"sha256", "size"})
_RESULT_FILE_OPTIONAL = frozenset({"source_path", "layout"})
_RESULT_FILE_ALLOWED = _RESULT_FILE_KEYS | _RESULT_FILE_OPTIONAL
_ORIGIN_KEYS = frozenset(CachedOrigin.model_fields)


def _stored_problem(item: object, *, what: str, named: bool) -> str | None:
    """A stored file's reference: {sha256, size}, and its name for a `files` item (the stored
    result text may also say what it was written for)."""
    keys, allowed = (_FILE_KEYS, _FILE_KEYS) if named else (_RESULT_FILE_KEYS, _RESULT_FILE_ALLOWED)
    if type(item) is not dict or not keys <= item.keys() <= allowed:
        return f"{what} is not {{{', '.join(sorted(keys))}}}"
    if not named:
        for name in _RESULT_FILE_OPTIONAL:
            if item.get(name) is not None and not _text(item[name]):
                return f"{what}.{name} is not a string"
    if named and (not _text(item["name"]) or not _FILE_NAME_RE.match(item["name"])):
        return f"{what} has a bad name"
    if not _text(item["sha256"]) or not DIGEST_RE.match(item["sha256"]):
        return f"{what} has a bad sha256"
    if not _is_int(item["size"]) or item["size"] < 0:
        return f"{what} has a bad size"
    return None


def _result_problem(result: object) -> str | None:
    if type(result) is not dict or not result.keys() <= _RESULT_KEYS:
        return "result is not an object of the known keys"
    if any(key not in result for key in _REQUIRED_RESULT):
        return "result lacks status, score or observed_status"
    if result["status"] not in ("passed", "failed") or not _text(result["status"]):
        return "result.status is not passed or failed"
    if result["observed_status"] not in ("passed", "failed") or not _text(
        result["observed_status"]
    ):
        return "result.observed_status is not passed or failed"
    if not (_is(result["score"], 0) or _is(result["score"], 1)):
        return "result.score is not 0 or 1"
    for name in ("reason",):
        if result.get(name) is not None and not _text(result[name]):
            return f"result.{name} is not a string"
    if result.get("exit_code") is not None and not _is_int(result["exit_code"]):
        return "result.exit_code is not an integer"
    for name in ("stdout", "stderr"):
        if name in result and not _text(result[name]):
            return f"result.{name} is not a string"
    for name in ("started_at", "completed_at"):
        if result.get(name) is not None and not _text(result[name]):
            return f"result.{name} is not a string"
    duration = result.get("duration_ms")
    if duration is not None and not (_is_int(duration) and duration >= 0):
        return "result.duration_ms is not a whole number of milliseconds"
    if "details" in result and type(result["details"]) is not dict:
        return "result.details is not an object"
    return None


def _origin_problem(origin: object) -> str | None:
    if type(origin) is not dict or "by" not in origin or not origin.keys() <= _ORIGIN_KEYS:
        return "origin is not {by, verified_with}"
    if origin["by"] not in ("judged", "fetched") or not _text(origin["by"]):
        return "origin.by is not judged or fetched"
    verified = origin.get("verified_with")
    if verified is not None and not (_text(verified) and MAC_RE.fullmatch(verified)):
        return "origin.verified_with is not an hmac-sha256 digest"
    return None


def entry_problem(document: object) -> str | None:
    """Why `document` is not a valid cache entry (the published schema's rules), or None."""
    if type(document) is not dict:
        return "not a JSON object"
    keys = document.keys()
    if not keys <= _TOP_KEYS:
        return f"unknown keys {sorted(keys - _TOP_KEYS)}"
    required = [name for name, key in _REQUIRED_TOP if key not in document]
    if required:
        return f"missing {', '.join(required)}"
    checks: list[tuple[bool, str]] = [
        (_text(document["mac"]) and bool(MAC_RE.fullmatch(document["mac"])), "bad mac"),
        (_text(document["$schema"]), "$schema is not a string"),
        (_is(document.get("schema_version", 1), 1), "schema_version is not 1"),
        (document.get("kind", ENTRY_KIND) == ENTRY_KIND, "kind is not a verdict entry"),
        (_is(document.get("key_version", 1), 1), "key_version is not 1"),
        (_text(document["key"]) and bool(DIGEST_RE.match(document["key"])), "bad key"),
        (
            _text(document["check_definition_sha256"])
            and bool(DIGEST_RE.match(document["check_definition_sha256"])),
            "bad check_definition_sha256",
        ),
        (document["expect"] in ("pass", "fail") and _text(document["expect"]), "bad expect"),
    ]
    for name in ("tool_version", "check_id", "check_type", "from_run_id", "stored_at"):
        checks.append((_text(document[name]), f"{name} is not a string"))
    for ok, problem in checks:
        if not ok:
            return problem
    found = _result_problem(document["result"])
    if found is not None:
        return found
    files = document.get("files", [])
    if type(files) is not list:
        return "files is not a list"
    for item in files:
        found = _stored_problem(item, what="a files item", named=True)
        if found is not None:
            return found
    if document.get("result_file") is not None:
        found = _stored_problem(document["result_file"], what="result_file", named=False)
        if found is not None:
            return found
    if document.get("origin") is not None:
        return _origin_problem(document["origin"])
    return None


class RemoteCacheEntry(Record):
    """One verdict as the shared cache holds it: `ac/<key hex>` (docs/shared-cache.md)."""

    model_config = {"extra": "forbid", "populate_by_name": True}

    signature: str | None = Field(
        default=None,
        pattern=MAC_PATTERN,
        description="HMAC-SHA-256 of the text without this member, keyed by "
        "EVAL_BANANA_CACHE_SIGNING_KEY; written first, absent when the writer had no key.",
    )
    schema_uri: str = Field(alias="$schema")
    schema_version: Literal[1] = 1
    kind: Literal["eval-banana/remote-cache-entry"] = "eval-banana/remote-cache-entry"
    key: str = Field(pattern=DIGEST_PATTERN, description="The verdict key this entry answers.")
    key_version: Literal[1] = 1
    tool_version: str = Field(description="The eb that stored it.")
    entry: dict[str, Any] = Field(
        description="The verdict entry (cache-entry.schema.json) without its `mac` and "
        "`origin`: the local MAC is keyed by one machine's secret, and where a verdict came "
        "from is what that machine knows of it; neither travels."
    )
    inline: dict[str, str] = Field(
        default_factory=dict,
        description="Small stored files, base64, by their sha256:<hex> digest (checked on "
        "read); larger ones are blobs at cas/<sha256 hex>.",
    )
