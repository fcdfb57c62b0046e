"""One run's use of the verdict cache; the execute stage drives it.

Before checks start: compute every key (the project state is read once) and answer hits by
restoring the stored verdict and output files into the run folder; a stored verdict is reused
only when its MAC holds and everything it says agrees. After a check that ran: store its
verdict when it passed or failed, and remember the digest of what was written. At the end: drop
every entry that changed while checks ran unless eb wrote it so (a check, a judge or anything
else may have written it), then evict down to the size limit.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.cache.components import KeyContext, check_components
from eval_banana.cache.entry import entry_problem
from eval_banana.cache.key import verdict_key
from eval_banana.cache.mac import SecretUnusable
from eval_banana.cache.namedfiles import unheld_path
from eval_banana.cache.ownwrites import OwnWrites, Verdict
from eval_banana.cache.places import SlotTaken
from eval_banana.cache.remotewiring import cache_counts, open_remote
from eval_banana.cache.reuse import (
    disagreement,
    isolated_as_strictly,
    place_result,
    remove_outputs,
    restore_files,
    restored,
    text_disagrees,
)
from eval_banana.cache.store import CacheStore, drop_kept_runs
from eval_banana.cache.verdictentry import entry_document
from eval_banana.checks.inputs import CheckInputs, artifact_id, artifact_ids, artifact_of
from eval_banana.core import forked
from eval_banana.core.errors import EvalBananaError, ProjectStateError, WriteFault
from eval_banana.harness.prompt import judge_prompt
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import (
    CacheCounts,
    ConfigDoc,
    PlanDoc,
    PlannedCheck,
    ProblemModel,
    ResolvedHarness,
)
from eval_banana.projectstate.git import NotARepository
from eval_banana.runners.results import utc_now
from eval_banana.settings.folders import cache_dir, cache_settings
from eval_banana.settings.table import variable_of

_MIB = 1024 * 1024
_REMOTE_HINT = (
    "the check ran as on a miss; the run's report counts what the shared cache did "
    "(docs/shared-cache.md)"
)
# From this many keyed checks on, a forked child answers the back half of them while this
# process answers the front half: a reuse is mostly small file operations, which a second
# process overlaps and a thread would not (each waits for the interpreter lock).
LOOK_AHEAD_FORK_CHECKS = 200


class Hit(NamedTuple):
    """A reused verdict, and whether checks/<stem>.json is already in place (linked)."""

    result: CheckResult
    result_file_placed: bool


class _Answers(NamedTuple):
    """What a forked child sends back: its lookups by check stem, its warnings, and the
    entries it reused (path -> verdict), which this run keeps however they are rewritten
    meanwhile, as long as they say the same verdict."""

    hits: dict[str, Hit | None]
    warnings: list[ProblemModel]
    reused: dict[str, Verdict]


class CacheSession:
    """The cache as one run sees it: keys by check stem, hits, stores and warnings."""

    def __init__(
        self,
        *,
        config: ConfigDoc,
        plan: PlanDoc,
        harness: ResolvedHarness | None,
        run_dir: Path,
        environ: Mapping[str, str],
        inputs: CheckInputs | None = None,
        artifacts: Mapping[str, str] | None = None,
    ) -> None:
        """`inputs`: the reader of the checks' input states, when the caller keeps it (a run
        kept as a replay records the states its keys were computed from); `artifacts`: the
        assertions checks' artifact ids, when the caller has them (execute records them)."""
        settings = config.settings
        self._config = config
        self.mode = settings.cache.mode
        self.run_id = plan.run_id
        self.run_dir = run_dir
        self._checks_dir = str(run_dir / "checks")
        self.store = CacheStore(
            folder=cache_dir(config=config), max_bytes=settings.cache.max_mb * _MIB
        )
        self.warnings: list[ProblemModel] = []
        self._lock = threading.Lock()
        self._stored = False
        self._replaced = False
        self.keys: dict[str, str] = {}
        self._context: KeyContext | None = None
        # Artifact path -> its id when verdicts are stored (see _still_keyed).
        self._artifacts_now: dict[str, str] = {}
        # Checks a forked child is answering (look_ahead), and its answers once taken (None:
        # lost with the child, so they are looked up here).
        self._ahead: forked.Pending[_Answers] | None = None
        self._ahead_stems: set[str] = set()
        self._ahead_hits: dict[str, Hit | None] | None = {}
        # What this run wrote and what changed without it; whether it was found compromised.
        self._own = OwnWrites(store=self.store)
        self._discarded = False
        self._said: set[str] = set()
        # What the lookups found, by tier (counted where a lookup is answered, in this process).
        self._hits = {"local": 0, "remote": 0, "miss": 0}
        self.remote_mode = settings.cache.remote_mode if settings.cache.remote else None
        self.remote = open_remote(
            settings=cache_settings(config=config),
            store=self.store,
            reads=self.reads,
            local_writes=self.writes,
            environ=environ,
            source=config.config_file or variable_of("cache.remote"),
            warn=lambda message, file, hint: self._warn(message=message, file=file, hint=hint),
        )
        try:
            context = KeyContext(
                settings=settings,
                project_root=Path(config.project_root),
                harness=harness,
                inputs=inputs
                if inputs is not None
                else CheckInputs(config=config, definitions=[c.definition for c in plan.checks]),
                environ=environ,
                artifacts=artifacts
                if artifacts is not None
                else artifact_ids(checks=plan.checks, project_root=Path(config.project_root)),
            )
            self.keys = _keys(checks=plan.checks, context=context)
            self._context = context
        except (ProjectStateError, NotARepository, OSError) as exc:
            message = exc.message if isinstance(exc, ProjectStateError) else str(exc)
            self._warn(message=f"The verdict cache is off for this run: {message}")

    @property
    def reads(self) -> bool:
        return self.mode in ("on", "read-only")

    @property
    def writes(self) -> bool:
        return self.mode in ("on", "refresh")

    def _warn(self, *, message: str, file: str | None = None, hint: str | None = None) -> None:
        with self._lock:
            if message in self._said:
                return  # said once (a problem of the whole cache, or met again by the child)
            self._said.add(message)
            self.warnings.append(
                ProblemModel(
                    message=message,
                    file=file,
                    hint=hint
                    or "the check ran again; a later run stores a fresh entry "
                    "(remove the cache folder to start over)",
                )
            )

    # -- reuse -----------------------------------------------------------------------------

    def look_ahead(self, *, checks: Sequence[PlannedCheck], stop: threading.Event) -> None:
        """Have a forked child answer the back half of `checks` meanwhile, when that pays.

        `lookup` still answers every check in order: it takes the child's answer when it gets
        to one. Call `settle` after the last lookup. `stop` (an interrupt) ends the fetching
        from a shared cache.
        """
        keyed = [check for check in checks if check.stem in self.keys]
        if self.remote is not None and self.reads:
            # Fetched before any lookup (and before the fork): the lookups read the folder.
            self._prefetch(checks=keyed, stop=stop)
        if not self.reads or not forked.worth_forking(
            items=len(keyed), threshold=LOOK_AHEAD_FORK_CHECKS
        ):
            return
        back = keyed[len(keyed) // 2 :]
        self._ahead_stems = {check.stem for check in back}
        self._ahead = forked.start(work=lambda: self._answer(checks=back), fork=True)

    def _prefetch(self, *, checks: Sequence[PlannedCheck], stop: threading.Event) -> None:
        assert self.remote is not None
        try:
            self.remote.prefetch(
                wanted={self.keys[check.stem]: check.id for check in checks}, stop=stop
            )
        except (OSError, EvalBananaError) as exc:
            # The local folder could not take what was fetched: those checks run as on a miss.
            message = exc.message if isinstance(exc, EvalBananaError) else str(exc)
            self._warn(
                message=f"Entries of the shared cache could not be kept locally: {message}",
                hint=_REMOTE_HINT,
            )

    def counts(self) -> CacheCounts:
        """What the cache did in this run so far."""
        return cache_counts(hits=self._hits, remote=self.remote, remote_mode=self.remote_mode)

    def _count(self, *, check: PlannedCheck, hit: Hit | None) -> Hit | None:
        key = self.keys.get(check.stem)
        if key is None or not self.reads:
            return hit
        if hit is None:
            tier = "miss"
        elif self.remote is not None and key in self.remote.fetched:
            tier = "remote"
        else:
            tier = "local"
        with self._lock:
            self._hits[tier] += 1
        return hit

    def _answer(self, *, checks: Sequence[PlannedCheck]) -> _Answers:
        before = len(self.warnings)
        hits = {check.stem: self._look_up(check=check) for check in checks}
        return _Answers(
            hits=hits, warnings=self.warnings[before:], reused=self._own.known_verdicts()
        )

    def _take_ahead(self) -> None:
        """The child's answers, waited for once. A child ended by a signal (Ctrl-C reaches
        eb's whole process group) or an interrupt while waiting leaves no answers: those
        checks are looked up here, as if it had never been forked."""
        if self._ahead is None:
            return
        pending, self._ahead = self._ahead, None
        self._ahead_hits = None
        try:
            answers = pending.finish()
        except forked.ForkedWorkStopped:
            return
        self._ahead_hits = answers.hits
        self._own.reused_elsewhere(verdicts=answers.reused)
        for warning in answers.warnings:
            self._warn(message=warning.message, file=warning.file)

    def settle(self, *, checks_dir: Path) -> None:
        """After the last lookup: wait for the child, and take back what it restored for
        checks no lookup reached (the run stopped first), so they leave no reused files."""
        try:
            self._take_ahead()
        finally:
            for stem in self._ahead_stems:
                remove_outputs(checks_dir=checks_dir, stem=stem)
            self._ahead_stems = set()
            self._ahead_hits = {}

    def lookup(self, *, check: PlannedCheck) -> Hit | None:
        """The stored verdict of `check`, restored into the run folder; None on a miss."""
        return self._count(check=check, hit=self._lookup(check=check))

    def _lookup(self, *, check: PlannedCheck) -> Hit | None:
        if check.stem in self._ahead_stems:
            self._ahead_stems.discard(check.stem)
            try:
                self._take_ahead()
            except BaseException:
                remove_outputs(checks_dir=self.run_dir / "checks", stem=check.stem)
                raise
            if self._ahead_hits is not None:
                return self._ahead_hits.pop(check.stem, None)
        return self._look_up(check=check)

    def _look_up(self, *, check: PlannedCheck) -> Hit | None:
        key = self.keys.get(check.stem)
        if key is None or not self.reads:
            return None
        started = utc_now()
        store = self._store_of(key=key)
        found = store.read(key=key)
        problem = found.problem
        if problem is None and found.document is None:
            return None  # nothing stored yet: an ordinary miss
        if found.unverifiable:
            self._warn(
                message=f"Cache entries in {store.folder} {problem}; they count as misses",
                file=str(store.folder),
            )
            return None
        document = found.document
        if problem is None:
            problem = entry_problem(document)
        if problem is None and (document["key"] != key or document["check_id"] != check.id):
            problem = "belongs to another key (a foreign entry)"
        if problem is None and not isolated_as_strictly(
            config=self._config, check=check, document=document
        ):
            return None  # this run would have refused what that run let through: judge it
        text_read = False
        if problem is None:
            problem = disagreement(check=check, document=document)
        if problem is None:
            problem, text_read = text_disagrees(
                store=store,
                check=check,
                document=document,
                discard_damaged=self.mode == "on",
            )
        if problem is None:
            problem = _unheld_problem(check=check, document=document)
        if problem is None:
            problem = restore_files(
                store=store,
                checks_dir=self._checks_dir,
                check=check,
                files=document.get("files", []),
                discard_damaged=self.mode == "on",
            )
        if problem is not None:
            path = store.entry_path(key=key)
            self._warn(
                message=f"Cache entry {path} for check '{check.id}' {problem}; it counts as a miss",
                file=str(path),
            )
            return None
        if check.type == "harness_judge" and not any(
            item["name"] == "prompt.txt" for item in document.get("files", [])
        ):
            # The run folder keeps what a judge was asked, exactly as a fresh run writes it.
            prompt_path = f"{self._checks_dir}/{check.stem}.prompt.txt"
            try:
                with open(prompt_path, "wb") as handle:
                    handle.write(judge_prompt(check=check).encode("utf-8"))
            except OSError as exc:
                raise WriteFault.of(path=prompt_path, exc=exc) from None
        if self.mode == "on" and store is self.store:
            self.store.touch(key=key)
        self._own.reused(path=self.store.entry_file(key=key), document=document)
        result = restored(check=check, document=document, key=key, started=started)
        placed = place_result(
            store=store,
            checks_dir=self._checks_dir,
            check=check,
            result=result,
            document=document,
            text_read=text_read,
            discard_damaged=self.mode == "on",
        )
        return Hit(result=result, result_file_placed=placed)

    def _store_of(self, *, key: str) -> CacheStore:
        """Where the entry of `key` is read from: the local folder, or where this run holds
        what it fetched while another run's checks executed with that folder."""
        held = self.remote.held.store_of(key=key) if self.remote is not None else None
        return held or self.store

    @property
    def holds_fetched(self) -> bool:
        """Whether this run holds entries it fetched outside the local folder."""
        return self.remote is not None and bool(self.remote.held.entries)

    def keep_fetched(self) -> None:
        """Keep in the local folder what this run fetched while another run's checks executed
        with it; the caller holds the cache's turn. Each is this run's own write from here on
        (`finish` keeps it, and nothing else may change it unseen)."""
        if self.remote is None or not self.remote.held.entries:
            return
        try:
            self.remote.held.keep(
                into=self.store,
                kept=lambda path, digest, document: self._own.wrote(
                    path=path, digest=digest, document=document
                ),
            )
        except OSError as exc:
            # Only a copy went: this run reused them all the same, and a later run fetches
            # them again.
            self._warn(
                message="Entries fetched from the shared cache could not be kept in "
                f"{self.store.folder}: {exc.strerror or exc}",
                file=str(self.store.folder),
                hint="this run reused them; a later run fetches them again",
            )

    def release_fetched(self) -> int:
        """Forget what this run holds of the shared cache without keeping it (it had no turn
        at the local folder); how many entries that was."""
        if self.remote is None:
            return 0
        count = len(self.remote.held.entries)
        self.remote.held.release()
        return count

    # -- storing ---------------------------------------------------------------------------

    def record(
        self, *, check: PlannedCheck, result: CheckResult, store: bool = True, turn: bool = True
    ) -> CheckResult:
        """Store a verdict that ran (passed or failed only; `store` False: none, as when eb's
        state changed during the run); return it with `details.cache`. `turn`: whether this
        run holds the cache's turn to change it (no other run's checks execute with it)."""
        key = self.keys.get(check.stem)
        if key is None:
            return result
        stored = False
        if (
            store
            and self.writes
            and _storable(result=result)
            and not self._discarded
            and self._still_keyed(check=check)
        ):
            try:
                stored = self._store(check=check, result=result, key=key)
            except SecretUnusable as exc:
                # The cache's own key is unusable (readable by others, damaged): a setup
                # problem the warning names, not a fault of the machine; nothing is stored.
                self._warn(
                    message=f"Cannot store the verdict of check '{check.id}' in the cache: {exc}",
                    file=str(self.store.folder),
                )
            except SlotTaken as exc:
                # A folder where an entry or blob goes: damaged content, this verdict unstored.
                self._warn(
                    message=f"Cannot store the verdict of check '{check.id}' in the cache: {exc}",
                    file=str(exc.path),
                    hint="eb deletes nothing in the cache it did not write: until that is "
                    "removed, the check runs every time",
                )
            except OSError as exc:
                # A cache folder eb cannot write is a fault like any other: the run aborts.
                cause = exc.strerror or str(exc)
                raise WriteFault(path=str(self.store.folder), cause=cause) from None
        if not stored and self.mode == "refresh" and turn:
            self._forget(key=key, check_id=check.id)
        details = {**result.details, "cache": {"hit": False, "key": key, "stored": stored}}
        return result.model_copy(update={"details": details})

    def _still_keyed(self, *, check: PlannedCheck) -> bool:
        """Whether the file a check's key read on its own is still as the key took it: an
        assertions artifact another check wrote meanwhile was graded, not the one keyed (the
        rest of a key is read from the run's input state, which checks do not change)."""
        if check.type != "assertions" or self._context is None:
            return True
        artifact = artifact_of(check)
        now = self._artifacts_now.get(artifact)
        if now is None:
            # Verdicts are stored once every check has ended, when nothing rewrites an
            # artifact any more: each is read once for all the cases that grade it.
            now = artifact_id(artifact=artifact, project_root=self._context.project_root)
            self._artifacts_now[artifact] = now
        return now == self._context.artifacts[check.id]

    def _store(self, *, check: PlannedCheck, result: CheckResult, key: str) -> bool:
        """Store a verdict; whether it was kept (never once the run was found compromised)."""
        document = entry_document(
            store=self.store,
            check=check,
            result=result,
            key=key,
            run_id=self.run_id,
            checks_dir=self.run_dir / "checks",
        )
        if self.store.mark_used(key=key, touch=False):
            self._replacing()
        path = str(self.store.entry_path(key=key))
        digest = self.store.write(key=key, document=document)
        with self._lock:
            if self._discarded:  # found compromised while this check ran: never kept
                self.store.drop(path=Path(path))
                return False
            self._own.wrote(path=path, digest=digest, document=document)
            self._stored = True
        if self.remote is not None:
            self.remote.queue(key=key, document=document)
        return True

    def _forget(self, *, key: str, check_id: str) -> None:
        """`--cache refresh` ran a check again and stored no verdict for it (an error, a stop,
        eb's state written meanwhile): the verdict from before the refresh goes, and with it
        every kept run (a replay would bring it back), so the next run judges the check. The
        shared cache's entry goes too (at `finish`), whether or not this folder held one: a
        runner starting empty would fetch it from there."""
        if self.remote is not None:
            self.remote.drop(key=key, check_id=check_id)
        if not self.store.mark_used(key=key, touch=False):
            return
        self._replacing()
        self.store.drop(path=self.store.entry_path(key=key))

    def _replacing(self) -> None:
        """A verdict is stored over another (--cache refresh, an entry that was damaged): the
        kept runs go first, once a run, for a replay would bring back the verdict replaced."""
        with self._lock:
            if self._replaced:
                return
            self._replaced = True
            drop_kept_runs(folder=self.store.folder / "runs")

    # -- what changed without eb -------------------------------------------------------------

    def remember_state(self) -> None:
        """Note every entry's state as the first check starts: whatever changes from here on,
        eb drops at `finish` unless it wrote that itself."""
        if self.writes or self.reads:
            self._own.remember_state(writes=self.writes)

    def checks_watched(self, *, writes_told: bool) -> None:
        """What the watch on eb's files while the checks ran could tell: whether the kernel
        told every write (then a file whose times alone changed was only marked as used, by
        another eb run reusing it)."""
        self._own.writes_told(told=writes_told)

    def _drop_changed(self) -> None:
        for path in self._own.changed():
            if self.store.drop(path=Path(path)):
                self._warn(
                    message=f"Cache file {path} changed during this run and is not what this "
                    "run wrote there (a check, a judge, another eb run storing into this cache "
                    "or another process wrote it); it was dropped",
                    file=path,
                )

    def discard_written(self) -> list[Path]:
        """Drop every entry this run wrote and every entry changed while its checks ran, and
        store nothing more: the run was found compromised (something it started wrote eb's
        state), so nothing stored during it is trusted. The paths dropped."""
        with self._lock:
            self._discarded = True
        paths = sorted(set(self._own.forget_written()) | set(self._own.changed()))
        return [Path(path) for path in paths if self.store.drop(path=Path(path))]

    def finish(self, *, aborted: bool = False) -> None:
        """Drop what changed without eb while checks ran; then keep the cache folder within
        its size limit (only when this run stored something). `aborted`: the run stopped (an
        interrupt, a fuse, a file it could not write), so every entry it stored goes too and
        nothing it judged is reused (blobs go with the next eviction)."""
        if aborted:
            self.release_fetched()
            self.discard_written()
            self._remove_dropped()
            return
        if not self._discarded:
            self._drop_changed()
        self._remove_dropped()
        if self.remote is not None and not self._discarded:
            # Only what is still this run's own entry goes to the shared cache.
            self.remote.upload(
                keep=lambda key: self._own.still_written(path=self.store.entry_file(key=key))
            )
        if self._stored and self.writes:
            self.store.evict()

    def _remove_dropped(self) -> None:
        """The shared entries of the verdicts a refresh dropped go, before this run's new ones
        go up: removing only ever makes a runner judge again, so even a run that aborted or was
        found compromised removes them."""
        if self.remote is not None:
            self.remote.remove_dropped()


def _keys(*, checks: Sequence[PlannedCheck], context: KeyContext) -> dict[str, str]:
    keys: dict[str, str] = {}
    for check in checks:
        components = check_components(check=check, context=context)
        if components is not None:
            keys[check.stem] = verdict_key(components=components)
    return keys


def _storable(*, result: CheckResult) -> bool:
    """Only verdicts: never an error, a stopped check or one that did not run."""
    observed = result.observed_status or result.status
    return result.status in ("passed", "failed") and observed in ("passed", "failed")


def _unheld_problem(*, check: PlannedCheck, document: Mapping[str, Any]) -> str | None:
    """Why an entry cannot leave the run folder as complete as a fresh run: its result names a
    file it does not hold (an earlier attempt's, from an eb that kept only the last one)."""
    path = unheld_path(
        stem=check.stem,
        details=document["result"].get("details") or {},
        held=(item["name"] for item in document.get("files", [])),
    )
    return None if path is None else f"does not hold {path}, which its result names"
