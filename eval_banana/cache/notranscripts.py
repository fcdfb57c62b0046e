"""A stored verdict reused by a run with `[harness] transcripts = false`: the run writes no
transcript, as a fresh judge run with the setting would not (docs/judges.md). The entry keeps its
transcripts for the runs that want them; the setting is not part of the verdict's key."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval_banana.cache.namedfiles import attempt_evidence, stored_name
from eval_banana.core.readback import loads_json
from eval_banana.models.result import CheckResult
from eval_banana.runners.results import write_check_result

# An entry's transcripts: the judge's own and its earlier attempts' (a deterministic check's
# evidence/ files are its own, whatever their names).
_TRANSCRIPT_NAME = re.compile(r"^(attempt[1-9][0-9]*\.)?transcript\.jsonl$")


def untranscribed_files(*, files: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """An entry's files less its transcripts."""
    return [item for item in files if not _TRANSCRIPT_NAME.match(str(item["name"]))]


def names_a_transcript(*, details: Mapping[str, Any]) -> bool:
    """Whether a result points at a transcript: its own, or one of its earlier attempts'."""
    if details.get("transcript_path") is not None:
        return True
    return any("transcript" in evidence for evidence in attempt_evidence(details=details))


def without_transcripts(*, result: CheckResult) -> CheckResult:
    """The result as a run that writes no transcript reports it: `details.transcript_path`
    null, and no transcript in its attempts' evidence."""
    details = dict(result.details)
    if "transcript_path" in details:
        details["transcript_path"] = None
    attempts = details.get("attempts")
    if isinstance(attempts, list):
        details["attempts"] = [_attempt_without_transcript(attempt) for attempt in attempts]
    return result.model_copy(update={"details": details})


def rewrite_attempt_results(*, checks_dir: str, stem: str, details: Mapping[str, Any]) -> None:
    """Write each earlier attempt's restored checks/<stem>.attempt<n>.json again without its
    transcript path (a new file: the restored one may be a link to the cache's copy)."""
    for evidence in attempt_evidence(details=details):
        path = evidence.get("result")
        name = stored_name(stem=stem, path=path) if isinstance(path, str) else None
        if name is None or name == "json":  # the last attempt's own: the reuse writes it
            continue
        place = Path(checks_dir) / f"{stem}.{name}"
        result = CheckResult.model_validate(loads_json(place.read_bytes()))
        write_check_result(
            checks_dir=place.parent,
            stem=place.name.removesuffix(".json"),
            result=without_transcripts(result=result),
        )


def _attempt_without_transcript(attempt: object) -> object:
    if not isinstance(attempt, dict) or not isinstance(attempt.get("evidence"), dict):
        return attempt
    evidence = {key: path for key, path in attempt["evidence"].items() if key != "transcript"}
    return {**attempt, "evidence": evidence}
