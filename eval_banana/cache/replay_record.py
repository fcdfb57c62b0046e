"""Keeping a fully cached run as a replay, once its folder is complete.

Only a run that reused every verdict and said nothing more (no warning, no abort) is kept: its
folder then follows from the replay key and the project state alone. The per-check files become
blobs as they are; each stage file and report becomes a blob with its slots, the places where
the run's own values stand. A file where a trace of those values is left outside every slot
(written in a form not looked for) keeps the whole run from being kept: a replay must never
show another run's id, folder or times.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.cache.replay_entry import REPLAY_KIND, REPLAY_SCHEMA
from eval_banana.cache.replay_key import input_scopes
from eval_banana.cache.slots import Needle, find_slots, slots_are_sound
from eval_banana.cache.store import CacheStore
from eval_banana.checks.inputs import CheckInputs
from eval_banana.core.version import tool_version
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import (
    ConfigDoc,
    DiscoverDoc,
    ExecuteDoc,
    GuardDoc,
    PlanDoc,
    ScoreDoc,
)
from eval_banana.runners.results import (
    folded_in_log,
    iso,
    progress_line,
    selected_family_sizes,
    shown_time,
    utc_now,
)
from eval_banana.stagefiles.layout import REPORT_HTML, REPORT_JSON, REPORT_MD, STAGE_FILES

# The files a replay writes with their slots filled, in the order it fills them: a stage file's
# digest is a slot of the files after it, and so are report.json's and report.md's, which
# stages/report.json records (so they come before it, as the report stage writes them).
TEMPLATED_STAGES = ("validate", "guard", "execute", "score")
# The report as `eb run --json` prints it: kept beside the files, never written as one.
JSON_LINE = "report.json-line"
REPORT_STAGE = f"stages/{STAGE_FILES['report']}"
TEMPLATE_NAMES = (
    *(f"stages/{STAGE_FILES[stage]}" for stage in TEMPLATED_STAGES),
    REPORT_JSON,
    REPORT_MD,
    REPORT_STAGE,
    REPORT_HTML,
    JSON_LINE,
)
# The reports whose digests stages/report.json records: slots `digest:report.json`, ...
DIGESTED_REPORTS = {REPORT_JSON: "report_json_sha256", REPORT_MD: "report_md_sha256"}
# The slot of the run's start as report.html shows it (runners.results.shown_time).
SHOWN_START = "started_at:shown"
# What else a run folder may hold for its run to be kept: the stage files every run, a replay
# too, writes for real, and the per-check files.
REAL_STAGES = ("config", "discover")
_REAL_NAMES = {f"stages/{STAGE_FILES[stage]}" for stage in REAL_STAGES}


class RunTaken(NamedTuple):
    """A finished run as the recorder needs it: its documents and folder."""

    config: ConfigDoc
    discovered: DiscoverDoc
    plan: PlanDoc
    guard: GuardDoc
    executed: ExecuteDoc
    scored: ScoreDoc
    run_dir: Path
    digests: dict[str, str]
    report: dict[str, Any]
    exit_code: int


def plain_path(path: str) -> bool:
    """Whether a folder's path reads the same in JSON, HTML and plain text (a replay writes
    one form of it in every file)."""
    # What html.escape changes, without importing html (and its entity table) on every replay.
    return json.dumps(path, ensure_ascii=False, allow_nan=False)[1:-1] == path and not any(
        char in path for char in "&<>\"'"
    )


def fully_cached(*, run: RunTaken) -> bool:
    """Whether every check's verdict was reused and the run said nothing beyond its results."""
    results = run.executed.results
    return (
        run.exit_code in (0, 1)
        and len(results) == len(run.plan.checks) > 0
        and all(result.details.get("cache", {}).get("hit") is True for result in results)
        and not run.guard.warnings
        and not run.executed.warnings
        and run.scored.aborted_by is None
        and run.scored.halted_by is None
        and plain_path(str(run.run_dir))
    )


def _run_files(*, run_dir: Path) -> tuple[list[str], list[str]] | None:
    """The folders and plain files of a run folder (relative POSIX paths), or None when it holds
    anything a replay would not bring back (a link, a file of an unknown kind)."""
    folders: list[str] = []
    files: list[str] = []
    stack = [""]
    while stack:
        relative = stack.pop()
        with os.scandir(run_dir / relative if relative else run_dir) as entries:
            for entry in entries:
                name = f"{relative}/{entry.name}" if relative else entry.name
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    folders.append(name)
                    stack.append(name)
                elif stat.S_ISREG(mode):
                    files.append(name)
                else:
                    return None
    return sorted(folders), sorted(files)


def _is_stage_file(name: str) -> bool:
    """A file directly in stages/ (its snapshots/ folder holds frozen scripts, plain files)."""
    return name.startswith("stages/") and name.count("/") == 1


def _times(*, run: RunTaken, report_stage: Mapping[str, Any]) -> dict[str, str]:
    """Slot name -> the run's value, for its times (the first name wins for a shared value)."""
    named = {
        "created_at:config": run.config.created_at,
        "created_at:run": run.config.run_created_at or "",
        "created_at:discover": run.discovered.created_at,
        "created_at:validate": run.plan.created_at,
        "created_at:guard": run.guard.created_at,
        "created_at:execute": run.executed.created_at,
        "created_at:score": run.scored.created_at,
        "created_at:report": str(report_stage.get("created_at", "")),
        "started_at": run.executed.started_at,
        "completed_at": run.executed.completed_at,
    }
    return {name: value for name, value in named.items() if value}


def _report_digests(*, report_stage: Mapping[str, Any]) -> dict[str, str]:
    """Slot name -> the digest stages/report.json records of each report it describes."""
    digests = {
        f"digest:{name}": report_stage.get(field) for name, field in DIGESTED_REPORTS.items()
    }
    return {name: value for name, value in digests.items() if isinstance(value, str) and value}


def _needles(
    *, run: RunTaken, times: dict[str, str], report_digests: dict[str, str]
) -> list[Needle]:
    run_id = run.config.run_id
    needles = [
        Needle(value=str(run.run_dir).encode(), name="run_dir"),
        Needle(value=run_id.encode(), name="run_id"),
    ]
    needles += [
        Needle(value=digest.encode(), name=f"digest:{stage}")
        for stage, digest in run.digests.items()
        if stage in ("config", "discover", "validate", "guard", "execute", "score")
    ]
    needles += [Needle(value=value.encode(), name=name) for name, value in report_digests.items()]
    seen: set[str] = set()
    for name, value in times.items():
        if value not in seen:
            seen.add(value)
            needles.append(Needle(value=value.encode(), name=name))
    # report.html shows the start to the second, not as stored.
    shown = shown_time(run.executed.started_at)
    if shown != run.executed.started_at:
        needles.append(Needle(value=shown.encode(), name=SHOWN_START, prefix=b"<dd>"))
    duration = str(run.report.get("duration_ms", "")).encode()
    completed = run.executed.completed_at.encode()
    for prefix, suffix in (
        (b'\n  "duration_ms": ', b","),  # report.json's own, not a check's (indented deeper)
        (b'\n  "duration_ms": ', b"\n"),
        (completed + b'", "duration_ms": ', b","),  # the --json line's, after the run's end
        (b"<dt>Duration</dt><dd>", b" ms</dd>"),
    ):
        needles.append(Needle(value=duration, name="duration_ms", prefix=prefix, suffix=suffix))
    return needles


def _forbidden(
    *, run: RunTaken, times: dict[str, str], report_digests: dict[str, str]
) -> list[bytes]:
    """Traces of the run's own values that no literal text may hold: its id, the id's random
    part, its times without their zone, and its stage files' and reports' digests."""
    run_id = run.config.run_id
    traces = [run_id, run_id.rsplit("_", 1)[-1]]
    traces += [value.removesuffix("Z").removesuffix("+00:00") for value in times.values()]
    traces.append(shown_time(run.executed.started_at).removesuffix(" UTC"))
    digests = [*run.digests.values(), *report_digests.values()]
    traces += [digest.removeprefix("sha256:") for digest in digests]
    return [trace.encode() for trace in traces if trace]


def _templates(*, run: RunTaken, store: CacheStore) -> list[dict[str, Any]] | None:
    report_stage = json.loads((run.run_dir / REPORT_STAGE).read_bytes())
    times = _times(run=run, report_stage=report_stage)
    report_digests = _report_digests(report_stage=report_stage)
    needles = _needles(run=run, times=times, report_digests=report_digests)
    forbidden = _forbidden(run=run, times=times, report_digests=report_digests)
    templates: list[dict[str, Any]] = []
    for name in TEMPLATE_NAMES:
        path = run.run_dir / name
        if name == JSON_LINE:
            data = json.dumps(run.report, ensure_ascii=False, allow_nan=False).encode("utf-8")
        elif path.is_file():
            data = path.read_bytes()
        else:
            continue
        slots = find_slots(data=data, needles=needles)
        if not slots_are_sound(data=data, slots=slots, forbidden=forbidden):
            return None
        blob = store.put_bytes(data=data)
        templates.append(
            {
                "name": name,
                "sha256": blob.sha256,
                "size": blob.size,
                "slots": [slot._asdict() for slot in slots],
            }
        )
    return templates


def _folded(*, plan: PlanDoc, results: Sequence[CheckResult]) -> list[int]:
    """The positions of the progress lines the run's log folded into counts: a replay folds
    the same ones."""
    sizes = selected_family_sizes(checks=plan.checks)
    family = {check.id: check.family for check in plan.checks}
    return [
        position
        for position, result in enumerate(results)
        if folded_in_log(result=result, family_size=sizes.get(family.get(result.check_id) or "", 0))
    ]


def record_replay(
    *,
    run: RunTaken,
    key: str,
    store: CacheStore,
    inputs: CheckInputs,
    watched: Sequence[tuple[str, str | None]],
    datasets: Sequence[Mapping[str, Any]] = (),
) -> bool:
    """Keep `run` as the replay of `key`, when it can be; whether it was kept.

    `inputs` is the reader the verdict keys were computed with (its digests are the state the
    verdicts are valid for); `watched`, the files the plan read, as they were before it ran;
    `datasets`, the families' `cases_from` and the files each named then.
    """
    if not fully_cached(run=run):
        return False
    counts = run.executed.cache
    if counts is not None and (counts.remote_requests or counts.remote_hits):
        # Its report counts traffic with the shared cache, which a replay has none of: the
        # next run, answered from the local folder alone, is kept instead.
        return False
    listed = _run_files(run_dir=run.run_dir)
    if listed is None:
        return False
    folders, names = listed
    kept = set(TEMPLATE_NAMES) | _REAL_NAMES
    if any(name.count("/") == 0 or _is_stage_file(name) for name in names if name not in kept):
        return False  # a file of the run folder a replay would not write (a JUnit file, ...)
    templates = _templates(run=run, store=store)
    if templates is None:
        return False
    files = []
    for name in names:
        if name not in kept:
            # A copy where the cache lacks one, never a link to the run's own file: a reused
            # file is one already, and the run folder's other files stay its own.
            blob = store.put(source=run.run_dir / name, link=False)
            files.append({"name": name, "sha256": blob.sha256, "size": blob.size})
    whole, declared = input_scopes(checks=run.plan.checks)
    document = {
        "$schema": REPLAY_SCHEMA,
        "schema_version": 1,
        "kind": REPLAY_KIND,
        "key": key,
        "tool_version": tool_version(),
        "from_run_id": run.config.run_id,
        "stored_at": iso(utc_now()),
        "exit_code": run.exit_code,
        "whole_project": inputs.digest(inputs=None) if whole else None,
        "declared": [
            {"patterns": list(patterns), "digest": inputs.digest(inputs=patterns)}
            for patterns in sorted(declared)
        ],
        "watched": [{"path": path, "blob": blob} for path, blob in watched],
        "datasets": [dict(item) for item in datasets],
        "verdict_keys": [result.details["cache"]["key"] for result in run.executed.results],
        "folders": [name for name in folders if name not in ("stages", "checks")],
        "files": files,
        "templates": templates,
        "progress": [
            progress_line(check_id=result.check_id, result=result)
            for result in run.executed.results
        ],
        "folded": _folded(plan=run.plan, results=run.executed.results),
    }
    store.write_replay(key=key, document=document)
    return True
