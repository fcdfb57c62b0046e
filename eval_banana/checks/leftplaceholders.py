"""A `{{ case.<field> }}` placeholder in a check without cases, where a check names a file or
grades a value: nothing fills it, and taken as written it would be looked up or compared as
literal text (a check copied out of a family, or a family whose `cases:` was deleted), so it is a
definition error.

A single check's `description` and a judge's `instructions` are prose, sent as written: they
may talk about templates in that very syntax (a judge grading prompt templates), as they could
under eval-banana 0.5.0, and a single check has no `{{{{` to write the braces otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eval_banana.checks.yamlpos import compose, locate
from eval_banana.core.errors import DefinitionError
from eval_banana.core.words import visible
from eval_banana.datasets.render import first_placeholder, strings_in

# The fields naming a file (its prose is left as written: see above): a family fills the
# artifact and its `inputs:` patterns, and none fills script_path.
_TEXT_FIELDS = ("artifact", "script_path")


def refuse_left_placeholders(
    *, document: dict[str, Any], path: Path | str, text: str | None
) -> None:
    """Raise a DefinitionError for the first placeholder in a check that has no cases."""
    for location, field_path, value in _filled_fields(document=document):
        for string in strings_in(value):
            placeholder = first_placeholder(string) if "{{" in string else None
            if placeholder is None:
                continue
            root = compose(text=text) if text is not None else None
            located = locate(root=root, path=location) if root is not None else None
            position = located.value if located is not None and located.found else None
            at = f" (line {position.line}, column {position.column})" if position else ""
            shown = ".".join(str(part) for part in location)
            raise DefinitionError(
                f"Invalid check definition in {path}: {shown}: {visible(placeholder)!r} is a "
                f"dataset placeholder, but this check has no cases: nothing fills it, and it "
                f"would be taken as the literal text{at}",
                file=str(path),
                field_path=field_path,
                hint="give the check cases: or cases_from: to make it a family whose rows fill "
                "it, or write the value itself in place of the placeholder",
                line=position.line if position else None,
                column=position.column if position else None,
            )


def _filled_fields(*, document: dict[str, Any]) -> Iterator[tuple[tuple[str | int, ...], str, Any]]:
    """(location in the file, field path as validate names it, value) of each field that
    names a file or grades a value: the artifact, the script's path, each `inputs:` pattern,
    each assertion's path and value."""
    for key in _TEXT_FIELDS:
        if key in document:
            yield (key,), key, document[key]
    inputs = document.get("inputs")
    for index, pattern in enumerate(inputs if isinstance(inputs, list) else []):
        yield ("inputs", index), f"inputs.{index}", pattern
    assertions = document.get("assert")
    if document.get("type") != "assertions" or not isinstance(assertions, list):
        return
    for index, assertion in enumerate(assertions):
        if not isinstance(assertion, dict):
            continue
        op = assertion.get("op")
        for key in ("path", "value"):
            if key in assertion:
                # As the models name a single check's assertion field: type, index, operator.
                named = f"assertions.assert.{index}.{op}.{key}" if isinstance(op, str) else ""
                yield ("assert", index, key), named or f"assert.{index}.{key}", assertion[key]
