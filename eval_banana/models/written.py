"""`.eval-banana/written.json`: the files eb wrote into the project beside its run folders.

The single source of `schemas/written.schema.json`. An `eb run` that writes a JUnit file, a
`--result-out` document or the GitHub step summary inside the project notes each file's path
and the git blob id of what it wrote; a later run that does not write them still knows them as
eb's own while they hold those bytes (docs/incremental.md#what-eb-never-counts). The record
carries a MAC keyed by the verdict cache's secret, as cache entries do: a record eb did not
sign notes nothing.
"""

from __future__ import annotations

from typing import Literal

from eval_banana.core.mac import MAC_PATTERN
from eval_banana.core.record import Field, Record

WRITTEN_SCHEMA = "https://eval-banana.dev/schemas/written.schema.json"


class WrittenFile(Record):
    """One file eb wrote inside the project, as it left it."""

    model_config = {"extra": "forbid"}

    path: str = Field(description="POSIX path relative to the project root.")
    size: int = Field(description="Its size in bytes when eb wrote it.")
    blob_id: str = Field(description="The git blob id (SHA-1, hex) of what eb wrote there.")


class WrittenFilesBody(Record):
    """The record without its MAC: what the MAC covers."""

    model_config = {"extra": "forbid"}

    schema_uri: str = Field(default=WRITTEN_SCHEMA, alias="$schema")
    schema_version: Literal[1] = 1
    tool_version: str
    updated_at: str
    files: list[WrittenFile] = Field(
        default_factory=list,
        description="The files eb wrote inside the project, oldest first (the newest kept).",
    )


class WrittenFilesDoc(WrittenFilesBody):
    """The whole file, its MAC first: the files eb wrote last, oldest first, one entry a path."""

    mac: str = Field(
        pattern=MAC_PATTERN,
        description="HMAC-SHA256 of the record's text without this member, keyed by the "
        "verdict cache's secret (<cache dir>/secret.key); written first. A record without a "
        "valid MAC notes nothing.",
    )
