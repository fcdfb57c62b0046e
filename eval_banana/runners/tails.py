"""The bounded tails of a check's output that its result holds, each naming the evidence
file that keeps the whole stream."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from eval_banana.core.masking import Masker, masked
from eval_banana.runners.process import ProcessOutcome

TAIL_CHARS = 2000


def bounded_tail(*, path: Path | None, stream: str, location: str, masker: Masker) -> str:
    """eval-banana's bounded tail: the whole text, or a banner and the last 2000 chars; the
    run's secrets masked before the cut (eval_banana.core.masking).

    See docs/compatibility.md#report-json.
    """
    if path is None:
        return ""
    size = path.stat().st_size
    # UTF-8 needs at most 4 bytes per character, so this window holds 2000 characters, and
    # what a secret cut at its start reaches into it; a window whose masks leave fewer grows.
    window = 4 * TAIL_CHARS + 8 + masker.reach
    while True:
        start = max(0, size - window)
        with path.open("rb") as handle:
            handle.seek(start)
            text = handle.read(size - start).decode("utf-8", errors="replace")
        text = masked(text, masker=masker, open_start=start > 0)
        if start == 0 or len(text) > TAIL_CHARS:
            break
        window *= 2
    if start == 0 and len(text) <= TAIL_CHARS:
        return text
    return (
        f"[eval-banana: {stream} truncated to the last {TAIL_CHARS} characters; "
        f"full output at {location}]\n" + text[-TAIL_CHARS:]
    )


def stream_tails(
    *, outcome: ProcessOutcome, masker: Masker, evidence_name: Callable[[str], str]
) -> tuple[str, str]:
    """The bounded tails of a finished check's stdout and stderr, each naming the evidence file
    that keeps the whole stream (stderr is bounded too, where eval-banana stored it whole)."""
    stdout, stderr = (
        bounded_tail(
            path=path, stream=stream, location=evidence_name(f".{stream}.txt"), masker=masker
        )
        for path, stream in ((outcome.stdout_path, "stdout"), (outcome.stderr_path, "stderr"))
    )
    return stdout, stderr
