"""`eb run --select FILE` applied to a selection: exactly the ids the file names, all or nothing.

The validate stage calls `apply_select` on the checks the other selection flags kept (skipped
checks already set aside). Every id of the file must be among them, and when the file is an
`eb plan` document, the named checks must still have the plan's digest: a worker of a plan made
from another commit refuses to run rather than run something the scheduler never planned.
"""

from __future__ import annotations

from collections.abc import Sequence

from eval_banana.checks.shard import selection_digest
from eval_banana.core.errors import PlanSelectError
from eval_banana.core.words import first_and_count, plural
from eval_banana.models.config import PlanSelection
from eval_banana.models.stages import PlannedCheck

_NAMED = 10  # ids named in one refusal; the rest are counted


def _named(ids: Sequence[str]) -> str:
    return first_and_count([f"'{check_id}'" for check_id in ids], shown=_NAMED)


def _where(select: PlanSelection) -> str:
    return "standard input" if select.file == "-" else select.file


def apply_select(
    *, checks: list[PlannedCheck], select: PlanSelection, project_root: str
) -> tuple[list[PlannedCheck], str]:
    """(the checks this run executes, in plan order; the digest of every id the file names).

    The digest is taken over the checks as the project has them now, so the parts of one plan
    share it whenever the plan still holds (it then equals the plan's own digest).
    """
    by_id = {check.id: check for check in checks}
    missing = [check_id for check_id in select.plan_ids if check_id not in by_id]
    if missing:
        raise PlanSelectError(
            f"--select {_where(select)}: {plural(count=len(missing), noun='id')} not in the "
            "current selection: "
            f"{_named(missing)}",
            file=select.file if select.file != "-" else None,
            field_path="select",
            hint="Every id must name a check this run selects (not skipped, within --check-id, "
            "-k, --tag, --check-dir and --subset); make the plan again with `eb plan` (with the "
            "same options), or fix the list.",
        )
    named = [by_id[check_id] for check_id in select.plan_ids]
    digest = selection_digest(checks=named, project_root=project_root)
    if select.plan_digest is not None and digest != select.plan_digest:
        _refuse_stale(select=select, named=named, digest=digest)
    chosen = set(select.ids)
    return [check for check in checks if check.id in chosen], digest


def _refuse_stale(*, select: PlanSelection, named: list[PlannedCheck], digest: str) -> None:
    if select.allow_stale_plan:
        return
    changed = [
        check.id
        for check in named
        if select.definition_digests.get(check.id, check.check_definition_sha256)
        != check.check_definition_sha256
    ]
    what = f"changed: {_named(changed)}" if changed else "a check file moved"
    raise PlanSelectError(
        f"--select {_where(select)}: the plan no longer matches the project (plan digest "
        f"{select.plan_digest}, the project now gives {digest}; {what})",
        file=select.file if select.file != "-" else None,
        field_path="plan_digest",
        hint="Make the plan again with `eb plan` on this commit, or pass --allow-stale-plan "
        "to run the named checks as they are now.",
    )
