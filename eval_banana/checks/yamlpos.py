"""Where a key or value sits in a YAML text: line and column, for error messages.

Only files that already failed validation pay for this: the text is parsed a second time into
nodes (`yaml.compose`), which keep their positions; valid files never come here.
"""

from __future__ import annotations

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
