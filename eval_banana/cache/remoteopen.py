"""The shared tier a run opens from its settings and environment, or the warning that says why
it opens none (docs/shared-cache.md). Imported only when a shared cache is set."""

from __future__ import annotations

from collections.abc import Mapping

from eval_banana.cache.remotenotes import Warn, hint_of
from eval_banana.cache.remotetier import RemoteTier
from eval_banana.cache.store import CacheStore
from eval_banana.core.secreturl import shown_url, unmasked
from eval_banana.models.config import CacheSettings
from eval_banana.remote.backend import RemoteError
from eval_banana.remote.guarded import GuardedRemote
from eval_banana.remote.opening import open_backend
from eval_banana.remote.signing import SIGNING_KEY_VARIABLE, keyless_but_required
from eval_banana.settings.table import SETTINGS_BY_NAME, variable_of

_REMOTE_VARIABLE = variable_of("cache.remote")
_REMOTE_FLAG = SETTINGS_BY_NAME["cache.remote"].flag
_ENDPOINT_VARIABLE = variable_of("cache.remote_endpoint")


def open_tier(
    *,
    settings: CacheSettings,
    store: CacheStore,
    reads: bool,
    local_writes: bool,
    environ: Mapping[str, str],
    source: str,
    warn: Warn,
) -> RemoteTier | None:
    """The run's remote tier, or None when none is set or `remote_mode` is off. `reads`:
    the run looks verdicts up; `local_writes`: it stores its own."""
    if not settings.remote or settings.remote_mode == "off":
        return None
    would_write = local_writes and settings.remote_mode == "read-write"
    hint = hint_of(lookups=reads, uploads=would_write)
    url = unmasked(url=settings.remote, candidates=[environ.get(_REMOTE_VARIABLE)])
    if url is None:
        # A stage rerun (`eb update`) from a config.json, which never holds the password.
        from eval_banana.remote.http import TOKEN_VARIABLE

        warn(
            f"The shared cache {settings.remote} is not asked: stages/config.json records "
            f"its URL with the password masked. Set {_REMOTE_VARIABLE} to the URL with its "
            f"password (`eb update` also takes it as {_REMOTE_FLAG}), or use "
            f"{TOKEN_VARIABLE}, which is never written, to use it",
            None,
            hint,
        )
        return None
    # Only an s3:// remote reads the endpoint (a folder or HTTP one never does).
    endpoint = settings.remote_endpoint if url.lower().startswith("s3://") else None
    if endpoint:
        endpoint = unmasked(url=endpoint, candidates=[environ.get(_ENDPOINT_VARIABLE)])
        if endpoint is None:
            # The same rerun, of an S3 remote whose endpoint config.json holds masked (a
            # password: boto3 sends nothing to an endpoint with a query).
            warn(
                f"The shared cache {shown_url(url)} is not asked: stages/config.json records "
                f"its [cache] remote_endpoint with its password or query masked. Set "
                f"{_ENDPOINT_VARIABLE} to the endpoint as given to use it",
                None,
                hint,
            )
            return None
    key_text = environ.get(SIGNING_KEY_VARIABLE, "")
    try:
        backend = open_backend(
            url=url,
            endpoint=endpoint,
            timeout=float(settings.remote_timeout_seconds),
            environ=environ,
            source=source,
        )
    except RemoteError as exc:
        warn(f"The shared cache {shown_url(settings.remote)} cannot be used: {exc}", None, hint)
        return None
    # Required signatures and no key: nothing this run would write could ever be reused,
    # and its unsigned entries would take the place of signed ones (every runner with the
    # key would then miss them, and run those checks again).
    unsigned_only = keyless_but_required(require_signature=settings.require_signature, key=key_text)
    if unsigned_only and (reads or would_write):
        warn(
            f"[cache] require_signature is on but {SIGNING_KEY_VARIABLE} is not set: no "
            f"entry of the shared cache {backend.url} is reused or written in this run",
            None,
            hint,
        )
    return RemoteTier(
        remote=GuardedRemote(backend=backend, concurrency=settings.remote_concurrency),
        store=store,
        writes=would_write and not unsigned_only,
        signing_key=key_text.encode("utf-8") if key_text else None,
        require_signature=settings.require_signature,
        warn=warn,
    )
