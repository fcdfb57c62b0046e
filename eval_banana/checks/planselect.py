"""Narrowing an existing plan to a selection, for `eb stage execute --check-id ...`."""

from __future__ import annotations

from pathlib import Path

from eval_banana.checks.selection import IdSelectors, Selector, compile_selector
from eval_banana.checks.shard import in_shard
from eval_banana.checks.subset import Member, subset_positions
from eval_banana.core.errors import UsageError
from eval_banana.core.words import first_and_count
from eval_banana.models.config import Selection
from eval_banana.models.stages import PlanDoc, PlannedCheck


def _in_folder(*, check: PlannedCheck, folder: Path) -> bool:
    return Path(check.source_path).resolve().is_relative_to(folder)


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


def narrow_plan(*, plan: PlanDoc, selection: Selection, project_root: Path) -> PlanDoc:
    """The plan with only the checks `selection` picks; none picked is a usage error."""
    folder = (project_root / selection.check_dir).resolve() if selection.check_dir else None
    selector = compile_selector(keyword=selection.keyword, tags=selection.tags)
    # --check-id as `eb run` reads it: a case by its id, its family's or a glob of either.
    chosen = IdSelectors(selection.check_ids) if selection.check_ids else None
    checks = [
        check
        for check in plan.checks
        if _selected(check=check, chosen=chosen, selector=selector, folder=folder)
    ]
    if selection.subset is not None:
        # Before the shard's slice, as `eb run` takes them: a family's subset is one whole.
        members = [Member(family=check.family, check_id=check.id) for check in checks]
        kept = subset_positions(members=members, subset=selection.subset)
        checks = [checks[position] for position in kept]
    if selection.shard is not None:
        shard = selection.shard
        checks = [check for check in checks if in_shard(check_id=check.id, shard=shard)]
    if not checks:
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
