"""The exact reasons an `assertions` check gives, and the artifact edge cases behind them.

A failed assertion's message is the check's `reason`, the only thing a user reads to learn
what was wrong, so the texts are pinned here (bounded previews, types, locations), along with
the outcome fields every report copies.
"""

from __future__ import annotations

import datetime
import gc
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eval_banana.assertions.evaluate import (
    AssertionOutcome,
    evaluate_assertion,
    fail_all,
    load_artifact,
    summarize,
)
from eval_banana.assertions.operators import (
    ExpectedFrom,
    NotEvaluated,
    describe,
    first_difference,
    json_equal,
    json_kind,
    op_contains,
    op_equals,
    op_length_at_least,
    op_length_at_most,
    op_matches,
    operand_text,
)
from eval_banana.cli import _tune_collector
from eval_banana.models.assertions import EqualsAssertion, ExistsAssertion

DAY = datetime.date(2026, 11, 30)


# --- describing values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "null"),
        (True, "the boolean true"),
        (False, "the boolean false"),
        (1.5, "the number 1.5"),
        (float("nan"), "the number nan"),
        (float("-inf"), "the number -inf"),
        (10**59, "the number 1" + "0" * 59),  # 60 characters: shown whole
        (10**60, "the number 1" + "0" * 59 + "…"),  # 61: cut to 60
        (10**400, "the number 1" + "0" * 59 + "…"),  # beyond any float: still an int
        ("é" * 60, 'the string "' + "é" * 60 + '"'),  # 60 characters: whole, not escaped
        ("é" * 61, 'the string "' + "é" * 60 + '…" (61 characters)'),
        ([1, 2], "an array of 2 elements"),
        ({"a": 1}, "an object with 1 key"),
        (DAY, "a non-JSON value (date)"),
    ],
)
def test_describe(value: Any, text: str) -> None:
    assert describe(value=value) == text


def test_json_kind_names_what_json_cannot_hold() -> None:
    assert json_kind(value=DAY) == "non-JSON value (date)"
    assert json_kind(value=(1,)) == "non-JSON value (tuple)"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("é", '"é"'),
        (float("nan"), "NaN"),  # YAML's .nan in a check file is shown, not refused
        (DAY, "a non-JSON value (date)"),
        ("x" * 58, '"' + "x" * 58 + '"'),  # 60 characters with the quotes: whole
        ("x" * 59, '"' + "x" * 59 + "…"),  # 61: cut to 60
    ],
)
def test_operand_text(value: Any, text: str) -> None:
    assert operand_text(value=value) == text


def test_values_json_cannot_hold_are_never_equal() -> None:
    assert not json_equal(left=DAY, right=DAY)
    assert json_equal(left=[1, {"a": [2]}], right=[1.0, {"a": [2]}])


# --- operator messages --------------------------------------------------------------------------


def test_contains_messages() -> None:
    assert op_contains(found="abc", value=1) == (
        'found the string "abc"; a string can only contain a string'
    )
    assert op_contains(found=[1], value=2) == "found an array of 1 element, none equal to 2"
    assert op_contains(found={"a": 1}, value=1) == (
        "found an object with 1 key; object keys are strings"
    )
    assert op_contains(found={"a": 1}, value="b") == (
        'found an object with 1 key, which has no key "b"'
    )


def test_length_messages_name_the_type_found() -> None:
    for operator in (op_length_at_least, op_length_at_most):
        assert operator(found=3, value=1) == (
            "a length needs a string, array or object, found the number 3"
        )


def test_matches_messages_for_bad_patterns_and_strings() -> None:
    # Validation refuses such a pattern first; a hand-edited plan still fails with the reason,
    # as one that was not evaluated: it says nothing of the value found.
    with pytest.raises(NotEvaluated) as bad_pattern:
        op_matches(found="x", value="(")
    assert str(bad_pattern.value) == "pattern is not supported by RE2: missing ): ("
    with pytest.raises(NotEvaluated) as surrogate:
        op_matches(found="a\ud800b", value="a")
    assert str(surrogate.value) == "the string holds characters that are not valid Unicode"


# --- evaluating one assertion -------------------------------------------------------------------


def test_unknown_operator_and_bad_path_fail_with_the_whole_outcome() -> None:
    assert evaluate_assertion(document={}, path="a", op="nope") == AssertionOutcome(
        path="a", op="nope", ok=False, message="a nope: unknown operator", evaluated=False
    )
    outcome = evaluate_assertion(document={}, path="a..b", op="exists")
    assert (outcome.path, outcome.op, outcome.ok, outcome.evaluated) == (
        "a..b",
        "exists",
        False,
        False,
    )
    assert outcome.message.startswith("a..b exists: ") and "empty" in outcome.message


def test_a_failed_outcome_keeps_path_and_op() -> None:
    outcome = evaluate_assertion(document={"a": 1}, path="a", op="equals", value=2)
    assert outcome == AssertionOutcome(
        path="a", op="equals", ok=False, message="a equals 2: found the number 1"
    )


def test_an_index_on_something_else_names_the_index() -> None:
    outcome = evaluate_assertion(document={"a": 1}, path="a[0]", op="exists")
    assert outcome.message == (
        "a[0] exists: path not found: a is the number 1, not an array, so it has no element [0]"
    )


def test_data_nested_deeper_than_the_interpreter_can_walk() -> None:
    # The longest path allowed (1000 characters) has 500 keys: two frames each is past the
    # interpreter's default limit of 1000 frames.
    depth = 500
    document: Any = 1
    for _ in range(depth):
        document = {"a": document}
    path = ".".join(["a"] * depth)
    outcome = evaluate_assertion(document=document, path=path, op="exists")
    assert not outcome.ok and outcome.op == "exists" and outcome.path == path
    assert outcome.message.endswith(": the data is nested too deeply to evaluate")
    assert not outcome.evaluated


def test_fail_all_keeps_each_assertion_s_path_and_op() -> None:
    assertions = [
        ExistsAssertion(path="a", op="exists"),
        EqualsAssertion(path="b", op="equals", value=1),
    ]
    assert fail_all(assertions=assertions, problem="artifact x does not exist") == [
        AssertionOutcome(
            path="a",
            op="exists",
            ok=False,
            message="a exists: artifact x does not exist",
            evaluated=False,
        ),
        AssertionOutcome(
            path="b",
            op="equals",
            ok=False,
            message="b equals 1: artifact x does not exist",
            evaluated=False,
        ),
    ]


def test_summaries() -> None:
    holds = AssertionOutcome(path="a", op="exists", ok=True, message="a exists: holds")
    assert summarize(outcomes=[]) == "no assertions to evaluate"
    assert summarize(outcomes=[holds]) == "1 assertion holds"
    assert summarize(outcomes=[holds, holds]) == "all 2 assertions hold"
    assert summarize(outcomes=[holds, holds, holds]) == "all 3 assertions hold"


# --- loading the artifact -----------------------------------------------------------------------


def problem_of(root: Path, artifact: str, **kwargs: Any) -> str | None:
    loaded = load_artifact(project_root=root, artifact=artifact, **kwargs)
    assert loaded.relative_path == artifact
    return loaded.problem


def test_artifacts_that_are_not_regular_files(tmp_path: Path) -> None:
    (tmp_path / "folder.json").mkdir()
    assert problem_of(tmp_path, "folder.json") == "artifact folder.json is a directory, not a file"
    os.mkfifo(tmp_path / "pipe.json")
    assert problem_of(tmp_path, "pipe.json") == "artifact pipe.json is not a regular file"
    (tmp_path / "file.json").write_text("{}")
    assert problem_of(tmp_path, "file.json/inner.json") == (
        "artifact file.json/inner.json cannot be read: Not a directory"
    )


def test_artifact_size_limit_is_inclusive(tmp_path: Path) -> None:
    (tmp_path / "ten.json").write_text('"12345678"')  # exactly 10 bytes
    assert problem_of(tmp_path, "ten.json", max_bytes=10) is None
    assert problem_of(tmp_path, "ten.json", max_bytes=9) == (
        "artifact ten.json is larger than 9 bytes"
    )


def test_empty_artifact_and_outside_paths(tmp_path: Path) -> None:
    (tmp_path / "blank.json").write_text("  \n")
    assert problem_of(tmp_path, "blank.json") == "artifact blank.json is empty"
    outside = tmp_path.parent / "outside.json"
    outside.write_text("{}")
    (tmp_path / "link.json").symlink_to(outside)
    assert problem_of(tmp_path, "link.json") == (
        "artifact link.json resolves outside the project root"
    )


def test_a_parsed_artifact_keeps_its_relative_path(tmp_path: Path) -> None:
    (tmp_path / "ok.json").write_text(json.dumps({"a": 1}))
    loaded = load_artifact(project_root=tmp_path, artifact="ok.json")
    assert (loaded.relative_path, loaded.document, loaded.format) == ("ok.json", {"a": 1}, "json")


def test_repeated_yaml_keys_are_found_after_merges_and_complex_keys(tmp_path: Path) -> None:
    after_merge = "base: &b {a: 1}\nx:\n  <<: *b\n  c: 1\n  c: 2\n"
    (tmp_path / "merge.yaml").write_text(after_merge)
    problem = problem_of(tmp_path, "merge.yaml")
    assert problem is not None and "duplicate key 'c'" in problem
    assert "line 5" in problem  # where the repeat is, so it can be fixed
    after_complex = "? [a]\n: 1\nb: 1\nb: 2\n"
    (tmp_path / "complex.yaml").write_text(after_complex)
    problem = problem_of(tmp_path, "complex.yaml")
    assert problem is not None and "duplicate key 'b'" in problem


def test_long_parse_errors_are_cut_to_300_characters(tmp_path: Path) -> None:
    key = "k" * 400
    (tmp_path / "long.yaml").write_text(f"{key}: 1\n{key}: 2\n")
    problem = problem_of(tmp_path, "long.yaml")
    prefix = "artifact long.yaml is not valid YAML: "
    assert problem is not None and problem.startswith(prefix)
    assert len(problem) - len(prefix) == 300


def test_a_yaml_artifact_that_does_not_parse_is_told_at_its_line(tmp_path: Path) -> None:
    # PyYAML's own text placed it at `"<unicode string>", line 1`: where its block opened.
    (tmp_path / "plan.yaml").write_text("- step: a\n  done: true\n- step: b\n done: false\n")
    problem = problem_of(tmp_path, "plan.yaml")
    assert problem == (
        "artifact plan.yaml is not valid YAML: line 4, column 2: did not find expected '-' "
        "indicator (while parsing a block collection at line 1, column 1)"
    )


@pytest.mark.parametrize(
    ("found", "value", "told"),
    [
        ([1, 2], [1, 2, 3], "found an array of 2 elements, not 3 elements"),
        (
            [1, [2]],
            [1, [3]],
            "found an array of 2 elements, whose element [1][0] is the number 2, not 3",
        ),
        ({"a": 1, "b": 2}, {"a": 1}, 'found an object with 2 keys, with the key "b" not expected'),
        (
            {"a": True},
            {"a": 1},
            "found an object with 1 key, whose a is the boolean true, not 1",
        ),
        ({1: "ok"}, {"1": "ok"}, 'found an object with 1 key, without the key "1"'),
        # Deeper down, the path to the first difference and both values there.
        (
            {"a": {"b": [1, 2, {"c": "y"}]}},
            {"a": {"b": [1, 2, {"c": "x"}]}},
            'found an object with 1 key, whose a.b[2].c is the string "y", not "x"',
        ),
        (
            [{"id": 1, "tags": ["x"]}, {"id": 2, "tags": ["x", "y"]}],
            [{"id": 1, "tags": ["x"]}, {"id": 2, "tags": ["x"]}],
            "found an array of 2 elements, whose element [1].tags is an array of 2 elements, "
            "not 1 element",
        ),
        (
            {"a": {"b": 1}},
            {"a": {"b": 1, "c": 2}},
            'found an object with 1 key, whose a has no key "c"',
        ),
        (
            {"a": [{"b": 1, "d": 2}]},
            {"a": [{"b": 1}]},
            'found an object with 1 key, whose a[0] has the key "d", not expected',
        ),
        # Keys the path syntax cannot write are written as JSON writes them, in brackets.
        (
            {"x.y": {"": 1}},
            {"x.y": {"": 2}},
            'found an object with 1 key, whose ["x.y"][""] is the number 1, not 2',
        ),
        # Text that prints alike is told apart there too.
        (
            {"a": ["ok\u200b"]},
            {"a": ["ok"]},
            'found an object with 1 key, whose a[0] is the string "ok\\u200b", not "ok" (they '
            "print alike: invisible characters, combining marks and non-ASCII spaces are "
            "escaped)",
        ),
    ],
)
def test_equals_names_where_arrays_and_objects_first_differ(
    found: Any, value: Any, told: str
) -> None:
    outcome = evaluate_assertion(document={"v": found}, path="v", op="equals", value=value)
    assert outcome.message.endswith(f": {told}"), outcome.message


@pytest.fixture
def collector_as_eb_runs() -> Iterator[None]:
    """Python's cyclic collector tuned as eb tunes it when it runs as a program
    (`cli._tune_collector`: what exists so far frozen, young collections every 50,000
    objects), for a test that compares values hundreds of thousands of objects deep: at
    Python's defaults the collector walks them again and again, half of that test's time."""
    threshold = gc.get_threshold()
    _tune_collector()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


@pytest.mark.usefixtures("collector_as_eb_runs")
def test_equals_tells_a_deep_or_huge_difference_in_a_bounded_reason() -> None:
    # 200,000 levels of nesting: no recursion, and the path is cut in its middle.
    found: Any = "end"
    value: Any = "END"
    for _ in range(100_000):
        found, value = {"k": [found]}, {"k": [value]}
    difference = first_difference(found=found, value=value)
    assert difference is not None and len(difference.trail) == 200_000
    outcome = evaluate_assertion(document={"v": found}, path="v", op="equals", value={"k": []})
    assert outcome.message.endswith(
        "found an object with 1 key, whose k is an array of 1 element, not 0 elements"
    )
    told = op_equals(found=found, value=value)
    assert told == (
        "found an object with 1 key, whose k[0].k[0]….k[0].k[0].k[0].k[0] (200000 levels "
        'down) is the string "end", not "END"'
    )
    # A huge string and a long key deep in a large artifact: both are cut short.
    key = "k" * 5_000
    told = op_equals(found={key: ["x" * 10**6]}, value={key: ["y" * 10**6]})
    assert told is not None and len(told) < 400, told
    assert told.startswith(f"found an object with 1 key, whose {'k' * 40}…[0] is the string")


def test_contains_tells_how_the_nearest_element_differs_from_an_array_or_object() -> None:
    steps = [{"id": 1, "needs": []}, {"id": 2, "needs": [1, 3]}, "done"]
    assert op_contains(found=steps, value={"id": 2, "needs": [1]}) == (
        'found an array of 3 elements, none equal to {"id": 2, "needs": [1]}: its nearest '
        "object, element [1], is an object with 2 keys, whose needs is an array of 2 elements, "
        "not 1 element"
    )
    # No element of the value's type: nothing nearer to tell.
    assert op_contains(found=["a", 1], value=[1]) == (
        "found an array of 2 elements, none equal to [1]"
    )


def test_a_plain_yaml_word_is_told_where_the_check_file_writes_it_and_only_there() -> None:
    quote_no = (
        "; the expected value is the boolean false, not text: YAML 1.1, which eb's reader "
        'follows, reads a plain NO in a check file as false, so quote it there ("NO") to expect '
        "the text"
    )
    written = ExpectedFrom(format="check file", plain_words={"": "NO"})
    for found in ("NO", "No", "n", "Norway"):
        told = op_equals(found=found, value=False, expected_from=written)
        assert told == f"found {describe(value=found)}{quote_no}"
    assert op_contains(found="Norway", value=False, expected_from=written) == (
        f'found the string "Norway"; a string can only contain a string{quote_no}'
    )
    assert op_contains(found={"NO": 1}, value=False, expected_from=written) == (
        f"found an object with 1 key; object keys are strings{quote_no}"
    )
    # Nothing of text to tell it against, or `false` written as meant: no hint.
    assert op_equals(found=0, value=False, expected_from=written) == "found the number 0"
    assert op_contains(found=[1, 2], value=False, expected_from=written) == (
        "found an array of 2 elements, none equal to false"
    )
    as_meant = ExpectedFrom(format="check file", plain_words={})
    assert op_equals(found="no", value=False, expected_from=as_meant) == 'found the string "no"'
    # Deeper in the value: told at its own place.
    nested = ExpectedFrom(format="check file", plain_words={"a[1]": "NO"})
    assert op_equals(
        found={"a": [True, "No"]}, value={"a": [True, False]}, expected_from=nested
    ) == (f'found an object with 1 key, whose a[1] is the string "No", not false{quote_no}')
