"""The variables the config sets for an agent, as the verdict cache key and the calibration key
count them: each layer as written, placeholders by their text, never a value read from eb's
environment."""

from __future__ import annotations

import hashlib
import json

from eval_banana.models.config import AgentTemplate, Settings

# A digest of the variables alone, apart from every other SHA-256 eb takes of a text.
_DIGEST_PREFIX = b"eval-banana/agent-variables/v1\0"


def agent_variables(*, template: AgentTemplate, settings: Settings) -> str:
    """The variables the config sets for the agent, as written, one layer each (a later layer
    overrides an earlier one, so the same name in another layer is another environment).

    `fixed_env` and `[harness.env]` are set verbatim: their values decide what the agent does
    (a `JUDGE_MODE = "strict"`), so they count. `provider_env` counts by its text: a
    `{env:NAME}` placeholder is the reference, never the value it reads from eb's environment
    (a rotated token reuses every verdict, and no secret goes into a key). `model_env_vars`
    receive the model, which counts on its own.
    """
    layers = {
        "provider_env": template.provider_env,
        "fixed_env": template.fixed_env,
        "harness_env": settings.harness.env,
        "model_env_vars": sorted(name for name in template.model_env_vars if name.strip()),
    }
    return json.dumps(layers, sort_keys=True, ensure_ascii=False, allow_nan=False)


def agent_variables_digest(*, template: AgentTemplate, settings: Settings) -> str:
    """`sha256:<hex>` of `agent_variables`: what a file that is committed and shared (the
    calibration record) holds of them, since `[harness.env]` may hold a key written out."""
    digest = hashlib.sha256(_DIGEST_PREFIX)
    digest.update(
        agent_variables(template=template, settings=settings).encode("utf-8", "surrogateescape")
    )
    return f"sha256:{digest.hexdigest()}"
