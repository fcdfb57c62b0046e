"""One run's use of the verdict cache; the execute stage drives it.

Before checks start: compute every key (the project state is read once) and answer hits by
restoring the stored verdict and output files into the run folder (`lookup`; a forked child
answers the back half of a long run's lookups, `lookahead`); a stored verdict is reused only
when its MAC holds and everything it says agrees. After a check that ran: store its verdict
when it passed or failed, and remember the digest of what was written (`recording`). At the
end: drop every entry that changed while checks ran unless eb wrote it so (a check, a judge or
anything else may have written it), then evict down to the size limit (`finishing`). The
shared tier's part is in `remotewiring`. The session keeps the run's state and hands each
part what it needs.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from eval_banana.cache.components import KeyContext, check_components
from eval_banana.cache.finishing import discard_written, fetched_locally, finish_run
from eval_banana.cache.key import verdict_key
from eval_banana.cache.lookahead import LookAhead
from eval_banana.cache.lookup import Hit, look_up_entry
from eval_banana.cache.ownwrites import OwnWrites
from eval_banana.cache.recording import VerdictRecorder
from eval_banana.cache.remotewiring import (
    cache_counts,
    keep_fetched,
    open_remote,
    prefetch,
    release_fetched,
)
from eval_banana.cache.store import CacheStore
from eval_banana.checks.inputs import CheckInputs, artifact_ids
from eval_banana.core.errors import ProjectStateError
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
from eval_banana.settings.folders import cache_dir, cache_settings
from eval_banana.settings.table import variable_of

_MIB = 1024 * 1024


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
        self.keys: dict[str, str] = {}
        # What this run wrote and what changed without it.
        self._own = OwnWrites(store=self.store)
        self._said: set[str] = set()
        # Checks a forked child is answering (look_ahead), and its answers once taken.
        self._ahead = LookAhead(
            own=self._own, warnings=self.warnings, warn=self._warn, checks_dir=run_dir / "checks"
        )
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
        context: KeyContext | None
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
        except (ProjectStateError, NotARepository, OSError) as exc:
            message = exc.message if isinstance(exc, ProjectStateError) else str(exc)
            self._warn(message=f"The verdict cache is off for this run: {message}")
            context = None
        # What this run stores, and whether it was found compromised.
        self._recorder = VerdictRecorder(
            store=self.store,
            remote=self.remote,
            own=self._own,
            keys=self.keys,
            context=context,
            mode=self.mode,
            writes=self.writes,
            run_id=self.run_id,
            run_dir=run_dir,
            lock=self._lock,
            warn=self._warn,
        )

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
            prefetch(remote=self.remote, keys=self.keys, checks=keyed, stop=stop, warn=self._warn)
        if self.reads:
            self._ahead.start(keyed=keyed, look_up=self._look_up)

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

    def settle(self, *, checks_dir: Path) -> None:
        """After the last lookup: wait for the forked child, and take back what it restored
        for checks no lookup reached (the run stopped first)."""
        self._ahead.settle(checks_dir=checks_dir)

    def lookup(self, *, check: PlannedCheck) -> Hit | None:
        """The stored verdict of `check`, restored into the run folder; None on a miss."""
        return self._count(check=check, hit=self._ahead.lookup(check=check, look_up=self._look_up))

    def _look_up(self, *, check: PlannedCheck) -> Hit | None:
        key = self.keys.get(check.stem)
        if key is None or not self.reads:
            return None
        return look_up_entry(
            config=self._config,
            check=check,
            key=key,
            store=self._store_of(key=key),
            local=self.store,
            own=self._own,
            checks_dir=self._checks_dir,
            mode=self.mode,
            warn=self._warn,
        )

    def _store_of(self, *, key: str) -> CacheStore:
        """Where the entry of `key` is read from: the local folder, or where this run holds
        what it fetched while another run's checks executed with that folder."""
        held = self.remote.held.store_of(key=key) if self.remote is not None else None
        return held or self.store

    @property
    def fetched_locally(self) -> bool:
        """Whether this run fetched entries from the shared cache (they count against the
        local folder's size limit)."""
        return fetched_locally(remote=self.remote)

    @property
    def holds_fetched(self) -> bool:
        """Whether this run holds entries it fetched outside the local folder."""
        return self.remote is not None and bool(self.remote.held.entries)

    def keep_fetched(self) -> None:
        """Keep in the local folder what this run fetched while another run's checks executed
        with it; the caller holds the cache's turn."""
        keep_fetched(remote=self.remote, store=self.store, own=self._own, warn=self._warn)

    def release_fetched(self) -> int:
        """Forget what this run holds of the shared cache without keeping it; how many
        entries that was."""
        return release_fetched(remote=self.remote)

    # -- storing ---------------------------------------------------------------------------

    def confirm_keys(self, *, ran: Sequence[tuple[PlannedCheck, CheckResult]]) -> None:
        """Before the verdicts of `ran` are stored: read again, once for all of them, the files
        their keys were taken from (see `VerdictRecorder.confirm_keys`)."""
        self._recorder.confirm_keys(ran=ran)

    def record(
        self, *, check: PlannedCheck, result: CheckResult, store: bool = True, turn: bool = True
    ) -> CheckResult:
        """Store a verdict that ran (see `VerdictRecorder.record`); return it with
        `details.cache`."""
        return self._recorder.record(check=check, result=result, store=store, turn=turn)

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

    def discard_written(self) -> list[Path]:
        """Drop every entry this run wrote and every entry changed while its checks ran, and
        store nothing more: the run was found compromised (something it started wrote eb's
        state), so nothing stored during it is trusted. The paths dropped."""
        return discard_written(recorder=self._recorder, own=self._own, store=self.store)

    def finish(self, *, aborted: bool = False, interrupt: threading.Event | None = None) -> None:
        """Drop what changed without eb while checks ran; then keep the cache folder within
        its size limit (only when this run stored or fetched something). `aborted`: the run
        stopped (an interrupt, a fuse, a file it could not write), so every entry it stored goes
        too and nothing it judged is reused (blobs go with the next eviction). `interrupt`: once
        set, the uploads to the shared cache stop and are not waited for."""
        finish_run(
            aborted=aborted,
            recorder=self._recorder,
            own=self._own,
            store=self.store,
            remote=self.remote,
            writes=self.writes,
            warn=self._warn,
            interrupt=interrupt,
        )


def _keys(*, checks: Sequence[PlannedCheck], context: KeyContext) -> dict[str, str]:
    keys: dict[str, str] = {}
    for check in checks:
        components = check_components(check=check, context=context)
        if components is not None:
            keys[check.stem] = verdict_key(components=components)
    return keys
