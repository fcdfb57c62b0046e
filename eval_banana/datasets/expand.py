"""A family (a check with `cases:` / `cases_from:`) expanded into one definition per case.

Each case's definition is the family's, minus the dataset keys, with its text rendered, its
tags and skip added, and its id still the family's (the case check's id, `<family>[<case>]`,
is the plan's). Its digest frames the family's normalized definition (without its cases and
calibration cases), the case's canonical JSON and, for a row without an `id`, the place that
names it: editing one row changes one digest.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.core.caseid import CASE_ID_PATTERN, NO_REASON_WORDS, NUMBER_TEXT, case_check_id
from eval_banana.core.errors import DefinitionError
from eval_banana.core.jsonvalues import TOO_SMALL, Unsayable, unsayable
from eval_banana.datasets.celltypes import NumberOutOfRange, cell_readers, typed_row
from eval_banana.datasets.keys import DATASET_KEYS
from eval_banana.datasets.problems import assertion_place, render_problems, row_problem
from eval_banana.datasets.render import (
    RenderProblem,
    Template,
    compile_text,
    has_placeholder,
    json_kind,
    render_text,
    render_value,
    unfixable_in,
)
from eval_banana.datasets.rows import Row
from eval_banana.datasets.rowschema import error_message, first_error, row_validator
from eval_banana.datasets.sources import (
    Skipped,
    dataset_rows,
    empty_glob_hint,
    relative,
    too_many,
)

_CASE_ID = re.compile(CASE_ID_PATTERN)
_DIGEST_PREFIX = b"eval-banana/case-definition-sha256/v1\x00"
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


# Built once: json.dumps with options builds an encoder per call, and this runs per case.
# NaN and Infinity are refused: Python's json reads and writes them, but they are not JSON, and
# a script in another language would fail to read its case, or plan.json, over them.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode
_ONE_LINE = json.JSONEncoder(ensure_ascii=False).encode


def _canonical(value: object) -> bytes:
    return _CANONICAL(value).encode()


def _component(*, name: bytes, content: bytes) -> bytes:
    return struct.pack(">Q", len(name)) + name + struct.pack(">Q", len(content)) + content


def _family_hash(
    *, definition: dict[str, Any], script: bytes | None, calibration: bool = False
) -> Any:
    """The digest state every case of the family starts from (its cases left out). A case's
    digest leaves out the calibration cases too: they say how the judge was measured, not what
    a case checks, so editing one re-runs no case. `calibration`: kept in (the family's own
    digest, which its calibration is measured under)."""
    left_out = DATASET_KEYS if calibration else (*DATASET_KEYS, "calibration")
    kept = {key: value for key, value in definition.items() if key not in left_out}
    digest = hashlib.sha256(_DIGEST_PREFIX)
    digest.update(_component(name=b"family", content=_canonical(kept)))
    if script is not None:
        digest.update(_component(name=b"referenced-script", content=script))
    return digest


def family_digest(*, definition: dict[str, Any], script: bytes | None = None) -> str:
    """`sha256:<hex>` of a family's definition without its rows (Expansion.family_digest)."""
    hexdigest: str = _family_hash(
        definition=definition, script=script, calibration=True
    ).hexdigest()
    return "sha256:" + hexdigest


def _case_id(*, row: Row, value: dict[str, Any], position: int, width: int) -> str | None:
    given = value.get("id")
    if given is None:
        return str(position).zfill(width)
    if type(given) is int and given >= 0:
        return str(given)
    if isinstance(given, str) and _CASE_ID.fullmatch(given):
        return given
    return None


def _bad_id_message(given: object) -> str:
    """Why a row's `id` names no case, in the dataset's own terms (YAML's `true`, not
    Python's `True`)."""
    rule = "an id is text of ASCII letters, digits, '_', '-', '.' (or a whole number from 0)"
    if isinstance(given, str):
        if not given:
            return f"case id '' is empty; {rule}"
        # The first character that is not allowed: 'café' has letters, but not ASCII ones.
        bad = next(char for char in given if not _CASE_ID.fullmatch(char))
        what = "a space" if bad == " " else repr(bad)
        return f"case id {given!r} holds {what}; {rule}"
    shown = json.dumps(given, ensure_ascii=False)
    if isinstance(given, bool | int | float):
        what = "a boolean" if isinstance(given, bool) else "a number"
        return f'case id {shown} is {what}; {rule}: quote it ("{shown}") if that is what you meant'
    return f"case id {shown} is not text; {rule}"


# A CSV `tags` cell holds its tags as one text: `smoke, slow` or `smoke slow`.
_CELL_TAGS = re.compile(r"[\s,]+")
# A `skip` that reads as a yes/no or a number (a spreadsheet's checkbox column exports TRUE and
# FALSE, a flag column 0 and 1), or holds no letter or digit (`-`, a check mark): no reason. Taken
# as one, `FALSE` would skip the very case it means to run.
_NO_REASON = re.compile(rf"(?i:{'|'.join(NO_REASON_WORDS)})|{NUMBER_TEXT}|\W*")
_TAGS_HINT = "give tags a list of words (in a CSV cell: words separated by commas or spaces)"


class _Refused(NamedTuple):
    """What is wrong with a row's tags or skip, the fix, and the row's field it is told at."""

    said: str
    hint: str
    field: str = "cases"


def _case_tags(*, value: dict[str, Any], cells: bool) -> tuple[list[str], str | None] | _Refused:
    """A case's own tags and skip reason, or what is wrong with them. `cells`: a CSV row, whose
    every column has a cell in every row: an empty `skip` or `tags` cell says none, as a row
    without the field does (a spreadsheet's `skip` column is empty for the cases that run)."""
    tags = value.get("tags", [])
    skip = value.get("skip")
    if cells and isinstance(tags, str):
        tags = [tag for tag in _CELL_TAGS.split(tags) if tag]
    if cells and isinstance(skip, str) and not skip.strip():
        skip = None  # an empty cell: the case runs
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        return _Refused("tags must be a list of strings", _TAGS_HINT, "case.tags")
    if skip is None:
        return tags, None
    reason = skip.strip() if isinstance(skip, str) else ""
    if not reason or _NO_REASON.fullmatch(reason):
        runs = "leave the skip cell empty" if cells else "leave skip out (or write null)"
        return _Refused(
            f"skip {reason!r} is a yes/no, a number or a mark, not the reason the case is skipped"
            if reason
            else "skip must be a non-empty reason",
            f"{runs} for the case to run; write the reason to skip it (such as 'flaky upstream')",
            "case.skip",
        )
    return tags, reason


def _out_of_range(*, row: Row, exc: NumberOutOfRange) -> DefinitionError:
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


def fenced(*, case_id: str, row: dict[str, Any]) -> str:
    """The case's fields as a fenced JSON block (a fence longer than any backtick run)."""
    # One line of JSON: json's indenting encoder is pure Python, and this runs per case.
    body = _ONE_LINE(row)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0) if "`" in body else 0
    fence = "`" * max(3, longest + 1)
    return f"Case {case_id}:\n{fence}json\n{body}\n{fence}"


class _Renderer:
    """A family's text fields, prepared once: per case only what holds a placeholder is
    rendered (the YAML is never re-read, and 10,000 cases stay one linear pass)."""

    def __init__(self, *, definition: dict[str, Any], sample: dict[str, Any]) -> None:
        # The calibration cases belong to the family, measured once (the plan holds them once),
        # not to each case's definition.
        self.base = {
            key: value
            for key, value in definition.items()
            if key not in DATASET_KEYS and key != "calibration"
        }
        self.calibration: list[dict[str, Any]] = list(definition.get("calibration") or [])
        self.description = str(definition["description"])
        self.described = _template(self.description)
        self.kind = definition.get("type")
        instructions = str(definition.get("instructions") or "")
        self.placed = has_placeholder(instructions)
        self.instructions = instructions
        self.instructed = _template(instructions)
        # Without placeholders the instructions are the same text for every case (`{{{{`
        # written as `{{`), the case's block after them.
        self.fixed = ""
        # What no row can fix is one error for the family, at its field, not one per case.
        # `sample` (a row) only words the placeholder a stray `{{` most likely meant.
        self.problem, self.problem_at = self._unfixable(sample=sample)
        if self.problem is None and not self.placed and self.kind == "harness_judge":
            try:
                self.fixed = render_text(text=instructions, case={})
            except RenderProblem as exc:
                exc.place, self.problem, self.problem_at = "instructions", exc, "instructions"

    def _unfixable(self, *, sample: dict[str, Any]) -> tuple[RenderProblem | None, str]:
        """The first token of the family's texts that no row can fix (`{% if case.x %}`, a
        stray `{{`), with the place it is told at and its field's path in the check file."""
        texts: list[tuple[str, str, Any]] = [("description", "description", self.description)]
        if self.kind == "harness_judge":
            texts.append(("instructions", "instructions", self.instructions))
        elif self.kind == "assertions":
            texts.append(("artifact", "artifact", self.base.get("artifact")))
            for index, assertion in enumerate(self.base.get("assert") or []):
                if isinstance(assertion, dict):
                    for key in ("path", "value"):
                        place = assertion_place(index=index, key=key)
                        texts.append((place, place, assertion.get(key)))
        for place, field_path, value in texts:
            for text in _strings_in(value):
                found = unfixable_in(text, case=sample)
                if found is not None:
                    found.place = place
                    return found, field_path
        return None, ""

    def render(self, *, case_id: str, row: dict[str, Any]) -> dict[str, Any]:
        rendered = self.base.copy()
        place = "description"
        try:
            # A tag over the case was refused before any row; any other tag is text.
            if "{{" in self.description:
                rendered["description"] = self.described(row)
            if self.kind == "harness_judge":
                place = "instructions"
                if self.placed:
                    rendered["instructions"] = self.instructed(row)
                else:
                    rendered["instructions"] = f"{self.fixed}\n\n{fenced(case_id=case_id, row=row)}"
            elif self.kind == "assertions":
                place = "artifact"
                rendered["artifact"] = render_text(text=str(self.base["artifact"]), case=row)
                assertions = []
                for index, assertion in enumerate(self.base.get("assert") or []):
                    filled = dict(assertion)
                    # The path may name the case's key (`prices.{{ case.sku }}`), as text.
                    place = assertion_place(index=index, key="path")
                    if isinstance(filled.get("path"), str):
                        filled["path"] = render_text(
                            text=filled["path"], case=row, whole_numbers=True
                        )
                    place = assertion_place(index=index, key="value")
                    if "value" in filled:
                        filled["value"] = render_value(value=filled["value"], case=row)
                    assertions.append(filled)
                rendered["assert"] = assertions
        except RenderProblem as exc:
            exc.place = place  # which of the family's texts asked for the field
            raise
        return rendered


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


def calibration_case_id(*, row: dict[str, Any], position: int) -> str:
    """The id a calibration row is shown to the judge under: its own `id`, or its 1-based
    position, as a dataset row's (nothing in the prompt tells it from a real case)."""
    given = row.get("id")
    return str(given) if given is not None else str(position)


def calibration_definitions(*, definition: dict[str, Any]) -> list[dict[str, Any]]:
    """A judge family's definition rendered for each of its calibration cases, in order, as
    one of its dataset rows would be (`eb calibrate` judges these). Raises RenderProblem for a
    row that cannot fill the family's text (`eb validate` reports it first)."""
    calibration = list(definition.get("calibration") or [])
    rows = [case.get("case") for case in calibration if isinstance(case, dict)]
    sample = next((row for row in rows if isinstance(row, dict)), {})
    renderer = _Renderer(definition=definition, sample=sample)
    # Each keeps the calibration cases: the sample judged under it is told by its case.
    return [
        renderer.render(case_id=case_id, row=row) | {"calibration": renderer.calibration}
        for _, case_id, row in _calibration_rows(renderer)
    ]


def _calibration_rows(renderer: _Renderer) -> Iterator[tuple[dict[str, Any], str, dict[str, Any]]]:
    """(calibration case, the id its row is shown under, its row), in order."""
    for position, case in enumerate(renderer.calibration, start=1):
        row = case.get("case") or {}
        yield case, calibration_case_id(row=row, position=position), row


def _calibration_problems(*, renderer: _Renderer, check_file: str) -> list[DefinitionError]:
    """A calibration case of a judge family whose row cannot fill the family's text."""
    problems: list[DefinitionError] = []
    if renderer.kind != "harness_judge":
        return problems
    for position, (case, case_id, row) in enumerate(_calibration_rows(renderer), start=1):
        try:
            renderer.render(case_id=case_id, row=row)
        except RenderProblem as exc:
            problems.append(
                DefinitionError(
                    f"{check_file}: calibration case '{case.get('name')}': {exc.told}",
                    file=check_file,
                    field_path=f"calibration.{position - 1}.case",
                    hint="give the calibration row every field the family's text uses, as "
                    "a dataset row has",
                )
            )
    return problems


def _strings_in(value: Any) -> Iterator[str]:
    """The strings of a text field or an expected value (lists and mappings walked)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))


def _template(text: str) -> Callable[[dict[str, Any]], str]:
    """How to render `text` for one case: prepared once when it can be."""
    compiled: Template | None = compile_text(text)
    if compiled is not None:
        return compiled.render
    return lambda row: render_text(text=text, case=row)


def expand_family(
    *,
    definition: dict[str, Any],
    check_file: str,
    project_root: Path,
    max_cases: int,
    skipped: Skipped,
    script: bytes | None = None,
    check_text: str | None = None,
) -> Expansion:
    """Every case of one family, or every problem of its dataset (all rows, one pass).
    `skipped`: where a `cases_from` glob never looks; `check_text`: the check file's text, to
    tell the line of a problem in its own `cases:`."""
    problems: list[DefinitionError] = []
    family = str(definition["id"])
    root = project_root.resolve()
    rows, files = dataset_rows(
        definition=definition,
        root=root,
        check_file=check_file,
        skipped=skipped,
        problems=problems,
        max_cases=max_cases,
        check_text=check_text,
    )
    own = relative(path=Path(check_file).resolve(), root=root)
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
    if len(rows) > max_cases:
        problems.append(
            too_many(family=family, check_file=check_file, count=len(rows), max_cases=max_cases)
        )
        return Expansion(cases=[], files=[own, *files], problems=problems)
    try:
        validator = row_validator(schema=definition.get("case_schema"), check_file=check_file)
    except DefinitionError as exc:
        return Expansion(cases=[], files=[own, *files], problems=[exc])
    readers = cell_readers(definition.get("case_schema")) if validator is not None else {}
    base = _family_hash(definition=definition, script=script)
    digest_of_family = family_digest(definition=definition, script=script)
    width = len(str(len(rows)))
    seen: dict[str, str] = {}
    cases: list[ExpandedCase] = []
    family_tags = list(definition.get("tags") or [])
    sample = next((row.value for row in rows if type(row.value) is dict), {})
    renderer = _Renderer(definition=definition, sample=sample)
    if renderer.problem is not None:
        return Expansion(
            cases=[],
            files=[own, *files],
            problems=[
                DefinitionError(
                    f"{check_file}: {renderer.problem.told}",
                    file=check_file,
                    field_path=renderer.problem_at,
                    hint=_LOGIC_HINT
                    if renderer.problem.kind == "logic"
                    else "use {{ case.<field> }}, or write {{{{ for a literal {{",
                )
            ],
        )
    fullmatch_id = _CASE_ID.fullmatch
    # (kind, field) -> the cases a text of the family could not be rendered for, told at the end
    unrendered: dict[tuple[str, str | None, str | None], list[tuple[Row, str, RenderProblem]]] = {}
    # The case's component header (_component) up to its length, built once.
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
                problems.append(_out_of_range(row=row, exc=exc))
                continue
        # A key that is not text (YAML's `{1: bad}`) the encoder would write as text without a
        # word: a row that may hold one (not JSON's nor CSV's) is walked for it first.
        found = None if row.string_keys else unsayable(value)
        if found is None:
            try:
                canonical = _CANONICAL(value).encode()  # _canonical, inline: once per case
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
            case_id = _case_id(row=row, value=value, position=position, width=width)
        if case_id is None:
            problems.append(
                row_problem(
                    row=row,
                    message=_bad_id_message(value.get("id")),
                    hint="give the case an id such as refund-01",
                    field="id",
                )
            )
            continue
        if case_id in seen:
            problems.append(
                row_problem(
                    row=row,
                    message=f"duplicate case id '{case_id}' (first at {seen[case_id]})",
                    hint="case ids must be unique within the family; rename one",
                    field="id",
                )
            )
            continue
        seen[case_id] = f"{row.file} {row.where}"
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
            extra = _case_tags(value=value, cells=row.cells_are_text)
            if isinstance(extra, _Refused):
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
            digest.update(_component(name=b"position", content=case_id.encode()))
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
    problems.extend(_calibration_problems(renderer=renderer, check_file=check_file))
    if problems:
        # Lines that could not be read were noted first: list each file's problems in order.
        problems.sort(key=lambda problem: (problem.file or "", problem.line or 0))
        return Expansion(cases=[], files=[own, *files], problems=problems)
    return Expansion(
        cases=cases, files=[own, *files], problems=problems, family_digest=digest_of_family
    )


def case_digests_from(
    contents: Mapping[str, bytes],
    *,
    definition: dict[str, Any],
    check_file: str,
    max_cases: int,
    script: bytes | None,
) -> dict[str, str] | None:
    """A family's cases (check id -> definition digest) had its dataset files held `contents`
    (root-relative name -> bytes), as at another git revision: laid out in a folder of their
    own and expanded as the project's are. None when they do not make a valid family."""
    import tempfile  # only --changed-since over a family pays for it

    with tempfile.TemporaryDirectory(prefix="eb-dataset-") as folder:
        for name, data in contents.items():
            path = Path(folder, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        expansion = expand_family(
            definition=definition,
            check_file=check_file,
            project_root=Path(folder),
            max_cases=max_cases,
            script=script,
            skipped=Skipped(names=frozenset(), folders=frozenset()),
        )
    if expansion.problems:
        return None
    return {case.check_id: case.digest for case in expansion.cases}
