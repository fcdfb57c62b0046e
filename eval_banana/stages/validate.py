"""Stage 3, validate: load every discovered file, select, freeze scripts, write plan.json."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from eval_banana.checks.definition import (
    FrozenScript,
    definition_digest,
    freeze_script,
    load_definition,
    parse_yaml_mapping,
    validate_mapping,
)
from eval_banana.checks.selection import (
    compile_selector,
    id_matches_pattern,
    is_id_pattern,
    pattern_prefix,
)
from eval_banana.checks.shard import empty_reason, selection_digest, shard_checks
from eval_banana.core.errors import DefinitionError, NoChecksError, Problem
from eval_banana.core.files import write_bytes_atomic, write_model
from eval_banana.core.readback import read_regular
from eval_banana.core.record import Field, Record
from eval_banana.core.stem import artifact_stem
from eval_banana.models.config import Shard
from eval_banana.models.result import SkippedCheck
from eval_banana.models.stages import (
    ConfigDoc,
    DiscoverDoc,
    FieldProblem,
    PlanDoc,
    PlannedCheck,
    ProblemModel,
)
from eval_banana.stagefiles.layout import envelope, stage_path

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
    """Raise the first problem as a typed error, carrying all the others."""
    raise problems_error(problems)


def problems_error(problems: list[ProblemModel]) -> DefinitionError:
    """The typed error that stands for `problems`: the first, carrying all the others."""
    first = problems[0]
    error_type = NoChecksError if first.message == NO_CHECKS else DefinitionError
    return error_type(
        first.message,
        file=first.file,
        field_path=first.field_path,
        hint=first.hint,
        line=first.line,
        column=first.column,
        problems=tuple(
            Problem(
                message=p.message,
                file=p.file,
                field_path=p.field_path,
                hint=p.hint,
                line=p.line,
                column=p.column,
            )
            for p in problems[1:]
        ),
    )


def _problem(exc: DefinitionError) -> ProblemModel:
    return ProblemModel(
        message=exc.message,
        file=exc.file,
        field_path=exc.field_path,
        hint=exc.hint,
        line=exc.line,
        column=exc.column,
        fields=[
            FieldProblem(
                field_path=field.field_path,
                line=field.line,
                column=field.column,
                message=field.message,
                hint=field.hint,
            )
            for field in exc.field_errors
        ],
    )


Reader = Callable[[str], bytes]


def _reader(contents: Mapping[str, bytes] | None) -> Reader:
    """Read a check file, from the bytes discover already read when it ran in this process."""
    cache = contents or {}

    def read(path: str) -> bytes:
        data = cache.get(path)
        return data if data is not None else read_regular(path)

    return read


def _read(path: str, read: Reader) -> bytes:
    try:
        return read(path)
    except OSError as exc:
        raise DefinitionError(f"Cannot read check file {path}: {exc}", file=path) from None


def _duplicate_id(*, check_id: str, first: str, path: str, data: bytes) -> ProblemModel:
    from eval_banana.checks.problems import value_position  # only a project with a duplicate pays

    position = value_position(text=data.decode("utf-8", errors="replace"), key="id")
    where = f"\nid (line {position.line}, column {position.column})" if position else ""
    return ProblemModel(
        message=f"Duplicate check id '{check_id}' found in {first} and {path}{where}",
        file=path,
        field_path="id",
        hint="Ids must be unique across the project; rename one of them.",
        line=position.line if position else None,
        column=position.column if position else None,
    )


def _load_strict(*, paths: list[str], read: Reader) -> tuple[list[Loaded], list[ProblemModel]]:
    """Load every file; collect every problem, then every duplicate id."""
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
                _duplicate_id(check_id=check_id, first=first_by_id[check_id], path=path, data=data)
            )
            continue
        first_by_id[check_id] = path
        loaded.append(Loaded(path=path, data=data, definition=definition))
    return loaded, problems


def _id_holders(
    *, paths: list[str], marker: bytes, read: Reader, warnings: list[ProblemModel]
) -> Iterator[tuple[str, bytes, dict[str, object], str]]:
    """The files whose bytes hold `marker`, parsed: (path, bytes, document, stripped id).

    A file without the marker cannot declare a matching id and is not parsed; one that cannot
    be parsed might have, so it becomes a warning.
    """
    for path in paths:
        try:
            data = read(path)
        except OSError:
            continue
        if marker not in data:
            continue
        try:
            document = parse_yaml_mapping(data=data, path=path)
        except DefinitionError as exc:
            warnings.append(_problem(exc))
            continue
        raw_id = document.get("id")
        if isinstance(raw_id, str):
            yield path, data, document, raw_id.strip()


def _load_by_id(
    *, paths: list[str], check_id: str, read: Reader
) -> tuple[list[Loaded], list[ProblemModel]]:
    """Relaxed mode: only the file whose stripped id matches is loaded strictly."""
    needle = check_id.strip()
    matches: list[tuple[str, bytes, dict[str, object]]] = []
    warnings: list[ProblemModel] = []
    for path, data, document, found_id in _id_holders(
        paths=paths, marker=needle.encode(), read=read, warnings=warnings
    ):
        if found_id == needle:
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
    definition = validate_mapping(document=document, path=path, data=data)
    return [Loaded(path=path, data=data, definition=definition)], warnings


def _load_by_pattern(
    *, paths: list[str], pattern: str, read: Reader
) -> tuple[list[Loaded], list[ProblemModel]]:
    """Relaxed mode for a glob: every file whose stripped id matches is loaded strictly.

    As for an exact id, other files are not validated; a file that cannot be parsed is a
    warning when it might have matched (its bytes hold the pattern's literal prefix). Every
    problem of the matching files is raised at once (the first, carrying the others).
    """
    needle = pattern.strip()
    prefix = pattern_prefix(needle).encode()
    by_id: dict[str, list[tuple[str, bytes, dict[str, object]]]] = {}
    warnings: list[ProblemModel] = []
    for path, data, document, found_id in _id_holders(
        paths=paths, marker=prefix, read=read, warnings=warnings
    ):
        if id_matches_pattern(check_id=found_id, pattern=needle):
            by_id.setdefault(found_id, []).append((path, data, document))
    if not by_id:
        raise DefinitionError(
            f"No check id matches --check-id pattern '{pattern}'",
            field_path="check_id",
            hint="Patterns are shell-style and case-sensitive: * any text, ? one character, "
            "[abc] one of a, b, c. `eb list` shows every id.",
        )
    loaded: list[Loaded] = []
    problems: list[DefinitionError] = []
    for check_id, matches in by_id.items():
        if len(matches) > 1:
            joined = ", ".join(path for path, _, _ in matches)
            problems.append(
                DefinitionError(
                    f"Duplicate check id '{check_id}' found in: {joined}",
                    file=matches[1][0],
                    field_path="id",
                )
            )
            continue
        path, data, document = matches[0]
        try:
            definition = validate_mapping(document=document, path=path)
        except DefinitionError as exc:
            problems.append(exc)
            continue
        loaded.append(Loaded(path=path, data=data, definition=definition))
    if problems:
        first = problems[0]
        raise DefinitionError(
            first.message,
            file=first.file,
            field_path=first.field_path,
            hint=first.hint,
            problems=tuple(
                Problem(message=p.message, file=p.file, field_path=p.field_path, hint=p.hint)
                for p in problems[1:]
            ),
        )
    return loaded, warnings


def _select_ids(
    *, paths: list[str], check_ids: list[str], read: Reader
) -> tuple[list[Loaded], list[ProblemModel], list[ProblemModel]]:
    """Relaxed selection by id or glob: (checks, problems, warnings); a problem selects nothing."""
    selected: dict[str, Loaded] = {}
    warnings: list[ProblemModel] = []
    problems: list[ProblemModel] = []
    for check_id in check_ids:
        try:
            if is_id_pattern(check_id):
                loaded, found_warnings = _load_by_pattern(paths=paths, pattern=check_id, read=read)
            else:
                loaded, found_warnings = _load_by_id(paths=paths, check_id=check_id, read=read)
        except DefinitionError as exc:
            problems.append(_problem(exc))
            problems.extend(
                ProblemModel(message=p.message, file=p.file, field_path=p.field_path, hint=p.hint)
                for p in exc.problems
            )
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
        frozen = freeze_script(
            yaml_path=Path(item.path), script_path=script_path, yaml_data=item.data
        )
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


def _skipped(*, item: Loaded) -> SkippedCheck:
    definition = item.definition
    return SkippedCheck(
        check_id=definition["id"],
        check_type=definition["type"],
        description=definition["description"],
        source_path=item.path,
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
    if selection.check_ids:
        loaded, problems, warnings = _select_ids(
            paths=paths, check_ids=selection.check_ids, read=_reader(contents)
        )
    else:
        loaded, problems = _load_strict(paths=paths, read=_reader(contents))
    errors.extend(problems)
    if selector.keyword is not None or selector.tags:
        loaded = [
            item
            for item in loaded
            if selector.selects(check_id=item.definition["id"], tags=item.definition["tags"])
        ]
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
                hint="Add YAML checks under an eval_checks/ folder, or widen "
                "--check-dir, --check-id, -k or --tag.",
            )
        )
    checks: list[PlannedCheck] = []
    skipped: list[SkippedCheck] = []
    snapshots: dict[str, bytes] = {}
    if not errors:
        for item in sorted(loaded, key=lambda loaded_item: loaded_item.path):
            if item.definition.get("skip"):
                skipped.append(_skipped(item=item))
                continue
            planned, frozen_bytes = _plan_check(item=item)
            checks.append(planned)
            if planned.snapshot and frozen_bytes is not None:
                snapshots[planned.snapshot] = frozen_bytes
        if require_scripts:
            errors.extend(unavailable_scripts(checks=checks))
    # The shard filter comes last; the digest and the count describe the whole selection.
    digest = selection_digest(checks=checks, project_root=config.project_root)
    selected = len(checks)
    allow_empty = None
    if selection.shard is not None and not errors:
        checks = _shard_of_plan(checks=checks, shard=selection.shard, config=config)
        frozen = {check.snapshot for check in checks}
        snapshots = {name: data for name, data in snapshots.items() if name in frozen}
        if not checks:
            # A CI matrix job must not fail for being empty: the other shards hold the checks.
            allow_empty = empty_reason(shard=selection.shard, selected=selected)
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
        }
    )
    return ValidationOutcome(plan=plan, snapshots=snapshots)


def _shard_of_plan(
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
