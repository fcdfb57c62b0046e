"""The evidence of each check on report.html: what the page's script needs to show a row's
details (its texts, samples, the start of its judge prompt), which of its files exist in
checks/, and the judges' transcripts embedded for the rows that have one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, BinaryIO

from eval_banana.core.stem import artifact_stem
from eval_banana.core.words import one_line
from eval_banana.reporting.common import Check, check_relpath, is_control, tail
from eval_banana.reporting.html_rows import ROW_REASON_LIMIT_CHARS, Shown

PROMPT_LIMIT_CHARS = 4000
STDERR_LIMIT_CHARS = 2000


def _read_prompt(*, path: Path) -> tuple[str | None, bool]:
    """The first PROMPT_LIMIT_CHARS characters of a judge prompt file, and whether it was cut."""
    try:
        with path.open("rb") as handle:
            head = handle.read(PROMPT_LIMIT_CHARS * 4 + 4)
    except OSError:
        return None, False
    text = head.decode("utf-8", errors="replace")
    if len(text) > PROMPT_LIMIT_CHARS:
        return text[:PROMPT_LIMIT_CHARS], True
    return text, False


def evidence_names(*, run_dir: Path) -> frozenset[str]:
    """The files in checks/, listed once: a stat per link costs seconds at 10,000 checks."""
    try:
        with os.scandir(run_dir / "checks") as entries:
            return frozenset(entry.name for entry in entries)
    except OSError:
        return frozenset()


# Which of a check's files exist, one letter each; the page builds `checks/<stem><suffix>`
# (html_assets.JS, FILES). Whole paths would be a quarter of the page's data at 10,000 checks.
_FILE_LETTERS = (
    ("o", ".stdout.txt"),
    ("e", ".stderr.txt"),
    ("p", ".prompt.txt"),
    ("r", ".json"),
    ("t", ".transcript.jsonl"),
)
# The most characters of one judge's transcript the page embeds (the file has all of it).
TRANSCRIPT_PAGE_CHARS = 200_000


def _files(*, present: frozenset[str], stem: str) -> str:
    """The letters of this check's files that exist."""
    return "".join(letter for letter, suffix in _FILE_LETTERS if stem + suffix in present)


def _samples(*, check: Check) -> list[dict[str, Any]]:
    """A sampled check's samples for the page: outcome, one line of why, links to evidence."""
    found = (check.get("details") or {}).get("samples")
    if not isinstance(found, list):
        return []
    shown = []
    for sample in found:
        if not isinstance(sample, dict):
            continue
        found = sample.get("evidence")
        evidence: dict[str, object] = found if isinstance(found, dict) else {}
        why = sample.get("reason") or sample.get("error_detail") or ""
        shown.append(
            {
                "n": sample.get("sample"),
                "status": sample.get("status"),
                "why": one_line(str(why))[:ROW_REASON_LIMIT_CHARS],
                "links": {key: str(value) for key, value in evidence.items()},
            }
        )
    return shown


# The page data's key for each text a check may have (left out when empty).
_TEXT_FIELDS = (
    ("desc", "description"),
    ("reason", "reason"),
    ("error", "error_detail"),
    ("stdout", "stdout"),
)


def check_entry(
    *, shown: Shown, run_dir: Path, project_root: str, present: frozenset[str]
) -> dict[str, Any]:
    """What the page's script needs for one check (bounded: no full prompt or stderr).

    Only what this check has: a key left out reads as empty (the script treats a missing key
    as null, false or an empty list), so 10,000 passed checks do not each spell out a dozen
    nulls.
    """
    check = shown.check
    check_id = str(check.get("check_id", ""))
    stem = artifact_stem(check_id=check_id)
    files = _files(present=present, stem=stem)
    entry: dict[str, Any] = {
        "id": check_id,
        "g": shown.group,
        "label": shown.label,
        "stem": stem,
        "files": files,
        "ms": check.get("duration_ms", 0),
    }
    tags = check.get("tags")
    if tags:
        entry["tags"] = [str(tag) for tag in tags]
    for key, field in _TEXT_FIELDS:
        value = check.get(field)
        if value:
            entry[key] = value
    relative = check_relpath(check=check, project_root=project_root)
    if relative:
        entry["file"] = relative
    if check.get("exit_code") is not None:
        entry["exit"] = check["exit_code"]
    samples = _samples(check=check)
    if samples:
        entry["samples"] = samples
    details = check.get("details")
    if details:
        # The object itself: the page lays it out only when its row is opened, so a run of
        # 10,000 checks does not print 10,000 indented texts nobody may read.
        entry["details"] = details
    if is_control(check=check):
        entry["expect"] = "fail (control check)"
        entry["observed"] = check.get("observed_status")
    if shown.flaky:
        entry["flaky"] = True
    stderr, stderr_cut = tail(text=str(check.get("stderr") or ""), limit=STDERR_LIMIT_CHARS)
    if stderr_cut:
        stderr = f"[stderr cut to its last {STDERR_LIMIT_CHARS} characters]\n{stderr}"
    if stderr:
        entry["stderr"] = stderr
    prompt_link = f"checks/{stem}.prompt.txt" if "p" in files else None
    if prompt_link is None and samples and "prompt" in samples[0]["links"]:
        prompt_link = entry["prompt_link"] = samples[0]["links"]["prompt"]  # all asked alike
    if prompt_link is not None:
        prompt, prompt_cut = _read_prompt(path=run_dir / prompt_link)
        if prompt is not None:
            entry["prompt"] = prompt
        if prompt_cut:
            entry.update(prompt_cut=True, prompt_limit=PROMPT_LIMIT_CHARS)
    return entry


def transcript_blob(*, path: Path) -> str | None:
    """A judge's transcript as the text of a JSON array, safe inside <script>, or None.

    The JSONL lines are joined as they are, not parsed: a page of 1,000 judges is written
    without decoding their events, and the browser parses one only when its row opens. Past
    TRANSCRIPT_PAGE_CHARS, the page keeps the whole lines of the file's first and last half of
    that, so the answer and the usage at its end still show, and a `skipped` event between them
    counts what only the file holds.
    """
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size <= TRANSCRIPT_PAGE_CHARS:
                lines = handle.read().split(b"\n")
            else:
                lines = _start_and_end(handle=handle, size=size, name=path.name)
    except OSError:
        return None
    kept = (line.decode("utf-8", errors="replace") for line in lines if line.strip())
    text = "[" + ",".join(kept) + "]"
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _start_and_end(*, handle: BinaryIO, size: int, name: str) -> list[bytes]:
    """The whole lines in the first and in the last half of the page's budget, with a `skipped`
    event between them saying how many events and bytes are only in the file."""
    half = TRANSCRIPT_PAGE_CHARS // 2
    head = handle.read(half)
    head = head[: head.rfind(b"\n") + 1]  # whole lines only (none if the first is longer)
    # From one byte before the end's half: its first line break ends the line cut there.
    handle.seek(size - half - 1)
    end = handle.read()
    end = end[end.find(b"\n") + 1 :] if b"\n" in end else b""
    handle.seek(len(head))
    middle = size - len(head) - len(end)
    events = _count_lines(handle=handle, length=middle)
    note = {
        "kind": "skipped",
        "text": f"{events} events ({middle} bytes) left out of this page; they are in {name}",
    }
    return [*head.split(b"\n"), json.dumps(note, allow_nan=False).encode(), *end.split(b"\n")]


def _count_lines(*, handle: BinaryIO, length: int) -> int:
    """The line breaks in the next `length` bytes (a transcript file is bounded: a few MB)."""
    count = 0
    while length > 0:
        block = handle.read(min(length, 1 << 20))
        if not block:
            break
        count += block.count(b"\n")
        length -= len(block)
    return count


def transcript_scripts(*, entries: list[dict[str, Any]], run_dir: Path) -> str:
    """One <script type="application/json" id="tr-N"> per row with a transcript (N: the row's
    data-i); its entry gets `tr` so the script knows to look."""
    blobs = []
    for index, entry in enumerate(entries):
        if "t" not in entry["files"]:
            continue
        blob = transcript_blob(path=run_dir / "checks" / f"{entry['stem']}.transcript.jsonl")
        if blob is None:
            continue
        entry["tr"] = 1
        blobs.append(f'<script type="application/json" id="tr-{index}">{blob}</script>')
    return "\n".join(blobs)
