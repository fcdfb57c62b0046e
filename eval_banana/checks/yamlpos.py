"""Where a key or value sits in a YAML text: line and column, for error messages.

Only files that already failed validation pay for this: the text is parsed a second time into
nodes (`yaml.compose`), which keep their positions; valid files never come here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import NamedTuple

import yaml

from eval_banana.core.yamlsafe import FastSafeLoader

# A tagged union's error location names the tag after the mapping it selected (the check
# `type`, an assertion's `op`); the text has no such key, so the walk steps over it.
DISCRIMINATORS = ("type", "op")


class Position(NamedTuple):
    """1-based line and column of a node's first character."""

    line: int
    column: int


class Located(NamedTuple):
    """What a location path found: the key's and the value's positions, or the nearest parent.

    `found` is False when the last part is absent (a missing key): `parent` is then the mapping
    it belongs in. `key` is None for list items and for the document itself.
    """

    found: bool
    key: Position | None
    value: Position
    parent: Position


def _position(node: yaml.Node) -> Position:
    return Position(line=node.start_mark.line + 1, column=node.start_mark.column + 1)


def _scalar(node: yaml.Node) -> str | None:
    return node.value if isinstance(node, yaml.ScalarNode) else None


def _tag_values(node: yaml.MappingNode) -> set[str]:
    values = set()
    for key_node, value_node in node.value:
        if _scalar(key_node) in DISCRIMINATORS and _scalar(value_node) is not None:
            values.add(str(_scalar(value_node)))
    return values


def _entry(node: yaml.MappingNode, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    # The last occurrence wins, as when the mapping is constructed.
    found = None
    for key_node, value_node in node.value:
        if _scalar(key_node) == key:
            found = (key_node, value_node)
    return found


def compose(*, text: str) -> yaml.Node | None:
    """The document's node tree, or None when the text does not parse."""
    try:
        return yaml.compose(text, Loader=FastSafeLoader)
    except yaml.YAMLError:
        return None


def locate(*, root: yaml.Node, path: Sequence[str | int]) -> Located:
    """Follow `path` (mapping keys and list indexes, tags skipped) from the document root."""
    node: yaml.Node = root
    container: yaml.Node = root
    key_position: Position | None = None
    fresh = True  # at the document or a list item: a tagged union's tag may come next
    for part in path:
        if fresh and isinstance(node, yaml.MappingNode) and str(part) in _tag_values(node):
            fresh = False
            continue
        fresh = False
        child: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            entry = _entry(node, part)
            if entry is not None:
                key_node, child = entry
                key_position = _position(key_node)
        elif (
            isinstance(node, yaml.SequenceNode)
            and isinstance(part, int)
            and 0 <= part < len(node.value)
        ):
            child = node.value[part]
            key_position = None
            fresh = True
        if child is None:
            return Located(found=False, key=None, value=_position(node), parent=_position(node))
        container, node = node, child
    return Located(found=True, key=key_position, value=_position(node), parent=_position(container))


# What usually causes each of PyYAML's syntax problems in a hand-written check file.
_SYNTAX_HINTS: tuple[tuple[str, str], ...] = (
    (
        "mapping values are not allowed",
        "a line is indented more than the key above it, or a value that holds ': ' needs "
        'quotes (description: "Checks: all of them")',
    ),
    (
        "cannot start any token",
        "YAML indents with spaces, never tabs; a value that starts with @, ` or % needs quotes",
    ),
    (
        "found unexpected end of stream",
        "a quote, [ or { opened above is never closed; close it or quote the whole value",
    ),
    (
        "did not find expected ',' or ']'",
        "a [ list is not closed, or a value that starts with [ needs quotes",
    ),
    (
        "did not find expected ',' or '}'",
        "a { mapping is not closed, or a value that starts with { needs quotes",
    ),
    (
        "did not find expected key",
        "keys of one mapping must line up at the same indentation",
    ),
    (
        "did not find expected '-' indicator",
        "items of one list must line up, each starting with '- '",
    ),
    ("tab character", "YAML indents with spaces, never tabs: replace the tab"),
    ("found undefined alias", "a value that starts with * needs quotes"),
)
_DEFAULT_SYNTAX_HINT = (
    "indent with spaces, line up the keys of one mapping, and quote values that hold ': ' or "
    "' #', or that start with [, {, *, &, !, %, @ or a quote"
)


def _at(mark: object) -> str:
    line, column = getattr(mark, "line", None), getattr(mark, "column", None)
    if line is None or column is None:
        return ""
    return f"line {line + 1}, column {column + 1}"


# A plain value that opens with `{{`: YAML reads the braces as a mapping inside a mapping.
# A comment after it (` # ...`) is left out of the quoted fix.
_UNQUOTED_PLACEHOLDER = re.compile(r"^(\s*(?:-\s+)?[\w.-]+:\s+|\s*-\s+)(\{\{.*?)(?:\s+#.*)?\s*$")


def describe_syntax_error(*, exc: yaml.YAMLError, source: str | None = None) -> tuple[str, str]:
    """(what is wrong, with where, and a hint) for a YAML syntax error, in our words: PyYAML's
    own text names the parsed string `"<unicode string>"`, not the file. `source`: the file's
    text, to word the fix for the line the error is on."""
    problem = str(getattr(exc, "problem", None) or "the file is not valid YAML")
    where = _at(getattr(exc, "problem_mark", None))
    text = f"{where}: {problem}" if where else problem
    context = getattr(exc, "context", None)
    if context:
        opened = _at(getattr(exc, "context_mark", None))
        text += f" ({context}{' at ' + opened if opened else ''})"
    hint = _placeholder_hint(exc=exc, source=source) or next(
        (h for key, h in _SYNTAX_HINTS if key in problem), _DEFAULT_SYNTAX_HINT
    )
    return text, hint


def _placeholder_hint(*, exc: yaml.YAMLError, source: str | None) -> str | None:
    """The fix for a value written as `key: {{ case.x }}` on the error's line or the line that
    opened its context: quote it. PyYAML's own words ("found unhashable key", "did not find
    expected key") point nowhere near that."""
    if source is None:
        return None
    lines = source.splitlines()
    for mark in (getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)):
        index = getattr(mark, "line", None)
        if index is None or not 0 <= index < len(lines):
            continue
        found = _UNQUOTED_PLACEHOLDER.match(lines[index])
        if found is None:
            continue
        lead, value = found.group(1).strip(), found.group(2)
        quoted = json.dumps(value, ensure_ascii=False)
        return (
            f"a value that starts with {{{{ must be quoted, or YAML reads the braces as a "
            f"mapping: write {lead} {quoted}"
        )
    return None
