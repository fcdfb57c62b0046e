"""Built-in agent templates and the `[agents.<name>]` rules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eval_banana.core.errors import ConfigError
from eval_banana.models.config import AgentTemplate

# How each dialect's stdout carries the verdict (see eval_banana/harness/verdict.py).
OUTPUT_DIALECTS: tuple[str, ...] = ("text", "claude", "gemini", "codex", "openhands")

BUILTIN_TEMPLATES: dict[str, AgentTemplate] = {
    "codex": AgentTemplate(
        command=["codex", "exec"],
        shared_flags=[
            "--dangerously-bypass-approvals-and-sandbox",
            "--skip-git-repo-check",
            # The verdict's JSON Schema, sent as the Responses API's strict `text.format`.
            "--output-schema",
            "{verdict_schema_path}",
        ],
        model_flag="--model",
        default_model="gpt-5.6-sol",
        reasoning_effort="high",
        reasoning_effort_flag=["-c", "model_reasoning_effort={effort}"],
        output_dialect="codex",  # stdout holds only the final message
    ),
    "gemini": AgentTemplate(
        command=["gemini"],
        shared_flags=["--approval-mode", "yolo", "--output-format", "stream-json"],
        prompt_flag="-p",
        model_flag="--model",
        # Headless gemini refuses an untrusted folder (exit 55) without this.
        fixed_env={"GEMINI_CLI_TRUST_WORKSPACE": "true"},
        output_dialect="gemini",
    ),
    "claude": AgentTemplate(
        command=["claude"],
        shared_flags=[
            "-p",
            "--dangerously-skip-permissions",
            "--output-format",
            "stream-json",
            "--verbose",
            # The verdict's JSON Schema: Claude Code offers the model a `StructuredOutput`
            # tool of that schema and puts its input in the result event's structured_output.
            "--json-schema",
            "{verdict_schema}",
        ],
        model_flag="--model",
        model_env_vars=[
            "ANTHROPIC_MODEL",
            "ANTHROPIC_DEFAULT_SONNET_MODEL",
            "ANTHROPIC_DEFAULT_OPUS_MODEL",
        ],
        reasoning_effort_flag=["--effort", "{effort}"],
        # Claude Code refuses --dangerously-skip-permissions as root (the usual CI container)
        # unless this says it runs in a sandbox; for other users it changes nothing we rely on.
        fixed_env={"IS_SANDBOX": "1"},
        output_dialect="claude",
    ),
    "grok": AgentTemplate(
        command=["grok"],
        shared_flags=["--always-approve", "--no-auto-update"],
        prompt_flag="-p",
        model_flag="--model",
        default_model="grok-4.5",
        reasoning_effort="high",
        reasoning_effort_flag=["--reasoning-effort", "{effort}"],
        output_dialect="text",
    ),
    "openhands": AgentTemplate(
        command=["openhands"],
        shared_flags=["--headless", "--json", "--override-with-envs"],
        prompt_flag="-t",
        model_flag=None,
        model_env_vars=["LLM_MODEL"],
        output_dialect="openhands",  # verdict from the finish action's message
    ),
    "opencode": AgentTemplate(
        # Bare `opencode P` opens the interactive UI with P as a folder.
        command=["opencode", "run"],
        # Parallel judges would share one SQLite file and fail with "database is locked"; a
        # judge's session is never reused, so each run keeps its own in memory.
        fixed_env={"OPENCODE_DB": ":memory:"},
        model_flag="--model",
        reasoning_effort_flag=["--variant", "{effort}"],
        output_dialect="text",
    ),
    "pi": AgentTemplate(
        command=["pi", "--print", "--no-session"],
        model_flag="--model",  # eval-banana's pi template had none
        reasoning_effort_flag=["--thinking", "{effort}"],
        output_dialect="text",
    ),
}

_LIST_FIELDS: tuple[str, ...] = (
    "command",
    "shared_flags",
    "model_env_vars",
    "reasoning_effort_flag",
)
_STRING_FIELDS: tuple[str, ...] = ("prompt_flag", "model_flag", "default_model", "reasoning_effort")
_TABLE_FIELDS: tuple[str, ...] = ("provider_env", "fixed_env")
# eval-banana's ten fields, plus two of ours that the config schema also lists: `fixed_env`
# (variables set verbatim after provider_env) and `output_dialect` (which verdict parser).
ALLOWED_KEYS: frozenset[str] = frozenset(
    (*_LIST_FIELDS, *_STRING_FIELDS, "prompt_position", *_TABLE_FIELDS, "output_dialect")
)


def _fail(*, message: str, config_path: str, field_path: str, hint: str | None) -> ConfigError:
    return ConfigError(message, file=config_path, field_path=field_path, hint=hint)


def _is_str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _unknown_keys_hint(*, unknown: list[str]) -> str:
    """`comand: did you mean command?` for each near miss, then the allowed keys."""
    from eval_banana.core.suggest import closest

    hints = []
    for key in unknown:
        close = closest(key, sorted(ALLOWED_KEYS))
        if close:
            hints.append(f"{key}: did you mean {close}?")
    allowed = f"allowed keys: {', '.join(sorted(ALLOWED_KEYS))}"
    return "; ".join([*hints, allowed])


def _validate_table(*, name: str, table: Mapping[str, Any], config_path: str) -> None:
    """Apply eval-banana's `[agents.<name>]` checks and our empty-command refusal, in order."""
    where = f"agents.{name}"
    unknown = sorted(key for key in table if key not in ALLOWED_KEYS)
    if unknown:
        raise _fail(
            message=f"[agents.{name}] contains unknown keys: {', '.join(unknown)}",
            config_path=config_path,
            field_path=f"{where}.{unknown[0]}",
            hint=_unknown_keys_hint(unknown=unknown),
        )
    for field in _LIST_FIELDS:
        if field in table and not _is_str_list(table[field]):
            raise _fail(
                message=f"[agents.{name}] {field} must be a list of strings",
                config_path=config_path,
                field_path=f"{where}.{field}",
                hint=f'write e.g. {field} = ["a", "b"]',
            )
    if "prompt_position" in table:
        position = table["prompt_position"]
        if not isinstance(position, str):
            raise _fail(
                message=f"[agents.{name}] prompt_position must be a string",
                config_path=config_path,
                field_path=f"{where}.prompt_position",
                hint='use "tail" or "after_command"',
            )
        if position not in ("tail", "after_command"):
            raise _fail(
                message=f"[agents.{name}] prompt_position must be 'tail' or 'after_command'",
                config_path=config_path,
                field_path=f"{where}.prompt_position",
                hint=None,
            )
    for field in _STRING_FIELDS:
        if field in table and not isinstance(table[field], str):
            raise _fail(
                message=f"[agents.{name}] Expected a string value",
                config_path=config_path,
                field_path=f"{where}.{field}",
                hint=f'{field} takes a string; write "" to clear it',
            )
    for field in _TABLE_FIELDS:
        env = table.get(field, {})
        if not isinstance(env, dict) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in env.items()
        ):
            raise _fail(
                message=f"[agents.{name}.{field}] must be a TOML table of strings",
                config_path=config_path,
                field_path=f"{where}.{field}",
                hint=f'write e.g. {field} = {{ API_KEY = "..." }}',
            )
    if "output_dialect" in table and table["output_dialect"] not in OUTPUT_DIALECTS:
        raise _fail(
            message=f"[agents.{name}] output_dialect must be one of: {', '.join(OUTPUT_DIALECTS)}",
            config_path=config_path,
            field_path=f"{where}.output_dialect",
            hint=None,
        )
    if name not in BUILTIN_TEMPLATES and "command" not in table:
        raise _fail(
            message=f"[agents.{name}] command is required for custom agents",
            config_path=config_path,
            field_path=f"{where}.command",
            hint='write e.g. command = ["my-agent", "--print"]',
        )
    if "command" in table and not table["command"]:
        raise _fail(
            message=f"[agents.{name}] command must not be empty",
            config_path=config_path,
            field_path=f"{where}.command",
            hint='name the executable first, e.g. command = ["my-agent"]',
        )


def merge_table(*, name: str, table: Mapping[str, Any]) -> AgentTemplate:
    """Start from the built-in (or blank) template and replace only the keys written."""
    base = BUILTIN_TEMPLATES.get(name) or AgentTemplate()
    update: dict[str, Any] = {}
    for key, value in table.items():
        if key in _STRING_FIELDS:
            update[key] = value if value != "" else None  # "" clears to none
        elif key in _TABLE_FIELDS:
            update[key] = dict(value)
        elif key in _LIST_FIELDS:
            update[key] = list(value)
        else:
            update[key] = value
    return AgentTemplate.model_validate({**base.model_dump(), **update})


def parse_agent_tables(*, raw: object, config_path: str) -> dict[str, AgentTemplate]:
    """Validate the raw `[agents]` TOML value and return each table merged."""
    if not isinstance(raw, dict):
        raise _fail(
            message="[agents] must be a TOML table",
            config_path=config_path,
            field_path="agents",
            hint="write one [agents.<name>] table per agent",
        )
    merged: dict[str, AgentTemplate] = {}
    for name, table in raw.items():
        if not isinstance(table, dict):
            raise _fail(
                message="[agents] entries must be TOML tables",
                config_path=config_path,
                field_path=f"agents.{name}",
                hint=f"write the settings under an [agents.{name}] header",
            )
        _validate_table(name=str(name), table=table, config_path=config_path)
        merged[str(name)] = merge_table(name=str(name), table=table)
    return merged


def resolve_template(*, name: str, custom: Mapping[str, AgentTemplate]) -> AgentTemplate:
    """The `[agents.<name>]` table first, then the built-ins, else a ConfigError."""
    if name in custom:
        return custom[name].model_copy(deep=True)
    if name in BUILTIN_TEMPLATES:
        return BUILTIN_TEMPLATES[name].model_copy(deep=True)
    raise ConfigError(
        f"Unknown harness agent: {name}",
        field_path="harness.agent",
        hint=_unknown_agent_hint(name=name, custom=custom),
    )


def _unknown_agent_hint(*, name: str, custom: Mapping[str, AgentTemplate]) -> str:
    """The agent meant, when one is spelled close, then every name that would do."""
    from eval_banana.core.suggest import closest

    # The project's own tables first: `mien` for the `[agents.mine]` it defines.
    meant = closest(name, [*custom, *BUILTIN_TEMPLATES])
    guess = ""
    if meant is not None:
        table = f" ([agents.{meant}])" if meant in custom else ""
        guess = f"did you mean '{meant}'{table}? Otherwise "
    defined = f"an [agents.*] table's name ({', '.join(sorted(custom))}), " if custom else ""
    return (
        f"{guess}use {defined}a built-in agent ({', '.join(sorted(BUILTIN_TEMPLATES))}) or "
        f"define it in an [agents.{name}] table"
    )
