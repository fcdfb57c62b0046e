"""A stored verdict made this run's result: checked against the check, rebuilt with
`details.cache`, and its files and its checks/<stem>.json put back in the run folder."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from eval_banana.cache.blobs import Blob, BlobStore
from eval_banana.cache.namedfiles import remove_attempt_files
from eval_banana.core.files import CHECK_OUTPUT_NAMES, remove_check_outputs, sha256_bytes
from eval_banana.core.readback import loads_json
from eval_banana.core.realpaths import real_path
from eval_banana.harness.usage import usage_cost
from eval_banana.isolation.modes import check_mode, judged_as_strictly
from eval_banana.models.result import CheckResult, result_json_text
from eval_banana.models.stages import ConfigDoc, PlannedCheck
from eval_banana.runners.results import build_result, judged_outcome

_TIMES = ("started_at", "completed_at", "duration_ms")
# How a reuse's checks/<stem>.json is laid out: the result's fields in order, and how `restored`
# fills them (bump the number when it changes; a test pins the code it stands for, so a change
# that forgets the bump fails). An entry's stored text names the layout and
# the check file it was written for; a reuse that matches both links it without rendering its
# own to compare (a third of a lookup's time).
_REUSE_TEXT_VERSION = 3
REUSE_LAYOUT = f"{_REUSE_TEXT_VERSION}:" + sha256_bytes(
    data="\0".join(spec.alias or name for name, spec in CheckResult.model_fields.items()).encode()
)


def disagreement(*, check: PlannedCheck, document: Mapping[str, Any]) -> str | None:
    """Why an entry's verdict does not hold together, or None: its expectation is the
    check's, and its status and score are what its observed status makes of that expectation
    (the scoring's own rule, `judged_outcome`)."""
    expect = "fail" if check.definition.get("expect") == "fail" else "pass"
    if document["expect"] != expect:
        return f"expects '{document['expect']}' where the check expects '{expect}'"
    stored = document["result"]
    status, score = judged_outcome(observed=stored["observed_status"], expect=expect)
    if stored["status"] != status or stored["score"] != score:
        return (
            f"says {stored['status']} with score {stored['score']} where observed "
            f"{stored['observed_status']} under expect '{expect}' is {status} with score {score}"
        )
    return None


def isolated_as_strictly(
    *, config: ConfigDoc, check: PlannedCheck, document: Mapping[str, Any]
) -> bool:
    """Whether an entry's verdict was judged under isolation at least as strict as a run
    configured by `config` isolates the check (its result's `details.isolation`); a run reuses
    it only then, and `eb plan` calls it a hit only then. The mode and the ignored patterns
    are not in the key, so that changing them does not turn every stored verdict into a miss;
    a verdict judged watched, ignoring fewer patterns, serves the laxer runs."""
    return judged_as_strictly(
        record=(document["result"].get("details") or {}).get("isolation"),
        wanted=check_mode(config=config, check=check),
        ignore=config.settings.harness.isolation_ignore,
    )


def restored(
    *, check: PlannedCheck, document: dict[str, Any], key: str, started: datetime
) -> CheckResult:
    stored = document["result"]
    details = dict(stored.get("details") or {})
    cache: dict[str, Any] = {
        "hit": True,
        "key": key,
        "from_run_id": document["from_run_id"],
        "stored_at": document["stored_at"],
    }
    if "usage" in details:
        # What the verdict cost the run that made it: like its times below, what the check
        # costs when it runs (eb plan's expected cost), though nothing is spent on it now.
        made = details["usage"]
        cache["from_run_cost_usd"] = usage_cost(made) if isinstance(made, dict) else None
        details["usage"] = None  # no tokens were spent on this verdict in this run
    details["cache"] = cache
    result = build_result(
        check=check,
        status=stored["status"],
        started=started,
        reason=stored.get("reason"),
        stdout=stored.get("stdout", ""),
        stderr=stored.get("stderr", ""),
        exit_code=int(stored["exit_code"]) if stored.get("exit_code") is not None else None,
        details=details,
    )
    update: dict[str, Any] = {
        "score": int(stored["score"]),
        "observed_status": stored["observed_status"],
    }
    if all(stored.get(name) is not None for name in _TIMES):
        # The times of the run that produced the verdict, as a build tool reports a cached
        # test with the time it took when it ran (details.cache says it was reused).
        update.update({name: stored[name] for name in _TIMES})
        update["duration_ms"] = int(stored["duration_ms"])
    return result.model_copy(update=update)


def text_disagrees(
    *, store: BlobStore, check: PlannedCheck, document: dict[str, Any], discard_damaged: bool
) -> tuple[str | None, bool]:
    """Whether the stored checks/<stem>.json says another verdict than the entry, and
    whether its blob was read whole and matched its digest. A text that cannot be brought
    is not a disagreement: the reuse writes its own."""
    stored = document.get("result_file")
    if stored is None:
        return None, False
    data = store.read_blob(
        blob=Blob(sha256=stored["sha256"], size=int(stored["size"])),
        discard_damaged=discard_damaged,
    )
    if isinstance(data, str):
        return None, False
    try:
        text = loads_json(data)
    except ValueError:
        return "has a stored result text that is not JSON", True
    verdict = document["result"]
    said = {
        "check_id": check.id,
        "expect": document["expect"],
        "status": verdict["status"],
        "score": verdict["score"],
        "observed_status": verdict["observed_status"],
    }
    if type(text) is not dict or any(text.get(name) != value for name, value in said.items()):
        return "has a stored result text that says another verdict", True
    return None, True


def text_is_for(
    *, stored: Mapping[str, Any], check: PlannedCheck, result: Mapping[str, Any]
) -> bool:
    """Whether an entry's stored text is this reuse's own, known without rendering it: written
    in this layout for this check file, with the verdict's own times (a reuse without them
    reports its own). The rest of the text comes from the entry (its check id already
    compared) and from the check's definition, which the key names."""
    return (
        stored.get("layout") == REUSE_LAYOUT
        and stored.get("source_path") == check.source_path
        and all(result.get(name) is not None for name in _TIMES)
    )


def place_result(
    *,
    store: BlobStore,
    checks_dir: str,
    check: PlannedCheck,
    result: CheckResult,
    document: dict[str, Any],
    text_read: bool,
    discard_damaged: bool,
) -> str | None:
    """Link checks/<stem>.json to the entry's copy of its text, if this reuse's text is
    that text; the digest of the bytes linked, or None when it did not. Creating a file costs
    many times a link on some file systems (0.6 ms against 0.02 ms measured here), and a hit
    otherwise creates one."""
    stored = document.get("result_file")
    if stored is None:
        return None
    blob = Blob(sha256=stored["sha256"], size=int(stored["size"]))
    if not text_is_for(stored=stored, check=check, result=document["result"]):
        data = result_json_text(result=result).encode("utf-8")
        if len(data) != blob.size or sha256_bytes(data=data) != blob.sha256:
            return None  # the check moved or reads differently: its file is written afresh
    problem = store.restore(
        blob=blob,
        target=f"{checks_dir}/{check.stem}.json",
        discard_damaged=discard_damaged,
        # Read whole and matched a moment ago (text_disagrees): not hashed a second time.
        checked=text_read,
    )
    return blob.sha256 if problem is None else None


def restore_files(
    *,
    store: BlobStore,
    checks_dir: str,
    check: PlannedCheck,
    files: Sequence[dict[str, Any]],
    discard_damaged: bool,
) -> str | None:
    for item in files:
        name = str(item["name"])
        if name.startswith("evidence/"):
            evidence = Path(checks_dir, check.stem)
            target = evidence / name[len("evidence/") :]
            if real_path(evidence) not in real_path(target).parents:
                return f"names a file outside the check's folder ({name})"
            target.parent.mkdir(parents=True, exist_ok=True)
            place = str(target)
        else:
            place = f"{checks_dir}/{check.stem}.{name}"
        problem = store.restore(
            blob=Blob(sha256=item["sha256"], size=int(item["size"])),
            target=place,
            discard_damaged=discard_damaged,
        )
        if problem is not None:
            return problem
    return None


def remove_outputs(*, checks_dir: Path, stem: str) -> None:
    """Remove what a reuse restored for a check: its files, its earlier attempts' and its
    evidence folder."""
    remove_check_outputs(checks_dir=checks_dir, stem=stem, names=(*CHECK_OUTPUT_NAMES, "json"))
    remove_attempt_files(checks_dir=str(checks_dir), stem=stem)
    shutil.rmtree(checks_dir / stem, ignore_errors=True)
