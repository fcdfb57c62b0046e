"""The one place that picks a remote backend by its URL."""

from __future__ import annotations

from collections.abc import Mapping

from eval_banana.core.errors import ConfigError
from eval_banana.core.secreturl import shown_url
from eval_banana.remote.backend import RemoteBackend


def open_backend(
    *, url: str, endpoint: str | None, timeout: float, environ: Mapping[str, str], source: str
) -> RemoteBackend:
    """The backend a `[cache] remote` URL names. `source`: where the setting came from, for
    the error of a URL eb cannot use (an unknown scheme, a missing optional package)."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in ("", "file"):
        from eval_banana.remote.folder import FolderBackend

        return FolderBackend.from_url(url=url)
    if scheme == "s3":
        try:
            import boto3  # noqa: F401
        except ImportError:
            raise ConfigError(
                f"[cache] remote {shown_url(url)!r} needs boto3, which is not installed",
                file=source,
                field_path="cache.remote",
                hint="install the s3 extra: pip install 'eval-banana-staged[s3]'",
            ) from None
        from eval_banana.remote.s3 import S3Backend

        return S3Backend.from_url(url=url, endpoint=endpoint, timeout=timeout, environ=environ)
    if scheme in ("http", "https"):
        from eval_banana.remote.http import HttpBackend

        return HttpBackend.from_url(url=url, timeout=timeout, environ=environ)
    raise ConfigError(
        f"[cache] remote {shown_url(url)!r} has a scheme eb does not know ({scheme}://)",
        file=source,
        field_path="cache.remote",
        hint="use a folder path, file://, s3://bucket/prefix or http(s)://host/prefix",
    )
