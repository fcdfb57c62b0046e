"""Storing the verdicts of a run's checks: a check that passed or failed gets an entry (and
the shared tier a copy at the run's end), one a refresh ran again without a verdict loses the
entry it had, and a verdict stored over another takes the kept runs with it."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.cache.components import KeyContext
from eval_banana.cache.ownwrites import OwnWrites
from eval_banana.cache.places import SlotTaken
from eval_banana.cache.store import CacheStore, drop_kept_runs
from eval_banana.cache.verdictentry import UnstorableName, entry_document
from eval_banana.cache.warn import Warn
from eval_banana.checks.inputs import artifact_id, artifact_of
from eval_banana.core.errors import WriteFault
from eval_banana.core.mac import SecretUnusable
from eval_banana.core.words import visible
from eval_banana.models.config import CacheMode
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import PlannedCheck

if TYPE_CHECKING:
    from eval_banana.cache.remotetier import RemoteTier


class VerdictRecorder:
    """A run's stores into the cache; whether it stored any, and whether it may store more."""

    def __init__(
        self,
        *,
        store: CacheStore,
        remote: RemoteTier | None,
        own: OwnWrites,
        keys: Mapping[str, str],
        context: KeyContext | None,
        mode: CacheMode,
        writes: bool,
        run_id: str,
        run_dir: Path,
        lock: threading.Lock,
        warn: Warn,
    ) -> None:
        """`keys`: the run's verdict keys by check stem; `context`: what they were computed
        from (None: the cache is off for the run); `lock`: the session's."""
        self.store = store
        self.remote = remote
        self._own = own
        self._keys = keys
        self._context = context
        self.mode = mode
        self.writes = writes
        self.run_id = run_id
        self.run_dir = run_dir
        self._lock = lock
        self._warn = warn
        # Whether a verdict was stored; whether the run was found compromised (nothing more is).
        self.stored = False
        self.discarded = False
        self._replaced = False
        # Artifact path -> its id when verdicts are stored (see _still_keyed).
        self._artifacts_now: dict[str, str] = {}

    def discard(self) -> None:
        """Store nothing more, nor keep what a store under way writes."""
        with self._lock:
            self.discarded = True

    def record(
        self, *, check: PlannedCheck, result: CheckResult, store: bool = True, turn: bool = True
    ) -> CheckResult:
        """Store a verdict that ran (passed or failed only; `store` False: none, as when eb's
        state changed during the run); return it with `details.cache`. `turn`: whether this
        run holds the cache's turn to change it (no other run's checks execute with it)."""
        key = self._keys.get(check.stem)
        if key is None:
            return result
        stored = False
        if (
            store
            and self.writes
            and _storable(result=result)
            and not self.discarded
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
            except UnstorableName as exc:
                # The check ran and its verdict stands; only the cache cannot keep it.
                self._warn(
                    message=f"Cannot store the verdict of check '{check.id}' in the cache: {exc}",
                    file=visible(str(exc.path)),
                    hint="Give the files the check writes UTF-8 names: until then, the check "
                    "runs every time",
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
            if self.discarded:  # found compromised while this check ran: never kept
                self.store.drop(path=Path(path))
                return False
            self._own.wrote(path=path, digest=digest, document=document)
            self.stored = True
        if self.remote is not None:
            self.remote.queue(key=key, document=document)
        return True

    def _forget(self, *, key: str, check_id: str) -> None:
        """`--cache refresh` ran a check again and stored no verdict for it (an error, a stop,
        eb's state written meanwhile): the verdict from before the refresh goes, and with it
        every kept run (a replay would bring it back), so the next run judges the check. The
        shared cache's entry goes too (at the run's end), whether or not this folder held one:
        a runner starting empty would fetch it from there."""
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


def _storable(*, result: CheckResult) -> bool:
    """Only verdicts: never an error, a stopped check or one that did not run."""
    observed = result.observed_status or result.status
    return result.status in ("passed", "failed") and observed in ("passed", "failed")
