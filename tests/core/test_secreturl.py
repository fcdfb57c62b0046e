"""shown_url: a shared cache's URL as eb writes it, with its secrets masked."""

from __future__ import annotations

import pytest

from eval_banana.core.secreturl import shown_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("/mnt/cache", "/mnt/cache"),
        ("file:///mnt/cache", "file:///mnt/cache"),
        ("s3://bucket/prefix", "s3://bucket/prefix"),
        ("https://cache.example/ci", "https://cache.example/ci"),
        ("https://ci:s3cr3t@cache.example:8443/ci", "https://ci:***@cache.example:8443/ci"),
        ("https://ci@cache.example/ci", "https://ci@cache.example/ci"),  # no password
        ("https://cache.example/ci?X-Sig=abc&t=1", "https://cache.example/ci?***"),
        ("http://u:p%40ss@[::1]:9/c?q=1", "http://u:***@[::1]:9/c?***"),
        ("http://u:p@host:notaport/c", "http://u:***@host:notaport/c"),
        ("http://u:p@[::1/c", "http://***@[::1/c"),  # a broken host: the whole user part
    ],
)
def test_the_password_and_the_query_are_masked(url: str, shown: str) -> None:
    assert shown_url(url) == shown


def test_an_unusable_remote_url_is_refused_without_its_password() -> None:
    from eval_banana.core.errors import ConfigError
    from eval_banana.remote.opening import open_backend

    with pytest.raises(ConfigError) as refused:
        open_backend(
            url="ftp://ci:s3cr3t@cache.example/eb",
            endpoint=None,
            timeout=1.0,
            environ={},
            source="config.toml",
        )
    assert "ftp://ci:***@cache.example/eb" in refused.value.message
    assert "s3cr3t" not in str(refused.value)
