"""Narrowing an existing plan to a selection, for `eb stage execute --check-id ...`."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from eval_banana.checks.idselectors import IdSelectors
from eval_banana.checks.keywords import Selector, compile_selector
from eval_banana.checks.subset import Member, subset_positions
from eval_banana.core.errors import UsageError
from eval_banana.core.realpaths import real_path
from eval_banana.core.words import first_and_count
from eval_banana.models.config import Selection
from eval_banana.models.stages import PlanDoc, PlannedCheck


def _in_folder(*, check: PlannedCheck, folder: Path) -> bool:
    return real_path(check.source_path).is_relative_to(folder)


def _selected(
    *,
    check: PlannedCheck,
    chosen: IdSelectors | None,
    selector: Selector,
    folder: Path | None,
) -> bool:
    if chosen is not None and not chosen.selects(check.id):
        return False
    tags = [str(tag) for tag in check.definition.get("tags") or []]
    if not selector.selects(check_id=check.id, tags=tags):
        return False
    return folder is None or _in_folder(check=check, folder=folder)


def picked_checks(
    *, checks: Sequence[PlannedCheck], selection: Selection, project_root: Path
) -> list[PlannedCheck]:
    """The checks of `checks` that `selection`'s filters and subset keep, in their order; its
    shard is cut by the caller, from what this returns (as `eb run` cuts it last)."""
    folder = real_path(project_root / selection.check_dir) if selection.check_dir else None
    selector = compile_selector(keyword=selection.keyword, tags=selection.tags)
    # --check-id as `eb run` reads it: a case by its id, its family's or a glob of either.
    chosen = IdSelectors(selection.check_ids) if selection.check_ids else None
    picked = [
        check
        for check in checks
        if _selected(check=check, chosen=chosen, selector=selector, folder=folder)
    ]
    if selection.subset is None:
        return picked
    # Before the shard's slice, as `eb run` takes them: a family's subset is one whole.
    members = [Member(family=check.family, check_id=check.id) for check in picked]
    kept = subset_positions(members=members, subset=selection.subset)
    return [picked[position] for position in kept]


def narrow_plan(*, plan: PlanDoc, keep: Collection[str], selection: Selection) -> PlanDoc:
    """The plan with only its checks whose id is in `keep` (picked by `selection`), in plan
    order; none of them is a usage error."""
    checks = [check for check in plan.checks if check.id in keep]
    if not checks:
        chosen = IdSelectors(selection.check_ids) if selection.check_ids else None
        skipped = [
            f"{check.check_id} is skipped: {check.reason}"
            for check in plan.skipped
            if chosen is not None and chosen.selects(check.check_id)
        ]
        raise UsageError(
            "No check of the plan matches the selection "
            f"(check ids {selection.check_ids or 'any'}, -k {selection.keyword or 'any'}, "
            f"tags {selection.tags or 'any'}, folder {selection.check_dir or 'any'})"
            + (f"; {first_and_count(skipped, shown=3)}" if skipped else ""),
            hint="`eb stage execute` selects among the checks in stages/plan.json (a skipped "
            "check never runs); rerun `eb stage validate` with the selection to plan other checks.",
        )
    return plan.model_copy(update={"checks": checks})
