"""Stage 3, validate: load every discovered file, select, freeze scripts, write plan.json."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from eval_banana.artifacts import write_bytes_atomic, write_model
from eval_banana.definition import (
    FrozenScript,
    definition_digest,
    freeze_script,
    load_definition,
    parse_yaml_mapping,
    validate_mapping,
)
from eval_banana.errors import DefinitionError, NoChecksError, Problem
from eval_banana.models.record import Field, Record
from eval_banana.models.stages import ConfigDoc, DiscoverDoc, PlanDoc, PlannedCheck, ProblemModel
from eval_banana.stages import stage_path
from eval_banana.stages.common import envelope
from eval_banana.stem import artifact_stem

SNAPSHOTS_DIR = "stages/snapshots"
NO_CHECKS = "No checks found"


class Loaded(Record):
    path: str  # a plain string: thousands of Path objects cost real start-up time
    data: bytes
    definition: dict[str, Any]  # normalized, as the check models dump it


class ValidationOutcome(Record):
    """The plan, plus the frozen script bytes the wrapper writes under stages/snapshots/."""

    plan: PlanDoc
    snapshots: dict[str, bytes] = Field(default_factory=dict)

    def raise_if_failed(self) -> None:
        if not self.plan.ok:
            raise_problems(self.plan.errors)


def raise_problems(problems: list[ProblemModel]) -> None:
    """Raise the first problem as a typed error, carrying all the others (B-74)."""
    first = problems[0]
    error_type = NoChecksError if first.message == NO_CHECKS else DefinitionError
    raise error_type(
        first.message,
        file=first.file,
        field_path=first.field_path,
        hint=first.hint,
        problems=tuple(
            Problem(message=p.message, file=p.file, field_path=p.field_path, hint=p.hint)
            for p in problems[1:]
        ),
    )


def _problem(exc: DefinitionError) -> ProblemModel:
    return ProblemModel(
        message=exc.message, file=exc.file, field_path=exc.field_path, hint=exc.hint
    )


Reader = Callable[[str], bytes]


def _reader(contents: Mapping[str, bytes] | None) -> Reader:
    """Read a check file, from the bytes discover already read when it ran in this process."""
    cache = contents or {}

    def read(path: str) -> bytes:
        data = cache.get(path)
        return data if data is not None else Path(path).read_bytes()

    return read


def _read(path: str, read: Reader) -> bytes:
    try:
        return read(path)
    except OSError as exc:
        raise DefinitionError(f"Cannot read check file {path}: {exc}", file=path) from None


def _load_strict(*, paths: list[str], read: Reader) -> tuple[list[Loaded], list[ProblemModel]]:
    """Load every file; collect every problem, then every duplicate id (B-72..B-74)."""
    loaded: list[Loaded] = []
    problems: list[ProblemModel] = []
    first_by_id: dict[str, str] = {}
    for path in paths:
        try:
            data = _read(path, read)
            definition = load_definition(data=data, path=path)
        except DefinitionError as exc:
            problems.append(_problem(exc))
            continue
        check_id = definition["id"]
        if check_id in first_by_id:
            problems.append(
                ProblemModel(
                    message=f"Duplicate check id '{check_id}' found in "
                    f"{first_by_id[check_id]} and {path}",
                    file=path,
                    field_path="id",
                    hint="Ids must be unique across the project; rename one of them.",
                )
            )
            continue
        first_by_id[check_id] = path
        loaded.append(Loaded(path=path, data=data, definition=definition))
    return loaded, problems


def _load_by_id(
    *, paths: list[str], check_id: str, read: Reader
) -> tuple[list[Loaded], list[ProblemModel]]:
    """Relaxed mode (B-75, B-76): only the file whose stripped id matches is loaded strictly."""
    needle = check_id.strip()
    matches: list[tuple[str, bytes, dict[str, object]]] = []
    warnings: list[ProblemModel] = []
    encoded = needle.encode()
    for path in paths:
        try:
            data = read(path)
        except OSError:
            continue
        # A file whose bytes do not contain the id cannot declare it: skip parsing it.
        if encoded not in data:
            continue
        try:
            document = parse_yaml_mapping(data=data, path=path)
        except DefinitionError as exc:
            warnings.append(_problem(exc))
            continue
        raw_id = document.get("id")
        if isinstance(raw_id, str) and raw_id.strip() == needle:
            matches.append((path, data, document))
    if not matches:
        raise DefinitionError(f"No check found with id '{check_id}'", field_path="check_id")
    if len(matches) > 1:
        joined = ", ".join(path for path, _, _ in matches)
        raise DefinitionError(
            f"Duplicate check id '{check_id}' found in: {joined}",
            file=matches[1][0],
            field_path="id",
        )
    path, data, document = matches[0]
    definition = validate_mapping(document=document, path=path)
    return [Loaded(path=path, data=data, definition=definition)], warnings


def _select_ids(
    *, paths: list[str], check_ids: list[str], read: Reader
) -> tuple[list[Loaded], list[ProblemModel], list[ProblemModel]]:
    """Relaxed selection by id: (checks, problems, warnings); any problem selects nothing."""
    selected: dict[str, Loaded] = {}
    warnings: list[ProblemModel] = []
    problems: list[ProblemModel] = []
    for check_id in check_ids:
        try:
            loaded, found_warnings = _load_by_id(paths=paths, check_id=check_id, read=read)
        except DefinitionError as exc:
            problems.append(_problem(exc))
            continue
        warnings.extend(found_warnings)
        for item in loaded:
            selected[item.path] = item
    unique_warnings = list({(w.file, w.message): w for w in warnings}.values())
    if problems:
        return [], problems, unique_warnings
    return [selected[path] for path in sorted(selected)], [], unique_warnings


def _plan_check(*, item: Loaded) -> tuple[PlannedCheck, bytes | None]:
    definition = item.definition
    stem = artifact_stem(check_id=definition["id"])
    script_path = definition.get("script_path")
    frozen: FrozenScript | None = None
    if script_path:
        frozen = freeze_script(yaml_path=Path(item.path), script_path=script_path)
    planned = PlannedCheck(
        id=definition["id"],
        type=definition["type"],
        description=definition["description"],
        source_path=item.path,
        stem=stem,
        check_definition_sha256=definition_digest(yaml_bytes=item.data, frozen=frozen),
        definition=definition,
        snapshot=f"{SNAPSHOTS_DIR}/{stem}.py" if frozen and frozen.data is not None else None,
        script_path=str(frozen.path) if frozen else None,
        script_unavailable=frozen.unavailable if frozen else None,
    )
    return planned, frozen.data if frozen else None


def validate(
    *,
    config: ConfigDoc,
    discovered: DiscoverDoc,
    inputs: dict[str, str],
    contents: Mapping[str, bytes] | None = None,
) -> ValidationOutcome:
    """Load, select (check ids, tags) and plan the checks; never raises for bad definitions.

    `contents` are the file bytes the discover stage read in this process (else read here).
    """
    paths = [item.path for item in discovered.files]
    errors = list(discovered.problems)
    warnings: list[ProblemModel] = []
    selection = config.selection
    if selection.check_ids:
        loaded, problems, warnings = _select_ids(
            paths=paths, check_ids=selection.check_ids, read=_reader(contents)
        )
    else:
        loaded, problems = _load_strict(paths=paths, read=_reader(contents))
    errors.extend(problems)
    if selection.tags:
        wanted = set(selection.tags)
        loaded = [item for item in loaded if wanted.intersection(item.definition["tags"])]
    narrowed = False  # --changed-since / --last-failed left nothing: a run that passes empty
    if loaded and not errors and (selection.changed_since is not None or selection.last_failed):
        from eval_banana.incremental import select_incremental

        kept = select_incremental(
            config=config, checks=[(item.path, item.definition) for item in loaded]
        )
        narrowed = not kept
        loaded = [loaded[position] for position in kept]
    if not loaded and not errors and not narrowed:
        errors.append(
            ProblemModel(
                message=NO_CHECKS,
                hint="Add YAML checks under an eval_checks/ folder, or widen --check-dir/--tag.",
            )
        )
    checks: list[PlannedCheck] = []
    snapshots: dict[str, bytes] = {}
    if not errors:
        for item in sorted(loaded, key=lambda loaded_item: loaded_item.path):
            planned, frozen_bytes = _plan_check(item=item)
            checks.append(planned)
            if planned.snapshot and frozen_bytes is not None:
                snapshots[planned.snapshot] = frozen_bytes
    plan = PlanDoc.model_validate(
        {
            **envelope(stage="validate", run_id=config.run_id, inputs=inputs),
            "ok": not errors,
            "checks": checks,
            "errors": sorted(errors, key=lambda problem: problem.file or ""),
            "warnings": warnings,
        }
    )
    return ValidationOutcome(plan=plan, snapshots=snapshots)


def write_validate_stage(*, run_dir: Path, outcome: ValidationOutcome) -> str:
    """Write the frozen scripts, then plan.json; return plan.json's digest."""
    for relative, data in outcome.snapshots.items():
        write_bytes_atomic(path=run_dir / relative, data=data)
    return write_model(path=stage_path(run_dir=run_dir, stage="validate"), model=outcome.plan)
