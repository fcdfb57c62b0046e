"""A verdict that ran, made into the entry the cache keeps: its output files and evidence
stored as blobs, the result, and the text a reuse of it will write (cache/reuse.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eval_banana.cache.blobs import BlobStore
from eval_banana.cache.entry import ENTRY_KIND, ENTRY_SCHEMA
from eval_banana.cache.namedfiles import names_to_store
from eval_banana.cache.reuse import REUSE_LAYOUT, restored
from eval_banana.core.files import CHECK_OUTPUT_NAMES, entries_below
from eval_banana.core.version import tool_version
from eval_banana.core.words import SURROGATES, visible
from eval_banana.models.result import CheckResult, result_json_text
from eval_banana.models.stages import PlannedCheck
from eval_banana.runners.results import iso, utc_now


def entry_document(
    *,
    store: BlobStore,
    check: PlannedCheck,
    result: CheckResult,
    key: str,
    run_id: str,
    checks_dir: Path,
) -> dict[str, Any]:
    """The entry that keeps `result` under `key`; its files and its reuse text go into `store`.
    UnstorableName, before anything is stored, when an evidence file's name is not UTF-8."""
    evidence = checks_dir / check.stem
    evidence_files = _evidence_files(folder=evidence)
    _refuse_names_json_cannot_hold(folder=evidence, sources=evidence_files)
    files = []
    for name in CHECK_OUTPUT_NAMES:  # the files of checks/ stored per check
        source = checks_dir / f"{check.stem}.{name}"
        if source.is_file():
            blob = store.put(source=source)
            files.append({"name": name, "sha256": blob.sha256, "size": blob.size})
    held = {item["name"] for item in files}
    for name in names_to_store(stem=check.stem, details=result.details):
        # A retried judge's earlier attempts, which its result names as their evidence.
        source = checks_dir / f"{check.stem}.{name}"
        if name not in held and source.is_file():
            blob = store.put(source=source)
            files.append({"name": name, "sha256": blob.sha256, "size": blob.size})
    for source in evidence_files:
        blob = store.put(source=source)
        name = "evidence/" + source.relative_to(evidence).as_posix()
        files.append({"name": name, "sha256": blob.sha256, "size": blob.size})
    details = {k: v for k, v in result.details.items() if k != "cache"}
    document = {
        "$schema": ENTRY_SCHEMA,
        "schema_version": 1,
        "kind": ENTRY_KIND,
        "key": key,
        "key_version": 1,
        "tool_version": tool_version(),
        "check_id": check.id,
        "check_type": check.type,
        "check_definition_sha256": check.check_definition_sha256,
        "expect": result.expect,
        "from_run_id": run_id,
        "stored_at": iso(utc_now()),
        "result": {
            "status": result.status,
            "score": result.score,
            "observed_status": result.observed_status or result.status,
            "reason": result.reason,
            "exit_code": result.exit_code,
            "stdout": result.stdout,
            "stderr": result.stderr,
            "details": details,
            "started_at": result.started_at,
            "completed_at": result.completed_at,
            "duration_ms": result.duration_ms,
        },
        "files": files,
        # Judged on this machine: a push may sign it under any signing key.
        "origin": {"by": "judged"},
    }
    # The text a reuse will write, kept so that the reuse can link it instead.
    reused = restored(check=check, document=document, key=key, started=utc_now())
    blob = store.put_bytes(data=result_json_text(result=reused).encode("utf-8"))
    document["result_file"] = {
        "sha256": blob.sha256,
        "size": blob.size,
        "source_path": check.source_path,
        "layout": REUSE_LAYOUT,
    }
    return document


def _evidence_files(*, folder: Path) -> list[Path]:
    """Regular files a deterministic check left in its output folder (links are not kept)."""
    return sorted(
        Path(entry.path) for entry in entries_below(folder) if entry.is_file(follow_symlinks=False)
    )


class UnstorableName(ValueError):
    """An evidence file whose name is not UTF-8: an entry (JSON, UTF-8) cannot name it, and
    stored under another name its replay would restore a file the check never wrote."""

    def __init__(self, *, path: Path) -> None:
        super().__init__(
            f"its evidence file {visible(str(path))} has a name that is not UTF-8 (shown as "
            "\\xNN), which a cache entry cannot hold"
        )
        self.path = path


def _refuse_names_json_cannot_hold(*, folder: Path, sources: list[Path]) -> None:
    for source in sources:
        if SURROGATES.search(str(source.relative_to(folder))) is not None:
            raise UnstorableName(path=source)
