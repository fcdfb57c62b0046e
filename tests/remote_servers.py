"""Real servers for the shared cache's tests, each on 127.0.0.1 on a free port, stopped after.

- `moto_s3`: moto's standalone S3 server, a separate process (`python -m moto.server`), so a
  test can kill it as a crashed remote would go.
- `webdav`: a WebDAV server (wsgidav on cheroot) over a folder.
- `hostile`: a small HTTP cache written here that can be made slow, flaky or hostile.
- `silent`: a listener that accepts connections and never answers (a hung remote).
- `gate`: a proxy in front of another of them that passes requests on, or holds or fails those
  of the methods a test names (an endpoint that goes bad for some requests only).
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

BUCKET = "eb-shared"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for(port: int, *, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


class MotoS3:
    """moto's S3 server in its own process, with one bucket; `environ` speaks to it."""

    def __init__(self, *, port: int, process: subprocess.Popen[bytes]) -> None:
        self.port = port
        self.process = process
        self.endpoint = f"http://127.0.0.1:{port}"
        self.environ = {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "EVAL_BANANA_CACHE_REMOTE_ENDPOINT": self.endpoint,
        }

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )

    def reader_environ(self) -> dict[str, str]:
        """`environ` with the keys of an IAM user that may read the bucket and not write it,
        and moto's IAM checks turned on from then (the test keys are refused after that)."""
        import json
        import urllib.request

        import boto3

        iam = boto3.client(
            "iam",
            endpoint_url=self.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        iam.create_user(UserName="reader")
        statements = [
            {"Effect": "Allow", "Action": "s3:*", "Resource": "*"},
            {"Effect": "Deny", "Action": ["s3:PutObject", "s3:DeleteObject"], "Resource": "*"},
        ]
        iam.put_user_policy(
            UserName="reader",
            PolicyName="read-only",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": statements}),
        )
        key = iam.create_access_key(UserName="reader")["AccessKey"]
        # moto's own switch: authorize every request from now on.
        switch = urllib.request.Request(
            f"{self.endpoint}/moto-api/reset-auth",
            data=b"0",
            method="POST",
            headers={"Content-Type": "text/plain"},
        )
        with urllib.request.urlopen(switch, timeout=10):
            pass
        return {
            **self.environ,
            "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
        }

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)


@contextlib.contextmanager
def moto_s3() -> Iterator[MotoS3]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = MotoS3(port=port, process=process)
    try:
        _wait_for(port)
        server.client().create_bucket(Bucket=BUCKET)
        yield server
    finally:
        server.kill()


@contextlib.contextmanager
def webdav(
    *, folder: Path, users: dict[str, str] | None = None, seen: list[str] | None = None
) -> Iterator[str]:
    """A WebDAV server over `folder`, anonymous read-write, or with `users` (name -> password)
    for basic auth only; its URL. `seen` gets the method of every request it receives."""
    from cheroot import wsgi
    from wsgidav.wsgidav_app import WsgiDAVApp

    folder.mkdir(parents=True, exist_ok=True)
    user_mapping: object = True
    if users is not None:
        user_mapping = {name: {"password": password} for name, password in users.items()}
    app = WsgiDAVApp(
        {
            "provider_mapping": {"/": str(folder)},
            "simple_dc": {"user_mapping": {"*": user_mapping}},
            "http_authenticator": {
                "accept_basic": True,
                "accept_digest": False,
                "default_to_digest": False,
                "domain_controller": None,
            },
            "verbose": 0,
            "logging": {"enable": False, "enable_loggers": []},
            "dir_browser": {"enable": False},
        }
    )
    port = free_port()

    def noted(environ: dict[str, Any], start_response: Any) -> Any:
        if seen is not None:
            seen.append(environ["REQUEST_METHOD"])
        return app(environ, start_response)

    server = wsgi.Server(("127.0.0.1", port), noted, numthreads=8)
    server.prepare()
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        thread.join(timeout=10)


class Hostile:
    """An HTTP cache in memory whose answers a test can spoil; `requests` logs what it got."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.requests: list[tuple[str, str, str | None]] = []  # method, path, Authorization
        # ok, slow, error, truncated, redirect, wrong_blob; and for blobs (cas/) only:
        # cut_blob (half the body, the full Content-Length), flipped_blob (the same length, one
        # byte changed), longer_blob (more bytes than the blob has); for entries (ac/) only:
        # huge_entry (an endless body announced as 256 MiB; `sent` counts what went out);
        # read_only (every PUT answered 403, as a cache that lets this identity only read);
        # no_folder (every PUT answered 409, as a WebDAV server whose folder is missing);
        # trickle_body, trickle_headers (a byte every 0.1 s, never a pause a socket read's own
        # timeout would notice); redirect_loop (302 to the same path, always); no_location (302
        # without a Location).
        self.mode = "ok"
        self.sent = 0
        self.delay = 0.0
        self.put_delay = 0.0  # seconds each PUT waits, its body read, before it is stored
        self.redirect_to = ""
        self.url = ""
        # When set, as a proxy that authenticates by query: every request whose query is not
        # this one is answered 401 (objects are stored by path, the query left out).
        self.required_query = ""


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Any
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def handle(self) -> None:
        # A client that gave up (a timeout) leaves a broken pipe: nothing to report.
        with contextlib.suppress(OSError):
            super().handle()

    def _spoiled(self) -> bool:
        state: Hostile = self.server.state
        state.requests.append((self.command, self.path, self.headers.get("Authorization")))
        if state.required_query and urlsplit(self.path).query != state.required_query:
            self._answer(401, b"a token in the query is required")
            return True
        if state.delay:
            time.sleep(state.delay)
        if state.mode == "slow":
            time.sleep(30)
        if state.mode == "error":
            self._answer(500, b"broken")
            return True
        if state.mode == "trickle_headers":
            self._trickle(b"HTTP/1.1 200 OK\r\n" + b"X-Padding: " + b"." * 200 + b"\r\n\r\n")
            self.close_connection = True
            return True
        if state.mode in ("redirect_loop", "no_location"):
            self.send_response(302)
            if state.mode == "redirect_loop":
                self.send_header("Location", self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True
        if state.mode in ("redirect", "redirect_once"):
            if state.mode == "redirect_once":
                state.mode = "ok"
            self.send_response(302)
            self.send_header("Location", state.redirect_to + self._key)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True
        return False

    @property
    def _key(self) -> str:
        """The object a request names: its path without the query."""
        return urlsplit(self.path).path

    def _answer(self, status: int, body: bytes, *, length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        if self._spoiled():
            return
        state: Hostile = self.server.state
        data = state.objects.get(self._key)
        if data is None:
            self._answer(404, b"")
        elif state.mode == "truncated":
            self._answer(200, data[: len(data) // 2], length=len(data))
            self.close_connection = True
        elif state.mode == "wrong_blob" and "/cas/" in self.path:
            self._answer(200, b"not the blob you asked for" + data[:10])
        elif state.mode == "cut_blob" and "/cas/" in self.path:
            self._answer(200, data[: len(data) // 2], length=len(data))
            self.close_connection = True
        elif state.mode == "flipped_blob" and "/cas/" in self.path:
            self._answer(200, bytes([data[0] ^ 1]) + data[1:])
        elif state.mode == "longer_blob" and "/cas/" in self.path:
            self._answer(200, data + b"and then some more")
        elif state.mode == "huge_entry" and "/ac/" in self.path:
            self._endless(size=256 << 20)
        elif state.mode == "trickle_body":
            self.send_response(200)
            self.send_header("Content-Length", str(len(data) + 200))
            self.end_headers()
            self._trickle(data + b" " * 200)
            self.close_connection = True
        else:
            self._answer(200, data)

    def _trickle(self, data: bytes) -> None:
        """`data` a byte at a time, 0.1 s apart, until the client hangs up."""
        for byte in data:
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            time.sleep(0.1)

    def _endless(self, *, size: int) -> None:
        """`size` bytes of JSON-looking padding, made as they are sent (never held whole)."""
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        chunk = b" " * (1 << 20)
        self.close_connection = True
        for _ in range(size // len(chunk)):
            self.wfile.write(chunk)  # a client that stops reading ends this with an OSError
            self.server.state.sent += len(chunk)

    def do_HEAD(self) -> None:  # noqa: N802
        if self._spoiled():
            return
        data = self.server.state.objects.get(self._key)
        self._answer(404 if data is None else 200, b"", length=0 if data is None else len(data))

    def do_PUT(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self._spoiled():
            return
        time.sleep(self.server.state.put_delay)
        if self.server.state.mode == "read_only":
            self._answer(403, b"forbidden")
            return
        if self.server.state.mode == "no_folder":
            self._answer(409, b"no such folder")
            return
        self.server.state.objects[self._key] = body
        self._answer(201, b"")


class _Ipv6Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6


@contextlib.contextmanager
def hostile(*, ipv6: bool = False) -> Iterator[Hostile]:
    """The hostile cache on 127.0.0.1, or with `ipv6` on ::1 (its URL `http://[::1]:PORT/cache`)."""
    state = Hostile()
    server_type = _Ipv6Server if ipv6 else http.server.ThreadingHTTPServer
    server = server_type(("::1" if ipv6 else "127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.state = state  # type: ignore[attr-defined]
    where = "[::1]" if ipv6 else "127.0.0.1"
    state.url = f"http://{where}:{server.server_address[1]}/cache"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class Silent:
    """A listener on 127.0.0.1 that accepts every connection and never answers."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.listener.settimeout(0.05)  # so the accepting thread sees `stopped` soon
        self.endpoint = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections: list[socket.socket] = []  # held open: a closed one would answer
        self.stopped = threading.Event()

    def accept_all(self) -> None:
        while not self.stopped.is_set():
            with contextlib.suppress(TimeoutError):
                connection, _ = self.listener.accept()
                self.connections.append(connection)


@contextlib.contextmanager
def silent() -> Iterator[Silent]:
    server = Silent()
    thread = threading.Thread(target=server.accept_all, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopped.set()
        thread.join(timeout=10)
        server.listener.close()
        for connection in server.connections:
            connection.close()


class Gate:
    """What `gate` passes on to `upstream`: every request, except those whose method is in
    `hold` (accepted and never answered, as a hung endpoint) or in `fail` (answered 503 at
    once), when their path holds `within`. `seen` logs the method of each request received."""

    def __init__(self, *, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.hold: set[str] = set()
        self.fail: set[str] = set()
        self.within = "/"
        self.seen: list[str] = []
        self.stopped = threading.Event()
        self.endpoint = ""


class _GateHandler(http.server.BaseHTTPRequestHandler):
    server: Any
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def handle(self) -> None:
        with contextlib.suppress(OSError):  # a client that gave up on a held request
            super().handle()

    def _relay(self) -> None:
        state: Gate = self.server.state
        state.seen.append(self.command)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        spoiled = state.within in self.path
        if spoiled and self.command in state.hold:
            state.stopped.wait()
            self.close_connection = True
            return
        if spoiled and self.command in state.fail:
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        upstream = http.client.HTTPConnection(
            state.upstream.hostname or "127.0.0.1", state.upstream.port, timeout=30
        )
        try:
            upstream.request(self.command, self.path, body=body, headers=dict(self.headers))
            answer = upstream.getresponse()
            data = answer.read()
        finally:
            upstream.close()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _relay  # noqa: N815


@contextlib.contextmanager
def gate(*, upstream: str) -> Iterator[Gate]:
    state = Gate(upstream=upstream)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _GateHandler)
    server.daemon_threads = True
    server.state = state  # type: ignore[attr-defined]
    state.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stopped.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def clean_environ() -> dict[str, str]:
    """The process environment without any shared-cache setting a shell may carry."""
    return {k: v for k, v in os.environ.items() if not k.startswith("EVAL_BANANA_CACHE_")}
