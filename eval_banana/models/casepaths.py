"""The rules of a calibration case's file paths (stdlib only: the check fast path uses them)."""

from __future__ import annotations

import re

# For editors: no leading `/`, no `..` segment, no backslash, no trailing `/`.
CASE_PATH_PATTERN = r"^(?!/)(?!\.\.(/|$))(?!.*/\.\.(/|$))(?!.*/$)[^\\\x00]*\S[^\\\x00]*$"
_DRIVE = re.compile(r"[A-Za-z]:")


def case_path_problem(text: str) -> str | None:
    """Why `text` cannot name a project file for a case to write or delete, or None."""
    if not text.strip():
        return "must name a file (it is empty)"
    if "\\" in text:
        return "must use '/' between folders (a backslash is not allowed)"
    if "\x00" in text:
        return "must not contain a NUL character"
    if text.startswith("/") or _DRIVE.match(text):
        return "must be relative to the project root (it is absolute)"
    segments = text.split("/")
    if ".." in segments:
        return "must stay inside the project ('..' is not allowed)"
    if text.endswith("/") or any(segment in ("", ".") for segment in segments):
        return "must name a file by its plain path (no empty or '.' segments, no trailing '/')"
    if segments[0] == ".git":
        return "must not be inside .git (a case changes the project's files, not its history)"
    return None
