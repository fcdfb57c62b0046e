"""What `--verbose` says of each judge: the command it ran, how the agent ended, the end of its
stderr, and where the verdict was looked for and what came of it."""

from __future__ import annotations

from pathlib import Path

from eval_banana.core.log import Logger
from eval_banana.core.words import visible
from eval_banana.models.result import CheckResult
from eval_banana.runners.base import RunContext
from eval_banana.runners.process import ProcessOutcome

logger = Logger("eval_banana.runners.judgetrace")


# Where each output dialect's verdict is read from (docs/compatibility.md#verdict-reading).
_VERDICT_PLACES = {
    "gemini": "the assistant's last message (its chunks since the last other event) of its "
    "stream-json stdout",
    "openhands": "the finish action's message (else the agent's last message) of its --json stdout",
}


_DEFAULT_VERDICT_PLACE = "stdout: the newest `result` event, else the right-most JSON verdict"


_STDERR_TAIL_LINES = 10


def trace_judge(
    *, ctx: RunContext, argv: list[str], outcome: ProcessOutcome, result: CheckResult
) -> None:
    """With --verbose: what a person debugging a judge asks first (the command, the exit status
    and the end of stderr, where the verdict was looked for and what came of it)."""
    import shlex

    check_id = ctx.check.id
    # The prompt in argv and the agent's stderr are the check's and the agent's words: each
    # control character (ESC, a line break that would start a `::` workflow command, a
    # right-to-left override) is shown as an escape, as every other console line does.
    command = visible(shlex.join(argv))
    logger.debug("judge %s: ran %s (in %s)", check_id, command, visible(str(ctx.process_cwd)))
    status = "timed out" if outcome.timed_out else f"exited with code {outcome.exit_code}"
    logger.debug("judge %s: the agent %s", check_id, status)
    tail = _stderr_tail(path=outcome.stderr_path)
    if tail:
        where = ctx.evidence_name(".stderr.txt")
        lines = "".join(f"\n  | {line}" for line in tail)
        logger.debug(
            "judge %s: stderr, last %d lines (all in %s):%s", check_id, len(tail), where, lines
        )
    else:
        logger.debug("judge %s: stderr was empty", check_id)
    dialect = str(result.details.get("output_dialect"))
    place = _VERDICT_PLACES.get(dialect, _DEFAULT_VERDICT_PLACE)
    stdout = ctx.evidence_name(".stdout.txt")
    if result.status in ("passed", "failed"):
        logger.debug(
            "judge %s: verdict found in %s (%s, dialect %s): score %d, reason %r",
            check_id,
            stdout,
            place,
            dialect,
            result.score,
            result.reason,
        )
    else:
        problem = result.details.get("verdict_problem") or result.error_detail
        logger.debug(
            "judge %s: no verdict used from %s (%s, dialect %s): %s",
            check_id,
            stdout,
            place,
            dialect,
            visible(str(problem)),
        )


def _stderr_tail(*, path: Path | None) -> list[str]:
    """The last few non-empty lines of the agent's stderr file (read only with --verbose), each
    with its control characters shown as escapes (`\\x1b`): an agent's ESC[2J or OSC 8 link
    would otherwise clear the terminal eb prints to or hide a link in it."""
    if path is None:
        return []
    from collections import deque

    try:
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            kept = deque(
                (line.rstrip("\r\n") for line in handle if line.strip()), maxlen=_STDERR_TAIL_LINES
            )
    except OSError:
        return []
    return [visible(line) for line in kept]
