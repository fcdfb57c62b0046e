"""What a verdict depends on, per check: the components of its cache key.

Every check: its `check_definition_sha256` (the YAML and any referenced script), a digest of
the definition the plan holds (what runs), its input state
(the files its `inputs:` match, or the whole project) and the names, never the values, of the
environment variables the environment policy lets through (and the policy, under the
allowlist). Then per type: a judge's agent, command line template, the variables the config
sets for the agent as written (`{env:NAME}` placeholders by their text), output dialect, its
executable when that is a project file (path and content), model, reasoning effort, exact
prompt and prompt version; a deterministic check's interpreter version
and eb's rules for its verdict; an assertions check's artifact, the evaluator (eb's version)
and its rules (runners/verdictrules.py). Nothing else: timestamps, paths of the project root,
the values of eb's own environment variables and timeouts (a timeout is an error, and errors
are never stored) are not in the key.

A check that runs several samples (`repeats`, `[core] repeats`, `--repeats`) has no key at all:
sampling exists to measure how the check's verdict varies, which a stored verdict cannot tell.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from eval_banana.cache.key import Component
from eval_banana.cache.verdictsettings import agent_components, agent_executable
from eval_banana.checks.inputs import CheckInputs, artifact_of, declared_inputs
from eval_banana.checks.planneddigest import planned_definition_digest
from eval_banana.core.version import tool_version
from eval_banana.harness.prompt import judge_prompt
from eval_banana.models.config import Settings
from eval_banana.models.repeats import sample_count
from eval_banana.models.stages import PlannedCheck, ResolvedHarness
from eval_banana.runners.verdictrules import ASSERTIONS_RULES, DETERMINISTIC_RULES, JUDGE_RULES
from eval_banana.settings.envpolicy import allowed


class KeyContext:
    """What the components of every check in a run are computed from."""

    def __init__(
        self,
        *,
        settings: Settings,
        project_root: Path,
        harness: ResolvedHarness | None,
        inputs: CheckInputs,
        environ: Mapping[str, str],
        artifacts: Mapping[str, str],
    ) -> None:
        """`artifacts`: each assertions check's artifact id (checks.inputs.artifact_ids)."""
        self.settings = settings
        self.project_root = project_root
        self.harness = harness
        self.inputs = inputs
        self.artifacts = artifacts
        self.env_names = "\0".join(variable_names(settings=settings, environ=environ))
        # (model, effort) -> the judge components every check asking for them shares.
        self._agent_parts: dict[tuple[str | None, str | None], list[Component]] = {}
        self._executable: list[Component] | None = None

    def executable_parts(self, *, harness: ResolvedHarness) -> list[Component]:
        """The agent's executable, when it is a project file: its path and what reading it
        gives (`command = ["tools/judge.sh"]` edited is another judge). One outside the
        project counts by neither: the same key on every machine, whatever PATH finds (an
        agent CLI upgraded: `--cache refresh`). Read once, before any check runs."""
        if self._executable is None:
            found = agent_executable(harness=harness, project_root=self.project_root)
            self._executable = [("agent_executable", found.text())] if found.in_project else []
        return self._executable

    def agent_parts(
        self, *, harness: ResolvedHarness, model: str | None, effort: str | None
    ) -> list[Component]:
        """A judge's agent, command template, variables and dialect (worked out once per
        model and effort: a run's judges mostly share both)."""
        found = self._agent_parts.get((model, effort))
        if found is None:
            found = self._agent_parts[(model, effort)] = agent_components(
                harness=harness, settings=self.settings, model=model, effort=effort
            )
        return found


def variable_names(*, settings: Settings, environ: Mapping[str, str]) -> list[str]:
    """The names that count: those the allowlist policy lets through, under either policy.

    Under `allowlist` these are exactly the variables checks receive. Under `inherit` checks
    receive everything, but keying on every inherited name would make each key depend on the
    shell (OLDPWD, SHLVL, a terminal's session ids); the allowlist's view (the base set plus
    `env_allow` and `env_allow_prefixes`) is what a project says matters, so it counts there
    too: add a name to `env_allow` and its presence becomes part of every key.
    """
    execution = settings.execution
    return sorted(name for name in environ if allowed(name=name, settings=execution))


def interpreter_version() -> str:
    """The Python that runs deterministic checks, e.g. `cpython 3.11.7 final`."""
    info = sys.version_info
    return f"{sys.implementation.name} {info.major}.{info.minor}.{info.micro} {info.releaselevel}"


def _judge(*, check: PlannedCheck, context: KeyContext) -> list[Component] | None:
    from eval_banana.harness.prompt import PROMPT_VERSION
    from eval_banana.harness.resolve import effective_model

    harness = context.harness
    if harness is None:
        return None  # no agent: the check errors, and errors are never stored
    model = effective_model(harness=harness, check_model=check.definition.get("model"))
    effort = harness.reasoning_effort
    return [
        *context.agent_parts(harness=harness, model=model, effort=effort),
        # Absent unless the executable is a project file: every other key stays as it was.
        *context.executable_parts(harness=harness),
        ("model", model or ""),
        ("reasoning_effort", effort or ""),
        ("prompt", judge_prompt(check=check)),
        ("prompt_version", PROMPT_VERSION),
        ("verdict_rules", JUDGE_RULES),
    ]


def _deterministic(*, check: PlannedCheck, context: KeyContext) -> list[Component] | None:
    return [("interpreter", interpreter_version()), ("verdict_rules", DETERMINISTIC_RULES)]


def _assertions(*, check: PlannedCheck, context: KeyContext) -> list[Component] | None:
    artifact = artifact_of(check)
    # The artifact is what the check grades: it always counts, declared or not, ignored or not.
    return [
        ("artifact", f"{artifact}\0{context.artifacts[check.id]}"),
        ("evaluator", f"eval_banana {tool_version()}"),
        ("verdict_rules", ASSERTIONS_RULES),
    ]


TypeComponents = Callable[..., list[Component] | None]
BY_TYPE: dict[str, TypeComponents] = {
    "harness_judge": _judge,
    "deterministic": _deterministic,
    "assertions": _assertions,
}


def check_components(*, check: PlannedCheck, context: KeyContext) -> list[Component] | None:
    """The key components of one check; None when its verdict cannot be cached."""
    by_type = BY_TYPE.get(check.type)
    if by_type is None:
        return None
    if sample_count(definition=check.definition, default=context.settings.core.repeats) > 1:
        return None  # sampled: every run measures the check afresh
    specific = by_type(check=check, context=context)
    if specific is None:
        return None
    inputs = declared_inputs(check.definition)
    return [
        ("check_type", check.type),
        ("check_definition_sha256", check.check_definition_sha256),
        # What runs is the plan's definition: a verdict reached on one edited in plan.json
        # is never stored under the key of the definition its check file makes.
        ("planned_definition", planned_definition_digest(definition=check.definition)),
        ("input_scope", "project" if inputs is None else "declared"),
        # A case's family files are in its definition digest, not in its input state.
        (
            "input_state",
            context.inputs.digest(inputs=inputs, excluding=tuple(check.family_files or ())),
        ),
        ("variable_names", context.env_names),
        # Under the allowlist a check receives only what it lets through; a verdict judged with
        # the whole environment (inherit, the default, whose keys stay as they were) is not its.
        *([("env_policy", "allowlist")] if context.settings.execution.env == "allowlist" else []),
        *specific,
    ]
