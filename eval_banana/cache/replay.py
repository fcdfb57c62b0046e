"""Replaying a fully cached run: the run folder rebuilt from a replay, no check file parsed.

A run whose every verdict is reused writes the same files as the last such run with the same
replay key (`replay_key`) over the same project state, but for its own id, folder, times and
the digests that chain its stage files. Such a run is kept (`replay_record`); the next one
checks that the state still holds, links the per-check files from the cache (in a forked child
where that pays), writes the stage files and reports with its own values in their slots, and is
done: no validation, no verdict keys, no lookups. Anything amiss (a damaged or missing blob, a
verdict entry no longer stored, a Ctrl-C) leaves the run folder as it found it and the run goes
the ordinary way, which stores a sound replay again.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.cache.blobs import Blob, Identity
from eval_banana.cache.replay_entry import ReplayEntry, bulk_problem, head_problem
from eval_banana.cache.replay_key import datasets_hold, scope_reader, watched_ids
from eval_banana.cache.replay_record import (
    DIGESTED_REPORTS,
    JSON_LINE,
    REAL_STAGES,
    SHOWN_START,
    TEMPLATE_NAMES,
    plain_path,
)
from eval_banana.cache.slots import Slot, filled_parts
from eval_banana.cache.store import CacheStore
from eval_banana.core import forked
from eval_banana.core.errors import ProjectStateError
from eval_banana.core.files import sha256_parts, write_parts_atomic
from eval_banana.core.readback import loads_json
from eval_banana.models.stages import ConfigDoc, DiscoverDoc, ScoreDoc
from eval_banana.projectstate.git import NotARepository
from eval_banana.runners.results import elapsed_ms, iso, shown_time, utc_now
from eval_banana.stagefiles.layout import (
    REPORT_HTML,
    REPORT_JSON,
    REPORT_MD,
    STAGE_FILES,
    created_now,
)
from eval_banana.stagefiles.verdict import replayed_verdict

# From this many files on, a forked child links them while this process fills the templates.
PLACE_FORK_FILES = 200
# The child's share of the files (numerator, denominator). This process also checks the state
# and writes the stage files and reports meanwhile, but a link costs the child more (it copies
# each page it touches): on a 1,000-case judge family (4,000 files) half each ended first, a
# median 219 ms a replay against 231 ms with three quarters to the child.
CHILD_SHARE = (1, 2)
_STAGE_OF = {f"stages/{STAGE_FILES[stage]}": stage for stage in STAGE_FILES}
_RESERVED = frozenset(TEMPLATE_NAMES) | frozenset(_STAGE_OF)
_SCORE = f"stages/{STAGE_FILES['score']}"
# The texts a replayed run reports from, kept past their writing (the rest are let go at once).
_KEPT = frozenset({REPORT_JSON, REPORT_MD, JSON_LINE, _SCORE})


class Replayed(NamedTuple):
    """A replayed run, as `eb run` reports it (report.json is parsed only when asked for)."""

    load_report: Callable[[], dict[str, Any]]
    json_line: str | None  # None: not asked for (the run prints no JSON line)
    report_md: str
    score: ScoreDoc
    exit_code: int
    digests: dict[str, str]
    progress: list[str]
    folded: list[int]
    html: bool  # report.html was brought: asked for, and kept with the run
    from_run_id: str
    # The files the kept run's plan read beside its check files (scripts, datasets,
    # artifacts), as they read now: a report named like none of them overwrites nothing.
    watched: list[str]


class Attempt(NamedTuple):
    """A replay, or None (the run goes the ordinary way) with the warning to show, if any."""

    replayed: Replayed | None
    warning: str | None = None


class _Bulk(NamedTuple):
    """A replay's per-check files ({name, sha256, size} items) and the verdict keys it needs."""

    files: list[Any]
    verdict_keys: list[Any]


class _Run(NamedTuple):
    config: ConfigDoc
    discovered: DiscoverDoc
    run_dir: Path
    digests: dict[str, str]
    store: CacheStore
    writes: bool  # cache mode `on`: mark what is used, drop what is damaged
    contents: Mapping[str, bytes]
    json_line: bool  # the run prints its report as one JSON line: fill the kept one
    html: bool  # the run asked for report.html: bring the kept one, if any


def replay_run(
    *,
    config: ConfigDoc,
    discovered: DiscoverDoc,
    run_dir: Path,
    digests: dict[str, str],
    key: str,
    cancel: threading.Event,
    contents: Mapping[str, bytes] | None = None,
    json_line: bool = False,
    html: bool = True,
) -> Attempt:
    """Replay the run kept under `key` into `run_dir` (config.json and discover.json written);
    `contents`: the check files' bytes as discovery read them; `json_line`: the run prints its
    report as one JSON line (the kept one is brought too); `html`: the run asks for
    report.html (the kept one is brought, when the kept run wrote one)."""
    from eval_banana.settings.folders import cache_dir

    if not plain_path(str(run_dir)):
        return Attempt(replayed=None)
    store = CacheStore(folder=cache_dir(config=config), max_bytes=0)
    found = store.read_replay(key=key)
    document, problem = found.document, found.problem
    if document is None and problem is None:
        return Attempt(replayed=None)
    if problem is None:
        problem = head_problem(document)  # the per-check items: checked by whoever brings them
    if problem is None and document["key"] != key:
        problem = "belongs to another key (a foreign entry)"
    if problem is not None:
        return Attempt(replayed=None, warning=_warning(store=store, key=key, problem=problem))
    # The per-check files stay plain items: as records, 3,000 of them cost 6 ms.
    bulk = _Bulk(files=document.get("files", []), verdict_keys=document.get("verdict_keys", []))
    entry = ReplayEntry.model_validate({**document, "files": [], "verdict_keys": []})
    run = _Run(
        config=config,
        discovered=discovered,
        run_dir=run_dir,
        digests=dict(digests),
        store=store,
        writes=config.settings.cache.mode == "on",
        contents=contents or {},
        json_line=json_line,
        html=html,
    )
    return _replay(run=run, entry=entry, bulk=bulk, key=key, cancel=cancel)


def _warning(*, store: CacheStore, key: str, problem: str) -> str:
    path = store.replay_path(key=key)
    return f"Run replay {path} {problem}; the run went the usual way"


def _state_holds(*, run: _Run, entry: ReplayEntry) -> bool:
    """Whether the project's files are as they were for the kept run: its input states and
    the files its families' `cases_from` name (the files its plan read: `_watched_hold`)."""
    reader = scope_reader(
        config=run.config,
        whole=entry.whole_project is not None,
        declared=[item.patterns for item in entry.declared],
        known=run.contents,
    )
    try:
        if entry.whole_project is not None and reader.digest(inputs=None) != entry.whole_project:
            return False
        for item in entry.declared:
            if reader.digest(inputs=tuple(item.patterns)) != item.digest:
                return False
    except (ProjectStateError, NotARepository, OSError):
        return False  # the ordinary way says why, once, as it does for the verdict keys
    return datasets_hold(config=run.config, datasets=entry.datasets)


def _watched_hold(*, entry: ReplayEntry) -> bool:
    """Whether the files the kept run's plan read (its check files, scripts and datasets)
    read the same now."""
    now = watched_ids(paths=[item.path for item in entry.watched])
    return now == [(item.path, item.blob) for item in entry.watched]


def _replay(
    *, run: _Run, entry: ReplayEntry, bulk: _Bulk, key: str, cancel: threading.Event
) -> Attempt:
    """Bring the files (the most of them in a forked child, where that pays) while this process
    checks the state and writes the stage files and reports, then brings the rest; a state that
    no longer holds takes it all back."""
    # The run after an edit (a dataset row, a script) is told by a few small files: known
    # before any file is brought, such a replay costs no fork and leaves nothing to take back.
    if not _watched_hold(entry=entry):
        return Attempt(replayed=None)
    opened = created_now()
    started = utc_now()
    for folder in entry.folders:
        (run.run_dir / folder).mkdir(parents=True, exist_ok=True)
    files = bulk.files
    fork = forked.worth_forking(items=len(files), threshold=PLACE_FORK_FILES)
    split = len(files) * CHILD_SHARE[0] // CHILD_SHARE[1] if fork else len(files)
    placing = forked.start(
        work=lambda: _place(run=run, files=files[:split], verdict_keys=bulk.verdict_keys),
        fork=fork,
    )
    try:
        if not _state_holds(run=run, entry=entry):
            placing.abandon()
            _clear(run_dir=run.run_dir)
            return Attempt(replayed=None)
        kept = _write_filled(run=run, entry=entry, opened=opened, started=started)
        problem = (
            kept if isinstance(kept, str) else _place(run=run, files=files[split:], verdict_keys=[])
        )
        try:
            problem = placing.finish() or problem
        except forked.ForkedWorkStopped:
            problem = problem or "could not bring the check files (stopped)"
    except BaseException:
        placing.abandon()
        _clear(run_dir=run.run_dir)
        raise
    outcome = None
    if problem is None and not isinstance(kept, str):
        outcome = _outcome(run=run, entry=entry, kept=kept)
        problem = outcome if isinstance(outcome, str) else None
    if problem is not None or cancel.is_set() or not isinstance(outcome, Replayed):
        _clear(run_dir=run.run_dir)  # a Ctrl-C: the usual way stops the run and reports it
        warning = None if problem is None else _warning(store=run.store, key=key, problem=problem)
        return Attempt(replayed=None, warning=warning)
    if run.writes:
        with contextlib.suppress(OSError):
            os.utime(run.store.replay_path(key=key))
    return Attempt(replayed=outcome)


def _exit_code(*, run: _Run, entry: ReplayEntry, score: ScoreDoc) -> int | str:
    """The replayed run's exit code, derived from its score under this run's settings (the
    record's own number only has to agree with it); or what disagrees."""
    core = run.config.settings.core
    passed = replayed_verdict(
        score=score, threshold=core.pass_threshold, fail_on_flaky=core.fail_on_flaky
    )
    if isinstance(passed, str):
        return passed
    derived = 0 if passed else 1
    if entry.exit_code != derived:
        return f"says exit code {entry.exit_code}, but its score says {derived}"
    return derived


def _outcome(*, run: _Run, entry: ReplayEntry, kept: dict[str, bytes]) -> Replayed | str:
    """The replayed run as it is reported, or what in the kept texts disagrees."""
    report_text = kept[REPORT_JSON]
    try:
        # Bounded in depth, as every document read back (a forged blob can be any JSON).
        score = ScoreDoc.model_validate(loads_json(kept[_SCORE]))
    except ValueError:
        return "has a score.json that is no score document"
    exit_code = _exit_code(run=run, entry=entry, score=score)
    if isinstance(exit_code, str):
        return exit_code
    passed = (b"false", b"true")[exit_code == 0]
    for name in (REPORT_JSON, JSON_LINE):  # the JSON line is kept only for a run printing it
        if name in kept and _run_passed_text(text=kept[name]) != passed:
            return f"has a {name} whose run_passed disagrees with its score"

    @functools.cache
    def load_report() -> dict[str, Any]:
        return dict(json.loads(report_text))

    return Replayed(
        load_report=load_report,
        json_line=kept[JSON_LINE].decode("utf-8") if JSON_LINE in kept else None,
        report_md=kept[REPORT_MD].decode("utf-8"),
        score=score,
        exit_code=exit_code,
        digests=run.digests,
        progress=list(entry.progress),
        folded=list(entry.folded),
        html=run.html and any(template.name == REPORT_HTML for template in entry.templates),
        from_run_id=entry.from_run_id,
        watched=[item.path for item in entry.watched],
    )


def _place(*, run: _Run, files: list[Any], verdict_keys: list[Any]) -> str | None:
    """Check and mark `verdict_keys`, then link `files` into the run folder from the cache;
    the problem, or None. Every verdict entry the kept run reused must still be stored: a
    replay is never the only thing left of a verdict the cache let go."""
    problem = bulk_problem(files=files, verdict_keys=verdict_keys)
    if problem is not None:
        return problem
    store = run.store
    for verdict in verdict_keys:
        if not store.mark_used(key=verdict, touch=run.writes):
            return f"needs verdict entry {verdict}, which is no longer stored"
    base = str(run.run_dir)
    seen: dict[str, Identity] = {}  # a blob many cases share is read once, not once a case
    for item in files:
        name = item["name"]
        if name in _RESERVED:
            return f"names a stage file or report as a plain file ({name})"
        problem = store.restore(
            blob=Blob(sha256=item["sha256"], size=item["size"]),
            target=f"{base}/{name}",
            discard_damaged=run.writes,
            renew=run.writes,  # a replay runs no check
            seen=seen,
        )
        if problem is not None:
            return f"cannot bring {name}: {problem}"
    return None


def _write_filled(
    *, run: _Run, entry: ReplayEntry, opened: str, started: datetime
) -> dict[str, bytes] | str:
    """Write each template with this run's values in its slots, in order (a stage file's digest
    is a value of the files after it), one at a time; return the texts the run reports from
    (`_KEPT`), or the problem. The plan and the guard are dated `opened`, when the replay
    began, before its execution `started`."""
    names = [template.name for template in entry.templates]
    if [name for name in TEMPLATE_NAMES if name in names] != names or not set(names) >= _KEPT:
        return "does not hold the stage files and reports in order"
    encoded = _run_values(run=run, opened=opened, started=started)
    kept: dict[str, bytes] = {}
    for template in entry.templates:
        if template.name == JSON_LINE and not run.json_line:
            continue  # printed only by --json: 15 % of the bytes to check and fill, for nothing
        if template.name == REPORT_HTML and not run.html:
            continue  # --no-html: the page is shown by no one
        stage = _STAGE_OF.get(template.name)
        if stage in ("execute", "score", "report"):
            encoded[f"created_at:{stage}"] = created_now().encode()
        data = run.store.read_blob(
            blob=Blob(sha256=template.sha256, size=template.size), discard_damaged=run.writes
        )
        if isinstance(data, str):
            return f"cannot bring {template.name}: {data}"
        slots = [Slot(offset=s.offset, length=s.length, name=s.name) for s in template.slots]
        if not _slots_fit(slots=slots, size=len(data)) or any(
            slot.name not in encoded for slot in slots
        ):
            return f"has slots that do not fit {template.name}"
        # Joined only when it is kept: the others are written and hashed part by part.
        parts = filled_parts(data=data, slots=slots, values=encoded)
        text = b"".join(parts) if template.name in _KEPT else None
        filled: list[bytes | memoryview] = parts if text is None else [text]
        if stage is not None and stage != "report":  # report.json is no stage's input
            run.digests[stage] = sha256_parts(parts=filled)
            encoded[f"digest:{stage}"] = run.digests[stage].encode()
        if template.name != JSON_LINE:
            write_parts_atomic(path=run.run_dir / template.name, parts=filled)
        if template.name in DIGESTED_REPORTS:
            # stages/report.json, filled next, records the report as written here.
            encoded[f"digest:{template.name}"] = sha256_parts(parts=filled).encode()
        if text is not None:
            kept[template.name] = text
    return kept


def _run_passed_text(*, text: bytes) -> bytes:
    """The value of a report's own `run_passed`, read without parsing it: its first such key
    (the run's totals come before its checks, and no string holds an unescaped quote)."""
    key = b'"run_passed": '
    found = text.find(key)
    start = found + len(key)
    for value in (b"true", b"false") if found >= 0 else ():
        end = start + len(value)
        if text.startswith(value, start) and text[end : end + 1] == b",":
            return value
    return b""


def _run_values(*, run: _Run, opened: str, started: datetime) -> dict[str, bytes]:
    """The slot values known before any template is filled: this run's own, and its times."""
    config = run.config
    completed = utc_now()
    values = {
        "run_id": config.run_id,
        "run_dir": str(run.run_dir),
        "digest:config": run.digests["config"],
        "digest:discover": run.digests["discover"],
        "created_at:config": config.created_at,
        "created_at:run": config.run_created_at or config.created_at,
        "created_at:discover": run.discovered.created_at,
        "created_at:validate": opened,
        "created_at:guard": opened,
        "started_at": iso(started),
        SHOWN_START: shown_time(iso(started)),
        "completed_at": iso(completed),
        "duration_ms": str(elapsed_ms(started=started, completed=completed)),
    }
    return {name: value.encode("utf-8") for name, value in values.items()}


def _slots_fit(*, slots: list[Slot], size: int) -> bool:
    end = 0
    for slot in slots:
        if slot.offset < end:
            return False
        end = slot.offset + slot.length
    return end <= size


def _clear(*, run_dir: Path) -> None:
    """Take back what a replay brought: everything but the stage files written for real."""
    real = {STAGE_FILES[stage] for stage in REAL_STAGES}
    for folder, keep in ((run_dir, {"stages"}), (run_dir / "stages", real)):
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name in keep:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
    (run_dir / "checks").mkdir(exist_ok=True)
