"""A cached run's look-ahead: a forked child answers the back half of the lookups while eb
answers the front half, and sends back its answers, its warnings and the entries it reused."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from eval_banana.cache.lookup import Hit
from eval_banana.cache.ownwrites import OwnWrites, Verdict
from eval_banana.cache.reuse import remove_outputs
from eval_banana.cache.warn import Warn
from eval_banana.core import forked
from eval_banana.models.stages import PlannedCheck, ProblemModel

# From this many keyed checks on, a forked child answers the back half of them while this
# process answers the front half: a reuse is mostly small file operations, which a second
# process overlaps and a thread would not (each waits for the interpreter lock).
LOOK_AHEAD_FORK_CHECKS = 200


class LookUp(Protocol):
    """The stored verdict of one check, looked up in this process (or in the child)."""

    def __call__(self, *, check: PlannedCheck) -> Hit | None:
        """The stored verdict of `check`, restored into the run folder; None on a miss."""


class _Answers(NamedTuple):
    """What a forked child sends back: its lookups by check stem, its warnings, and the
    entries it reused (path -> verdict), which this run keeps however they are rewritten
    meanwhile, as long as they say the same verdict."""

    hits: dict[str, Hit | None]
    warnings: list[ProblemModel]
    reused: dict[str, Verdict]


class LookAhead:
    """The checks a forked child is answering, and its answers once taken."""

    def __init__(
        self, *, own: OwnWrites, warnings: list[ProblemModel], warn: Warn, checks_dir: Path
    ) -> None:
        """`warnings`: the run's, which `warn` adds to (the child sends back those it added)."""
        self._own = own
        self._warnings = warnings
        self._warn = warn
        self._checks_dir = checks_dir
        self._ahead: forked.Pending[_Answers] | None = None
        self._ahead_stems: set[str] = set()
        # None: the answers were lost with the child, so those checks are looked up here.
        self._ahead_hits: dict[str, Hit | None] | None = {}

    def start(self, *, keyed: Sequence[PlannedCheck], look_up: LookUp) -> None:
        """Have a forked child answer the back half of `keyed` meanwhile, when that pays."""
        if not forked.worth_forking(items=len(keyed), threshold=LOOK_AHEAD_FORK_CHECKS):
            return
        back = keyed[len(keyed) // 2 :]
        self._ahead_stems = {check.stem for check in back}
        self._ahead = forked.start(
            work=lambda: self._answer(checks=back, look_up=look_up), fork=True
        )

    def _answer(self, *, checks: Sequence[PlannedCheck], look_up: LookUp) -> _Answers:
        before = len(self._warnings)
        hits = {check.stem: look_up(check=check) for check in checks}
        return _Answers(
            hits=hits, warnings=self._warnings[before:], reused=self._own.known_verdicts()
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

    def lookup(self, *, check: PlannedCheck, look_up: LookUp) -> Hit | None:
        """The child's answer for `check` when it has one, else `look_up`'s."""
        if check.stem in self._ahead_stems:
            self._ahead_stems.discard(check.stem)
            try:
                self._take_ahead()
            except BaseException:
                remove_outputs(checks_dir=self._checks_dir, stem=check.stem)
                raise
            if self._ahead_hits is not None:
                return self._ahead_hits.pop(check.stem, None)
        return look_up(check=check)
