"""A family (a check with `cases:` / `cases_from:`) expanded into one definition per case.

Each case's definition is the family's, minus the dataset keys, with its text rendered, its
tags and skip added, and its id still the family's (the case check's id, `<family>[<case>]`,
is the plan's). Its digest (casedigest) frames the family's normalized definition (without its
cases and calibration cases), the case's canonical JSON and, for a row without an `id`, the
place that names it: editing one row changes one digest.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.core.caseid import case_check_id
from eval_banana.core.errors import DefinitionError
from eval_banana.core.jsonencoder import reused_encoder
from eval_banana.core.jsonvalues import Unsayable, unsayable
from eval_banana.core.realpaths import real_path
from eval_banana.datasets.casedigest import (
    CANONICAL_ENCODER,
    component,
    family_digest,
    family_hash,
)
from eval_banana.datasets.casefields import CASE_ID, Refused, bad_id_message, case_tags, row_case_id
from eval_banana.datasets.casesfrom import empty_glob_hint
from eval_banana.datasets.celltypes import NumberOutOfRange, cell_readers, typed_row
from eval_banana.datasets.familytext import FamilyRenderer
from eval_banana.datasets.globwalk import Skipped, relative
from eval_banana.datasets.problems import out_of_range, render_problems, row_problem
from eval_banana.datasets.render import RenderProblem, json_kind
from eval_banana.datasets.rows import Row
from eval_banana.datasets.rowschema import error_message, first_error, row_validator
from eval_banana.datasets.sources import CaseLimit, dataset_rows, too_many

_LOGIC_HINT = "eb fills {{ case.<field> }} placeholders and runs no loops, conditions or filters"


class ExpandedCase(NamedTuple):
    """One case of a family, ready to plan as a check."""

    check_id: str
    case_id: str
    row: dict[str, Any]
    definition: dict[str, Any]
    digest: str
    origin: Row  # where the row is, for an error about what it filled in


class Expansion(NamedTuple):
    """A family's cases, the project files that define it, and every problem found;
    `family_digest`: the digest of the family's definition without its cases (what a judge
    family's calibration is measured under: a row edited or added leaves it as it is)."""

    cases: list[ExpandedCase]
    files: list[str]
    problems: list[DefinitionError]
    family_digest: str | None = None


class _FirstId(NamedTuple):
    """Where a case id was first met, and whether it is that row's place (it has no `id`)."""

    where: str
    placed: bool


def _duplicate_id(*, row: Row, case_id: str, first: _FirstId, placed: bool) -> DefinitionError:
    """A row whose case id another row's already is. An id a row has by its place (it has no
    `id` field) is told as such: renaming it means giving that row an id."""
    if not placed and not first.placed:  # two positions never meet: one id is given
        return row_problem(
            row=row,
            message=f"duplicate case id '{case_id}' (first at {first.where})",
            hint="case ids must be unique within the family; rename one",
            field="id",
        )
    if placed:
        said = (
            f"case id '{case_id}' is this row's position (it has no id), which is also the id "
            f"of the row at {first.where}"
        )
        hint = "give this row an id (or the other row another one)"
    else:
        said = (
            f"duplicate case id '{case_id}': the row at {first.where} has no id and is named "
            "by its position, which is this id"
        )
        hint = f"give the row at {first.where} an id, or this row another one"
    return row_problem(row=row, message=said, hint=hint, field="cases" if placed else "id")


def _empty_family_hint(
    *, definition: dict[str, Any], root: Path, check_file: str, skipped: Skipped
) -> str:
    """The fix for a family without cases, by where its cases were to come from."""
    source = definition.get("cases_from")
    if not source:
        return (
            "add cases to its cases: list, or delete cases: to make it one check: an empty "
            "family would pass without checking anything"
        )
    likely = empty_glob_hint(pattern=str(source), root=root, check_file=check_file, skipped=skipped)
    return likely or (
        "add rows to the dataset or fix cases_from: an empty family would pass without "
        "checking anything"
    )


def expand_family(
    *,
    definition: dict[str, Any],
    check_file: str,
    project_root: Path,
    max_cases: CaseLimit,
    skipped: Skipped,
    script: bytes | None = None,
    check_text: str | None = None,
) -> Expansion:
    """Every case of one family, or every problem of its dataset (all rows, one pass).
    `skipped`: where a `cases_from` glob never looks; `check_text`: the check file's text, to
    tell the line of a problem in its own `cases:`."""
    problems: list[DefinitionError] = []
    family = str(definition["id"])
    root = real_path(project_root)
    rows, files = dataset_rows(
        definition=definition,
        root=root,
        check_file=check_file,
        skipped=skipped,
        problems=problems,
        max_cases=max_cases,
        check_text=check_text,
    )
    own = relative(path=real_path(check_file), root=root)
    # A file or line that could not be read is reported with what is wrong in the rows that
    # could, so one `eb validate` names every bad row (the family expands to nothing either way).
    if not rows and problems:
        return Expansion(cases=[], files=[own, *files], problems=problems)
    if not rows:
        where = (
            f"cases_from {definition.get('cases_from')!r}"
            if files or definition.get("cases_from")
            else "cases"
        )
        problems.append(
            DefinitionError(
                f"Family '{family}' in {check_file} has no cases ({where} gives none)",
                file=check_file,
                field_path="cases_from" if definition.get("cases_from") else "cases",
                hint=_empty_family_hint(
                    definition=definition, root=root, check_file=check_file, skipped=skipped
                ),
            )
        )
        return Expansion(cases=[], files=[own, *files], problems=problems)
    if len(rows) > max_cases.limit:
        problems.append(
            too_many(family=family, check_file=check_file, count=len(rows), max_cases=max_cases)
        )
        return Expansion(cases=[], files=[own, *files], problems=problems)
    try:
        validator = row_validator(schema=definition.get("case_schema"), check_file=check_file)
    except DefinitionError as exc:
        return Expansion(cases=[], files=[own, *files], problems=[exc])
    readers = cell_readers(definition.get("case_schema")) if validator is not None else {}
    base = family_hash(definition=definition, script=script)
    digest_of_family = family_digest(definition=definition, script=script)
    width = len(str(len(rows)))
    # case id -> the row it was first met in, and whether that row has no `id` (the phrase
    # saying where it is is made only for a duplicate)
    seen: dict[str, tuple[Row, bool]] = {}
    cases: list[ExpandedCase] = []
    family_tags = list(definition.get("tags") or [])
    sample = next((row.value for row in rows if type(row.value) is dict), {})
    renderer = FamilyRenderer(definition=definition, sample=sample)
    if renderer.problem is not None:
        return Expansion(
            cases=[],
            files=[own, *files],
            problems=[
                DefinitionError(
                    f"{check_file}: {renderer.problem.told}",
                    file=check_file,
                    field_path=renderer.problem_at,
                    hint=renderer.problem.hint
                    or (
                        _LOGIC_HINT
                        if renderer.problem.kind == "logic"
                        else "use {{ case.<field> }}, or write {{{{ for a literal {{"
                    ),
                )
            ],
        )
    fullmatch_id = CASE_ID.fullmatch
    canonical_of = reused_encoder(CANONICAL_ENCODER)  # casedigest._canonical's text, per case
    # (kind, field) -> the cases a text of the family could not be rendered for, told at the end
    unrendered: dict[tuple[str, str | None, str | None], list[tuple[Row, str, RenderProblem]]] = {}
    # The case's component header (casedigest.component) up to its length, built once.
    case_frame = struct.pack(">Q", len(b"case")) + b"case"
    for position, row in enumerate(rows, start=1):
        value = row.value
        if type(value) is not dict:
            problems.append(
                row_problem(
                    row=row,
                    message=f"a case must be a mapping of field names to values, not "
                    f"{json_kind(value)}",
                    hint='write each case as an object / mapping such as {"id": "a", ...}',
                )
            )
            continue
        if readers and row.cells_are_text:
            try:
                value = typed_row(row=value, readers=readers)
            except NumberOutOfRange as exc:
                problems.append(out_of_range(row=row, exc=exc))
                continue
        # A key that is not text (YAML's `{1: bad}`) the encoder would write as text without a
        # word: a row that may hold one (not JSON's nor CSV's) is walked for it first.
        found = None if row.string_keys else unsayable(value)
        if found is None:
            try:
                canonical = canonical_of(value).encode()
            except (TypeError, ValueError):
                found = unsayable(value) or Unsayable("", "a value", "quote the value")
        if found is not None:
            field = found.field
            problems.append(
                row_problem(
                    row=row,
                    message=f"{f'field {field}' if field else 'the case'} holds {found.what}, "
                    f"{found.why}",
                    hint=found.fix,
                    field=field or "cases",
                )
            )
            continue
        given = value.get("id")
        # The common case inline: an id that is a valid string (a call per case adds up).
        if type(given) is str and fullmatch_id(given):
            case_id: str | None = given
        else:
            case_id = row_case_id(value=value, position=position, width=width)
        if case_id is None:
            problems.append(
                row_problem(
                    row=row,
                    message=bad_id_message(value.get("id")),
                    hint="give the case an id such as refund-01",
                    field="id",
                )
            )
            continue
        if case_id in seen:
            first_row, first_placed = seen[case_id]
            first = _FirstId(f"{first_row.file} {first_row.where}", placed=first_placed)
            problems.append(
                _duplicate_id(row=row, case_id=case_id, first=first, placed=given is None)
            )
            continue
        seen[case_id] = (row, given is None)
        if validator is not None:
            try:
                error = first_error(validator=validator, row=value, check_file=check_file)
            except DefinitionError as exc:  # the schema's fault, not the row's: one error
                return Expansion(cases=[], files=[own, *files], problems=[exc])
            if error is not None:
                parts = [str(part) for part in error.absolute_path]
                at = "/".join(parts)
                # Told at the row's own field when the schema names one (`cases.1.age` in the
                # check file's own cases, which validate turns into a line), else at the row.
                dotted = ".".join(parts)
                problems.append(
                    row_problem(
                        row=row,
                        message=f"case '{case_id}' does not match case_schema"
                        + (f" at {at}" if at else "")
                        + f": {error_message(error)}",
                        hint="fix the row or the family's case_schema",
                        field=f"case.{dotted}" if dotted else "cases",
                    )
                )
                continue
        tags: list[str] = []
        skip: str | None = None
        if "tags" in value or "skip" in value:
            extra = case_tags(value=value, cells=row.cells_are_text)
            if isinstance(extra, Refused):
                problems.append(
                    row_problem(
                        row=row,
                        message=f"case '{case_id}': {extra.said}",
                        hint=extra.hint,
                        field=extra.field,
                    )
                )
                continue
            tags, skip = extra
        try:
            rendered = renderer.render(case_id=case_id, row=value)
        except RenderProblem as exc:
            unrendered.setdefault((exc.kind, exc.field, exc.place), []).append((row, case_id, exc))
            continue
        if tags:
            rendered["tags"] = list(dict.fromkeys([*family_tags, *tags]))
        if skip is not None and not rendered.get("skip"):
            rendered["skip"] = skip
        digest = base.copy()
        digest.update(case_frame + struct.pack(">Q", len(canonical)) + canonical)
        if given is None:
            # A row without an id is named by its place, which its script and its judge see:
            # two equal rows, or a row that moved, are different cases with their own verdicts.
            digest.update(component(name=b"position", content=case_id.encode()))
        cases.append(
            ExpandedCase(
                case_check_id(family=family, case_id=case_id),
                case_id,
                value,
                rendered,
                "sha256:" + digest.hexdigest(),
                row,
            )
        )
    for failures in unrendered.values():
        problems.extend(render_problems(failures=failures, check_file=check_file, rows=len(rows)))
    if renderer.calibration:  # loaded only for a family that has calibration cases
        from eval_banana.datasets.calibrationcases import calibration_problems

        problems.extend(
            calibration_problems(
                renderer=renderer,
                check_file=check_file,
                validator=validator,
                check_text=check_text,
            )
        )
    if problems:
        # Lines that could not be read were noted first: list each file's problems in order.
        problems.sort(key=lambda problem: (problem.file or "", problem.line or 0))
        return Expansion(cases=[], files=[own, *files], problems=problems)
    return Expansion(
        cases=cases, files=[own, *files], problems=problems, family_digest=digest_of_family
    )
