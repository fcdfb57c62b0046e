"""YAML as eb reads it, for check files and datasets alike: a safe loader that refuses a
repeated key, and bounds on what the loaded value may become when something walks it.

A YAML alias names a value already built, so loading is linear in the text; but whatever walks
the result as a tree (validation, JSON dumping, digests) sees every alias expanded. A few lines
of aliases can stand for billions of values (an alias bomb), or for a value that holds itself.
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar, cast

import yaml

from eval_banana.core.jsonvalues import (
    HugeNumber,
    TinyNumber,
    longer_than_written,
    longest_whole_number,
    too_long_number,
    underflows,
)

# PyYAML's safe loader, on libyaml's C parser where PyYAML was built with it (many times faster).
FastSafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"
# A number with an exponent as JSON and YAML 1.2 write it (`1e3`, `2.5E-4`, `1.0e3`). YAML 1.1,
# which PyYAML follows, wants a dot and a signed exponent (`1.0e+3`), so it reads these as text.
YAML12_EXPONENT_NUMBER = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)[eE][-+]?[0-9]+")


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping repeats a key (YAML forbids it; PyYAML kept the last value silently): `key`,
    at `problem_mark`."""

    def __init__(self, *, key: object, mark: yaml.Mark) -> None:
        super().__init__(None, None, f"duplicate key '{key}' (line {mark.line + 1})", mark)
        self.key = key


class StrictLoader(FastSafeLoader):  # type: ignore[misc,valid-type]
    """Safe loader that refuses repeated mapping keys (DuplicateKeyError)."""


def construct_mapping_once_each(
    loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False
) -> dict[Any, Any]:
    """A mapping, or DuplicateKeyError at its first repeated key."""
    # Fast path: build the mapping once; as many entries as key nodes means no key repeated.
    if not any(key_node.tag == _MERGE_TAG for key_node, _ in node.value):
        key_count = len(node.value)
        try:
            mapping = loader.construct_mapping(node, deep=deep)
        except yaml.constructor.ConstructorError:
            # A key that cannot be a key (a list): a repeat beside it is told first.
            _refuse_duplicate_keys(loader=loader, node=node, deep=deep)
            raise
        if len(mapping) == key_count:
            return mapping
    _refuse_duplicate_keys(loader=loader, node=node, deep=deep)
    return loader.construct_mapping(node, deep=deep)


def _refuse_duplicate_keys(*, loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool) -> None:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            # `<<: *base` merges another mapping in; a key written beside it overrides the
            # merged one (YAML's rule), and is no repeat.
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:
            continue
        if duplicate:
            raise DuplicateKeyError(key=key, mark=key_node.start_mark)
        seen.add(key)


class NumberTooLong(yaml.constructor.ConstructorError):
    """A whole number longer than Python reads or writes: more decimal digits than int() takes
    (a plain ValueError) or str() gives (a hexadecimal, octal, binary or base-60 number, which
    reads at any length and fails only where it is written: a traceback, or a value JSON cannot
    say)."""


def construct_whole_number(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    """A YAML integer, or NumberTooLong at its place instead of a traceback, in whichever of
    YAML 1.1's forms it is written; a ConstructorError for text tagged `!!int` that is none."""
    text = str(node.value)
    # Base 60 is read one place at a time, in time quadratic in the places; each place
    # multiplies the number by 60, so this many is beyond the limit however it ends.
    if text.count(":") > longest_whole_number() > 0:
        raise _too_long(node=node)
    try:
        value = int(loader.construct_yaml_int(node))
    except (ValueError, IndexError):
        # int() refuses a decimal number longer than it reads, or text that is no number
        # (`!!int abc`, whose tag asks for one; PyYAML indexes an empty one, `!!int ""`).
        digits = text.replace("_", "").lstrip("+-")
        if digits.isascii() and digits.isdigit() and len(digits) > longest_whole_number():
            raise _too_long(node=node) from None
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"{text!r} is not a whole number, which its tag !!int asks for",
            node.start_mark,
        ) from None
    if longer_than_written(value):
        raise _too_long(node=node)
    return value


def _too_long(*, node: yaml.ScalarNode) -> NumberTooLong:
    return NumberTooLong(None, None, too_long_number(line=None), node.start_mark)


# Plain words YAML 1.1 reads as keys of its own, which YAML 1.2 reads as text: `=` (its
# default-value key) and `<<` (its merge key, where it is no key of a mapping). PyYAML builds
# neither, and its "could not determine a constructor" says nothing of the quotes that fix it.
OWN_KEY_TAGS = {
    "tag:yaml.org,2002:value": "default-value key",
    "tag:yaml.org,2002:merge": "merge key",
}


class AmbiguousScalar(yaml.constructor.ConstructorError):
    """A plain scalar YAML 1.1 reads as something YAML 1.2 would not."""


class OwnKeyWord(AmbiguousScalar):
    """A plain `=` or `<<` where a value goes (OWN_KEY_TAGS)."""


def own_key_word(*, loader: yaml.SafeLoader, node: yaml.ScalarNode) -> OwnKeyWord:
    """What is wrong with a plain `=` or `<<` where a value goes, and the fix: quote it."""
    text = str(loader.construct_scalar(node))
    return OwnKeyWord(
        None,
        None,
        f"{text!r} reads as YAML 1.1's {OWN_KEY_TAGS[node.tag]} in eb's YAML reader, which "
        f"follows YAML 1.1, where YAML 1.2 reads text: quote it ('{text}') to keep the text",
        node.start_mark,
    )


def _refuse_own_key(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    raise own_key_word(loader=loader, node=node)


StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping_once_each
)
StrictLoader.add_constructor("tag:yaml.org,2002:int", construct_whole_number)
for _tag in OWN_KEY_TAGS:
    StrictLoader.add_constructor(_tag, _refuse_own_key)


class CheckFileLoader(StrictLoader):
    """StrictLoader for a check file: a float that reads as 0.0 though it is not zero
    (`1.0e-400`) is kept as a TinyNumber, and one that reads as infinity though it is written
    as a number (`1.0e+999`, not `.inf`) as a HugeNumber, which the file's walk for values JSON
    cannot say tells at its field; `misread` says one was read, so only such a file is walked
    for it."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.misread = False


def yaml_float(
    *, loader: yaml.SafeLoader, node: yaml.ScalarNode
) -> float | TinyNumber | HugeNumber:
    """A YAML float as written: a TinyNumber for one that reads as 0.0 though it is not zero, a
    HugeNumber for one that reads as infinity though it is written as a number. Only a zero or
    an infinity has its text looked at: other numbers cost nothing more."""
    value = float(loader.construct_yaml_float(node))
    if value == 0.0 and underflows(str(node.value)):
        return TinyNumber(str(node.value))
    if math.isinf(value) and not is_yaml_infinity(str(node.value)):
        return HugeNumber(str(node.value))
    return value


def _construct_float(
    loader: CheckFileLoader, node: yaml.ScalarNode
) -> float | TinyNumber | HugeNumber:
    value = yaml_float(loader=loader, node=node)
    if type(value) is not float:
        loader.misread = True
    return value


def is_yaml_infinity(text: str) -> bool:
    """Whether the YAML float `text` is YAML's own word for infinity (`.inf`, `-.Inf`), which
    says what it means, rather than a number too large to read (`1.0e+999`)."""
    return text.lower().lstrip("+-") == ".inf"


CheckFileLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)


class Unbounded(ValueError):
    """A loaded value nests too deep, expands to too many values, or holds itself.
    `too_deep` tells the first apart from the two an alias causes."""

    def __init__(self, what: str, *, too_deep: bool = False) -> None:
        super().__init__(what)
        self.what = what
        self.too_deep = too_deep


def may_be_unbounded(*, text: str, max_depth: int, max_values: int) -> bool:
    """Whether YAML `text` could load as a value `refuse_unbounded` refuses; False only when it
    cannot, which a few scans of the text tell (most check files are known bounded so, and
    skip the walk). Without an alias (`*name`) no value repeats or holds itself, and each
    value is at least one character of the text; and every list or mapping, and so every level
    of nesting, is opened by a character of its own: `[`, `{`, a block entry's `-`, a key's
    `:` or an explicit key's `?`."""
    if "*" in text or len(text) + 1 >= max_values:
        return True
    openers = sum(text.count(char) for char in "[{-:?")
    return openers + 1 > max_depth


def refuse_unbounded(*, value: object, max_depth: int, max_values: int) -> None:
    """Raise Unbounded for a value nested deeper than `max_depth` (the top list or mapping is
    level 1), one whose aliases expand beyond `max_values` values, or one that contains itself.
    Each list and mapping is measured once, by identity, so this is linear in the nodes built."""
    measured: dict[int, tuple[int, int]] = {}  # id -> (depth, expanded size)
    open_ids: set[int] = set()
    stack: list[tuple[object, bool]] = [(value, False)]
    while stack:
        item, done = stack.pop()
        key = id(item)
        children = _children(item)
        if done:
            open_ids.discard(key)
            depth, size = 1, 1
            for child in children:
                inner = measured.get(id(child))
                if inner is None:
                    size += 1  # a scalar
                    continue
                depth = max(depth, inner[0] + 1)
                size += inner[1]
            if depth > max_depth:
                raise Unbounded(f"nested deeper than {max_depth} levels", too_deep=True)
            if size > max_values:
                raise Unbounded(f"expand to more than {max_values:,} values")
            measured[key] = (depth, size)
            continue
        if key in measured:
            continue
        open_ids.add(key)
        stack.append((item, True))
        for child in children:
            if id(child) in open_ids:
                raise Unbounded("make a value contain itself")
            if type(child) in (dict, list) and id(child) not in measured:
                stack.append((child, False))


def _children(item: object) -> list[object]:
    kind = type(item)
    if kind is dict:
        pairs = cast(dict[object, object], item)
        return [*pairs.keys(), *pairs.values()]
    if kind is list:
        return cast(list[object], item)
    return []


# YAML 1.2's core schema (its spec, 10.3.2): each tag, the pattern of the plain scalars it
# reads, and the first characters they may start with ("" for the empty scalar). An integer is
# tried before a float, whose pattern also matches one. Merge keys (`<<`) are kept, as most
# YAML 1.2 readers keep them.
YAML12_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
YAML12_FLOAT = re.compile(
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)
YAML12_BOOL = re.compile(r"true|True|TRUE|false|False|FALSE")
_YAML12_CORE = (
    ("tag:yaml.org,2002:null", re.compile(r"null|Null|NULL|~|"), "nN~", True),
    ("tag:yaml.org,2002:bool", YAML12_BOOL, "tTfF", False),
    ("tag:yaml.org,2002:int", YAML12_INT, "-+0123456789", False),
    ("tag:yaml.org,2002:float", YAML12_FLOAT, "-+.0123456789", False),
    (_MERGE_TAG, re.compile(r"<<"), "<", False),
)
_ResolverTable = dict[str | None, list[tuple[str, re.Pattern[str]]]]


def _yaml12_resolvers() -> _ResolverTable:
    """The implicit resolvers of YAML 1.2's core schema, as PyYAML's Resolver looks them up
    (by a plain scalar's first character)."""
    table: _ResolverTable = {}
    for tag, pattern, first, may_be_empty in _YAML12_CORE:
        whole = re.compile(rf"^(?:{pattern.pattern})$")
        for start in [*first, ""] if may_be_empty else first:
            table.setdefault(start, []).append((tag, whole))
    return table


# A `%YAML 1.2` directive heading the text: before it only blank lines, comments and other
# directives (`%TAG`) may stand, and a directive starts at the line's first column.
_YAML12_DIRECTIVE = re.compile(
    r"(?:[ \t]*(?:#[^\n]*)?\r?\n|%TAG[^\n]*\n)*%YAML[ \t]+1\.2(?:[ \t]|\r?\n|$)"
)


def declares_yaml_12(text: str) -> bool:
    """Whether the YAML `text` declares `%YAML 1.2`, and so asks to be read by its rules
    (PyYAML would read it by YAML 1.1's)."""
    return text.startswith(("%", "#", "\n", "\r", " ", "\t")) and bool(
        _YAML12_DIRECTIVE.match(text)
    )


class NotYaml12Value(yaml.constructor.ConstructorError):
    """A scalar whose explicit tag (`!!int 1_000`) asks for a value its text is not in YAML
    1.2's core schema, which the file declares: PyYAML would read it by YAML 1.1's rules."""


def _not_yaml12(*, node: yaml.ScalarNode, what: str, tag: str, forms: str) -> NotYaml12Value:
    return NotYaml12Value(
        None,
        None,
        f"{str(node.value)!r} is no {what} to YAML 1.2, which the file declares (%YAML 1.2), "
        f"though its tag {tag} asks for one: YAML 1.2 writes {forms}",
        node.start_mark,
    )


class Yaml12Core:
    """Put before a loader class among the bases of a loader for a file that declares
    `%YAML 1.2`: its plain scalars are read by YAML 1.2's core schema, as it asks (only true and
    false in three cases are booleans; null is `null`, `~` or nothing; a number is decimal,
    `0755` being 755, `0o` octal, `0x` hexadecimal or a float, `.inf` and `.nan` too; the rest is
    text: `NO`, `on`, `1:30`, `1_000`, `2024-05-01`), and a scalar tagged `!!int`, `!!float` or
    `!!bool` whose text YAML 1.2 does not read as one is NotYaml12Value. The loader's bool
    constructor must call `construct_yaml_bool` (construct_yaml12_bool does)."""

    yaml_implicit_resolvers: ClassVar[_ResolverTable] = _yaml12_resolvers()

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """Decimal with any leading zeros, `0o` octal or `0x` hexadecimal, and nothing else
        (no `_`, `0b`, `1:30`); a decimal number longer than int() reads is its ValueError."""
        text = str(node.value)
        if not YAML12_INT.fullmatch(text):
            raise _not_yaml12(
                node=node,
                what="whole number",
                tag="!!int",
                forms="one as decimal digits, 0o octal or 0x hexadecimal, without underscores",
            )
        base = {"0o": 8, "0x": 16}.get(text[:2], 10)
        return int(text[2:] if base != 10 else text, base)

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        text = str(node.value)
        if not YAML12_FLOAT.fullmatch(text):
            raise _not_yaml12(
                node=node,
                what="number",
                tag="!!float",
                forms="one as decimal digits with an optional dot and exponent (1.5, 1e3), "
                ".inf or .nan, without underscores",
            )
        lowered = text.lower()
        if lowered.lstrip("+-") in (".inf", ".nan"):
            return float(lowered.replace(".", ""))
        return float(text)

    def construct_yaml_bool(self, node: yaml.ScalarNode) -> bool:
        text = str(node.value)
        if not YAML12_BOOL.fullmatch(text):
            raise _not_yaml12(node=node, what="boolean", tag="!!bool", forms="one as true or false")
        return text.lower() == "true"


def construct_yaml12_bool(loader: Yaml12Core, node: yaml.ScalarNode) -> bool:
    """A loader's bool constructor that reads by its own rules (PyYAML's calls its own)."""
    return loader.construct_yaml_bool(node)


class Yaml12CheckFileLoader(Yaml12Core, CheckFileLoader):
    """CheckFileLoader for a check file that declares `%YAML 1.2`."""


def construct_yaml12_word(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    """A plain `<<` where a value goes, in a file that declares `%YAML 1.2`: text, as YAML 1.2
    reads it (a merge key is YAML 1.1's, and only a mapping's key merges)."""
    return str(loader.construct_scalar(node))


Yaml12CheckFileLoader.add_constructor("tag:yaml.org,2002:bool", construct_yaml12_bool)
Yaml12CheckFileLoader.add_constructor(_MERGE_TAG, construct_yaml12_word)


def check_file_loader(text: str) -> CheckFileLoader:
    """The loader of the check file `text`: by YAML 1.2's core schema when it declares
    `%YAML 1.2`, else by YAML 1.1's rules."""
    return (Yaml12CheckFileLoader if declares_yaml_12(text) else CheckFileLoader)(text)
