"""One check's stored verdict, looked up: reused only when its entry is sound, this run would
have isolated the check as strictly, everything the entry says agrees with the check, and its
files are back in the run folder; anything else is a miss (warned when the entry is at fault)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from eval_banana.cache.entry import entry_problem
from eval_banana.cache.namedfiles import unheld_path
from eval_banana.cache.notranscripts import (
    names_a_transcript,
    rewrite_attempt_results,
    untranscribed_files,
    without_transcripts,
)
from eval_banana.cache.ownwrites import OwnWrites
from eval_banana.cache.reuse import (
    disagreement,
    isolated_as_strictly,
    place_result,
    restore_files,
    restored,
    text_disagrees,
)
from eval_banana.cache.store import CacheStore
from eval_banana.cache.warn import Warn
from eval_banana.core.errors import WriteFault
from eval_banana.harness.prompt import judge_prompt
from eval_banana.models.config import CacheMode
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, PlannedCheck
from eval_banana.runners.results import utc_now


class Hit(NamedTuple):
    """A reused verdict, and the digest of checks/<stem>.json when it is already in place
    (linked to the entry's copy); None: the run writes the file itself."""

    result: CheckResult
    placed_result_sha256: str | None


def look_up_entry(
    *,
    config: ConfigDoc,
    check: PlannedCheck,
    key: str,
    store: CacheStore,
    local: CacheStore,
    own: OwnWrites,
    checks_dir: str,
    mode: CacheMode,
    warn: Warn,
) -> Hit | None:
    """The stored verdict of `check` under `key`, read from `store` (the local folder `local`,
    or where the run holds what it fetched) and restored into `checks_dir`; None on a miss."""
    started = utc_now()
    found = store.read(key=key)
    problem = found.problem
    if problem is None and found.document is None:
        return None  # nothing stored yet: an ordinary miss
    if found.unverifiable:
        warn(
            message=f"Cache entries in {store.folder} {problem}; they count as misses",
            file=str(store.folder),
        )
        return None
    document = found.document
    if problem is None:
        problem = entry_problem(document)
    if problem is None and (document["key"] != key or document["check_id"] != check.id):
        problem = "belongs to another key (a foreign entry)"
    if problem is None and not isolated_as_strictly(config=config, check=check, document=document):
        return None  # this run would have refused what that run let through: judge it
    text_read = False
    if problem is None:
        problem = disagreement(check=check, document=document)
    if problem is None:
        problem, text_read = text_disagrees(
            store=store,
            check=check,
            document=document,
            discard_damaged=mode == "on",
        )
    if problem is None:
        problem = _unheld_problem(check=check, document=document)
    transcripts = config.settings.harness.transcripts
    if problem is None:
        files = document.get("files", [])
        problem = restore_files(
            store=store,
            checks_dir=checks_dir,
            check=check,
            files=files if transcripts else untranscribed_files(files=files),
            discard_damaged=mode == "on",
        )
    if problem is not None:
        path = store.entry_path(key=key)
        warn(
            message=f"Cache entry {path} for check '{check.id}' {problem}; it counts as a miss",
            file=str(path),
        )
        return None
    if check.type == "harness_judge" and not any(
        item["name"] == "prompt.txt" for item in document.get("files", [])
    ):
        # The run folder keeps what a judge was asked, exactly as a fresh run writes it.
        prompt_path = f"{checks_dir}/{check.stem}.prompt.txt"
        try:
            with open(prompt_path, "wb") as handle:
                handle.write(judge_prompt(check=check).encode("utf-8"))
        except OSError as exc:
            raise WriteFault.of(path=prompt_path, exc=exc) from None
    if mode == "on" and store is local:
        local.touch(key=key)
    own.reused(path=local.entry_file(key=key), document=document)
    result = restored(check=check, document=document, key=key, started=started)
    if not transcripts and names_a_transcript(details=result.details):
        # The stored text names the transcript this run leaves out: it is written afresh.
        rewrite_attempt_results(checks_dir=checks_dir, stem=check.stem, details=result.details)
        return Hit(result=without_transcripts(result=result), placed_result_sha256=None)
    placed = place_result(
        store=store,
        checks_dir=checks_dir,
        check=check,
        result=result,
        document=document,
        text_read=text_read,
        discard_damaged=mode == "on",
    )
    return Hit(result=result, placed_result_sha256=placed)


def _unheld_problem(*, check: PlannedCheck, document: Mapping[str, Any]) -> str | None:
    """Why an entry cannot leave the run folder as complete as a fresh run: its result names a
    file it does not hold (an earlier attempt's, from an eb that kept only the last one)."""
    path = unheld_path(
        stem=check.stem,
        details=document["result"].get("details") or {},
        held=(item["name"] for item in document.get("files", [])),
    )
    return None if path is None else f"does not hold {path}, which its result names"
