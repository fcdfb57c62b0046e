"""What `eb cache stats` and `eb cache verify` print with `--json`: the sources of
schemas/cache-stats.schema.json and schemas/cache-verify.schema.json."""

from __future__ import annotations

from typing import Literal

from eval_banana.core.record import Field, Record

CACHE_STATS_SCHEMA = "https://eval-banana.dev/schemas/cache-stats.schema.json"
CACHE_VERIFY_SCHEMA = "https://eval-banana.dev/schemas/cache-verify.schema.json"


class LocalTierStats(Record):
    """What the cache folder holds now."""

    model_config = {"extra": "forbid"}

    folder: str = Field(description="The cache folder ([cache] dir).")
    entries: int = Field(ge=0, description="Verdict entries (entries/).")
    entry_bytes: int = Field(ge=0)
    blobs: int = Field(ge=0, description="Stored output files (blobs/), each kept once.")
    blob_bytes: int = Field(ge=0)
    kept_runs: int = Field(ge=0, description="Whole runs kept for replay (runs/).")
    kept_run_bytes: int = Field(ge=0)
    unfinished: int = Field(
        default=0,
        ge=0,
        description="Temporary files of writes under way, or left by a writer killed part-way "
        "(`eb cache prune` removes those no longer written to).",
    )
    unfinished_bytes: int = Field(default=0, ge=0)
    total_bytes: int = Field(ge=0, description="Everything above (not the secret or the lock).")


class RemoteTierStats(Record):
    """What the shared cache holds now, as it lists it."""

    model_config = {"extra": "forbid"}

    url: str = Field(description="The shared cache ([cache] remote).")
    listing: Literal["listed", "unsupported"] = Field(
        description="listed: the counts below are what it listed; unsupported: it cannot list "
        "what it holds (a plain HTTP cache such as bazel-remote or nginx), and the counts are "
        "null."
    )
    entries: int | None = Field(default=None, ge=0, description="Verdict entries (ac/).")
    entry_bytes: int | None = Field(default=None, ge=0)
    blobs: int | None = Field(default=None, ge=0, description="Stored files (cas/).")
    blob_bytes: int | None = Field(default=None, ge=0)
    unfinished: int | None = Field(
        default=None,
        ge=0,
        description="Temporary files of writes under way, or left by a writer killed part-way "
        "(a folder's; `eb cache prune --remote` removes those no longer written to).",
    )
    unfinished_bytes: int | None = Field(default=None, ge=0)
    total_bytes: int | None = Field(
        default=None, ge=0, description="Entries, blobs and unfinished writes."
    )


class HitRate(Record):
    """How often the last runs reused a verdict, from their history records."""

    model_config = {"extra": "forbid"}

    source: Literal["history"] = Field(
        default="history",
        description="Read from the run records of [history] dir (.eval-banana/history/).",
    )
    runs: int = Field(ge=0, description="Run records read (the newest first).")
    checks: int = Field(ge=0, description="Checks those runs counted.")
    cached: int = Field(ge=0, description="Of those, verdicts reused from the cache.")
    rate: float | None = Field(
        default=None, description="cached / checks, 0 to 1; null when no run was recorded."
    )


class CacheStatsDoc(Record):
    """`eb cache stats --json`."""

    model_config = {"extra": "forbid", "populate_by_name": True}

    schema_uri: str = Field(default=CACHE_STATS_SCHEMA, alias="$schema")
    schema_version: Literal[1] = 1
    local: LocalTierStats
    remote: RemoteTierStats | None = Field(
        default=None, description="With --remote: the shared cache; null without."
    )
    hit_rate: HitRate


class DamagedBlob(Record):
    """A stored file whose content no longer has the digest it is named by, or a local entry
    or kept run a run would not use (its MAC, its JSON, its schema, its key)."""

    model_config = {"extra": "forbid"}

    tier: Literal["local", "remote"]
    kind: Literal["blob", "entry", "kept_run"] = Field(
        default="blob",
        description="blob: a stored file (or a file carried inline in a remote entry); entry: "
        "a local verdict entry (entries/); kept_run: a local kept run (runs/).",
    )
    name: str = Field(
        description="The file's name: the SHA-256 (hex) its content must have (for a remote "
        "entry that cannot be read, the entry's name; for a local entry or kept run, its "
        "file's name, the key's hex and .json)."
    )
    entry: str | None = Field(
        default=None,
        description="For a file carried inline in a remote entry (not a blob of its own): "
        "that entry's name (its key, hex); null for a blob.",
    )
    problem: str = Field(description="What was found: another digest, or why it was unreadable.")


class CacheVerifyDoc(Record):
    """`eb cache verify --json`: every blob re-hashed, every local entry and kept run read as
    a run reads them, and the damaged ones."""

    model_config = {"extra": "forbid", "populate_by_name": True}

    schema_uri: str = Field(default=CACHE_VERIFY_SCHEMA, alias="$schema")
    schema_version: Literal[1] = 1
    local_folder: str = Field(description="The cache folder checked.")
    local_blobs: int = Field(ge=0, description="Local blobs re-hashed.")
    local_entries: int = Field(
        default=0, ge=0, description="Local verdict entries read as a run reads them."
    )
    local_kept_runs: int = Field(
        default=0, ge=0, description="Local kept runs read as a replay reads them."
    )
    remote: str | None = Field(default=None, description="The shared cache checked, or null.")
    remote_blobs: int = Field(default=0, ge=0, description="Remote blobs fetched and re-hashed.")
    remote_entries: int = Field(
        default=0, ge=0, description="Remote entries fetched for the files they carry inline."
    )
    remote_inline: int = Field(
        default=0, ge=0, description="Files carried inline in those entries, re-hashed."
    )
    remote_requests: int = Field(
        default=0,
        ge=0,
        description="Requests made to the shared cache (as a run's report counts them).",
    )
    damaged: list[DamagedBlob] = Field(default_factory=list)
    ok: bool = Field(description="No file is damaged (eb exits 0 exactly then).")
