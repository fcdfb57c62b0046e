"""`eb cache stats|prune|push|verify` end to end, on real local caches and real remotes
(a shared folder, moto's S3 server, a WebDAV server for the cache that cannot list)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from eval_banana.cache.store import CacheStore
from eval_banana.core.words import size_text
from eval_banana.isolation.state import checks_running
from tests.cache.rig import Project, cache_of, judge, script_check
from tests.remote_servers import BUCKET, gate, moto_s3
from tests.test_shared_cache import (
    KEY,
    LONG,
    RemoteObjects,
    _isolated,
    _remote,
    fresh_runner,
    run,
    runners,
)

# The shared-cache suite (`pytest -m remote`, which .ci/run runs): real S3, WebDAV and HTTP
# servers on 127.0.0.1, left out of the README's command to keep it under ten minutes.
pytestmark = pytest.mark.remote

__all__ = ["_isolated"]  # the autouse fixture clearing the cache variables
SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
OLD = time.time() - 30 * 86_400


def cache(project: Project, *args: str, expect: int = 0) -> Any:
    result = project.eb("cache", *args, "--cwd", str(project.root))
    assert result.exit_code == expect, result.stdout + result.stderr
    return result


def files(folder: Path, part: str) -> list[Path]:
    return sorted(p for p in (folder / part).glob("*/*") if not p.name.startswith("."))


def valid(document: Any, name: str) -> None:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)


@pytest.mark.parametrize("scheme", ["folder", "s3"])
def test_push_then_a_second_clone_gets_remote_hits(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    scheme: str,
    request: pytest.FixtureRequest,
) -> None:
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    first, second = runners(tmp_path=tmp_path, eb=eb)
    first.run()  # a local cache only: nothing shared yet
    with _remote(scheme=scheme, tmp_path=tmp_path, monkeypatch=monkeypatch, request=request) as url:
        pushed = cache(first, "push", "--cache-remote", url)
        assert "3 entries stored, 0 already there" in pushed.stdout
        again = cache(first, "push", "--cache-remote", url)
        assert "0 entries stored, 3 already there" in again.stdout

        counts, started = run(second, url)
        assert started == 0
        assert (counts["remote_hits"], counts["misses"]) == (3, 0)
        assert counts["remote_rejected"] == {"signature": 0, "entry": 0, "blob": 0}
        if scheme == "folder":
            secret = (first.cache_dir / "secret.key").read_bytes()
            shared = [p for p in (tmp_path / "shared").rglob("*") if p.is_file()]
            assert all(
                p.read_bytes().startswith(b'{"signature": ') for p in shared if "ac" in p.parts
            )
            assert not any(secret in p.read_bytes() for p in shared)
            assert not any(b'"mac"' in p.read_bytes() for p in shared)
            assert any(p.stat().st_size > len(LONG) for p in shared if "cas" in p.parts)


@pytest.mark.parametrize("scheme", ["folder", "s3"])
def test_push_sends_again_a_file_the_remote_holds_damaged_at_its_size(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    scheme: str,
    request: pytest.FixtureRequest,
) -> None:
    """Push sent the entries the remote lacked, and skipped each stored file the remote
    had at its size (HEAD tells only that): a file damaged there stayed, and every runner
    refused the entries push stored. Push reads such a file back and sends it again."""
    first, second = runners(tmp_path=tmp_path, eb=eb)
    with _remote(scheme=scheme, tmp_path=tmp_path, monkeypatch=monkeypatch, request=request) as url:
        run(first, url)
        assert RemoteObjects(url=url, tmp_path=tmp_path, kind="cas").flip_a_byte_of_each() == 1
        entries = RemoteObjects(url=url, tmp_path=tmp_path, kind="ac")
        for name in entries.names():
            entries.delete(name)
        pushed = cache(first, "push", "--cache-remote", url)
        assert "3 entries stored, 0 already there" in pushed.stdout
        assert "1 file the shared cache held damaged (its size, other content) sent again" in (
            pushed.stdout
        )
        counts, started = run(second, url)
        assert started == 0, counts["warnings"]
        assert (counts["remote_hits"], counts["remote_rejected"]["blob"]) == (3, 0)
        # The file is whole now: a push that finds it so sends nothing more.
        for name in entries.names():
            entries.delete(name)
        pushed = cache(first, "push", "--cache-remote", url)
        assert "3 entries stored" in pushed.stdout and "sent again" not in pushed.stdout


def test_push_refuses_a_read_only_remote(tmp_path: Path, eb: Callable[..., Any]) -> None:
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    first.run()
    shared = tmp_path / "shared"
    result = cache(
        first, "push", "--cache-remote", str(shared), "--cache-remote-mode", "read-only", expect=2
    )
    assert "read-only" in result.stderr
    assert not shared.exists()


def test_push_without_the_key_refuses_when_signatures_are_required(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    first.run()
    shared = tmp_path / "shared"
    monkeypatch.setenv("EVAL_BANANA_CACHE_REQUIRE_SIGNATURE", "true")
    result = cache(first, "push", "--cache-remote", str(shared), expect=2)
    assert "EVAL_BANANA_CACHE_SIGNING_KEY is not set" in result.stderr
    assert not shared.exists()


def _forged_into_a_pass(shared: Path, *, check_id: str) -> None:
    """Someone who may write an unsigned shared folder edits a failing verdict into a pass,
    coherently (the entry and the result text it carries inline): nothing unsigned tells."""
    passed = {"status": "passed", "score": 1, "observed_status": "passed", "reason": None}
    for path in files(shared, "ac"):
        document = json.loads(path.read_bytes())
        entry = document["entry"]
        if entry["check_id"] != check_id:
            continue
        entry["result"].update(passed, exit_code=0)
        stored = entry["result_file"]
        text = json.loads(base64.b64decode(document["inline"].pop(stored["sha256"])))
        data = json.dumps({**text, **passed, "exit_code": 0}, indent=2).encode()
        stored.update(sha256="sha256:" + hashlib.sha256(data).hexdigest(), size=len(data))
        document["inline"][stored["sha256"]] = base64.b64encode(data).decode()
        path.write_text(json.dumps(document))


def _statuses(project: Project) -> dict[str, tuple[str, bool]]:
    report = json.loads(project.last.stdout)
    return {c["check_id"]: (c["status"], bool(cache_of(c).get("hit"))) for c in report["checks"]}


def test_push_signs_only_verdicts_judged_here_or_verified_under_its_key(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A keyless runner reused a forged pass from an unsigned shared cache (as good as its
    writers, as documented); pushing later with the CI key it signed that pass, and a runner
    requiring signatures reused it: a check that always exits 1 passed. Push now signs only
    what this machine judged or verified under the same key, and says how many it did not."""
    checks = {
        "gate": script_check("gate", script="import sys\nsys.exit(1)\n", inputs=[]),
        "fine": script_check("fine", script="print('fine')\n", inputs=[]),
    }
    writer, reader = runners(tmp_path=tmp_path, eb=eb, checks=checks)
    unsigned, signed, other = tmp_path / "open", tmp_path / "signed", tmp_path / "other"
    run(writer, str(unsigned), expect_exit=1)
    _forged_into_a_pass(unsigned, check_id="gate")
    counts, _ = run(reader, str(unsigned), "--check-id", "gate")
    assert counts["remote_hits"] == 1  # reused: an unsigned cache cannot tell
    reader.run("--check-id", "fine")  # judged on this machine, kept locally only

    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    pushed = cache(reader, "push", "--cache-remote", str(signed))
    assert "1 entry stored, 0 already there" in pushed.stdout
    assert "1 not signed (fetched from a shared cache without a check under this" in pushed.stdout
    assert len(files(signed, "ac")) == 1

    monkeypatch.setenv("EVAL_BANANA_CACHE_REQUIRE_SIGNATURE", "true")
    main = fresh_runner(of=writer, root=tmp_path / "main")
    run(main, str(signed), expect_exit=1)
    assert _statuses(main) == {"gate": ("failed", False), "fine": ("passed", True)}

    # What main fetched was verified under KEY: pushed with KEY it is signed again, with
    # another key it is not; what main judged is signed under either.
    pushed = cache(main, "push", "--cache-remote", str(tmp_path / "again"))
    assert "2 entries stored" in pushed.stdout and "not signed" not in pushed.stdout
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", "another-ci-key")
    pushed = cache(main, "push", "--cache-remote", str(other))
    assert "1 entry stored" in pushed.stdout and "1 not signed" in pushed.stdout


def test_push_does_not_sign_an_entry_that_does_not_say_where_it_came_from(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry an older eb stored records no origin: it may have been fetched unchecked, so
    a push with a key leaves it out (fail closed); without a key it travels unsigned as ever."""
    first, _ = runners(tmp_path=tmp_path, eb=eb, checks={"j": judge("j")})
    first.run()
    (path,) = first.entries()
    document = json.loads(path.read_text())
    assert document["origin"] == {"by": "judged"}
    del document["origin"]
    first.rewrite(path, document)
    monkeypatch.setenv("EVAL_BANANA_CACHE_SIGNING_KEY", KEY)
    pushed = cache(first, "push", "--cache-remote", str(tmp_path / "signed"))
    assert "0 entries stored" in pushed.stdout and "1 not signed" in pushed.stdout
    monkeypatch.delenv("EVAL_BANANA_CACHE_SIGNING_KEY")
    pushed = cache(first, "push", "--cache-remote", str(tmp_path / "unsigned"))
    assert "1 entry stored" in pushed.stdout and "not signed" not in pushed.stdout


def test_prune_local_by_age_then_by_size_keeps_the_secret_and_the_lock(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    first.run()
    folder = first.cache_dir
    entries = files(folder, "entries")
    assert len(entries) == 3
    os.utime(entries[0], (OLD, OLD))
    done = cache(first, "prune", "--older-than", "7")
    assert "1 entry and 2 blobs" in done.stdout
    assert files(folder, "entries") == entries[1:]

    blobs_before = files(folder, "blobs")
    assert blobs_before
    # A kept run (a replay's record) beside the entries, as a project with replay on holds.
    key = f"sha256:{7:064x}"
    CacheStore(folder=folder, max_bytes=0).write_replay(key=key, document={"key": key})
    assert len(files(folder, "runs")) == 1
    emptied = cache(first, "prune", "--max-mb", "0")
    assert "2 entries, 1 kept run and " in emptied.stdout
    assert files(folder, "entries") == [] and files(folder, "blobs") == []
    assert files(folder, "runs") == []
    assert (folder / "secret.key").is_file() and (folder / ".lock").is_file()


def test_prune_stops_while_a_run_holds_the_cache(tmp_path: Path, eb: Callable[..., Any]) -> None:
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    first.run()
    folder = first.cache_dir
    with checks_running(cache=folder, create=True, runs=None):
        result = cache(first, "prune", "--max-mb", "0", expect=2)
    assert "in use by a run" in result.stderr
    assert len(files(folder, "entries")) == 3


@pytest.mark.parametrize("scheme", ["folder", "s3"])
def test_prune_remote_by_age_and_size(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    scheme: str,
    request: pytest.FixtureRequest,
) -> None:
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    with _remote(scheme=scheme, tmp_path=tmp_path, monkeypatch=monkeypatch, request=request) as url:
        run(first, url)
        flag = ("--cache-remote", url)
        kept = cache(first, "prune", "--remote", "--older-than", "1", *flag)
        assert kept.stdout.count("0 entries and 0 blobs") == 2
        # Each listing and each entry read is one request, on S3 as on a folder; a folder is
        # listed twice more, for the files of unfinished writes (S3 has none).
        listings = 4 if scheme == "folder" else 2
        assert (
            f"Pruned {url}: 0 entries and 0 blobs, 0 bytes freed ({listings + 3} requests)."
            in kept.stdout
        )
        assert _remote_count(url=url, tmp_path=tmp_path, kind="ac") == 3
        if scheme == "folder":
            for entry in files(tmp_path / "shared", "ac")[:1]:
                os.utime(entry, (OLD, OLD))
            aged = cache(first, "prune", "--remote", "--older-than", "7", *flag)
            assert f"Pruned {url}: 1 entry and" in aged.stdout
            assert _remote_count(url=url, tmp_path=tmp_path, kind="ac") == 2
        sized = cache(first, "prune", "--remote", "--max-mb", "0", *flag)
        # And each deletion one (on S3 it was two: a HEAD asked whether the object was there).
        left = 2 if scheme == "folder" else 3
        assert f"Pruned {url}: {left} entries and 1 blob" in sized.stdout
        assert f"freed ({listings + left + left + 1} requests)." in sized.stdout
        assert _remote_count(url=url, tmp_path=tmp_path, kind="ac") == 0
        assert _remote_count(url=url, tmp_path=tmp_path, kind="cas") == 0


@pytest.mark.parametrize("endpoint", ["hung", "failing"])
def test_prune_remote_stops_asking_an_endpoint_that_fails_its_deletions(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, endpoint: str
) -> None:
    """prune deleted past the circuit breaker: an S3 endpoint that hung on (or refused) every
    DELETE was sent one for each of the shared cache's objects, a timeout each."""
    checks = {name: judge(name, instructions=f"Judge {name}.") for name in "abc"}
    first, _ = runners(
        tmp_path=tmp_path, eb=eb, checks={**checks, "big": judge("big", instructions=LONG)}
    )
    url = f"s3://{BUCKET}/team/eb"
    with moto_s3() as server, gate(upstream=server.endpoint) as front:
        for name, value in server.environ.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("EVAL_BANANA_CACHE_REMOTE_ENDPOINT", front.endpoint)
        monkeypatch.setenv("EVAL_BANANA_CACHE_REMOTE_TIMEOUT_SECONDS", "1")
        monkeypatch.setenv("EVAL_BANANA_CACHE_REMOTE_CONCURRENCY", "3")
        counts, _ = run(first, url)
        assert counts["remote_writes"] == 4
        (front.hold if endpoint == "hung" else front.fail).add("DELETE")
        front.seen.clear()
        started = time.monotonic()
        result = cache(first, "prune", "--remote", "--max-mb", "0", "--cache-remote", url, expect=1)
        elapsed = time.monotonic() - started
        # The two listings and the four entries read, then one wave of deletions that all
        # fail: the breaker trips, and nothing more is sent.
        assert front.seen == ["GET"] * 6 + ["DELETE"] * 3
        assert elapsed < 1 + 2
        assert _remote_count(url=url, tmp_path=tmp_path, kind="ac") == 4
        assert f"Pruned {url}: 0 entries and 0 blobs, 0 bytes freed (9 requests); " in (
            result.stdout
        )
        assert "4 deletions failed." in result.stdout  # 3 sent and failed, 1 never sent
        error = result.stderr.strip().splitlines()[-1]
        assert error.startswith(f"error: the shared cache failed 3 requests (first error: {url}:")
        assert error.endswith("; not asked again after repeated failures")


def test_prune_remote_deletes_nothing_when_the_entries_cannot_be_read(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry prune failed to read named no blob as far as it knew: a prune that should
    have deleted nothing deleted the stored file of an entry it kept."""
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    url = f"s3://{BUCKET}/team/eb"
    with moto_s3() as server, gate(upstream=server.endpoint) as front:
        for name, value in server.environ.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("EVAL_BANANA_CACHE_REMOTE_ENDPOINT", front.endpoint)
        run(first, url)
        assert _remote_count(url=url, tmp_path=tmp_path, kind="cas") == 1
        front.fail.add("GET")
        front.within = "/ac/"  # the listings answer, the reads of entries fail
        front.seen.clear()
        # Under the limit: nothing to prune, except what no entry names.
        result = cache(
            first, "prune", "--remote", "--max-mb", "100", "--cache-remote", url, expect=2
        )
        assert "DELETE" not in front.seen
        assert _remote_count(url=url, tmp_path=tmp_path, kind="cas") == 1
        assert _remote_count(url=url, tmp_path=tmp_path, kind="ac") == 3
        assert result.stdout == ""  # the local folder is not pruned either
        assert result.stderr.splitlines()[0].startswith(
            f"The shared cache {url} failed 3 reads of the entries it lists (first error: "
            f"{url}: GET ac/"
        )
        assert result.stderr.splitlines()[0].endswith("(HTTP 503)); nothing was pruned")


def _remote_count(*, url: str, tmp_path: Path, kind: str) -> int:
    if url.startswith("s3://"):
        import boto3

        client = boto3.client("s3", endpoint_url=os.environ["EVAL_BANANA_CACHE_REMOTE_ENDPOINT"])
        bucket, prefix = url[len("s3://") :].split("/", 1)
        found = client.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/{kind}/")
        return int(found.get("KeyCount", 0))
    return len(files(tmp_path / "shared", kind))


def test_prune_remote_on_an_http_cache_says_it_cannot_list(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    with _remote(
        scheme="webdav", tmp_path=tmp_path, monkeypatch=monkeypatch, request=request
    ) as url:
        run(first, url)
        result = cache(first, "prune", "--remote", "--max-mb", "0", "--cache-remote", url, expect=2)
        # Said once, with what works instead.
        first_line = result.stderr.splitlines()[0]
        assert first_line == (
            f"--remote cannot work on this shared cache: {url} is an HTTP cache, which cannot "
            "list what it holds"
        )
        assert len(files(first.cache_dir, "entries")) == 3  # stopped before any deletion
        verify = cache(first, "verify", "--remote", "--cache-remote", url, expect=2)
        assert "cannot list what it holds" in verify.stderr


@pytest.mark.parametrize("scheme", ["folder", "s3"])
def test_verify_finds_a_damaged_blob_locally_and_remotely(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    scheme: str,
    request: pytest.FixtureRequest,
) -> None:
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    with _remote(scheme=scheme, tmp_path=tmp_path, monkeypatch=monkeypatch, request=request) as url:
        run(first, url)
        flag = ("--cache-remote", url)
        sound = json.loads(cache(first, "verify", "--remote", "--json", *flag).stdout)
        valid(sound, "cache-verify")
        assert sound["ok"] and sound["damaged"] == []
        assert sound["local_blobs"] >= 1 and sound["remote_blobs"] >= 1

        local = files(first.cache_dir, "blobs")[0]
        local.chmod(0o644)
        local.write_bytes(b"not what it was")
        remote_name = _damage_remote(url=url, tmp_path=tmp_path)
        found = json.loads(cache(first, "verify", "--remote", "--json", *flag, expect=1).stdout)
        valid(found, "cache-verify")
        assert not found["ok"]
        assert {(d["tier"], d["name"]) for d in found["damaged"]} == {
            ("local", local.name),
            ("remote", remote_name),
        }
        human = cache(first, "verify", expect=1)
        assert f"damaged (local) {local.name}" in human.stdout


def _damage_remote(*, url: str, tmp_path: Path) -> str:
    if url.startswith("s3://"):
        import boto3

        client = boto3.client("s3", endpoint_url=os.environ["EVAL_BANANA_CACHE_REMOTE_ENDPOINT"])
        bucket, prefix = url[len("s3://") :].split("/", 1)
        key = client.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/cas/")["Contents"][0]["Key"]
        client.put_object(Bucket=bucket, Key=key, Body=b"another content")
        return str(key).rsplit("/", 1)[1]
    blob = files(tmp_path / "shared", "cas")[0]
    blob.write_bytes(b"another content")
    return blob.name


def test_stats_count_what_was_written_and_the_hit_rate(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    first.run()
    first.run()  # every verdict reused
    stats = json.loads(cache(first, "stats", "--json").stdout)
    valid(stats, "cache-stats")
    folder = first.cache_dir
    local = stats["local"]
    assert local["entries"] == len(files(folder, "entries")) == 3
    assert local["blobs"] == len(files(folder, "blobs"))
    assert local["entry_bytes"] == sum(p.stat().st_size for p in files(folder, "entries"))
    assert local["blob_bytes"] == sum(p.stat().st_size for p in files(folder, "blobs"))
    assert stats["hit_rate"] == {
        "source": "history",
        "runs": 2,
        "checks": 6,
        "cached": 3,
        "rate": 0.5,
    }
    human = cache(first, "stats")
    assert "3 entries" in human.stdout and "3 of 6 checks reused (50.0%)" in human.stdout
    # Sizes for people, and the limit they are kept under.
    total = local["total_bytes"]
    assert 1024 < total < 1 << 20  # a few KiB: told in KiB, not as a count of bytes
    assert f"{total / 1024:.1f} KiB in all (`[cache] max_mb` keeps at most 256 MiB)." in (
        human.stdout
    )
    assert f"{total} bytes" not in human.stdout


def _remote_objects(*, url: str, tmp_path: Path, kind: str) -> dict[str, bytes]:
    """What the remote holds of a kind, by name, read past eb (boto3 or the folder)."""
    if url.startswith("s3://"):
        import boto3

        client = boto3.client("s3", endpoint_url=os.environ["EVAL_BANANA_CACHE_REMOTE_ENDPOINT"])
        bucket, prefix = url[len("s3://") :].split("/", 1)
        listed = client.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/{kind}/")
        return {
            str(item["Key"]).rsplit("/", 1)[1]: client.get_object(Bucket=bucket, Key=item["Key"])[
                "Body"
            ].read()
            for item in listed.get("Contents", [])
        }
    return {path.name: path.read_bytes() for path in files(tmp_path / "shared", kind)}


def _replace_remote(*, url: str, tmp_path: Path, kind: str, name: str, data: bytes) -> None:
    if url.startswith("s3://"):
        import boto3

        client = boto3.client("s3", endpoint_url=os.environ["EVAL_BANANA_CACHE_REMOTE_ENDPOINT"])
        bucket, prefix = url[len("s3://") :].split("/", 1)
        client.put_object(Bucket=bucket, Key=f"{prefix}/{kind}/{name}", Body=data)
        return
    (tmp_path / "shared" / kind / name[:2] / name).write_bytes(data)


@pytest.mark.parametrize("scheme", ["folder", "s3"])
def test_verify_remote_rehashes_the_files_entries_carry_inline(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    scheme: str,
    request: pytest.FixtureRequest,
) -> None:
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    with _remote(scheme=scheme, tmp_path=tmp_path, monkeypatch=monkeypatch, request=request) as url:
        run(first, url)
        flag = ("--cache-remote", url)
        entries = _remote_objects(url=url, tmp_path=tmp_path, kind="ac")
        inline_total = sum(len(json.loads(data)["inline"]) for data in entries.values())
        assert len(entries) == 3 and inline_total >= 3
        sound = json.loads(cache(first, "verify", "--remote", "--json", *flag).stdout)
        valid(sound, "cache-verify")
        assert sound["ok"] and sound["damaged"] == []
        assert (sound["remote_entries"], sound["remote_inline"]) == (3, inline_total)
        # The two listings, the blob and the three entries fetched: a request each.
        assert sound["remote_requests"] == 6

        # One inline file edited in place (the entry still reads as JSON), one entry cut short,
        # one padded past the size any entry can have (it is not read to its end).
        edited, cut, padded = sorted(entries)
        _replace_remote(
            url=url,
            tmp_path=tmp_path,
            kind="ac",
            name=padded,
            data=entries[padded] + b" " * (5 << 20),
        )
        document = json.loads(entries[edited])
        digest = sorted(document["inline"])[0]
        document["inline"][digest] = base64.b64encode(b"not what the entry records").decode()
        _replace_remote(
            url=url, tmp_path=tmp_path, kind="ac", name=edited, data=json.dumps(document).encode()
        )
        _replace_remote(url=url, tmp_path=tmp_path, kind="ac", name=cut, data=entries[cut][:100])

        found = json.loads(cache(first, "verify", "--remote", "--json", *flag, expect=1).stdout)
        valid(found, "cache-verify")
        assert not found["ok"]
        assert {(d["tier"], d["name"], d["entry"]) for d in found["damaged"]} == {
            ("remote", digest.split(":", 1)[1], edited),
            ("remote", cut, cut),
            ("remote", padded, padded),
        }
        problems = {d["entry"]: d["problem"] for d in found["damaged"]}
        assert "inline" in problems[edited] and "another digest" in problems[edited]
        assert "not valid JSON" in problems[cut]
        assert "is larger than 4,194,304 bytes" in problems[padded]
        human = cache(first, "verify", "--remote", *flag, expect=1)
        assert f"damaged (remote) {digest.split(':', 1)[1]}: carried inline in entry" in (
            human.stdout
        )
        assert f"inline files of 3 entries in {url} (6 requests): 3 damaged." in human.stdout


@pytest.mark.parametrize("scheme", ["folder", "s3"])
def test_stats_remote_counts_what_the_shared_cache_holds(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    scheme: str,
    request: pytest.FixtureRequest,
) -> None:
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    with _remote(scheme=scheme, tmp_path=tmp_path, monkeypatch=monkeypatch, request=request) as url:
        run(first, url)
        flag = ("--cache-remote", url)
        entries = _remote_objects(url=url, tmp_path=tmp_path, kind="ac")
        blobs = _remote_objects(url=url, tmp_path=tmp_path, kind="cas")
        assert len(entries) == 3 and len(blobs) == 1
        stats = json.loads(cache(first, "stats", "--remote", "--json", *flag).stdout)
        valid(stats, "cache-stats")
        entry_bytes = sum(len(data) for data in entries.values())
        blob_bytes = sum(len(data) for data in blobs.values())
        assert stats["remote"] == {
            "url": url,
            "listing": "listed",
            "entries": 3,
            "entry_bytes": entry_bytes,
            "blobs": 1,
            "blob_bytes": blob_bytes,
            "unfinished": 0,
            "unfinished_bytes": 0,
            "total_bytes": entry_bytes + blob_bytes,
        }
        human = cache(first, "stats", "--remote", *flag)
        assert (
            f"Shared cache {url}: 3 entries ({size_text(entry_bytes)}), "
            f"1 blob ({size_text(blob_bytes)}); {size_text(entry_bytes + blob_bytes)} in all."
            in human.stdout
        )
        # Without --remote the shared cache is not asked, and the text says how to count it.
        assert json.loads(cache(first, "stats", "--json", *flag).stdout)["remote"] is None
        told = cache(first, "stats", *flag).stdout
        assert "not asked (`eb cache stats --remote` counts it)." in told


def test_stats_remote_on_an_http_cache_says_it_cannot_list_and_exits_0(
    tmp_path: Path,
    eb: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    with _remote(
        scheme="webdav", tmp_path=tmp_path, monkeypatch=monkeypatch, request=request
    ) as url:
        run(first, url)
        stats = json.loads(
            cache(first, "stats", "--remote", "--json", "--cache-remote", url).stdout
        )
        valid(stats, "cache-stats")
        assert stats["remote"]["listing"] == "unsupported"
        assert stats["remote"]["entries"] is None and stats["remote"]["total_bytes"] is None
        assert stats["local"]["entries"] == 3
        human = cache(first, "stats", "--remote", "--cache-remote", url)
        assert f"Shared cache {url}: no counts, it cannot list what it holds" in human.stdout


def _forged_inline(document: dict[str, Any], how: str) -> Any:
    """An entry of the shared cache whose inline files do not hold in one way."""
    inline = document["inline"]
    digest = sorted(inline)[0]
    if how == "not an entry":
        return [document]
    if how == "a name that is no digest":
        return {**document, "inline": {"prompt.txt": inline[digest]}}
    if how == "not base64":
        return {**document, "inline": {**inline, digest: "%%% not base64 %%%"}}
    assert how == "another size than recorded"
    files = [{**item, "size": item["size"] + 1} for item in document["entry"]["files"]]
    result_file = document["entry"]["result_file"]
    result_file = {**result_file, "size": result_file["size"] + 1}
    return {**document, "entry": {**document["entry"], "files": files, "result_file": result_file}}


@pytest.mark.parametrize(
    ("how", "told"),
    [
        ("not an entry", "is not a shared cache entry"),
        ("a name that is no digest", "carried inline in entry ac/{entry}: it is not named by"),
        ("not base64", "carried inline in entry ac/{entry}: it is not base64"),
        ("another size than recorded", "bytes where the entry records"),
    ],
)
def test_verify_remote_says_how_an_entry_s_inline_files_do_not_hold(
    tmp_path: Path, eb: Callable[..., Any], how: str, told: str
) -> None:
    # Every refusal a runner makes of an entry's inline files, `eb cache verify --remote`
    # reports too: a forged or foreign entry is found before a runner meets it.
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    shared = tmp_path / "shared"
    url = str(shared)
    run(first, url)
    entries = _remote_objects(url=url, tmp_path=tmp_path, kind="ac")
    name = sorted(entries)[0]
    forged = _forged_inline(json.loads(entries[name]), how)
    _replace_remote(
        url=url, tmp_path=tmp_path, kind="ac", name=name, data=json.dumps(forged).encode()
    )
    found = json.loads(
        cache(first, "verify", "--remote", "--json", "--cache-remote", url, expect=1).stdout
    )
    valid(found, "cache-verify")
    assert not found["ok"]
    problems = [d["problem"] for d in found["damaged"] if d["entry"] == name]
    assert problems and all(told.format(entry=name) in p for p in problems), found["damaged"]
    assert [d for d in found["damaged"] if d["entry"] != name] == []


def test_verify_shows_a_shared_object_name_with_a_line_break_escaped(tmp_path: Path) -> None:
    # Anyone who can write to the shared cache names its objects: a name holding a line break
    # was printed as it is, so `eb cache verify` printed a `::error::` line of the name's own.
    from tests.conftest import check_yaml
    from tests.reporting.conftest import run_eb

    root = tmp_path / "proj"
    (root / "eval_checks").mkdir(parents=True)
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text("")
    (root / "eval_checks" / "a.yaml").write_text(check_yaml("a"))
    shared = tmp_path / "shared"
    for kind in ("cas", "ac"):
        (shared / kind / "ab").mkdir(parents=True)
        (shared / kind / "ab" / f"ab\n::error::forged-{kind}").write_text("{}")
    done = run_eb("cache", "verify", "--cwd", str(root), "--remote", "--cache-remote", str(shared))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [line for line in lines if line.startswith("  damaged (remote) ab\\x0a::error::forged-")]
    assert not [line for line in lines if line.startswith("::")], done.stdout


@pytest.mark.parametrize(
    ("flag", "value", "told"),
    [
        # float() takes both: 'inf' ended in an OverflowError, 'nan' pruned nothing, silently.
        ("--max-mb", "inf", "argument --max-mb: 'inf' is not a finite number"),
        ("--older-than", "nan", "argument --older-than: 'nan' is not a finite number"),
        ("--older-than", "-1", "argument --older-than: '-1' must be 0 or more"),
        ("--max-mb", "9" * 5000, "argument --max-mb: '9999999999999999999999999999999999999999'"),
    ],
)
def test_prune_limits_are_finite_numbers_told_in_a_line(
    eb: Callable[..., Any], tmp_path: Path, flag: str, value: str, told: str
) -> None:
    result = eb("cache", "prune", flag, value, "--cwd", str(tmp_path))
    assert result.exit_code == 2
    first = result.stderr.splitlines()[0]
    assert first.startswith(told) and len(first) < 200, first


# Writes the real writers make, each stopped part-way in a process of its own: a blob going into
# a shared folder (its source a pipe nobody writes), and one going into the local folder (its
# download never ending). The test SIGKILLs each, or leaves it running: a write under way.
WRITER = """
import os, sys, threading, time
from pathlib import Path
from eval_banana.cache.blobs import Blob
from eval_banana.cache.store import CacheStore
from eval_banana.remote.folder import FolderBackend

kind, folder, number = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
name = f"{number:02x}" * 32  # stored in the group folder <number>
def stuck(file):
    file.write(b"half of a file")
    file.flush()
    time.sleep(600)
if kind == "shared":
    reader, writer = os.pipe()
    # More than one chunk goes in, then nothing more while the pipe stays open.
    threading.Thread(target=os.write, args=(writer, b"x" * 1500000), daemon=True).start()
    FolderBackend(folder=folder).put_from(
        kind="cas", name=name, source=os.fdopen(reader, "rb"), size=1 << 20
    )
else:
    CacheStore(folder=folder, max_bytes=1 << 30).receive(
        blob=Blob(sha256=f"sha256:{name}", size=1 << 20), fill=stuck
    )
"""


def _stopped_writer(*, kind: str, folder: Path, number: int) -> subprocess.Popen[bytes]:
    """A real write into `folder`, started and left part-way: its temporary file exists."""
    part = "cas" if kind == "shared" else "blobs"
    before = set((folder / part).glob(f"{number:02x}/.*.tmp"))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, kind, str(folder), str(number)])
    deadline = time.monotonic() + 30
    while set((folder / part).glob(f"{number:02x}/.*.tmp")) == before:
        assert time.monotonic() < deadline and writer.poll() is None, "no write began"
        time.sleep(0.02)
    return writer


def test_writes_killed_part_way_are_counted_and_pruned_once_stale_on_both_tiers(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    first, _ = runners(tmp_path=tmp_path, eb=eb)
    shared = tmp_path / "shared"
    run(first, str(shared))
    local = first.cache_dir
    writers = [
        _stopped_writer(kind=kind, folder=folder, number=number)
        for kind, folder in (("shared", shared), ("local", local))
        for number in (1, 2)
    ]
    try:
        for writer in writers[0::2]:  # the first of each tier killed, as the OOM killer does
            writer.kill()
            writer.wait()
        killed = [*(shared / "cas" / "01").glob(".*.tmp"), *(local / "blobs" / "01").glob(".*")]
        assert len(killed) == 2
        flag = ("--cache-remote", str(shared))
        stats = json.loads(cache(first, "stats", "--remote", "--json", *flag).stdout)
        valid(stats, "cache-stats")
        for tier in ("local", "remote"):
            assert stats[tier]["unfinished"] == 2, stats[tier]
            assert stats[tier]["unfinished_bytes"] > 0
        told = cache(first, "stats", "--remote", *flag).stdout
        assert told.count(", 2 unfinished writes (") == 2
        # Killed an hour ago: not written to since. The writes under way stay, however long
        # they take, and so do the ones just killed until an hour has passed.
        young = cache(first, "prune", "--remote", "--older-than", "1000", *flag)
        assert "unfinished" not in young.stdout
        for path in killed:
            os.utime(path, (time.time() - 3700, time.time() - 3700))
        pruned = cache(first, "prune", "--remote", "--older-than", "1000", *flag)
        assert pruned.stdout.count(", 1 unfinished write and 0 blobs") == 2, pruned.stdout
        assert not any(path.exists() for path in killed)
        assert len(list(shared.glob("cas/02/.*.tmp"))) == 1
        assert len(list(local.glob("blobs/02/.*.tmp"))) == 1
        assert all(writer.poll() is None for writer in writers[1::2])  # still writing
        assert len(files(shared, "ac")) == 3 and len(files(local, "entries")) == 3
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
