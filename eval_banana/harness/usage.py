"""Tokens a judge reported about itself, read per dialect as docs/agents.md describes them."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval_banana.core.digits import grouped_whole

# codex prints `tokens used` and then the blended total, e.g. `12,480` (older builds: same line).
_CODEX_LABEL = re.compile(r"^tokens used\b\W*(.*)$", re.IGNORECASE)


def reported_count(value: object) -> int | None:
    """A token count the agent reported: a JSON whole number, 0 or more; None for anything else."""
    return value if type(value) is int and value >= 0 else None


# The most dollars one report can hold: no agent call costs a billion dollars, and amounts up
# to this add up, however many there are, to a finite float (1e308 twice is an infinity, which
# no JSON file can hold).
MOST_DOLLARS = 1e9


def reported_cost(value: object) -> float | None:
    """A dollar amount the agent reported (or eb recorded): a JSON number from 0 to
    MOST_DOLLARS; None for anything else (a string, NaN, an infinity, a negative amount, an
    amount past the ceiling)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        amount = float(value)
    except OverflowError:  # a whole number beyond any float: no amount of dollars
        return None
    return amount if 0 <= amount <= MOST_DOLLARS else None


# How much of a value eb could not read a warning quotes.
_QUOTED_CHARS = 40


def as_written(value: object) -> str:
    """A reported value eb could not read, as the agent wrote it (JSON text, cut short)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _QUOTED_CHARS else f"{text[:_QUOTED_CHARS]}…"


def _claude(event: dict[str, Any]) -> dict[str, Any] | None:
    """The tokens and the cost of a result event, each kept when it reads, whatever the other
    does. A field the agent wrote that does not read is kept as written under `unreadable`
    (null is no report), so the run can say the fuses could not count it."""
    found: dict[str, Any] = {}
    unreadable: dict[str, str] = {}
    usage = event.get("usage")
    if isinstance(usage, dict):
        inputs = reported_count(usage.get("input_tokens"))
        outputs = reported_count(usage.get("output_tokens"))
        if inputs is not None and outputs is not None:
            found.update(input_tokens=inputs, output_tokens=outputs, total_tokens=inputs + outputs)
        for name in ("input_tokens", "output_tokens"):
            told = usage.get(name)
            if told is not None and reported_count(told) is None:
                unreadable[f"usage.{name}"] = as_written(told)
    elif usage is not None:
        unreadable["usage"] = as_written(usage)
    told_cost = event.get("total_cost_usd")
    cost = reported_cost(told_cost)
    if cost is not None:
        found["cost_usd"] = cost
    elif told_cost is not None:
        unreadable["total_cost_usd"] = as_written(told_cost)
    if unreadable:
        found["unreadable"] = unreadable
    return found or None


def _gemini(event: dict[str, Any]) -> dict[str, Any] | None:
    stats = event.get("stats")
    if not isinstance(stats, dict):
        return None
    inputs, outputs = (
        reported_count(stats.get("input_tokens")),
        reported_count(stats.get("output_tokens")),
    )
    if inputs is not None and outputs is not None:
        return {"input_tokens": inputs, "output_tokens": outputs, "total_tokens": inputs + outputs}
    total = reported_count(stats.get("total_tokens"))
    return None if total is None else {"total_tokens": total}


def _codex(stderr_path: Path | None) -> dict[str, Any] | None:
    """The last `tokens used` total on stderr; read line by line, the line after the label."""
    if stderr_path is None:
        return None
    total: int | None = None
    pending = False
    with stderr_path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            text = line.strip()
            if pending and text:
                pending = False
                told = grouped_whole(text)
                if told is not None:
                    total = told
                    continue
            match = _CODEX_LABEL.match(text)
            if match is None:
                continue
            told = grouped_whole(match.group(1))
            if told is not None:
                total = told
            else:
                pending = True  # the number is on the next non-empty line
    return None if total is None else {"total_tokens": total}


def read_usage(
    *, dialect: str, usage_event: dict[str, Any] | None, stderr_path: Path | None
) -> dict[str, Any] | None:
    """`details.usage`: what the agent reported, with the dialect it was read from, or None."""
    found: dict[str, Any] | None = None
    if dialect == "codex":
        found = _codex(stderr_path)
    elif dialect == "gemini" and usage_event is not None:
        found = _gemini(usage_event)
    elif dialect in ("claude", "text") and usage_event is not None:
        # A text-dialect agent may print a claude-compatible result event (e.g. grok's
        # streaming-messages-json); its usage is read the same way.
        found = _claude(usage_event)
    if found is None:
        return None
    return {"dialect": dialect, **found}


def usage_cost(usage: dict[str, Any] | None) -> float | None:
    """The dollars the cost fuse counts: what the agent reported itself, or None."""
    if usage is None:
        return None
    return reported_cost(usage.get("cost_usd"))


def usage_tokens(usage: dict[str, Any] | None) -> int | None:
    """The number the token fuse counts: input plus output, or the only total reported."""
    if usage is None:
        return None
    return reported_count(usage.get("total_tokens"))


def unreadable_usage(usage: dict[str, Any] | None) -> dict[str, str]:
    """The usage fields the agent wrote that eb could not read (`total_cost_usd`,
    `usage.input_tokens`, ...), each as written; empty when there are none."""
    found = usage.get("unreadable") if usage is not None else None
    if not isinstance(found, dict):
        return {}
    return {str(name): str(value) for name, value in found.items()}


def _counted(usage: dict[str, Any]) -> bool:
    """Whether a judge's usage holds a number the run adds up (not only fields it could not
    read)."""
    return usage_cost(usage) is not None or any(
        reported_count(usage.get(key)) is not None
        for key in ("input_tokens", "output_tokens", "total_tokens")
    )


def dollars_sum(costs: Sequence[float]) -> float:
    """Dollar amounts added up exactly and rounded once (math.fsum): what eb stores keeps every
    digit the agents reported, so a $0.0000004 judge is not stored as $0.0; only what is shown
    is rounded (core.words.dollars_text). An amount past MOST_DOLLARS (a file written before eb
    had the ceiling) is no amount and left out, so no sum overflows."""
    return math.fsum(cost for cost in costs if reported_cost(cost) is not None)


def summed_usage(usages: list[object]) -> dict[str, Any] | None:
    """One check's `details.usage` over several agent runs (its attempts, its samples): each
    key added up over the runs that reported it, the dialect of the first, and the fields none
    could read as the first run that wrote each wrote it; None: none reported usage."""
    reported: list[dict[str, Any]] = [usage for usage in usages if isinstance(usage, dict)]
    if not reported:
        return None
    total: dict[str, Any] = {"dialect": reported[0].get("dialect")}
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        values = [
            value for usage in reported if (value := reported_count(usage.get(key))) is not None
        ]
        if values:
            total[key] = sum(values)
    costs = [cost for usage in reported if (cost := usage_cost(usage)) is not None]
    if costs:
        total["cost_usd"] = dollars_sum(costs)
    unreadable: dict[str, str] = {}
    for usage in reported:
        for name, written in unreadable_usage(usage).items():
            unreadable.setdefault(name, written)
    if unreadable:
        total["unreadable"] = unreadable
    return total


def usage_totals(usages: list[object]) -> dict[str, Any] | None:
    """The run's totals over the judges' `details.usage` (None: no judge reported usage eb
    could read).

    Tokens are summed over the judges that reported them; input and output only over the judges
    that split them (codex reports one blended total). Cost is summed over the judges that
    reported one (claude); the others are not counted as free, they are simply absent.
    """
    reported: list[dict[str, Any]] = [
        usage for usage in usages if isinstance(usage, dict) and _counted(usage)
    ]
    if not reported:
        return None

    def total(key: str) -> int | None:
        values = [
            value for usage in reported if (value := reported_count(usage.get(key))) is not None
        ]
        return sum(values) if values else None

    costs = [cost for usage in reported if (cost := usage_cost(usage)) is not None]
    return {
        "judges": len(reported),
        "total_tokens": total("total_tokens"),
        "input_tokens": total("input_tokens"),
        "output_tokens": total("output_tokens"),
        "cost_usd": dollars_sum(costs) if costs else None,
    }
