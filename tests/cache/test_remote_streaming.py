"""Large stored files travel to and from the shared cache as streams: a real run's output of
several megabytes goes up and comes back through each real backend, checked against its digest
as it arrives, and a server that cuts, changes or pads it leaves nothing behind. The memory a
transfer of 32 MB costs eb is measured in a separate process (tracemalloc)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from eval_banana.cache.blobs import Blob
from eval_banana.cache.remotetier import RemoteTier
from eval_banana.cache.store import CacheStore
from eval_banana.core.files import sha256_and_size
from eval_banana.remote.backend import CHUNK
from eval_banana.remote.guarded import GuardedRemote
from eval_banana.remote.opening import open_backend
from tests.cache.rig import make_project, script_check
from tests.remote_servers import BUCKET, Hostile, hostile, moto_s3, webdav

# The shared-cache suite (`pytest -m remote`, which .ci/run runs): real S3, WebDAV and HTTP
# servers on 127.0.0.1, left out of the README's command to keep it under ten minutes.
pytestmark = pytest.mark.remote

REPO = Path(__file__).resolve().parents[2]
MIB = 1 << 20


class Stored(NamedTuple):
    """A local cache holding one verdict whose output is one large blob."""

    folder: Path
    key: str
    blob: Blob


def stored_big_output(*, tmp_path: Path, eb: Callable[..., Any], size: int) -> Stored:
    """A real run of a check printing `size` bytes, whose verdict (and output) is cached."""
    script = f"import sys\nsys.stdout.write('0123456789abcdef' * {size // 16})\n"
    project = make_project(
        tmp_path=tmp_path, eb=eb, checks={"big": script_check("big", script=script)}, files={}
    )
    project.run()
    [entry] = project.entries()
    key = f"sha256:{entry.stem}"
    document = CacheStore(folder=project.cache_dir, max_bytes=1 << 40).read(key=key).document
    [blob] = [
        Blob(sha256=item["sha256"], size=item["size"])
        for item in [*document["files"], document.get("result_file")]
        if isinstance(item, dict) and item["size"] == size
    ]
    return Stored(folder=project.cache_dir, key=key, blob=blob)


def tier(*, url: str, folder: Path, environ: dict[str, str], warnings: list[str]) -> RemoteTier:
    backend = open_backend(url=url, endpoint=None, timeout=30, environ=environ, source="test")
    return RemoteTier(
        remote=GuardedRemote(backend=backend, concurrency=4),
        store=CacheStore(folder=folder, max_bytes=1 << 40),
        writes=True,
        signing_key=None,
        require_signature=False,
        warn=lambda message, file, hint: warnings.append(message),
    )


class Remote(NamedTuple):
    url: str
    environ: dict[str, str]


@pytest.fixture(params=["folder", "s3", "webdav"])
def remote(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Remote]:
    if request.param == "folder":
        yield Remote(url=str(tmp_path / "shared"), environ={})
    elif request.param == "s3":
        with moto_s3() as server:
            environ = {**server.environ, "AWS_ENDPOINT_URL": server.endpoint}
            yield Remote(url=f"s3://{BUCKET}/team", environ=environ)
    else:
        with webdav(folder=tmp_path / "dav") as url:
            yield Remote(url=f"{url}/eb", environ={})


def leftovers(folder: Path) -> list[Path]:
    """Every file below a cache's blobs/ (a temporary file that stayed would show here)."""
    return sorted(path for path in (folder / "blobs").rglob("*") if path.is_file())


def test_a_large_output_goes_up_and_comes_back_through_each_backend(
    tmp_path: Path, eb: Callable[..., Any], remote: Remote
) -> None:
    stored = stored_big_output(tmp_path=tmp_path, eb=eb, size=8 * MIB + 16 * 777)
    assert stored.blob.size > 8 * CHUNK
    warnings: list[str] = []
    up = tier(url=remote.url, folder=stored.folder, environ=remote.environ, warnings=warnings)
    assert up.push(keys=[stored.key]).stored == 1
    entry_size = up.remote.head(kind="ac", name=stored.key.split(":", 1)[1])
    assert entry_size is not None
    assert up.remote.head(kind="cas", name=stored.blob.sha256.split(":", 1)[1]) == stored.blob.size
    assert up.tally().bytes_up == stored.blob.size + entry_size

    fresh = tmp_path / "runner2-cache"
    down = tier(url=remote.url, folder=fresh, environ=remote.environ, warnings=warnings)
    down.prefetch(wanted={stored.key: "big"}, stop=threading.Event())
    assert down.fetched == {stored.key}, warnings
    kept = down.store.blob_path(sha256=stored.blob.sha256)
    assert sha256_and_size(path=str(kept)) == (stored.blob.sha256, stored.blob.size)
    assert kept in leftovers(fresh)  # with the small files that travelled inline
    assert not [path for path in leftovers(fresh) if path.name.startswith(".")]
    tally = down.tally()
    assert (tally.requests, tally.errors) == (2, 0)  # the entry, then the blob
    assert tally.bytes_down == stored.blob.size + entry_size
    assert warnings == []


@pytest.fixture
def hostile_server() -> Iterator[Hostile]:
    with hostile() as server:
        yield server


@pytest.mark.parametrize(
    ("mode", "words", "errors"),
    [
        ("cut_blob", "could not be fetched", 1),  # a failed request, counted
        ("flipped_blob", "another digest", 0),  # answered, but not the blob asked for
        ("longer_blob", "another digest", 0),
        ("wrong_blob", "another digest", 0),
    ],
)
def test_a_cut_changed_or_padded_blob_is_a_miss_and_leaves_no_file(
    tmp_path: Path,
    eb: Callable[..., Any],
    hostile_server: Hostile,
    mode: str,
    words: str,
    errors: int,
) -> None:
    stored = stored_big_output(tmp_path=tmp_path, eb=eb, size=3 * MIB + 16 * 5)
    warnings: list[str] = []
    up = tier(url=hostile_server.url, folder=stored.folder, environ={}, warnings=warnings)
    assert up.push(keys=[stored.key]).stored == 1
    hostile_server.mode = mode

    fresh = tmp_path / "runner2-cache"
    down = tier(url=hostile_server.url, folder=fresh, environ={}, warnings=warnings)
    down.prefetch(wanted={stored.key: "big"}, stop=threading.Event())
    assert down.fetched == set()
    assert down.rejected == {"signature": 0, "entry": 0, "blob": 1}
    assert any("for check 'big'" in w and words in w for w in warnings), warnings
    assert down.tally().errors == errors
    # Neither the blob nor its temporary file stayed (the small files that travelled inline
    # with the entry may have been kept: they are sound).
    assert not [path for path in leftovers(fresh) if path.stat().st_size > 16 * 1024]
    assert not [path for path in leftovers(fresh) if path.name.startswith(".")]
    assert not (fresh / "entries").exists() or not list((fresh / "entries").rglob("*.json"))


# Run in a process of its own, so tracemalloc sees eb's code alone: the peak of Python memory
# while one tier pushes the verdict and another fetches it (each backend's client is made and
# used once first, so loading it is not counted as the transfer's cost).
DRIVER = """
import json, sys, threading, tracemalloc
from pathlib import Path
from eval_banana.cache.remotetier import RemoteTier
from eval_banana.cache.store import CacheStore
from eval_banana.remote.guarded import GuardedRemote
from eval_banana.remote.opening import open_backend

args = json.loads(sys.argv[1])

def tier(folder):
    backend = open_backend(
        url=args["url"], endpoint=None, timeout=60, environ=args["environ"], source="driver"
    )
    made = RemoteTier(
        remote=GuardedRemote(backend=backend, concurrency=1),
        store=CacheStore(folder=Path(folder), max_bytes=1 << 40),
        writes=True, signing_key=None, require_signature=False,
        warn=lambda message, file, hint: print(message, file=sys.stderr),
    )
    made.remote.head(kind="ac", name="0" * 64)
    return made

up = tier(args["local"])
tracemalloc.start()
pushed = up.push(keys=[args["key"]]).stored
put_peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
down = tier(args["fresh"])
tracemalloc.start()
down.prefetch(wanted={args["key"]: "big"}, stop=threading.Event())
get_peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps({
    "pushed": pushed, "fetched": len(down.fetched), "put_peak": put_peak, "get_peak": get_peak,
    "up": up.tally().bytes_up, "down": down.tally().bytes_down,
}))
"""


def test_moving_a_32_mb_blob_costs_eb_far_less_memory_than_the_blob(
    tmp_path: Path, eb: Callable[..., Any], remote: Remote
) -> None:
    size = 32 * MIB
    stored = stored_big_output(tmp_path=tmp_path, eb=eb, size=size)
    args = {
        "url": remote.url,
        "environ": remote.environ,
        "local": str(stored.folder),
        "fresh": str(tmp_path / "runner2-cache"),
        "key": stored.key,
    }
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert (found["pushed"], found["fetched"]) == (1, 1), done.stderr
    assert found["up"] > size and found["down"] > size
    # A whole blob in memory would be 32 MiB at least; streamed, a few chunks.
    assert found["put_peak"] < 8 * MIB, found
    assert found["get_peak"] < 8 * MIB, found
    print(f"{remote.url.split(':', 1)[0]}: {json.dumps(found)}")
