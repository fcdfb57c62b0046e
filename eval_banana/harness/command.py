"""The agent's argv and environment, and the check that the prompt fits in one argument."""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from eval_banana.core.log import Logger
from eval_banana.harness.structured import fill_schema, unfill_schema
from eval_banana.models.config import AgentTemplate

LOG = Logger("eval_banana.runners.harness_judge")

# Linux's MAX_ARG_STRLEN: one argv element, terminating NUL included, may not exceed 32 pages.
ARG_STRLEN_LIMIT = 32 * 4096
PROMPT_PLACEHOLDER = "{prompt}"

_PLACEHOLDER = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
_warned_missing: set[str] = set()
_warned_lock = threading.Lock()


def _prompt_args(*, template: AgentTemplate, prompt: str) -> list[str]:
    if template.prompt_flag:
        return [template.prompt_flag, prompt]
    return [prompt]


def build_argv(
    *,
    template: AgentTemplate,
    prompt: str,
    model: str | None,
    effort: str | None,
    schema_path: Path | None = None,
) -> list[str]:
    """eval-banana's order: command, [prompt], shared flags, model flag, effort tokens, [prompt].

    With `schema_path`, the verdict schema's placeholders in the command and the shared flags
    are filled (eval_banana.harness.structured); without, they stay as written.
    """
    argv = [fill_schema(token=token, path=schema_path) for token in template.command]
    if template.prompt_position == "after_command":
        argv += _prompt_args(template=template, prompt=prompt)
    argv += [fill_schema(token=token, path=schema_path) for token in template.shared_flags]
    if model and template.model_flag:
        argv += [template.model_flag, model]
    if effort:
        argv += [token.replace("{effort}", effort) for token in template.reasoning_effort_flag]
    if template.prompt_position == "tail":
        argv += _prompt_args(template=template, prompt=prompt)
    return argv


def display_argv(*, argv: list[str], prompt: str, schema_path: Path | None = None) -> list[str]:
    """The argv as recorded in results: the prompt element replaced by `{prompt}`, the verdict
    schema's path and text by their placeholders (the same record in every run folder)."""
    return [
        PROMPT_PLACEHOLDER if token == prompt else unfill_schema(token=token, path=schema_path)
        for token in argv
    ]


def _expand(*, value: str, environ: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in environ:
            return environ[name]
        with _warned_lock:
            first = name not in _warned_missing
            _warned_missing.add(name)
        if first:
            LOG.warning(
                "Harness provider env placeholder referenced missing environment variable %s",
                name,
            )
        return ""

    return _PLACEHOLDER.sub(replace, value)


def placeholder_reads(*, template: AgentTemplate, environ: Mapping[str, str]) -> list[str]:
    """The values `provider_env`'s `{env:NAME}` placeholders read from `environ` (set names only):
    what eb hands the agent from its environment, which it must never write."""
    return [
        environ[name]
        for value in template.provider_env.values()
        for name in _PLACEHOLDER.findall(value)
        if name in environ
    ]


def provider_values(*, template: AgentTemplate, environ: Mapping[str, str]) -> dict[str, str]:
    """`provider_env` as the agent receives it from `environ`, placeholders filled (unset: empty,
    without the warning `build_env` gives)."""
    return {
        key: _PLACEHOLDER.sub(lambda match: environ.get(match.group(1), ""), value)
        for key, value in template.provider_env.items()
    }


def build_env(
    *,
    template: AgentTemplate,
    base_env: Mapping[str, str],
    placeholder_env: Mapping[str, str],
    harness_env: Mapping[str, str],
    model: str | None,
    project_root: Path,
    agent: str,
) -> dict[str, str]:
    """eval-banana's layering; `fixed_env` (ours) sits right after the template's provider_env.

    `base_env` is what the env policy lets through; `provider_env`'s `{env:NAME}` placeholders
    read `placeholder_env` (eb's own environment, eval_banana.settings.envpolicy.inherited_env),
    so an allowlist keeps NAME itself from the agent, not the value it was configured to get."""
    env = dict(base_env)
    env["CI"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    for key, value in template.provider_env.items():
        env[key] = _expand(value=value, environ=placeholder_env)
    env.update(template.fixed_env)
    env.update(harness_env)  # verbatim: no placeholder expansion
    if model:
        for name in template.model_env_vars:
            if name.strip():
                env[name] = model
    env["EVAL_BANANA_PROJECT_ROOT"] = str(project_root)
    env["EVAL_BANANA_HARNESS_AGENT"] = agent
    return env


def prompt_argument_problem(*, prompt: str) -> str | None:
    """Why the prompt cannot travel as one argument of the agent's command line (too long, or
    holding a NUL character, which ends a C string), or None."""
    if "\0" in prompt:
        # A row's field placed in the instructions can hold one (JSON's "\u0000").
        return (
            "Harness judge prompt holds a NUL character (U+0000), which no command line can "
            "carry: remove it from the instructions or the case's field they place"
        )
    size = len(prompt.encode("utf-8"))
    if sys.platform.startswith("linux") and size + 1 > ARG_STRLEN_LIMIT:
        return (
            f"Harness judge prompt is {size} bytes, above the per-argument limit of the "
            "operating system"
        )
    return None
