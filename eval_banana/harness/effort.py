"""What became of the reasoning effort a judge passed to its agent (`details.effort`).

eval_banana can only put the effort on the agent's command line; whether it reaches the model is
up to the agent. Some agents drop it without a word for a model that has no such setting
(opencode's `--variant`, pi's `--thinking` on a non-reasoning model, Grok Build on a model whose
menu lacks the level). Two say what they did: codex prints the effort it uses in its stderr
header, pi warns on stderr when it rejects a level (and then uses its own default). So the
record says what was requested, what the agent was given, and what the agent's own output shows.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from eval_banana.models.config import AgentTemplate

EffortStatus = Literal["confirmed", "replaced", "rejected", "unconfirmed"]

# codex's header, e.g. `reasoning effort: high` (read from the first lines of its stderr).
_CODEX_HEADER = re.compile(r"^reasoning effort:\s*(\S+)\s*$")
# pi's warning for a level it does not know, e.g. `Warning: Invalid thinking level "bogus". ...`
_PI_REJECTED = re.compile(r"Invalid thinking level")
# Only the start of stderr is read: both statements come before any model output.
_HEAD_LINES = 200


def _program(template: AgentTemplate) -> str:
    return Path(template.command[0]).name if template.command else ""


def _head(stderr_path: Path | None) -> list[str]:
    if stderr_path is None:
        return []
    lines: list[str] = []
    with stderr_path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            lines.append(line.rstrip("\r\n"))
            if len(lines) >= _HEAD_LINES:
                break
    return lines


def _agent_statement(
    *, program: str, requested: str, stderr_path: Path | None
) -> tuple[EffortStatus, str | None]:
    """The agent's own word on the effort: a status and the line that says it."""
    for line in _head(stderr_path):
        text = line.strip()
        if program == "codex":
            match = _CODEX_HEADER.match(text)
            if match:
                used = match.group(1)
                return ("confirmed" if used == requested else "replaced"), text
        elif program == "pi" and _PI_REJECTED.search(text):
            return "rejected", text
    return "unconfirmed", None


def effort_outcome(
    *, template: AgentTemplate, requested: str | None, stderr_path: Path | None
) -> dict[str, Any] | None:
    """`details.effort`, or None when no effort was requested.

    - `requested`: the effort eval_banana selected (also `details.reasoning_effort`);
    - `given`: the command-line tokens that carried it to the agent;
    - `status`: `confirmed` (the agent says it uses that effort), `replaced` (it says it uses
      another one), `rejected` (it refused the value and fell back to its own default) or
      `unconfirmed` (the agent does not say; it may have dropped it);
    - `agent_said`: the agent's line that tells, or null.
    """
    if requested is None:
        return None
    given = [token.replace("{effort}", requested) for token in template.reasoning_effort_flag]
    status, said = _agent_statement(
        program=_program(template), requested=requested, stderr_path=stderr_path
    )
    return {"requested": requested, "given": given, "status": status, "agent_said": said}
