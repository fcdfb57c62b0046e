"""Storing the verdicts of a run's checks: a check that passed or failed gets an entry (and
the shared tier a copy at the run's end), one a refresh ran again without a verdict loses the
entry it had, and a verdict stored over another takes the kept runs with it."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.cache.components import KeyContext
from eval_banana.cache.keyedfiles import changed_since_keyed
from eval_banana.cache.ownwrites import OwnWrites
from eval_banana.cache.places import SlotTaken
from eval_banana.cache.store import CacheStore, drop_kept_runs
from eval_banana.cache.verdictentry import UnstorableName, entry_document
from eval_banana.cache.warn import Warn
from eval_banana.core.errors import ProjectStateError, WriteFault
from eval_banana.core.mac import SecretUnusable
from eval_banana.core.words import visible
from eval_banana.models.config import CacheMode
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import PlannedCheck
from eval_banana.projectstate.git import NotARepository

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
        # Artifact path -> its id when verdicts are stored; check stem -> the files its key was
        # taken from that changed during the run; the files a warning named (see _still_keyed).
        self._artifacts_now: dict[str, str] = {}
        self._changed: dict[str, list[str]] = {}
        self._told: set[str] = set()

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

    def confirm_keys(self, *, ran: Sequence[tuple[PlannedCheck, CheckResult]]) -> None:
        """Before the verdicts of `ran` are stored: read again, in one pass, what the keys of
        those to be stored were taken from (see cache/keyedfiles.py)."""
        self._read_again(checks=[check for check, result in ran if _storable(result=result)])

    def _read_again(self, *, checks: Sequence[PlannedCheck]) -> None:
        if self._context is None or not self.writes or self.discarded:
            return
        unread = [c for c in checks if c.stem in self._keys and c.stem not in self._changed]
        if not unread:
            return
        try:
            found = changed_since_keyed(
                context=self._context, checks=unread, artifacts_now=self._artifacts_now
            )
        except (ProjectStateError, NotARepository, OSError) as exc:
            # Unconfirmed keys may name other bytes than those judged: nothing is stored.
            why = exc.message if isinstance(exc, (ProjectStateError, NotARepository)) else str(exc)
            self._warn(
                message="The verdicts of this run are not stored in the cache: the files their "
                f"keys were taken from cannot be read again: {why}"
            )
            self.discard()
            return
        self._changed.update(found)

    def _still_keyed(self, *, check: PlannedCheck) -> bool:
        """Whether the files a check's key was taken from are still as the key took them: a
        check of the run (isolation `off`) may have rewritten its inputs, the project or the
        artifact it grades, and then the verdict is about other bytes than its key names. The
        run says so once per file."""
        if self._context is None:
            return True
        if check.stem not in self._changed:
            # Verdicts are stored once every check has ended, when nothing rewrites a file any
            # more; the caller reads them all at once first (confirm_keys).
            self._read_again(checks=[check])
        changed = self._changed.get(check.stem)
        if changed is None:
            return False  # could not be read again (said once)
        if not changed:
            return True
        first = changed[0]
        if first not in self._told:
            self._told.add(first)
            more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
            self._warn(
                message=f"The verdict of check '{check.id}' is not stored in the cache: "
                f"{visible(first)}{more} changed during this run, after its key was taken (a "
                "check of this run wrote it, or another process did), so the verdict is about "
                "other bytes than its key names",
                file=visible(first),
                hint="a later run keys the check on the files as they are then; a check that "
                "writes what other checks read is caught under [execution] isolation = "
                '"detect"',
            )
        return False

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
