"""A plain HTTP cache as the remote tier: bazel-remote, nginx or a WebDAV server.

    GET/PUT/HEAD <prefix>/ac/<key hex>       entries
    GET/PUT/HEAD <prefix>/cas/<sha256 hex>   blobs

The standard library's client, one connection per request, each bounded by the timeout from
connecting to the last byte. A bearer token comes from EVAL_BANANA_CACHE_TOKEN and goes only
into the Authorization header (never into a URL eb shows or a file it writes). A redirect is
followed only to the same scheme, host and port: a cache that sends eb elsewhere could hand
out anyone's verdicts, and would receive the token.
"""

from __future__ import annotations

import base64
import http.client
import time
from collections.abc import Iterator, Mapping
from urllib.parse import unquote, urljoin, urlsplit

from eval_banana.remote.backend import (
    Kind,
    ListingUnsupported,
    RemoteError,
    RemoteItem,
    checked_name,
)

TOKEN_VARIABLE = "EVAL_BANANA_CACHE_TOKEN"
_REDIRECTS = 3
_CHUNK = 1 << 16
_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})


class HttpBackend:
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
    ) -> None:
        self.scheme = scheme
        self.host = host
        self.port = port
        self.prefix = prefix.rstrip("/")
        self.timeout = timeout
        self._authorization = authorization
        where = host if port is None else f"{host}:{port}"
        self.url = f"{scheme}://{where}{self.prefix}"

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
        )

    def _target(self, *, kind: Kind, name: str) -> str:
        return f"{self.prefix}/{kind}/{checked_name(name)}"

    def get(self, *, kind: Kind, name: str) -> bytes | None:
        status, body, _ = self._request(method="GET", path=self._target(kind=kind, name=name))
        if status == 404:
            return None
        if status != 200:
            raise RemoteError(f"GET {kind}/{name} answered HTTP {status}")
        return body

    def put(self, *, kind: Kind, name: str, data: bytes) -> None:
        path = self._target(kind=kind, name=name)
        status, _, _ = self._request(method="PUT", path=path, body=data)
        if status in (404, 409):
            # A WebDAV server stores only into a folder that exists: make it, then once more.
            self._make_folders(kind=kind)
            status, _, _ = self._request(method="PUT", path=path, body=data)
        if status not in (200, 201, 204):
            raise RemoteError(f"PUT {kind}/{name} answered HTTP {status}")

    def head(self, *, kind: Kind, name: str) -> int | None:
        status, _, length = self._request(method="HEAD", path=self._target(kind=kind, name=name))
        if status == 404:
            return None
        if status != 200:
            raise RemoteError(f"HEAD {kind}/{name} answered HTTP {status}")
        return length if length is not None else 0

    def list(self, *, kind: Kind) -> Iterator[RemoteItem]:
        raise ListingUnsupported(f"{self.url} is an HTTP cache, which cannot list what it holds")

    def delete(self, *, kind: Kind, name: str) -> bool:
        status, _, _ = self._request(method="DELETE", path=self._target(kind=kind, name=name))
        if status == 404:
            return False
        if status not in (200, 202, 204):
            raise RemoteError(f"DELETE {kind}/{name} answered HTTP {status}")
        return True

    def _make_folders(self, *, kind: Kind) -> None:
        path = ""
        for part in [*self.prefix.strip("/").split("/"), kind]:
            if part:
                path += f"/{part}"
                self._request(method="MKCOL", path=path + "/")

    def _request(
        self, *, method: str, path: str, body: bytes | None = None
    ) -> tuple[int, bytes, int | None]:
        """(status, body, Content-Length) of one request, redirects on the same host followed."""
        deadline = time.monotonic() + self.timeout
        for _ in range(_REDIRECTS + 1):
            status, data, length, location = self._once(
                method=method, path=path, body=body, deadline=deadline
            )
            if status not in _REDIRECT_CODES:
                return status, data, length
            path = self._same_origin(location=location, path=path)
        raise RemoteError(f"{method} {path}: more than {_REDIRECTS} redirects")

    def _same_origin(self, *, location: str | None, path: str) -> str:
        """The path a redirect leads to, if it stays on this scheme, host and port."""
        if not location:
            raise RemoteError(f"{path}: a redirect without a Location")
        where = self.host if self.port is None else f"{self.host}:{self.port}"
        target = urlsplit(urljoin(f"{self.scheme}://{where}{path}", location))
        if (target.scheme, target.hostname, target.port) != (self.scheme, self.host, self.port):
            raise RemoteError(
                f"{path}: redirected to another host ({target.scheme}://{target.netloc}), "
                "which eb refuses"
            )
        return target.path + (f"?{target.query}" if target.query else "")

    def _once(
        self, *, method: str, path: str, body: bytes | None, deadline: float
    ) -> tuple[int, bytes, int | None, str | None]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RemoteError(f"{method} {path}: timed out")
        connection_type = (
            http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        )
        connection = connection_type(self.host, self.port, timeout=left)
        headers = {"User-Agent": "eval-banana"}
        if self._authorization:
            headers["Authorization"] = self._authorization
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            length_text = response.getheader("Content-Length")
            length = int(length_text) if length_text and length_text.isdigit() else None
            location = response.getheader("Location")
            data = b"" if method == "HEAD" else _read_all(response=response, deadline=deadline)
            if method != "HEAD" and length is not None and len(data) != length:
                raise RemoteError(f"{method} {path}: the body was cut short")
            return response.status, data, length, location
        except RemoteError:
            raise
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise RemoteError(f"{method} {path}: {_cause(exc)}") from None
        finally:
            connection.close()


def _read_all(*, response: http.client.HTTPResponse, deadline: float) -> bytes:
    """The whole body, within the request's deadline (a server trickling bytes is a timeout)."""
    parts = []
    while chunk := response.read(_CHUNK):
        parts.append(chunk)
        if time.monotonic() > deadline:
            raise RemoteError("timed out while reading the body")
    return b"".join(parts)


def _cause(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, http.client.IncompleteRead):
        return "the body was cut short"
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return str(text)
