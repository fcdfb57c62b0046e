"""Where a check file writes a plain scalar in an assertion's value that YAML 1.1 reads as no
text, spelled otherwise than eb shows the value it became.

YAML 1.1, which eb's reader follows, reads a plain `yes`, `no`, `on` or `off` (any case) as a
boolean, `01234` as the octal number 668, `0x1F`, `1_000`, `1:30` or `+1` as numbers, and `~`,
`Null` or nothing at all as null. Once loaded, `false` no longer tells whether the file wrote
`false` (a boolean meant) or `NO` (text meant, most likely a country code), nor 668 whether it
wrote `668` or a zero-padded `01234`: only the source does. The plan records where each such
spelling is, so a reason can tell the fix (quote it) exactly where it applies, naming what the
file wrote, whatever the artifact holds there, and nowhere else. A value written as JSON writes
it (`false`, `668`, `1.5`, `null`) is meant as written, and `true` and `false` in another case
(`True`) are booleans to YAML 1.2 and to every reader alike: neither is recorded, nor is a
scalar with an explicit tag (`!!int 01234`, `!!bool NO`), which asks for that type in words.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from yaml.composer import Composer

from eval_banana.core.yamlsafe import StrictLoader, declares_yaml_12
from eval_banana.models.stages import PlainWord

# The words YAML 1.1 reads as booleans where YAML 1.2 and JSON read text (`true` and `false`,
# in any case, are booleans to all of them, so they are written as meant).
_YAML11_ONLY_WORDS = frozenset(("yes", "no", "on", "off"))
_ANY_WORD = re.compile(r"(?<![\w])(?:yes|no|on|off)(?![\w])", re.IGNORECASE)
# A run of what a plain number may span in the text, from its first digit: digits, letters
# (hexadecimal, `0x`, `0b`, an exponent's `e`), `_`, `:` (base 60), dots and signs. A number
# YAML reads is one such run, whole, but for a sign or a dot before its first digit. (The scan
# starts at a digit, not at an optional sign: Python's regular expressions find a pattern that
# starts with one set of characters several times faster.)
_DIGIT_RUN = re.compile(r"[0-9][0-9A-Za-z_:.+-]*")
_JSON_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
# The operators whose reasons tell the fix: only their values are recorded.
_TOLD_FOR = frozenset(("equals", "contains"))
_BOOL_TAG = "tag:yaml.org,2002:bool"
_STR_TAG = "tag:yaml.org,2002:str"
_NUMBER_OR_NULL_TAGS = frozenset(
    ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:null")
)
# How many nodes of the assertions' values are looked at: a check file's values are a few
# dozen; aliases could make many more places of few nodes, and past this none are recorded.
_MOST_NODES = 10_000


class _ExplicitlyTagged(yaml.ScalarNode):
    """A scalar the file gave a tag of its own (`!!int 01234`): its type is asked for, not
    guessed from its text, and it is never recorded."""


class _TagNoticingLoader(Composer, StrictLoader):
    """StrictLoader whose nodes are composed in Python from the C parser's events, so a
    scalar's explicit tag, which a composed node no longer tells apart from the tag its text
    resolves to, is kept (as an _ExplicitlyTagged node). Only a file that may write a value
    otherwise is composed so."""

    def __init__(self, stream: str) -> None:
        # StrictLoader's own init (the parser's, constructor's and resolver's), not Composer's,
        # which takes no stream; mypy sees StrictLoader's C base as none.
        StrictLoader.__init__(self, stream)  # type: ignore[call-arg]
        self.anchors: dict[str, yaml.Node] = {}  # Composer's own state, which its init sets

    # The stubs type `anchor` as a dict; it is the anchor's name, or None.
    def compose_scalar_node(self, anchor: str | None) -> yaml.ScalarNode:  # type: ignore[override]
        """Composer's own, but for the kind of node an explicitly tagged scalar becomes."""
        event = self.get_event()
        # `!` alone is the non-specific tag: the scalar's type still comes from its text.
        explicit = event.tag is not None and event.tag != "!"
        tag = event.tag if explicit else self.resolve(yaml.ScalarNode, event.value, event.implicit)
        kind = _ExplicitlyTagged if explicit else yaml.ScalarNode
        node = kind(tag, event.value, event.start_mark, event.end_mark, style=event.style)
        if anchor is not None:
            self.anchors[anchor] = node
        return node


def plain_words(*, data: bytes, definition: dict[str, Any]) -> list[PlainWord] | None:
    """Each place in an assertions check's values where the file writes a plain scalar that
    YAML 1.1 reads as a boolean, a number or null, spelled otherwise than JSON writes that
    value; None for a check of another type. Only a file whose values hold such a value, and
    whose text may write one so, is parsed again, for its nodes."""
    assertions = definition.get("assert")
    if definition.get("type") != "assertions" or not isinstance(assertions, list):
        return None
    told = [
        isinstance(item, dict) and item.get("op") in _TOLD_FOR and "value" in item
        for item in assertions
    ]
    values = [item["value"] for item, is_told in zip(assertions, told, strict=True) if is_told]
    text = data.decode("utf-8", errors="replace")
    if declares_yaml_12(text):
        return []  # read by YAML 1.2's rules, as it asks: nothing is read otherwise
    if not _may_write_otherwise(text=text, kinds=_kinds_held(values=values)):
        return []
    loader = _TagNoticingLoader(text)
    try:
        root = loader.get_single_node()
        nodes = _value_nodes(root=root)
        if nodes is None:
            return []
        words: list[PlainWord] = []
        budget = [_MOST_NODES]
        for index, node in enumerate(nodes):
            if node is not None and index < len(told) and told[index]:
                words.extend(_words_in(node=node, assertion=index, budget=budget, loader=loader))
        return words
    except yaml.YAMLError:
        return []  # it loaded once already; a loader that disagrees now records nothing
    finally:
        loader.dispose()


def _kinds_held(*, values: list[Any]) -> set[str]:
    """Which of a boolean, a number and null the values hold, anywhere in them."""
    kinds: set[str] = set()
    pending = list(values)
    while pending and len(kinds) < 3:
        item = pending.pop()
        if isinstance(item, bool):
            kinds.add("boolean")
        elif item is None:
            kinds.add("null")
        elif isinstance(item, int | float):
            kinds.add("number")
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, dict):
            pending.extend(item.values())
    return kinds


def _may_write_otherwise(*, text: str, kinds: set[str]) -> bool:
    """Whether `text` may write one of the values of `kinds` otherwise than JSON writes it;
    False only when it cannot. Null is rare in a value and has spellings no scan finds (a
    value left empty), so it is always looked for."""
    if "null" in kinds:
        return True
    if "boolean" in kinds and _ANY_WORD.search(text) is not None:
        return True
    return "number" in kinds and _may_write_a_number_otherwise(text=text)


def _may_write_a_number_otherwise(*, text: str) -> bool:
    """Whether some run of `text` that may be a plain number is not as JSON writes one (a
    date or a version is such a run too: the file is then read again, to no harm)."""
    for match in _DIGIT_RUN.finditer(text):
        start = match.start()
        before = text[start - 1] if start else ""
        if before and before in "+.":
            return True  # `+1`, `.5`
        run = f"-{match.group()}" if before == "-" else match.group()
        if not _as_json_writes(text=run):
            return True
    return False


def _as_json_writes(*, text: str) -> bool:
    """Whether `text` is a number as JSON writes it (`12`, `-3`, `1.5`)."""
    if _JSON_INTEGER.fullmatch(text):
        return True
    if "." not in text:
        return False
    try:
        return repr(float(text)) == text
    except ValueError:
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


def _words_in(
    *, node: yaml.Node, assertion: int, budget: list[int], loader: _TagNoticingLoader
) -> list[PlainWord]:
    """The plain scalars read otherwise under `node`, at their paths relative to it."""
    # Loaded here: only a file that writes such a scalar needs paths written.
    from eval_banana.assertions.operators import KeyStep, trail_text

    found: list[PlainWord] = []
    pending: list[tuple[yaml.Node, tuple[Any, ...]]] = [(node, ())]
    while pending and budget[0] > 0:
        budget[0] -= 1
        item, trail = pending.pop()
        if isinstance(item, yaml.ScalarNode):
            if _read_otherwise(node=item, loader=loader):
                at = trail_text(trail=trail, bounded=False)
                found.append(PlainWord(assertion=assertion, at=at, word=item.value))
        # Children go on the stack last first: the scalars are told in the file's order.
        elif isinstance(item, yaml.SequenceNode):
            for index in range(len(item.value) - 1, -1, -1):
                pending.append((item.value[index], (*trail, index)))
        elif isinstance(item, yaml.MappingNode):
            for key_node, value_node in reversed(item.value):
                # A key that is not plain text (a number, a merge `<<`) leads nowhere recorded.
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag == _STR_TAG:
                    pending.append((value_node, (*trail, KeyStep(key_node.value))))
    return found


def _read_otherwise(*, node: yaml.ScalarNode, loader: _TagNoticingLoader) -> bool:
    """Whether `node` is plain, untagged, and YAML 1.1 reads it as a boolean `yes`/`no`/`on`/
    `off`, or as a number or null JSON writes otherwise (`01234` is 668, `~` null)."""
    # No style is plain (None from the Python parser, "" from libyaml): a quoted "no" stays
    # text, and is what the fix asks for. A tagged one was meant as the type its tag names.
    if node.style or isinstance(node, _ExplicitlyTagged):
        return False
    if node.tag == _BOOL_TAG:
        return str(node.value).lower() in _YAML11_ONLY_WORDS
    if node.tag not in _NUMBER_OR_NULL_TAGS:
        return False
    try:
        value = loader.construct_object(node)
    except (ValueError, yaml.YAMLError):
        return False  # too long a number: the check file was refused for it
    return bool(json.dumps(value, allow_nan=True) != node.value)
