"""Check-file validation errors in our own words: where (line, column), what is wrong, the fix.

The check models (pydantic) find the errors; `eval_banana.checks.words` words them for the person
who wrote the YAML, and this module locates each one and assembles the message. Only files
that failed come here, so the second parse that finds each key's line (`eval_banana.checks.yamlpos`)
and the "did you mean" search cost valid files nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from eval_banana.checks.words import Loc, explain, tag_name
from eval_banana.checks.yamlpos import Located, Position, compose, locate
from eval_banana.core.errors import DefinitionError, Problem
from eval_banana.core.words import visible


def _position(*, root: Any, loc: Loc, anchor: str) -> Position | None:
    if root is None:
        return None
    if anchor not in ("key", "value", "parent"):
        # A whole-check rule about one named key: point at that key when it is there.
        found = locate(root=root, path=(*loc, anchor))
        return found.key if found.found else found.parent
    located: Located = locate(root=root, path=loc)
    # A missing key has no position of its own: `value` is then the mapping it belongs in.
    if anchor == "key" and located.found and located.key is not None:
        return located.key
    return located.value


def _field_path(*, error: Mapping[str, Any]) -> str:
    loc = [str(part) for part in error.get("loc", ())]
    if str(error.get("type")) in ("union_tag_invalid", "union_tag_not_found"):
        loc.append(tag_name(error.get("ctx") or {}))
    return ".".join(loc)


def _tag_loc(*, error: Mapping[str, Any]) -> Loc:
    loc: Loc = tuple(error.get("loc", ()))
    if str(error.get("type")) == "union_tag_invalid":
        return (*loc, tag_name(error.get("ctx") or {}))
    return loc


def field_problems(
    *, errors: Sequence[Mapping[str, Any]], document: Mapping[str, Any], text: str | None, path: str
) -> list[Problem]:
    """One located, worded problem per validation error of the check file at `path`."""
    root = compose(text=text) if text is not None else None
    problems = []
    for error in errors:
        explained = explain(error=error, document=document)
        position = _position(root=root, loc=_tag_loc(error=error), anchor=explained.anchor)
        # Each part is one line of the error, and may echo the file's own text (an unknown
        # key, a value): a line break or ESC in it is shown as `\xNN`, never printed, so a
        # check file cannot start a line of eb's output (a GitHub Actions workflow command).
        problems.append(
            Problem(
                message=visible(explained.message),
                file=path,
                field_path=visible(_field_path(error=error)),
                hint=visible(explained.hint) if explained.hint is not None else None,
                line=position.line if position else None,
                column=position.column if position else None,
            )
        )
    # Top to bottom, as the file reads; problems without a position keep their order, last.
    return sorted(problems, key=lambda problem: (problem.line is None, problem.line or 0))


def where(problem: Problem) -> str:
    """`deterministic.id (line 2, column 5)`: the field path and position of one problem."""
    label = problem.field_path or "(file)"
    if problem.line is None:
        return label
    if problem.column is None:
        return f"{label} (line {problem.line})"
    return f"{label} (line {problem.line}, column {problem.column})"


def definition_error(*, problems: Sequence[Problem], path: str) -> DefinitionError:
    """All of one file's field problems in one error: a count line, then one block each."""
    count = len(problems)
    noun = "validation error" if count == 1 else "validation errors"
    blocks = []
    for problem in problems:
        block = f"{where(problem)}\n  {problem.message}"
        if problem.hint:
            block += f"\n  hint: {problem.hint}"
        blocks.append(block)
    first = problems[0]
    return DefinitionError(
        f"Invalid check definition in {path}: {count} {noun}\n" + "\n".join(blocks),
        file=path,
        field_path=first.field_path or "type",
        line=first.line,
        column=first.column,
        field_errors=tuple(problems),
    )


def value_position(*, text: str | None, key: str) -> Position | None:
    """Where the value of top-level `key` is written, for errors about that value itself."""
    root = compose(text=text) if text is not None else None
    if root is None:
        return None
    located = locate(root=root, path=(key,))
    return located.value if located.found else None
