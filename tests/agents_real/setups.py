"""How a user points each real agent CLI at a model server of their own (here: ours).

Each setup is what docs/agents.md tells a user to write: variables under `[harness.env]` and the
agent's own config file in its home folder. `{url}` stands for the model server's address.
Every setup also turns the agent's retries off (or down), as a CI job that wants a dead model
server to fail fast would, and keeps the agent off the network beyond the model server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

API_KEY_VARIABLE = "TEST_MODEL_API_KEY"
API_KEY = "sk-test-not-a-secret"
# A model a gateway would list; the ones named here are "served" by the model server.
SERVED_MODELS = ["test-model", "think-model", "grok-4.5", "grok-test"]


@dataclass(frozen=True)
class Setup:
    agent: str
    env: dict[str, str]  # [harness.env], `{url}` replaced by the server's address
    home_files: dict[str, str] = field(default_factory=dict)  # path under $HOME -> text
    model: str | None = None  # [harness] model for the main run (None: the template's)
    sent_model: str | None = None  # what the model server should then receive as `model`
    override_model: str = "test-model"  # --harness-model for the override run
    override_sent_model: str = "test-model"
    effort: str | None = "high"  # --harness-reasoning-effort for the override run
    # Where the server finds the effort in the request body (None: the agent sends none).
    effort_field: tuple[str, ...] | None = None
    reports_usage: bool = False  # the agent's output carries token usage
    reports_cost: bool = False
    # A model the agent silently drops the effort for (opencode, pi, grok), if any.
    dropping_model: str | None = None
    # Whether the CLI names an unknown flag on a non-terminal stderr (opencode only prints its
    # usage text then).
    names_bad_flag: bool = True
    # Models the agent also asks on its own for side work (session titles), whatever it is told.
    side_models: tuple[str, ...] = ()
    # Words the agent's own report of an HTTP 500 / 401 from the model contains.
    http500_words: tuple[str, ...] = ("500", "exploded")
    http401_words: tuple[str, ...] = ("401", "bad key")


def _json(value: object) -> str:
    return json.dumps(value, indent=2) + "\n"


CLAUDE = Setup(
    agent="claude",
    env={
        "ANTHROPIC_BASE_URL": "{url}",
        "ANTHROPIC_API_KEY": API_KEY,
        "CLAUDE_CODE_MAX_RETRIES": "0",
    },
    model="test-model",
    sent_model="test-model",
    effort_field=("output_config", "effort"),
    reports_usage=True,
    reports_cost=True,
)

CODEX = Setup(
    agent="codex",
    env={API_KEY_VARIABLE: API_KEY},
    home_files={
        ".codex/config.toml": (
            'model_provider = "modelserver"\n\n'
            "[model_providers.modelserver]\n"
            'name = "Model server"\n'
            'base_url = "{url}/v1"\n'
            f'env_key = "{API_KEY_VARIABLE}"\n'
            'wire_api = "responses"\n'
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n"
        )
    },
    sent_model="gpt-5.6-sol",  # the template's default
    effort_field=("reasoning", "effort"),
    reports_usage=True,
    # codex words every 5xx its own way and drops the server's message.
    http500_words=("high demand",),
)

GEMINI = Setup(
    agent="gemini",
    env={"GOOGLE_GEMINI_BASE_URL": "{url}", "GEMINI_API_KEY": API_KEY},
    home_files={
        # Behind a gateway gemini picks an auth type its own validator rejects unless the
        # settings select the API key; one attempt, so a failing server fails fast.
        ".gemini/settings.json": _json(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "general": {"maxAttempts": 1},
            }
        )
    },
    model="test-model",
    sent_model="test-model",
    effort=None,  # gemini takes no effort
    reports_usage=True,
)

GROK = Setup(
    agent="grok",
    env={"XAI_API_KEY": API_KEY, "GROK_XAI_API_BASE_URL": "{url}/v1"},
    home_files={
        ".grok/config.toml": (
            "[models]\nmax_retries = 0\n\n"
            "[model.think]\n"
            'model = "think-model"\n'
            'base_url = "{url}/v1"\n'
            'env_key = "XAI_API_KEY"\n'
            "supports_reasoning_effort = true\n"
            'reasoning_efforts = ["low", "medium", "high"]\n'
        )
    },
    sent_model="grok-4.5",  # the template's default, listed by the server
    override_model="think",
    override_sent_model="think-model",
    effort_field=("reasoning_effort",),
    dropping_model="test-model",
    side_models=("grok-4.5",),  # its session-title request keeps the default model
)

OPENCODE = Setup(
    agent="opencode",
    env={
        API_KEY_VARIABLE: API_KEY,
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
    },
    home_files={
        ".config/opencode/opencode.json": _json(
            {
                "$schema": "https://opencode.ai/config.json",
                "provider": {
                    "modelserver": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Model server",
                        "options": {
                            "baseURL": "{url}/v1",
                            "apiKey": "{env:" + API_KEY_VARIABLE + "}",
                            "maxRetries": 0,
                        },
                        "models": {
                            "test-model": {"name": "Test model"},
                            "think-model": {
                                "name": "Thinking model",
                                "reasoning": True,
                                "variants": {"high": {"reasoningEffort": "high"}},
                            },
                        },
                    }
                },
            }
        )
    },
    model="modelserver/test-model",
    sent_model="test-model",
    override_model="modelserver/think-model",
    override_sent_model="think-model",
    effort_field=("reasoning_effort",),
    dropping_model="modelserver/test-model",
    names_bad_flag=False,
)

PI = Setup(
    agent="pi",
    env={API_KEY_VARIABLE: API_KEY},
    home_files={
        ".pi/agent/models.json": _json(
            {
                "providers": {
                    "modelserver": {
                        "baseUrl": "{url}/v1",
                        "api": "openai-completions",
                        "apiKey": API_KEY_VARIABLE,
                        "models": [{"id": "test-model"}, {"id": "think-model", "reasoning": True}],
                    }
                }
            }
        )
    },
    model="modelserver/test-model",
    sent_model="test-model",
    override_model="modelserver/think-model",
    override_sent_model="think-model",
    effort_field=("reasoning_effort",),
    dropping_model="modelserver/test-model",
)

OPENHANDS = Setup(
    agent="openhands",
    env={
        "LLM_API_KEY": API_KEY,
        "LLM_BASE_URL": "{url}/v1",
        # OpenHands clones its public skills from GitHub at every start; an offline CI job
        # points that URL nowhere instead of waiting for the network.
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "url./nonexistent/.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://github.com/",
        # LiteLLM fetches a model price list from GitHub unless told to use its own copy.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    },
    home_files={
        # OpenHands' saved agent settings, here only to turn LiteLLM's retries off (the
        # variables above still choose the key, address and model).
        ".openhands/agent_settings.json": _json(
            {"llm": {"model": "openai/test-model", "num_retries": 0}}
        )
    },
    model="openai/test-model",  # LiteLLM's provider/model; LLM_MODEL is required
    sent_model="test-model",
    override_model="openai/think-model",
    override_sent_model="think-model",
    effort=None,  # openhands takes no effort
)

SETUPS: dict[str, Setup] = {
    setup.agent: setup for setup in (CLAUDE, CODEX, GEMINI, GROK, OPENCODE, PI, OPENHANDS)
}
