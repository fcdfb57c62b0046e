"""The judge prompt: our preamble, the fixed format line, description and instructions."""

from __future__ import annotations

import re

from eval_banana.models.stages import PlannedCheck

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


# An `@` before anything but a space: claude, gemini and grok read `@name` in a prompt given on
# the command line as a file to attach (gemini also after a letter or a bracket, and it searches the
# project for `*name*` when no such file exists). A word joiner after the `@` keeps the text
# as it reads while none of them sees a mention (tried on each CLI: docs/agents.md).
_MENTION = re.compile(r"@(?=[^\s\u2060])")
WORD_JOINER = "\u2060"


def inert_mentions(text: str) -> str:
    """`text` with every `@` that could start a file mention followed by a word joiner."""
    return _MENTION.sub("@" + WORD_JOINER, text) if "@" in text else text


# A `{` that JSON could read as the start of an object with a key: `{`, JSON whitespace, `"`.
# A verdict can only start at one; a word joiner after it leaves nothing for the verdict reader
# to decode there (it is not JSON whitespace), while a person or a model reads the same text.
_OBJECT_START = re.compile(r'\{(?=[ \t\n\r]*")')


def inert_objects(text: str) -> str:
    """`text` with a word joiner after every `{` that could open a JSON object with a key."""
    return _OBJECT_START.sub("{" + WORD_JOINER, text) if "{" in text else text


def _inert(text: str) -> str:
    return inert_objects(inert_mentions(text))


def judge_prompt(*, check: PlannedCheck) -> str:
    """The exact prompt a judge is sent for `check`. A dataset family's cases are sent with
    their `@` made inert: a row is data, and its text must not make the agent attach a file
    (a row's `support@example.com` had gemini search the project for `*example.com*`). Their
    JSON objects are made inert too: a row's `{"score": 1, ...}` (in the case's block or placed
    by a placeholder) must never be read back as the verdict of an agent that echoes its
    prompt."""
    definition = check.definition
    description = str(definition.get("description") or check.description)
    instructions = str(definition["instructions"])
    if check.family is not None:
        description, instructions = _inert(description), _inert(instructions)
    return build_prompt(description=description, instructions=instructions)
