"""A dataset family's pass rate and its own gate, in the words every report uses (the
console, report.md, report.html, the step summary and `eb diff`)."""

from __future__ import annotations

from typing import Any, Literal

from eval_banana.core.words import percent_text

GateState = Literal["none", "at_merge", "unmeasured", "held", "broken"]


def gate_state(*, family: dict[str, Any]) -> GateState:
    """What a family's own gate says (a report's family, as `gate_of` reads it)."""
    return gate_of(
        min_pass_rate=family.get("min_pass_rate"),
        gate_at_merge=family.get("gate_at_merge"),
        cases=int(family.get("cases") or 0),
        gate_held=bool(family.get("gate_held")),
    )


def gate_of(
    *, min_pass_rate: float | None, gate_at_merge: float | None, cases: int, gate_held: bool
) -> GateState:
    """What a family's own gate says: none set, judged by `eb merge` (a shard), not measured
    (no case of it ran: every one skipped, so a rate of 0/0 holds nothing), held or broken."""
    if min_pass_rate is None:
        return "none" if gate_at_merge is None else "at_merge"
    if not cases:
        return "unmeasured"
    return "held" if gate_held else "broken"


def family_lines(*, report: dict[str, Any]) -> list[str]:
    """One line per dataset family: its pass rate, and its gate when it sets one."""
    lines = []
    for family in report.get("families") or []:
        text = (
            f"Family {family['id']}: {family['passed']:,}/{family['cases']:,} cases passed "
            f"({family_rate(family=family)}{selected_part(family=family)})"
            if family["cases"]
            else f"Family {family['id']}: no case ran ({_why_none_ran(family=family)})"
        )
        gate, state = family.get("min_pass_rate"), gate_state(family=family)
        if state == "at_merge":
            text += f", min_pass_rate {family['gate_at_merge']!r} judged by eb merge"
        elif state != "none":
            text += (
                f", min_pass_rate {gate!r} "
                + {
                    "unmeasured": "not measured",
                    "held": "held",
                    "broken": "NOT held: the run fails",
                }[state]
            )
        lines.append(text)
    return lines


# The rate of a family none of whose cases ran: none was measured, and "0.0%" would read as
# every case failing.
NO_RATE = "-"


def family_rate(*, family: dict[str, Any]) -> str:
    """A report's family's pass rate, as `rate_of_family` shows it."""
    gate = family.get("min_pass_rate")
    return rate_of_family(
        pass_rate=float(family.get("pass_rate") or 0.0),
        cases=int(family.get("cases") or 0),
        gate=None if gate is None else float(gate),
    )


def rate_of_family(*, pass_rate: float, cases: int, gate: float | None) -> str:
    """A family's pass rate as a percentage that never reads as its gate or as 100 % when it
    is not (`percent_text`); NO_RATE when no case of it ran."""
    if not cases:
        return NO_RATE
    return percent_text(pass_rate, bounds=() if gate is None else (gate,))


def selected_part(*, family: dict[str, Any]) -> str:
    """`; 1 of its 6 cases selected` for a family the selection ran only part of, `; 1 of its
    5 cases ran` for one a stopped run did (`; 1 of its 50 cases ran, 5 selected` for both):
    its pass rate and gate are then those of that part. Nothing for a family run whole."""
    size = family.get("of_cases")
    if size is None:
        return ""
    cases, not_run = int(family["cases"]), int(family.get("not_run") or 0)
    if not not_run:
        return f"; {cases:,} of its {size:,} cases selected"
    selected = cases + not_run
    return f"; {cases:,} of its {size:,} cases ran" + (
        f", {selected:,} selected" if selected < size else ""
    )


def _why_none_ran(*, family: dict[str, Any]) -> str:
    if family.get("not_run"):
        size = family.get("of_cases") or family["not_run"]
        return f"the run stopped before any of its {size:,} cases"
    return "every one selected was skipped"


def family_cases_text(*, family: dict[str, Any]) -> str:
    """`5`; `1 of 50 (selected)` when the selection took part of the family; `1 of 5 (4 not
    run)` when the run stopped before the rest (`1 of 50 (5 selected, 4 not run)` for both)."""
    size = family.get("of_cases")
    if size is None:
        return str(family["cases"])
    cases, not_run = int(family["cases"]), int(family.get("not_run") or 0)
    if not not_run:
        return f"{cases} of {size} (selected)"
    selected = f"{cases + not_run} selected, " if cases + not_run < size else ""
    return f"{cases} of {size} ({selected}{not_run} not run)"
