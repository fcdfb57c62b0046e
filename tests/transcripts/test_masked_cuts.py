"""A transcript's texts are masked before they are cut: whatever the cut, no piece of a secret
stays (docs/judges.md#transcripts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_banana.runners.redact import Redactor
from eval_banana.transcripts.reading import LINE_CAP
from eval_banana.transcripts.record import transcript_events

SECRET = "Sup3rSecretValue_abcdefghijklmnop0123456789"


def _pieces(size: int = 8) -> list[str]:
    return [SECRET[at : at + size] for at in range(len(SECRET) - size + 1)]


def _gemini(texts: list[str]) -> str:
    """gemini's stream-json: the assistant's message in these deltas."""
    deltas = [{"type": "message", "role": "assistant", "content": text} for text in texts]
    events = [*deltas, {"type": "result", "status": "success", "stats": {}}]
    return "".join(json.dumps(event) + "\n" for event in events)


# Each output puts the secret across a cut: the answer's end starts 20 characters into it (a
# text agent; gemini, the secret split between two deltas), a line too long to hold is cut
# inside it, and a long answer's start ends inside it.
OUTPUTS = {
    "text answer's end": ("text", "x" * 100 + SECRET + "Z" * 1980 + "\n"),
    "gemini deltas": ("gemini", _gemini(["x" * 100 + SECRET[:20], SECRET[20:] + "Z" * 1980])),
    "a line past LINE_CAP": ("text", "x" * (LINE_CAP - 20) + SECRET + "Z" * 100 + "\n"),
    "a tool result's start": (
        "codex-stderr",
        "--------\nheader\n--------\nexec\nls\nsucceeded in 5ms:\n"
        + "y" * 2004
        + SECRET
        + "w" * 500
        + "\ncodex\nok\n",
    ),
}


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_no_piece_of_a_secret_survives_a_transcript_cut(tmp_path: Path, name: str) -> None:
    dialect, output = OUTPUTS[name]
    path = tmp_path / "out.txt"
    path.write_text(output)
    codex = dialect == "codex-stderr"
    events = transcript_events(
        dialect="codex" if codex else dialect,
        stdout_path=None if codex else path,
        stderr_path=path if codex else None,
        max_chars=2000,
        masker=Redactor(secrets=[SECRET]),
    )
    written = json.dumps(events)
    assert [piece for piece in _pieces() if piece in written] == [], written[:400]
    assert any(event.get("cut") for event in events), events


def test_cut_counts_what_the_open_edge_left_out_too(tmp_path: Path) -> None:
    # A long answer with a secret near its end: its end is kept, masked, and the characters a
    # split secret could reach into at the open start are left out too, and counted.
    output = "a" * 3000 + SECRET + "\n" + "b" * 10 + "\n"
    path = tmp_path / "out.txt"
    path.write_text(output)
    (answer,) = [
        event
        for event in transcript_events(
            dialect="text",
            stdout_path=path,
            stderr_path=None,
            max_chars=2000,
            masker=Redactor(secrets=[SECRET]),
        )
        if event["kind"] == "answer"
    ]
    masked_whole = output.replace(SECRET, "***").rstrip("\n")
    assert masked_whole.endswith(answer["text"])
    assert answer["cut"] == len(masked_whole) - len(answer["text"])
