"""The key a judge's calibration is measured under, and how two keys differ."""

from __future__ import annotations

import json

from eval_banana.models.calibration import CalibrationKey
from eval_banana.models.stages import PlannedCheck, ResolvedHarness

# Key field -> how a refusal names it ("the judge's <words> changed").
KEY_WORDS: dict[str, str] = {
    "check_definition_sha256": "definition (its check file or calibration cases)",
    "agent": "agent",
    "model": "model",
    "reasoning_effort": "reasoning effort",
    "command_template": "agent command line",
    "prompt_version": "prompt version",
}


def calibration_key(*, check: PlannedCheck, harness: ResolvedHarness) -> CalibrationKey:
    """The key `check` runs under now, with this harness."""
    from eval_banana.harness.command import build_argv
    from eval_banana.harness.prompt import PROMPT_VERSION
    from eval_banana.harness.resolve import effective_model

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
    )


def key_differences(*, recorded: CalibrationKey, current: CalibrationKey) -> list[str]:
    """The parts of the key that changed since the record was measured, in KEY_WORDS order."""
    return [
        words
        for name, words in KEY_WORDS.items()
        if getattr(recorded, name) != getattr(current, name)
    ]
