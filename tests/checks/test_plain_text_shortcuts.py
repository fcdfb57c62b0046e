"""The two scans of a check file's text that let its loading skip a walk of the loaded value
must never skip a file the walk would refuse: a date, a tag, `.nan`/`.inf`, an alias or deep
nesting each make the scan say "walk it", in every form YAML writes them."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from eval_banana.checks.definition import _may_not_be_plain, _not_plain
from eval_banana.core.yamlsafe import Unbounded, may_be_unbounded, refuse_unbounded

NOT_PLAIN = [
    "a: 2026-12-06",
    "a: 2001-12-14t21:59:43.10-05:00",
    "a: 2001-12-14 21:59:43.10 -5",
    "a: [1, 2002-1-5 10:00:00]",
    "2026-12-06: a date as a key",
    "a: !!binary aGVsbG8=",
    "a: !!set {x, y}",
    "a: !!omap [x: 1, y: 2]",
    "a: !!pairs [x: 1]",
    "a: !!timestamp 2001-12-14",
    "a: !!float .nan",
    "a: .nan",
    "a: .NaN",
    "a: .NAN",
    "a: .inf",
    "a: -.Inf",
    "a: +.INF",
    "a: {b: [.inf]}",
    "- x\n- .nan\n",
    "a:\n  b:\n    - 2026-01-01\n",
]

PLAIN = [
    "a: 1\nb: text\nc: [1, 2.5, true, null]\n",
    "id: check_1\nscript: |\n  print(1 - 2)\n",
    "a: '2026-12-06'\n",  # quoted: text, but the scan cannot tell, which only costs a walk
]


def _values(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [*value.keys(), *(v for item in value.values() for v in _values(item))]
    if isinstance(value, list):
        return [v for item in value for v in _values(item)]
    return [value]


@pytest.mark.parametrize("text", NOT_PLAIN)
def test_text_that_builds_a_value_json_has_not_is_always_walked(text: str) -> None:
    loaded = yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506 - the safe loader
    assert any(_not_plain(value) for value in _values(loaded)), loaded
    assert _may_not_be_plain(text)


@pytest.mark.parametrize("text", PLAIN)
def test_plain_text_builds_plain_values(text: str) -> None:
    loaded = yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506 - the safe loader
    assert not any(_not_plain(value) for value in _values(loaded))
    assert _may_not_be_plain(text) == ("2026-12-06" in text)


def _nested(depth: int, *, style: str) -> str:
    if style == "flow":
        return "a: " + "[" * depth + "]" * depth
    if style == "sequence":
        return "- " * depth + "x"
    return "".join("  " * level + f"k{level}:\n" for level in range(depth)) + "  " * depth + "v"


@pytest.mark.parametrize("style", ["flow", "sequence", "mapping"])
def test_nesting_deeper_than_the_bound_is_always_walked(style: str) -> None:
    limit = 20
    deep = _nested(limit + 1, style=style)
    with pytest.raises(Unbounded):
        refuse_unbounded(
            value=yaml.load(deep, Loader=yaml.SafeLoader),  # noqa: S506 - the safe loader
            max_depth=limit,
            max_values=10**6,
        )
    assert may_be_unbounded(text=deep, max_depth=limit, max_values=10**6)
    shallow = _nested(limit // 2, style=style)
    assert not may_be_unbounded(text=shallow, max_depth=limit, max_values=10**6)


def test_an_alias_or_a_text_near_the_value_bound_is_always_walked() -> None:
    bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n"
    with pytest.raises(Unbounded):
        refuse_unbounded(
            value=yaml.load(bomb, Loader=yaml.SafeLoader),  # noqa: S506 - the safe loader
            max_depth=200,
            max_values=10,
        )
    assert may_be_unbounded(text=bomb, max_depth=200, max_values=10**6)
    many = "[" + ",".join("1" * 1 for _ in range(30)) + "]"
    assert may_be_unbounded(text=many, max_depth=200, max_values=30)
    assert not may_be_unbounded(text=many, max_depth=200, max_values=10**6)
