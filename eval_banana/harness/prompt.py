"""The judge prompt: our preamble, the fixed format line, description and instructions."""

from __future__ import annotations

# Bump whenever the wording below changes, so every result shows which prompt judged it.
PROMPT_VERSION = "eb-judge-1"

PREAMBLE = (
    "You are acting as an evaluation judge. Use the project in your current working directory "
    "to decide whether the check below holds. Give score 1 if it holds and 0 if it does not. "
    "When you are done, answer with only one JSON object, with no other text around it, in "
    "this form:"
)
# Protocol: the format line is fixed. It is deliberately not valid JSON ("0 or 1"), so an agent
# that echoes the prompt back cannot supply a verdict by accident.
FORMAT_LINE = '{"score": 0 or 1, "reason": "<one or two sentences>"}'


def build_prompt(*, description: str, instructions: str) -> str:
    """Assemble the exact prompt text (no trailing newline)."""
    lines = [
        PREAMBLE,
        FORMAT_LINE,
        "",
        "Check Description:",
        description.strip(),
        "",
        "Instructions:",
        instructions.strip(),
    ]
    return "\n".join(lines).strip()
