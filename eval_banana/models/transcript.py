"""`checks/<stem>.transcript.jsonl`: what a judge did, one event per line.

The single source of `schemas/transcript-event.schema.json` (each line of the file is one
`TranscriptEvent`). Read from the agent's own output by `eval_banana.transcripts`; every text is
cut to `[harness] transcript_max_chars`, so the file is bounded however much the agent printed.
"""

from __future__ import annotations

from typing import Literal

from eval_banana.core.record import Field, Record

EventKind = Literal["message", "tool_call", "tool_result", "error", "usage", "answer", "skipped"]


class TranscriptEvent(Record):
    """One step of a judge's conversation, as its agent CLI reported it."""

    model_config = {"extra": "forbid"}

    kind: EventKind = Field(
        description="message: text a participant wrote; tool_call: the agent called a tool; "
        "tool_result: what the tool returned; error: the agent or its model reported a failure; "
        "usage: tokens (and cost) reported; answer: the agent's final answer, where the verdict "
        "is read; skipped: output left out between the start and the end of a very long stream."
    )
    role: str | None = Field(
        default=None, description="Who wrote a message: assistant, user or system."
    )
    text: str | None = Field(
        default=None,
        description="The message, answer, tool result or error text, cut to transcript_max_chars.",
    )
    tool: str | None = Field(default=None, description="The tool's name (tool_call, tool_result).")
    call_id: str | None = Field(
        default=None, description="The id that pairs a tool call with its result."
    )
    arguments: str | None = Field(
        default=None,
        description="A tool call's arguments as JSON text, cut to transcript_max_chars.",
    )
    usage: dict[str, int | float] | None = Field(
        default=None, description="Tokens and cost as the agent reported them (usage events)."
    )
    cut: int | None = Field(
        default=None,
        ge=0,
        description="Characters (skipped: bytes of output) left out of this event; absent when "
        "nothing was.",
    )
    stream: Literal["stdout", "stderr"] = Field(
        default="stdout", description="The agent's stream the event was read from."
    )
