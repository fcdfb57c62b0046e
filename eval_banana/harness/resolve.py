"""Effective harness values: which agent, model, effort and timeout a judge uses."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from eval_banana.core.words import visible
from eval_banana.harness.templates import resolve_template
from eval_banana.models.config import AgentTemplate, Settings
from eval_banana.models.stages import ResolvedHarness


def _blank_to_none(value: object) -> str | None:
    """A missing, non-string or whitespace-only value means "not set"."""
    if isinstance(value, str) and value.strip():
        return value
    return None


def _is_path(command: str) -> bool:
    """A command with a folder in it names a file; a bare name is looked up on PATH."""
    return bool(os.path.dirname(command))


def _find_executable(*, command: str, project_root: Path) -> str | None:
    """Where the agent's command is: a bare name on PATH; a relative path from the project
    root, where the agent runs (or its copy, which holds the same path), wherever eb was
    started from. Always an absolute path: a relative PATH entry (`nm/.bin`) is found from the
    process's working directory, and guard.json's path must name the same file to an `eb
    status` run from another folder."""
    if _is_path(command) and not os.path.isabs(command):
        found = shutil.which(str(project_root / command))
    else:
        found = shutil.which(command)
    return os.path.abspath(found) if found is not None else None


def executable_now(*, harness: ResolvedHarness, project_root: Path) -> str | None:
    """Where the agent's command of `harness` is found now (its `executable` is where it was
    found when the harness was resolved): PATH, or the file, may lead elsewhere since."""
    command = harness.template.command
    return _find_executable(command=command[0], project_root=project_root) if command else None


def resolve_harness(*, settings: Settings, project_root: Path) -> ResolvedHarness | None:
    """The configured agent with its template and effective values; None when no agent is set.

    Raises ConfigError `Unknown harness agent: <name>` for a name with no template.
    The per-check `model` is applied later by `effective_model`.
    """
    agent = _blank_to_none(settings.harness.agent)
    if agent is None:
        return None
    template = resolve_template(name=agent, custom=settings.agents)
    model = _blank_to_none(settings.harness.model) or template.default_model
    effort = _blank_to_none(settings.harness.reasoning_effort) or template.reasoning_effort
    executable = (
        _find_executable(command=template.command[0], project_root=project_root)
        if template.command
        else None
    )
    return ResolvedHarness(
        agent=agent,
        template=template,
        model=model,
        reasoning_effort=effort,
        timeout_seconds=settings.harness.timeout_seconds,
        executable=executable,
    )


def effective_model(*, harness: ResolvedHarness, check_model: object) -> str | None:
    """A non-empty check `model` wins over `[harness] model` and the template default."""
    return _blank_to_none(check_model) or harness.model


def injection_problem(
    *, template: AgentTemplate, agent: str, model: str | None, effort: str | None
) -> str | None:
    """eval-banana's "cannot inject" text, or None when the model and effort can reach the agent."""
    parts: list[str] = []
    can_take_model = bool(template.model_flag and template.model_flag.strip()) or any(
        name.strip() for name in template.model_env_vars
    )
    if model and not can_take_model:
        parts.append(f"model {model!r} (configure model_flag or model_env_vars)")
    if effort and not any("{effort}" in token for token in template.reasoning_effort_flag):
        parts.append(
            f"reasoning effort {effort!r} "
            "(configure reasoning_effort_flag with an {effort} placeholder)"
        )
    if not parts:
        return None
    return f"Harness judge agent template {agent!r} cannot inject the selected " + " and ".join(
        parts
    )


def missing_executable_message(*, harness: ResolvedHarness, project_root: Path) -> str | None:
    """The guard's text when the agent's command was not found (on PATH, or as the file it
    names); None when it was found."""
    if harness.executable is not None:
        return None
    looked_for = harness.template.command[0] if harness.template.command else "<empty command>"
    needs = f"Harness agent '{harness.agent}' needs the command '{visible(looked_for)}'"
    if not _is_path(looked_for):
        return f"{needs}, which was not found on PATH"
    if os.path.isabs(looked_for):
        return f"{needs}, which is not an executable file"
    where = visible(str(project_root / looked_for))
    return (
        f"{needs}, which is not an executable file at {where} "
        "(a relative path is taken from the project root)"
    )


def missing_executable_hint(*, harness: ResolvedHarness) -> str:
    """What to do about a command `missing_executable_message` reports."""
    looked_for = harness.template.command[0] if harness.template.command else ""
    if _is_path(looked_for):
        return (
            "Fix the path in [agents.<name>] command (a relative path is taken from the "
            "project root, where the agent runs), or make the file executable."
        )
    return "Install the agent CLI, put it on PATH, or set [agents.<name>] command."
