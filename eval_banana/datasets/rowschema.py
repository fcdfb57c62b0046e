"""A family's `case_schema` as eb reads it: JSON Schema draft 2020-12, offline, with every
regular expression matched in linear time.

jsonschema matches `pattern` and `patternProperties` with Python's backtracking `re`: a pattern
such as `^(a+)+$` against a row's thirty-character value runs for hours, so one row could hang
`eb validate`. Here those keywords (and `additionalProperties`, which consults the patterns)
match with RE2, as an assertions check's `matches` does, and a pattern RE2 cannot take is a
definition error at its place. A `$ref` names a place in the schema itself: nothing is fetched.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from eval_banana.assertions.operators import PatternError, compile_pattern
from eval_banana.core.errors import DefinitionError

_REFERENCE_KEYS = ("$ref", "$dynamicRef")


def row_validator(*, schema: dict[str, Any] | None, check_file: str) -> Any:
    """A validator of one dataset row against `schema`, or None without one. Raises
    DefinitionError for a schema that is invalid, refers outside itself or holds a pattern
    RE2 cannot take."""
    if schema is None:
        return None
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError, best_match

    refuse_other_dialect(schema=schema, check_file=check_file)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        # Where in the schema (`properties.n.type`), and of the alternatives the schema allows
        # there the one that says most ("'strin' is not one of [...]").
        where = ".".join(str(part) for part in exc.path)
        said = best_match(exc.context).message if exc.context else exc.message
        raise _schema_problem(check_file=check_file, where=where, said=said) from None
    _refuse_typed_skip(schema=schema, check_file=check_file)
    members = list(_walk(schema))
    keys = {key for _, key, _ in members}
    if "unevaluatedProperties" in keys and "patternProperties" in keys:
        # jsonschema would match the patterns with `re` there; refused, not left to hang.
        raise _schema_problem(
            check_file=check_file,
            where="",
            said="unevaluatedProperties beside patternProperties is not supported",
            hint="use additionalProperties beside patternProperties",
        )
    for where, part in subschemas(schema):
        if isinstance(part.get("format"), str):
            _refuse_unchecked_format(name=part["format"], where=where, check_file=check_file)
    for where, key, value in members:
        if key in _REFERENCE_KEYS and isinstance(value, str) and not value.startswith("#"):
            raise _schema_problem(
                check_file=check_file,
                where=where,
                said=f"{value!r} refers outside the schema",
                hint="eb reads case_schema on its own, never from the network or another "
                "file: put what it refers to under $defs and refer to it as #/$defs/<name>",
            )
        for pattern in _patterns(key=key, value=value):
            try:
                compile_pattern(pattern)
            except PatternError as exc:
                raise _schema_problem(
                    check_file=check_file,
                    where=where,
                    said=f"{pattern!r}: {exc}",
                    hint="eb matches case_schema's patterns with RE2 (linear time, so no row "
                    "can hang a run): write it without look-arounds or back-references",
                ) from None
    checker = _format_checker() if "format" in keys else None
    return _linear_time_validator()(schema, format_checker=checker)


# The formats a row's value is checked against. JSON Schema makes `format` a note by default;
# a family that writes `format: date` means a check, so eb checks these (with the standard
# library only, the same on every machine) and refuses the others rather than pass them.
CHECKED_FORMATS = ("date", "date-time", "email", "ipv4", "ipv6", "uuid")
_DATE_TIME = re.compile(r"(\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


# The keywords whose values are schemas (draft 2020-12, with draft-07's names eb still reads):
# one schema, a list of them, or a mapping of names to them. Any other member is a value
# (`const`, `enum`, `default`, `examples`), whatever keys it holds.
ONE_SCHEMA = frozenset(
    {
        "additionalItems",
        "additionalProperties",
        "contains",
        "contentSchema",
        "else",
        "if",
        "items",
        "not",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
NAMED_SCHEMAS = frozenset(
    {"$defs", "definitions", "dependencies", "dependentSchemas", "patternProperties", "properties"}
)


def subschemas(schema: object, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(dotted path, schema) of `schema` and of every schema within it, by its keywords: a
    property named `const` is a schema, a `const` value holding `format` is not."""
    if not isinstance(schema, dict):
        return
    yield where, schema
    for key, value in schema.items():
        at = f"{where}.{key}" if where else str(key)
        if key in NAMED_SCHEMAS and isinstance(value, dict):
            for name, part in value.items():
                yield from subschemas(part, f"{at}.{name}")
        elif key in SCHEMA_LISTS and isinstance(value, list):
            for index, part in enumerate(value):
                yield from subschemas(part, f"{at}.{index}")
        elif key in ONE_SCHEMA:
            yield from subschemas(value, at)


def _refuse_unchecked_format(*, name: str, where: str, check_file: str) -> None:
    if name in CHECKED_FORMATS:
        return
    raise _schema_problem(
        check_file=check_file,
        where=f"{where}.format" if where else "format",
        said=f"format {name!r} is not checked by eb, so a row that breaks it would pass",
        hint=f"eb checks format {', '.join(CHECKED_FORMATS)}; for another, write a pattern "
        "the values must match, or take format off",
    )


def _format_checker() -> Any:
    """A checker of `CHECKED_FORMATS`: jsonschema's own for those it checks with the standard
    library, and an RFC 3339 date-time (jsonschema's needs a package eb does not require)."""
    from jsonschema import Draft202012Validator, FormatChecker

    checker = FormatChecker(formats=())
    known = Draft202012Validator.FORMAT_CHECKER.checkers
    for name in ("date", "email", "ipv4", "ipv6", "uuid"):
        checker.checkers[name] = known[name]
    checker.checks("date-time")(_is_date_time)
    return checker


def _is_date_time(value: object) -> bool:
    """RFC 3339's date-time (a time zone is required); text of another kind is no date-time
    for `format` to judge (`type` does), as JSON Schema has it."""
    if not isinstance(value, str):
        return True
    found = _DATE_TIME.fullmatch(value)
    if found is None:
        return False
    # The fields are checked as a calendar has them; a fraction of any length is allowed.
    zone = found.group(3).upper().replace("Z", "+00:00")
    try:
        datetime.fromisoformat(found.group(1).upper() + zone)
    except ValueError:
        return False
    return True


def _refuse_typed_skip(*, schema: dict[str, Any], check_file: str) -> None:
    """A row's `skip` is the reason its case is skipped, text: a schema that types it so that
    no text fits (`boolean`, as a spreadsheet's checkbox column is) describes a column eb
    cannot read as a reason, and would read its empty cells (the cases that run) as wrong."""
    properties = schema.get("properties")
    spec = properties.get("skip") if isinstance(properties, dict) else None
    declared = spec.get("type") if isinstance(spec, dict) else None
    types = [declared] if isinstance(declared, str) else declared
    if not isinstance(types, list) or "string" in types:
        return
    raise _schema_problem(
        check_file=check_file,
        where="properties.skip.type",
        said=f"skip holds the reason a case is skipped, text, not {' or '.join(map(str, types))}",
        hint="take the type off skip (or type it string); a row's skip is empty (or left "
        "out) for the case to run, and holds the reason to skip it",
    )


def first_error(*, validator: Any, row: dict[str, Any], check_file: str) -> Any:
    """The first way `row` fails the schema (a jsonschema ValidationError), or None. Raises
    DefinitionError when the schema's own `$ref` names a place it does not have: the family's
    fault, not the row's."""
    from referencing.exceptions import Unresolvable

    try:
        return next(iter(validator.iter_errors(row)), None)
    except Unresolvable as exc:
        reference = getattr(exc, "ref", None)
        if isinstance(reference, str) and reference.startswith("/"):
            reference = "#" + reference  # a JSON pointer, as the $ref wrote it
        said = f"{reference!r} points to nothing in the schema" if reference else str(exc)
        raise _schema_problem(
            check_file=check_file,
            where="",
            said=said,
            hint="name a place the schema has, such as #/$defs/<name>",
        ) from None


# How much of a row's value an error quotes: jsonschema's message starts with the whole value
# (a 5,000-digit number, an article to judge), which would bury the one thing that is wrong.
SHOWN_VALUE_CHARS = 60


def error_message(error: Any) -> str:
    """A jsonschema error's message, with the value it quotes cut to its first characters and
    its length when it is long (`'Lorem ipsum …' (128,000 characters) is too long`)."""
    message = str(error.message)
    quoted = repr(error.instance)
    if len(quoted) <= SHOWN_VALUE_CHARS or quoted not in message:
        return message
    size = len(error.instance) if isinstance(error.instance, str) else len(quoted)
    shown = f"{quoted[:SHOWN_VALUE_CHARS]}… ({size:,} characters)"
    return message.replace(quoted, shown, 1)


_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


def refuse_other_dialect(*, schema: dict[str, Any], check_file: str) -> None:
    """Refuse a `$schema` naming another draft (`draft-04`): eb checks rows by 2020-12's rules,
    while
    an editor or another validator reading the schema (`eb schema --case-schema` prints it) would
    follow the draft it names, and the two would judge rows differently (`exclusiveMaximum`)."""
    named = schema.get("$schema")
    if isinstance(named, str) and named.removesuffix("#") != _DRAFT_2020_12:
        raise _schema_problem(
            check_file=check_file,
            where="$schema",
            said=f"{named!r} is not draft 2020-12, the only JSON Schema dialect eb checks rows by",
            hint=f"delete $schema, or write {_DRAFT_2020_12} (and the schema in its terms)",
        )


def _schema_problem(
    *,
    check_file: str,
    where: str,
    said: str,
    hint: str = "case_schema is a JSON Schema (draft 2020-12) for one dataset row",
) -> DefinitionError:
    return DefinitionError(
        f"Invalid case_schema in {check_file}" + (f" at {where}" if where else "") + f": {said}",
        file=check_file,
        field_path="case_schema" + (f".{where}" if where else ""),
        hint=hint,
    )


def _walk(schema: object) -> Iterator[tuple[str, object, object]]:
    """(dotted path, key, value) of every member and item of `schema`, depth first."""
    stack: list[tuple[object, str]] = [(schema, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            items: Any = value.items()
        elif isinstance(value, list):
            items = enumerate(value)
        else:
            continue
        for key, item in items:
            where = f"{path}.{key}" if path else str(key)
            yield where, key, item
            stack.append((item, where))


def _patterns(*, key: object, value: object) -> list[str]:
    """The regular expressions a schema member holds: a `pattern`'s value, the keys of a
    `patternProperties` mapping."""
    if key == "pattern" and isinstance(value, str):
        return [value]
    if key == "patternProperties" and isinstance(value, dict):
        return [name for name in value if isinstance(name, str)]
    return []


def _search(pattern: str, text: str) -> bool:
    try:
        return compile_pattern(pattern).search(text) is not None
    except UnicodeEncodeError:
        return False  # lone surrogates cannot reach RE2: no match, so the row fails closed


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, item in instance.items():
            if _search(pattern, name):
                yield from validator.descend(item, subschema, path=name, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    named = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [
        name
        for name in instance
        if name not in named and not any(_search(pattern, name) for pattern in patterns)
    ]
    if validator.is_type(additional, "object"):
        for name in extras:
            yield from validator.descend(instance[name], additional, path=name)
    elif additional is False and extras:
        listed = ", ".join(repr(name) for name in sorted(extras))
        yield ValidationError(f"fields not allowed here: {listed}")


def _linear_time_validator() -> Any:
    import jsonschema
    from jsonschema import Draft202012Validator

    extend: Any = jsonschema.validators.extend  # untyped in jsonschema's stubs
    return extend(
        Draft202012Validator,
        {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
        },
    )
