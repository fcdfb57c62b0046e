"""The settings a check's verdict was decided under: the parts of what decides it that come
from the configuration (and the agent's executable), not from the project's files.

The verdict cache keys a verdict on them (`components.py` takes the judge's parts from here),
and the execute stage records them with each result (`ExecuteDoc.verdict_settings`), so that
`eb status` and `eb update` see a result judged under other settings than a rerun would use
(docs/rerunning-stages.md). Beyond the key's parts, a result records the time limit it ran
under and its samples: a check that passed in 3 seconds under a 30-second limit is an error
under a 1-second one. The isolation it was judged under is in the result itself
(`details.isolation`, isolation/modes.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

from eval_banana.cache.key import Component, framed_key
from eval_banana.core.files import sha256_bytes
from eval_banana.core.words import visible
from eval_banana.harness.variables import agent_variables
from eval_banana.models.config import Settings
from eval_banana.models.repeats import sample_count
from eval_banana.models.stages import PlannedCheck, ResolvedHarness

_PREFIX = b"eval-banana/verdict-settings/v1\0"

# Part -> how `eb status` and `eb update` name it when it changed.
PART_WORDS: dict[str, str] = {
    "harness.agent": "[harness] agent",
    "agent.command": "the agent's command line",
    "agent.variables": "the variables the config sets for the agent",
    "agent.output_dialect": "the agent's output_dialect",
    "agent.executable": "the agent's executable",  # counted only when a project file
    "model": "the model",
    "reasoning_effort": "the reasoning effort",
    "harness.timeout_seconds": "[harness] timeout_seconds",
    "core.check_timeout_seconds": "[core] check_timeout_seconds",
    "core.repeats": "[core] repeats",
    "execution.env": "[execution] env",
    "execution.env_allow": "[execution] env_allow",
    "execution.env_allow_prefixes": "[execution] env_allow_prefixes",
}


# The parts that are each job's own budget: shards of one run may choose them differently
# (docs/scale-out.md), so a merged run holds results decided under several values of each.
BUDGET_PARTS: tuple[str, ...] = ("harness.timeout_seconds", "core.check_timeout_seconds")


class AgentExecutable(NamedTuple):
    """The agent's executable as a verdict counts it: where it was found (project-relative
    inside the project, absolute outside it, "" when not found) and, inside the project, what
    reading it gives (its mode and blob id, a link followed; `absent` when it cannot be read).
    The content of an executable outside the project is never read: an agent CLI upgraded in
    place is not seen (docs/incremental.md)."""

    where: str
    content: str | None

    @property
    def in_project(self) -> bool:
        return self.content is not None

    def text(self) -> str:
        return f"{self.where}\0{self.content or ''}"


def agent_executable(*, harness: ResolvedHarness | None, project_root: Path) -> AgentExecutable:
    """The executable the guard found for the agent's command, as `AgentExecutable` counts it."""
    from eval_banana.projectstate.blobs import read_identity

    found = harness.executable if harness is not None else None
    if not found:
        return AgentExecutable(where="", content=None)
    relative = os.path.relpath(found, project_root)
    if relative == os.curdir or relative.split(os.sep)[0] == os.pardir:
        return AgentExecutable(where=found, content=None)
    try:
        identity = read_identity(path=found)
    except OSError:
        identity = None
    content = "absent" if identity is None else f"{identity.mode}:{identity.id}"
    return AgentExecutable(where=Path(relative).as_posix(), content=content)


def agent_components(
    *, harness: ResolvedHarness, settings: Settings, model: str | None, effort: str | None
) -> list[Component]:
    """A judge's agent, command line (the prompt as `{prompt}`, so the model flag, the effort
    tokens and the template's flags all count), the variables the config sets for it and its
    output dialect: the verdict key's parts of them, in its order."""
    from eval_banana.harness.command import build_argv

    template = harness.template
    command = build_argv(template=template, prompt="{prompt}", model=model, effort=effort)
    return [
        ("agent", harness.agent),
        ("command_template", json.dumps(command, ensure_ascii=False, allow_nan=False)),
        ("agent_variables", agent_variables(template=template, settings=settings)),
        ("output_dialect", template.output_dialect),
    ]


# The key's names of a judge's agent parts -> their names here.
_AGENT_PARTS: dict[str, str] = {
    "agent": "harness.agent",
    "command_template": "agent.command",
    "agent_variables": "agent.variables",
    "output_dialect": "agent.output_dialect",
}


def setting_parts(
    *,
    check: PlannedCheck,
    settings: Settings,
    harness: ResolvedHarness | None,
    executable: AgentExecutable,
) -> dict[str, str]:
    """Part -> its value: the settings `check`'s verdict is decided under, with `harness` (the
    guard's) and its `executable`. An assertions check is graded in eb's own process by the
    check file alone: none."""
    if check.type not in ("harness_judge", "deterministic"):
        return {}
    parts = _environment_parts(settings=settings)
    parts["core.repeats"] = str(
        sample_count(definition=check.definition, default=settings.core.repeats)
    )
    if check.type == "deterministic":
        parts["core.check_timeout_seconds"] = str(settings.core.check_timeout_seconds)
        return parts
    if harness is None:
        parts["harness.agent"] = ""  # no agent: the judge is an error, whatever it asks
        return parts
    from eval_banana.harness.resolve import effective_model

    model = effective_model(harness=harness, check_model=check.definition.get("model"))
    effort = harness.reasoning_effort
    for name, value in agent_components(
        harness=harness, settings=settings, model=model, effort=effort
    ):
        parts[_AGENT_PARTS[name]] = value
    if executable.in_project:
        # As the verdict key counts it: an executable outside the project by neither its path
        # nor its content, so the same agent found elsewhere on PATH (another machine, another
        # shard) judges nothing again.
        parts["agent.executable"] = executable.text()
    parts["model"] = model or ""
    parts["reasoning_effort"] = effort or ""
    parts["harness.timeout_seconds"] = str(harness.timeout_seconds)
    return parts


def _environment_parts(*, settings: Settings) -> dict[str, str]:
    """The environment policy a check runs under, and under the allowlist what it lets
    through (under `inherit` the check receives everything, whatever the lists say)."""
    execution = settings.execution
    parts: dict[str, str] = {"execution.env": execution.env}
    if execution.env == "allowlist":
        parts["execution.env_allow"] = json.dumps(sorted(execution.env_allow), allow_nan=False)
        parts["execution.env_allow_prefixes"] = json.dumps(
            sorted(execution.env_allow_prefixes), allow_nan=False
        )
    return parts


def part_digests(parts: dict[str, str]) -> dict[str, str]:
    """Part -> `sha256:` of its value, as execute.json records them: which part changed can be
    told, and no value (an API key written in `[harness.env]`) is copied into the run folder."""
    return {
        name: sha256_bytes(data=value.encode("utf-8", "surrogateescape"))
        for name, value in sorted(parts.items())
    }


def settings_digest(digests: dict[str, str]) -> str:
    """`sha256:` naming a set of part digests (`part_digests`), whatever their order."""
    return framed_key(prefix=_PREFIX, components=sorted(digests.items()))


def changed_parts(*, recorded: dict[str, str], now: dict[str, str]) -> list[str]:
    """The parts whose digests differ (or that one side lacks), in the order of PART_WORDS
    (those another agent brings along left to `harness.agent`); a part this eb does not know
    last."""
    names = [name for name in recorded.keys() | now.keys() if recorded.get(name) != now.get(name)]
    if "harness.agent" in names:
        # Another agent has another template: its command line, variables, dialect and
        # executable follow from it, and are not told apart.
        names = [name for name in names if not name.startswith("agent.")]
    order = {name: position for position, name in enumerate(PART_WORDS)}
    names.sort(key=lambda name: (order.get(name, len(order)), name))
    return names


class VerdictSettings(NamedTuple):
    """What execute.json records of the settings its results were decided under: check id ->
    settings digest, and each digest's part digests."""

    by_check: dict[str, str]
    parts: dict[str, dict[str, str]]
    executable: AgentExecutable  # the agent's, as the judges' parts count it

    def named(self, name: str) -> str:
        """How `eb status` names a part, the executable with where it is found now (what was
        recorded is a digest: only that it differs is known)."""
        if name != "agent.executable" or not self.executable.where:
            return PART_WORDS.get(name, name)
        where = visible(self.executable.where)
        if self.executable.in_project:
            return f"{PART_WORDS[name]} {where}"
        return f"{PART_WORDS[name]} (found outside the project now, at {where})"


def verdict_settings(
    *,
    checks: list[PlannedCheck],
    settings: Settings,
    harness: ResolvedHarness | None,
    project_root: Path,
) -> VerdictSettings:
    """The settings each of `checks` is decided under in a run with these settings and this
    harness (its executable read now, when it lies in the project); worked out once per kind
    of check (its type, own model and own repeats are all a check adds to them)."""
    judges = any(check.type == "harness_judge" for check in checks)
    executable = (
        agent_executable(harness=harness, project_root=project_root)
        if judges
        else AgentExecutable(where="", content=None)
    )
    by_kind: dict[tuple[str, str, str], str] = {}
    record = VerdictSettings(by_check={}, parts={}, executable=executable)
    for check in checks:
        kind = (
            check.type,
            repr(check.definition.get("model")),
            repr(check.definition.get("repeats")),
        )
        digest = by_kind.get(kind)
        if digest is None:
            parts = setting_parts(
                check=check, settings=settings, harness=harness, executable=executable
            )
            digests = part_digests(parts)
            digest = by_kind[kind] = settings_digest(digests)
            record.parts[digest] = digests
        record.by_check[check.id] = digest
    return record
