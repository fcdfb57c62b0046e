"""W17: the shared verdict cache on S3 (docs/shared-cache.md), against its bounds, in one call.

    python bench/shared_cache.py [--judges 1000] [--slow-judges 100] [--latency-ms 20] [--runs 3]
                                 [--only s3|slow]

Two rows:

- **cached on S3 only.** `--judges` judges whose verdicts are stored only in the S3 tier (moto's
  standalone server on loopback, behind a proxy that holds every chunk a client sends for
  `--latency-ms`), run from a clone with an empty local tier. The floor is the same run with a warm
  local tier and no remote, measured alternately in the same call. Bounds: at most 2 requests per
  cached check, and eb <= floor + 1.25 x (requests x latency / remote_concurrency).
- **a remote that times out.** `--slow-judges` judges run with an empty local tier against a
  remote that accepts connections and never answers (`remote_timeout_seconds = 2`); the floor
  is the same run with no remote. Bound: eb <= floor + timeout + 1 s.

Prints one markdown row per case (medians of `--runs`) and exits 0 unless the bench itself
breaks; the bounds are reported, never enforced.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import hmac
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

BENCH = Path(__file__).resolve().parent
AGENT = BENCH / "agents" / "count_agent.py"
BUCKET = "eb-bench"
REGION = "us-east-1"
TIMEOUT_S = 2
CONCURRENCY = 8


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for(port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


@contextlib.contextmanager
def moto() -> Iterator[int]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(port)
        yield port
    finally:
        process.kill()
        process.wait()


def _pump(source: socket.socket, target: socket.socket, delay: float) -> None:
    try:
        while data := source.recv(65536):
            if delay:
                time.sleep(delay)  # each request's bytes reach the server this much later
            target.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)


@contextlib.contextmanager
def latency_proxy(*, upstream: int, delay: float) -> Iterator[int]:
    """A TCP proxy to 127.0.0.1:`upstream` holding what clients send for `delay` seconds."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", upstream))
            for args in ((client, server, delay), (server, client, 0.0)):
                threading.Thread(target=_pump, args=args, daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        listener.close()


@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """Accepts connections and never answers: every request times out."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()
        for connection in held:
            connection.close()


def make_project(*, root: Path, judges: int, log: Path) -> None:
    command = json.dumps([sys.executable, str(AGENT), f"--log={log}"])
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(
        "[core]\nmax_parallel_checks = 4\n\n"
        '[discovery]\nexclude_dirs = [".eval-banana", ".git"]\n\n'
        '[cache]\nmode = "on"\nreplay = false\n'
        f"remote_timeout_seconds = {TIMEOUT_S}\nremote_concurrency = {CONCURRENCY}\n\n"
        '[harness]\nagent = "count"\n\n'
        f'[agents.count]\ncommand = {command}\nmodel_flag = ""\noutput_dialect = "text"\n'
    )
    (root / "README.md").write_text("A project.\n")
    checks = root / "eval_checks"
    checks.mkdir()
    for number in range(judges):
        (checks / f"j{number:04d}.yaml").write_text(
            f"schema_version: 1\nid: j{number:04d}\ntype: harness_judge\n"
            f"description: Judge {number}.\ninstructions: Decide on README.md, case {number}.\n"
        )


# Runs eval_banana as `python -m` does, then writes its own peak RSS (KB) to argv[1]: eb's own,
# not its agents' (wait4 would fold reaped children in).
RSS_PRELUDE = """\
import atexit, sys
_rss_out = sys.argv.pop(1)
def _rss():
    import resource
    with open(_rss_out, "w") as handle:
        handle.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
atexit.register(_rss)
import runpy
runpy.run_module("eval_banana", run_name="__main__", alter_sys=True)
"""


def eb_run(
    *, root: Path, env: dict[str, str], rss: list[int] | None = None
) -> tuple[float, dict[str, Any]]:
    """One `eb run --json` (its seconds and report); `rss`: append eb's own peak RSS (KB)."""
    rss_file = root.parent / f".{root.name}.rss"
    rss_file.unlink(missing_ok=True)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", RSS_PRELUDE, str(rss_file), "run", "--cwd", str(root), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(done.stdout[-2000:] + done.stderr[-2000:])
    if rss is not None and rss_file.is_file() and rss_file.read_text():
        rss.append(int(rss_file.read_text()))
    report: dict[str, Any] = json.loads(done.stdout)
    return elapsed, report


def _clean_env() -> dict[str, str]:
    return {
        "EVAL_BANANA_CACHE_REMOTE": "",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": REGION,
    }


class Measured(NamedTuple):
    """One W17 case's samples, taken alternately in one call (seconds)."""

    floors: list[float]
    ebs: list[float]
    requests: list[int]  # remote requests each measured eb run made (none: not counted)
    rss_kb: list[int]  # eb's own peak RSS in each measured run with the remote
    # The server's own floor: as many GETs of the stored entries as eb made, by a bare boto3
    # client at `remote_concurrency` through the same proxy (empty: not measured).
    server: tuple[float, ...] = ()
    # The same GETs by a minimal client (`minimal_gets`): the rig's own floor.
    minimal: tuple[float, ...] = ()


def s3_bound(*, floor: float, requests: int, latency_ms: float) -> float:
    """The issue's bound on the S3 case: the warm local run + 1.25 x (requests x latency /
    remote_concurrency)."""
    return floor + 1.25 * (requests * latency_ms / 1000 / CONCURRENCY)


def bare_gets(*, client: Any, keys: list[str]) -> float:
    """Seconds a bare client takes to GET `keys` at `remote_concurrency`: what the server alone
    costs for the requests eb made (the issue's bound takes it to answer in no time)."""
    from concurrent.futures import ThreadPoolExecutor

    def get(key: str) -> int:
        return len(client.get_object(Bucket=BUCKET, Key=key)["Body"].read())

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        sum(pool.map(get, keys))
    return time.perf_counter() - started


@functools.lru_cache(maxsize=4)
def _signing_key(*, secret: str, day: str) -> bytes:
    """The day's SigV4 key: derived once a day, as any client keeps it, not per request."""
    key = f"AWS4{secret}".encode()
    for part in (day, REGION, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def _signed_get(*, connection: http.client.HTTPConnection, key: str) -> int:
    """One path-style GET signed with AWS Signature Version 4 by hand (the bench's
    credentials); the body's length."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = f"/{BUCKET}/{key}"
    host = f"{connection.host}:{connection.port}"
    empty = hashlib.sha256(b"").hexdigest()
    signed = "host;x-amz-content-sha256;x-amz-date"
    canonical = (
        f"GET\n{path}\n\nhost:{host}\nx-amz-content-sha256:{empty}\nx-amz-date:{stamp}\n\n"
        f"{signed}\n{empty}"
    )
    scope = f"{stamp[:8]}/{REGION}/s3/aws4_request"
    hashed = hashlib.sha256(canonical.encode()).hexdigest()
    to_sign = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{hashed}"
    signature = hmac.new(
        _signing_key(secret="bench", day=stamp[:8]), to_sign.encode(), hashlib.sha256
    ).hexdigest()
    connection.request(
        "GET",
        path,
        headers={
            "x-amz-date": stamp,
            "x-amz-content-sha256": empty,
            "Authorization": f"AWS4-HMAC-SHA256 Credential=bench/{scope}, "
            f"SignedHeaders={signed}, Signature={signature}",
        },
    )
    answer = connection.getresponse()
    body = answer.read()
    if answer.status != 200:
        raise RuntimeError(f"GET {key}: HTTP {answer.status}")
    return len(body)


def minimal_gets(*, port: int, keys: list[str]) -> float:
    """Seconds the least a client can do takes to GET `keys` at `remote_concurrency`: requests
    signed by hand and sent over one kept-alive connection per worker, no SDK, nothing parsed
    but the status. What is left is the server and the proxy: when this alone is over the
    bound's allowance, no client meets the bound on this rig."""
    from concurrent.futures import ThreadPoolExecutor

    local = threading.local()

    def get(key: str) -> int:
        if not hasattr(local, "connection"):
            local.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        return _signed_get(connection=local.connection, key=key)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        sum(pool.map(get, keys))
    return time.perf_counter() - started


def _entry_keys(*, client: Any, prefix: str) -> list[str]:
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        keys.extend(item["Key"] for item in page.get("Contents", []))
    return keys


def s3_row(*, work: Path, judges: int, latency_ms: float, runs: int) -> str:
    measured = s3_measure(work=work, judges=judges, latency_ms=latency_ms, runs=runs)
    floors, ebs, requests = measured.floors, measured.ebs, measured.requests
    floor, eb = statistics.median(floors), statistics.median(ebs)
    made = max(requests)
    bound = s3_bound(floor=floor, requests=made, latency_ms=latency_ms)
    per_check = made / judges
    met = eb <= bound and per_check <= 2
    return (
        f"| W17 | {judges} judges cached on S3 only (moto, +{latency_ms:g} ms per request), "
        f"empty local tier | {runs} | {eb:.3f} | {min(ebs):.3f} | {max(ebs):.3f} | warm local "
        f"tier, no remote: {floor:.3f} | {made} requests ({per_check:.2f} per check) | "
        f"<= {bound:.3f} s and <= 2 per check | {'yes' if met else 'no'} |"
    )


def s3_measure(*, work: Path, judges: int, latency_ms: float, runs: int) -> Measured:
    import boto3
    import botocore.config

    log = work / "agents.log"
    warm = work / "warm"
    make_project(root=warm, judges=judges, log=log)
    cold = work / "cold"
    with moto() as port, latency_proxy(upstream=port, delay=latency_ms / 1000) as proxied:
        direct = f"http://127.0.0.1:{port}"
        client = boto3.client(
            "s3",
            endpoint_url=direct,
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
            region_name=REGION,
        )
        client.create_bucket(Bucket=BUCKET)
        base = _clean_env()
        remote = {"EVAL_BANANA_CACHE_REMOTE": f"s3://{BUCKET}/w17"}
        # Fill the S3 tier (and the warm clone's local tier) once, with the agents.
        eb_run(root=warm, env={**base, **remote, "EVAL_BANANA_CACHE_REMOTE_ENDPOINT": direct})
        shutil.copytree(warm, cold, ignore=shutil.ignore_patterns("cache", "runs"))
        starts = log.read_text().count("started")
        floors, ebs, requests, server, minimal = [], [], [], [], []
        rss_kb: list[int] = []
        proxied_client = boto3.client(
            "s3",
            endpoint_url=f"http://127.0.0.1:{proxied}",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
            region_name=REGION,
            config=botocore.config.Config(max_pool_connections=CONCURRENCY),
        )
        entries = _entry_keys(client=client, prefix="w17/ac/")
        for _ in range(runs):
            floor_s, _ = eb_run(root=warm, env=base)
            floors.append(floor_s)
            shutil.rmtree(cold / ".eval-banana" / "cache", ignore_errors=True)
            eb_s, report = eb_run(
                rss=rss_kb,
                root=cold,
                env={
                    **base,
                    **remote,
                    "EVAL_BANANA_CACHE_REMOTE_ENDPOINT": f"http://127.0.0.1:{proxied}",
                },
            )
            ebs.append(eb_s)
            counts = report["cache"]
            if counts["remote_hits"] != judges:
                raise RuntimeError(f"expected {judges} remote hits: {counts}")
            requests.append(counts["remote_requests"])
            made = counts["remote_requests"]
            server.append(bare_gets(client=proxied_client, keys=(entries * 2)[:made]))
            minimal.append(minimal_gets(port=proxied, keys=(entries * 2)[:made]))
        if log.read_text().count("started") != starts:
            raise RuntimeError("a measured run started an agent")
    return Measured(
        floors=floors,
        ebs=ebs,
        requests=requests,
        rss_kb=rss_kb,
        server=tuple(server),
        minimal=tuple(minimal),
    )


def slow_row(*, work: Path, judges: int, runs: int) -> str:
    measured = slow_measure(work=work, judges=judges, runs=runs)
    floors, ebs = measured.floors, measured.ebs
    floor, eb = statistics.median(floors), statistics.median(ebs)
    bound = floor + TIMEOUT_S + 1
    return (
        f"| W17 | {judges} judges, a remote that never answers (timeout {TIMEOUT_S} s) | {runs} "
        f"| {eb:.3f} | {min(ebs):.3f} | {max(ebs):.3f} | no remote: {floor:.3f} | "
        f"+{eb - floor:.3f} s | <= {bound:.3f} s | {'yes' if eb <= bound else 'no'} |"
    )


def slow_measure(*, work: Path, judges: int, runs: int) -> Measured:
    log = work / "slow-agents.log"
    root = work / "slow"
    make_project(root=root, judges=judges, log=log)
    base = _clean_env()
    floors: list[float] = []
    ebs: list[float] = []
    requests: list[int] = []
    rss_kb: list[int] = []
    with silent_server() as port:
        for _ in range(runs):
            shutil.rmtree(root / ".eval-banana" / "cache", ignore_errors=True)
            floors.append(eb_run(root=root, env=base)[0])
            shutil.rmtree(root / ".eval-banana" / "cache", ignore_errors=True)
            env = {**base, "EVAL_BANANA_CACHE_REMOTE": f"http://127.0.0.1:{port}/eb"}
            elapsed, report = eb_run(root=root, env=env, rss=rss_kb)
            ebs.append(elapsed)
            if not report["cache"]["remote_stopped"]:
                raise RuntimeError(f"the breaker did not stop asking: {report['cache']}")
            requests.append(report["cache"]["remote_requests"])
    return Measured(floors=floors, ebs=ebs, requests=requests, rss_kb=rss_kb)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judges", type=int, default=1000)
    parser.add_argument("--slow-judges", type=int, default=100)
    parser.add_argument("--latency-ms", type=float, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=("s3", "slow"), default=None, help="one row")
    args = parser.parse_args(argv)
    print(
        "| case | workload | runs | eb median s | min | max | floor median s | traffic "
        "| bound | met |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="eb-w17-") as scratch:
        work = Path(scratch)
        if args.only in (None, "s3"):
            row = s3_row(work=work, judges=args.judges, latency_ms=args.latency_ms, runs=args.runs)
            print(row, flush=True)
        if args.only in (None, "slow"):
            print(slow_row(work=work, judges=args.slow_judges, runs=args.runs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
