"""Where a check file writes a plain `yes`, `no`, `on` or `off` in an assertion's value.

YAML 1.1, which eb's reader follows, reads these words (any case) as booleans, so `value: NO`
expects `false`. Once loaded, `false` no longer tells whether the file wrote `false` (a boolean
meant) or `NO` (text meant, most likely a country code or an answer): only the source does. The
plan records where each such word is, so a reason can tell the fix (quote it) exactly where it
applies, whatever the artifact holds, and nowhere else.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from eval_banana.core.yamlsafe import StrictLoader
from eval_banana.models.stages import PlainWord

# The words YAML 1.1 reads as booleans where YAML 1.2 and JSON read text (`true` and `false`,
# in any case, are booleans to all of them, so they are written as meant).
_YAML11_ONLY_WORDS = frozenset(("yes", "no", "on", "off"))
_ANY_WORD = re.compile(r"(?<![\w])(?:yes|no|on|off)(?![\w])", re.IGNORECASE)
_BOOL_TAG = "tag:yaml.org,2002:bool"
_STR_TAG = "tag:yaml.org,2002:str"
# How many nodes of the assertions' values are looked at: a check file's values are a few
# dozen; aliases could make many more places of few nodes, and past this none are recorded.
_MOST_NODES = 10_000


def plain_words(*, data: bytes, definition: dict[str, Any]) -> list[PlainWord] | None:
    """Each place in an assertions check's values where the file writes a plain YAML 1.1
    boolean word; None for a check of another type. Only a file whose values hold a boolean
    and whose text holds such a word is parsed again, for its nodes."""
    assertions = definition.get("assert")
    if definition.get("type") != "assertions" or not isinstance(assertions, list):
        return None
    if not any(_holds_a_boolean(value=item.get("value")) for item in assertions):
        return []
    text = data.decode("utf-8", errors="replace")
    if _ANY_WORD.search(text) is None:
        return []
    try:
        root = yaml.compose(text, Loader=StrictLoader)
    except yaml.YAMLError:
        return []  # it loaded once already; a loader that disagrees now records nothing
    values = _value_nodes(root=root)
    if values is None:
        return []
    words: list[PlainWord] = []
    budget = [_MOST_NODES]
    for index, node in enumerate(values):
        if node is not None:
            words.extend(_words_in(node=node, assertion=index, budget=budget))
    return words


def _holds_a_boolean(*, value: Any) -> bool:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, bool):
            return True
        if isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, dict):
            pending.extend(item.values())
    return False


def _value_nodes(*, root: yaml.Node | None) -> list[yaml.Node | None] | None:
    """The node of each assertion's `value` (None where it has none), in order."""
    sequence = _child(node=root, key="assert")
    if not isinstance(sequence, yaml.SequenceNode):
        return None
    return [_child(node=item, key="value") for item in sequence.value]


def _child(*, node: yaml.Node | None, key: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            child: yaml.Node = value_node
            return child
    return None


def _words_in(*, node: yaml.Node, assertion: int, budget: list[int]) -> list[PlainWord]:
    """The plain boolean words under `node`, at their paths relative to it."""
    # Loaded here: only a file that writes such a word needs paths written.
    from eval_banana.assertions.operators import KeyStep, trail_text

    found: list[PlainWord] = []
    pending: list[tuple[yaml.Node, tuple[Any, ...]]] = [(node, ())]
    while pending and budget[0] > 0:
        budget[0] -= 1
        item, trail = pending.pop()
        if isinstance(item, yaml.ScalarNode):
            if _is_plain_word(node=item):
                at = trail_text(trail=trail, bounded=False)
                found.append(PlainWord(assertion=assertion, at=at, word=item.value))
        # Children go on the stack last first: the words are told in the file's order.
        elif isinstance(item, yaml.SequenceNode):
            for index in range(len(item.value) - 1, -1, -1):
                pending.append((item.value[index], (*trail, index)))
        elif isinstance(item, yaml.MappingNode):
            for key_node, value_node in reversed(item.value):
                # A key that is not plain text (a number, a merge `<<`) leads nowhere recorded.
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag == _STR_TAG:
                    pending.append((value_node, (*trail, KeyStep(key_node.value))))
    return found


def _is_plain_word(*, node: yaml.ScalarNode) -> bool:
    # No style is plain (None from the Python parser, "" from libyaml): a quoted "no" stays
    # text, and is what the fix asks for.
    return (
        node.tag == _BOOL_TAG and not node.style and str(node.value).lower() in _YAML11_ONLY_WORDS
    )
