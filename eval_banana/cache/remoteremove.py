"""Removing from the shared tier the entries of verdicts a refresh dropped locally, so that the
next runner with an empty local cache does not fetch them."""

from __future__ import annotations

from typing import Literal

from eval_banana.cache.places import hex_of
from eval_banana.cache.remotenotes import HINT_REMOVALS
from eval_banana.cache.remotestate import TierState
from eval_banana.core.words import plural
from eval_banana.remote.backend import RemoteError, SinkRefused
from eval_banana.remote.signing import SIGNING_KEY_VARIABLE

RemoveOutcome = Literal["removed", "absent", "guarded", "failed"]


class TierRemoving(TierState):
    """The remote entries of verdicts a refresh dropped, removed at the run's end."""

    def drop(self, *, key: str, check_id: str) -> None:
        """A verdict from before a refresh went locally: its remote entry goes at
        `remove_dropped`, or the next runner with an empty local cache would fetch it."""
        if self.writes:
            with self._lock:
                self._dropped[key] = check_id

    def remove_dropped(self) -> None:
        """Remove the remote entries `drop` named, except those this run stores anew,
        `remote_concurrency` at once; a failure is counted, never raised."""
        with self._lock:
            dropped, self._dropped = self._dropped, {}
            storing = {key for key, _ in self._queued}
        chosen = sorted(item for item in dropped.items() if item[0] not in storing)
        guarded = self._each_guarded(
            work=lambda item: self._remove_unless_guarded(key=item[0], check_id=item[1]),
            items=chosen,
            asked="removals",
        )
        if guarded:
            self._warn(
                f"{plural(count=guarded, noun='verdict')} from before this refresh "
                f"{'was' if guarded == 1 else 'were'} left in the shared cache "
                f"{self.remote.url}: it holds {'it' if guarded == 1 else 'each'} signed with a "
                f"key this run cannot verify (another {SIGNING_KEY_VARIABLE}, or none set "
                "here), and a run never removes one (docs/shared-cache.md)",
                None,
                HINT_REMOVALS,
            )

    def _remove_unless_guarded(self, *, key: str, check_id: str) -> RemoveOutcome:
        """Remove one remote entry, read first: one sealed with a signature this run cannot
        verify stays, as it would were this run writing over it."""
        name = hex_of(key)
        try:
            data = self.remote.get(kind="ac", name=name)
        except RemoteError:
            return "failed"  # counted; nothing is removed blind
        except SinkRefused:
            data = b""  # larger than any entry: damaged, no runner's verdict
        if data is None:
            return "absent"
        if self._sealed_by_another(data=data, key=key, check_id=check_id):
            return "guarded"
        try:
            self.remote.delete(kind="ac", name=name)
        except RemoteError:
            return "failed"  # counted
        return "removed"
