"""The pydantic-free fast path agrees exactly with the pydantic models, or abstains."""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from eval_banana.checks.fast import fast_normalize
from eval_banana.models.check import CHECK_ADAPTER

REPO = Path(__file__).resolve().parents[2]
FAST_TYPES = ("deterministic", "harness_judge", "assertions")


def _pydantic_dump(document: Any) -> dict[str, Any] | None:
    try:
        dumped: dict[str, Any] = CHECK_ADAPTER.validate_python(document).model_dump(
            mode="json", by_alias=True
        )
    except ValidationError:
        return None
    return dumped


def _plain_str(value: Any) -> bool:
    # Lone surrogates are deliberately outside the fast path (see checkfast._plain_str).
    return type(value) is str and not any("\ud800" <= ch <= "\udfff" for ch in value)


def _is_plain(document: dict[str, Any]) -> bool:
    """Only plain str / int / None / list-of-str values under str keys."""
    for key, value in document.items():
        if not _plain_str(key):
            return False
        if type(value) is list:
            if not all(_plain_str(item) for item in value):
                return False
        elif not (value is None or type(value) is int or _plain_str(value)):
            return False
    return True


def _plain_json(value: Any) -> bool:
    if value is None or type(value) in (bool, int):
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is list:
        return all(_plain_json(item) for item in value)
    if type(value) is dict:
        return all(_plain_str(key) and _plain_json(item) for key, item in value.items())
    return _plain_str(value)


def _is_plain_document(document: dict[str, Any]) -> bool:
    """What the fast path must decide itself: plain values (and, for an assertions check,
    assertions of plain JSON, none of them `matches`, which it leaves to the models)."""
    if document.get("type") != "assertions":
        return _is_plain(document)
    raw = document.get("assert")
    rest = {key: value for key, value in document.items() if key != "assert"}
    return (
        _is_plain(rest)
        and type(raw) is list
        and all(
            type(item) is dict
            and item.get("op") != "matches"
            and all(_plain_str(key) and _plain_json(value) for key, value in item.items())
            for item in raw
        )
    )


def _shape(value: Any) -> Any:
    """Value plus exact types, recursively (a str subclass must not slip through)."""
    if type(value) is dict:
        return [(key, _shape(item)) for key, item in value.items()]
    if type(value) is list:
        return [_shape(item) for item in value]
    return (type(value).__name__, value)


def _assert_agrees(document: Any) -> dict[str, Any] | None:
    """Soundness: an accepted document normalizes exactly like pydantic, key order included."""
    snapshot = copy.deepcopy(document)
    fast = fast_normalize(document=document)
    assert document == snapshot, "fast_normalize must not mutate its input"
    if fast is not None:
        expected = _pydantic_dump(document)
        assert expected is not None, f"fast path accepted what pydantic rejects: {document!r}"
        assert json.dumps(fast) == json.dumps(expected)
        assert _shape(fast) == _shape(expected)
    return fast


# --- generated documents -------------------------------------------------------------------


class _StrSubclass(str):
    pass


_CHARS = list("aZ09_-. é") + [" ", "\t", "\n", "\x1c", "\u3000", "\u0660", "\ud800"]
_TEXT = st.text(alphabet=st.sampled_from(_CHARS), max_size=6)
_CLEAN_TEXT = st.text(alphabet=st.sampled_from(_CHARS[:-1]), max_size=4)  # no surrogate
_BLANK = st.text(alphabet=st.sampled_from([" ", "\t", "\n", "\x1c", "\u3000"]), max_size=3)
_PAD = st.sampled_from(["", " ", "\t\n", "\u3000"])
_WORD = st.text(alphabet=st.sampled_from(list("aZ09_-")), min_size=1, max_size=5)
_ID = st.builds(lambda pre, word, post: pre + word + post, _PAD, _WORD, _PAD)
_NON_BLANK = st.builds(
    lambda pre, head, word, tail, post: pre + head + word + tail + post,
    _PAD,
    _CLEAN_TEXT,
    _WORD,
    _CLEAN_TEXT,
    _PAD,
)
_JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-1, max_value=2),
    st.floats(allow_nan=False),
    st.binary(max_size=3),
    st.lists(_TEXT, max_size=2).map(tuple),
    st.lists(st.lists(_TEXT, max_size=2), max_size=2),
    st.dictionaries(_WORD, _TEXT, max_size=1),
    _TEXT.map(_StrSubclass),
)

# A dataset row's values: plain JSON, and now and then what JSON cannot say.
_JSON_CASE_VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=3)
    | st.floats(width=32)
    | _TEXT
    | st.binary(max_size=2),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_WORD, inner, max_size=2),
    max_leaves=4,
)

_VALID: dict[str, st.SearchStrategy[Any]] = {
    "schema_version": st.just(1),
    "id": _ID,
    "description": _NON_BLANK,
    "tags": st.lists(_TEXT, max_size=3),
    "expect": st.sampled_from(["pass", "fail"]),
    "skip": st.none() | _NON_BLANK,
    "script": _NON_BLANK,
    "script_path": _NON_BLANK,
    "instructions": _NON_BLANK,
    "model": st.none() | _CLEAN_TEXT,
    "inputs": st.none()
    | st.lists(
        st.sampled_from(["src/**", "!src/x.py", "*.md", "a b/[ab]?.py", "./docs/", "**", "[!a]*"]),
        max_size=3,
    ),
    "repeats": st.none() | st.integers(min_value=1, max_value=20),
    "aggregate": st.none() | st.sampled_from(["all", "majority", "any"]),
    "cases": st.none() | st.lists(st.dictionaries(_WORD, _JSON_CASE_VALUE, max_size=3), max_size=3),
    "calibration": st.none()
    | st.lists(
        st.fixed_dictionaries(
            {
                "name": _NON_BLANK,
                "expect": st.sampled_from(["pass", "fail"]),
                "files": st.dictionaries(
                    st.sampled_from(["a.txt", "src/b.py", "docs/c d.md", ".env"]),
                    st.none() | _TEXT,
                    max_size=2,
                ),
            }
        ),
        min_size=1,
        max_size=3,
        unique_by=lambda case: case["name"].strip(),
    ),
}
_JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    _CLEAN_TEXT,
)
_JSON = st.recursive(
    _JSON_LEAF,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_WORD, inner, max_size=2),
    max_leaves=4,
)
_PATHS = st.sampled_from(["a", "a.b", "steps[*].test", "[0].name", "a[1]", "x_y-z"])
_ASSERTION = st.one_of(
    st.fixed_dictionaries({"path": _PATHS, "op": st.just("exists")}),
    st.fixed_dictionaries(
        {"path": _PATHS, "op": st.sampled_from(["equals", "contains"]), "value": _JSON}
    ),
    st.fixed_dictionaries(
        {
            "path": _PATHS,
            "op": st.sampled_from(["lengthAtLeast", "lengthAtMost"]),
            "value": st.integers(min_value=0, max_value=5),
        }
    ),
    st.fixed_dictionaries({"path": _PATHS, "op": st.just("matches"), "value": st.just("^a")}),
)
_VALID["artifact"] = st.sampled_from(["out/a.json", "a.yaml", "./x/y.yml", "a/../b.json"])
_VALID["assert"] = st.lists(_ASSERTION, min_size=1, max_size=3)
_CASE = {"name": "good", "expect": "pass", "files": {"a.txt": "x"}}
# Near misses: values that look right but that pydantic rejects or might coerce.
_NEAR: dict[str, st.SearchStrategy[Any]] = {
    "type": st.sampled_from(["Assertions", "llm_judge", "Deterministic", " harness_judge", ""]),
    # Paths that escape the root, are absolute or blank; assertions near a valid one.
    "artifact": st.sampled_from(
        ["", " ", "/abs.json", "../x.json", "a/../../x", ".", "C:/x", "a\x00b", 1, None]
    ),
    "assert": st.sampled_from(
        [
            [],
            {},
            None,
            [{"path": "a", "op": "exists", "value": 1}],
            [{"path": "a", "op": "equals"}],
            [{"path": "", "op": "exists"}],
            [{"path": "a..b", "op": "exists"}],
            [{"path": "a[", "op": "exists"}],
            [{"path": 1, "op": "exists"}],
            [{"path": "a", "op": "Equals", "value": 1}],
            [{"path": "a", "op": "lengthAtLeast", "value": -1}],
            [{"path": "a", "op": "lengthAtLeast", "value": True}],
            [{"path": "a", "op": "lengthAtMost", "value": 1.0}],
            [{"path": "a", "op": "lengthAtMost", "value": "2"}],
            [{"path": "a", "op": "equals", "value": float("nan")}],
            [{"path": "a", "op": "equals", "value": float("inf")}],
            [{"path": "a", "op": "equals", "value": ("a",)}],
            [{"path": "a", "op": "equals", "value": {1: "a"}}],
            [{"path": "a", "op": "equals", "value": b"a"}],
            [{"path": "a", "op": "equals", "value": _StrSubclass("a")}],
            [{"path": "a", "op": "contains", "value": "x\ud800"}],
            [{"path": "a", "op": "matches", "value": "("}],
            [{"path": "a", "op": "exists", "extra": 1}],
            ["a"],
        ]
    ),
    "schema_version": st.sampled_from([True, 1.0, 2, 0, "1", None]),
    "id": st.sampled_from(["a b", "a.b", "", " ", "ab\x00", "\u0660", _StrSubclass("a")]),
    "description": _BLANK | st.sampled_from([None, _StrSubclass("d")]),
    "tags": st.sampled_from([None, "a", ("a",), [1], [None], [["a"]], [True]]),
    "expect": st.sampled_from(["Pass", " pass", "", True, None]),
    "skip": _BLANK | st.sampled_from([True, False, 1, [], ["why"], _StrSubclass("why")]),
    "script": _BLANK | st.sampled_from([None, 1, _StrSubclass("x")]),
    "script_path": _BLANK | st.sampled_from([None, 1, _StrSubclass("x")]),
    "instructions": _BLANK | st.sampled_from([None, 1, _StrSubclass("i")]),
    "model": st.sampled_from([1, False, [], "", _StrSubclass("m")]),
    # Patterns that escape the root, are blank or malformed, or only exclude.
    "inputs": st.sampled_from(
        [
            "src",
            ("a",),
            [1],
            [None],
            ["../x"],
            ["a/../b"],
            ["/abs"],
            ["C:/x"],
            ["!x"],
            ["!a", "!b"],
            ["a\\b"],
            [""],
            [" "],
            ["!"],
            ["."],
            ["[z-a]"],
            ["ok\x00"],
            [_StrSubclass("a")],
        ]
    ),
    # Counts out of range or of another type (YAML reads `true` and `3.0` as such).
    "repeats": st.sampled_from([0, 21, -1, True, False, 3.0, "3", [3], 1.5]),
    "aggregate": st.sampled_from(["All", " all", "mean", "", True, 1, ["any"]]),
    # Cases that escape the root, repeat a name, miss a key or hold non-text content.
    "calibration": st.sampled_from(
        [
            [],
            {},
            _CASE,
            [{**_CASE, "files": {"../x": "y"}}],
            [{**_CASE, "files": {"/etc/passwd": "y"}}],
            [{**_CASE, "files": {"a/../b": "y"}}],
            [{**_CASE, "files": {".git/config": "y"}}],
            [{**_CASE, "files": {"a\\b": "y"}}],
            [{**_CASE, "files": {"a/": "y"}}],
            [{**_CASE, "files": {"a": 1}}],
            [{**_CASE, "files": {1: "y"}}],
            [{**_CASE, "files": None}],
            [{**_CASE, "expect": "Pass"}],
            [{**_CASE, "name": " "}],
            [{**_CASE, "name": 1}],
            [_CASE, {**_CASE, "name": " good "}],
            [{"name": "n", "expect": "pass"}],
            [{**_CASE, "extra": 1}],
            [_StrSubclass("a")],
            [{**_CASE, "files": {_StrSubclass("a"): "y"}}],
        ]
    ),
}
_REQUIRED = {
    "deterministic": ["type", "schema_version", "id", "description"],
    "harness_judge": ["type", "schema_version", "id", "description", "instructions"],
    "assertions": ["type", "schema_version", "id", "description", "artifact", "assert"],
}
_OPTIONAL = {
    "deterministic": ["tags", "expect", "skip", "inputs", "repeats", "aggregate", "cases"],
    "harness_judge": [
        "tags",
        "expect",
        "skip",
        "model",
        "inputs",
        "repeats",
        "aggregate",
        "calibration",
        "cases",
    ],
    "assertions": ["tags", "expect", "skip", "inputs", "repeats", "aggregate", "cases"],
}
_ALL_KEYS = list(_NEAR)
_EXTRA_KEYS = ["extra", "Type", "ID", 1, "assertions"]


@st.composite
def documents(draw: st.DrawFn) -> dict[Any, Any]:
    """A valid deterministic / harness_judge document, then 0-2 mutations of it."""
    check_type = draw(st.sampled_from(FAST_TYPES))
    keys = list(_REQUIRED[check_type])
    keys += [key for key in _OPTIONAL[check_type] if draw(st.booleans())]
    if check_type == "deterministic":
        keys.append(draw(st.sampled_from(["script", "script_path"])))
    document: dict[Any, Any] = {}
    key: Any
    for key in draw(st.permutations(keys)):
        document[key] = check_type if key == "type" else draw(_VALID[key])
    own_keys = _REQUIRED[check_type] + _OPTIONAL[check_type] + ["script", "script_path"]
    for _ in range(draw(st.integers(min_value=0, max_value=2))):
        # Mostly the type's own keys (where near misses matter), sometimes any key.
        pool = own_keys if draw(st.booleans()) else _ALL_KEYS + _EXTRA_KEYS
        key = draw(st.sampled_from(pool))
        action = draw(st.sampled_from(["near", "near", "junk", "drop", "valid"]))
        if action == "drop":
            document.pop(key, None)
        elif action == "near" and key in _NEAR:
            document[key] = draw(_NEAR[key])
        elif action == "valid" and key in _VALID:
            # On a foreign key this adds e.g. both script fields, or `model` to a script.
            document[key] = draw(_VALID[key])
        else:
            document[key] = draw(_TEXT | _JUNK)
    return document


@settings(max_examples=400, deadline=None)
@given(documents())
def test_fast_path_is_sound_and_complete(document: dict[Any, Any]) -> None:
    fast = _assert_agrees(document)
    if fast is None and document.get("type") in FAST_TYPES and _is_plain_document(document):
        assert _pydantic_dump(document) is None, f"fast path abstained on {document!r}"


_BASES: dict[str, dict[str, Any]] = {
    "deterministic": {
        "type": "deterministic",
        "schema_version": 1,
        "id": "c",
        "description": "d",
        "script": "x",
    },
    "harness_judge": {
        "type": "harness_judge",
        "schema_version": 1,
        "id": "c",
        "description": "d",
        "instructions": "i",
    },
    "assertions": {
        "type": "assertions",
        "schema_version": 1,
        "id": "c",
        "description": "d",
        "artifact": "out/a.json",
        "assert": [{"path": "a", "op": "exists"}],
    },
}
_ABSENT = object()
_SINGLE_VALUES: list[Any] = [
    _ABSENT,
    None,
    True,
    False,
    0,
    1,
    2,
    1.0,
    b"a",
    {},
    (),
    ("a",),
    [],
    ["a"],
    [1],
    [None],
    [["a"]],
    "",
    " ",
    "\t\n",
    "\u3000",
    "\x1c",
    "a",
    " a ",
    "a b",
    "a.b",
    "ab\x00",
    "\u0660",
    "x\ud800",
    "pass",
    "fail",
    "Pass",
    "deterministic",
    "harness_judge",
    "assertions",
    _StrSubclass("a"),
    [_StrSubclass("a")],
    ["src/**"],
    ["src/**", "!src/gen/**"],
    ["../a"],
    ["!a"],
    ["/x"],
    ["a\\b"],
    [" "],
    20,
    21,
    -1,
    3.0,
    "majority",
    "any",
    "all",
    [_CASE],
    [_CASE, {**_CASE, "name": "bad", "expect": "fail", "files": {"a.txt": None}}],
    [{**_CASE, "name": " padded "}],
    [{**_CASE, "files": {}}],
    [{**_CASE, "files": {"../a": "x"}}],
    [_CASE, _CASE],
]


@pytest.mark.parametrize("check_type", FAST_TYPES)
@pytest.mark.parametrize("key", [*_ALL_KEYS, "extra"])
def test_every_single_field_change(check_type: str, key: str) -> None:
    # Exhaustive one-field near misses on a valid document: each rule is hit in isolation.
    for value in _SINGLE_VALUES:
        document = dict(_BASES[check_type])
        if value is _ABSENT:
            document.pop(key, None)
        else:
            document[key] = value
        fast = _assert_agrees(document)
        if fast is None and _is_plain_document(document) and document.get("type") in FAST_TYPES:
            assert _pydantic_dump(document) is None, f"fast path abstained on {document!r}"


# --- examples ------------------------------------------------------------------------------

DEMO_CHECKS = sorted(
    path
    for pattern in ("*.yaml", "*.yml")
    for path in (REPO / "examples" / "demo").rglob(pattern)
    if "eval_checks" in path.parts
)


def test_demo_checks_are_found() -> None:
    assert len(DEMO_CHECKS) >= 5


@pytest.mark.parametrize("path", DEMO_CHECKS, ids=lambda p: p.name)
def test_demo_checks(path: Path) -> None:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    fast = _assert_agrees(document)
    expected = _pydantic_dump(document)
    assert expected is not None
    # A `matches` pattern needs the RE2 engine, and a judge family's calibration rows are the
    # models' to check: the fast path abstains and pydantic normalizes the file.
    matches = any(item.get("op") == "matches" for item in document.get("assert") or [])
    family_calibration = "calibration" in document and (
        "cases" in document or "cases_from" in document
    )
    if document["type"] in FAST_TYPES and not matches and not family_calibration:
        assert fast == expected
    else:
        assert fast is None


_BASE = {"schema_version": 1, "id": "c1", "description": "A check."}


@pytest.mark.parametrize(
    ("document", "accepted"),
    [
        ({**_BASE, "type": "deterministic", "script": " pass \n"}, True),
        ({"script_path": "x.py", **_BASE, "type": "deterministic", "script": None}, True),
        ({**_BASE, "id": "  c-1_Z \t", "type": "deterministic", "script": "x"}, True),
        # A line break is never stripped from an id: the check would run under another id.
        ({**_BASE, "id": "  c-1_Z \n", "type": "deterministic", "script": "x"}, False),
        ({**_BASE, "type": "harness_judge", "instructions": " Judge. ", "model": None}, True),
        ({**_BASE, "type": "harness_judge", "instructions": "J", "model": " m "}, True),
        (
            {**_BASE, "type": "harness_judge", "instructions": "J", "tags": [], "expect": "fail"},
            True,
        ),
        ({**_BASE, "type": "deterministic", "script": "x", "script_path": "y"}, False),
        ({**_BASE, "type": "deterministic"}, False),
        ({**_BASE, "type": "deterministic", "script": " \n\t"}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "schema_version": True}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "schema_version": 1.0}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "id": "a b"}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "id": "abc\n\x00"}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "description": "\u3000"}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "tags": None}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "tags": ("a",)}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "tags": [["a"]]}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "expect": "Pass"}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "extra": 1}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "skip": " flaky \n"}, True),
        ({**_BASE, "type": "harness_judge", "instructions": "J", "skip": None}, True),
        ({**_BASE, "type": "deterministic", "script": "x", "skip": " \t"}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "skip": ""}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "skip": True}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "model": None}, False),
        ({**_BASE, "type": "harness_judge", "instructions": "J", "script": None}, False),
        ({**_BASE, "type": "harness_judge"}, False),
        ({**_BASE, "type": "llm_judge", "instructions": "J"}, False),
        ({**_BASE, "type": "assertions", "artifact": "a.json", "assert": []}, False),
        ({**_BASE, "type": None, "script": "x"}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "repeats": 3}, True),
        ({**_BASE, "type": "harness_judge", "instructions": "J", "aggregate": "majority"}, True),
        ({**_BASE, "type": "deterministic", "script": "x", "repeats": None}, True),
        ({**_BASE, "type": "deterministic", "script": "x", "repeats": True}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "repeats": 21}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "aggregate": "mean"}, False),
        ({**_BASE, "type": "harness_judge", "instructions": "J", "calibration": [_CASE]}, True),
        ({**_BASE, "type": "harness_judge", "instructions": "J", "calibration": None}, True),
        ({**_BASE, "type": "harness_judge", "instructions": "J", "calibration": []}, False),
        (
            {
                **_BASE,
                "type": "harness_judge",
                "instructions": "J",
                "calibration": [{**_CASE, "files": {"../outside.txt": "x"}}],
            },
            False,
        ),
        ({**_BASE, "type": "deterministic", "script": "x", "calibration": [_CASE]}, False),
        ({**_BASE, "script": "x"}, False),
        # Dataset families: a file and a gate are plain; inline cases go to the models.
        ({**_BASE, "type": "deterministic", "script": "x", "cases_from": "d/*.jsonl"}, True),
        (
            {**_BASE, "type": "harness_judge", "instructions": "J", "cases_from": "d.csv"}
            | {"min_pass_rate": 1},
            True,
        ),
        ({**_BASE, "type": "deterministic", "script": "x", "min_pass_rate": 0.5}, False),
        (
            {**_BASE, "type": "deterministic", "script": "x", "cases_from": "d.csv"}
            | {"min_pass_rate": 1.5},
            False,
        ),
        (
            {**_BASE, "type": "deterministic", "script": "x", "cases_from": "d.csv"}
            | {"min_pass_rate": True},
            False,
        ),
        ({**_BASE, "type": "deterministic", "script": "x", "cases_from": " "}, False),
        # Inline cases of plain JSON are the fast path's too (the eb init example has them).
        ({**_BASE, "type": "deterministic", "script": "x", "cases": [{"a": 1}]}, True),
        (
            {**_BASE, "type": "deterministic", "script": "x", "cases": [{"id": "r1", "n": 1.5}]}
            | {"min_pass_rate": 0.5},
            True,
        ),
        (
            {**_BASE, "type": "deterministic", "script": "x", "cases": [{"a": [1, {"b": None}]}]},
            True,
        ),
        ({**_BASE, "type": "deterministic", "script": "x", "cases": []}, True),
        ({**_BASE, "type": "deterministic", "script": "x", "cases": [1]}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "cases": [{1: "a"}]}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "cases": [{"a": math.nan}]}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "cases": [{"a": b"x"}]}, False),
        ({**_BASE, "type": "deterministic", "script": "x", "cases": ({"a": 1},)}, False),
        (
            {**_BASE, "type": "harness_judge", "instructions": "J", "cases": [{"a": 1}]}
            | {"calibration": [_CASE]},
            False,
        ),
        (
            {**_BASE, "type": "harness_judge", "instructions": "J", "cases_from": "d.csv"}
            | {"calibration": [_CASE]},
            False,
        ),
    ],
)
def test_edge_cases(document: dict[str, Any], accepted: bool) -> None:
    fast = _assert_agrees(document)
    assert (fast is not None) == accepted


def test_odd_but_valid_inputs_fall_back_to_pydantic() -> None:
    # pydantic accepts these (tuple tags, str subclasses); the fast path leaves them to it.
    for document in (
        {**_BASE, "type": "deterministic", "script": "x", "tags": ("a",)},
        {**_BASE, "type": "deterministic", "script": _StrSubclass("x")},
    ):
        assert _pydantic_dump(document) is not None
        assert fast_normalize(document=document) is None


def test_module_does_not_import_pydantic() -> None:
    code = "import sys, eval_banana.checks.fast; assert 'pydantic' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
