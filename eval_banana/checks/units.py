"""The units a plan is made of: each loaded check file as it is, or each family expanded into
its cases, with every dataset problem told at its line; and a family as it expands now.

Imported by the validate stage on every run: the expansion (`datasets.expand`) is imported
where a family needs it, so a project without families never loads it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from eval_banana.checks.definition import (
    FrozenScript,
    freeze_script,
    load_definition,
    parse_yaml_mapping,
    validate_mapping,
)
from eval_banana.checks.idloading import CaseIds, family_left_out
from eval_banana.checks.loading import Loaded, problem_model
from eval_banana.core.errors import DefinitionError
from eval_banana.datasets.keys import is_family
from eval_banana.models.config import Selection
from eval_banana.models.stages import ConfigDoc, ProblemModel

if TYPE_CHECKING:
    from eval_banana.datasets.expand import ExpandedCase, Expansion
    from eval_banana.datasets.globwalk import Skipped


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


def freeze(*, item: Loaded) -> FrozenScript | None:
    """The frozen copy of the script `item` names in `script_path`, or None without one."""
    script_path = item.definition.get("script_path")
    if not script_path:
        return None
    return freeze_script(yaml_path=Path(item.path), script_path=script_path, yaml_data=item.data)


def expand(
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
        from eval_banana.datasets.globwalk import dataset_skipped

        if skipped is None:
            skipped = dataset_skipped(config=config)
        script = frozen[item.path] = freeze(item=item)
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
        files, digest = expansion.files, expansion.family_digest
        # Positional: a family of 10,000 cases makes 10,000 units.
        units.extend(
            Unit(item, case, files, index, digest) for index, case in enumerate(expansion.cases)
        )
    return units, problems, frozen


def _expansion(
    *, item: Loaded, config: ConfigDoc, script: FrozenScript | None, skipped: Skipped
) -> Expansion:
    """The family `item` as it expands: its cases and problems."""
    from eval_banana.datasets.expand import expand_family
    from eval_banana.datasets.sources import CaseLimit

    return expand_family(
        definition=item.definition,
        check_file=item.path,
        project_root=Path(config.project_root),
        max_cases=CaseLimit.of(config=config),
        script=script.data if script is not None else None,
        skipped=skipped,
        check_text=item.data.decode("utf-8", errors="replace"),
    )


def case_ids_of(*, config: ConfigDoc) -> CaseIds:
    """A family's case ids, for the did-you-mean of a `--check-id` whose family id names no
    check: the family expands as it would run (only such a value pays for it)."""

    def case_ids(item: Loaded) -> list[str]:
        from eval_banana.datasets.globwalk import dataset_skipped

        expansion = _expansion(
            item=item,
            config=config,
            script=freeze(item=item),
            skipped=dataset_skipped(config=config),
        )
        return [case.case_id for case in expansion.cases]

    return case_ids


# The check file's lists whose items a family's problem is told at by the item's line.
_ITEMS_TOLD_BY_LINE = ("cases.", "calibration.")


def _locate_in_check_file(*, problems: list[ProblemModel], item: Loaded) -> None:
    """Give the family's problems told at a field of its check file (`cases_from`, its own
    `cases:` items such as `cases.2.id`) the line and column they are at: a second parse of
    the file, which only a family with such a problem pays for. A problem in an item of its
    own `cases:` or of its `calibration:` has the item's line already (its message names it);
    here it gets its field's."""
    unplaced = [
        problem
        for problem in problems
        if problem.file == item.path
        and problem.field_path
        and (problem.line is None or problem.field_path.startswith(_ITEMS_TOLD_BY_LINE))
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
            validate_mapping(document=case.definition, path=item.path, filled_case=True)
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


def rows_of_broken_families(
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
        from eval_banana.datasets.globwalk import dataset_skipped
        from eval_banana.datasets.sources import CaseLimit

        expansion = expand_family(
            definition=rows_only,
            check_file=path,
            project_root=Path(config.project_root),
            max_cases=CaseLimit.of(config=config),
            skipped=dataset_skipped(config=config),
        )
        found.extend(problem_model(problem) for problem in expansion.problems)
    return found


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
    from eval_banana.datasets.globwalk import dataset_skipped
    from eval_banana.datasets.sources import CaseLimit

    return expand_family(
        definition=definition,
        check_file=source_path,
        project_root=Path(config.project_root),
        max_cases=CaseLimit.of(config=config),
        script=frozen.data if frozen is not None else None,
        skipped=dataset_skipped(config=config),
        check_text=data.decode("utf-8", errors="replace"),
    )


def family_digest_over(*, source_path: str, script: bytes) -> str | None:
    """The digest of the family defined in `source_path` as its file is now, but over `script`
    as the script its `script_path` names (None when the file no longer loads): equal to the
    digest a plan recorded, the script is all of the family that changed."""
    from eval_banana.datasets.casedigest import family_digest

    source = Path(source_path)
    try:
        definition = load_definition(data=source.read_bytes(), path=source)
    except (OSError, DefinitionError):
        return None
    return family_digest(definition=definition, script=script)


def family_picks_of(
    *, units: list[Unit], kept: Collection[str], root: str, selection: Selection
) -> dict[str, str]:
    """The check file of each family some of whose cases are not in `kept` (the ids the plan
    holds, run or skipped) -> the digest of what `selection` picks of its cases
    (`rows_picked_digest`), over all its cases: a row left out that the same selection would
    pick now (under `--tag fast`, one that gains `fast`) changes it. The file is named
    relative to `root` (as given outside it)."""
    from eval_banana.checks.rowpicks import rows_picked_digest

    by_file: dict[str, list[ExpandedCase]] = {}
    left_out: set[str] = set()
    for unit in units:
        if unit.case is not None:
            by_file.setdefault(unit.item.path, []).append(unit.case)
            if unit.check_id not in kept:
                left_out.add(unit.item.path)
    return {
        _root_relative(path=path, root=root): rows_picked_digest(cases=cases, selection=selection)
        for path, cases in by_file.items()
        # A family the plan holds whole: each row is compared on its own.
        if path in left_out
    }


def _root_relative(*, path: str, root: str) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path


class FamilyRows(NamedTuple):
    """What `eb status` compares a family by, read from its units before any selection."""

    case_ids: dict[str, list[str]]  # family -> ids of its cases that are not skipped
    file_rows: dict[str, list[int]]  # family -> rows per file (skipped too), in family_files order


def family_rows_of(*, units: list[Unit]) -> FamilyRows:
    """Each family's case ids and rows per file, in one pass over the units (a family of
    10,000 cases is 10,000 units): a case's case_index then says which file its row is in,
    the check file's own `cases:` counted as its first file."""
    ids: dict[str, list[str]] = {}
    counts: dict[str, dict[str, int]] = {}
    files: dict[str, list[str]] = {}
    for unit in units:
        case = unit.case
        if case is None:
            continue
        family = unit.item.definition["id"]
        if not case.definition.get("skip"):
            ids.setdefault(family, []).append(case.case_id)
        if unit.family_files:
            files.setdefault(family, unit.family_files)
            held = case.origin.file if case.origin.inline_index is None else unit.family_files[0]
            per_file = counts.setdefault(family, {})
            per_file[held] = per_file.get(held, 0) + 1
    file_rows = {
        family: [counts[family].get(name, 0) for name in names] for family, names in files.items()
    }
    return FamilyRows(case_ids=ids, file_rows=file_rows)
