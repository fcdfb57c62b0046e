"""The environment children start from: inherited whole, or an allowlist."""

from __future__ import annotations

import os
from collections.abc import Mapping

from eval_banana.models.config import ExecutionSettings

# What any program needs to run and reach the network: paths, locale, temp, proxy and TLS.
BASE_NAMES: frozenset[str] = frozenset(
    {
        "PATH",
        "HOME",
        "LANG",
        "LANGUAGE",
        "TMPDIR",
        "TMP",
        "TEMP",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "all_proxy",
        "ftp_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "ALL_PROXY",
        "FTP_PROXY",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
    }
)
BASE_PREFIXES: tuple[str, ...] = ("LC_",)
# The shared cache's credentials are eb's alone: no check or judge receives them (a judge
# holding the signing key could sign a verdict of its choosing), and they are masked wherever
# they would appear (runners/redact.py).
SECRET_NAMES: frozenset[str] = frozenset(
    {"EVAL_BANANA_CACHE_TOKEN", "EVAL_BANANA_CACHE_SIGNING_KEY"}
)
# Nor the shared cache's URL, which may hold a password (`https://user:password@host/...`): a
# judge holding it could write the shared cache. Only its password and query are secrets
# (core.secreturl.url_secrets), so eb's messages still name the remote.
WITHHELD_NAMES: frozenset[str] = SECRET_NAMES | {"EVAL_BANANA_CACHE_REMOTE"}


def allowed(*, name: str, settings: ExecutionSettings) -> bool:
    """Whether the allowlist policy lets the variable `name` through (names are exact)."""
    if name in WITHHELD_NAMES:
        return False
    if name in BASE_NAMES or name in settings.env_allow:
        return True
    prefixes = BASE_PREFIXES + tuple(settings.env_allow_prefixes)
    return any(prefix and name.startswith(prefix) for prefix in prefixes)


def inherited_env(*, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """eb's environment but the names no child receives: what the `inherit` policy passes on,
    and what `provider_env`'s `{env:NAME}` placeholders read under either policy."""
    source = os.environ if environ is None else environ
    return {name: value for name, value in source.items() if name not in WITHHELD_NAMES}


def build_base_env(
    *, settings: ExecutionSettings, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for checks and judges under the configured policy."""
    source = os.environ if environ is None else environ
    if settings.env == "inherit":
        return inherited_env(environ=source)
    return {name: value for name, value in source.items() if allowed(name=name, settings=settings)}
