"""The files of checks/ a result names beyond its own outputs: a retried judge's earlier
attempts (`details.attempts[].evidence`, kept as checks/<stem>.attempt<n>.*). A stored verdict
holds every one of them, and a reuse that cannot bring one back is a miss, so a reused verdict
leaves the run folder as complete as a fresh one."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from typing import Any

# What a reuse brings back without an entry's file: the result text (checks/<stem>.json) and a
# judge's prompt, which it writes from the check when the entry holds none.
_WRITTEN_BY_REUSE = frozenset({"json", "prompt.txt"})
# The files one attempt leaves: its outputs and its result (runners/retries.py).
_ATTEMPT_SUFFIXES = ("stdout.txt", "stderr.txt", "prompt.txt", "transcript.jsonl", "json")


def attempt_evidence(*, details: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each attempt's `evidence` (what it names -> its run-relative path), in order."""
    attempts = details.get("attempts")
    found: list[dict[str, Any]] = []
    for attempt in attempts if isinstance(attempts, list) else []:
        evidence = attempt.get("evidence") if isinstance(attempt, dict) else None
        if isinstance(evidence, dict):
            found.append(evidence)
    return found


def named_paths(*, details: Mapping[str, Any]) -> list[str]:
    """The run-relative paths a result's attempts name as their evidence, in order."""
    return [
        path
        for evidence in attempt_evidence(details=details)
        for path in evidence.values()
        if isinstance(path, str)
    ]


def stored_name(*, stem: str, path: str) -> str | None:
    """`<name>` of a path `checks/<stem>.<name>`, or None for a path elsewhere."""
    prefix = f"checks/{stem}."
    return (
        path[len(prefix) :] if path.startswith(prefix) and "/" not in path[len(prefix) :] else None
    )


def names_to_store(*, stem: str, details: Mapping[str, Any]) -> list[str]:
    """The `<name>`s of the named files a stored verdict keeps beside its own outputs."""
    names = (stored_name(stem=stem, path=path) for path in named_paths(details=details))
    return list(dict.fromkeys(n for n in names if n is not None and n not in _WRITTEN_BY_REUSE))


def unheld_path(*, stem: str, details: Mapping[str, Any], held: Iterable[str]) -> str | None:
    """The first path the result names that a reuse could not bring back (not in the entry's
    files `held`, nor written by the reuse itself), or None when it can bring back all."""
    present = {*held, *_WRITTEN_BY_REUSE}
    for path in named_paths(details=details):
        if stored_name(stem=stem, path=path) not in present:
            return path
    return None


def remove_attempt_files(*, checks_dir: str, stem: str) -> None:
    """Remove checks/<stem>.attempt<n>.* for n = 1, 2, ... up to the first attempt that left
    none (attempts are numbered from 1 without gaps)."""
    attempt = 1
    while True:
        removed = False
        for suffix in _ATTEMPT_SUFFIXES:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{checks_dir}/{stem}.attempt{attempt}.{suffix}")
                removed = True
        if not removed:
            return
        attempt += 1
