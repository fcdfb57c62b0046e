"""Why a judge ended in `error`, as one of four classes (`details.error_class`) and a short cause.

- `infrastructure`: the model provider or the agent process failed (HTTP 429/5xx, authentication,
  quota, network, the CLI missing, crashing or killed by a signal, a timeout). Nobody judged the
  check. A retry may help when the cause is transient; it cannot when the CLI is missing or
  cannot start, or the provider refused the credentials (HTTP 401/403): those are permanent.
- `verdict`: the agent ran to its end and answered, but the answer held no valid verdict.
- `isolation` and `budget` are given where they happen (eval_banana.isolation, the run's fuses).

The evidence is read in order of trust: the dialect's own error events (Claude Code's `result`
with `api_error_status`, Gemini's `result.error`, OpenHands' error events), then the exit status,
then a status the CLI printed, and the text of stderr only as the last resort.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.models.result import ErrorClass

# The CLI relaying the model server's HTTP status in its own words or JSON.
_STATUS_TEXT = re.compile(
    r"(?:\bhttp[ _/]?(?:status)?|\bstatus(?:[ _]?code)?|\bapi[ _]error|\"code\"|\bcode)"
    r"[\"'\s:=(]*([45]\d\d)\b|\b([45]\d\d)\s+(?:Too Many|Internal|Unauthorized|Forbidden|"
    r"Bad Gateway|Service Unavailable|Gateway Timeout)|^\s*([45]\d\d)\s",
    re.IGNORECASE | re.MULTILINE,
)
_RATE = re.compile(r"rate[ _-]?limit|too many requests|high demand|overloaded", re.IGNORECASE)
_AUTH = re.compile(
    r"unauthori[sz]ed|authenticat|invalid[\w -]{0,12}key|forbidden",
    re.IGNORECASE,
)
_QUOTA = re.compile(r"quota|insufficient[ _]funds|billing|credit balance", re.IGNORECASE)
_NETWORK = re.compile(
    r"ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|connection (refused|reset|error)"
    r"|could not connect|failed to connect|network error|fetch failed|getaddrinfo"
    r"|name resolution|connecterror|APIConnectionError",
    re.IGNORECASE,
)


class ErrorCause(NamedTuple):
    """A judge error's class and a short cause for people (`HTTP 429`, `killed by SIGKILL`),
    and, for the infrastructure's, whether the cause may go away by itself (only then is a
    retry worth it) and whether the agent started at all (a missing or unrunnable CLI, a setup
    problem: nothing ran, so the error says nothing of how long the judge takes)."""

    error_class: ErrorClass
    cause: str
    transient: bool = True
    started: bool = True


def _infra(cause: str, *, transient: bool = True, started: bool = True) -> ErrorCause:
    return ErrorCause("infrastructure", cause, transient, started)


# OpenHands' error event codes (litellm's exception names) by the cause they name.
_AUTHENTICATION = _infra("authentication", transient=False)
_OPENHANDS_CODES: tuple[tuple[str, ErrorCause], ...] = (
    ("RateLimit", _infra("HTTP 429")),
    ("Authentication", _AUTHENTICATION),
    ("PermissionDenied", _AUTHENTICATION),
    ("ServiceUnavailable", _infra("HTTP 5xx")),
    ("InternalServer", _infra("HTTP 5xx")),
    ("APIConnection", _infra("network")),
    ("Timeout", _infra("timeout")),
    ("BudgetExceeded", _infra("quota")),
)
# A shell or wrapper reports a child killed by signal N as exit status 128 + N.
_SIGNAL_EXITS = {128 + int(sig): sig.name for sig in signal.Signals}
_TEXT_LIMIT = 64 * 1024
# A shell's exit status when the command it was to run is missing (127) or not executable (126):
# the same next time, so never retried.
_SHELL_NOT_RUN = {127: "agent CLI not found", 126: "agent CLI could not start"}


def _status_cause(status: int) -> ErrorCause:
    if status in (401, 403):
        return _infra(f"authentication (HTTP {status})", transient=False)
    return _infra(f"HTTP {status}")


def _infra_status(status: int) -> bool:
    """A status that says the provider, not the judge, failed."""
    return status in (401, 402, 403, 408, 429) or 500 <= status <= 599


def _from_events(
    *, event: dict[str, Any] | None, error_event: dict[str, Any] | None
) -> ErrorCause | None:
    """An infrastructure cause the dialect's own events report, or None."""
    if error_event is not None:
        code = error_event.get("code")
        if isinstance(code, str):
            for part, cause in _OPENHANDS_CODES:
                if part.lower() in code.lower():
                    return cause
        text = " ".join(
            str(value) for value in (code, error_event.get("detail"), error_event.get("error"))
        )
        return _from_text(text) or _infra("the agent reported an error event")
    if event is None:
        return None
    status = event.get("api_error_status")
    if type(status) is int and _infra_status(status):
        return _status_cause(status)
    if event.get("is_error") is True and event.get("terminal_reason") == "api_error":
        return _from_text(str(event.get("result"))) or _infra("the model API failed")
    error = event.get("error")
    if event.get("type") == "result" and event.get("status") == "error" and isinstance(error, dict):
        return _from_text(str(error.get("message"))) or _infra("the agent reported an error")
    return None


def _from_text(text: str) -> ErrorCause | None:
    """The last resort: a status, or words of a rate limit, a refused key, a quota, a network."""
    for match in _STATUS_TEXT.finditer(text):
        status = int(next(group for group in match.groups() if group))
        if _infra_status(status):
            return _status_cause(status)
    if _RATE.search(text):
        return _infra("rate limit")
    if _QUOTA.search(text):
        return _infra("quota")
    if _AUTH.search(text):
        return _AUTHENTICATION
    if _NETWORK.search(text):
        return _infra("network")
    return None


def _tail_text(path: Path | None) -> str:
    """The end of a stream file (where a CLI prints its final complaint), bounded."""
    if path is None:
        return ""
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - _TEXT_LIMIT))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _signal_cause(exit_code: int | None) -> str | None:
    if exit_code is None:
        return None
    if exit_code < 0:
        try:
            return f"killed by {signal.Signals(-exit_code).name}"
        except ValueError:
            return f"killed by signal {-exit_code}"
    name = _SIGNAL_EXITS.get(exit_code)
    return None if name is None else f"killed by {name} (exit {exit_code})"


def classify_judge_error(
    *,
    exit_code: int | None,
    answered: bool,
    event: dict[str, Any] | None,
    error_event: dict[str, Any] | None,
    stderr_path: Path | None,
) -> ErrorCause:
    """The class of an error of an agent process that ran to its end (not timed out or stopped).

    A verdict error needs the agent to have exited 0 without an error event and without a
    provider failure on stderr; anything else is the infrastructure's. `answered`: the agent
    printed a verdict, or a malformed one; its error is then never transient, whatever failed
    after it: a retry would ask the judge again until it says 1.
    """
    found = _unanswered_cause(
        exit_code=exit_code,
        answered=answered,
        event=event,
        error_event=error_event,
        stderr_path=stderr_path,
    )
    return answered_cause(found) if answered else found


def answered_cause(found: ErrorCause) -> ErrorCause:
    """The infrastructure's error of an agent that had printed its answer (a verdict, or a
    malformed one) before it failed or timed out: never transient, as a verdict is never run
    again until it says 1."""
    if found.error_class != "infrastructure" or not found.transient:
        return found
    return found._replace(cause=f"{found.cause} after answering", transient=False)


def _unanswered_cause(
    *,
    exit_code: int | None,
    answered: bool,
    event: dict[str, Any] | None,
    error_event: dict[str, Any] | None,
    stderr_path: Path | None,
) -> ErrorCause:
    """The class and cause, by the evidence in order of trust (the module's docstring)."""
    found = _from_events(event=event, error_event=error_event)
    if found is not None:
        return found
    killed = _signal_cause(exit_code)
    if killed is not None:
        return _infra(killed)
    if exit_code in _SHELL_NOT_RUN:
        # A wrapper script (npx, a shell line) could not find or run the real CLI.
        return _infra(
            f"{_SHELL_NOT_RUN[exit_code]} (exit {exit_code})", transient=False, started=False
        )
    text = _from_text(_tail_text(stderr_path))
    if exit_code not in (0, None):
        return text or _infra(f"the agent crashed (exit code {exit_code})")
    if text is not None and not answered:
        return text
    return ErrorCause("verdict", "no valid verdict")


def launch_cause(exc: BaseException) -> ErrorCause:
    """The agent could not be started: a missing binary or one eb may not run."""
    if isinstance(exc, FileNotFoundError):
        return _infra("agent CLI not found", transient=False, started=False)
    return _infra(
        f"agent CLI could not start ({type(exc).__name__})", transient=False, started=False
    )
