"""Small readers over a finished report.json object, shared by the report writers."""

from __future__ import annotations

import re
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from eval_banana.core.errors import Located
from eval_banana.reporttext.notes import result_summary, status_note

Check = dict[str, Any]

# Characters XML 1.0 cannot carry at all (even escaped); check output may contain them.
# Compiled on first use (the re module caches it): building this class costs ~2 ms at import.
_NOT_XML = "[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"


def check_relpath(*, check: Check, project_root: str) -> str:
    """The check file's path relative to the project root, `/`-separated (absolute if outside)."""
    return relpath(path=str(check.get("source_path") or ""), project_root=project_root)


def check_place(
    *, check: Check, project_root: str, place: Located | None
) -> tuple[str, int | None]:
    """Where a report names `check`: its check file, or `place` (a failed case's dataset row,
    `caseplaces`) when it has a file; the project-relative path and the line when known."""
    if place is not None and place.file:
        return relpath(path=place.file, project_root=project_root), place.line
    return check_relpath(check=check, project_root=project_root), None


def relpath(*, path: str, project_root: str) -> str:
    """`path` relative to the project root, `/`-separated (as given when outside it, or when
    already relative: eb names a dataset file relative to the project root)."""
    prefix = project_root.rstrip("/") + "/"
    if project_root and path.startswith(prefix) and "\\" not in path:
        return path[len(prefix) :]  # the usual case, without PurePath's parsing per check
    pure = PureWindowsPath if "\\" in path and "/" not in path else PurePosixPath
    try:
        return pure(path).relative_to(pure(project_root)).as_posix()
    except ValueError:
        return pure(path).as_posix()


def is_not_run(*, check: Check) -> bool:
    """A check the stopped run never started."""
    details = check.get("details")
    return isinstance(details, dict) and details.get("not_run") is True


def is_control(*, check: Check) -> bool:
    """A control check expects its own check to fail."""
    return check.get("expect") == "fail"


def status_label(*, check: Check) -> str:
    """`failed`, `passed (control: defect caught)`, `not run`...: what a person should read."""
    if is_not_run(check=check):
        return "not run"
    status = str(check.get("status"))
    note = status_note(check=check)
    return status if note is None else f"{status} ({note})"


def summary(*, check: Check) -> str:
    """Reason, else error detail, else `exit code <n>` for a failed deterministic check."""
    return result_summary(result=check)


def error_class_of(*, check: Check) -> tuple[str, str] | None:
    """An errored judge's class (details.error_class: infrastructure, verdict, isolation or
    budget) and its cause for people (`HTTP 429`; the class itself when none was given)."""
    if check.get("status") != "error":
        return None
    details = check.get("details") or {}
    found = details.get("error_class")
    if not isinstance(found, str) or not found:
        return None
    cause = details.get("error_cause")
    return found, cause if isinstance(cause, str) and cause else found


def error_class_label(*, check: Check) -> str | None:
    """`infrastructure: HTTP 429`, or None for a check that did not error with a class."""
    found = error_class_of(check=check)
    if found is None:
        return None
    error_class, cause = found
    return error_class if cause == error_class else f"{error_class}: {cause}"


def xml_safe(text: str) -> str:
    """Replace characters XML 1.0 forbids (NUL, ESC, ...) with a visible `\\xNN` form."""
    return re.sub(_NOT_XML, lambda match: f"\\x{ord(match.group()):02x}", text)


def tail(*, text: str, limit: int) -> tuple[str, bool]:
    """The last `limit` characters of `text`, and whether anything was cut."""
    if len(text) <= limit:
        return text, False
    return text[-limit:], True


def skipped_checks(*, report: dict[str, Any]) -> list[Check]:
    """The selected checks whose file says `skip:` (never run, never scored)."""
    return list(report.get("skipped") or [])
