"""What is stored and reused, what never is, damaged entries, read-only, refresh, eviction."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.cache.entry import entry_problem
from eval_banana.cache.reuse import REUSE_LAYOUT
from eval_banana.cache.store import CacheStore
from eval_banana.core.stem import artifact_stem
from eval_banana.models.result import CheckResult
from tests.cache.rig import (
    Project,
    cache_of,
    judge,
    links_to_the_limit,
    make_project,
    noisy_project,
    script_check,
    write_signed,
)

REPO = Path(__file__).resolve().parents[2]


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file below `folder` with its bytes and modification time (ns)."""
    if not folder.exists():
        return {}
    return {
        str(path.relative_to(folder)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def entry_for(project: Project, check_id: str) -> Path:
    (found,) = [p for p in project.entries() if json.loads(p.read_text())["check_id"] == check_id]
    return found


def test_off_is_the_default_and_leaves_no_cache(tmp_path: Path, eb: Callable[..., Any]) -> None:
    project = make_project(
        tmp_path=tmp_path, eb=eb, checks={"w": script_check("w", script="pass\n")}, files={}
    )
    config = project.root / ".eval-banana" / "config.toml"
    config.write_text(config.read_text().replace('mode = "on"', "# no mode: the default"))
    report = project.run()
    assert not project.cache_dir.exists()
    assert "cache" not in report["checks"][0]["details"]
    assert report["cached_checks"] == 0


def test_failed_verdicts_are_stored_errors_never(tmp_path: Path, eb: Callable[..., Any]) -> None:
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={
            "says_no": judge("says_no", instructions="SCORE_ZERO please", inputs=[]),
            "undecided": judge("undecided", instructions="NO_VERDICT please", inputs=[]),
            # A script that does not compile is an error (a missing one refuses the whole run).
            "missing_script": script_check("missing_script", script="x = (\n", inputs=[]),
            "crashes": script_check("crashes", script="raise SystemExit(3)\n", inputs=[]),
            "control": script_check(
                "control", script="raise SystemExit(1)\n", inputs=[], expect="fail"
            ),
        },
        files={},
    )
    first = {c["check_id"]: c for c in project.run(expect_exit=1)["checks"]}
    assert first["says_no"]["status"] == "failed"
    assert first["undecided"]["status"] == "error"
    assert first["missing_script"]["status"] == "error"
    assert first["crashes"]["status"] == "failed"
    stored = {json.loads(path.read_text())["check_id"] for path in project.entries()}
    assert stored == {"says_no", "crashes", "control"}
    assert cache_of(first["undecided"]) == {
        "hit": False,
        "key": cache_of(first["undecided"])["key"],
        "stored": False,
    }
    starts = project.agent_starts()
    second = {c["check_id"]: c for c in project.run(expect_exit=1)["checks"]}
    assert {k for k, c in second.items() if cache_of(c).get("hit")} == stored
    assert project.agent_starts() - starts == 1  # only the judge that errored was asked again
    assert second["says_no"]["status"] == "failed" and second["says_no"]["score"] == 0
    assert second["crashes"]["exit_code"] == 3
    # A control keeps both its judged status and what the check itself did.
    assert (second["control"]["status"], second["control"]["observed_status"]) == (
        "passed",
        "failed",
    )


def test_a_reused_verdict_restores_the_run_folder(standard: Project) -> None:
    first = standard.run()
    second = standard.run()
    first_dir, second_dir = Path(first["output_dir"]), Path(second["output_dir"])
    for name in sorted(os.listdir(first_dir / "checks")):
        original = first_dir / "checks" / name
        if original.is_file() and not name.endswith(".json"):
            assert (second_dir / "checks" / name).read_bytes() == original.read_bytes(), name
    stem = next(c["stem"] for c in _plan(second_dir) if c["id"] == "d")
    assert (second_dir / "checks" / stem / "evidence.txt").read_text() == "seen\n"
    judged = next(c for c in second["checks"] if c["check_id"] == "j")
    assert judged["details"]["cache"] == {
        "hit": True,
        "key": cache_of(judged)["key"],
        "from_run_id": first["run_id"],
        "stored_at": cache_of(judged)["stored_at"],
        # The counting agent reports no cost: the run that made the verdict spent none known.
        "from_run_cost_usd": None,
    }
    assert judged["details"]["usage"] is None  # no tokens spent on it in this run
    assert judged["reason"] == "judged by the counting agent"
    assert "thinking out loud" in judged["stderr"]


def _result_file(run: dict[str, Any], check_id: str) -> Path:
    run_dir = Path(run["output_dir"])
    stem = next(c["stem"] for c in _plan(run_dir) if c["id"] == check_id)
    return run_dir / "checks" / f"{stem}.json"


def test_a_reused_result_is_linked_from_the_cache_with_the_times_it_ran(standard: Project) -> None:
    # A hit creates no file of its own: checks/<stem>.json is a link to the text the entry
    # keeps (creating a file costs many times a link on some file systems).
    first = standard.run()
    store = CacheStore(folder=standard.cache_dir, max_bytes=1 << 30)
    for reused in (standard.run(), standard.run()):
        for check in reused["checks"]:
            assert cache_of(check)["hit"] is True
            path = _result_file(reused, check["check_id"])
            stored = json.loads(entry_for(standard, check["check_id"]).read_text())["result_file"]
            assert path.samefile(store.blob_path(sha256=stored["sha256"])), check["check_id"]
            assert json.loads(path.read_bytes()) == check  # the file is this run's result
            ran = next(c for c in first["checks"] if c["check_id"] == check["check_id"])
            times = ("started_at", "completed_at", "duration_ms")
            assert [check[name] for name in times] == [ran[name] for name in times]


def test_a_reuse_that_reads_differently_writes_its_own_file(
    standard: Project, tmp_path: Path
) -> None:
    # Moved elsewhere, the project keeps its verdicts, but each result names the new path:
    # the stored text is not this run's, so the file is written, not linked.
    standard.run()
    moved = tmp_path / "moved"
    standard.move(to=moved)
    reused = standard.run()
    for check in reused["checks"]:
        assert cache_of(check)["hit"] is True and str(moved) in check["source_path"]
        path = _result_file(reused, check["check_id"])
        assert path.stat().st_nlink == 1
        assert json.loads(path.read_bytes()) == check


def test_a_stored_result_text_names_its_check_file_and_layout_and_older_ones_are_compared(
    standard: Project,
) -> None:
    # A reuse links the stored text unrendered when it was written for this check file in this
    # layout; an entry without them (an older one) or of another layout is rendered and
    # compared, and linked only when the texts agree.
    first = standard.run()
    ran = next(c for c in first["checks"] if c["check_id"] == "w")
    entry_path = entry_for(standard, "w")
    entry = json.loads(entry_path.read_text())
    assert entry["result_file"]["source_path"] == ran["source_path"]
    assert entry["result_file"]["layout"] == REUSE_LAYOUT
    store = CacheStore(folder=standard.cache_dir, max_bytes=1 << 30)
    blob = store.blob_path(sha256=entry["result_file"]["sha256"])
    for older in ({"layout": "0:another"}, {"layout": None, "source_path": None}):
        entry["result_file"].update(older)
        standard.rewrite(entry_path, entry)
        reused = standard.run()
        check = next(c for c in reused["checks"] if c["check_id"] == "w")
        assert cache_of(check)["hit"] is True
        assert _result_file(reused, "w").samefile(blob)
        assert json.loads(blob.read_bytes()) == check


def test_a_reuse_of_its_own_layout_renders_no_result_to_compare(
    standard: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The point of naming the check file and layout: a reuse that matches both links the text
    # without rendering its result (a third of a lookup); one of another layout renders it.
    import eval_banana.cache.reuse as reuse
    import eval_banana.cache.verdictentry as verdictentry

    monkeypatch.setenv("EVAL_BANANA_CACHE_REPLAY", "false")  # every run looks its verdicts up
    rendered: list[str] = []
    real = reuse.result_json_text

    def counted(*, result: CheckResult) -> str:
        rendered.append(result.check_id)
        return real(result=result)

    # Where a session renders a result: reusing a verdict, and storing one.
    for module in (reuse, verdictentry):
        monkeypatch.setattr(module, "result_json_text", counted)
    standard.run()
    rendered.clear()
    reused = standard.run()
    assert all(cache_of(check)["hit"] is True for check in reused["checks"])
    assert rendered == []
    entry_path = entry_for(standard, "w")
    entry = json.loads(entry_path.read_text())
    entry["result_file"]["layout"] = "0:another"
    standard.rewrite(entry_path, entry)
    standard.run()
    assert rendered == ["w"]


def test_a_damaged_stored_result_text_is_written_afresh_and_dropped(standard: Project) -> None:
    standard.run()
    entry = json.loads(entry_for(standard, "w").read_text())
    blob = CacheStore(folder=standard.cache_dir, max_bytes=1 << 30).blob_path(
        sha256=entry["result_file"]["sha256"]
    )
    blob.write_bytes(blob.read_bytes().replace(b"passed", b"failed"))
    reused = standard.run()
    check = next(c for c in reused["checks"] if c["check_id"] == "w")
    # The verdict comes from the entry, which is sound: still a hit, the file this run's own.
    assert cache_of(check)["hit"] is True and check["status"] == "passed"
    path = _result_file(reused, "w")
    assert path.stat().st_nlink == 1 and json.loads(path.read_bytes()) == check
    # No later run links the damaged copy: it is gone, or a sound copy took its place (a fully
    # cached run kept for replaying stores its files' contents).
    assert not blob.exists() or hashlib.sha256(blob.read_bytes()).hexdigest() == blob.name


def test_a_stored_file_replaced_by_a_link_is_damaged_never_brought_into_a_run(
    standard: Project, tmp_path: Path
) -> None:
    """A blob that is a symbolic link to a file outside the cache, with the same content, is
    no file of the cache: neither a reuse nor a replay links or copies it into a run folder."""
    standard.run()
    standard.run()  # every verdict reused: the run is kept for replaying too
    store = CacheStore(folder=standard.cache_dir, max_bytes=1 << 30)
    outside = tmp_path / "outside"
    outside.mkdir()
    for blob in sorted((standard.cache_dir / "blobs").rglob("*")):
        if blob.is_file() and not blob.is_symlink():
            moved = outside / blob.name
            moved.write_bytes(blob.read_bytes())
            blob.unlink()
            blob.symlink_to(moved)
    linked = {path.stat().st_ino for path in outside.iterdir()}
    for _ in range(2):
        report = standard.run()
        run_dir = Path(report["output_dir"])
        brought = [path for path in run_dir.rglob("*") if not path.is_dir()]
        assert [path for path in brought if path.is_symlink()] == []
        assert [path for path in brought if path.stat().st_ino in linked] == []
    entry = json.loads(entry_for(standard, "w").read_text())
    blob = store.blob_path(sha256=entry["result_file"]["sha256"])
    assert not blob.is_symlink()


def _plan(run_dir: Path) -> list[dict[str, Any]]:
    checks: list[dict[str, Any]] = json.loads((run_dir / "stages" / "plan.json").read_text())[
        "checks"
    ]
    return checks


def _signed(entry: Path, change: dict[str, Any]) -> None:
    # Edited behind a valid MAC: the checks after the MAC must catch it.
    document = {**json.loads(entry.read_text()), **change}
    write_signed(cache_dir=entry.parents[2], path=entry, document=document)


def _mac_flipped(entry: Path) -> None:
    data = bytearray(entry.read_bytes())
    data[len(b'{"mac": "hmac-sha256:')] ^= 1  # a hex digit of the MAC, another hex digit
    entry.write_bytes(bytes(data))


DAMAGE = {
    "truncated": lambda entry, store: entry.write_bytes(entry.read_bytes()[:40]),
    "not json": lambda entry, store: entry.write_text("this is not json"),
    "no mac": lambda entry, store: entry.write_text(
        json.dumps({k: v for k, v in json.loads(entry.read_text()).items() if k != "mac"})
    ),
    "bad mac": lambda entry, store: _mac_flipped(entry),
    "edited without the secret": lambda entry, store: entry.write_bytes(
        entry.read_bytes().replace(b'"stdout.txt"', b'"stderr.txt"')
    ),
    "schema-invalid": lambda entry, store: _signed(entry, {"schema_version": 2}),
    "bad result": lambda entry, store: _signed(
        entry, {"result": {"status": "error", "score": 0, "observed_status": "error"}}
    ),
    "foreign": lambda entry, store: _signed(entry, {"key": "sha256:" + "0" * 64}),
    "blob missing": lambda entry, store: _blob(entry, store).unlink(),
    "blob damaged": lambda entry, store: _blob(entry, store).write_bytes(b"tampered output\n"),
    # No regular file where the blob was: reading it must neither hang nor abort the run.
    "blob a fifo": lambda entry, store: _in_place_of(_blob(entry, store), make=os.mkfifo),
}


def _in_place_of(path: Path, *, make: Callable[[Path], None]) -> None:
    path.unlink()
    make(path)


def _blob(entry: Path, store: CacheStore) -> Path:
    files = json.loads(entry.read_text())["files"]
    stdout = next(item for item in files if item["name"] == "stdout.txt")
    return store.blob_path(sha256=stdout["sha256"])


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_entry_is_a_miss_with_one_warning(standard: Project, damage: str) -> None:
    standard.run()
    entry = entry_for(standard, "d")
    DAMAGE[damage](entry, CacheStore(folder=standard.cache_dir, max_bytes=1 << 30))
    report = standard.run()
    ran = {c["check_id"] for c in report["checks"] if not cache_of(c).get("hit")}
    assert ran == {"d"}
    assert next(c for c in report["checks"] if c["check_id"] == "d")["status"] == "passed"
    warnings = [
        line for line in standard.last.stderr.splitlines() if "warning: Cache entry" in line
    ]
    assert len(warnings) == 1 and str(entry) in warnings[0], standard.last.stderr
    assert [w["file"] for w in report["warnings"]] == [str(entry)]
    # The check ran again and its fresh verdict replaced the damaged entry.
    assert entry_problem(json.loads(entry.read_text())) is None
    assert standard.misses() == set()


@pytest.mark.parametrize("taken", ["entry", "blob", "group"])
def test_a_folder_in_the_place_of_a_cache_file_is_a_warning_never_an_aborted_run(
    standard: Project, taken: str
) -> None:
    # A folder where the stdout blob (or the entry) goes was read as a miss, then storing the
    # fresh verdict failed on it: "Cannot write ...: Is a directory; the run is aborted" (3).
    standard.run()
    entry = entry_for(standard, "d")
    store = CacheStore(folder=standard.cache_dir, max_bytes=1 << 30)
    blob = _blob(entry, store)
    if taken == "entry":
        in_the_way = entry
        _in_place_of(entry, make=os.mkdir)
    elif taken == "blob":
        in_the_way = blob
        _in_place_of(blob, make=os.mkdir)
    else:  # the blob's group folder is a file, the blob gone with it
        in_the_way = blob.parent
        shutil.rmtree(blob.parent)
        blob.parent.write_text("not a folder")
    if in_the_way.is_dir():
        (in_the_way / "keep.txt").mkdir()  # what someone keeps there is never deleted
    for _ in range(2):  # every run until it is removed: nothing of it is deleted
        report = standard.run()
        check = next(c for c in report["checks"] if c["check_id"] == "d")
        assert check["status"] == "passed" and cache_of(check) == {
            "hit": False,
            "key": cache_of(check)["key"],
            "stored": False,
        }
        found = "a file" if taken == "group" else "a folder"
        told = [w for w in report["warnings"] if w["message"].startswith("Cannot store")]
        assert [w["message"] for w in told] == [
            f"Cannot store the verdict of check 'd' in the cache: {in_the_way} is {found} where "
            f"the cache keeps its own {'folder' if taken == 'group' else 'file'}; remove it"
        ], report["warnings"]
        assert told[0]["file"] == str(in_the_way)
        assert in_the_way.exists() and (taken == "group" or (in_the_way / "keep.txt").is_dir())
    if in_the_way.is_dir():
        shutil.rmtree(in_the_way)
    else:
        in_the_way.unlink()
    assert "d" in standard.misses()  # stored again ...
    assert standard.misses() == set()  # ... and reused


def test_read_only_reuses_and_never_writes(standard: Project) -> None:
    standard.run()
    entry_for(standard, "w").write_text("damaged")
    standard.write({"docs/guide.md": "# changed: the judge misses\n"})
    before = snapshot(standard.cache_dir)
    report = standard.run("--cache", "read-only")
    assert {c["check_id"]: bool(cache_of(c).get("hit")) for c in report["checks"]} == {
        "j": False,
        "d": True,
        "w": False,
    }
    assert snapshot(standard.cache_dir) == before  # no entry, blob, time stamp or folder


def test_read_only_without_a_cache_creates_nothing(standard: Project) -> None:
    standard.run("--cache", "read-only")
    assert not standard.cache_dir.exists()


def test_refresh_runs_everything_and_stores_it(standard: Project) -> None:
    standard.run()
    starts = standard.agent_starts()
    refreshed = standard.run("--cache", "refresh")
    assert not any(cache_of(c).get("hit") for c in refreshed["checks"])
    assert standard.agent_starts() == starts + 1
    reused = standard.run()
    assert {cache_of(c)["from_run_id"] for c in reused["checks"]} == {refreshed["run_id"]}


WRITER = "from pathlib import Path\nPath('notes.txt').open('a').write('was here\\n')\n"


def test_a_verdict_judged_unwatched_is_never_reused_where_isolation_would_refuse_it(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # A check that writes into the project it checks: an isolation error when watched.
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={"w": script_check("w", script=WRITER, inputs=["src/**"])},
        files={"src/a.txt": "a\n"},
        replay=False,
    )
    unwatched = project.run("--execution-isolation", "off")
    assert cache_of(unwatched["checks"][0])["stored"] is True
    for mode in ("detect", "copy"):
        watched = project.run("--execution-isolation", mode, expect_exit=1)
        (check,) = watched["checks"]
        assert (check["status"], cache_of(check)["hit"]) == ("error", False), mode
        assert check["details"]["isolation"]["mode"] == mode
    # Unwatched, the verdict stored unwatched still serves.
    assert cache_of(project.run("--execution-isolation", "off")["checks"][0])["hit"] is True


def test_a_verdict_judged_watched_serves_every_mode(tmp_path: Path, eb: Callable[..., Any]) -> None:
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={"r": script_check("r", script="print('reads only')\n", inputs=["src/**"])},
        files={"src/a.txt": "a\n"},
        replay=False,
    )
    project.run("--execution-isolation", "detect")
    for mode in ("copy", "detect", "off"):
        assert cache_of(project.run("--execution-isolation", mode)["checks"][0])["hit"] is True


def test_a_verdict_judged_while_isolation_ignore_let_a_write_through_serves_no_stricter_run(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool]
) -> None:
    # A judge that writes generated/notes.txt: a pass where that path is ignored, an isolation
    # error where it is not. Its key reads docs/ only, so the write leaves the key as it was.
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={"j": judge("j", instructions="WRITE_GENERATED then judge", inputs=["docs/**"])},
        files={"docs/guide.md": "# Guide\n"},
    )
    config = project.root / ".eval-banana" / "config.toml"
    lenient = config.read_text().replace(
        'agent = "counter"', 'agent = "counter"\nisolation_ignore = ["generated/**"]'
    )
    strict = config.read_text()
    config.write_text(lenient)
    (allowed,) = project.run()["checks"]
    assert allowed["status"] == "passed" and cache_of(allowed)["stored"] is True
    # A run that ignores more (the same pattern among others) reuses it.
    config.write_text(lenient.replace('["generated/**"]', '["build/**", "generated/**"]'))
    assert cache_of(project.run()["checks"][0])["hit"] is True
    # Without the pattern, neither the entry nor a kept run of the lenient runs serves.
    config.write_text(strict)
    (refused,) = project.run(expect_exit=1)["checks"]
    assert (refused["status"], cache_of(refused)["hit"]) == ("error", False)
    assert refused["details"]["error_class"] == "isolation"
    assert replays[-1] is False
    # The lenient entry is still there for the runs that ignore the path, and says so.
    config.write_text(lenient)
    (reused,) = project.run()["checks"]
    assert cache_of(reused)["hit"] is True
    assert reused["details"]["isolation"]["ignore"] == ["generated/**"]
    assert refused["details"]["isolation"]["ignore"] == []


def test_an_entry_stored_before_the_ignored_patterns_were_recorded_serves_only_runs_ignoring_none(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={"j": judge("j", inputs=["docs/**"])},
        files={"docs/guide.md": "# Guide\n"},
        replay=False,
    )
    project.run()
    (path,) = project.entries()
    document = json.loads(path.read_text())
    del document["result"]["details"]["isolation"]["ignore"]
    project.rewrite(path, document)
    assert cache_of(project.run()["checks"][0])["hit"] is True
    config = project.root / ".eval-banana" / "config.toml"
    config.write_text(
        config.read_text().replace(
            'agent = "counter"', 'agent = "counter"\nisolation_ignore = ["generated/**"]'
        )
    )
    (judged,) = project.run()["checks"]
    assert cache_of(judged) == {"hit": False, "key": cache_of(judged)["key"], "stored": True}


def test_the_mode_comes_from_the_environment_too(
    standard: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVAL_BANANA_CACHE_MODE", "off")
    standard.run()
    assert not standard.cache_dir.exists()
    config = json.loads((Path(standard.run()["output_dir"]) / "stages/config.json").read_text())
    assert config["settings"]["cache"]["mode"] == "off"
    assert config["sources"]["cache.mode"] == "env"


@pytest.mark.concurrent
def test_two_runs_storing_the_same_entries_at_once_leave_valid_entries(standard: Project) -> None:
    argv = [sys.executable, "-m", "eval_banana", "run", "--cwd", str(standard.root)]
    processes = [
        subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode()
    entries = standard.entries()
    assert len(entries) == 3
    for entry in entries:
        assert entry_problem(json.loads(entry.read_text())) is None
    assert not [p for p in standard.cache_dir.rglob("*.tmp")]
    assert standard.misses() == set()


# --- eviction --------------------------------------------------------------------------------


def _put_entry(store: CacheStore, *, key_hex: str, blob: bytes, age: float) -> Path:
    source = store.folder.parent / f"source-{key_hex}"
    source.write_bytes(blob)
    stored = store.put(source=source)
    key = f"sha256:{key_hex * 64}"
    store.write(
        key=key,
        document={
            "key": key,
            "files": [{"name": "stdout.txt", "sha256": stored.sha256, "size": stored.size}],
        },
    )
    path = store.entry_path(key=key)
    os.utime(path, (age, age))
    return path


def test_least_recently_used_entries_go_first_with_their_blobs(tmp_path: Path) -> None:
    store = CacheStore(folder=tmp_path / "cache", max_bytes=2_500_000)
    store.folder.mkdir()
    oldest = _put_entry(store, key_hex="a", blob=os.urandom(1_000_000), age=1000)
    used = _put_entry(store, key_hex="b", blob=os.urandom(1_000_000), age=2000)
    newest = _put_entry(store, key_hex="c", blob=os.urandom(1_000_000), age=3000)
    shared = json.loads(newest.read_text())["files"][0]["sha256"]
    store.touch(key="sha256:" + "b" * 64)  # a hit makes "b" the most recently used
    freed = store.evict()
    assert freed >= 1_000_000
    assert not oldest.exists() and used.exists() and newest.exists()
    blobs = sorted(p.name for p in (store.folder / "blobs").rglob("*") if p.is_file())
    assert len(blobs) == 2 and shared.split(":")[1] in blobs
    assert sum(p.stat().st_size for p in store.folder.rglob("*") if p.is_file()) <= 2_500_000


def test_an_entry_s_stored_result_text_is_kept_and_evicted_with_it(tmp_path: Path) -> None:
    store = CacheStore(folder=tmp_path / "cache", max_bytes=1_500_000)
    store.folder.mkdir()
    texts = {}
    for key_hex, age in (("a", 1000), ("b", 2000)):
        path = _put_entry(store, key_hex=key_hex, blob=os.urandom(1_000_000), age=age)
        text = store.put_bytes(data=f'{{"check_id": "{key_hex}"}}'.encode())
        # Older than every entry: were it no entry's file, it would be the first to go.
        os.utime(store.blob_path(sha256=text.sha256), (10, 10))
        document = json.loads(path.read_text())
        document["result_file"] = {"sha256": text.sha256, "size": text.size}
        store.write(key=document["key"], document=document)
        os.utime(path, (age, age))
        texts[key_hex] = store.blob_path(sha256=text.sha256)
    store.evict()
    assert not texts["a"].exists()  # gone with its entry
    assert texts["b"].exists() and store.entry_path(key="sha256:" + "b" * 64).exists()


def test_a_run_keeps_the_cache_folder_under_its_limit(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    project = noisy_project(tmp_path=tmp_path, eb=eb, checks=4, output_bytes=400_000, max_mb=2)
    project.run("--max-parallel-checks", "1")
    total = sum(p.stat().st_size for p in project.cache_dir.rglob("*") if p.is_file())
    assert 0 < total <= 2 * 1024 * 1024
    assert 1 <= len(project.entries()) < 4


def test_eviction_never_removes_a_file_eb_did_not_store_there(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    """A --cache-dir named at a folder of the user's own files: eviction deleted them, oldest
    first, a note in a subfolder too, and a file in a folder named as eb's groups."""
    project = noisy_project(tmp_path=tmp_path, eb=eb, checks=3, output_bytes=300_000, max_mb=1)
    folder = project.root / "mydata"
    users = {
        folder / "userfile.bin": os.urandom(200_000),
        folder / "sub" / "notes.txt": b"important notes\n",
        folder / "blobs" / "ab" / "notes.txt": b"not a blob\n",
        folder / "entries" / "ab" / ("a" * 64 + ".json.bak"): b"{}\n",
    }
    for path, data in users.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (10, 10))  # older than anything eb stores
    project.run("--max-parallel-checks", "1", "--cache-dir", str(folder))
    assert {path: path.read_bytes() for path in users} == users
    stored = [
        p for part in ("entries", "blobs") for p in (folder / part).glob("??/" + "?" * 64 + "*")
    ]
    assert 0 < sum(p.stat().st_size for p in stored) <= 1024 * 1024
    assert 1 <= len(list((folder / "entries").glob("*/*.json"))) < 3


def test_eviction_keeps_the_cache_s_mark_and_its_lock(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    """An evicting run removed `.eval-banana-folder` and `.lock`: a held lock file replaced
    by a new one lets two runs hold their turns at once."""
    project = noisy_project(tmp_path=tmp_path, eb=eb, checks=3, output_bytes=300_000, max_mb=1)
    project.run("--max-parallel-checks", "1")
    mark, lock = project.cache_dir / ".eval-banana-folder", project.cache_dir / ".lock"
    os.utime(mark, (10, 10))
    os.utime(lock, (10, 10))
    inode = lock.stat().st_ino
    project.run("--max-parallel-checks", "1", "--cache", "refresh")  # stores all, evicts
    assert len(project.entries()) < 3
    assert mark.is_file() and lock.stat().st_ino == inode


def test_a_kept_run_naming_more_than_the_limit_goes_alone(tmp_path: Path) -> None:
    """Eviction went strictly by age: the entries first (their blobs still named by the newer
    kept run, so nothing was freed), then the kept run and every blob: an empty cache."""
    store = CacheStore(folder=tmp_path / "cache", max_bytes=2_500_000)
    store.folder.mkdir()
    entries = [
        _put_entry(store, key_hex=key_hex, blob=os.urandom(1_000_000), age=1000 * (number + 1))
        for number, key_hex in enumerate("abcd")
    ]
    files = [json.loads(path.read_text())["files"][0] for path in entries]
    key = "sha256:" + "e" * 64
    store.write_replay(key=key, document={"key": key, "files": files})
    kept_run = store.replay_path(key=key)
    os.utime(kept_run, (9000, 9000))  # the newest: written after the run touched its entries
    store.evict()
    assert not kept_run.exists()
    # The two most recently used entries that fit stay, with their blobs.
    assert [path.exists() for path in entries] == [False, False, True, True]
    blobs = [p for p in (store.folder / "blobs").rglob("*") if p.is_file()]
    assert len(blobs) == 2


def test_eviction_removes_the_temporary_files_of_a_writer_that_is_gone(tmp_path: Path) -> None:
    store = CacheStore(folder=tmp_path / "cache", max_bytes=1_500_000)
    store.folder.mkdir()
    entry = _put_entry(store, key_hex="a", blob=os.urandom(1_000_000), age=1000)
    group = entry.parent
    dead = group / f".{'b' * 64}.json.999999999.0.tmp"  # no process has that pid
    live = group / f".{'c' * 64}.json.{os.getpid()}.0.tmp"
    for path in (dead, live):
        path.write_bytes(os.urandom(100_000))
    assert store.evict() == 100_000
    assert not dead.exists() and live.exists() and entry.exists()


def test_rerunning_a_restored_check_never_writes_into_the_cache(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # Restored files are hard links to the cache's copies; a check run again in that folder
    # must get fresh files, or its new output would overwrite the stored one.
    noisy = "import os\nprint(os.urandom(16).hex())\n"
    project = make_project(
        tmp_path=tmp_path, eb=eb, checks={"t": script_check("t", script=noisy, inputs=[])}, files={}
    )
    project.run()
    reused = project.run()
    assert cache_of(reused["checks"][0])["hit"] is True
    run_dir = reused["output_dir"]
    assert eb("stage", "config", "--run-dir", run_dir, "--cache", "off").exit_code == 0
    rerun = eb("stage", "execute", "--run-dir", run_dir)
    assert rerun.exit_code == 0, rerun.stderr
    result = json.loads(next(Path(run_dir, "checks").glob("t-*.json")).read_text())
    assert "cache" not in result["details"]  # it really ran
    again = project.run()
    assert cache_of(again["checks"][0])["hit"] is True
    assert again["warnings"] == [] and "warning" not in project.last.stderr
    assert again["checks"][0]["stdout"] == reused["checks"][0]["stdout"]


@pytest.mark.parametrize("second", [b"another verdict's output\n", b""])
def test_restoring_over_a_restored_file_replaces_it_and_leaves_the_cache_intact(
    tmp_path: Path, second: bytes
) -> None:
    store = CacheStore(folder=tmp_path / "cache", max_bytes=10_000_000)
    sources = {}
    for name, data in (("first", b"the first verdict's output\n"), ("second", second)):
        sources[name] = tmp_path / name
        sources[name].write_bytes(data)
    first = store.put(source=sources["first"])
    later = store.put(source=sources["second"])
    target = tmp_path / "run" / "t.stdout.txt"
    target.parent.mkdir()
    assert store.restore(blob=first, target=str(target)) is None
    assert target.read_bytes() == b"the first verdict's output\n"
    # The target is now a link to the first blob: the second restore must not write into it.
    assert store.restore(blob=later, target=str(target)) is None
    assert target.read_bytes() == second
    assert store.blob_path(sha256=first.sha256).read_bytes() == b"the first verdict's output\n"


# What the stored result texts of entries already in users' caches were built by. A change to
# either function may change a reuse's text: if it can, bump _REUSE_TEXT_VERSION (so older
# texts are rendered and compared, not linked unseen); either way, pin the new digest here.
_REUSE_BUILT_BY = {1: "c429ce23c6feaa65", 2: "da4ca131cda3fed1", 3: "6a0980999894e3c8"}


def test_the_reuse_layout_changes_with_how_a_reuse_is_built() -> None:
    import hashlib
    import inspect

    from eval_banana.cache import reuse
    from eval_banana.runners import results

    source = inspect.getsource(reuse.restored) + inspect.getsource(results.build_result)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    assert _REUSE_BUILT_BY.get(reuse._REUSE_TEXT_VERSION) == digest, (
        "How a reuse builds its result changed: if the text it writes can differ, bump "
        f"_REUSE_TEXT_VERSION in eval_banana/cache/reuse.py; then pin {digest} for it here"
    )
    assert reuse.REUSE_LAYOUT.startswith(f"{reuse._REUSE_TEXT_VERSION}:")


def test_a_blob_checked_by_its_reader_is_still_refused_when_its_size_moved(
    tmp_path: Path,
) -> None:
    """`restore(checked=True)` skips the second hash of a blob its caller just read whole and
    matched, but a blob whose size moved since is damaged all the same, and never linked."""
    store = CacheStore(folder=tmp_path / "cache", max_bytes=1 << 30)
    blob = store.put_bytes(data=b'{"status": "passed"}')
    target = tmp_path / "placed.json"
    assert store.restore(blob=blob, target=str(target), checked=True) is None
    assert target.read_bytes() == b'{"status": "passed"}'
    store.blob_path(sha256=blob.sha256).write_bytes(b'{"status": "passed", "x": 1}')
    again = tmp_path / "again.json"
    problem = store.restore(blob=blob, target=str(again), checked=True)
    assert problem == f"its stored file {blob.sha256} is damaged" and not again.exists()


def test_a_blob_at_the_link_limit_is_stored_again_when_no_check_runs(tmp_path: Path) -> None:
    # A family whose cases print the same output shares one blob; every kept run folder links
    # to it, so ext4's 65,000 links are reached in 65 runs of 1,000 cases.
    store = CacheStore(folder=tmp_path / "cache", max_bytes=1 << 30)
    blob = store.put_bytes(data=b"ok\n")
    stored = store.blob_path(sha256=blob.sha256)
    links_to_the_limit(stored, folder=tmp_path / "kept-runs")
    old = os.stat(stored).st_ino
    run = tmp_path / "run"
    run.mkdir()
    # During a run's checks (the usual path) the cache is not changed: a copy, and the blob
    # is noted, to be stored again once the checks have ended.
    assert not store.crowded
    assert store.restore(blob=blob, target=str(run / "a.txt")) is None
    assert (run / "a.txt").read_bytes() == b"ok\n" and os.stat(run / "a.txt").st_nlink == 1
    assert os.stat(stored).st_ino == old and store.crowded
    store.renew_crowded()
    assert not store.crowded
    renewed = os.stat(stored)
    assert renewed.st_ino != old and renewed.st_nlink == 1
    assert store.restore(blob=blob, target=str(run / "b.txt")) is None
    assert os.path.samefile(run / "b.txt", stored)
    # A replay (no check runs) stores it again at once, and links to the new file: each such
    # file was a copy, run after run, before.
    links_to_the_limit(stored, folder=tmp_path / "more-kept-runs")
    again = os.stat(stored).st_ino
    assert store.restore(blob=blob, target=str(run / "c.txt"), renew=True) is None
    assert os.stat(stored).st_ino not in (old, again) and os.path.samefile(run / "c.txt", stored)
    assert stored.read_bytes() == b"ok\n"
    # The kept run folders keep the old files, unchanged.
    assert os.stat(tmp_path / "kept-runs" / "0").st_ino == old
    assert (tmp_path / "kept-runs" / "0").read_bytes() == b"ok\n"


LATIN1_EVIDENCE = """\
import json, os, sys
ctx = json.load(open(sys.argv[1]))
with open(os.path.join(os.fsencode(ctx["output_dir"]), b"caf\\xe9.txt"), "wb") as handle:
    handle.write(b"evidence")
"""


def test_a_verdict_with_an_evidence_name_that_is_not_utf8_is_run_not_stored(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    """An entry (UTF-8 JSON) cannot name `caf\\xe9.txt`: storing it ended the run in a
    UnicodeEncodeError after the check passed, and no report was written."""
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={
            "latin1": script_check("latin1", script=LATIN1_EVIDENCE, inputs=[]),
            "plain": script_check("plain", script="pass\n", inputs=[]),
        },
        files={},
    )
    for attempt in ("first", "second"):
        report = project.run()
        checks = {check["check_id"]: check for check in report["checks"]}
        assert cache_of(checks["latin1"])["hit"] is False, attempt  # ran again each time
        assert cache_of(checks["latin1"])["stored"] is False
        assert checks["latin1"]["status"] == "passed"
        stem = artifact_stem(check_id="latin1")
        run_dir = Path(report["output_dir"])
        assert os.listdir(os.fsencode(run_dir / "checks" / stem)) == [b"caf\xe9.txt"]
        assert (run_dir / "report.md").is_file() and (run_dir / "report.html").is_file()
        warned = project.last.stderr
        assert (
            "Cannot store the verdict of check 'latin1' in the cache: its evidence file" in warned
        )
        assert f"{stem}/caf\\xe9.txt has a name that is not UTF-8" in warned
    assert cache_of(checks["plain"])["hit"] is True  # the other verdict was stored
    stored = {json.loads(path.read_text())["check_id"] for path in project.entries()}
    assert stored == {"plain"}
    # Refused before any of its files went into the cache.
    blobs = [path for path in (project.cache_dir / "blobs").rglob("*") if path.is_file()]
    assert all(path.read_bytes() != b"evidence" for path in blobs)


def test_a_blob_many_files_share_is_read_once_while_its_file_stays_the_one_checked(
    tmp_path: Path,
) -> None:
    """A replay restores a blob that many cases share with `seen`: its digest is checked at
    its first file, and again whenever its file is no longer the one checked (replaced)."""
    store = CacheStore(folder=tmp_path / "cache", max_bytes=0)
    blob = store.put_bytes(data=b"the same answer\n")
    source = store.blob_path(sha256=blob.sha256)
    out = tmp_path / "run"
    out.mkdir()
    seen: dict[str, Any] = {}
    assert store.restore(blob=blob, target=str(out / "a.txt"), seen=seen) is None
    assert blob.sha256 in seen
    assert store.restore(blob=blob, target=str(out / "b.txt"), seen=seen) is None
    # Replaced by a file of the same size and other bytes: read again, and refused.
    forged = tmp_path / "forged"
    forged.write_bytes(b"the same ANSWER\n")
    os.replace(forged, source)
    problem = store.restore(blob=blob, target=str(out / "c.txt"), seen=seen)
    assert problem is not None and "damaged" in problem
    assert not (out / "c.txt").exists()
    assert (out / "a.txt").read_bytes() == (out / "b.txt").read_bytes() == b"the same answer\n"


@pytest.mark.parametrize("stored", [b"", b"0123456789", b"0123456789+", b"012345678"])
def test_a_blob_read_whole_is_its_bytes_only_when_they_are_its_size_and_digest(
    tmp_path: Path, stored: bytes
) -> None:
    """read_blob reads a blob in one piece of its expected size (one byte more at most):
    a file longer, shorter or other than the blob is damaged, an empty blob is read."""
    store = CacheStore(folder=tmp_path / "cache", max_bytes=0)
    data = b"" if not stored else b"0123456789"
    blob = store.put_bytes(data=data)
    if stored:
        store.blob_path(sha256=blob.sha256).write_bytes(stored)
    found = store.read_blob(blob=blob)
    if stored in (b"", data):
        assert found == data
    else:
        assert isinstance(found, str) and "damaged" in found
