"""One check file: bytes -> YAML -> validated definition, and its v1 digest.

A definition is the normalized mapping the pydantic check models produce (`model_dump`). The
common case is normalized by `eval_banana.checks.fast` without importing pydantic (~70 ms of
start-up); anything it is unsure of, including every invalid file, goes through the models,
which stay the single source of the rules and of the error texts.
"""

from __future__ import annotations

import hashlib
import math
import struct
from pathlib import Path
from typing import Any, NamedTuple, cast

import yaml

from eval_banana.checks.fast import fast_normalize
from eval_banana.core.errors import DefinitionError
from eval_banana.core.jsonvalues import (
    TOO_LARGE_FIX,
    TOO_SMALL,
    TOO_SMALL_FIX,
    HugeNumber,
    TinyNumber,
    too_large,
    too_long_number,
)
from eval_banana.core.readback import MAX_DEPTH, read_regular
from eval_banana.core.realpaths import real_path
from eval_banana.core.textfiles import blank_source, unicode_said
from eval_banana.core.words import visible
from eval_banana.core.yamlsafe import (
    DuplicateKeyError,
    NotYaml12Value,
    NumberTooLong,
    OwnKeyWord,
    Unbounded,
    check_file_loader,
    may_be_unbounded,
    refuse_unbounded,
)

_DIGEST_PREFIX = b"eval-banana/check-definition-sha256/v1\x00"


def parse_yaml_mapping(*, data: bytes, path: Path | str) -> dict[str, Any]:
    """Decode and parse one check file; raise DefinitionError with eval-banana's texts."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(path=path, said=_said_of(data) or str(exc)) from None
    try:
        document, misread = _read_yaml(text)
    except (NumberTooLong, DuplicateKeyError, OwnKeyWord, NotYaml12Value) as exc:
        raise _refused_value(exc=exc, path=path) from None
    except yaml.YAMLError as exc:
        # UTF-16 or UTF-32 of ASCII letters is valid UTF-8, NUL bytes between the letters,
        # which YAML refuses: only a file that failed to parse pays for telling it.
        said = _said_of(data) if "\x00" in text else None
        if said is not None:
            raise _not_utf8(path=path, said=said) from None
        raise _syntax_error(exc=exc, path=path, source=text) from None
    except RecursionError:  # the pure-Python loader builds nested values recursively
        raise _too_deep(path=path) from None
    try:
        if may_be_unbounded(text=text, max_depth=MAX_DEPTH, max_values=MAX_EXPANDED_VALUES):
            refuse_unbounded(value=document, max_depth=MAX_DEPTH, max_values=MAX_EXPANDED_VALUES)
    except Unbounded as exc:
        raise (_too_deep(path=path) if exc.too_deep else _bomb(path=path, what=exc.what)) from None
    if not isinstance(document, dict):
        hint = "A check file is one mapping: schema_version, id, type, description, ..."
        if isinstance(document, list):
            # A list of mappings next to the checks is most likely a family's dataset.
            hint = (
                "A check file is one mapping (schema_version, id, type, ...); a list is a "
                "dataset's shape. Every .yaml file in an eval_checks/ folder is read as a check, "
                "so keep datasets outside it (data/rows.yaml, named by the family's cases_from) "
                "or write them as .jsonl, .json or .csv."
            )
        raise DefinitionError(
            f"Invalid check definition in {path}: top-level YAML must be a mapping",
            file=str(path),
            hint=hint,
        )
    if misread or _may_not_be_plain(text):
        _refuse_tagged_values(value=document, path=path, text=text)
    return document


def _read_yaml(text: str) -> tuple[Any, bool]:
    """The YAML document `text`, and whether it holds a number too close to zero or too large
    to read. Read by YAML 1.1's rules, or by YAML 1.2's core schema when it declares
    `%YAML 1.2`."""
    loader = check_file_loader(text)
    try:
        return loader.get_single_data(), loader.misread
    finally:
        loader.dispose()


def _said_of(data: bytes) -> str | None:
    said = unicode_said(data)
    return f"the file {said}" if said is not None else None


def _not_utf8(*, path: Path | str, said: str) -> DefinitionError:
    return DefinitionError(
        f"Failed to decode YAML in {path} as UTF-8: {said}",
        file=str(path),
        hint="save the file as UTF-8 (in PowerShell: Set-Content -Encoding utf8)",
    )


def _refused_value(
    *, exc: NumberTooLong | DuplicateKeyError | OwnKeyWord | NotYaml12Value, path: Path | str
) -> DefinitionError:
    """The error for a value the loader refused, at its line, with the fix."""
    line, column = _mark(exc)
    if isinstance(exc, NumberTooLong):
        what = too_long_number(line=line)
        hint = "quote it to keep it as text, or write a smaller number"
    elif isinstance(exc, OwnKeyWord):
        what = f"line {line}: {exc.problem}" if line is not None else str(exc.problem)
        hint = "quote the value to keep it as text"
    elif isinstance(exc, NotYaml12Value):
        what = f"line {line}: {exc.problem}" if line is not None else str(exc.problem)
        hint = "write the value as YAML 1.2 writes it, or quote it to keep it as text"
    else:
        what = str(exc.problem)
        hint = "Each key may appear once; delete the repeated one."
    return DefinitionError(
        f"Invalid check definition in {path}: {what}",
        file=str(path),
        hint=hint,
        line=line,
        column=column,
    )


def _may_not_be_plain(text: str) -> bool:
    """Whether YAML `text` may build a value JSON has not: it needs a tag (`!!binary`,
    `!!set`, any `!`), a date (`2026-12-06`, which PyYAML reads as one unless quoted: four
    digits, a dash, a digit) or `.nan` / `.inf`. A file without any holds only plain values
    and skips the walk. Substring searches, not one regular expression: this runs for every
    check file, and a pattern with alternatives tries each at every character (10 us a file)."""
    if "!" in text:
        return True
    # YAML's words for the floats JSON cannot say (its float rule reads no other spelling).
    if ".inf" in text or ".Inf" in text or ".INF" in text:
        return True
    if ".nan" in text or ".NaN" in text or ".NAN" in text:
        return True
    dash = text.find("-", 4)
    while dash != -1:
        if text[dash - 4 : dash].isdigit() and text[dash + 1 : dash + 2].isdigit():
            return True
        dash = text.find("-", dash + 1)
    return False


# How many values a check file's aliases may expand to (core/yamlsafe.py says why there is a
# bound): a check file is a few hundred values, so this refuses only bombs.
MAX_EXPANDED_VALUES = 1_000_000


def _too_deep(*, path: Path | str) -> DefinitionError:
    return DefinitionError(
        f"Invalid check definition in {path}: values are nested deeper than {MAX_DEPTH} levels",
        file=str(path),
        hint="flatten the lists and mappings; a check file needs only a few levels",
    )


def _bomb(*, path: Path | str, what: str) -> DefinitionError:
    return DefinitionError(
        f"Invalid check definition in {path}: its YAML aliases (*name) {what}",
        file=str(path),
        hint="write the values out, or use fewer, shallower aliases",
    )


def _syntax_error(*, exc: yaml.YAMLError, path: Path | str, source: str) -> DefinitionError:
    """`Failed to parse YAML in <file>: line L, column C: <what> (<context>)`, with a hint."""
    from eval_banana.core.yamlerrors import describe_syntax_error

    line, column = _mark(exc)
    what, hint = describe_syntax_error(exc=exc, source=source)
    return DefinitionError(
        f"Failed to parse YAML in {path}: {what}",
        file=str(path),
        hint=hint,
        line=line,
        column=column,
    )


def _mark(exc: yaml.YAMLError) -> tuple[int | None, int | None]:
    """1-based line and column of a YAML error, when the parser knows them."""
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return None, None
    return mark.line + 1, mark.column + 1


# What a check file may hold: what JSON can say. YAML tags such as !!binary, !!set or
# !!timestamp build other Python types, which validation would otherwise coerce silently
# (`id: !!binary aGVsbG8=` became the id `hello`).
_PLAIN_SET: frozenset[type] = frozenset((str, int, bool, type(None)))


def _not_plain(value: object) -> bool:
    """Whether `value` is no JSON scalar: a type JSON has not, or a float that is not finite
    (YAML's .nan and .inf, which the models would turn into null without a word); a number
    too close to zero or too large to read is a TinyNumber or a HugeNumber."""
    kind = type(value)
    return kind not in _PLAIN_SET and not (kind is float and math.isfinite(cast(float, value)))


_TYPE_NAMES = {
    "bytes": "binary data (a !!binary tag)",
    "date": "a date",
    "datetime": "a timestamp",
    "set": "a set (a !!set tag)",
    "tuple": "pairs (a !!omap or !!pairs tag)",
}


def _refuse_tagged_values(*, value: object, path: Path | str, text: str) -> None:
    """Every value must be a string, finite number, boolean, null, list or mapping."""
    # Exact type tests in a set: this runs for every check file (a few microseconds each).
    # Each list and mapping is visited once, by identity: YAML aliases make one object appear
    # many times, and walking them as a tree took exponential time (an alias bomb of nine
    # levels is 9**9 paths over a few dozen nodes).
    not_plain = _not_plain
    seen: set[int] = set()
    stack: list[tuple[object, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, where = stack.pop()
        kind = type(item)
        if kind is dict or kind is list:
            if id(item) in seen:
                continue
            seen.add(id(item))
        if kind is dict:
            for key, child in cast(dict[object, object], item).items():
                if not_plain(key):
                    _tagged_error(item=key, path=path, where=where, what="a key", text=text)
                if not_plain(child):
                    stack.append((child, (*where, str(key))))
        elif kind is list:
            for index, child in enumerate(cast(list[object], item)):
                if not_plain(child):
                    stack.append((child, (*where, index)))
        elif not_plain(item):
            _tagged_error(item=item, path=path, where=where, what="the value", text=text)


def _tagged_error(
    *, item: object, path: Path | str, where: tuple[str | int, ...], what: str, text: str
) -> None:
    from eval_banana.checks.yamlpos import compose, locate  # only a refused file pays for positions

    location = ".".join(str(part) for part in where) or "(top level)"
    root = compose(text=text)
    found = locate(root=root, path=where) if root is not None and where else None
    position = found.value if found is not None else None
    if type(item) is TinyNumber:
        message = f"{what} is the number {item.text}, {TOO_SMALL}"
        hint = TOO_SMALL_FIX
    elif type(item) is HugeNumber:
        message = f"{what} is the number {item.text}, {too_large(item.text)}"
        hint = TOO_LARGE_FIX
    elif isinstance(item, float):
        kind = "NaN" if math.isnan(item) else "infinity"
        message = f"{what} is {kind} (YAML's .nan or .inf), which JSON cannot say"
        hint = "write a finite number, or quote the value to make it a string"
    else:
        kind = _TYPE_NAMES.get(type(item).__name__, f"a {type(item).__name__}")
        message = (
            f"{what} is {kind}; a check file holds only strings, numbers, booleans, null, "
            "lists and mappings"
        )
        hint = "quote the value to make it a string, or remove the YAML tag"
    at = f" (line {position.line}, column {position.column})" if position else ""
    raise DefinitionError(
        f"Invalid check definition in {path}: {location}: {message}{at}",
        file=str(path),
        field_path=location,
        hint=hint,
        line=position.line if position else None,
        column=position.column if position else None,
    )


def _text(data: bytes | None) -> str | None:
    return data.decode("utf-8", errors="replace") if data is not None else None


def validate_mapping(
    *,
    document: dict[str, Any],
    path: Path | str,
    data: bytes | None = None,
    filled_case: bool = False,
) -> dict[str, Any]:
    """Validate a parsed mapping as a check and return its normalized definition.

    Every field error of the file is reported at once; with the file's `data`, each is located.
    `filled_case`: `document` is one case of a family, its placeholders filled with a row's
    values. Its text is the rows' as much as the check file's, and a row may hold `{{ case.x }}`
    as literal text (a prompt-template dataset): the check file's own placeholders were read
    once, as the family's, so none is looked for here.
    """
    if document.get("type") == "llm_judge":
        _refuse_llm_judge(path=path, data=data)
    if not filled_case:
        _refuse_placeholders_without_cases(document=document, path=path, data=data)
    stand_ins = _family_stand_ins(document=document)
    checked = document if stand_ins is None else {**document, "assert": stand_ins}
    definition = fast_normalize(document=checked)
    if definition is None:
        definition = _validate_with_models(document=checked, path=path, data=data)
    if stand_ins is not None:
        # The family keeps its placeholders: each case is filled in, then checked again.
        definition["assert"] = [
            {**item, **{key: written[key] for key in ("path", "value") if key in written}}
            for item, written in zip(definition["assert"], document["assert"], strict=True)
        ]
    return definition


def _refuse_placeholders_without_cases(
    *, document: dict[str, Any], path: Path | str, data: bytes | None
) -> None:
    """A check without cases holding `{{ case.<field> }}` is refused: nothing fills it."""
    from eval_banana.datasets.keys import is_family

    filled = [
        document.get(key)
        for key in ("description", "instructions", "artifact", "script_path", "inputs", "assert")
    ]
    if is_family(document) or not _may_hold_placeholder(filled):
        return
    from eval_banana.checks.leftplaceholders import refuse_left_placeholders

    refuse_left_placeholders(document=document, path=path, text=_text(data))


def _may_hold_placeholder(value: Any) -> bool:
    """Whether any string of `value` (keys included) holds `{{`: most check files hold none,
    and then the placeholder module is never loaded."""
    if isinstance(value, str):
        return "{{" in value
    if isinstance(value, dict):
        return any(
            _may_hold_placeholder(key) or _may_hold_placeholder(item) for key, item in value.items()
        )
    if isinstance(value, list):
        return any(_may_hold_placeholder(item) for item in value)
    return False


def _family_stand_ins(*, document: dict[str, Any]) -> list[dict[str, Any]] | None:
    """An assertions family's assertions with values standing in for their placeholders, as
    its definition is checked before a row fills them; None for any other check."""
    if document.get("type") != "assertions":
        return None
    from eval_banana.datasets.keys import is_family
    from eval_banana.datasets.render import placeholder_stand_ins

    return placeholder_stand_ins(document.get("assert")) if is_family(document) else None


def _refuse_llm_judge(*, path: Path | str, data: bytes | None) -> None:
    from eval_banana.checks.problems import value_position

    position = value_position(text=_text(data), key="type")
    where = f"\ntype (line {position.line}, column {position.column})" if position else ""
    raise DefinitionError(
        f"Check type 'llm_judge' was renamed to 'harness_judge' in {path}. "
        f"Update the 'type' field in your YAML to 'harness_judge'.{where}",
        file=str(path),
        field_path="type",
        line=position.line if position else None,
        column=position.column if position else None,
    )


def _validate_with_models(
    *, document: dict[str, Any], path: Path | str, data: bytes | None
) -> dict[str, Any]:
    from pydantic import ValidationError

    from eval_banana.models.check import CHECK_ADAPTER

    try:
        check = CHECK_ADAPTER.validate_python(document)
    except ValidationError as exc:
        from eval_banana.checks.problems import definition_error, field_problems

        problems = field_problems(
            errors=exc.errors(include_url=False),
            document=document,
            text=_text(data),
            path=str(path),
        )
        raise definition_error(problems=problems, path=str(path)) from None
    return check.model_dump(mode="json", by_alias=True)


def load_definition(*, data: bytes, path: Path | str) -> dict[str, Any]:
    """Bytes of one check file -> its validated, normalized definition."""
    document = parse_yaml_mapping(data=data, path=path)
    return validate_mapping(document=document, path=path, data=data)


class FrozenScript(NamedTuple):
    """A referenced script as read once: its bytes (None when it could not be read), and why
    it cannot run (None when it can: a blank script is read, yet cannot)."""

    path: Path
    data: bytes | None
    unavailable: str | None


def freeze_script(
    *, yaml_path: Path, script_path: str, yaml_data: bytes | None = None
) -> FrozenScript:
    """The script a check file names, read once; `yaml_data` (the check file's bytes) lets a
    missing or blank script's message give the line of `script_path`."""
    resolved = real_path(yaml_path.parent / script_path)
    if not resolved.is_file():
        return FrozenScript(
            path=resolved,
            data=None,
            unavailable=missing_script_message(
                resolved=resolved, yaml_path=yaml_path, script_path=script_path, data=yaml_data
            ),
        )
    try:
        data = read_regular(resolved)
    except OSError as exc:
        return FrozenScript(path=resolved, data=None, unavailable=str(exc))
    # Kept as read (the digest covers these bytes), but unavailable: a blank script can never
    # fail, as an inline one that is blank is refused.
    blank = (
        _blank_script_message(
            resolved=resolved, yaml_path=yaml_path, script_path=script_path, data=yaml_data
        )
        if blank_source(data)
        else None
    )
    return FrozenScript(path=resolved, data=data, unavailable=blank)


def missing_script_message(
    *, resolved: Path, yaml_path: Path, script_path: str, data: bytes | None
) -> str:
    """The missing script, and the check file (and line) whose `script_path` names it: a moved
    script breaks a check file that the commit or the user may never have opened."""
    named = _named_by(resolved=resolved, yaml_path=yaml_path, script_path=script_path, data=data)
    return f"Deterministic script not found: {named}"


def _blank_script_message(
    *, resolved: Path, yaml_path: Path, script_path: str, data: bytes | None
) -> str:
    """The blank script, the check file (and line) that names it, and the fix."""
    named = _named_by(resolved=resolved, yaml_path=yaml_path, script_path=script_path, data=data)
    return (
        f"Deterministic script is blank: {named}: a check with an empty script could never "
        "fail; write the check's rule in it, or point script_path at the script that holds it"
    )


def _named_by(*, resolved: Path, yaml_path: Path, script_path: str, data: bytes | None) -> str:
    """`<script> (script_path: <as written> in <check file>:<line>)`."""
    where = str(yaml_path)
    line = _script_path_line(data=data)
    if line is not None:
        where += f":{line}"
    # The path comes from the check file: shown with any control character escaped, so a
    # line break in it cannot start a line of eb's output.
    return f"{visible(str(resolved))} (script_path: {visible(script_path)} in {where})"


def _script_path_line(*, data: bytes | None) -> int | None:
    if data is None:
        return None
    from eval_banana.checks.yamlpos import compose, locate

    root = compose(text=data.decode("utf-8", errors="replace"))
    if root is None:
        return None
    located = locate(root=root, path=["script_path"])
    return located.key.line if located.found and located.key is not None else None


def _component(*, name: bytes, content: bytes) -> bytes:
    return struct.pack(">Q", len(name)) + name + struct.pack(">Q", len(content)) + content


def definition_digest(*, yaml_bytes: bytes, frozen: FrozenScript | None) -> str:
    """The v1 framed digest eval-banana reports, byte for byte.

    The definition bytes, then the referenced script if any.
    """
    digest = hashlib.sha256(_DIGEST_PREFIX)
    digest.update(_component(name=b"definition.yaml", content=yaml_bytes))
    if frozen is not None:
        if frozen.data is None:
            digest.update(_component(name=b"referenced-script-unavailable", content=b""))
        else:
            digest.update(_component(name=b"referenced-script", content=frozen.data))
    return f"sha256:{digest.hexdigest()}"


def compute_check_definition_sha256(*, source_path: Path) -> str:
    """The `check_definition_sha256` that `eb run` reports for this check file.

    See docs/compatibility.md#definition-digest.
    """
    resolved = real_path(source_path)
    data = read_regular(resolved)
    try:
        check = load_definition(data=data, path=resolved)
    except DefinitionError as exc:
        raise ValueError(exc.message) from None
    _refuse_a_family(check=check, path=resolved)
    script_path = check.get("script_path")
    frozen = freeze_script(yaml_path=resolved, script_path=script_path) if script_path else None
    return definition_digest(yaml_bytes=data, frozen=frozen)


def _refuse_a_family(*, check: dict[str, Any], path: Path) -> None:
    """A dataset family has no digest `eb run` reports: each of its cases has its own. Refused
    as eval-banana 0.5.0 refused the file (its `cases` is no field there), with a ValueError."""
    from eval_banana.datasets.keys import is_family

    if not is_family(check):
        return
    field = "cases" if check.get("cases") is not None else "cases_from"
    raise ValueError(
        f"{path}: `{field}` makes this file a dataset family, and a family has no one "
        "check_definition_sha256: each case `<family>[<case id>]` has its own. Read the cases' "
        "digests from `eb plan --json` (definition_digest) or from a run's report.json "
        "(check_definition_sha256)."
    )
