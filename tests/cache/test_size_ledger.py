"""The cache's size ledger: eviction walks the folder only when it must."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.cache.ledger import LEDGER_NAME, WALK_EVERY_SECONDS
from eval_banana.cache.store import CacheStore
from eval_banana.stagefiles.schemafiles import packaged_schema_problem
from tests.cache.rig import noisy_project

MB = 1024 * 1024


def _store(tmp_path: Path, *, max_bytes: int = 100 * MB) -> CacheStore:
    store = CacheStore(folder=tmp_path / "cache", max_bytes=max_bytes)
    store.folder.mkdir()
    return store


def _ledger(store: CacheStore) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((store.folder / LEDGER_NAME).read_text())
    return document


def _own_bytes(folder: Path) -> int:
    """What a walk counts: eb's entries, kept runs and blobs (never its mark, lock, secret or
    ledger, nor a file of the user's)."""
    return sum(
        path.stat().st_size
        for part in ("entries", "runs", "blobs")
        for path in (folder / part).rglob("*")
        if path.is_file()
    )


def _folder_bytes(store: CacheStore) -> int:
    return _own_bytes(store.folder)


def _behind_eb_s_back(store: CacheStore, *, size: int) -> Path:
    """A file eb did not store (copied in by hand): only a walk sees it."""
    stray = store.folder / "blobs" / "ff" / ("f" * 64)
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(os.urandom(size))
    os.utime(stray, (10, 10))  # older than anything: the first to go when a walk evicts
    return stray


def test_a_walk_leaves_the_folder_s_size_in_a_ledger_valid_against_its_schema(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)
    store.put_bytes(data=os.urandom(300_000))
    store.write(key="sha256:" + "a" * 64, document={"check_id": "a"})
    before = time.time()
    assert store.evict() == 0
    ledger = _ledger(store)
    assert packaged_schema_problem(ledger, name="cache-size") is None
    assert ledger["size_bytes"] == _folder_bytes(store)
    assert before <= ledger["walked_at"] <= time.time()


def test_far_below_the_limit_a_fresh_ledger_spares_the_walk_and_counts_what_was_stored(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path, max_bytes=4 * MB)
    store.put_bytes(data=os.urandom(100_000))
    store.evict()
    walked = _ledger(store)
    # A file eb did not store pushes the folder over its limit, unseen: no walk happened.
    stray = _behind_eb_s_back(store, size=5 * MB)
    blob = store.put_bytes(data=os.urandom(200_000))
    assert store.evict() == 0
    assert stray.exists()
    ledger = _ledger(store)
    assert ledger["walked_at"] == walked["walked_at"]
    assert ledger["size_bytes"] == walked["size_bytes"] + blob.size
    # A day later the ledger is not trusted: the walk sees the stray file and evicts it.
    os.utime(store.blob_path(sha256=blob.sha256), (time.time(), time.time()))
    (store.folder / LEDGER_NAME).write_text(
        json.dumps({**ledger, "walked_at": time.time() - WALK_EVERY_SECONDS - 1})
    )
    store.put_bytes(data=os.urandom(1_000))
    assert store.evict() >= 5 * MB
    assert not stray.exists()
    assert _ledger(store)["size_bytes"] == _folder_bytes(store) <= 4 * MB


def test_near_the_limit_every_eviction_walks(tmp_path: Path) -> None:
    store = _store(tmp_path, max_bytes=4 * MB)
    store.put_bytes(data=os.urandom(2_200_000))  # over half the limit
    store.evict()
    stray = _behind_eb_s_back(store, size=3 * MB)
    store.put_bytes(data=os.urandom(1_000))
    assert store.evict() >= 3 * MB
    assert not stray.exists()


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '{"size_bytes": 1}',
        '{"size_bytes": -5, "walked_at": 1}',
        '{"size_bytes": 1, "walked_at": 1, "more": 2}',
        '{"size_bytes": "1", "walked_at": 1}',
        "[1, 2]",
        "FUTURE",
    ],
)
def test_a_ledger_that_is_not_eb_s_or_from_the_future_is_not_trusted(
    tmp_path: Path, text: str
) -> None:
    store = _store(tmp_path, max_bytes=4 * MB)
    if text == "FUTURE":
        text = json.dumps({"size_bytes": 0, "walked_at": time.time() + 3600})
    (store.folder / LEDGER_NAME).write_text(text)
    stray = _behind_eb_s_back(store, size=5 * MB)
    store.put_bytes(data=os.urandom(1_000))
    assert store.evict() >= 5 * MB
    assert not stray.exists()
    assert packaged_schema_problem(_ledger(store), name="cache-size") is None


def test_runs_keep_the_ledger_and_never_evict_it_as_a_stray_file(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    project = noisy_project(tmp_path=tmp_path, eb=eb, checks=3, output_bytes=300_000, max_mb=1)
    project.run("--max-parallel-checks", "1")
    ledger_file = project.cache_dir / LEDGER_NAME
    ledger = json.loads(ledger_file.read_text())
    # The folder outgrew its 1 MB limit: the run walked, evicted, and left the size it left.
    counted = _own_bytes(project.cache_dir)
    assert ledger["size_bytes"] == counted <= MB
    assert 1 <= len(project.entries()) < 3
