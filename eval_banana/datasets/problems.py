"""How a family's problems with its rows are told: at the row (its file and line, or its item
of the check file's own `cases:`), and a text no row can fill as one error, not one per row."""

from __future__ import annotations

from eval_banana.core.errors import DefinitionError
from eval_banana.core.jsonvalues import TOO_SMALL
from eval_banana.core.suggest import closest
from eval_banana.datasets.celltypes import NumberOutOfRange
from eval_banana.datasets.render import (
    RenderProblem,
    json_kind,
    not_text_message,
    unplaceable,
)
from eval_banana.datasets.rows import Row, row_line, row_where

# Up to this many cases share one rendering problem, each is its own error; beyond, they are one
# error with their count (a typo in a family's description is one mistake, not 10,000).
RENDER_PROBLEMS_LISTED = 3


def _render_hint(problem: RenderProblem, *, row: Row, kinds: list[str] | None = None) -> str:
    """The fix for a text the rows could not fill: what to change, and where. `kinds`: for a
    value that is not text, what the values of the rows told together are (else the one's)."""
    place = problem.place or "the family's text"
    if problem.kind == "not_text" and row.cells_are_text:
        # A CSV cell is text: only the family's case_schema made it another type, which the
        # family wants (to grade it as a number, say). "Write it as text" would undo that.
        return (
            f"case_schema types {problem.field}, so its cells are read as values, not text, "
            f"and a placeholder inside text takes a text field: take {{{{ case.{problem.field} "
            f"}}}} out of {place}, or give the rows a text column of their own for it"
        )
    if problem.kind == "not_text":
        found = kinds or [str(problem.value_kind)]
        # `"1", not 1` fits a number; a null, a list, a mapping or a boolean has no one text.
        example = ' ("1", not 1)' if found == ["a number"] else ""
        return (
            f"a placeholder inside text takes a text field: write {problem.field} as text in "
            f"the dataset{example}, or take {{{{ case.{problem.field} }}}} out of {place}"
        )
    if problem.kind == "input_pattern":
        return (
            f"a value filling {place} names the file the case reads, below the project root "
            f"(a path such as a.txt or sub/a.txt): fix {problem.field} in the row"
        )
    if problem.kind == "blank_operand":
        return (
            f"write the text {place} should find in {problem.field} of the row (a blank cell "
            f"is most often one left empty by mistake), or take {{{{ case.{problem.field} }}}} "
            f"out of {place}; to look for a space, write the value in the check file itself"
        )
    if problem.kind == "key_clash":
        return f"give the mapping in {place} keys that differ in every row"
    if problem.kind == "path_syntax":
        return (
            f"a path cannot address a key holding '.', '[' or ']' (docs/assertions.md#paths): "
            f"give the artifact and the row such keys without them, or grade these cases in a "
            f"deterministic script that reads the key; a value of {problem.field} is never "
            "read as path syntax"
        )
    if problem.kind == "path_index":
        return (
            f'an index a row fills is a whole number (3, or the text "3"): fix '
            f"{problem.field} in the row; for any element, write [*] in {place} itself"
        )
    if problem.field == "id":
        # A row without an id is still named, by its place, which its script reads as
        # `case_id`: a placeholder fills only a field the row has.
        return (
            f"a row without an id field is named by its place (1, 2, ...), and a placeholder "
            f"fills only the row's own fields: give the rows an id column, or take "
            f"{{{{ case.id }}}} out of {place}"
        )
    return f"use {{{{ case.<field> }}}} in {place} with a field every row has"


def render_problems(
    *, failures: list[tuple[Row, str, RenderProblem]], check_file: str, rows: int
) -> list[DefinitionError]:
    """The errors for the cases that share one rendering problem (one kind, one field)."""
    first_row, first_id, first = failures[0]
    field_path = f"case.{first.field}" if first.field else "cases"
    if len(failures) <= RENDER_PROBLEMS_LISTED:
        return [
            DefinitionError(
                f"{check_file}: case '{case_id}' ({_where(row=row, check_file=check_file)}): "
                f"{_told(problem=exc, row=row)}",
                # A few rows: most likely the rows lack what the family asks of every row.
                file=row.file,
                line=row_line(row),
                field_path=row_field(row=row, field=field_path),
                hint=_render_hint(exc, row=row),
            )
            for row, case_id, exc in failures
        ]
    last_row, last_id, _ = failures[-1]
    told = _told(problem=first, row=first_row)
    kinds: list[str] | None = None
    if first.kind == "not_text" and first.field is not None:
        # The rows' values may be of several kinds (null in one, a list in another): the
        # summary names each, true of every row it stands for.
        kinds = list(dict.fromkeys(str(exc.value_kind) for _, _, exc in failures))
        told = f"{first.place}: " if first.place else ""
        told += not_text_message(field=first.field, kinds=kinds)
    return [
        DefinitionError(
            f"{check_file}: {len(failures):,} of {rows:,} cases: "
            f"{told}; the first is "
            f"case '{first_id}' ({_where(row=first_row, check_file=check_file)}), the last "
            f"case '{last_id}' ({_where(row=last_row, check_file=check_file)})",
            # Many rows: most likely the family's text asks for what no row has.
            file=check_file,
            field_path=field_path,
            hint=_render_hint(first, row=first_row, kinds=kinds),
        )
    ]


def _told(*, problem: RenderProblem, row: Row) -> str:
    """The problem as an error says it: a missing field with the row's field it most likely
    meant (worked out per error told, not per failing row: 10,000 rows can share one)."""
    if problem.kind != "missing" or problem.field is None or not isinstance(row.value, dict):
        return problem.told
    outer = problem.field.split(".", 1)[0]
    if outer != problem.field and isinstance(row.value.get(outer), dict | list):
        # `{{ case.answer.text }}`: placeholders have no paths into a value, by design.
        return (
            f"{problem.told} ('{outer}' is {json_kind(row.value[outer])}: a placeholder names "
            "one field of the row and cannot reach inside its value; give the row a field of "
            "its own for it)"
        )
    near = closest(problem.field, row.value)
    if near is None:
        return problem.told
    # The row's field a placeholder cannot name (`first name`): suggesting it led nowhere.
    return problem.told + f" ({unplaceable(near) or f'did you mean {near!r}?'})"


def _where(*, row: Row, check_file: str) -> str:
    """Where a row is, for a message that names the check file already (in parentheses)."""
    where = row_where(row, in_parentheses=True)
    return where if row.file == check_file else f"{row.file} {where}"


def row_field(*, row: Row, field: str) -> str:
    """Where a row's problem lies, as a field path: in the check file's own `cases:`, the item
    (`cases.2`, `cases.2.id`), which `eb validate` turns into a line; else the dataset's
    field."""
    if row.inline_index is None:
        return field
    inside = "" if field == "cases" else "." + field.removeprefix("case.")
    return f"cases.{row.inline_index}{inside}"


def row_problem(*, row: Row, message: str, hint: str, field: str = "cases") -> DefinitionError:
    return DefinitionError(
        f"{row.file} {row_where(row)}: {message}",
        file=row.file,
        line=row_line(row),
        field_path=row_field(row=row, field=field),
        hint=hint,
    )


def assertion_place(*, index: int, key: str) -> str:
    """A check file's assertion field as every message names it: `assert.0.path` is the first
    assertion's path, counted from 0 as a field path counts (`cases.1.id`), and as
    `eb validate --json` gives it in `field_path`."""
    return f"assert.{index}.{key}"


def family_field(field_path: str) -> str:
    """A check file's field as the family's text names it: `assertions.assert.0.equals.path`
    (the models' path, with the check's type and the assertion's operator) is
    `assert.0.path`, as a rendering problem's place is told."""
    parts = field_path.split(".")
    if parts[0] in ("assertions", "deterministic", "harness_judge"):
        parts = parts[1:]
    if len(parts) >= 2 and parts[0] == "assert" and parts[1].isdigit():
        return assertion_place(index=int(parts[1]), key=parts[-1])
    return ".".join(parts)


def filled_in_problem(*, row: Row, case_id: str, place: str, message: str) -> DefinitionError:
    """A case whose values, filled into the family's text, make a definition that is not
    valid (a path that does not parse, a pattern RE2 refuses): told at the row, which the
    family's text was valid without."""
    return row_problem(
        row=row,
        message=f"case '{case_id}': {place}: {message}",
        hint=f"the row's values, filled into {place}, must make a valid check: fix the row, "
        f"or change {place} in the check file",
    )


def out_of_range(*, row: Row, exc: NumberOutOfRange) -> DefinitionError:
    """A CSV cell typed a number that is too large or too close to zero to read; quoting it
    is no fix in a CSV."""
    keep = f"type {exc.field} as string in case_schema to keep the cell as text"
    if float(exc.cell) == 0.0:
        what, fix = TOO_SMALL, f"write 0 if zero is meant, or {keep}"
    else:
        infinity = "-Infinity" if exc.cell.startswith("-") else "Infinity"
        what = (
            "beyond the largest number a program reads from JSON (about 1.8e308): read, it "
            f"would be {infinity}, which JSON cannot say"
        )
        fix = f"write a smaller number, or {keep}"
    return row_problem(
        row=row,
        message=f"field {exc.field} holds the number {exc.cell}, {what}",
        hint=fix,
        field=exc.field,
    )
