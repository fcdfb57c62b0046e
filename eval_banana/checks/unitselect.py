"""Selecting among the units of a plan: the `<family>[<case>]` selectors and `--check-id` globs
that chose nothing, told with what was most likely meant, and `--subset`'s part of each family.
"""

from __future__ import annotations

from collections.abc import Sequence

from eval_banana.checks.idloading import CASES_LISTED, UnmatchedGlob
from eval_banana.checks.idselectors import (
    IdSelectors,
    globs_matching_any,
    is_id_pattern,
    split_case_selector,
)
from eval_banana.checks.subset import Member, subset_positions
from eval_banana.checks.units import Unit
from eval_banana.models.config import CaseSubset
from eval_banana.models.stages import ProblemModel


def unmatched_case_selectors(*, check_ids: list[str], units: list[Unit]) -> list[ProblemModel]:
    """A `<family>[<case>]` selector whose family expanded but which chose none of its cases:
    an error naming the family and the case it most likely meant, not 'No checks found'."""
    from eval_banana.core.suggest import SUGGESTED_AT_MOST, closest

    cases: dict[str, dict[str, None]] = {}  # family -> its case ids, in order (and a set)
    files: dict[str, str] = {}
    for unit in units:
        if unit.case is not None:
            family = unit.item.definition["id"]
            cases.setdefault(family, {})[unit.case.case_id] = None
            files[family] = unit.item.path
    asked_of: dict[str, list[str]] = {}  # family -> the case globs asked of it
    for selector in check_ids:
        written = split_case_selector(selector)
        if written is not None and written[0] in cases and is_id_pattern(written[1]):
            asked_of.setdefault(written[0], []).append(written[1])
    matched = {
        family: globs_matching_any(globs=globs, texts=cases[family])
        for family, globs in asked_of.items()
    }
    problems: list[ProblemModel] = []
    for selector in check_ids:
        written = split_case_selector(selector)
        if written is None or written[0] not in cases:
            continue
        family, asked = written
        if asked in cases[family] or asked in matched.get(family, ()):
            continue
        suggest = not is_id_pattern(asked) and len(problems) < SUGGESTED_AT_MOST
        near = closest(asked, cases[family]) if suggest else None
        meant = f"did you mean '{family}[{near}]'? " if near is not None else ""
        problems.append(
            ProblemModel(
                message=f"No case of family '{family}' ({files[family]}) matches --check-id "
                f"'{selector.strip()}'",
                file=files[family],
                field_path="check_id",
                hint=f"{meant}{CASES_LISTED}",
            )
        )
    return problems


def tell_unmatched_globs(
    *,
    unmatched: Sequence[UnmatchedGlob],
    units: list[Unit],
    errors: list[ProblemModel],
    warnings: list[ProblemModel],
) -> None:
    """A glob that matched no check id and none of the selected cases is an error (a typo
    should fail loudly, not run nothing); the files that might have matched it are told with
    it, or as warnings when a case matched."""
    chose_a_case = _values_choosing_a_case(values=[glob.glob for glob in unmatched], units=units)
    for glob in unmatched:
        if glob.glob in chose_a_case:
            warnings.extend(w for w in glob.might_match if w not in warnings)
        else:
            errors.extend([glob.problem, *glob.might_match])


def _values_choosing_a_case(*, values: list[str], units: list[Unit]) -> set[str]:
    """Which of `values` (stripped) each alone choose one of the cases of `units`: one pass
    over the units for all of them, not one for each."""
    if not values:
        return set()
    every = IdSelectors(values)
    chosen: set[str] = set()
    for unit in units:
        if unit.case is not None:
            chosen.update(every.choosing(unit.check_id))
            if len(chosen) == len(every.texts):
                break
    return chosen


def subset_of(*, units: list[Unit], subset: CaseSubset) -> list[Unit]:
    """`--subset`: the same part of each family's selected cases (checks/subset.py)."""
    members = [
        Member(
            family=unit.item.definition["id"] if unit.case is not None else None,
            check_id=unit.check_id,
            skipped=unit.case is not None and bool(unit.case.definition.get("skip")),
        )
        for unit in units
    ]
    return [units[position] for position in subset_positions(members=members, subset=subset)]
