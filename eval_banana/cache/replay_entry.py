"""A run replay: a fully cached run kept whole, the single source of
`schemas/run-replay.schema.json`.

    <cache dir>/runs/<2 hex>/<64 hex>.json

A replay is keyed by what decides a run's plan (settings, check files, agent, variable names,
eb itself) and holds what the run's folder held: the per-check files as blobs, and the stage
files and reports as blobs with the places where the run's own values stood (its id, folder,
times and upstream digests). It is read on every cached run, so it is checked by
`replay_problem` (standard library, no jsonschema import on the everyday path); a test holds
that check to the published schema.
"""

from __future__ import annotations

import re
from typing import Literal

from eval_banana.cache.entry import DIGEST_PATTERN, DIGEST_RE, MAC_RE
from eval_banana.core.mac import MAC_PATTERN
from eval_banana.core.record import Field, Record
from eval_banana.stagefiles.layout import SCHEMA_BASE

REPLAY_KIND = "eval-banana/run-replay"
REPLAY_SCHEMA = f"{SCHEMA_BASE}run-replay.schema.json"
# The run's own values a replay fills in: its id and folder, its times (the start also as
# report.html shows it), upstream digests, and the digests of the reports it wrote.
SLOT_PATTERN = (
    r"^(run_id|run_dir|duration_ms|started_at|started_at:shown|completed_at"
    r"|digest:(config|discover|validate|guard|execute|score|report\.json|report\.md)"
    r"|created_at:(run|config|discover|validate|guard|execute|score|report))$"
)
_SLOT_RE = re.compile(SLOT_PATTERN)
# Run-folder paths a replay writes: no absolute path, no `..`, no empty part.
PATH_PATTERN = r"^(?!/)(?!.*(^|/)\.\.?(/|$))(?!.*//)[^\0\\]+$"


class ReplaySlot(Record):
    """One place in a stored file where the run's own value stood."""

    model_config = {"extra": "forbid"}

    offset: int = Field(ge=0, description="Byte offset of the value in the stored file.")
    length: int = Field(ge=1, description="Its length in bytes there.")
    name: str = Field(
        description="What goes there in a replay: the run id or folder, a stage's creation "
        "time, the run's start, end or duration, or the digest of an upstream stage file or "
        "of a report the replay wrote before.",
        pattern=SLOT_PATTERN,
    )


class ReplayFile(Record):
    """A file of the run folder kept as a blob: linked as it is in a replay."""

    model_config = {"extra": "forbid"}

    name: str = Field(
        description="Path relative to the run folder.",
        # As schema text only: pydantic's regex engine has no look-ahead.
        json_schema_extra={"pattern": PATH_PATTERN},
    )
    sha256: str = Field(pattern=DIGEST_PATTERN, description="Content digest; the blob's name.")
    size: int = Field(ge=0)


class ReplayTemplate(ReplayFile):
    """A stage file or report kept as a blob, written in a replay with its slots filled."""

    slots: list[ReplaySlot] = Field(default_factory=list)


class DeclaredState(Record):
    model_config = {"extra": "forbid"}

    patterns: list[str] = Field(description="One check's `inputs:` patterns.")
    digest: str = Field(pattern=DIGEST_PATTERN, description="Their input state when the run ran.")


class WatchedFile(Record):
    """A file the plan read that the input states may not cover (a referenced script, an
    assertions artifact, the calibration record the guard consulted)."""

    model_config = {"extra": "forbid"}

    path: str
    blob: str | None = Field(
        description="Its git blob id then, or null: it was absent. A symbolic link's is its "
        "text's id and the file it led to (`<id>><mode>:<id>`, `<id>>-` for no file)."
    )


class WatchedDataset(Record):
    """A family's `cases_from` and the files it named when the run ran: a row is no input
    state of its own cases (it is in their definition digests), so the replay watches the
    dataset itself, the files a glob matches among it (a file added is new cases)."""

    model_config = {"extra": "forbid"}

    check_file: str = Field(description="The family's check file, as the plan names it.")
    pattern: str = Field(description="Its `cases_from`.")
    files: list[str] = Field(description="The project-relative files it named, in order.")


class ReplayEntry(Record):
    """A fully cached run as a later run with the same key and state rebuilds it."""

    model_config = {"extra": "forbid", "populate_by_name": True}

    mac: str = Field(
        pattern=MAC_PATTERN,
        description="HMAC-SHA256 of the record's text without this member, keyed by the "
        "cache's secret (<cache dir>/secret.key); written first. A record without a valid MAC "
        "is never replayed.",
    )
    schema_uri: str = Field(alias="$schema")
    schema_version: Literal[1] = 1
    kind: Literal["eval-banana/run-replay"] = "eval-banana/run-replay"
    key: str = Field(pattern=DIGEST_PATTERN, description="The replay key this entry answers.")
    tool_version: str
    from_run_id: str = Field(description="The run this replay was taken from.")
    stored_at: str = Field(description="When it was stored (ISO 8601, UTC).")
    exit_code: Literal[0, 1] = Field(
        description="The kept run's exit code: a replay derives its own from the score it "
        "replays and goes the usual way unless this agrees."
    )
    whole_project: str | None = Field(
        description="The whole project's state when the run ran, when a check reads it all.",
        pattern=DIGEST_PATTERN,
    )
    declared: list[DeclaredState] = Field(default_factory=list)
    watched: list[WatchedFile] = Field(default_factory=list)
    datasets: list[WatchedDataset] = Field(
        default_factory=list,
        description="Every planned family's `cases_from` and the files it named; their "
        "contents are among `watched`.",
    )
    verdict_keys: list[str] = Field(
        default_factory=list,
        description="The verdict entries the run reused: a replay needs each still stored.",
        json_schema_extra={"items": {"type": "string", "pattern": DIGEST_PATTERN}},
    )
    folders: list[str] = Field(
        default_factory=list,
        description="Folders made in the run folder.",
        json_schema_extra={"items": {"type": "string", "pattern": PATH_PATTERN}},
    )
    files: list[ReplayFile] = Field(default_factory=list)
    templates: list[ReplayTemplate] = Field(default_factory=list)
    progress: list[str] = Field(
        default_factory=list,
        description="The run's progress lines (`<check id>: <status> ...`), printed again.",
    )
    folded: list[int] = Field(
        default_factory=list,
        description="Positions in `progress` of the lines a log folds into a count: the "
        "plainly passing cases of a dataset family of more than 20 cases.",
        json_schema_extra={"items": {"type": "integer", "minimum": 0}},
    )


# ---- the published schema's rules, checked with the standard library ----

_TOP_KEYS = frozenset(spec.alias or name for name, spec in ReplayEntry.model_fields.items())
_REQUIRED = tuple(
    spec.alias or name for name, spec in ReplayEntry.model_fields.items() if spec.is_required()
)
_TEXT_FIELDS = ("tool_version", "from_run_id", "stored_at")


def _text(value: object) -> bool:
    return type(value) is str


def _count(value: object, *, least: int) -> bool:
    return type(value) is int and value >= least


def _position(value: object) -> bool:
    return _count(value, least=0)


def _digest(value: object) -> bool:
    return _text(value) and bool(DIGEST_RE.match(str(value)))


def _relative_path(name: object) -> bool:
    """PATH_PATTERN without a regular expression (3,000 names a replay, read on every run)."""
    if type(name) is not str or name == "" or name[0] == "/":
        return False
    wrapped = f"/{name}/"  # a "." or ".." part, at either end too
    return (
        "//" not in name
        and "\0" not in name
        and "\\" not in name
        and "/./" not in wrapped
        and "/../" not in wrapped
    )


def _file_problem(item: object, *, what: str, template: bool) -> str | None:
    keys = {"name", "sha256", "size"}
    allowed = keys | {"slots"} if template else keys
    if type(item) is not dict or not keys <= item.keys() <= allowed:
        return f"{what} is not {{name, sha256, size}}"
    if not _relative_path(item["name"]):
        return f"{what} has a bad name"
    if not _digest(item["sha256"]) or not _count(item["size"], least=0):
        return f"{what} has a bad sha256 or size"
    for slot in item.get("slots", []) if template else []:
        if (
            type(slot) is not dict
            or slot.keys() != {"offset", "length", "name"}
            or not _count(slot["offset"], least=0)
            or not _count(slot["length"], least=1)
            or not _text(slot["name"])
            or not _SLOT_RE.match(slot["name"])
        ):
            return f"{what} has a bad slot"
    return None


def _items_problem(*, name: str, items: object, template: bool = False) -> str | None:
    if type(items) is not list:
        return f"{name} is not a list"
    for item in items:
        found = _file_problem(item, what=f"a {name} item", template=template)
        if found is not None:
            return found
    return None


def head_problem(document: object) -> str | None:
    """`replay_problem` short of the items of `files` and `verdict_keys` (`bulk_problem`):
    what a replay reads before it starts bringing files."""
    if type(document) is not dict:
        return "not a JSON object"
    if not document.keys() <= _TOP_KEYS:
        return f"unknown keys {sorted(document.keys() - _TOP_KEYS)}"
    missing = [name for name in _REQUIRED if name not in document]
    if missing:
        return f"missing {', '.join(missing)}"
    checks = [
        (_text(document["mac"]) and bool(MAC_RE.fullmatch(str(document["mac"]))), "bad mac"),
        (_text(document["$schema"]), "$schema is not a string"),
        (document.get("schema_version", 1) == 1, "schema_version is not 1"),
        (document.get("kind", REPLAY_KIND) == REPLAY_KIND, "kind is not a run replay"),
        (_digest(document["key"]), "bad key"),
        (document["exit_code"] in (0, 1) and type(document["exit_code"]) is int, "bad exit_code"),
        (
            document["whole_project"] is None or _digest(document["whole_project"]),
            "bad whole_project",
        ),
        *((_text(document[name]), f"{name} is not a string") for name in _TEXT_FIELDS),
        (type(document.get("files", [])) is list, "files is not a list"),
        (type(document.get("verdict_keys", [])) is list, "verdict_keys is not a list"),
    ]
    for ok, problem in checks:
        if not ok:
            return problem
    lists = {
        "declared": lambda d: (
            type(d) is dict
            and d.keys() == {"patterns", "digest"}
            and _digest(d["digest"])
            and type(d["patterns"]) is list
            and all(_text(p) for p in d["patterns"])
        ),
        "watched": lambda w: (
            type(w) is dict
            and w.keys() == {"path", "blob"}
            and _text(w["path"])
            and (w["blob"] is None or _text(w["blob"]))
        ),
        "datasets": lambda d: (
            type(d) is dict
            and d.keys() == {"check_file", "pattern", "files"}
            and _text(d["check_file"])
            and _text(d["pattern"])
            and type(d["files"]) is list
            and all(_text(f) for f in d["files"])
        ),
        "folders": _relative_path,
        "progress": _text,
        "folded": _position,
    }
    for name, valid in lists.items():
        items = document.get(name, [])
        if type(items) is not list or not all(valid(item) for item in items):
            return f"{name} is not a list of valid items"
    folded, lines = document.get("folded", []), len(document.get("progress", []))
    rising = all(a < b for a, b in zip(folded, folded[1:], strict=False))
    if folded and (not rising or folded[-1] >= lines):
        return "folded is not a rising list of positions in progress"
    return _items_problem(name="templates", items=document.get("templates", []), template=True)


_FILE_KEYS = frozenset({"name", "sha256", "size"})


def _files_sound(items: object) -> bool:
    """Whether every per-check file item is sound, as `_items_problem` asks, in one lean pass:
    a replay reads 4,000 of them on every run, and cases that print alike share their digests,
    each checked once here."""
    if type(items) is not list:
        return False
    digests: set[object] = set()
    for item in items:
        if type(item) is not dict or item.keys() != _FILE_KEYS:
            return False
        size = item["size"]
        if type(size) is not int or size < 0 or not _relative_path(item["name"]):
            return False
        digest = item["sha256"]
        if type(digest) is not str:
            return False
        digests.add(digest)
    return all(_digest(digest) for digest in digests)


def bulk_problem(*, files: object, verdict_keys: object) -> str | None:
    """What is wrong with a replay's per-check files or verdict keys, or None."""
    if type(verdict_keys) is not list or not all(_digest(key) for key in verdict_keys):
        return "verdict_keys is not a list of valid items"
    if _files_sound(files):
        return None
    return _items_problem(name="files", items=files)  # which item, item by item


def replay_problem(document: object) -> str | None:
    """Why `document` is not a valid run replay (the published schema's rules), or None."""
    found = head_problem(document)
    if found is not None or type(document) is not dict:
        return found
    return bulk_problem(
        files=document.get("files", []), verdict_keys=document.get("verdict_keys", [])
    )
