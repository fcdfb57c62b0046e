"""Where a failed case's row is (its dataset file and line), so that the console's recap names
the row and an annotation lands on it in the pull request's diff, rather than on the family's
check file.

No stage file keeps a row's line: a row added above it moves it without changing what the case
checks (nor its cached verdict). The rows are found again when asked, and a place is only given
for a case whose row still holds what was judged (its definition digest matches).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from eval_banana.core.errors import EvalBananaError, Problem
from eval_banana.models.stages import ConfigDoc

if TYPE_CHECKING:
    from eval_banana.datasets.rows import Row

_MARKED = ("failed", "error")


def failed_case_places(*, report: Mapping[str, Any], config: ConfigDoc) -> dict[str, Problem]:
    """Check id -> the file and line of the row each failed or errored case was judged on
    ({} when no case failed): the console's recap, the annotations and JUnit point at them. A
    dataset that cannot be read again leaves its cases on their check files."""
    wanted: dict[str, dict[str, object]] = {}  # check file -> {case check id: its digest}
    for check in report.get("checks") or []:
        if check.get("family") and check.get("status") in _MARKED:
            digests = wanted.setdefault(str(check.get("source_path") or ""), {})
            digests[str(check.get("check_id"))] = check.get("check_definition_sha256")
    if not wanted:
        return {}
    try:
        return _places(wanted=wanted, config=config)
    except (OSError, EvalBananaError):
        return {}


def _places(*, wanted: Mapping[str, Mapping[str, object]], config: ConfigDoc) -> dict[str, Problem]:
    """The rows of the cases `wanted` names (by check file) that still hold what was judged."""
    from eval_banana.checks.units import family_now  # what a replayed run does not load

    places: dict[str, Problem] = {}
    for source, digests in wanted.items():
        expansion = family_now(source_path=source, config=config) if source else None
        if expansion is None:
            continue
        for case in expansion.cases:
            if digests.get(case.check_id) == case.digest:
                places[case.check_id] = Problem(
                    message="", file=case.origin.file, line=_line(row=case.origin)
                )
    return places


def _line(*, row: Row) -> int | None:
    from eval_banana.datasets.rows import row_line

    if row.item_lines is not None and row.item_lines.shared(row.item_index):
        return None  # a list written on one line: its line would tell nothing
    return row_line(row)
