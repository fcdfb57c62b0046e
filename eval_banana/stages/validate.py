"""Stage 3, validate: load every discovered file, select, freeze scripts, write plan.json."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from eval_banana.checks.definition import (
    FrozenScript,
    definition_digest,
    freeze_script,
    load_definition,
    parse_yaml_mapping,
    validate_mapping,
)
from eval_banana.checks.loading import (
    CASES_LISTED,
    CaseIds,
    IdSelection,
    Loaded,
    UnmatchedGlob,
    family_left_out,
    load_strict,
    problem_model,
    reader_over,
    select_ids,
)
from eval_banana.checks.selectfile import apply_select
from eval_banana.checks.selection import (
    IdSelectors,
    case_part_matches,
    compile_selector,
    is_id_pattern,
    split_case_selector,
)
from eval_banana.checks.shard import empty_reason, selection_digest, shard_checks
from eval_banana.checks.subset import Member, subset_positions
from eval_banana.core.errors import DefinitionError, NoChecksError, problem_of
from eval_banana.core.files import write_bytes_atomic, write_model
from eval_banana.core.record import Field, Record
from eval_banana.core.stem import artifact_stem, case_artifact_stem
from eval_banana.datasets.keys import is_family
from eval_banana.models.config import CaseSubset, Shard
from eval_banana.models.result import SkippedCheck
from eval_banana.models.stages import (
    ConfigDoc,
    DiscoverDoc,
    PlanDoc,
    PlannedCheck,
    ProblemModel,
)
from eval_banana.stagefiles.layout import envelope, stage_path

if TYPE_CHECKING:
    from eval_banana.datasets.expand import ExpandedCase, Expansion
    from eval_banana.datasets.sources import Skipped
    from eval_banana.incremental import CaseRows

SNAPSHOTS_DIR = "stages/snapshots"
NO_CHECKS = "No checks found"


class Unit(NamedTuple):
    """One check to plan: a plain check file, or one case of a family."""

    item: Loaded
    case: ExpandedCase | None = None
    family_files: list[str] | None = None
    case_index: int | None = None
    family_digest: str | None = None

    @property
    def check_id(self) -> str:
        return self.case.check_id if self.case is not None else self.item.definition["id"]

    @property
    def definition(self) -> dict[str, Any]:
        return self.case.definition if self.case is not None else self.item.definition


class ValidationOutcome(Record):
    """The plan, plus the frozen script bytes the wrapper writes under stages/snapshots/."""

    plan: PlanDoc
    snapshots: dict[str, bytes] = Field(default_factory=dict)

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


def raise_problems(problems: list[ProblemModel], *, no_checks: bool) -> None:
    """Raise the first problem as a typed error, carrying all the others."""
    raise problems_error(problems, no_checks=no_checks)


def problems_error(problems: list[ProblemModel], *, no_checks: bool) -> DefinitionError:
    """The typed error that stands for `problems`: the first, carrying all the others.
    `no_checks`: they say only that nothing was found (the plan's own flag)."""
    error_type = NoChecksError if no_checks else DefinitionError
    first = problem_of(problems[0])
    return error_type(
        first.message,
        file=first.file,
        field_path=first.field_path,
        hint=first.hint,
        line=first.line,
        column=first.column,
        problems=tuple(problem_of(problem) for problem in problems[1:]),
    )


def _unmatched_case_selectors(*, check_ids: list[str], units: list[Unit]) -> list[ProblemModel]:
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
    problems: list[ProblemModel] = []
    for selector in check_ids:
        written = split_case_selector(selector)
        if written is None or written[0] not in cases:
            continue
        family, asked = written
        if case_part_matches(asked=asked, case_ids=cases[family]):
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


def _incremental_view(unit: Unit) -> tuple[str, dict[str, Any]]:
    """(check file, definition) as --changed-since / --last-failed read them: a case by its own
    id (its dataset files are told apart, by `_case_rows`)."""
    return unit.item.path, {**unit.definition, "id": unit.check_id}


def _case_rows(
    *, units: list[Unit], config: ConfigDoc, frozen: Mapping[str, FrozenScript | None]
) -> list[CaseRows | None]:
    """Beside each unit, for --changed-since: a case's dataset files and digest, read through
    its row (its family expanded again from the files as they were at REF, once per family)."""
    from eval_banana.incremental import CaseRows

    pasts: dict[str, Callable[[Mapping[str, bytes]], Mapping[str, str] | None]] = {}
    sources: dict[str, DatasetSource] = {}
    found: list[CaseRows | None] = []
    for unit in units:
        if unit.case is None or not unit.family_files:
            found.append(None)
            continue
        item = unit.item
        if item.path not in pasts:
            script = frozen.get(item.path)
            pasts[item.path] = _past_expansion(
                item=item, config=config, script=script.data if script is not None else None
            )
            sources[item.path] = _dataset_source(item=item, config=config)
        source = sources[item.path]
        found.append(
            CaseRows(
                family=item.path,
                files=tuple(unit.family_files),
                digest=unit.case.digest,
                past=pasts[item.path],
                scope=source.scope,
                names=source.names,
            )
        )
    return found


class DatasetSource(NamedTuple):
    """Where a family's `cases_from` looks, and which paths it names (a removed one too)."""

    scope: str | None  # its folder ("" the whole project), or its file; None without one
    names: Callable[[str], bool]


def _dataset_source(*, item: Loaded, config: ConfigDoc) -> DatasetSource:
    pattern = item.definition.get("cases_from")
    if not isinstance(pattern, str):
        return DatasetSource(scope=None, names=lambda path: False)
    from eval_banana.datasets.sources import dataset_scope, dataset_skipped, names_path

    root = Path(config.project_root)
    skipped = dataset_skipped(config=config)
    return DatasetSource(
        scope=dataset_scope(pattern),
        names=lambda path: names_path(pattern=pattern, path=path, root=root, skipped=skipped),
    )


def _past_expansion(
    *, item: Loaded, config: ConfigDoc, script: bytes | None
) -> Callable[[Mapping[str, bytes]], Mapping[str, str] | None]:
    """The family's case digests from its dataset files' contents at another revision."""
    from eval_banana.datasets.expand import case_digests_from

    return functools.partial(
        case_digests_from,
        definition=item.definition,
        check_file=item.path,
        max_cases=config.settings.core.max_cases,
        script=script,
    )


def _freeze(*, item: Loaded) -> FrozenScript | None:
    script_path = item.definition.get("script_path")
    if not script_path:
        return None
    return freeze_script(yaml_path=Path(item.path), script_path=script_path, yaml_data=item.data)


def _plan_check(*, unit: Unit, frozen: FrozenScript | None) -> tuple[PlannedCheck, bytes | None]:
    item, case = unit.item, unit.case
    definition = unit.definition
    check_id = unit.check_id
    stem = artifact_stem(check_id=check_id)
    # The cases of a family share one frozen copy of its script.
    snapshot_stem = artifact_stem(check_id=item.definition["id"]) if case is not None else stem
    planned = PlannedCheck(
        id=check_id,
        type=definition["type"],
        description=definition["description"],
        source_path=item.path,
        stem=stem,
        check_definition_sha256=case.digest
        if case is not None
        else definition_digest(yaml_bytes=item.data, frozen=frozen),
        definition=definition,
        snapshot=f"{SNAPSHOTS_DIR}/{snapshot_stem}.py"
        if frozen and frozen.data is not None
        else None,
        script_path=str(frozen.path) if frozen else None,
        script_unavailable=frozen.unavailable if frozen else None,
        family=item.definition["id"] if case is not None else None,
        case_id=case.case_id if case is not None else None,
        case_index=unit.case_index,
        case=case.row if case is not None else None,
        family_files=unit.family_files,
        family_definition_sha256=unit.family_digest,
    )
    return planned, frozen.data if frozen else None


def _case_template(*, unit: Unit, frozen: FrozenScript | None) -> PlannedCheck:
    """What every case of `unit`'s family plans alike (its file, type, script, family)."""
    planned, _ = _plan_check(unit=unit, frozen=frozen)
    return planned


def _plan_case(
    *, template: PlannedCheck, case: ExpandedCase, case_index: int | None
) -> PlannedCheck:
    """One case's planned check: its family's template with the case's own fields.

    A copy of the template's values, not a new record built field by field: a family of
    10,000 cases plans 10,000 checks that differ in seven fields.
    """
    definition = case.definition
    planned: PlannedCheck = object.__new__(PlannedCheck)
    values = planned.__dict__
    values.update(template.__dict__)
    values["id"] = case.check_id
    values["description"] = definition["description"]
    values["stem"] = case_artifact_stem(family=template.family or "", case_id=case.case_id)
    values["check_definition_sha256"] = case.digest
    values["definition"] = definition
    values["case_id"] = case.case_id
    values["case"] = case.row
    values["case_index"] = case_index  # its place in the dataset: merges keep dataset order
    return planned


def family_now(*, source_path: str, config: ConfigDoc) -> Expansion | None:
    """The family defined in `source_path` as it expands now (its file, script and dataset as
    they are on disk), or None when the file cannot be read or is no valid check file. Its
    rows know their lines, the check file's own `cases:` items too."""
    source = Path(source_path)
    try:
        data = source.read_bytes()
        definition = load_definition(data=data, path=source)
    except (OSError, DefinitionError):
        return None
    script_path = definition.get("script_path")
    frozen = freeze_script(yaml_path=source, script_path=script_path) if script_path else None
    from eval_banana.datasets.expand import expand_family
    from eval_banana.datasets.sources import dataset_skipped

    return expand_family(
        definition=definition,
        check_file=source_path,
        project_root=Path(config.project_root),
        max_cases=config.settings.core.max_cases,
        script=frozen.data if frozen is not None else None,
        skipped=dataset_skipped(config=config),
        check_text=data.decode("utf-8", errors="replace"),
    )


def _rows_of_broken_families(
    *,
    problems: list[ProblemModel],
    loaded: list[Loaded],
    config: ConfigDoc,
    read: Callable[[str], bytes],
) -> list[ProblemModel]:
    """The bad rows of the `cases_from` datasets of check files that have problems of their
    own: one `eb validate` lists them together, so fixing the file does not reveal a second
    list. Only what a row is can be told without a valid family (a line that is not JSON, a
    row that is no mapping, a bad or duplicate id, `case_schema`), not what the family's text
    would make of it."""
    good = {item.path for item in loaded}
    broken = list(dict.fromkeys(p.file for p in problems if p.file and p.file not in good))
    found: list[ProblemModel] = []
    for path in broken:
        try:
            document = parse_yaml_mapping(data=read(path), path=path)
        except (OSError, DefinitionError):
            continue
        pattern = document.get("cases_from")
        if not isinstance(pattern, str) or not pattern.strip():
            continue
        given = document.get("id")
        schema = document.get("case_schema")
        rows_only: dict[str, Any] = {
            "id": given if isinstance(given, str) and given.strip() else Path(path).stem,
            "type": "deterministic",
            "description": "",
            "cases_from": pattern,
        }
        if isinstance(schema, dict):
            rows_only["case_schema"] = schema
        from eval_banana.datasets.expand import expand_family
        from eval_banana.datasets.sources import dataset_skipped

        expansion = expand_family(
            definition=rows_only,
            check_file=path,
            project_root=Path(config.project_root),
            max_cases=config.settings.core.max_cases,
            skipped=dataset_skipped(config=config),
        )
        found.extend(problem_model(problem) for problem in expansion.problems)
    return found


def _tell_unmatched_globs(
    *,
    unmatched: Sequence[UnmatchedGlob],
    units: list[Unit],
    errors: list[ProblemModel],
    warnings: list[ProblemModel],
) -> None:
    """A glob that matched no check id and none of the selected cases is an error (a typo
    should fail loudly, not run nothing); the files that might have matched it are told with
    it, or as warnings when a case matched."""
    for glob in unmatched:
        one = IdSelectors([glob.glob])
        if any(unit.case is not None and one.selects(unit.check_id) for unit in units):
            warnings.extend(w for w in glob.might_match if w not in warnings)
        else:
            errors.extend([glob.problem, *glob.might_match])


def _expand(
    *,
    loaded: list[Loaded],
    config: ConfigDoc,
    case_bound: Collection[str],
    warnings: list[ProblemModel],
) -> tuple[list[Unit], list[ProblemModel], dict[str, FrozenScript | None]]:
    """Every family's cases as units (plain checks as they are), and every dataset problem.

    A family in `case_bound` (loaded only because a `--check-id` glob may match some of its
    cases) that cannot expand adds its problems to `warnings` instead: which cases it has
    cannot be known, so none is selected."""
    units: list[Unit] = []
    problems: list[ProblemModel] = []
    frozen: dict[str, FrozenScript | None] = {}
    skipped: Skipped | None = None
    for item in loaded:
        if not is_family(item.definition):
            units.append(Unit(item=item))
            continue
        # Imported here: a project without families never loads the expansion.
        from eval_banana.datasets.sources import dataset_skipped

        if skipped is None:
            skipped = dataset_skipped(config=config)
        script = frozen[item.path] = _freeze(item=item)
        expansion = _expansion(item=item, config=config, script=script, skipped=skipped)
        found = [problem_model(exc) for exc in expansion.problems]
        if not found and item.definition["type"] == "assertions":
            found = _invalid_rendered(item=item, cases=expansion.cases)
        _locate_in_check_file(problems=found, item=item)
        if found and item.path in case_bound:
            left_out = family_left_out(family=item.definition["id"], path=item.path)
            warnings.extend(w for w in (left_out, *found) if w not in warnings)
            continue
        if found:
            problems.extend(found)
            continue
        units.extend(
            Unit(
                item=item,
                case=case,
                family_files=expansion.files,
                case_index=index,
                family_digest=expansion.family_digest,
            )
            for index, case in enumerate(expansion.cases)
        )
    return units, problems, frozen


def _expansion(
    *, item: Loaded, config: ConfigDoc, script: FrozenScript | None, skipped: Skipped
) -> Expansion:
    """The family `item` as it expands: its cases and problems."""
    from eval_banana.datasets.expand import expand_family

    return expand_family(
        definition=item.definition,
        check_file=item.path,
        project_root=Path(config.project_root),
        max_cases=config.settings.core.max_cases,
        script=script.data if script is not None else None,
        skipped=skipped,
        check_text=item.data.decode("utf-8", errors="replace"),
    )


def _case_ids_of(*, config: ConfigDoc) -> CaseIds:
    """A family's case ids, for the did-you-mean of a `--check-id` whose family id names no
    check: the family expands as it would run (only such a value pays for it)."""

    def case_ids(item: Loaded) -> list[str]:
        from eval_banana.datasets.sources import dataset_skipped

        expansion = _expansion(
            item=item,
            config=config,
            script=_freeze(item=item),
            skipped=dataset_skipped(config=config),
        )
        return [case.case_id for case in expansion.cases]

    return case_ids


def _locate_in_check_file(*, problems: list[ProblemModel], item: Loaded) -> None:
    """Give the family's problems told at a field of its check file (`cases_from`, its own
    `cases:` items such as `cases.2.id`) the line and column they are at: a second parse of
    the file, which only a family with such a problem pays for. A problem in an item of its
    own `cases:` has the item's line already (its message names it); here it gets its field's."""
    unplaced = [
        problem
        for problem in problems
        if problem.file == item.path
        and problem.field_path
        and (problem.line is None or problem.field_path.startswith("cases."))
    ]
    if not unplaced:
        return
    from eval_banana.checks.yamlpos import compose, locate

    root = compose(text=item.data.decode("utf-8", errors="replace"))
    if root is None:
        return
    for problem in unplaced:
        parts = (problem.field_path or "").split(".")
        located = locate(root=root, path=[int(p) if p.isdigit() else p for p in parts])
        if located.found:
            position = located.key or located.value
        elif parts[0] == "cases":  # an item's missing field: the item
            position = located.parent
        else:
            continue  # no field of the file (`case.<field>`, a row's field): no line to give
        problem.line, problem.column = position.line, position.column


def _invalid_rendered(*, item: Loaded, cases: list[ExpandedCase]) -> list[ProblemModel]:
    """An assertions case whose filled-in values no longer make a valid check."""
    from eval_banana.datasets.problems import family_field, filled_in_problem

    problems: list[ProblemModel] = []
    for case in cases:
        try:
            validate_mapping(document=case.definition, path=item.path)
        except DefinitionError as exc:
            fields = exc.field_errors or (exc,)
            problems.extend(
                problem_model(
                    filled_in_problem(
                        row=case.origin,
                        case_id=case.case_id,
                        place=family_field(field.field_path or "the family's text"),
                        message=field.message,
                    )
                )
                for field in fields
            )
    return problems


def unavailable_scripts(*, checks: list[PlannedCheck]) -> list[ProblemModel]:
    """Checks that validate but could never run: a referenced script that is not there."""
    return [
        ProblemModel(
            message=check.script_unavailable,
            file=check.source_path,
            field_path=f"{check.type}.script_path",
            hint="Fix script_path (it is relative to the check file's folder).",
        )
        for check in checks
        if check.script_unavailable
    ]


def _skipped(*, unit: Unit) -> SkippedCheck:
    definition = unit.definition
    return SkippedCheck(
        check_id=unit.check_id,
        check_type=definition["type"],
        description=definition["description"],
        source_path=unit.item.path,
        tags=list(definition["tags"]),
        reason=definition["skip"],
    )


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
    errors = list(discovered.problems)
    warnings: list[ProblemModel] = []
    by_id = IdSelection(checks=[], problems=[], warnings=[])
    if selection.check_ids:
        by_id = select_ids(
            paths=paths,
            check_ids=selection.check_ids,
            read=reader_over(contents),
            case_ids=_case_ids_of(config=config),
        )
        loaded, problems, warnings = by_id.checks, by_id.problems, by_id.warnings
    else:
        loaded, problems = load_strict(paths=paths, read=reader_over(contents))
    errors.extend(problems)
    units, expand_problems, frozen_by_path = _expand(
        loaded=loaded, config=config, case_bound=by_id.case_bound, warnings=warnings
    )
    errors.extend(expand_problems)
    if not selection.check_ids:
        told = {(p.file, p.line, p.message) for p in expand_problems}
        errors.extend(
            problem
            for problem in _rows_of_broken_families(
                problems=problems, loaded=loaded, config=config, read=reader_over(contents)
            )
            if (problem.file, problem.line, problem.message) not in told  # a dataset two share
        )
    family_sizes = _family_sizes(units=units)
    if selection.check_ids:
        every_case = units
        chosen = IdSelectors(selection.check_ids)
        units = [unit for unit in units if unit.case is None or chosen.selects(unit.check_id)]
        if not expand_problems:
            errors.extend(
                _unmatched_case_selectors(check_ids=selection.check_ids, units=every_case)
            )
        _tell_unmatched_globs(
            unmatched=by_id.unmatched, units=units, errors=errors, warnings=warnings
        )
    if selector.keyword is not None or selector.tags:
        units = [
            unit
            for unit in units
            if selector.selects(check_id=unit.check_id, tags=unit.definition["tags"])
        ]
    narrowed = False  # --changed-since / --last-failed left nothing: a run that passes empty
    if units and not errors and (selection.changed_since is not None or selection.last_failed):
        from eval_banana.incremental import select_incremental

        incremental = select_incremental(
            config=config,
            checks=[_incremental_view(u) for u in units],
            cases=_case_rows(units=units, config=config, frozen=frozen_by_path),
        )
        warnings = [*warnings, *incremental.warnings]
        narrowed = not incremental.kept
        units = [units[position] for position in incremental.kept]
    only_skipped = False  # --subset left out every selected case, each one skipped
    if selection.subset is not None and units:
        units = _subset_of(units=units, subset=selection.subset)
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
    if not errors:
        # sorted() is stable: a family's cases keep their dataset order.
        templates: dict[str, PlannedCheck] = {}
        for unit in sorted(units, key=lambda one: one.item.path):
            case = unit.case
            if case is not None:
                rate = unit.item.definition.get("min_pass_rate")
                if rate is not None:
                    family_gates[unit.item.definition["id"]] = float(rate)
                calibration = unit.item.definition.get("calibration")
                if calibration:
                    family_calibration[unit.item.definition["id"]] = calibration
                if case.definition.get("skip"):
                    skipped.append(_skipped(unit=unit))
                    continue
                script = frozen_by_path[unit.item.path]
                template = templates.get(unit.item.path)
                if template is None:
                    template = templates[unit.item.path] = _case_template(unit=unit, frozen=script)
                    if template.snapshot and script is not None and script.data is not None:
                        snapshots[template.snapshot] = script.data
                checks.append(_plan_case(template=template, case=case, case_index=unit.case_index))
                continue
            if unit.definition.get("skip"):
                skipped.append(_skipped(unit=unit))
                continue
            script = _freeze(item=unit.item)
            planned, frozen_bytes = _plan_check(unit=unit, frozen=script)
            checks.append(planned)
            if planned.snapshot and frozen_bytes is not None:
                snapshots[planned.snapshot] = frozen_bytes
        if require_scripts:
            errors.extend(unavailable_scripts(checks=checks))
    # The shard filter comes last; the digest and the count describe the whole selection.
    digest = selection_digest(checks=checks, project_root=config.project_root)
    selected = len(checks)
    allow_empty = None
    if selection.select is not None and not errors:
        # --select: the file is the plan; its part under --shard K/N was decided when it was read.
        checks, digest = apply_select(
            checks=checks, select=selection.select, project_root=config.project_root
        )
        # The plan selected its skipped checks: one it left out is not listed, as on one machine.
        listed = set(selection.select.skipped_ids)
        skipped = [item for item in skipped if item.check_id in listed]
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
        family: size for family, size in family_sizes.items() if family in planned_families
    }
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
            "family_calibration": family_calibration,
        }
    )
    return ValidationOutcome(plan=plan, snapshots=snapshots)


def _subset_of(*, units: list[Unit], subset: CaseSubset) -> list[Unit]:
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


def _family_sizes(*, units: list[Unit]) -> dict[str, int]:
    """Each family's cases that are not skipped, before any selection (in one pass: a
    family of 10,000 cases is 10,000 units)."""
    sizes: dict[str, int] = {}
    for unit in units:
        case = unit.case
        if case is not None and not case.definition.get("skip"):
            family = unit.item.definition["id"]
            sizes[family] = sizes.get(family, 0) + 1
    return sizes


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
    for relative, data in outcome.snapshots.items():
        write_bytes_atomic(path=run_dir / relative, data=data)
    return write_model(path=stage_path(run_dir=run_dir, stage="validate"), model=outcome.plan)
