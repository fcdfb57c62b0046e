"""The check files a plan is made of, loaded: every discovered file (each problem collected, then
every duplicate id), and the reading and parsing that loading only the files `--check-id` names
(`idloading.py`) shares."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from eval_banana.checks.definition import load_definition, parse_yaml_mapping
from eval_banana.core.errors import DefinitionError, Problem, problem_of
from eval_banana.core.readback import read_regular
from eval_banana.core.record import Record
from eval_banana.models.stages import FieldProblem, ProblemModel


class Loaded(Record):
    path: str  # a plain string: thousands of Path objects cost real start-up time
    data: bytes
    definition: dict[str, Any]  # normalized, as the check models dump it


def model_of(problem: Problem, *, fields: tuple[Problem, ...] = ()) -> ProblemModel:
    """One problem as a stage file records it, with a check file's field errors one by one."""
    return ProblemModel(
        message=problem.message,
        file=problem.file,
        field_path=problem.field_path,
        hint=problem.hint,
        line=problem.line,
        column=problem.column,
        fields=[
            FieldProblem(
                field_path=field.field_path,
                line=field.line,
                column=field.column,
                message=field.message,
                hint=field.hint,
            )
            for field in fields
        ],
    )


def problem_model(exc: DefinitionError) -> ProblemModel:
    return model_of(problem_of(exc), fields=exc.field_errors)


Reader = Callable[[str], bytes]


def reader_over(contents: Mapping[str, bytes] | None) -> Reader:
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


def load_strict(*, paths: list[str], read: Reader) -> tuple[list[Loaded], list[ProblemModel]]:
    """Load every file; collect every problem, then every duplicate id."""
    loaded: list[Loaded] = []
    problems: list[ProblemModel] = []
    first_by_id: dict[str, str] = {}
    for path in paths:
        try:
            data = _read(path, read)
            definition = load_definition(data=data, path=path)
        except DefinitionError as exc:
            problems.append(problem_model(exc))
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


class Holder(NamedTuple):
    """A check file parsed to read its id."""

    path: str
    data: bytes
    document: dict[str, object]
    check_id: str  # its `id`, stripped


def id_holders(
    *, paths: list[str], marker: bytes, read: Reader, warnings: list[ProblemModel]
) -> Iterator[Holder]:
    """The files whose bytes hold `marker`, parsed: (path, bytes, document, stripped id).

    A file without the marker cannot declare a matching id and is not parsed; one that cannot
    be parsed might have, so it becomes a warning.
    """
    for holder, _, problem in parse_each(paths=paths, marker=marker, read=read):
        if problem is not None:
            warnings.append(problem)
        elif holder is not None:
            yield holder


def parse_each(
    *, paths: list[str], marker: bytes, read: Reader
) -> Iterator[tuple[Holder | None, bytes, ProblemModel | None]]:
    """Each readable file whose bytes hold `marker`: its holder (None when its id is no
    string), its bytes, and why it cannot be parsed (else None)."""
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
            yield None, data, problem_model(exc)
            continue
        raw_id = document.get("id")
        holder = Holder(path, data, document, raw_id.strip()) if isinstance(raw_id, str) else None
        yield holder, data, None
