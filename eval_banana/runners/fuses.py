"""Run-level fuses: judge-token and judge-cost budgets, a wall-clock limit.

A fuse never judges a check: when one trips it only stops the run through the StopSignal, so
no new check starts, running ones are ended and the unrun ones are recorded as not run.
"""

from __future__ import annotations

import threading
from types import TracebackType

from eval_banana.harness.usage import MOST_DOLLARS, unreadable_usage, usage_cost, usage_tokens
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import AbortReason, ProblemModel
from eval_banana.runners.results import StopSignal


class RunFuses:
    """The fuses of one execution; `report_tokens` and `report_cost` are runner callbacks.

    A budget or limit of 0 means that fuse is off. The token fuse trips when the reported
    total reaches the budget, the cost fuse likewise for the dollars judges reported; the run
    timer trips `run_timeout_s` after `start()`.
    """

    def __init__(
        self,
        *,
        stop: StopSignal,
        token_budget: int,
        run_timeout_s: float,
        cost_budget_usd: float = 0.0,
    ) -> None:
        self.stop = stop
        self.token_budget = token_budget
        self.cost_budget_usd = cost_budget_usd
        self.run_timeout_s = run_timeout_s
        self._lock = threading.Lock()
        self._tokens: int | None = None
        self._cost: float | None = None
        self._timer: threading.Timer | None = None
        self.tripped: AbortReason | None = None

    @property
    def tokens_used(self) -> int | None:
        """Tokens judges reported so far; None while no judge has reported any."""
        with self._lock:
            return self._tokens

    def report_tokens(self, tokens: int) -> None:
        """Add what one judge reported (thread-safe); trip the token fuse at the budget."""
        if tokens < 0:
            return  # never let a bogus report lower the count
        with self._lock:
            self._tokens = (self._tokens or 0) + tokens
            total = self._tokens
        if self.token_budget > 0 and total >= self.token_budget:
            self._trip(reason="token_fuse")

    @property
    def cost_usd(self) -> float | None:
        """Dollars judges reported so far; None while no judge has reported any."""
        with self._lock:
            return self._cost

    def report_cost(self, cost_usd: float) -> None:
        """Add the dollars one judge reported (thread-safe); trip the cost fuse at the budget."""
        if not cost_usd >= 0:
            return  # negative or NaN: never let a bogus report lower the count
        with self._lock:
            self._cost = (self._cost or 0.0) + cost_usd
            total = self._cost
        if self.cost_budget_usd > 0 and total >= self.cost_budget_usd:
            self._trip(reason="cost_fuse")

    def _trip(self, *, reason: AbortReason) -> None:
        with self._lock:
            if self.stop.is_set():
                return  # an earlier stop (interrupt or the other fuse) keeps its reason
            self.tripped = reason
        self.stop.stop(reason=reason)

    def start(self) -> None:
        """Start the run timer (if any)."""
        if self.run_timeout_s <= 0 or self._timer is not None:
            return
        timer = threading.Timer(self.run_timeout_s, self._trip, kwargs={"reason": "run_timeout"})
        timer.daemon = True  # a forgotten timer must never keep the process alive
        timer.name = "eb-run-timeout"
        self._timer = timer
        timer.start()

    def close(self) -> None:
        """Stop the run timer; a run that already finished can no longer time out."""
        if self._timer is not None:
            self._timer.cancel()

    def __enter__(self) -> RunFuses:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def unseen_usage_warnings(
    *, results: list[CheckResult], token_fuse: bool, cost_fuse: bool
) -> list[ProblemModel]:
    """Judges whose agent ran and reported usage eb could not read (said always: no total
    holds it), and, while a fuse is set, those whose tokens or cost that fuse could not count.
    A fuse never trips on what it cannot see (docs/fail-closed.md#fuses): the run says so."""
    warnings: list[ProblemModel] = []
    for result in results:
        details = result.details
        if result.check_type != "harness_judge" or details.get("raw_response_path") is None:
            continue  # no agent process ran for this check
        if (details.get("cache") or {}).get("hit"):
            continue  # a reused verdict: no agent ran in this run
        found = details.get("usage")
        usage = found if isinstance(found, dict) else None
        unreadable = unreadable_usage(usage)
        told_cost = unreadable.pop("total_cost_usd", None)
        if told_cost is not None or (cost_fuse and usage_cost(usage) is None):
            warnings.append(_cost_warning(result=result, told=told_cost, fuse=cost_fuse))
        if unreadable or (token_fuse and usage_tokens(usage) is None):
            warnings.append(_token_warning(result=result, told=unreadable, fuse=token_fuse))
    return warnings


def _cost_warning(*, result: CheckResult, told: str | None, fuse: bool) -> ProblemModel:
    """A judge whose cost no total and no cost fuse holds: it reported none, or `told`, which
    is no amount of dollars."""
    name = f"Judge check '{result.check_id}'"
    if told is None:
        return ProblemModel(
            message=f"{name} reported no cost; the cost fuse could not count it",
            file=result.source_path,
            hint="Use an agent whose output reports its cost (claude), or rely on "
            "[harness] token_fuse or [core] run_timeout_seconds as the budget.",
        )
    return ProblemModel(
        message=f"{name} reported total_cost_usd {told}, which is no amount of dollars (a "
        f"JSON number from 0 to {MOST_DOLLARS:g}): no total holds its cost"
        + ("; the cost fuse could not count it" if fuse else ""),
        file=result.source_path,
        hint="Have the agent write total_cost_usd as a JSON number of dollars"
        + ("; until then, rely on [core] run_timeout_seconds as the budget." if fuse else "."),
    )


def _token_warning(*, result: CheckResult, told: dict[str, str], fuse: bool) -> ProblemModel:
    """A judge whose tokens no total and no token fuse holds: it reported none, or `told`
    (field -> as written), which are no counts."""
    name = f"Judge check '{result.check_id}'"
    hint = (
        "Use an agent whose output reports usage (claude, gemini, codex), "
        "or rely on [core] run_timeout_seconds as the budget."
    )
    if not told:
        return ProblemModel(
            message=f"{name} reported no token usage; the token fuse could not count it",
            file=result.source_path,
            hint=hint,
        )
    shown = ", ".join(f"{field} {value}" for field, value in told.items())
    return ProblemModel(
        message=f"{name} reported token usage that is no count (a JSON whole number, 0 or "
        f"more): {shown}; no total holds its tokens"
        + ("; the token fuse could not count it" if fuse else ""),
        file=result.source_path,
        hint=hint,
    )
