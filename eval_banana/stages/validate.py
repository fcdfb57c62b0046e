"""Stage 3, validate: load every discovered file, select, freeze scripts, write plan.json."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eval_banana.checks.definition import FrozenScript
from eval_banana.checks.idloading import (
    IdSelection,
    OutsideCheckDir,
    files_selected_by,
    select_ids,
)
from eval_banana.checks.idselectors import IdSelectors
from eval_banana.checks.keywords import compile_selector
from eval_banana.checks.loading import Holder, Loaded, load_strict, parse_each, reader_over
from eval_banana.checks.planned import (
    case_template,
    fill_definition_digests,
    plan_case,
    plan_check,
    skipped_check,
    unavailable_scripts,
    unavailable_skipped_scripts,
)
from eval_banana.checks.problemerrors import raise_problems
from eval_banana.checks.selectfile import apply_select
from eval_banana.checks.shard import empty_reason, selection_digest, shard_checks
from eval_banana.checks.units import (
    Unit,
    case_ids_of,
    expand,
    family_picks_of,
    family_rows_of,
    freeze,
    rows_of_broken_families,
)
from eval_banana.checks.unitselect import (
    subset_of,
    tell_unmatched_globs,
    unmatched_case_selectors,
)
from eval_banana.core.errors import DefinitionError
from eval_banana.core.files import write_bytes_atomic
from eval_banana.core.record import Field, Record
from eval_banana.datasets.keys import case_ids_digest
from eval_banana.models.config import Shard
from eval_banana.models.result import SkippedCheck
from eval_banana.models.stages import (
    ConfigDoc,
    DiscoverDoc,
    PlanDoc,
    PlannedCheck,
    ProblemModel,
)
from eval_banana.stagefiles.layout import envelope
from eval_banana.stagefiles.write import refusing_wrong_place, write_stage_model
from eval_banana.stages.discover import discover, walked_root

NO_CHECKS = "No checks found"


class ValidationOutcome(Record):
    """The plan, plus the frozen script bytes the wrapper writes under stages/snapshots/."""

    plan: PlanDoc
    snapshots: dict[str, bytes] = Field(default_factory=dict)
    # Every check and case id the project's check files define now, selected or not; None when
    # the selection narrowed what was read (--check-id, --check-dir), so an id missing from it
    # need not be gone. --last-failed forgets a remembered failure that no check defines.
    defined_ids: frozenset[str] | None = None

    def raise_if_failed(self) -> None:
        raise_if_plan_failed(self.plan)


def raise_if_plan_failed(plan: PlanDoc) -> None:
    """Raise a failed plan's problems: nothing is guarded or run on it (a plan read back from
    plan.json included, as `eb stage guard` and `eb update` read it)."""
    if plan.ok:
        return
    if not plan.errors:  # only a damaged plan.json fails without a reason
        raise DefinitionError("The plan failed validation without naming a problem")
    raise_problems(plan.errors, no_checks=plan.no_checks)


def _outside_check_dir(*, config: ConfigDoc) -> OutsideCheckDir | None:
    """Where `--check-id` looks for a value that names no check under `--check-dir`: the
    project's other check files, found by one walk of the whole project and parsed once for
    their ids, made only when such a value is met (a typo costs that walk; a selection that
    finds its checks, nothing). However many values are missing, each is then matched against
    those ids; a file outside that cannot be read or parsed is never named, and no other
    problem of a file outside changes what is told."""
    check_dir = config.selection.check_dir
    if check_dir is None:
        return None
    parsed: list[list[Holder]] = []

    def others() -> list[Holder]:
        """Each check file outside the folder that parses, under its path as shown."""
        if not parsed:
            whole = config.model_copy(
                update={"selection": config.selection.model_copy(update={"check_dir": None})}
            )
            contents: dict[str, bytes] = {}
            found = discover(config=whole, inputs={}, contents=contents)
            inside = walked_root(config=config)
            shown = {
                item.path: item.relative_path or item.path
                for item in found.files
                if item.path != inside and not item.path.startswith(inside + os.sep)
            }
            each = parse_each(paths=sorted(shown), marker=b"", read=reader_over(contents))
            parsed.append(
                [holder._replace(path=shown[holder.path]) for holder, _, _ in each if holder]
            )
        return parsed[0]

    def find(value: str) -> list[str]:
        return files_selected_by(holders=others(), value=value)

    return OutsideCheckDir(check_dir=check_dir, find=find)


def validate(
    *,
    config: ConfigDoc,
    discovered: DiscoverDoc,
    inputs: dict[str, str],
    contents: Mapping[str, bytes] | None = None,
    require_scripts: bool = True,
) -> ValidationOutcome:
    """Load, select (--check-id, -k, --tag) and plan the checks; never raises for bad files.

    A bad -k / --tag expression raises SelectionError (a usage error). Selected checks with
    `skip:` go to the plan's `skipped` list, not to its checks. `contents` are the file bytes
    the discover stage read in this process (else read here). With `require_scripts` (every
    command that may run checks), a missing referenced script is an error here, so `eb run`
    refuses it up front as `eb validate` does; `eb list` lists anyway.
    """
    selection = config.selection
    selector = compile_selector(keyword=selection.keyword, tags=selection.tags)
    paths = [item.path for item in discovered.files]
    # With --check-id, a file eb cannot read elsewhere (a dangling link) blocks nothing, as a
    # broken one elsewhere does not: told with the selection's own problems, else a warning.
    unread = list(discovered.problems)
    errors = [] if selection.check_ids else unread
    warnings: list[ProblemModel] = []
    by_id = IdSelection(checks=[], problems=[], warnings=[])
    if selection.check_ids:
        by_id = select_ids(
            paths=paths,
            check_ids=selection.check_ids,
            read=reader_over(contents),
            case_ids=case_ids_of(config=config),
            outside=_outside_check_dir(config=config),
        )
        loaded, problems, warnings = by_id.checks, by_id.problems, by_id.warnings
    else:
        loaded, problems = load_strict(paths=paths, read=reader_over(contents))
    errors.extend(problems)
    units, expand_problems, frozen_by_path = expand(
        loaded=loaded, config=config, case_bound=by_id.case_bound, warnings=warnings
    )
    errors.extend(expand_problems)
    if not selection.check_ids:
        told = {(p.file, p.line, p.message) for p in expand_problems}
        errors.extend(
            problem
            for problem in rows_of_broken_families(
                problems=problems, loaded=loaded, config=config, read=reader_over(contents)
            )
            if (problem.file, problem.line, problem.message) not in told  # a dataset two share
        )
    family_ids, family_file_rows = family_rows_of(units=units)
    expanded = units  # every case of the families read, before the selection narrows them
    whole_project = not selection.check_ids and selection.check_dir is None
    defined_ids = frozenset(unit.check_id for unit in units) if whole_project else None
    if selection.check_ids:
        every_case = units
        chosen = IdSelectors(selection.check_ids)
        units = [unit for unit in units if unit.case is None or chosen.selects(unit.check_id)]
        if not expand_problems:
            errors.extend(unmatched_case_selectors(check_ids=selection.check_ids, units=every_case))
        tell_unmatched_globs(
            unmatched=by_id.unmatched, units=units, errors=errors, warnings=warnings
        )
        # An id that names no check may be declared in a file eb cannot read.
        (errors if errors else warnings).extend(unread)
    if selector.keyword is not None or selector.tags:
        units = [
            unit
            for unit in units
            if selector.selects(check_id=unit.check_id, tags=unit.definition["tags"])
        ]
    narrowed = False  # --changed-since / --last-failed left nothing: a run that passes empty
    if units and not errors and (selection.changed_since is not None or selection.last_failed):
        from eval_banana.incremental import select_incremental
        from eval_banana.incremental.units import case_rows, incremental_view

        incremental = select_incremental(
            config=config,
            checks=[incremental_view(u) for u in units],
            cases=case_rows(units=units, config=config, frozen=frozen_by_path),
            defined=defined_ids,
        )
        warnings = [*warnings, *incremental.warnings]
        narrowed = not incremental.kept
        units = [units[position] for position in incremental.kept]
    only_skipped = False  # --subset left out every selected case, each one skipped
    if selection.subset is not None and units:
        units = subset_of(units=units, subset=selection.subset)
        only_skipped = not units
    no_checks = not units and not errors and not narrowed
    if no_checks:
        errors.append(
            ProblemModel(
                message=NO_CHECKS,
                hint="Every selected case is skipped, and --subset takes only cases that run: "
                "leave out --subset to list them as skipped, or select other checks."
                if only_skipped
                else "Add YAML checks under an eval_checks/ folder, or widen "
                "--check-dir, --check-id, -k or --tag.",
            )
        )
    checks: list[PlannedCheck] = []
    skipped: list[SkippedCheck] = []
    snapshots: dict[str, bytes] = {}
    family_gates: dict[str, float] = {}
    family_calibration: dict[str, list[dict[str, Any]]] = {}
    skipped_families: dict[str, str] = {}  # a skipped case's id -> its family's
    skipped_scripts: list[tuple[Unit, FrozenScript | None]] = []  # validated, never run
    if not errors:
        # sorted() is stable: a family's cases keep their dataset order.
        templates: dict[str, PlannedCheck] = {}
        family_item: Loaded | None = None  # the family whose cases come now (they come together)
        family_id = ""
        family_script: FrozenScript | None = None
        for unit in sorted(units, key=_unit_path):
            case = unit.case
            if case is not None:
                if unit.item is not family_item:  # what every case of the family shares
                    family_item = unit.item
                    family_id = family_item.definition["id"]
                    rate = family_item.definition.get("min_pass_rate")
                    if rate is not None:
                        family_gates[family_id] = float(rate)
                    calibration = family_item.definition.get("calibration")
                    if calibration:
                        family_calibration[family_id] = calibration
                    family_script = frozen_by_path[family_item.path]
                if case.definition.get("skip"):
                    skipped.append(skipped_check(unit=unit))
                    skipped_families[case.check_id] = family_id
                    skipped_scripts.append((unit, family_script))
                    continue
                template = templates.get(unit.item.path)
                if template is None:
                    template = case_template(unit=unit, frozen=family_script)
                    templates[unit.item.path] = template
                    if (
                        template.snapshot
                        and family_script is not None
                        and family_script.data is not None
                    ):
                        snapshots[template.snapshot] = family_script.data
                checks.append(plan_case(template=template, case=case, case_index=unit.case_index))
                continue
            if unit.definition.get("skip"):
                skipped.append(skipped_check(unit=unit))
                skipped_scripts.append((unit, freeze(item=unit.item)))
                continue
            script = freeze(item=unit.item)
            planned, frozen_bytes = plan_check(unit=unit, frozen=script)
            checks.append(planned)
            if planned.snapshot and frozen_bytes is not None:
                snapshots[planned.snapshot] = frozen_bytes
        if require_scripts:
            errors.extend(unavailable_scripts(checks=checks))
            errors.extend(unavailable_skipped_scripts(skipped=skipped_scripts, planned=checks))
    # The shard filter comes last; the digest and the count describe the whole selection.
    digest = selection_digest(checks=checks, project_root=config.project_root)
    selected = len(checks)
    allow_empty = None
    if selection.select is not None and not errors:
        named = set(selection.select.plan_ids)
        plan_families = {check.family for check in checks if check.id in named}
        # --select: the file is the plan; its part under --shard K/N was decided when it was read.
        checks, digest = apply_select(
            checks=checks, select=selection.select, project_root=config.project_root
        )
        # The plan selected its skipped checks: one it left out is not listed, as on one machine.
        listed = set(selection.select.skipped_ids)
        skipped = [item for item in skipped if item.check_id in listed]
        plan_families.update(skipped_families.get(item.check_id) for item in skipped)
        # Nor is a gated family none of whose cases the plan named (-k, --check-id or --tag
        # left it out): the one-machine run of the plan's selection never reports it.
        family_gates = {
            family: rate for family, rate in family_gates.items() if family in plan_families
        }
        selected = len(selection.select.plan_ids)
        frozen = {check.snapshot for check in checks}
        snapshots = {name: data for name, data in snapshots.items() if name in frozen}
        if not checks and selection.shard is not None:
            allow_empty = empty_reason(shard=selection.shard, selected=selected)
    elif selection.shard is not None and not errors:
        checks = shard_of_plan(checks=checks, shard=selection.shard, config=config)
        frozen = {check.snapshot for check in checks}
        snapshots = {name: data for name, data in snapshots.items() if name in frozen}
        if not checks:
            # A CI matrix job must not fail for being empty: the other shards hold the checks.
            allow_empty = empty_reason(shard=selection.shard, selected=selected)
    planned_families = {check.family for check in checks}
    family_calibration = {
        family: cases for family, cases in family_calibration.items() if family in planned_families
    }
    family_sizes = {
        family: len(ids) for family, ids in family_ids.items() if family in planned_families
    }
    family_file_rows = {
        family: rows for family, rows in family_file_rows.items() if family in planned_families
    }
    family_case_ids = {
        family: case_ids_digest(ids)
        for family, ids in family_ids.items()
        if family in planned_families
    }
    # Planned or not: a row a --tag left out of a family none of whose rows it picked counts.
    # A failed plan holds no checks to compare (its problems are compared instead).
    family_picks = (
        {}
        if errors
        else family_picks_of(
            units=expanded,
            kept={check.id for check in checks} | {item.check_id for item in skipped},
            root=config.project_root,
            selection=selection,
        )
    )
    plan = PlanDoc.model_validate(
        {
            **envelope(stage="validate", run_id=config.run_id, inputs=inputs),
            "ok": not errors,
            "selection": selection,
            "checks": checks,
            "errors": sorted(errors, key=lambda problem: problem.file or ""),
            "warnings": warnings,
            "skipped": skipped,
            "selection_digest": digest,
            "selected_checks": selected,
            "allow_empty": allow_empty,
            "no_checks": no_checks,
            "family_gates": family_gates,
            "family_sizes": family_sizes,
            "family_case_ids": family_case_ids,
            "family_picks": family_picks,
            "family_file_rows": family_file_rows,
            "family_calibration": family_calibration,
        }
    )
    return ValidationOutcome(plan=plan, snapshots=snapshots, defined_ids=defined_ids)


def _unit_path(unit: Unit) -> str:
    return unit.item.path


def shard_of_plan(
    *, checks: list[PlannedCheck], shard: Shard, config: ConfigDoc
) -> list[PlannedCheck]:
    """The checks of `shard`, in plan order: by the id hash, or by the durations table the
    config stage read from the run history (`--balance history`)."""
    if shard.balance != "history":
        return shard_checks(checks=checks, shard=shard)
    from eval_banana.history.balance import balance_shards

    split = balance_shards(
        ids=[check.id for check in checks],
        expected=config.shard_durations or {},
        total=shard.total,
    )
    return [check for check in checks if split[check.id] == shard.index]


def write_validate_stage(*, run_dir: Path, outcome: ValidationOutcome) -> str:
    """Write the frozen scripts, then plan.json; return plan.json's digest."""
    fill_definition_digests(checks=outcome.plan.checks)
    for relative, data in outcome.snapshots.items():
        with refusing_wrong_place(path=run_dir / relative, stage="validate"):
            write_bytes_atomic(path=run_dir / relative, data=data)
    return write_stage_model(run_dir=run_dir, stage="validate", model=outcome.plan)
