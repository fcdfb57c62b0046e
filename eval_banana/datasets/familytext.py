"""A family's text fields (description, instructions, an assertion's path and value) rendered
for each case: prepared once per family, filled in per case, and a judge's case shown to it as a
fenced JSON block when its instructions name no field."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from eval_banana.core.jsonencoder import reused_encoder
from eval_banana.core.words import visible
from eval_banana.datasets.keys import DATASET_KEYS
from eval_banana.datasets.problems import assertion_place
from eval_banana.datasets.render import (
    RenderProblem,
    Template,
    compile_text,
    first_placeholder,
    has_placeholder,
    placeholder_fields,
    render_path,
    render_pattern,
    render_text,
    render_value,
    strings_in,
    unfixable_in,
)

# One line of JSON: json's indenting encoder is pure Python, and this runs per case.
_ONE_LINE = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def fenced(*, case_id: str, row: dict[str, Any]) -> str:
    """The case's fields as a fenced JSON block (a fence longer than any backtick run)."""
    return fenced_text(case_id=case_id, body=_ONE_LINE.encode(row))


def fenced_text(*, case_id: str, body: str) -> str:
    """`fenced` of the row whose one line of JSON is `body`."""
    if "`" not in body:  # most rows: the shortest fence
        return f"Case {case_id}:\n```json\n{body}\n```"
    longest = max(len(run) for run in re.findall(r"`+", body))
    fence = "`" * max(3, longest + 1)
    return f"Case {case_id}:\n{fence}json\n{body}\n{fence}"


class FamilyRenderer:
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
        # The `inputs:` patterns a row fills (`prompts/{{ case.file }}`), by their place: each
        # case is keyed on, and selected by, the files its own row names.
        inputs = definition.get("inputs")
        self.patterns: list[tuple[int, str]] = [
            (index, pattern)
            for index, pattern in enumerate(inputs if isinstance(inputs, list) else [])
            if isinstance(pattern, str) and "{{" in pattern
        ]
        instructions = str(definition.get("instructions") or "")
        self.placed = has_placeholder(instructions)
        self.instructions = instructions
        self.instructed = _template(instructions)
        # The family's own encoder of its rows (fenced's), kept for all of them.
        self.one_line = reused_encoder(_ONE_LINE)
        # Without placeholders the instructions are the same text for every case (`{{{{`
        # written as `{{`), the case's block after them.
        self.fixed = ""
        # What no row can fix is one error for the family, at its field, not one per case.
        # `sample` (a row) only words the placeholder a stray `{{` most likely meant.
        self.problem, self.problem_at = self._unfixable(sample=sample)
        if self.problem is None:
            self.problem, self.problem_at = _unfilled(definition=definition)
        if self.problem is None and not self.placed and self.kind == "harness_judge":
            try:
                self.fixed = render_text(text=instructions, case={})
            except RenderProblem as exc:
                exc.place, self.problem, self.problem_at = "instructions", exc, "instructions"

    def _unfixable(self, *, sample: dict[str, Any]) -> tuple[RenderProblem | None, str]:
        """The first token of the family's texts that no row can fix (`{% if case.x %}`, a
        stray `{{`), with the place it is told at and its field's path in the check file."""
        texts: list[tuple[str, str, Any]] = [("description", "description", self.description)]
        texts.extend((f"inputs.{index}", f"inputs.{index}", text) for index, text in self.patterns)
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
            for text in strings_in(value):
                found = unfixable_in(text, case=sample)
                if found is not None:
                    found.place = place
                    return found, field_path
        return None, ""

    def render(
        self, *, case_id: str, row: dict[str, Any], with_inputs: bool = True
    ) -> dict[str, Any]:
        """The family's definition for one row. `with_inputs`: fill its `inputs:` patterns too
        (a calibration row is judged once, keyed on nothing of the project, and need not name
        a file)."""
        rendered = self.base.copy()
        place = "description"
        try:
            if self.patterns and with_inputs:
                patterns = list(rendered["inputs"])
                for index, text in self.patterns:
                    place = f"inputs.{index}"
                    patterns[index] = render_pattern(text=text, case=row)
                rendered["inputs"] = patterns
                place = "description"
            # A tag over the case was refused before any row; any other tag is text.
            if "{{" in self.description:
                rendered["description"] = self.described(row)
            if self.kind == "harness_judge":
                place = "instructions"
                if self.placed:
                    rendered["instructions"] = self.instructed(row)
                else:
                    block = fenced_text(case_id=case_id, body=self.one_line(row))
                    rendered["instructions"] = f"{self.fixed}\n\n{block}"
            elif self.kind == "assertions":
                place = "artifact"
                rendered["artifact"] = render_text(text=str(self.base["artifact"]), case=row)
                assertions = []
                for index, assertion in enumerate(self.base.get("assert") or []):
                    filled = dict(assertion)
                    # The path may name the case's key (`prices.{{ case.sku }}`) or an index.
                    place = assertion_place(index=index, key="path")
                    if isinstance(filled.get("path"), str):
                        filled["path"] = render_path(text=filled["path"], case=row)
                    place = assertion_place(index=index, key="value")
                    if "value" in filled:
                        filled["value"] = render_value(value=filled["value"], case=row)
                        if filled.get("op") in _FINDING_OPERATORS:
                            _refuse_blank_operand(
                                op=filled["op"], written=assertion["value"], row=row
                            )
                    assertions.append(filled)
                rendered["assert"] = assertions
        except RenderProblem as exc:
            exc.place = place  # which of the family's texts asked for the field
            raise
        return rendered


# The operators that hold when their value is found anywhere in the string: a value of only
# spaces is found in nearly every answer.
_FINDING_OPERATORS = frozenset({"contains", "matches"})


def _refuse_blank_operand(*, op: str, written: Any, row: dict[str, Any]) -> None:
    """Raise the problem of a `contains` or `matches` value that a row's blank field (a CSV
    cell of spaces, `capital, , `) filled with only whitespace: it holds for almost any answer,
    as an empty one holds for every answer (refused by the check's model). A value of spaces
    written in the check file itself is meant, and stays."""
    if not isinstance(written, str) or "{{" not in written:
        return
    filled = render_text(text=written, case=row)
    if not filled or filled.strip():
        return
    field = next(
        field for field in placeholder_fields(written) if not str(row.get(field, "")).strip()
    )
    raise RenderProblem(
        f"field '{field}' is {visible(repr(row[field]))}, only whitespace: {op} finds that in "
        "almost any answer, so the case could hardly fail",
        field=field,
        kind="blank_operand",
    )


# The fields a row never fills, and the fix for a placeholder in each (told before any row).
_UNFILLED_HINTS = {
    "tags": "a family's tags are the same for every case: give the rows a tags field of their "
    "own (a row's tags add to the family's), or write the tag itself",
    "skip": "a family's skip skips every case as written: give the rows a skip field of their "
    "own (it skips that case alone), or write the reason itself",
    "script_path": "one script runs every case: name its file itself, and have the script read "
    "the case from its context.json ('case')",
    "script": "a script runs as written, never filled: read the case from its context.json "
    "('case', json.load(open(sys.argv[1]))['case']); to keep that text in the script, split "
    "it ('{{' ' case.x }}')",
}


def _unfilled(*, definition: dict[str, Any]) -> tuple[RenderProblem | None, str]:
    """The first `{{ case.<field> }}` placeholder in a field no row fills (`tags`, `skip`,
    `script_path`, `script`), which would otherwise be taken as the literal text, with its
    field's path."""
    for key, hint in _UNFILLED_HINTS.items():
        value = definition.get(key)
        found = [(key, value)] if isinstance(value, str) else []
        if key == "tags" and isinstance(value, list):
            found = [(f"tags.{index}", tag) for index, tag in enumerate(value)]
        for place, text in found:
            placeholder = (
                first_placeholder(text) if isinstance(text, str) and "{{" in text else None
            )
            if placeholder is None:
                continue
            problem = RenderProblem(
                f"{visible(placeholder)!r} is a dataset placeholder, but eb fills none in "
                f"{key}: it would be taken as the literal text",
                field=None,
                kind="unfilled",
                hint=hint,
            )
            problem.place = place
            return problem, place
    return None, ""


def _template(text: str) -> Callable[[dict[str, Any]], str]:
    """How to render `text` for one case: prepared once when it can be."""
    compiled: Template | None = compile_text(text)
    if compiled is not None:
        return compiled.render
    return lambda row: render_text(text=text, case=row)
