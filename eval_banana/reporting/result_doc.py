"""The `--result-out` result document (docs/compatibility.md#result-document).

The document is a stamped envelope around a run: which commit and tree it saw, what it decided,
and — when a report exists — each check's outcome. It is written for every failure after option
parsing, classified by error type (never by message text).
"""

from __future__ import annotations

import errno
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from eval_banana.core.errors import (
    EvalBananaError,
    GuardError,
    LinkLoopError,
    NoChecksError,
    OutputDirError,
    RunAborted,
    UsageError,
    WriteFault,
)
from eval_banana.core.files import (
    LOOP_FIX,
    link_loop,
    never_stop,
    never_written,
    write_named_file,
)
from eval_banana.core.realpaths import real_path
from eval_banana.core.version import DISTRIBUTION
from eval_banana.reporttext.markdown import ended_after_report

RESULT_SCHEMA_VERSION = 1
FENCE = "```eval-banana-result v1"
Status = Literal["completed", "no_checks", "config_error", "harness_error"]


def check_result_target(*, path: Path, shown: str | None = None) -> None:
    """Refuse a directory PATH, a socket or block device PATH, a symbolic link loop, or a
    parent that cannot be a folder; a symbolic link is followed (as the write follows it, as a
    shell's `>` does), so each of those is asked of what it names.

    Called before the config is loaded, so a refusal never follows a finished run.
    """
    label = shown if shown is not None else str(path)
    if link_loop(path=path):
        raise result_out_loop(label=label)
    if path.is_symlink():
        path = real_path(path)
    if path.is_dir():
        raise OutputDirError(
            f"Refusing --result-out because the path is a directory: {label}", file=label
        )
    kind = never_written(path=path)
    if kind is not None:
        raise OutputDirError(
            f"Refusing --result-out because the path is {kind}: {label}",
            file=label,
            hint="give --result-out a file, a character device such as /dev/null, or a FIFO",
        )
    # The nearest existing ancestor must be a directory, or the parents cannot be created.
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise OutputDirError(
            f"Cannot create the folder of --result-out {label}: {parent} is not a directory",
            file=label,
        )


def result_out_loop(*, label: str, after_run: bool = False) -> LinkLoopError:
    """`--result-out` names a symbolic link loop (`after_run`: one made while the run went on)."""
    return LinkLoopError(
        f"Refusing --result-out because the path is a symbolic link loop: {label}",
        file=label,
        hint=f"{LOOP_FIX}, or give --result-out another path",
        after_run=after_run,
    )


def classify_failure(*, error: BaseException, reported: bool) -> Status | None:
    """The document status of a failed run; None when no document is written (usage errors).
    `reported`: the run judged its checks and wrote report.json and report.md before it failed."""
    if isinstance(error, UsageError):
        return None
    if isinstance(error, RunAborted):
        # An aborted run still judged what it could and wrote its report.
        return "completed"
    if reported and isinstance(error, WriteFault | LinkLoopError):
        # A fault after the report (report.html or the JUnit file not written, a check's
        # output cut short): the run was aborted (exit 3) with its checks judged, never a
        # setup failure. Before the report, the same fault is one.
        return "completed"
    if isinstance(error, NoChecksError):
        return "no_checks"
    if isinstance(error, GuardError):
        return "harness_error"
    return "config_error"


def failure_message(*, error: BaseException) -> str:
    if isinstance(error, EvalBananaError):
        return error.message
    return str(error) or type(error).__name__


def parse_provenance_fields(*, values: list[str]) -> dict[str, str]:
    """`key=value` pairs split at the first `=`, in order; a repeated key keeps the last value."""
    fields: dict[str, str] = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise UsageError(f"--provenance-field must be key=value, got: {value}")
        fields[key] = rest
    return fields


def build_provenance(*, attempt: str | None, fields: dict[str, str]) -> dict[str, str | None]:
    """`attempt` first, then the fields in order; a field named `attempt` overrides it."""
    provenance: dict[str, str | None] = {"attempt": attempt}
    provenance.update(fields)
    return provenance


def _first_effort(*, checks: list[dict[str, Any]]) -> str | None:
    for check in checks:
        effort = (check.get("details") or {}).get("reasoning_effort")
        if isinstance(effort, str):
            return effort
    return None


def _check_entry(*, check: dict[str, Any]) -> dict[str, Any]:
    model = (check.get("details") or {}).get("model")
    return {
        "id": check.get("check_id"),
        "status": check.get("status"),
        "reason": check.get("reason"),
        "model": model if isinstance(model, str) else None,
    }


def build_result_document(
    *,
    status: Status,
    report: dict[str, Any] | None,
    error: str | None,
    pass_threshold: float,
    harness_family: str | None,
    observed_before: dict[str, str | None],
    commit_after: str | None,
    provenance: dict[str, str | None],
    tool_version: str,
    produced_at: datetime | None = None,
    tool: str = DISTRIBUTION,
) -> dict[str, Any]:
    """The document object, keys in eval-banana's order (docs/compatibility.md#result-document)."""
    checks: list[dict[str, Any]] = list(report.get("checks", [])) if report else []
    # A run that ended with an error (exit 3) did not pass, whatever verdict its report holds.
    finished = status == "completed" and error is None
    passed = bool(report.get("run_passed")) if (report and finished) else False
    moment = produced_at if produced_at is not None else datetime.now(UTC)
    return {
        "schema_version": RESULT_SCHEMA_VERSION,
        # Which program wrote it: the format is shared with eval-banana, whose versions overlap.
        "tool": tool,
        "tool_version": tool_version,
        "status": status,
        "run_passed": passed,
        "pass_threshold": pass_threshold,
        "harness": {"family": harness_family, "effort": _first_effort(checks=checks)},
        "observed": {
            "commit_before": observed_before.get("commit"),
            "commit_after": commit_after,
            "dirty_tree_digest": observed_before.get("dirty_tree_digest"),
            "dirty_tree_algorithm": observed_before.get("dirty_tree_algorithm"),
        },
        "produced_at": moment.astimezone(UTC).isoformat(),
        "provenance": provenance,
        "checks": [_check_entry(check=check) for check in checks],
        "error": error,
    }


def report_copy(*, report: dict[str, Any], report_md: str, error: str | None) -> str:
    """report.md as the md document carries it: as written, and after an error its report does
    not record (a fault or a signal after report.md was written, `aborted_by` null) with a
    paragraph before it that says the run ended with exit 3 and did not pass."""
    if error is None or report.get("aborted_by"):
        return report_md
    return ended_after_report(message=error) + report_md


def render_result(*, document: dict[str, Any], report_md: str | None, fmt: str) -> str:
    """`md`: fenced JSON, then the exact report.md when a report exists; `json`: JSON + newline."""
    body = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)
    if fmt == "json":
        return body + "\n"
    if fmt != "md":
        raise UsageError(f"--result-format must be md or json, got: {fmt}")
    parts = [FENCE, body, "```", ""]
    if report_md is not None:
        parts.append(report_md)
    return "\n".join(parts)


def write_result(
    *,
    path: Path,
    text: str,
    opened: int | None = None,
    stop: Callable[[], bool] | None = None,
) -> None:
    """Write atomically with artifact permissions (0666 minus umask), or into the device or
    FIFO at `path`, a link followed (`write_named_file`; `opened`: it, opened already, and
    `stop`: whether the run is stopping, which ends a wait for its reader); a link made a loop
    since the run began is refused as it is before a run (LinkLoopError, exit 3)."""
    try:
        write_named_file(
            path=path,
            data=text.encode("utf-8"),
            opened=opened,
            stop=stop if stop is not None else never_stop,
        )
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise result_out_loop(label=str(path), after_run=True) from None
