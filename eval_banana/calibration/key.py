"""The key a judge's calibration is measured under, and how two keys differ."""

from __future__ import annotations

import json

from eval_banana.models.calibration import CalibrationKey
from eval_banana.models.config import Settings
from eval_banana.models.stages import PlannedCheck, ResolvedHarness

# Key field -> how a refusal names it ("the judge's <words> changed").
KEY_WORDS: dict[str, str] = {
    "check_definition_sha256": "definition (its check file or calibration cases)",
    "agent": "agent",
    "model": "model",
    "reasoning_effort": "reasoning effort",
    "command_template": "agent command line",
    "prompt_version": "prompt version",
    "agent_variables_sha256": "agent variables ([harness.env], the agent's provider_env and "
    "fixed_env)",
    "output_dialect": "output dialect",
}
# Key fields an older eb did not record: an entry without them was measured under a key that
# could not tell, say, one [harness.env] model or gateway from another.
ADDED_FIELDS: tuple[str, ...] = ("agent_variables_sha256", "output_dialect")


def calibration_key(
    *, check: PlannedCheck, harness: ResolvedHarness, settings: Settings
) -> CalibrationKey:
    """The key `check` runs under now, with this harness and these settings: what the verdict
    cache keys a judge's harness on (cache/components.py), the variables by their digest."""
    from eval_banana.harness.command import build_argv
    from eval_banana.harness.prompt import PROMPT_VERSION
    from eval_banana.harness.resolve import effective_model
    from eval_banana.harness.variables import agent_variables_digest

    model = effective_model(harness=harness, check_model=check.definition.get("model"))
    effort = harness.reasoning_effort
    command = build_argv(template=harness.template, prompt="{prompt}", model=model, effort=effort)
    return CalibrationKey(
        check_definition_sha256=check.check_definition_sha256,
        agent=harness.agent,
        model=model,
        reasoning_effort=effort,
        command_template=json.dumps(command, ensure_ascii=False, allow_nan=False),
        prompt_version=PROMPT_VERSION,
        agent_variables_sha256=agent_variables_digest(template=harness.template, settings=settings),
        output_dialect=harness.template.output_dialect,
    )


def missing_parts(recorded: CalibrationKey) -> list[str]:
    """The parts of the key an older eb left out of the record, in KEY_WORDS order."""
    return [KEY_WORDS[name] for name in ADDED_FIELDS if getattr(recorded, name) is None]


def key_differences(*, recorded: CalibrationKey, current: CalibrationKey) -> list[str]:
    """The parts of the key that changed since the record was measured, in KEY_WORDS order."""
    return [
        words
        for name, words in KEY_WORDS.items()
        if getattr(recorded, name) != getattr(current, name)
    ]
