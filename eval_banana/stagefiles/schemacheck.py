"""A fast yes/no answer to "is this document valid against this published schema?".

jsonschema checks a 10,000-result execute.json in seconds: it is built to explain errors, and
pays for that on every node. Our schemas are generated from our models and use a small set of
keywords, so `compile_schema` turns one into plain nested closures once, and a valid document
(the usual case) is checked in a fraction of that time. Only when the answer is "no" does the
reader ask jsonschema, which stays the reference, for the message (`eval_banana.stagefiles.read`).

The keywords are evaluated exactly as jsonschema evaluates them (draft 2020-12 and draft-07):
a bool is neither an integer nor a number, 1.0 is an integer, `enum`/`const` compare JSON
values (True is not 1), `pattern` is `re.search` with `$` meaning the end of the text (as in
the ECMA regular expressions JSON Schema names; Python's `$` also matches before a trailing
newline, which let `abc\n` pass `^[a-z]+$`), `format` is an annotation. A schema using any
other keyword compiles to None, and the caller uses jsonschema alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$defs", "definitions", "title", "description", "default", "examples"}
)
_HANDLED = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "allOf",
        "enum",
        "const",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "minLength",  # the config file's folders: never empty
        "minItems",  # an agent's command
        "$ref",
        "format",  # jsonschema checks formats only when given a format checker; we give none
    }
)


class _Unsupported(Exception):
    """The schema uses a keyword this module does not evaluate."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


_TYPES: dict[str, Check] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
}


# Types an isinstance test decides alone (a bool is an int to Python, so numbers are not here).
_PLAIN_TYPES: dict[str, type] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


def _plain(schema: Any) -> tuple[type, ...] | None:
    """The Python types a schema amounts to when it only says "one of these plain types"."""
    if not isinstance(schema, dict):
        return None
    keys = set(schema) - _ANNOTATIONS
    if keys == {"type"}:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if all(name in _PLAIN_TYPES for name in names):
            return tuple(_PLAIN_TYPES[name] for name in names)
    if keys == {"anyOf"}:
        parts = [_plain(option) for option in schema["anyOf"]]
        if all(part is not None for part in parts):
            return tuple(kind for part in parts if part is not None for kind in part)
    return None


def json_equal(one: Any, two: Any) -> bool:
    """Equality of JSON values: True is not 1, 1 is 1.0, containers compared item by item."""
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(json_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(json_equal(one[k], two[k]) for k in one)
    if isinstance(one, list | dict) or isinstance(two, list | dict):
        return False
    return bool(one == two) and (isinstance(one, str) == isinstance(two, str))


def _all_of(checks: list[Check]) -> Check:
    # Plain loops and special cases: a generator per node would cost more than the checks.
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)

    def check(value: Any) -> bool:
        for test in checks:  # noqa: SIM110 - a loop, not a generator: this runs per node
            if not test(value):
                return False
        return True

    return check


def _any_of(checks: list[Check]) -> Check:
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) or second(value)

    def check(value: Any) -> bool:
        for test in checks:  # noqa: SIM110 - a loop, not a generator: this runs per node
            if test(value):
                return True
        return False

    return check


class _Compiler:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}

    def ref(self, pointer: str) -> Check:
        """A `$ref` within the document, compiled once (and lazily, so cycles are fine)."""
        if pointer not in self.refs:
            if not pointer.startswith("#/"):
                raise _Unsupported(pointer)
            target: Any = self.root
            for part in pointer[2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            slot: list[Check] = []
            self.refs[pointer] = lambda value: slot[0](value)
            slot.append(self.node(target))
        return self.refs[pointer]

    def node(self, schema: Any) -> Check:
        if schema is True:
            return lambda value: True
        if schema is False:
            return lambda value: False
        if not isinstance(schema, dict):
            raise _Unsupported(repr(schema))
        unknown = set(schema) - _HANDLED - _ANNOTATIONS
        if unknown:
            raise _Unsupported(", ".join(sorted(unknown)))
        checks = [check for check in self._keywords(schema) if check is not None]
        if not checks:
            return lambda value: True
        return _all_of(checks)

    def _keywords(self, schema: dict[str, Any]) -> list[Check | None]:
        return [
            self._type(schema.get("type")),
            self._object(schema),
            self._items(schema.get("items")),
            self._any_of(schema.get("anyOf")),
            self._all_of(schema.get("allOf")),
            self._enum(schema),
            self._pattern(schema.get("pattern")),
            self._bounds(schema.get("minimum"), schema.get("maximum")),
            self._above(schema.get("exclusiveMinimum")),
            self._min_length(schema.get("minLength"), schema.get("minItems")),
            self.ref(schema["$ref"]) if "$ref" in schema else None,
        ]

    def _type(self, declared: Any) -> Check | None:
        if declared is None:
            return None
        names = declared if isinstance(declared, list) else [declared]
        return _any_of([_TYPES[name] for name in names])

    def _object(self, schema: dict[str, Any]) -> Check | None:
        # Per property: its plain types (tested inline, the common case) or its check.
        properties = {
            key: (_plain(sub), self.node(sub)) for key, sub in schema.get("properties", {}).items()
        }
        required = tuple(schema.get("required", ()))
        extra = schema.get("additionalProperties", True)
        extra_check = None if extra is True or extra is False else self.node(extra)
        closed = extra is False
        if not properties and not required and extra is True:
            return None

        def check(value: Any) -> bool:
            if not isinstance(value, dict):
                return True  # object keywords say nothing about other types
            for key in required:
                if key not in value:
                    return False
            for key, item in value.items():
                known = properties.get(key)
                if known is not None:
                    types, test = known
                    if types is not None:
                        if not isinstance(item, types):
                            return False
                    elif not test(item):
                        return False
                elif closed or (extra_check is not None and not extra_check(item)):
                    return False
            return True

        return check

    def _items(self, items: Any) -> Check | None:
        if items is None:
            return None
        test = self.node(items)

        def check(value: Any) -> bool:
            if isinstance(value, list):
                for item in value:
                    if not test(item):
                        return False
            return True

        return check

    def _any_of(self, options: Any) -> Check | None:
        if options is None:
            return None
        return _any_of([self.node(option) for option in options])

    def _all_of(self, parts: Any) -> Check | None:
        if parts is None:
            return None
        return _all_of([self.node(part) for part in parts])

    def _min_length(self, text: Any, items: Any) -> Check | None:
        # A string's length in code points, as jsonschema counts it; each applies to its type.
        if text is None and items is None:
            return None

        def check(value: Any) -> bool:
            if isinstance(value, str):
                return text is None or len(value) >= text
            if isinstance(value, list):
                return items is None or len(value) >= items
            return True

        return check

    def _enum(self, schema: dict[str, Any]) -> Check | None:
        allowed: list[Any] = []
        if "enum" in schema:
            allowed.append(list(schema["enum"]))
        if "const" in schema:
            allowed.append([schema["const"]])
        if not allowed:
            return None
        if len(allowed) == 1 and all(type(member) is str for member in allowed[0]):
            # Only strings: JSON equality is plain equality, and only a string can match.
            names = frozenset(allowed[0])
            return lambda value: type(value) is str and value in names
        if len(allowed) == 1 and all(type(member) is int for member in allowed[0]):
            # Only integers (a result's score): JSON equality lets 1.0 match 1, never True.
            numbers = frozenset(allowed[0])
            return lambda value: type(value) in (int, float) and value in numbers
        return lambda value: all(any(json_equal(value, a) for a in group) for group in allowed)

    def _pattern(self, pattern: Any) -> Check | None:
        if pattern is None:
            return None
        compiled = ecma_pattern(pattern)
        return lambda value: not isinstance(value, str) or compiled.search(value) is not None

    def _bounds(self, low: Any, high: Any) -> Check | None:
        if low is None and high is None:
            return None

        def check(value: Any) -> bool:
            if not _is_number(value):
                return True
            return (low is None or value >= low) and (high is None or value <= high)

        return check

    def _above(self, low: Any) -> Check | None:
        if low is None:
            return None
        return lambda value: not _is_number(value) or value > low


def ecma_pattern(pattern: str) -> re.Pattern[str]:
    """`pattern` compiled with each `$` outside a character class meaning the end of the text."""
    out: list[str] = []
    in_class = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        out.append(r"\Z" if char == "$" and not in_class else char)
        index += 1
    return re.compile("".join(out))


def json_validator(schema: dict[str, Any]) -> Any:
    """A jsonschema validator of `schema`, its `pattern` read as `ecma_pattern` reads it."""
    import jsonschema
    from jsonschema.exceptions import ValidationError

    def pattern(validator: Any, value: str, instance: Any, schema: Any) -> Any:
        if isinstance(instance, str) and ecma_pattern(value).search(instance) is None:
            yield ValidationError(f"{instance!r} does not match {value!r}")

    base = jsonschema.validators.validator_for(schema)
    extend: Any = jsonschema.validators.extend  # untyped in jsonschema's stubs
    return extend(base, {"pattern": pattern})(schema)


def compile_schema(schema: dict[str, Any]) -> Check | None:
    """A function answering whether a document is valid; None if the schema is beyond it."""
    try:
        return _Compiler(schema).node(schema)
    except (_Unsupported, KeyError, TypeError, re.error):
        return None
