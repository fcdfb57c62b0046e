"""The selection expression language (`-k`, `--tag`) and `--check-id` globs, as pure functions."""

from __future__ import annotations

import itertools
from fnmatch import fnmatchcase

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_banana.checks.idselectors import (
    IdSelectors,
    globs_matching_any,
    id_matches_pattern,
    is_id_pattern,
    pattern_prefix,
    plainly_named_family,
    split_case_selector,
)
from eval_banana.checks.keywords import (
    MAX_DEPTH,
    compile_selector,
    keyword_matches,
    parse_expression,
    tags_match,
    tokenize,
)
from eval_banana.core.caseid import split_case_check_id
from eval_banana.core.errors import SelectionError, UsageError


def has(expression: str, tags: set[str]) -> bool:
    return tags_match(expression=parse_expression(text=expression, option="--tag"), tags=tags)


def error_of(expression: str, *, option: str = "--tag") -> SelectionError:
    with pytest.raises(SelectionError) as caught:
        parse_expression(text=expression, option=option)
    return caught.value


# --- grammar ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "tags", "expected"),
    [
        ("judge", {"judge"}, True),
        ("judge", {"judges", "Judge"}, False),  # a tag name is exact and case-sensitive
        ("judge and not slow", {"judge"}, True),
        ("judge and not slow", {"judge", "slow"}, False),
        ("a or b", {"b"}, True),
        ("a or b", set(), False),
        ("not a", set(), True),
        ("not not a", {"a"}, True),
        ("(a)", {"a"}, True),
        ("((a or b)) and c", {"b", "c"}, True),
    ],
)
def test_tag_expressions(expression: str, tags: set[str], expected: bool) -> None:
    assert has(expression, tags) is expected


def test_and_binds_tighter_than_or() -> None:
    # "a or b and c" is "a or (b and c)", not "(a or b) and c": with only `a` they differ.
    assert has("a or b and c", {"a"}) is True
    assert has("(a or b) and c", {"a"}) is False
    assert has("b and c or a", {"a"}) is True


def test_not_binds_tighter_than_and() -> None:
    # "not a and b" is "(not a) and b", not "not (a and b)": with only `b` they agree, with
    # nothing they differ.
    assert has("not a and b", set()) is False
    assert has("not (a and b)", set()) is True


def test_every_expression_over_two_names_agrees_with_python() -> None:
    # Python's own `and`/`or`/`not` have the same precedence; compare on every assignment.
    shapes = [
        "x and y",
        "x or y",
        "not x or y",
        "not (x or y)",
        "x and not y or not x and y",
        "not x and not y",
        "(x or y) and not (x and y)",
    ]
    for shape, (x, y) in itertools.product(shapes, itertools.product([False, True], repeat=2)):
        tags = {name for name, on in (("x", x), ("y", y)) if on}
        assert has(shape, tags) is eval(shape, {}, {"x": x, "y": y}), (shape, tags)  # noqa: S307


def test_keywords_are_lower_case_only_and_other_words_are_names() -> None:
    assert has("AND", {"AND"}) is True
    assert has("Not", {"Not"}) is True
    assert has("team:a or v1.2", {"v1.2"}) is True
    assert has("ü-tag", {"ü-tag"}) is True


def test_quoted_names_hold_spaces_parentheses_and_keywords() -> None:
    assert has("\"needs review\" and not 'or'", {"needs review"}) is True
    assert has("\"needs review\" and not 'or'", {"needs review", "or"}) is False
    assert has('"(x)"', {"(x)"}) is True
    assert has('""', {""}) is True  # an empty tag can still be named


def test_names_are_reported_in_order() -> None:
    expression = parse_expression(text="a and (b or not c)", option="--tag")
    assert expression.names == ("a", "b", "c")


def test_tokens_carry_their_columns() -> None:
    tokens = tokenize(text=" (a  or'b c')", option="-k")
    assert [(t.kind, t.text, t.column) for t in tokens] == [
        ("(", "(", 1),
        ("name", "a", 2),
        ("or", "or", 5),
        ("name", "b c", 7),
        (")", ")", 12),
        ("end", "", 13),
    ]


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "column", "problem"),
    [
        ("judge and", 10, "expected a name, 'not' or '(', found the end of the expression"),
        ("slow test", 6, "expected 'and', 'or' or the end of the expression, found name 'test'"),
        ("(a or b", 8, "expected ')' to close the '(' at column 1, found the end"),
        ("a)", 2, "unmatched ')'"),
        ("a and or b", 7, "expected a name, 'not' or '(', found 'or'"),
        ("not", 4, "expected a name, 'not' or '(', found the end"),
        ("()", 2, "expected a name, 'not' or '(', found ')'"),
        ('a or "b', 6, "unterminated quote"),
        ("", 1, "the expression is empty"),
        ("   ", 1, "the expression is empty"),
    ],
)
def test_errors_show_the_expression_and_where_it_failed(
    expression: str, column: int, problem: str
) -> None:
    error = error_of(expression)
    first, shown, caret = error.message.splitlines()
    assert first.startswith(f"Invalid --tag expression {expression!r}: {problem}")
    assert first.endswith(f"at column {column}")
    assert shown == f"  {expression}"
    # The caret sits under the character where parsing failed (1-based column).
    assert caret == "  " + " " * (column - 1) + "^"
    assert error.hint is not None and "quote a name" in error.hint


def test_a_parse_error_is_a_usage_error_with_exit_code_2() -> None:
    error = error_of("a and", option="-k")
    assert isinstance(error, UsageError) and error.exit_code == 2
    assert error.message.startswith("Invalid -k expression 'a and'")
    assert error.field_path == "k"


def test_deep_nesting_is_refused_not_a_crash() -> None:
    fine = "(" * MAX_DEPTH + "a" + ")" * MAX_DEPTH
    assert has(fine, {"a"}) is True
    too_deep = "(" * 5000 + "a" + ")" * 5000
    assert "nested deeper than" in error_of(too_deep).message
    assert "nested deeper than" in error_of("not " * 5000 + "a").message


# --- -k matching -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "check_id", "expected"),
    [
        ("login", "test_login_ok", True),
        ("LOGIN", "test_login_ok", True),  # case-insensitive, as pytest -k
        ("login", "Login_Page", True),
        ("login and not slow", "login_fast", True),
        ("login and not slow", "login_slow", False),
        ("a_1 or b-2", "x_b-2_y", True),
        ("not (a or b)", "ccc", True),
        ("not (a or b)", "cab", False),
    ],
)
def test_keyword_is_a_case_insensitive_id_substring(
    expression: str, check_id: str, expected: bool
) -> None:
    compiled = parse_expression(text=expression, option="-k")
    assert keyword_matches(expression=compiled, check_id=check_id) is expected


# --- the compiled selector -------------------------------------------------------------------


def test_selector_combines_keyword_and_any_tag_expression() -> None:
    selector = compile_selector(keyword="login", tags=["judge and not slow", "smoke"])
    assert selector.selects(check_id="login_a", tags=["judge"]) is True
    assert selector.selects(check_id="login_b", tags=["smoke", "slow"]) is True  # 2nd --tag
    assert selector.selects(check_id="login_c", tags=["judge", "slow"]) is False
    assert selector.selects(check_id="logout", tags=["judge"]) is False  # -k still applies


def test_empty_keyword_selects_everything_but_an_empty_tag_is_an_error() -> None:
    # pytest treats `-k ""` as no filter; a --tag must name something.
    selector = compile_selector(keyword="  ", tags=[])
    assert selector.keyword is None and selector.selects(check_id="x", tags=[])
    with pytest.raises(SelectionError, match="Invalid --tag expression '': the expression"):
        compile_selector(keyword=None, tags=["ok", ""])


# --- --check-id globs ------------------------------------------------------------------------


def test_glob_detection_prefix_and_matching() -> None:
    assert [is_id_pattern(text) for text in ("judge_*", "a?c", "[ab]x", "plain_id-1")] == [
        True,
        True,
        True,
        False,
    ]
    assert pattern_prefix("judge_*_fast") == "judge_"
    assert pattern_prefix("*x") == ""
    assert pattern_prefix("ab?c[de]") == "ab"
    assert id_matches_pattern(check_id="judge_tone", pattern="judge_*") is True
    assert id_matches_pattern(check_id="Judge_tone", pattern="judge_*") is False
    assert id_matches_pattern(check_id="b_2", pattern="[ab]_?") is True
    assert id_matches_pattern(check_id="c_2", pattern="[!ab]_?") is True


# Each --check-id value, the ids it must choose, and ids it must leave.
ID_SELECTIONS = [
    ("lint", ["lint"], ["lint2", "qa[lint]"]),
    ("judge_*", ["judge_tone", "judge_x[1]"], ["Judge_tone", "lint"]),
    ("qa", ["qa[a]", "qa[b.2]"], ["qa2[a]", "qa_x"]),  # a family's id chooses its cases
    ("qa[a]", ["qa[a]"], ["qa[ab]", "qa2[a]", "qa"]),
    ("qa[a*]", ["qa[a]", "qa[ab]"], ["qa[ba]", "qb[a]"]),
    ("qa[?]", ["qa[a]", "qa[7]"], ["qa[ab]"]),
    ("q*", ["qa[a]", "qb[zz]", "q"], ["aq[a]"]),  # a glob over the family's id
    # Not a family's own: a glob over ids, where `[a]` is a set of characters ('qa' ends so).
    ("*[a]", ["qa[a]", "qa[b]", "a"], ["x[a]", "x[b]", "qb[a]"]),
    ("qa[[ab]]", ["qa[a]", "qa[b]"], ["qa[c]"]),
    ("  qa[b]  ", ["qa[b]"], ["qa[a]"]),  # written with spaces around it
]


@pytest.mark.parametrize(("value", "chosen", "left"), ID_SELECTIONS)
def test_check_id_values_choose_checks_and_cases(
    value: str, chosen: list[str], left: list[str]
) -> None:
    selectors = IdSelectors([value])
    assert [selectors.selects(check_id) for check_id in chosen] == [True] * len(chosen)
    assert [selectors.selects(check_id) for check_id in left] == [False] * len(left)


def test_many_check_id_values_choose_what_any_one_of_them_chooses() -> None:
    values = [value for value, _, _ in ID_SELECTIONS]
    every = IdSelectors(values)
    ids = sorted({check_id for _, chosen, left in ID_SELECTIONS for check_id in chosen + left})
    alone = [IdSelectors([value]) for value in values]
    assert [every.selects(one) for one in ids] == [
        any(selectors.selects(one) for selectors in alone) for one in ids
    ]


def test_the_values_choosing_an_id_are_those_that_alone_choose_it() -> None:
    values = [value for value, _, _ in ID_SELECTIONS]
    every = IdSelectors(values)
    ids = sorted({check_id for _, chosen, left in ID_SELECTIONS for check_id in chosen + left})
    for one in ids:
        alone = [value.strip() for value in values if IdSelectors([value]).selects(one)]
        assert every.choosing(one) == alone


def chooses(value: str, check_id: str) -> bool:
    """What one --check-id value chooses, said with fnmatch as docs/selecting-checks.md does."""
    value = value.strip()
    if value == check_id:
        return True
    parts = split_case_check_id(check_id)
    if parts is None:
        return is_id_pattern(value) and fnmatchcase(check_id, value)
    family, case_id = parts
    if value == family:
        return True
    written = split_case_selector(value)
    if written is not None and written[0] == family:  # its case part alone decides
        asked = written[1]
        return asked == case_id or (is_id_pattern(asked) and fnmatchcase(case_id, asked))
    if plainly_named_family(value) is not None:  # another family's case, misspelt or not
        return False
    return is_id_pattern(value) and (fnmatchcase(family, value) or fnmatchcase(check_id, value))


ID_PART = st.text(st.sampled_from("qa-_1"), min_size=1, max_size=4)
CHECK_IDS = ID_PART | st.builds(lambda family, case: f"{family}[{case}]", ID_PART, ID_PART)
VALUES = st.text(st.sampled_from("qa-_1[]*?! "), max_size=9) | CHECK_IDS


@settings(max_examples=400, deadline=None)
@given(values=st.lists(VALUES, min_size=1, max_size=8), check_ids=st.lists(CHECK_IDS, max_size=6))
def test_check_id_values_choose_what_fnmatch_says(values: list[str], check_ids: list[str]) -> None:
    every = IdSelectors(values)
    for check_id in check_ids:
        alone = list(dict.fromkeys(v.strip() for v in values if chooses(v, check_id)))
        assert every.choosing(check_id) == alone
        assert every.selects(check_id) is bool(alone)


def test_the_globs_matching_any_text() -> None:
    found = globs_matching_any(globs=["a*", "b?", "a*", "[!a]*", "z"], texts=["ab", "bc"])
    assert found == {"a*", "b?", "[!a]*"}
