"""The assertions engine: path syntax, operators, fail-closed resolution, artifacts, the model."""

from __future__ import annotations

import datetime
import json
import os
import re
from pathlib import Path
from typing import Annotated, Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field, TypeAdapter, ValidationError

from eval_banana.assertions.evaluate import (
    evaluate_all,
    evaluate_assertion,
    fail_all,
    load_artifact,
    summarize,
)
from eval_banana.assertions.operators import (
    MAX_MATCH_INPUT_BYTES,
    OPERATORS,
    VERDICTS,
    json_equal,
)
from eval_banana.assertions.paths import (
    EDITOR_PATH_PATTERN,
    PATH_PATTERN,
    ArtifactPathError,
    Each,
    Index,
    Key,
    PathSyntaxError,
    check_artifact_path,
    parse_path,
    render_path,
)
from eval_banana.models.assertions import ARTIFACT_PATTERN, AssertionsCheck
from eval_banana.models.check import DeterministicCheck

PLAN = {
    "title": "Release plan",
    "steps": [
        {"name": "build", "id": 1},
        {"name": "verify", "test": "tests/test_release.py", "id": 2},
    ],
    "matrix": [[1, 2], [3, 4]],
    "owners": [],
    "meta": {"ready": True, "count": 1, "ratio": 1.0, "note": None, "label": "é-x"},
}

# JSON-like values, with texts short enough to hold one another and to print alike.
_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet="ab\u200b", max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet="ab", max_size=2), inner, max_size=3)
    ),
    max_leaves=6,
)

CANARY_OPS = Path(__file__).parent.parent / "fixtures" / "canaries" / "assertion_ops.yaml"


def holds(path: str, op: str, value: Any = None, document: Any = PLAN) -> bool:
    return evaluate_assertion(document=document, path=path, op=op, value=value).ok


def why(path: str, op: str, value: Any = None, document: Any = PLAN) -> str:
    outcome = evaluate_assertion(document=document, path=path, op=op, value=value)
    assert not outcome.ok, f"expected {path} {op} {value!r} to fail"
    return outcome.message


def base_check(**overrides: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "schema_version": 1,
        "id": "plan_names_tests",
        "type": "assertions",
        "description": "The plan has at least two steps and every step names a test.",
        "artifact": "out/plan.json",
        "assert": [
            {"path": "steps", "op": "lengthAtLeast", "value": 2},
            {"path": "steps[*].test", "op": "exists"},
        ],
    }
    document.update(overrides)
    return document


def errors_of(document: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as info:
        AssertionsCheck.model_validate(document)
    return [(".".join(str(p) for p in e["loc"]), e["msg"]) for e in info.value.errors()]


# ---------------------------------------------------------------- path syntax


@pytest.mark.parametrize(
    ("text", "segments"),
    [
        ("steps", (Key("steps"),)),
        ("a.b.c", (Key("a"), Key("b"), Key("c"))),
        ("steps[1]", (Key("steps"), Index(1))),
        ("steps[*].test", (Key("steps"), Each(), Key("test"))),
        ("[*].name", (Each(), Key("name"))),
        ("[0]", (Index(0),)),
        ("matrix[*][1]", (Key("matrix"), Each(), Index(1))),
        ("a b.c-d", (Key("a b"), Key("c-d"))),
        # Only a first key that is exactly `$` is JSONPath's root.
        ("$schema", (Key("$schema"),)),
        ("a.$", (Key("a"), Key("$"))),
    ],
)
def test_valid_paths_parse_and_render_back(text: str, segments: tuple[object, ...]) -> None:
    assert parse_path(text=text) == segments
    assert render_path(segments=parse_path(text=text)) == text


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("", "the path is empty"),
        ("a..b", "empty segment"),
        (".a", "empty segment"),
        ("a.", "empty segment"),
        ("a.[0]", "empty segment"),
        ("a[0", "unclosed bracket"),
        ("[*", "unclosed bracket"),
        ("a[x]", "index 'x' is not a non-negative integer"),
        ("a[-1]", "index '-1' is not a non-negative integer"),
        ("a[]", "index '' is not a non-negative integer"),
        ("a[1.5]", "index '1.5' is not a non-negative integer"),
        ("a]", "']' without a matching '['"),
        ("a[0]b", "unexpected 'b'"),
        ("$.a", "'$' (JSONPath's root) is not part of an assertion path"),
        ("$[0]", "'$' (JSONPath's root)"),
        ("$", "'$' (JSONPath's root)"),
    ],
)
def test_invalid_paths_are_syntax_errors(text: str, phrase: str) -> None:
    with pytest.raises(PathSyntaxError, match=re.escape(phrase)):
        parse_path(text=text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab.[]*01$", max_size=12))
def test_schema_pattern_accepts_exactly_the_parsable_paths(text: str) -> None:
    try:
        parse_path(text=text)
        parsable = True
    except PathSyntaxError:
        parsable = False
    assert (re.fullmatch(PATH_PATTERN, text) is not None) == parsable


@pytest.mark.parametrize("text", ["out/plan.json", "./a.yaml", "a/../b.json", "deep/x/../y.json"])
def test_artifact_paths_inside_the_root_are_accepted(text: str) -> None:
    assert check_artifact_path(text=text) == text


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("/etc/passwd", "is absolute"),
        ("C:\\plan.json", "is absolute"),
        ("../plan.json", "escapes the project root"),
        ("a/../../plan.json", "escapes the project root"),
        ("", "non-empty"),
        ("a/..", "names the project root"),
    ],
)
def test_artifact_paths_outside_the_root_are_rejected(text: str, phrase: str) -> None:
    with pytest.raises(ArtifactPathError, match=phrase):
        check_artifact_path(text=text)


# ---------------------------------------------------------------- operators


def test_exists_holds_for_present_and_null_values_and_fails_for_missing_keys() -> None:
    assert holds("meta.note", "exists")
    assert holds("title", "exists")
    assert (
        why("meta.missing", "exists")
        == "meta.missing exists: path not found: meta has no key 'missing'"
    )


def test_equals_keeps_json_types_apart() -> None:
    assert holds("meta.count", "equals", 1.0)
    assert holds("meta.ratio", "equals", 1)
    assert holds("meta.ready", "equals", True)
    assert holds("meta.note", "equals", None)
    assert "found the boolean true" in why("meta.ready", "equals", 1)
    assert "found the number 1" in why("meta.count", "equals", True)
    assert "found the number 1" in why("meta.count", "equals", "1")
    # Only the text "1" against the number 1 gets the hint (a CSV cell is always text).
    assert "the expected value is text, not a number" in why("meta.count", "equals", "1")
    assert "the expected value is text" not in why("meta.count", "equals", "2")
    # So do the texts "true" and "null" against JSON's words (a CSV cell "true" is text too).
    assert "the expected value is text, not a boolean" in why("meta.ready", "equals", "true")
    assert "the expected value is text, not null" in why("meta.note", "equals", "null")
    assert "the expected value is text" not in why("meta.ready", "equals", "yes")
    # `value: 1e3` unquoted is the text '1e3' to YAML 1.1: the hint says so, with the number.
    told = why("meta.count", "equals", "1e0")
    assert "the expected value is the text '1e0', not a number" in told
    assert "reads a plain 1e0 in a check file as text, so write 1 there" in told
    assert "the expected value is the text" not in why("meta.count", "equals", "2e0")
    assert "found null" in why("meta.note", "equals", False)
    assert not holds("meta.count", "equals", 0, document={"meta": {"count": False}})


def test_equals_compares_arrays_in_order_and_objects_by_keys() -> None:
    assert holds("matrix", "equals", [[1, 2], [3, 4.0]])
    assert "found an array of 2 elements" in why("matrix", "equals", [[3, 4], [1, 2]])
    assert holds("steps[0]", "equals", {"id": 1, "name": "build"})
    assert not holds("steps[0]", "equals", {"id": 1, "name": "build", "x": None})
    assert not holds("steps[0]", "equals", {"id": True, "name": "build"})
    assert json_equal(left=[1, {"a": [None]}], right=[1.0, {"a": [None]}])
    assert not json_equal(left=[1], right=[True])


def test_contains_on_strings_arrays_and_objects() -> None:
    assert holds("title", "contains", "plan")
    assert "found the string" in why("title", "contains", "Plan!")
    assert holds("matrix[0]", "contains", 2.0)
    assert "none equal to true" in why("matrix[0]", "contains", True, document={"matrix": [[1]]})
    assert holds("meta", "contains", "ready")
    assert 'which has no key "toString"' in why("meta", "contains", "toString")
    assert "needs a string, array or object, found the number 1" in why("meta.count", "contains", 1)
    assert "a string can only contain a string" in why("title", "contains", 1)


def test_matches_searches_unanchored_with_re2() -> None:
    assert holds("title", "matches", "plan")
    assert holds("title", "matches", "^Release")
    assert 'found the string "Release plan"' in why("title", "matches", "^plan")
    assert "matches needs a string, found the number 1" in why("meta.count", "matches", "1")


def test_lengths_count_characters_elements_and_keys() -> None:
    assert holds("meta.label", "lengthAtMost", 3)  # "é-x" is 3 characters, 4 bytes
    assert holds("meta.label", "lengthAtLeast", 3)
    assert "length is 3" in why("meta.label", "lengthAtLeast", 4)
    assert holds("steps", "lengthAtLeast", 2)
    assert "length is 2 (an array of 2 elements)" in why("steps", "lengthAtMost", 1)
    assert holds("meta", "lengthAtLeast", 5)
    assert "length is 5 (an object with 5 keys)" in why("meta", "lengthAtMost", 4)
    assert holds("owners", "lengthAtMost", 0)
    assert "a length needs a string, array or object, found null" in why(
        "meta.note", "lengthAtLeast", 0
    )


def test_operator_registry_is_the_six_operators() -> None:
    assert set(OPERATORS) == {
        "exists",
        "equals",
        "contains",
        "matches",
        "lengthAtLeast",
        "lengthAtMost",
    }


def test_every_operator_has_a_canary_pair_that_behaves() -> None:
    canaries = yaml.safe_load(CANARY_OPS.read_text(encoding="utf-8"))
    assert set(canaries) == set(OPERATORS)
    for op, pair in canaries.items():
        assert set(pair) == {"pass", "fail"}, op
        for expected, case in pair.items():
            assertion = case["assertion"]
            assert assertion["op"] == op
            # The canary must also be a valid definition, or it would test nothing real.
            AssertionsCheck.model_validate(base_check(**{"assert": [assertion]}))
            outcome = evaluate_assertion(
                document=case["document"],
                path=assertion["path"],
                op=op,
                value=assertion.get("value"),
            )
            assert outcome.ok is (expected == "pass"), (op, expected, outcome.message)


# ---------------------------------------------------------------- path forms and fan-out


def test_index_and_wildcard_forms() -> None:
    assert holds("steps[1].test", "equals", "tests/test_release.py")
    assert holds("steps[*].test", "exists")
    assert holds("matrix[*][1]", "equals", 4)
    assert holds("matrix[1][0]", "equals", 3)
    top_level_array = [{"name": "a"}, {"name": "b", "ok": True}]
    assert holds("[*].ok", "equals", True, document=top_level_array)
    assert holds("[0].name", "equals", "a", document=top_level_array)
    assert not holds("[*].ok", "equals", False, document=top_level_array)


def test_nested_wildcards_need_one_matching_combination() -> None:
    document = {"groups": [{"items": [{"v": 1}, {"v": 2}]}, {"items": [{"v": 3}]}]}
    assert holds("groups[*].items[*].v", "equals", 3, document=document)
    message = why("groups[*].items[*].v", "equals", 9, document=document)
    assert message.startswith("groups[*].items[*].v equals 9: none of the 2 elements of groups")
    assert "at groups[0].items[0].v: found the number 1" in message


def test_wildcard_any_element_semantics_and_reason() -> None:
    assert holds("steps[*].name", "equals", "verify")
    message = why("steps[*].missing", "exists")
    assert message == (
        "steps[*].missing exists: none of the 2 elements of steps satisfies it: "
        "path not found: steps[0] has no key 'missing' | "
        "path not found: steps[1] has no key 'missing'"
    )


def test_a_wildcard_over_many_failing_elements_tells_the_first_few_and_counts_the_rest() -> None:
    document = {"items": [{"score": n} for n in range(10)]}
    message = why("items[*].score", "equals", 99, document=document)
    assert message == (
        "items[*].score equals 99: none of the 10 elements of items satisfies it: "
        "at items[0].score: found the number 0 | at items[1].score: found the number 1 | "
        "at items[2].score: found the number 2 | and 7 more"
    )
    # An element past the ones told still makes it hold, at any depth.
    assert holds("items[*].score", "equals", 9, document=document)
    nested = {"groups": [{"items": [{"v": 1}] * 5}] * 5 + [{"items": [{"v": 1}] * 4 + [{"v": 7}]}]}
    assert holds("groups[*].items[*].v", "equals", 7, document=nested)


def test_the_reason_of_a_wildcard_is_written_for_the_told_elements_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Asking an operator why an element fails builds a message; 10,000 failing elements must
    # not cost 10,000 of them when the reason tells three.
    explained: list[object] = []
    equals = OPERATORS["equals"]

    def counted(*, found: Any, value: Any) -> str | None:
        explained.append(found)
        return equals(found=found, value=value)

    monkeypatch.setitem(OPERATORS, "equals", counted)
    document = {"items": [{"score": n % 7} for n in range(10_000)]}
    message = why("items[*].score", "equals", 9, document=document)
    assert len(explained) == 3, f"an explanation was built for {len(explained)} elements"
    assert message.endswith("| and 9997 more")


@pytest.mark.parametrize("op", sorted(OPERATORS))
@settings(max_examples=150, deadline=None)
@given(found=_JSON_VALUES, value=_JSON_VALUES)
def test_each_verdict_holds_exactly_when_its_operator_returns_none(
    op: str, found: Any, value: Any
) -> None:
    if op in ("lengthAtLeast", "lengthAtMost") and not isinstance(value, int):
        value = 2
    if op == "matches" and not isinstance(value, str):
        value = "a+"
    assert VERDICTS[op](found=found, value=value) is (
        OPERATORS[op](found=found, value=value) is None
    )


# ---------------------------------------------------------------- fail closed


@pytest.mark.parametrize(
    ("path", "phrase"),
    [
        ("nope", "path not found: the top level has no key 'nope'"),
        ("title.x", 'path not found: title is the string "Release plan", not an object'),
        ("steps.name", "path not found: steps is an array of 2 elements, not an object"),
        ("meta[0]", "path not found: meta is an object with 5 keys, not an array"),
        ("meta[*]", "meta is an object with 5 keys, not an array, so it has no element [*]"),
        ("steps[2]", "path not found: steps has no element [2] (it is an array of 2 elements)"),
        ("owners[*]", "path not found: owners is an empty array"),
        ("ghosts[*].name", "path not found: the top level has no key 'ghosts'"),
        ("meta.note.x", "path not found: meta.note is null, not an object"),
        ("[*]", "the top level is an object with 5 keys, not an array"),
    ],
)
def test_resolution_fails_closed_and_names_the_path(path: str, phrase: str) -> None:
    for op, value in (("exists", None), ("equals", None), ("lengthAtMost", 10**6)):
        message = why(path, op, value)
        assert message.startswith(f"{path} {op}"), message
        assert phrase in message


@pytest.mark.parametrize("key", ["__class__", "keys", "constructor", "toString", "__dict__"])
def test_only_own_keys_resolve(key: str) -> None:
    assert f"has no key '{key}'" in why(f"meta.{key}", "exists")


def test_wildcard_on_a_scalar_list_element_fails_closed() -> None:
    assert not holds("matrix[*].x", "exists")
    assert not holds("title[*]", "exists")


def test_all_failures_are_reported_not_just_the_first() -> None:
    outcomes = evaluate_all(
        document=PLAN,
        assertions=[
            AssertionsCheck.model_validate(base_check()).assertions[0],
            *AssertionsCheck.model_validate(
                base_check(
                    **{
                        "assert": [
                            {"path": "title", "op": "equals", "value": "x"},
                            {"path": "meta.count", "op": "lengthAtLeast", "value": 1},
                        ]
                    }
                )
            ).assertions,
        ],
    )
    assert [outcome.ok for outcome in outcomes] == [True, False, False]
    reason = summarize(outcomes=outcomes)
    assert reason.startswith("2 of 3 assertions failed: ")
    assert 'title equals "x": found the string "Release plan"' in reason
    assert "meta.count lengthAtLeast 1: a length needs" in reason


# ---------------------------------------------------------------- regular expressions


def test_catastrophic_backtracking_pattern_just_fails() -> None:
    # (a+)+$ hangs a backtracking engine on this input; RE2 is linear, so this simply fails.
    text = "a" * 50_000 + "!"
    assert not holds("s", "matches", "(a+)+$", document={"s": text})
    assert holds("s", "matches", "(a+)+!$", document={"s": text})


def test_input_over_the_limit_is_not_evaluated() -> None:
    at_limit = "a" * MAX_MATCH_INPUT_BYTES
    assert holds("s", "matches", "a$", document={"s": at_limit})
    message = why("s", "matches", "a", document={"s": at_limit + "a"})
    assert f"{MAX_MATCH_INPUT_BYTES + 1} bytes long" in message
    # The limit counts UTF-8 bytes: 40,000 two-byte characters are 80,000 bytes (under it) ...
    assert holds("s", "matches", "é$", document={"s": "é" * 40_000})
    # ... and 60,000 of them are 120,000 bytes (over it).
    assert "120000 bytes long" in why("s", "matches", "é", document={"s": "é" * 60_000})


def test_an_input_over_the_limit_fails_as_not_evaluated() -> None:
    over = "a" * (MAX_MATCH_INPUT_BYTES + 1)
    outcome = evaluate_assertion(document={"s": over}, path="s", op="matches", value="a")
    assert (outcome.ok, outcome.evaluated) == (False, False)
    assert outcome.as_dict()["evaluated"] is False
    # A failure on what the artifact holds is evaluated, and its record stays as it was.
    plain = evaluate_assertion(document={"s": "b"}, path="s", op="matches", value="a")
    assert (plain.ok, plain.evaluated) == (False, True)
    assert "evaluated" not in plain.as_dict()


def test_under_any_element_one_not_evaluated_is_decided_by_the_others() -> None:
    over = "a" * (MAX_MATCH_INPUT_BYTES + 1)
    # Another element holds: the assertion holds, whatever the long one says.
    held = evaluate_assertion(document={"s": [over, "a"]}, path="s[*]", op="matches", value="a")
    assert held.ok
    # None holds: the long one might have, so the failure is not an evaluated one.
    failed = evaluate_assertion(document={"s": ["b", over]}, path="s[*]", op="matches", value="a")
    assert (failed.ok, failed.evaluated) == (False, False)
    # Past the elements a reason tells, the one not evaluated is still said.
    many = ["b"] * 5 + [over]
    untold = evaluate_assertion(document={"s": many}, path="s[*]", op="matches", value="a")
    assert (untold.ok, untold.evaluated) == (False, False)
    assert untold.message.endswith(
        f"and 3 more (one of those could not be evaluated: the string is "
        f"{MAX_MATCH_INPUT_BYTES + 1} bytes long; matches reads at most "
        f"{MAX_MATCH_INPUT_BYTES} bytes, so it was not evaluated)"
    )


def test_a_string_with_a_lone_surrogate_fails_closed() -> None:
    document = json.loads('{"s": "a\\ud800b"}')
    assert "not valid Unicode" in why("s", "matches", "a", document=document)


# ---------------------------------------------------------------- artifacts


def test_json_artifact_is_loaded(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "plan.json").write_text(json.dumps(PLAN), encoding="utf-8")
    loaded = load_artifact(project_root=tmp_path, artifact="out/plan.json")
    assert loaded.problem is None and loaded.format == "json"
    assert loaded.document == PLAN


def test_yaml_artifact_is_read_as_json_data(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text(
        "title: Release plan\n"
        "when: 2024-05-01\n"
        "base: &base {owner: ann}\n"
        "steps:\n"
        "  - <<: *base\n"
        "    owner: bob\n"
        "    name: build\n"
        "  - {name: verify, test: t.py}\n",
        encoding="utf-8",
    )
    loaded = load_artifact(project_root=tmp_path, artifact="plan.yaml")
    assert loaded.problem is None and loaded.format == "yaml"
    # Timestamps stay strings, as they would be in JSON.
    assert holds("when", "equals", "2024-05-01", document=loaded.document)
    assert holds("steps[*].test", "exists", document=loaded.document)
    # A key overriding a merged one is not a repeat.
    assert holds("steps[0].owner", "equals", "bob", document=loaded.document)


def test_json_content_is_read_as_json_even_in_a_yaml_file(tmp_path: Path) -> None:
    (tmp_path / "plan.yml").write_text('{"n": 1e5}', encoding="utf-8")
    loaded = load_artifact(project_root=tmp_path, artifact="plan.yml")
    assert loaded.format == "json"
    assert holds("n", "equals", 100000, document=loaded.document)


@pytest.mark.parametrize(
    ("name", "data", "phrase"),
    [
        ("plan.json", b'{"steps": [', "is not valid JSON"),
        ("plan.json", b"steps: [a]", "is not valid JSON"),
        ("plan.txt", b"steps: [a]", "is not valid JSON"),
        ("plan.yaml", b"steps: [a\n", "is not valid YAML"),
        ("plan.yaml", b"a: 1\na: 2\n", "duplicate key 'a'"),
        ("plan.json", b'{"a": 1, "a": 2}', "duplicate key 'a'"),
        ("plan.json", b'{"a": NaN}', "is unusable: a holds NaN"),
        ("plan.yaml", b"---\na: 1\n---\nb: 2\n", "is not valid YAML"),
        ("plan.json", b"", "is empty"),
        ("plan.yaml", b"  \n", "is empty"),
        ("plan.json", b'{"a": "\xff"}', "is not UTF-8 text"),
        ("plan.json", '{"a": 1}'.encode("utf-32"), "is UTF-32 text, not UTF-8"),
        ("plan.json", b"[" * 100_000 + b"]" * 100_000, "is nested deeper than 200 levels"),
    ],
)
def test_unusable_artifacts_name_the_artifact(
    tmp_path: Path, name: str, data: bytes, phrase: str
) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / name).write_bytes(data)
    loaded = load_artifact(project_root=tmp_path, artifact=f"out/{name}")
    assert loaded.problem is not None
    assert loaded.problem.startswith(f"artifact out/{name} ")
    assert phrase in loaded.problem


def test_missing_directory_fifo_and_oversized_artifacts(tmp_path: Path) -> None:
    assert load_artifact(project_root=tmp_path, artifact="out/plan.json").problem == (
        "artifact out/plan.json does not exist"
    )
    (tmp_path / "dir.json").mkdir()
    assert "is a directory" in str(
        load_artifact(project_root=tmp_path, artifact="dir.json").problem
    )
    os.mkfifo(tmp_path / "pipe.json")
    # Opening a FIFO for reading would block; it must be refused without opening it.
    assert "not a regular file" in str(
        load_artifact(project_root=tmp_path, artifact="pipe.json").problem
    )
    (tmp_path / "big.json").write_text(json.dumps(["x" * 100]), encoding="utf-8")
    loaded = load_artifact(project_root=tmp_path, artifact="big.json", max_bytes=50)
    assert loaded.problem == "artifact big.json is larger than 50 bytes"


def test_symlink_leaving_the_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    outside = tmp_path / "secret.json"
    outside.write_text('{"a": 1}', encoding="utf-8")
    (root / "plan.json").symlink_to(outside)
    loaded = load_artifact(project_root=root, artifact="plan.json")
    assert loaded.problem == "artifact plan.json resolves outside the project root"


def test_unusable_artifact_fails_every_assertion_with_its_reason() -> None:
    check = AssertionsCheck.model_validate(base_check())
    outcomes = fail_all(
        assertions=check.assertions, problem="artifact out/plan.json does not exist"
    )
    assert [outcome.ok for outcome in outcomes] == [False, False]
    assert [outcome.message for outcome in outcomes] == [
        "steps lengthAtLeast 2: artifact out/plan.json does not exist",
        "steps[*].test exists: artifact out/plan.json does not exist",
    ]


def test_yaml_alias_chains_do_not_explode(tmp_path: Path) -> None:
    # Each level lists the previous one ten times: 10**12 paths, a few hundred nodes.
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 13):
        lines.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 10) + "]")
    (tmp_path / "bomb.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    loaded = load_artifact(project_root=tmp_path, artifact="bomb.yaml")
    assert loaded.problem is None
    path = "l12" + "[*]" * 13
    assert holds(path, "equals", "x", document=loaded.document)
    assert not holds(path, "equals", "y", document=loaded.document)
    assert not holds(path + ".k", "exists", document=loaded.document)


def test_a_reason_over_nested_wildcards_stays_short_however_deep(tmp_path: Path) -> None:
    # Each level lists the one below nine times: a reason telling three elements in full at
    # every level would hold 3**12 of them (hundreds of megabytes in every report).
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, 12):
        lines.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 9) + "]")
    (tmp_path / "plan.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    loaded = load_artifact(project_root=tmp_path, artifact="plan.yaml")
    message = why("l11" + "[*]" * 12, "equals", "ok", document=loaded.document)
    assert len(message) < 4000, f"a reason of {len(message)} characters"
    # The first element is told down to a value, each at its own place; the others are named.
    deepest = "l11" + "[0]" * 11
    assert f'at {deepest}[0]: found the string "lol" | at {deepest}[1]:' in message
    assert "none of the 9 elements of l11[1] satisfies it | " in message
    assert message.endswith("none of the 9 elements of l11[2] satisfies it | and 6 more")


def test_a_reason_over_two_wildcards_tells_which_element_fails_and_why() -> None:
    document = {"groups": [{"items": [{"v": 1}, {"v": 2}]}, {"items": [{"v": 3}]}, {"items": []}]}
    assert why("groups[*].items[*].v", "equals", 9, document=document) == (
        "groups[*].items[*].v equals 9: none of the 3 elements of groups satisfies it: "
        "(none of the 2 elements of groups[0].items satisfies it: "
        "at groups[0].items[0].v: found the number 1 | at groups[0].items[1].v: found the number 2)"
        " | the only element of groups[1].items does not satisfy it: "
        "at groups[1].items[0].v: found the number 3"
        " | path not found: groups[2].items is an empty array, so no element can satisfy [*]"
    )


@pytest.mark.parametrize(("levels", "too_deep"), [(200, False), (201, True)])
def test_yaml_aliases_count_the_levels_they_nest(
    tmp_path: Path, levels: int, too_deep: bool
) -> None:
    # Each alias is one line, and the value it names one level deeper than the last.
    lines = ["l1: &l1 [x]"]
    lines += [f"l{level}: &l{level} [*l{level - 1}]" for level in range(2, levels)]
    (tmp_path / "deep.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    loaded = load_artifact(project_root=tmp_path, artifact="deep.yaml")
    if too_deep:
        assert loaded.problem == (
            "artifact deep.yaml is nested deeper than 200 levels, the most eb reads in a JSON or "
            "YAML file"
        )
    else:
        assert loaded.problem is None
        assert holds(
            f"l{levels - 1}" + "[0]" * (levels - 1), "equals", "x", document=loaded.document
        )


def test_self_referencing_yaml_terminates(tmp_path: Path) -> None:
    (tmp_path / "loop.yaml").write_text("a: &a [1, *a]\n", encoding="utf-8")
    loaded = load_artifact(project_root=tmp_path, artifact="loop.yaml")
    assert loaded.problem is None
    assert not holds("a", "equals", [1, [1, [1]]], document=loaded.document)
    assert holds("a[1][1][1][0]", "equals", 1, document=loaded.document)
    assert holds("a[*][*][*]", "contains", 1, document=loaded.document)


# ---------------------------------------------------------------- the check model


def test_valid_check_round_trips_with_the_assert_key() -> None:
    check = AssertionsCheck.model_validate(base_check())
    dumped = check.model_dump(mode="json", by_alias=True)
    assert "assert" in dumped and "assertions" not in dumped
    assert dumped["assert"] == [
        {"path": "steps", "op": "lengthAtLeast", "value": 2},
        {"path": "steps[*].test", "op": "exists"},
    ]
    assert AssertionsCheck.model_validate(dumped) == check


def test_check_file_yaml_is_accepted_as_written() -> None:
    text = (
        "schema_version: 1\n"
        "id: plan_names_tests\n"
        "type: assertions\n"
        "description: The plan has at least two steps and every step names a test.\n"
        "artifact: out/plan.json\n"
        "assert:\n"
        "  - {path: steps, op: lengthAtLeast, value: 2}\n"
        '  - {path: "steps[*].test", op: exists}\n'
    )
    check = AssertionsCheck.model_validate(yaml.safe_load(text))
    assert [assertion.op for assertion in check.assertions] == ["lengthAtLeast", "exists"]


def test_assertions_key_is_an_unknown_field() -> None:
    document = base_check()
    document["assertions"] = document.pop("assert")
    assert errors_of(document) == [
        ("assert", "Field required"),
        ("assertions", "Extra inputs are not permitted"),
    ]


@pytest.mark.parametrize(
    ("assertions", "location", "phrase"),
    [
        ([], "assert", "at least one assertion"),
        ([{"path": "a..b", "op": "exists"}], "assert.0.exists.path", "empty segment"),
        ([{"path": "a[", "op": "exists"}], "assert.0.exists.path", "unclosed bracket"),
        ([{"path": "a[x]", "op": "exists"}], "assert.0.exists.path", "index 'x'"),
        ([{"path": "a", "op": "exists", "value": 1}], "assert.0.exists.value", "Extra inputs"),
        ([{"path": "a", "op": "equals"}], "assert.0.equals.value", "Field required"),
        ([{"path": "a", "op": "nope"}], "assert.0", "Input tag 'nope' found using 'op'"),
        ([{"path": "a"}], "assert.0", "Unable to extract tag using discriminator 'op'"),
        ([{"op": "exists"}], "assert.0.exists.path", "Field required"),
        ([{"path": "a", "op": "exists", "x": 1}], "assert.0.exists.x", "Extra inputs"),
        (
            [{"path": "a", "op": "equals", "value": datetime.date(2024, 5, 1)}],
            "assert.0.equals.value",
            "not a valid JSON value",
        ),
        (
            [{"path": "a", "op": "lengthAtLeast", "value": -1}],
            "assert.0.lengthAtLeast.value",
            "greater than or equal to 0",
        ),
        (
            [{"path": "a", "op": "lengthAtMost", "value": True}],
            "assert.0.lengthAtMost.value",
            "valid integer",
        ),
        (
            [{"path": "a", "op": "lengthAtMost", "value": 2.0}],
            "assert.0.lengthAtMost.value",
            "valid integer",
        ),
        (
            [{"path": "a", "op": "lengthAtLeast"}],
            "assert.0.lengthAtLeast.value",
            "Field required",
        ),
        ([{"path": "a", "op": "matches", "value": 1}], "assert.0.matches.value", "valid string"),
        (
            [{"path": "a", "op": "matches", "value": "a" * 201}],
            "assert.0.matches.value",
            "pattern is 201 characters long; the limit is 200",
        ),
        (
            [{"path": "a", "op": "matches", "value": "(?=a)b"}],
            "assert.0.matches.value",
            "pattern is not supported by RE2",
        ),
        (
            [{"path": "a", "op": "matches", "value": r"(a)\1"}],
            "assert.0.matches.value",
            "pattern is not supported by RE2",
        ),
        (
            [{"path": "a", "op": "equals", "value": {1: "x"}}],
            "assert.0.equals.value.dict.1.[key]",
            "valid string",
        ),
    ],
)
def test_definition_errors(assertions: list[Any], location: str, phrase: str) -> None:
    found = errors_of(base_check(**{"assert": assertions}))
    assert any(loc == location and phrase in msg for loc, msg in found), found


def test_pattern_of_exactly_200_characters_is_accepted() -> None:
    check = AssertionsCheck.model_validate(
        base_check(**{"assert": [{"path": "a", "op": "matches", "value": "a" * 200}]})
    )
    assert check.assertions[0].op == "matches"


@pytest.mark.parametrize("artifact", ["../plan.json", "/tmp/plan.json", "out/../../plan.json"])
def test_artifact_escaping_the_root_is_a_definition_error(artifact: str) -> None:
    found = errors_of(base_check(artifact=artifact))
    assert found[0][0] == "artifact"
    assert "absolute" in found[0][1] or "escapes the project root" in found[0][1]


def test_equals_accepts_a_null_value_and_contains_any_json_value() -> None:
    check = AssertionsCheck.model_validate(
        base_check(
            **{
                "assert": [
                    {"path": "a", "op": "equals", "value": None},
                    {"path": "a", "op": "contains", "value": {"k": [1, "x"]}},
                ]
            }
        )
    )
    dumped = check.model_dump(mode="json", by_alias=True)["assert"]
    assert dumped[0] == {"path": "a", "op": "equals", "value": None}


def test_model_works_inside_a_type_discriminated_union() -> None:
    # The shape the lead's CHECK_ADAPTER takes once `assertions` is added to it.
    adapter: TypeAdapter[DeterministicCheck | AssertionsCheck] = TypeAdapter(
        Annotated[DeterministicCheck | AssertionsCheck, Field(discriminator="type")]
    )
    check = adapter.validate_python(base_check())
    assert isinstance(check, AssertionsCheck)
    with pytest.raises(ValidationError) as info:
        adapter.validate_python(base_check(**{"assert": [{"path": ".", "op": "exists"}]}))
    assert info.value.errors()[0]["loc"] == ("assertions", "assert", 0, "exists", "path")


def test_json_schema_describes_each_operator() -> None:
    schema = AssertionsCheck.model_json_schema()
    properties = schema["properties"]
    assert "assert" in properties and "assertions" not in properties
    assert "assert" in schema["required"] and "artifact" in schema["required"]
    assert properties["assert"]["minItems"] == 1
    items = properties["assert"]["items"]
    assert items["discriminator"]["propertyName"] == "op"
    by_op = {
        op: schema["$defs"][ref.rsplit("/", 1)[-1]]
        for op, ref in items["discriminator"]["mapping"].items()
    }
    assert set(by_op) == set(OPERATORS)
    assert "value" not in by_op["exists"]["properties"]
    for op in ("lengthAtLeast", "lengthAtMost"):
        number, placeholder = by_op[op]["properties"]["value"]["anyOf"]
        assert number == {"type": "integer", "minimum": 0}
        assert placeholder["type"] == "string" and "case" in placeholder["pattern"]
        assert "value" in by_op[op]["required"]
    assert by_op["matches"]["properties"]["value"]["type"] == "string"
    assert by_op["matches"]["properties"]["value"]["maxLength"] == 200
    for op, definition in by_op.items():
        assert definition["additionalProperties"] is False, op
        assert definition["properties"]["path"]["pattern"] == EDITOR_PATH_PATTERN, op


@pytest.mark.parametrize(
    "artifact", ["out/plan.json", "/abs.json", "\\abs.json", "C:plan.json", "  ", "", "a b.json"]
)
def test_schema_artifact_pattern_never_rejects_a_valid_artifact(artifact: str) -> None:
    # The editor pattern may be looser than validation (it cannot see `..` escapes), never stricter.
    try:
        check_artifact_path(text=artifact)
        valid = True
    except ArtifactPathError:
        valid = False
    matches_pattern = re.search(ARTIFACT_PATTERN, artifact) is not None
    assert matches_pattern == valid
