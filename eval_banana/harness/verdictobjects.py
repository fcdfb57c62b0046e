"""Which of the objects a scan decodes are verdicts: `score` the JSON integer 0 or 1, `reason` a
string or null, neither key given twice. The hook that sees each object as a decode completes
it keeps the newest answer (a verdict, or a malformed one) and the newest object that is no
verdict at all (`Harvest`), and `scan_result` says what they come to.

A malformed verdict is one eb refuses that a looser reader (eval-banana's: Python equality,
the last of a repeated key) would have taken for 0 or 1: `true`, `1.0`, `"1"`, a key given
twice, a `reason` that is no string. It ends the search: an earlier or nested verdict standing
in for it could pass a judge whose last word was 0. An object whose score no reader takes for 0
or 1 (`2`, `"high"`) is skipped, and an earlier verdict counts."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from eval_banana.harness.overlong import Followers, unread_problem


class Verdict(NamedTuple):
    score: int
    reason: str | None


class ScanResult(NamedTuple):
    verdict: Verdict | None
    problem: str | None  # why nothing qualified; None when a verdict was found
    # The last answer was a malformed verdict: the judge answered, but not readably.
    malformed: bool = False


class Malformed(NamedTuple):
    """A refused object a looser reader would have taken for a verdict (see the module)."""

    obj: dict[str, Any]
    repeated: str | None  # the verdict key it names twice, if that is why


_NOT_A_VERDICT = "not a verdict"


def classify(obj: dict[str, Any]) -> Verdict | str:
    """A verdict, or that this object with a `score` key is not one (see `rejection`)."""
    score = obj["score"]
    # JSON integers only: true/false/1.0 are rejected (eval-banana also took them).
    if type(score) is not int or score not in (0, 1):
        return _NOT_A_VERDICT
    reason = obj.get("reason")
    if reason is not None and not isinstance(reason, str):
        return _NOT_A_VERDICT
    return Verdict(score=score, reason=reason)


# The keys a verdict is read from: an object that names one twice is no verdict (json would
# keep the last, so `{"score": 0, ..., "score": 1}` passed on a score the judge also denied).
_VERDICT_KEYS = ("score", "reason")


def _reads_loosely(value: object) -> bool:
    """Whether a reader comparing with `==` or converting a digit would take `value` for 0 or 1
    (`true`, `0.0`, `"1"`)."""
    if isinstance(value, str):
        return value.strip() in ("0", "1")
    return isinstance(value, (int, float)) and value in (0, 1)


def _loosely_a_verdict(pairs: list[tuple[str, Any]]) -> bool:
    """Whether any `score` an object gives (a repeated key gives several) reads as 0 or 1."""
    return any(key == "score" and _reads_loosely(value) for key, value in pairs)


def _repeated_verdict_key(pairs: list[tuple[str, Any]]) -> str | None:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen and key in _VERDICT_KEYS:
            return key
        seen.add(key)
    return None


def rejection(obj: dict[str, Any], *, repeated: str | None = None) -> str:
    """Why an object with a `score` key is not a verdict (worded only when it is reported)."""
    if repeated is not None:
        return f'"{repeated}" was given twice, so which one the judge meant is unknown'
    score = obj["score"]
    if type(score) is not int or score not in (0, 1):
        return f'"score" was {json.dumps(score, allow_nan=True)[:40]}, not the JSON integer 0 or 1'
    reason_type = type(obj.get("reason")).__name__
    return f'"reason" was {reason_type}, not a string or null'


class Harvest:
    """Object hook state: the newest answer (a valid or a malformed verdict) and the newest
    score object that is no verdict at all.

    `cursor` is where the decode being harvested ends (or failed), an upper bound of the closing
    brace of every object it completes; it orders what one window found against another's.
    """

    def __init__(self) -> None:
        # The newest object read as an answer: a verdict, or one refused that a looser reader
        # would have taken for one (it ends the search: nothing before it stands in).
        self.answer: Verdict | Malformed | None = None
        # The newest object with a score that is not a verdict; why, only if it is reported
        # (`repeated`: the verdict key it names twice).
        self.rejected: dict[str, Any] | None = None
        self.repeated: str | None = None
        self.cursor = 0
        self.answer_at = -1
        self.rejected_at = -1
        # Where candidates start whose decode ran into the end of the text, in order.
        self.cut_short: list[int] = []

    def hook(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if "score" in obj:
            repeated = None if len(obj) == len(pairs) else _repeated_verdict_key(pairs)
            outcome = classify(obj) if repeated is None else _NOT_A_VERDICT
            if isinstance(outcome, Verdict):
                self.answer, self.answer_at = outcome, self.cursor
                self.rejected = None
            elif _loosely_a_verdict(pairs):
                self.answer, self.answer_at = Malformed(obj=obj, repeated=repeated), self.cursor
                self.rejected = None
            else:
                self.rejected, self.repeated = obj, repeated
                self.rejected_at = self.cursor
        return obj

    def collect(self, *, text: str, start: int) -> bool:
        """Decode again from `start` with the hook on; False if it ran out of recursion depth.

        The outcome itself is already known; objects completed before an error were seen.
        """
        decoder = json.JSONDecoder(object_pairs_hook=self.hook)
        try:
            decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pass
        except RecursionError:
            return False
        return True


def _unread_last(*, harvest: Harvest, unread: Followers | None) -> str | None:
    """Why no verdict counts when an object too long to read may be the one that ends last."""
    last = None if unread is None else unread.last
    if unread is None or last is None or last.end <= harvest.answer_at:
        return None
    # With no answer at all, a rejected object ending after it still says more.
    if harvest.answer is None and last.end <= harvest.rejected_at:
        return None
    return unread_problem(found=last, reach=unread.reach)


def scan_result(harvest: Harvest, *, unread: Followers | None = None) -> ScanResult:
    problem = _unread_last(harvest=harvest, unread=unread)
    if problem is not None:
        return ScanResult(verdict=None, problem=problem)
    answer = harvest.answer
    if isinstance(answer, Verdict):
        return ScanResult(verdict=answer, problem=None)
    if answer is not None:
        why = rejection(answer.obj, repeated=answer.repeated)
        return ScanResult(
            verdict=None,
            problem=(
                f"the judge's last verdict is malformed: {why}; no earlier or nested object "
                "stands in for it"
            ),
            malformed=True,
        )
    if harvest.rejected is not None:
        why = rejection(harvest.rejected, repeated=harvest.repeated)
        return ScanResult(verdict=None, problem=f"the last object with a score was rejected: {why}")
    return ScanResult(verdict=None, problem='no JSON object with a "score" key was found')
