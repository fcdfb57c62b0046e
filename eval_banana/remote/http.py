"""A plain HTTP cache as the remote tier: bazel-remote, nginx or a WebDAV server.

    GET/PUT/HEAD <prefix>/ac/<key hex>       entries
    GET/PUT/HEAD <prefix>/cas/<sha256 hex>   blobs

The standard library's client, one connection per request, each bounded by the timeout from
connecting to the last byte. A bearer token comes from EVAL_BANANA_CACHE_TOKEN and goes only
into the Authorization header (never into a URL eb shows or a file it writes). A query string
of the URL (`?token=...`, what a proxy that authenticates by query reads) goes with every
request, and is masked in every message, as the URL's password is. A redirect is followed only
to the same scheme, host and port: a cache that sends eb elsewhere could hand out anyone's
verdicts, and would receive the token and the query.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import socket
import time
from collections.abc import Iterator, Mapping
from typing import BinaryIO, NamedTuple
from urllib.parse import quote, unquote, urljoin, urlsplit

from eval_banana.core.secreturl import MASK
from eval_banana.remote.backend import (
    CHUNK,
    WRITE_REFUSED,
    Kind,
    ListingUnsupported,
    Meter,
    RemoteError,
    RemoteItem,
    Sink,
    Watchdog,
    WholeObjects,
    WholeWrites,
    checked_name,
)

TOKEN_VARIABLE = "EVAL_BANANA_CACHE_TOKEN"
_REDIRECTS = 3
_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})


class HttpBackend(WholeObjects, WholeWrites):
    """Objects below one HTTP(S) prefix."""

    def __init__(
        self,
        *,
        scheme: str,
        host: str,
        port: int | None,
        prefix: str,
        timeout: float,
        authorization: str | None,
        query: str = "",
    ) -> None:
        self.scheme = scheme
        self.host = host
        self.port = port
        self.prefix = prefix.rstrip("/")
        self.timeout = timeout
        self._authorization = authorization
        # Sent with every request, never shown: messages name a request by its path alone.
        self._query = _sendable(query)
        self.sent = Meter()  # each request on the wire: a redirect and a folder made count
        self.url = f"{scheme}://{_authority(host=host, port=port)}{self.prefix}"

    @classmethod
    def from_url(cls, *, url: str, timeout: float, environ: Mapping[str, str]) -> HttpBackend:
        parts = urlsplit(url)
        token = environ.get(TOKEN_VARIABLE, "")
        authorization: str | None = None
        if token:
            authorization = f"Bearer {token}"
        elif parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            authorization = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        if not parts.hostname:
            raise RemoteError(f"the URL names no host: {parts.scheme}://{parts.path}")
        return cls(
            scheme=parts.scheme.lower(),
            host=parts.hostname,
            port=parts.port,
            prefix=parts.path,
            timeout=timeout,
            authorization=authorization,
            query=parts.query,
        )

    def _target(self, *, kind: Kind, name: str) -> str:
        return f"{self.prefix}/{kind}/{checked_name(name)}"

    def get_into(self, *, kind: Kind, name: str, sink: Sink) -> int | None:
        path = self._target(kind=kind, name=name)
        status, moved = self._request(method="GET", path=path, sink=sink)
        if status == 404:
            return None
        if status != 200:
            raise self._refused(method="GET", kind=kind, name=name, status=status)
        return moved or 0

    def put_from(self, *, kind: Kind, name: str, source: BinaryIO, size: int) -> None:
        path = self._target(kind=kind, name=name)
        body = _Body(source=source, size=size)
        # One limit for the write as a whole, however many requests it takes.
        deadline = time.monotonic() + self.timeout
        status, _ = self._request(method="PUT", path=path, body=body, deadline=deadline)
        if status in (404, 409):
            # A WebDAV server stores only into a folder that exists: make it, then once more.
            self._make_folders(kind=kind, deadline=deadline)
            status, _ = self._request(method="PUT", path=path, body=body, deadline=deadline)
        if status not in (200, 201, 204):
            raise self._refused(method="PUT", kind=kind, name=name, status=status)

    def head(self, *, kind: Kind, name: str) -> int | None:
        status, length = self._request(method="HEAD", path=self._target(kind=kind, name=name))
        if status == 404:
            return None
        if status != 200:
            raise self._refused(method="HEAD", kind=kind, name=name, status=status)
        return length if length is not None else 0

    def list(self, *, kind: Kind) -> Iterator[RemoteItem]:
        raise ListingUnsupported(f"{self.url} is an HTTP cache, which cannot list what it holds")

    def delete(self, *, kind: Kind, name: str) -> bool:
        status, _ = self._request(method="DELETE", path=self._target(kind=kind, name=name))
        if status == 404:
            return False
        if status not in (200, 202, 204):
            raise self._refused(method="DELETE", kind=kind, name=name, status=status)
        return True

    def _refused(self, *, method: str, kind: Kind, name: str, status: int) -> RemoteError:
        """The error of an answer that is not the one asked for; for 401 and 403, what it
        most likely means, since the status alone does not say which setting to fix."""
        meaning = ""
        if status == 401 and self._authorization is None and self._query:
            meaning = (
                " (unauthorized: the server refused the query string of the URL, and eb sent "
                f"no other credentials; check the query, or give a token in {TOKEN_VARIABLE})"
            )
        elif status == 401 and self._authorization is None:
            meaning = (
                " (unauthorized: eb sent no credentials; give them in the URL, "
                f"https://user:password@host/prefix, or a token in {TOKEN_VARIABLE})"
            )
        elif status == 401:
            meaning = (
                " (unauthorized: the server refused the user and password of the URL or the "
                f"token in {TOKEN_VARIABLE})"
            )
        elif status == 403 and method == "PUT":
            meaning = f" ({WRITE_REFUSED})"
        elif status == 403:
            meaning = " (forbidden: these credentials may not read the cache)"
        return RemoteError(f"{method} {kind}/{name} answered HTTP {status}{meaning}")

    def _make_folders(self, *, kind: Kind, deadline: float) -> None:
        path = ""
        for part in [*self.prefix.strip("/").split("/"), kind]:
            if part:
                path += f"/{part}"
                self._request(method="MKCOL", path=path + "/", deadline=deadline)

    def _request(
        self,
        *,
        method: str,
        path: str,
        body: _Body | None = None,
        sink: Sink | None = None,
        deadline: float | None = None,
    ) -> tuple[int, int | None]:
        """(status, length) of one request, redirects on the same host followed, all before
        `deadline` (by default the timeout from now). The length is the bytes a 200 answer
        wrote into `sink`, else the Content-Length (or None). `path` goes without a query:
        the URL's is added to each request sent."""
        if deadline is None:
            deadline = time.monotonic() + self.timeout
        query = self._query
        for _ in range(_REDIRECTS + 1):
            status, length, location = self._once(
                method=method, path=path, query=query, body=body, sink=sink, deadline=deadline
            )
            if status not in _REDIRECT_CODES:
                return status, length
            path, query = self._same_origin(location=location, path=path)
        raise RemoteError(f"{method} {path}: more than {_REDIRECTS} redirects")

    def _same_origin(self, *, location: str | None, path: str) -> tuple[str, str]:
        """The path and query a redirect leads to, if it stays on this scheme, host and port.
        The URL's query goes on with it (a proxy that authenticates by query asks for it on
        each request), unless the redirect's own query already holds it."""
        if not location:
            raise RemoteError(f"{path}: a redirect without a Location")
        where = _authority(host=self.host, port=self.port)
        target = urlsplit(urljoin(f"{self.scheme}://{where}{path}", location))
        try:
            origin = (target.scheme, target.hostname, target.port)
        except ValueError:  # a port that is no number: no origin eb could compare
            said = self._masked(location)
            raise RemoteError(f"{path}: redirected to a URL eb cannot read ({said})") from None
        if origin != (self.scheme, self.host, self.port):
            raise RemoteError(
                f"{path}: redirected to another host ({target.scheme}://{target.netloc}), "
                "which eb refuses"
            )
        return target.path, _joined(own=self._query, given=_sendable(target.query))

    def _masked(self, text: str) -> str:
        """`text` without the URL's query, which a server may echo in what eb shows."""
        return text.replace(self._query, MASK) if self._query else text

    def _once(
        self,
        *,
        method: str,
        path: str,
        query: str,
        body: _Body | None,
        sink: Sink | None,
        deadline: float,
    ) -> tuple[int, int | None, str | None]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RemoteError(f"{method} {path}: timed out")
        connection_type = (
            http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        )
        # The body goes out CHUNK bytes at a time, read from its file (never whole in memory).
        connection = connection_type(self.host, self.port, timeout=left, blocksize=CHUNK)
        self.sent.add()
        watchdog = Watchdog(seconds=left, stop=lambda: _cut(connection))
        headers = {"User-Agent": "eval-banana"}
        if self._authorization:
            headers["Authorization"] = self._authorization
        sent = f"{path}?{query}" if query else path
        try:
            if body is None:
                connection.request(method, sent, headers=headers)
            else:
                body.source.seek(0)  # a retry or a redirect sends it again from the start
                headers["Content-Length"] = str(body.size)
                _send_body(
                    connection=connection, method=method, path=sent, headers=headers, body=body
                )
            response = connection.getresponse()
            length_text = response.getheader("Content-Length")
            length = int(length_text) if length_text and length_text.isdigit() else None
            location = response.getheader("Location")
            if method == "GET" and response.status == 200 and sink is not None:
                moved = _stream(response=response, sink=sink, deadline=deadline)
                if length is not None and moved != length:
                    raise RemoteError(f"{method} {path}: the body was cut short")
                length = moved
            return response.status, length, location
        except (RemoteError, OSError, http.client.HTTPException, ValueError) as exc:
            if watchdog.fired:  # how the cut connection looked is not the cause
                raise RemoteError(f"{method} {path}: timed out") from None
            if isinstance(exc, RemoteError):
                raise
            raise RemoteError(f"{method} {path}: {self._masked(_cause(exc))}") from None
        finally:
            watchdog.cancel()
            connection.close()


def _authority(*, host: str, port: int | None) -> str:
    """`host[:port]` as a URL writes it. The URL's host comes without the brackets of an IPv6
    address (`::1`), which a URL needs back: without them its colons read as the port's."""
    written = f"[{host}]" if ":" in host else host
    return written if port is None else f"{written}:{port}"


def _sendable(query: str) -> str:
    """`query` as a request line may carry it: what HTTP forbids there (a space, a control
    character) percent-encoded, the rest (`%xx`, `&`, `=`) as written."""
    return quote(query, safe="!#$%&'()*+,/:;=?@[]~")


def _joined(*, own: str, given: str) -> str:
    """A redirect's query `given`, then each parameter of the URL's own query `own` it lacks."""
    held = given.split("&") if given else []
    missing = [part for part in own.split("&") if part and part not in held]
    return "&".join([*held, *missing])


def _cut(connection: http.client.HTTPConnection) -> None:
    sock = connection.sock
    if sock is not None:
        sock.shutdown(socket.SHUT_RDWR)


class _Body(NamedTuple):
    """A request's body: a file at its start and how many bytes of it to send."""

    source: BinaryIO
    size: int


def _send_body(
    *,
    connection: http.client.HTTPConnection,
    method: str,
    path: str,
    headers: dict[str, str],
    body: _Body,
) -> None:
    """Send a request with a body. A server may answer (a WebDAV server's 409 for a folder
    that is not there) and close before it has read the body: its answer still counts."""
    # getresponse then reads the answer the server gave, or fails with the cause.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        connection.request(method, path, body=body.source, headers=headers)


def _stream(*, response: http.client.HTTPResponse, sink: Sink, deadline: float) -> int:
    """Write the body into `sink` in chunks, within the request's deadline (a server
    trickling bytes is a timeout); the bytes written. Each chunk is what one read of the
    socket brings (up to CHUNK): the sink sees the body as it comes, and may stop it (an
    interrupt) without waiting for a whole CHUNK from a slow server."""
    moved = 0
    while chunk := response.read1(CHUNK):
        sink.write(chunk)
        moved += len(chunk)
        if time.monotonic() > deadline:
            raise RemoteError("timed out while reading the body")
    return moved


def _cause(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, http.client.IncompleteRead):
        return "the body was cut short"
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return str(text)
