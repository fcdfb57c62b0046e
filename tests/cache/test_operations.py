"""The local tier's prune, stats and verify on a real cache folder written by CacheStore."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import jsonschema

from eval_banana.cache.operations import local_stats, prune_local, verify_local
from eval_banana.cache.store import CacheStore
from tests.cache.rig import Project

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"

NOW = time.time()


def _entry(store: CacheStore, *, number: int, blobs: list[str], age_days: float) -> Path:
    key = f"sha256:{number:064x}"
    files = []
    for text in blobs:
        blob = store.put_bytes(data=text.encode())
        files.append({"path": f"out{len(files)}.txt", "sha256": blob.sha256, "size": blob.size})
    store.write(key=key, document={"key": key, "files": files})
    path = store.entry_path(key=key)
    moment = NOW - age_days * 86_400
    os.utime(path, (moment, moment))
    return path


def test_prune_by_size_keeps_a_blob_a_newer_entry_still_names(tmp_path: Path) -> None:
    store = CacheStore(folder=tmp_path / "cache", max_bytes=0)
    shared = "shared " * 2000
    old = _entry(store, number=1, blobs=[shared, "old only " * 2000], age_days=3)
    new = _entry(store, number=2, blobs=[shared], age_days=1)
    before = local_stats(folder=store.folder)
    assert (before.entries, before.blobs) == (2, 2)

    # Room for the newer entry and its blob only: the older one and its own blob go.
    limit = new.stat().st_size + len(shared.encode())
    done = prune_local(
        store=store, older_than_days=None, max_bytes=limit, now=NOW, stale_before=NOW - 3600
    )
    assert (done.entries, done.blobs) == (1, 1)
    assert not old.exists() and new.exists()
    after = local_stats(folder=store.folder)
    assert after.blobs == 1 and after.total_bytes <= limit
    assert (store.folder / "secret.key").is_file()


def test_prune_by_age_and_verify_of_a_damaged_blob(tmp_path: Path) -> None:
    store = CacheStore(folder=tmp_path / "cache", max_bytes=0)
    _entry(store, number=1, blobs=["a" * 100], age_days=40)
    kept = _entry(store, number=2, blobs=["b" * 100], age_days=2)
    done = prune_local(
        store=store, older_than_days=30, max_bytes=None, now=NOW, stale_before=NOW - 3600
    )
    assert (done.entries, done.blobs) == (1, 1)
    assert local_stats(folder=store.folder).entries == 1 and kept.exists()

    # These entries are no run's (no schema a run accepts): verify says so, and of the blobs.
    found = verify_local(folder=store.folder)
    assert (found.blobs, found.entries) == (1, 1)
    assert [item.kind for item in found.damaged] == ["entry"]
    (blob,) = (store.folder / "blobs").glob("*/*")
    blob.chmod(0o644)
    blob.write_bytes(b"c" * 100)
    found = verify_local(folder=store.folder)
    damaged = [item for item in found.damaged if item.kind == "blob"]
    assert found.blobs == 1 and [item.name for item in damaged] == [blob.name]
    assert "another digest" in damaged[0].problem


def test_prune_counts_kept_runs_apart_from_entries(tmp_path: Path) -> None:
    # `eb cache stats` said "58 entries, 1 kept run" and prune then "59 entries".
    store = CacheStore(folder=tmp_path / "cache", max_bytes=0)
    _entry(store, number=1, blobs=["a" * 100], age_days=40)
    _entry(store, number=2, blobs=["b" * 100], age_days=40)
    key = f"sha256:{3:064x}"
    store.write_replay(key=key, document={"key": key, "files": []})
    kept_run = store.replay_path(key=key)
    moment = NOW - 40 * 86_400
    os.utime(kept_run, (moment, moment))
    assert local_stats(folder=store.folder).kept_runs == 1
    done = prune_local(
        store=store, older_than_days=30, max_bytes=None, now=NOW, stale_before=NOW - 3600
    )
    assert (done.entries, done.kept_runs, done.blobs) == (2, 1, 2)
    assert not kept_run.exists()


def test_prune_by_size_takes_the_least_recently_used_first_and_counts_a_shared_blob_once() -> None:
    # Three entries of 10 bytes; a and b share a 100-byte blob, c has its own 50 bytes.
    # 180 bytes in all: to fit in 120, the oldest (a) goes, but its blob stays with b (170);
    # then b (the next oldest) takes the shared blob with it (60).
    from eval_banana.cache.eviction import least_recently_used_over

    documents = [("b", 10, 2.0), ("a", 10, 1.0), ("c", 10, 3.0)]
    names = {"a": ["shared"], "b": ["shared"], "c": ["own"]}
    sizes = {"shared": 100, "own": 50}
    over = least_recently_used_over
    assert over(documents=documents, blob_sizes=sizes, names=names, max_bytes=180) == set()
    assert over(documents=documents, blob_sizes=sizes, names=names, max_bytes=175) == {"a"}
    assert over(documents=documents, blob_sizes=sizes, names=names, max_bytes=120) == {"a", "b"}
    assert over(documents=documents, blob_sizes=sizes, names=names, max_bytes=0) == {"a", "b", "c"}


def test_prune_by_size_drops_a_kept_run_naming_more_than_the_limit_and_keeps_entries_that_fit(
    tmp_path: Path,
) -> None:
    # `eb cache prune --max-mb 1` emptied the cache: the entries went first (the newer kept run
    # still named their blobs, so nothing was freed), then the kept run and every blob.
    store = CacheStore(folder=tmp_path / "cache", max_bytes=0)
    entries = [
        _entry(store, number=number, blobs=[f"{number} " * 50_000], age_days=10 - number)
        for number in range(1, 5)
    ]
    files = [item for path in entries for item in json.loads(path.read_text())["files"]]
    key = f"sha256:{9:064x}"
    store.write_replay(key=key, document={"key": key, "files": files})
    kept_run = store.replay_path(key=key)  # the newest: written after its entries were used
    limit = 2 * (100_000 + entries[-1].stat().st_size)
    done = prune_local(
        store=store, older_than_days=None, max_bytes=limit, now=NOW, stale_before=NOW - 3600
    )
    assert (done.entries, done.kept_runs, done.blobs) == (2, 1, 2)
    assert [path.exists() for path in entries] == [False, False, True, True]
    assert not kept_run.exists()
    assert local_stats(folder=store.folder).total_bytes <= limit


def test_prune_leaves_a_file_of_another_name_in_the_cache_s_folders(tmp_path: Path) -> None:
    store = CacheStore(folder=tmp_path / "cache", max_bytes=0)
    _entry(store, number=1, blobs=["a" * 100], age_days=40)
    strays = [
        store.folder / "blobs" / "ab" / "notes.txt",
        store.folder / "entries" / "ab" / "notes.json",
        store.folder / "runs" / "notes.json",
    ]
    for path in strays:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("the user's\n")
    done = prune_local(store=store, older_than_days=None, max_bytes=0, now=NOW, stale_before=NOW)
    assert (done.entries, done.blobs) == (1, 1)
    assert all(path.read_text() == "the user's\n" for path in strays)


def _cache(project: Project, *args: str, expect: int = 0) -> Any:
    result = project.eb("cache", *args, "--cwd", str(project.root))
    assert result.exit_code == expect, result.stdout + result.stderr
    return result


def _verified(project: Project, *, expect: int) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(_cache(project, "verify", "--json", expect=expect).stdout)
    schema = json.loads((SCHEMAS / "cache-verify.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)
    return document


def test_verify_reads_every_entry_and_kept_run_as_a_run_does(standard: Project) -> None:
    """A truncated entry was "0 damaged": verify re-hashed the blobs only."""
    standard.run()
    standard.run()  # every verdict reused: the run is kept too
    entries = sorted((standard.cache_dir / "entries").glob("*/*.json"))
    sound = _verified(standard, expect=0)
    assert sound["ok"] and sound["damaged"] == []
    assert (sound["local_entries"], sound["local_kept_runs"]) == (len(entries), 1)
    truncated = entries[0]
    truncated.write_bytes(truncated.read_bytes()[:50])
    found = _verified(standard, expect=1)
    assert not found["ok"]
    assert [(d["kind"], d["name"]) for d in found["damaged"]] == [("entry", truncated.name)]
    human = _cache(standard, "verify", expect=1).stdout
    assert f"{len(entries)} entries and 1 kept run" in human and "1 damaged" in human
    assert f"damaged (local) entry {truncated.name}: " in human


def test_a_link_in_the_cache_is_no_entry_or_blob_for_stats_and_damaged_for_verify(
    standard: Project, tmp_path: Path
) -> None:
    """A symbolic link placed in entries/ counted as an entry (and in blobs/ as a blob)."""
    standard.run()
    before = json.loads(_cache(standard, "stats", "--json").stdout)["local"]
    outside = tmp_path / "outside.bin"
    outside.write_bytes(os.urandom(1 << 20))
    links = {
        "entry": standard.cache_dir / "entries" / "00" / f"{'0' * 64}.json",
        "blob": standard.cache_dir / "blobs" / "00" / ("0" * 64),
    }
    for link in links.values():
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(outside)
    after = json.loads(_cache(standard, "stats", "--json").stdout)["local"]
    assert after == before
    found = _verified(standard, expect=1)
    assert {(d["kind"], d["name"]) for d in found["damaged"]} == {
        (kind, link.name) for kind, link in links.items()
    }
    assert all("symbolic link" in d["problem"] for d in found["damaged"])
