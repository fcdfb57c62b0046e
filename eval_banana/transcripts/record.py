"""Record one judge's transcript: the events written atomically as `checks/<stem>.transcript.jsonl`.

A run of eb builds the events while the agent's output is read (eval_banana.transcripts.live);
`transcript_events` reads output files already written (tests, the bench) the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from eval_banana.core.files import write_bytes_atomic
from eval_banana.core.jsonvalues import without_lone_surrogates
from eval_banana.core.masking import Masker
from eval_banana.transcripts.live import TranscriptBuilder
from eval_banana.transcripts.sink import Event

TRANSCRIPT_SUFFIX = ".transcript.jsonl"
_CHUNK = 1 << 20


def _feed(*, path: Path | None, into: Callable[[bytes], None]) -> None:
    if path is None:
        return
    try:
        handle = path.open("rb")
    except OSError:
        return
    with handle:
        while data := handle.read(_CHUNK):
            into(data)


def transcript_events(
    *,
    dialect: str,
    stdout_path: Path | None,
    stderr_path: Path | None,
    max_chars: int,
    masker: Masker,
) -> list[Event]:
    """The transcript of one run of an agent, from its stdout and stderr files."""
    builder = TranscriptBuilder(dialect=dialect, max_chars=max_chars, masker=masker)
    _feed(path=stdout_path, into=builder.stdout)
    _feed(path=stderr_path, into=builder.stderr)
    return builder.events()


def write_transcript(*, events: list[Event], target: Path) -> int:
    """Write `target` (one JSON event per line, atomically); the number of events."""
    # No NaN or infinity: the file is JSON Lines, which report.html's JSON.parse reads too.
    data = "".join(
        json.dumps(event, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
        for event in events
    )
    # Half a surrogate pair an agent escaped (text cut inside an emoji) is U+FFFD, as in the
    # check's result: no UTF-8 file can hold it.
    write_bytes_atomic(path=target, data=without_lone_surrogates(data).encode("utf-8"))
    return len(events)


def record_transcript(
    *,
    dialect: str,
    stdout_path: Path | None,
    stderr_path: Path | None,
    target: Path,
    max_chars: int,
    masker: Masker,
) -> int:
    """Write `target` from output files; the number of events."""
    events = transcript_events(
        dialect=dialect,
        stdout_path=stdout_path,
        stderr_path=stderr_path,
        max_chars=max_chars,
        masker=masker,
    )
    return write_transcript(events=events, target=target)
