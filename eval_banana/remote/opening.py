"""The one place that picks a remote backend by its URL, and says which URLs it cannot use."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import NamedTuple
from urllib.parse import urlsplit

from eval_banana.core.errors import ConfigError
from eval_banana.core.secreturl import shown_url
from eval_banana.core.words import given_value
from eval_banana.remote.backend import RemoteBackend


def _scheme(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else ""


def _from(source: str | None) -> str:
    """Where the URL was given, as a message says it: the flag, the variable or the file."""
    return f" (from {source})" if source else ""


def _refused(*, url: str, source: str | None, told: str, hint: str) -> ConfigError:
    """The setup error of a `[cache] remote` URL: the URL (its secrets masked) and where it
    was given, then what is wrong with it."""
    return ConfigError(
        f"[cache] remote {shown_url(url)!r}{_from(source)} {told}",
        file=source,
        field_path="cache.remote",
        hint=hint,
    )


# Said of a URL that names no host, bucket or folder: most often a CI variable left empty.
_EMPTY = "; a CI variable or secret the URL is made of may be empty"


def _location_problem(*, url: str, scheme: str, source: str | None) -> ConfigError | None:
    """Why no request could ever be made with a URL of a scheme eb knows: a host part that
    cannot be split (an IPv6 address missing a bracket, characters no host name holds), an
    s3:// URL naming no bucket, a file:// URL naming no folder (it would be the current
    one), an HTTP(S) URL naming no host or a port that is no port. Told here, as a setup
    error, rather than by the backend once the run has opened the remote (its run folder
    made): a crash there, or a warning few read while the job runs without sharing (an empty
    CI variable in `s3://${BUCKET}/eb`)."""
    if scheme not in ("file", "s3", "http", "https"):
        return None  # a folder path, or a scheme refused below
    try:
        parts = urlsplit(url)
    except ValueError:
        return _refused(
            url=url,
            source=source,
            told="has a host part eb cannot read",
            hint="write the host as a name (cache.internal) or an address (10.0.0.5, "
            "[::1] with both brackets), then :port if any: http(s)://host:port/prefix",
        )
    if scheme == "s3" and not parts.netloc:
        return _refused(
            url=url,
            source=source,
            told="names no bucket",
            hint=f"write s3://bucket/prefix{_EMPTY}",
        )
    if scheme == "s3" and (":" in parts.netloc or "@" in parts.netloc):
        # No bucket name holds either: the store's address (or a key) was written where the
        # bucket goes, and every request would go to a bucket of that name.
        return _refused(
            url=url,
            source=source,
            told="names a host, port or credentials where the bucket goes",
            hint="write s3://bucket/prefix, set the store's address in [cache] remote_endpoint "
            "(https://host:port) and the keys in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
        )
    if scheme == "file" and not parts.path:
        return _refused(
            url=url,
            source=source,
            told="names no folder",
            hint=f"write file:///path/to/folder (or the path alone){_EMPTY}",
        )
    if scheme not in ("http", "https"):
        return None  # S3 takes its host from the endpoint; a file:// host is checked below
    if not parts.hostname:
        return _refused(
            url=url,
            source=source,
            told="names no host",
            hint=f"write http(s)://host/prefix (or host:port){_EMPTY}",
        )
    try:
        port = parts.port
    except ValueError:
        port = 0  # not a number, or one past 65535
    if port is not None and not 1 <= port <= 65535:
        written = parts.netloc.rpartition("@")[2].rpartition("]")[2].partition(":")[2]
        return _refused(
            url=url,
            source=source,
            told=f"names the port {written!r}: a port is a number from 1 to 65535",
            hint="write it so (http(s)://host:8080/prefix), or leave it out for the scheme's "
            "own (80, 443)",
        )
    return None


def url_problem(*, url: str, source: str | None) -> ConfigError | None:
    """Why eb cannot use a `[cache] remote` URL as written (no host, bucket or folder, a
    host or port that cannot be read, an unknown scheme, a file:// URL of another host, an
    s3:// URL without its optional package), or None. Told when the config is read, before
    anything runs: a replayed run never opens the remote, and a setup error must not come and
    go with what the cache holds."""
    scheme = _scheme(url)
    shown = shown_url(url)
    location = _location_problem(url=url, scheme=scheme, source=source)
    if location is not None:
        return location
    if scheme == "file" and urlsplit(url).netloc.lower() not in ("", "localhost"):
        return ConfigError(
            f"[cache] remote {shown!r} names another host, which a file:// URL cannot reach",
            file=source,
            field_path="cache.remote",
            hint="write a folder of this machine (file:///path or a plain path; mount a "
            "shared folder first), or use s3://bucket/prefix or http(s)://host/prefix",
        )
    if scheme == "s3" and importlib.util.find_spec("boto3") is None:
        return ConfigError(
            f"[cache] remote {shown!r} needs boto3, which is not installed",
            file=source,
            field_path="cache.remote",
            hint="install the s3 extra: pip install 'eval-banana-staged[s3]'",
        )
    if scheme not in ("", "file", "s3", "http", "https"):
        return ConfigError(
            f"[cache] remote {shown!r} has a scheme eb does not know ({scheme}://)",
            file=source,
            field_path="cache.remote",
            hint="use a folder path, file://, s3://bucket/prefix or http(s)://host/prefix",
        )
    return None


class EndpointProblem(NamedTuple):
    """Why an `[cache] remote_endpoint` is refused, said after the setting's name, and its fix."""

    reason: str
    hint: str


_ENDPOINT_HINT = (
    "write the S3 endpoint with its scheme, e.g. https://minio.internal:9000 (http:// for a "
    "store without TLS), or unset it to use AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or AWS"
)
_NO_URL = EndpointProblem(
    reason="must be an http:// or https:// URL with a host", hint=_ENDPOINT_HINT
)
# botocore's endpoint resolver takes no URL with a query: every request fails, none is sent.
_QUERY = EndpointProblem(
    reason="must have no query string (?...): boto3 sends no request to such an endpoint",
    hint="write the endpoint without its query, e.g. https://minio.internal:9000; boto3 signs "
    "each request itself with the keys in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or "
    "AWS_PROFILE), so a presigned URL's X-Amz-* parameters are not needed",
)


def endpoint_problem(*, url: str, endpoint: str | None) -> EndpointProblem | None:
    """Why the S3 client of the remote `url` could not use `endpoint`, or None: only an s3://
    remote uses an endpoint; boto3 refuses anything but an http(s) URL (`minio:9000`) with a
    traceback when the client is made, and one with a query at every request."""
    if not endpoint or _scheme(url) != "s3":
        return None
    try:
        parts = urlsplit(endpoint)
        parts.port  # noqa: B018 - a port that is no number raises here, as it would in boto3
    except ValueError:
        return _NO_URL
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return _NO_URL
    return endpoint_query_problem(url=url, endpoint=endpoint)


def endpoint_query_problem(*, url: str, endpoint: str | None) -> EndpointProblem | None:
    """The refusal of an S3 endpoint with a query (a presigned URL's `?X-Amz-...`), or None:
    what boto3 refuses at every request, never when the client is made, whichever variable
    gives the endpoint (boto3's own AWS_ENDPOINT_URL_S3 and AWS_ENDPOINT_URL too)."""
    if not endpoint or _scheme(url) != "s3":
        return None
    try:
        query = urlsplit(endpoint).query
    except ValueError:
        return None  # no URL at all: `endpoint_problem` says so where eb checks the scheme
    return _QUERY if query else None


def open_backend(
    *, url: str, endpoint: str | None, timeout: float, environ: Mapping[str, str], source: str
) -> RemoteBackend:
    """The backend a `[cache] remote` URL names. `source`: where the setting came from, for
    the error of a URL eb cannot use (`url_problem`)."""
    problem = url_problem(url=url, source=source)
    if problem is not None:
        raise problem
    # The config stage refuses such an endpoint where it was set; an operation on a cache that
    # is off (`eb cache push`) gets here without it.
    problem_of_endpoint = endpoint_problem(url=url, endpoint=endpoint)
    if problem_of_endpoint is not None:
        shown = given_value(shown_url(endpoint or ""))
        raise ConfigError(
            f"[cache] remote_endpoint {problem_of_endpoint.reason}, got {shown}",
            file=source,
            field_path="cache.remote_endpoint",
            hint=problem_of_endpoint.hint,
        )
    scheme = _scheme(url)
    if scheme == "s3":
        from eval_banana.remote.s3 import S3Backend

        return S3Backend.from_url(url=url, endpoint=endpoint, timeout=timeout, environ=environ)
    if scheme in ("http", "https"):
        from eval_banana.remote.http import HttpBackend

        return HttpBackend.from_url(url=url, timeout=timeout, environ=environ)
    from eval_banana.remote.folder import FolderBackend

    return FolderBackend.from_url(url=url)
