"""Pydantic-free fast path for validating check documents (start-up cost).

`fast_normalize` mirrors `eval_banana.models.check` for the common, plain cases only and
returns None whenever it is unsure, so the caller falls back to pydantic (and its messages).
Keep it stdlib-only: importing pydantic here would defeat the point.
"""

from __future__ import annotations

import math
import re
from typing import Any, TypeGuard

from eval_banana.assertions.paths import (
    ArtifactPathError,
    PathSyntaxError,
    check_artifact_path,
    parse_path,
)
from eval_banana.models.casepaths import case_path_problem
from eval_banana.models.repeats import RULES, valid_repeats
from eval_banana.projectstate.patterns import pattern_problem

# Same rule as models.check.ID_PATTERN; fullmatch is at least as strict as `^...$` + match.
_ID_RE = re.compile(r"[a-zA-Z0-9_-]+")

_BASE_KEYS = frozenset(
    {
        "type",
        "schema_version",
        "id",
        "description",
        "tags",
        "expect",
        "skip",
        "inputs",
        "repeats",
        "aggregate",
        "cases",
        "cases_from",
        "min_pass_rate",
    }
)
_KEYS_BY_TYPE = {
    "deterministic": _BASE_KEYS | {"script", "script_path"},
    "harness_judge": _BASE_KEYS | {"instructions", "model", "calibration"},
    "assertions": _BASE_KEYS | {"artifact", "assert"},
}
# Assertion operators the fast path knows: `matches` goes to the models (its pattern rules
# need the RE2 engine).
_VALUE_OPS = frozenset({"equals", "contains", "lengthAtLeast", "lengthAtMost"})
_LENGTH_OPS = frozenset({"lengthAtLeast", "lengthAtMost"})


def _plain_str(value: object) -> TypeGuard[str]:
    # Exact str only (no subclasses/bytes, which pydantic may coerce); lone surrogates are
    # rejected too, since some pydantic-core versions refuse them.
    if type(value) is not str:
        return False
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _optional_str(document: dict[str, Any], *, key: str) -> tuple[bool, str | None]:
    # (ok, value): an absent key or explicit None both mean None, as in the models.
    value = document.get(key)
    if value is None:
        return True, None
    return _plain_str(value), value


def _valid_inputs(inputs: object) -> bool:
    """The model's `inputs` rules: a list of usable patterns, not only `!` exclusions."""
    if type(inputs) is not list or not all(_plain_str(pattern) for pattern in inputs):
        return False
    if any(pattern_problem(pattern) is not None for pattern in inputs):
        return False
    return not inputs or not all(pattern.startswith("!") for pattern in inputs)


_CASE_KEYS = frozenset({"name", "expect", "files"})


def _plain_case(case: object) -> dict[str, Any] | None:
    """One calibration case as the model dumps it (name stripped, keys in model order)."""
    if type(case) is not dict or case.keys() != _CASE_KEYS:
        return None
    name, expect, files = case["name"], case["expect"], case["files"]
    if not _plain_str(name) or not name.strip():
        return None
    if type(expect) is not str or expect not in ("pass", "fail"):
        return None
    if type(files) is not dict:
        return None
    for path, content in files.items():
        if not _plain_str(path) or case_path_problem(path) is not None:
            return None
        if content is not None and not _plain_str(content):
            return None
    return {"name": name.strip(), "expect": expect, "files": dict(files)}


def _calibration(value: object) -> list[dict[str, Any]] | None:
    """The model's `calibration` rules: a non-empty list of cases with unique names."""
    if type(value) is not list or not value:
        return None
    cases = [_plain_case(case) for case in value]
    if any(case is None for case in cases):
        return None
    names = [case["name"] for case in cases if case is not None]
    if len(set(names)) != len(names):
        return None
    return [case for case in cases if case is not None]


def _json_value(value: object) -> tuple[bool, Any]:
    """(ok, a copy of `value`) for a plain JSON value: None, a bool, an int, a finite float, a
    plain string, or lists and string-keyed objects of those, as the models dump them."""
    kind = type(value)
    if value is None or kind is bool or kind is int:
        return True, value
    if kind is float and isinstance(value, float):
        return math.isfinite(value), value
    if kind is str:
        return _plain_str(value), value
    if kind is list and isinstance(value, list):
        items = [_json_value(item) for item in value]
        return all(ok for ok, _ in items), [item for _, item in items]
    if kind is dict and isinstance(value, dict):
        pairs = [(key, _json_value(item)) for key, item in value.items()]
        ok = all(_plain_str(key) and good for key, (good, _) in pairs)
        return ok, {key: item for key, (_, item) in pairs}
    return False, None


def _inline_cases(value: object) -> list[dict[str, Any]] | None:
    """An inline dataset as the models dump it: a list of string-keyed mappings of plain JSON
    values (copied), or None when unsure. The rows' own rules (ids, duplicates, `tags` and
    `skip`, an empty list) are the dataset's to check, as for a file of rows."""
    if type(value) is not list:
        return None
    rows = []
    for row in value:
        ok, copied = _json_value(row)
        if not ok or type(copied) is not dict:
            return None
        rows.append(copied)
    return rows


def _plain_assertion(item: object) -> dict[str, Any] | None:
    """One assertion as the models dump it (path, op, value), or None when unsure."""
    if type(item) is not dict:
        return None
    op = item.get("op")
    if type(op) is not str or op not in _VALUE_OPS | {"exists"}:
        return None
    if item.keys() != ({"path", "op"} if op == "exists" else {"path", "op", "value"}):
        return None
    path = item["path"]
    if not _plain_str(path):
        return None
    try:
        parse_path(text=path)
    except PathSyntaxError:
        return None
    if op == "exists":
        return {"path": path, "op": op}
    value = item["value"]
    if op in _LENGTH_OPS:
        if type(value) is not int or value < 0:
            return None
        return {"path": path, "op": op, "value": value}
    if op == "contains" and value == "":
        return None  # refused by the models, with their message
    ok, copied = _json_value(value)
    return {"path": path, "op": op, "value": copied} if ok else None


def _assertions_fields(document: dict[str, Any]) -> dict[str, Any] | None:
    """The `artifact` and `assert` of an assertions check as the models dump them."""
    artifact = document.get("artifact")
    if not _plain_str(artifact):
        return None
    try:
        check_artifact_path(text=artifact)
    except ArtifactPathError:
        return None
    raw = document.get("assert")
    if type(raw) is not list or not raw:
        return None
    assertions = [_plain_assertion(item) for item in raw]
    if any(assertion is None for assertion in assertions):
        return None
    return {"artifact": artifact, "assert": assertions}


def fast_normalize(*, document: dict[str, Any]) -> dict[str, Any] | None:
    """Return the pydantic `model_dump(mode="json", by_alias=True)` of `document`, or None.

    None means "not sure": unknown type (llm_judge, ...), a `matches` assertion, extra or
    missing keys, non-plain values, or anything invalid. A dict return equals pydantic's dump
    exactly, key order included.
    """
    if type(document) is not dict:
        return None
    check_type = document.get("type")
    if type(check_type) is not str or check_type not in _KEYS_BY_TYPE:
        return None
    if not document.keys() <= _KEYS_BY_TYPE[check_type]:
        return None

    # schema_version: only the int 1 (not True, not 1.0).
    schema_version = document.get("schema_version")
    if type(schema_version) is not int or schema_version != 1:
        return None

    raw_id = document.get("id")
    if not _plain_str(raw_id):
        return None
    check_id = raw_id.strip(" \t")  # as models.checkbase.ID_SPACES: never a line break
    if not _ID_RE.fullmatch(check_id):
        return None

    raw_description = document.get("description")
    if not _plain_str(raw_description):
        return None
    description = raw_description.strip()
    if not description:
        return None

    tags = document.get("tags", [])
    if type(tags) is not list or not all(_plain_str(tag) for tag in tags):
        return None

    expect = document.get("expect", "pass")
    if type(expect) is not str or expect not in ("pass", "fail"):
        return None

    # skip: absent or null means not skipped; a reason must be a non-blank string, stripped.
    ok_skip, raw_skip = _optional_str(document, key="skip")
    if not ok_skip:
        return None
    skip = raw_skip.strip() if raw_skip is not None else None
    if raw_skip is not None and not skip:
        return None
    inputs = document.get("inputs")
    if inputs is not None and not _valid_inputs(inputs):
        return None
    # repeats / aggregate: absent or null leave no key (the models omit them when unset).
    repeats = document.get("repeats")
    if repeats is not None and not valid_repeats(repeats):
        return None
    aggregate = document.get("aggregate")
    if aggregate is not None and (type(aggregate) is not str or aggregate not in RULES):
        return None

    # A dataset, inline or in a file, and the family's gate (`case_schema` goes to the models).
    cases = None
    if "cases" in document and document["cases"] is not None:
        cases = _inline_cases(document["cases"])
        if cases is None:
            return None
    cases_from = document.get("cases_from")
    if cases_from is not None and not (_plain_str(cases_from) and cases_from.strip()):
        return None
    min_pass_rate = document.get("min_pass_rate")
    if min_pass_rate is not None and (
        type(min_pass_rate) not in (int, float)
        or not 0 <= min_pass_rate <= 1
        or (cases is None and cases_from is None)
    ):
        return None

    # Key order follows pydantic: `type` keeps its base-class slot, subclass fields last.
    result: dict[str, Any] = {
        "type": check_type,
        "schema_version": 1,
        "id": check_id,
        "description": description,
        "tags": list(tags),
        "expect": expect,
        "skip": skip,
        "inputs": list(inputs) if inputs is not None else None,
    }
    if repeats is not None:
        result["repeats"] = repeats
    if aggregate is not None:
        result["aggregate"] = aggregate
    if cases is not None:
        result["cases"] = cases
    if cases_from is not None:
        result["cases_from"] = cases_from
    if min_pass_rate is not None:
        result["min_pass_rate"] = float(min_pass_rate)

    if check_type == "deterministic":
        ok_script, script = _optional_str(document, key="script")
        ok_path, script_path = _optional_str(document, key="script_path")
        if not (ok_script and ok_path):
            return None
        given = script if script_path is None else script_path
        # Exactly one must be set, and it must be non-blank; it is kept unstripped.
        if (script is None) == (script_path is None) or given is None or not given.strip():
            return None
        result["script"] = script
        result["script_path"] = script_path
        return result

    if check_type == "assertions":
        fields = _assertions_fields(document)
        if fields is None:
            return None
        result.update(fields)
        return result

    raw_instructions = document.get("instructions")
    if not _plain_str(raw_instructions):
        return None
    instructions = raw_instructions.strip()
    if not instructions:
        return None
    ok_model, model = _optional_str(document, key="model")
    if not ok_model:
        return None
    result["instructions"] = instructions
    result["model"] = model
    # calibration: absent or null leaves no key, as in the models.
    raw_calibration = document.get("calibration")
    if raw_calibration is not None and (cases is not None or cases_from is not None):
        return None  # a family's calibration rows: the models check them
    if raw_calibration is not None:
        calibration = _calibration(raw_calibration)
        if calibration is None:
            return None
        result["calibration"] = calibration
    return result
