"""An S3 bucket as the remote tier, through boto3 (the `s3` extra): AWS, MinIO, Ceph, R2, and
GCS's S3 interface.

    s3://<bucket>/<prefix>/ac/<key hex>       entries
    s3://<bucket>/<prefix>/cas/<sha256 hex>   blobs

Credentials and region come from boto3's usual sources (AWS_ACCESS_KEY_ID, AWS_PROFILE,
AWS_REGION, ...); the endpoint from `[cache] remote_endpoint`, else AWS_ENDPOINT_URL_S3 or
AWS_ENDPOINT_URL. boto3 retries nothing here: one attempt per request, bounded by the
timeout, and the run's circuit breaker decides when to stop asking.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from eval_banana.core.secreturl import MASK, S3_ENDPOINT_VARIABLES, url_secrets
from eval_banana.remote.backend import (
    CHUNK,
    WRITE_REFUSED,
    Kind,
    Meter,
    RemoteError,
    RemoteItem,
    Sink,
    SinkRefused,
    Watchdog,
    WholeObjects,
    WholeWrites,
    checked_name,
)

_ABSENT = frozenset({"404", "NoSuchKey", "NotFound"})


class S3Backend(WholeObjects, WholeWrites):
    """Objects below one bucket prefix."""

    def __init__(
        self,
        *,
        client: Any,
        bucket: str,
        prefix: str,
        url: str,
        timeout: float = 10.0,
        endpoint: str | None = None,
    ) -> None:
        self._client = client
        self._endpoint = endpoint
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.url = url
        self.timeout = timeout
        self.sent = Meter()
        # Counted as botocore sends them: each page of a listing is one.
        client.meta.events.register("before-send.s3", self._count_request)
        client.meta.events.register("before-send.s3.PutObject", _without_expect_continue)

    @classmethod
    def from_url(
        cls, *, url: str, endpoint: str | None, timeout: float, environ: Mapping[str, str]
    ) -> S3Backend:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError

        parts = urlsplit(url)
        if not parts.netloc:
            raise RemoteError(f"the URL names no bucket: {url}")
        endpoint = endpoint or next(
            (environ[name] for name in S3_ENDPOINT_VARIABLES if environ.get(name)), None
        )
        config = Config(
            connect_timeout=timeout,
            read_timeout=timeout,
            # One attempt: botocore reads `max_attempts` as retries after the first.
            retries={"total_max_attempts": 1, "mode": "standard"},
            max_pool_connections=32,
        )
        # The run's environment first (eb may be given another than its own), then boto3's
        # own sources (config files, instance roles).
        try:
            session = boto3.session.Session(
                aws_access_key_id=environ.get("AWS_ACCESS_KEY_ID") or None,
                aws_secret_access_key=environ.get("AWS_SECRET_ACCESS_KEY") or None,
                aws_session_token=environ.get("AWS_SESSION_TOKEN") or None,
                region_name=environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or None,
                profile_name=environ.get("AWS_PROFILE") or None,
            )
            client = session.client("s3", endpoint_url=endpoint or None, config=config)
        except (ValueError, BotoCoreError) as exc:
            # What botocore refuses before any request: an endpoint that is no URL
            # (`minio:9000`), a region it cannot read, a profile no config file holds.
            said = _masked(text=str(exc), endpoint=endpoint)
            raise RemoteError(f"boto3 cannot set up its S3 client: {said}") from None
        return cls(
            client=client,
            bucket=parts.netloc,
            prefix=parts.path,
            url=url,
            timeout=timeout,
            endpoint=endpoint,
        )

    def _cause(self, exc: Exception) -> str:
        return _masked(text=_cause_of(exc), endpoint=self._endpoint)

    def _count_request(self, **_: Any) -> None:
        self.sent.add()  # None: botocore sends the request as it is

    def _key(self, *, kind: Kind, name: str) -> str:
        checked_name(name)
        return f"{self.prefix}/{kind}/{name}" if self.prefix else f"{kind}/{name}"

    def get_into(self, *, kind: Kind, name: str, sink: Sink) -> int | None:
        # One GET whose body is read in chunks (boto3's download_fileobj would split a large
        # object into parallel ranged requests, each held in memory).
        key = self._key(kind=kind, name=name)
        moved = 0
        deadline = time.monotonic() + self.timeout
        watchdog = None
        try:
            answer = self._client.get_object(Bucket=self.bucket, Key=key)
            body = answer["Body"]
            # boto3 bounds each read by the timeout; the body as a whole is bounded here.
            watchdog = Watchdog(seconds=deadline - time.monotonic(), stop=lambda: _cut(body))
            try:
                for chunk in body.iter_chunks(CHUNK):
                    sink.write(chunk)
                    moved += len(chunk)
            finally:
                watchdog.cancel()
                body.close()
        except SinkRefused:
            raise
        except Exception as exc:  # botocore's errors and the socket's, all alike here
            if watchdog is not None and watchdog.fired:
                raise RemoteError(f"GET {kind}/{name}: timed out") from None
            if _absent(exc):
                return None
            raise RemoteError(f"GET {kind}/{name}: {self._cause(exc)}") from None
        if watchdog is not None and watchdog.fired:
            raise RemoteError(f"GET {kind}/{name}: timed out")
        length = answer.get("ContentLength")
        if isinstance(length, int) and length != moved:
            raise RemoteError(f"GET {kind}/{name}: the body was cut short")
        return moved

    def put_from(self, *, kind: Kind, name: str, source: BinaryIO, size: int) -> None:
        # One PUT whose body botocore reads from the file in chunks (boto3's upload_fileobj
        # would buffer the parts of a multipart upload in memory, several at once).
        key = self._key(kind=kind, name=name)
        try:
            self._client.put_object(Bucket=self.bucket, Key=key, Body=source, ContentLength=size)
        except Exception as exc:
            meaning = ""
            if _refused(exc):
                # The status alone does not say which setting to fix.
                meaning = f" ({WRITE_REFUSED}, else give them s3:PutObject on the bucket)"
            raise RemoteError(f"PUT {kind}/{name}: {self._cause(exc)}{meaning}") from None

    def head(self, *, kind: Kind, name: str) -> int | None:
        key = self._key(kind=kind, name=name)
        try:
            answer = self._client.head_object(Bucket=self.bucket, Key=key)
        except Exception as exc:
            if _absent(exc):
                return None
            raise RemoteError(f"HEAD {kind}/{name}: {self._cause(exc)}") from None
        return int(answer.get("ContentLength", 0))

    def list(self, *, kind: Kind) -> Iterator[RemoteItem]:
        start = f"{self.prefix}/{kind}/" if self.prefix else f"{kind}/"
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=start
            )
            for page in pages:
                for item in page.get("Contents", []):
                    name = str(item["Key"])[len(start) :]
                    if "/" in name:
                        continue
                    yield RemoteItem(
                        name=name,
                        size=int(item.get("Size", 0)),
                        modified=item["LastModified"].timestamp(),
                    )
        except Exception as exc:
            raise RemoteError(f"LIST {kind}: {self._cause(exc)}") from None

    def delete(self, *, kind: Kind, name: str) -> bool:
        # S3 answers a DELETE alike whether the object was there or not; asking first (a HEAD)
        # cost a request per deletion and made nothing safer (the object may go or come between
        # the two), so the answer here is True: it is not there now.
        try:
            self._client.delete_object(Bucket=self.bucket, Key=self._key(kind=kind, name=name))
        except Exception as exc:
            raise RemoteError(f"DELETE {kind}/{name}: {self._cause(exc)}") from None
        return True


def _without_expect_continue(request: Any, **_: Any) -> None:
    """Send a PUT's body right behind its headers. botocore asks for `Expect: 100-continue`
    and waits up to a second for that answer before it sends the body anyway, so a hung
    endpoint cost the timeout and that second. The header is not signed: dropping it changes
    no signature. What it saved, a refused write's body unsent, is an entry or one stored file
    here, sent within the request's timeout. None: botocore sends the request as it is."""
    del request.headers["Expect"]  # no error when absent


def _cut(body: Any) -> None:
    """Shut the socket an answer's body is read from (urllib3's own way to end a read that
    another thread is blocked in); a body without one is left to boto3's read timeout."""
    raw = getattr(body, "_raw_stream", None)
    shutdown = getattr(raw, "shutdown", None)
    if callable(shutdown):
        shutdown()


def _absent(exc: Exception) -> bool:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return False
    code = str(response.get("Error", {}).get("Code", ""))
    return code in _ABSENT


def _refused(exc: Exception) -> bool:
    """Whether S3 refused the request to these credentials (AccessDenied, HTTP 403)."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return False
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status == 403 or str(response.get("Error", {}).get("Code")) == "AccessDenied"


def _cause_of(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error", {})
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return f"{error.get('Code') or 'error'} (HTTP {status})"
    return str(exc) or type(exc).__name__


def _masked(*, text: str, endpoint: str | None) -> str:
    """`text` without the secrets of `endpoint`'s URL: botocore names the endpoint in some of
    its errors (one it cannot read), which eb writes into reports and the run's history."""
    for secret in url_secrets(endpoint or ""):
        text = text.replace(secret, MASK)
    return text
