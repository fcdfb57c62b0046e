"""The words of a check-file error: what is wrong, in the YAML author's terms, and the fix.

`explain` turns one error of the check models (pydantic's error dict) into a sentence, a hint
and which position it points at; `eval_banana.checks.problems` locates and assembles them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from eval_banana.core.suggest import closest

Loc = tuple[str | int, ...]

_REMOVED_KEYS = {
    "target_paths": "target_paths was removed: name the files in `instructions`; "
    "scripts get `project_root` from context.json.",
    "timeout_seconds": "a check cannot set its own time limit: use [core] "
    "check_timeout_seconds (scripts) or [harness] timeout_seconds (judges) in "
    ".eval-banana/config.toml.",
}
_MISSING_HINTS = {
    "schema_version": "add `schema_version: 1` as the first line.",
    "id": "add `id:` with a name unique in the project (letters, digits, '_' and '-').",
    "description": "add `description:` saying in a few words what the check verifies.",
    "instructions": "add `instructions:` with the question the judge must answer.",
    "artifact": "add `artifact:` naming the JSON or YAML file to grade, relative to the "
    "project root.",
    "assert": "add `assert:` with at least one assertion (`- {path: ..., op: ...}`).",
    "path": "each assertion needs `path:`, the place in the artifact to look at.",
    "value": "this op compares against a `value:`; add one.",
}
_BLANK_HINTS = {
    "id": "give the check a name: letters, digits, '_' and '-'.",
    "description": "say in a few words what the check verifies.",
    "instructions": "write the question the judge must answer.",
    "script": "write the script, or use script_path to name a Python file.",
    "script_path": "name the Python file, relative to this check file's folder.",
}


class Explained(NamedTuple):
    message: str
    hint: str | None
    anchor: str  # "key", "value" or "parent": which position the message points at


def _shown(value: object) -> str:
    """A short, YAML-flavoured picture of a value for a message."""
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        text = value if len(value) <= 60 else value[:57] + "..."
        return repr(text)
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _kind(value: object) -> str:
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return f"the boolean {_shown(value)}"
    if isinstance(value, int | float):
        return f"the number {_shown(value)}"
    if isinstance(value, str):
        return f"the text {_shown(value)}"
    return _shown(value)


def _keys_of(model: Any) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _model_at(loc: Loc) -> tuple[str, list[str]] | None:
    """(what the mapping at `loc[:-1]` is, in words, and its allowed keys), when known."""
    from eval_banana.models.assertions import ASSERTION_MODELS
    from eval_banana.models.check import CHECK_MODELS

    if len(loc) == 2 and str(loc[0]) in CHECK_MODELS:
        article = "an" if str(loc[0])[:1] in "aeiou" else "a"
        return f"{article} {loc[0]} check", _keys_of(CHECK_MODELS[str(loc[0])])
    if len(loc) == 5 and loc[1] == "assert" and str(loc[3]) in ASSERTION_MODELS:
        return f"an assertion with op {loc[3]}", _keys_of(ASSERTION_MODELS[str(loc[3])])
    return None


def _other_type_owning(*, key: str, check_type: str) -> str | None:
    from eval_banana.models.check import CHECK_MODELS

    for name, model in CHECK_MODELS.items():
        if name != check_type and key in _keys_of(model):
            return name
    return None


def _unknown_key(*, loc: Loc) -> Explained:
    key = str(loc[-1])
    owner = _model_at(loc)
    where = owner[0] if owner else "this mapping"
    message = f"unknown key '{key}' in {where}"
    if key in _REMOVED_KEYS and len(loc) == 2:
        return Explained(message, _REMOVED_KEYS[key], "key")
    if owner is None:
        return Explained(message, "delete it.", "key")
    allowed = [name for name in owner[1] if name != "type"]
    # A key of another check type is a wrong type or a stray key, not a typo.
    other = _other_type_owning(key=key, check_type=str(loc[0])) if len(loc) == 2 else None
    if other is not None:
        return Explained(
            message,
            f"'{key}' belongs to {other} checks: delete it, or change the type to {other}.",
            "key",
        )
    target = closest(key, allowed)
    if target is not None:
        return Explained(message, f"did you mean '{target}'? Otherwise delete it.", "key")
    return Explained(message, f"delete it; the keys here are {', '.join(allowed)}.", "key")


def tag_name(ctx: Mapping[str, Any]) -> str:
    return str(ctx.get("discriminator", "'type'")).strip("'")


def _tag_choices(discriminator: str) -> list[str]:
    from eval_banana.models.assertions import ASSERTION_MODELS
    from eval_banana.models.check import CHECK_MODELS

    return list(CHECK_MODELS if discriminator == "type" else ASSERTION_MODELS)


def _unknown_tag(*, ctx: Mapping[str, Any]) -> Explained:
    discriminator = tag_name(ctx)
    choices = _tag_choices(discriminator)
    tag = str(ctx.get("tag", ""))
    what = "check type" if discriminator == "type" else "assertion op"
    listed = ", ".join(choices)
    target = closest(tag, choices)
    hint = f"did you mean '{target}'? " if target else ""
    return Explained(f"unknown {what} '{tag}'", f"{hint}The {what}s are: {listed}.", "value")


def _missing_tag(*, ctx: Mapping[str, Any]) -> Explained:
    discriminator = tag_name(ctx)
    choices = ", ".join(_tag_choices(discriminator))
    return Explained(
        f"missing required key '{discriminator}'",
        f"add `{discriminator}:` with one of: {choices}.",
        "parent",
    )


# What a message calls a value that has no key (a list item).
_NO_KEY = "this value"


def _wrong_text(*, key: str, value: object, keyed: bool) -> Explained:
    message = f"{key} must be text, not {_kind(value)}"
    if isinstance(value, bool):
        hint = "YAML reads unquoted yes, no, on, off, true and false as booleans: quote the value."
    elif isinstance(value, int | float):
        # A list item has no key of its own to write before it (`this value: '5'`).
        hint = f"quote it: {key}: '{value}'." if keyed else f"quote it: '{value}'."
    elif value is None:
        hint = "write the value after the colon, or delete the key."
    else:
        hint = f"write one piece of text; for several lines use `{key}: |` and indent them below."
    return Explained(message, hint, "value")


def _script_choice(*, document: Mapping[str, Any]) -> Explained:
    both = document.get("script") is not None and document.get("script_path") is not None
    if both:
        return Explained(
            "both script and script_path are set; a deterministic check takes exactly one",
            "delete one: script holds inline Python, script_path names a Python file.",
            "script_path",
        )
    return Explained(
        "a deterministic check needs exactly one of script or script_path; neither is set",
        "add `script: |` followed by indented Python, or `script_path:` naming a Python file "
        "relative to this check file's folder.",
        "parent",
    )


class _Error(NamedTuple):
    """One validation error as the explainers read it."""

    kind: str
    loc: Loc
    key: str  # the last key of `loc`, or "this value"
    value: object
    ctx: Mapping[str, Any]
    msg: str
    document: Mapping[str, Any]

    @property
    def keyed(self) -> bool:
        """Whether the value has a key of its own (a list item has an index instead)."""
        return _keyed(self.loc)


def _keyed(loc: Loc) -> bool:
    return bool(loc) and isinstance(loc[-1], str)


# A calibration case's label has no default, unlike a check's `expect` (docs/judges.md).
_CASE_EXPECT_HINT = (
    "write `expect: pass` for a known-good case or `expect: fail` for a known-bad one."
)


def _case_expect(loc: Loc) -> bool:
    """Whether `loc` is a calibration case's `expect` (`calibration.N.expect`)."""
    return len(loc) == 4 and loc[1] == "calibration" and loc[3] == "expect"


def _missing(error: _Error) -> Explained:
    if _case_expect(error.loc):
        return Explained("missing required key 'expect'", _CASE_EXPECT_HINT, "parent")
    hint = _MISSING_HINTS.get(error.key, f"add `{error.key}:`.")
    return Explained(f"missing required key '{error.key}'", hint, "parent")


def _bad_schema_version(error: _Error) -> Explained:
    return Explained(
        f"schema_version must be the integer 1, not {_kind(error.value)}",
        "write `schema_version: 1` (1.0, true and '1' are not accepted).",
        "value",
    )


def _not_allowed_value(error: _Error) -> Explained:
    if _case_expect(error.loc):
        message = f"expect must be pass or fail, not {_kind(error.value)}"
        return Explained(message, _CASE_EXPECT_HINT, "value")
    if error.key == "expect":
        return Explained(
            f"expect must be pass or fail, not {_kind(error.value)}",
            "leave it out (pass is the default), or write `expect: fail` for a control check.",
            "value",
        )
    if error.key == "aggregate":
        return Explained(
            f"aggregate must be all, majority or any, not {_kind(error.value)}",
            "leave it out (all is the default: every sample must pass), or write "
            "`aggregate: majority` or `aggregate: any`.",
            "value",
        )
    expected = error.ctx.get("expected", "another value")
    return Explained(f"{error.key} must be {expected}, not {_kind(error.value)}", None, "value")


def _bad_repeats(error: _Error) -> Explained:
    return Explained(
        f"{error.msg}, not {_kind(error.value)}",
        "write e.g. `repeats: 3` (a whole number without quotes), or delete the key to run "
        "the check once.",
        "value",
    )


def _not_a_list(error: _Error) -> Explained:
    items = error.value if isinstance(error.value, str) else "a, b"
    return Explained(
        f"{error.key} must be a list, not {_kind(error.value)}",
        f"write `{error.key}: [{items}]`, or one `- item` per line below `{error.key}:`.",
        "value",
    )


def _not_a_whole_number(error: _Error) -> Explained:
    return Explained(f"{error.key} must be a whole number, not {_kind(error.value)}", None, "value")


def _too_small(error: _Error) -> Explained:
    least = error.ctx.get("ge")
    return Explained(
        f"{error.key} must be {least} or more, not {_shown(error.value)}", None, "value"
    )


def _not_a_mapping(error: _Error) -> Explained:
    hint = "an assertion is written `- {path: ..., op: ...}`." if "assert" in error.loc else None
    return Explained(
        f"expected a mapping of keys to values, not {_kind(error.value)}", hint, "value"
    )


def _blank(error: _Error) -> Explained:
    field = str(error.ctx.get("field", error.key))
    # A field rule points at the value; the whole-check rule at the key it names.
    anchor = "value" if error.loc and error.loc[-1] == field else field
    return Explained(error.msg, _BLANK_HINTS.get(field), anchor)


def _bad_id(error: _Error) -> Explained:
    fixed = re.sub(r"[^A-Za-z0-9_-]+", "_", str(error.value).strip()).strip("_") or "my_check"
    return Explained(
        f"id must match ^[a-zA-Z0-9_-]+$, not {_shown(error.value)}",
        f"use only letters, digits, '_' and '-', e.g. `id: {fixed}`.",
        "value",
    )


def _bad_path(error: _Error) -> Explained:
    """A path that breaks the path syntax, with the fix the parser knows (none for most: the
    message names the character)."""
    from eval_banana.assertions.paths import PathSyntaxError, parse_path

    if isinstance(error.value, str):
        try:
            parse_path(text=error.value)
        except PathSyntaxError as exc:
            return Explained(error.msg, exc.hint, "value")
    return Explained(error.msg, None, "value")


def _empty_operand(error: _Error) -> Explained:
    if error.ctx.get("op") == "matches":
        fix = 'write in value: the pattern it must find; value: "^" if any string will do.'
    else:
        fix = (
            "write in value: the text it must hold; to require only that the value is a "
            'string, write op: matches with value: "^".'
        )
    return Explained(error.msg, fix, "value")


def _as_written(error: _Error) -> Explained:
    # Our own validators (paths, patterns, artifact) already speak plainly; anything else is
    # the library's sentence, still located.
    return Explained(error.msg, None, "value")


_EXPLAINERS: dict[str, Callable[[_Error], Explained]] = {
    "missing": _missing,
    "extra_forbidden": lambda error: _unknown_key(loc=error.loc),
    "union_tag_invalid": lambda error: _unknown_tag(ctx=error.ctx),
    "union_tag_not_found": lambda error: _missing_tag(ctx=error.ctx),
    "schema_version": _bad_schema_version,
    "literal_error": _not_allowed_value,
    "path_syntax": _bad_path,
    "empty_operand": _empty_operand,
    "string_type": lambda error: _wrong_text(key=error.key, value=error.value, keyed=error.keyed),
    "list_type": _not_a_list,
    "int_type": _not_a_whole_number,
    "int_from_float": _not_a_whole_number,
    "int_parsing": _not_a_whole_number,
    "greater_than_equal": _too_small,
    "model_attributes_type": _not_a_mapping,
    "model_type": _not_a_mapping,
    "dict_type": _not_a_mapping,
    "blank": _blank,
    "id_characters": _bad_id,
    "repeats": _bad_repeats,
    "script_choice": lambda error: _script_choice(document=error.document),
}


def explain(*, error: Mapping[str, Any], document: Mapping[str, Any]) -> Explained:
    """What is wrong and how to fix it, for one validation error of a check document."""
    loc: Loc = tuple(error.get("loc", ()))
    read = _Error(
        kind=str(error.get("type", "")),
        loc=loc,
        key=str(loc[-1]) if _keyed(loc) else _NO_KEY,
        value=error.get("input"),
        ctx=error.get("ctx") or {},
        msg=str(error.get("msg", "")),
        document=document,
    )
    return _EXPLAINERS.get(read.kind, _as_written)(read)
