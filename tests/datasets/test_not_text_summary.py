"""Many rows whose field is not text where text goes are told as one error that is true of
each of them: the kinds their values are, and a fix that fits them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import EbResult

CONFIG = """\
[discovery]
exclude_dirs = [".eval-banana", ".git"]
"""


def _family(values: list[str]) -> str:
    cases = "".join(f"  - {{n: {value}}}\n" for value in values)
    return (
        "schema_version: 1\nid: t\ntype: deterministic\n"
        f'description: "n={{{{ case.n }}}}"\ninputs: []\ncases:\n{cases}script: print(1)\n'
    )


def _the_error(eb: Callable[..., EbResult], root: Path) -> dict[str, str]:
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2, validated.stdout
    (error,) = json.loads(validated.stdout)["errors"]
    return dict(error)


def test_rows_of_several_kinds_are_each_named_in_the_summary(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # Every row was told "is null" (the first row's kind), with the fix `"1", not 1`.
    family = _family(["null", "[1, 2]", "true", "{a: 1}", "null"])
    root = project({"eval_checks/t.yaml": family}, config=CONFIG)
    error = _the_error(eb, root)
    assert (
        error["message"]
        .split(": ", 1)[1]
        .startswith(
            "5 of 5 cases: description: field 'n' is null, a list, a boolean or a mapping, not "
            "text, where text goes; the first is case '1'"
        )
    )
    assert error["hint"] == (
        "a placeholder inside text takes a text field: write n as text in the dataset, or "
        "take {{ case.n }} out of description"
    )


def test_rows_of_one_kind_keep_the_fix_for_it(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/t.yaml": _family(["1", "2", "3", "4"])}, config=CONFIG)
    error = _the_error(eb, root)
    assert (
        "4 of 4 cases: description: field 'n' is a number, not text, where text goes"
        in (error["message"])
    )
    assert '("1", not 1)' in error["hint"]
    # One row that is null is not told the fix for a number.
    (root / "eval_checks" / "t.yaml").write_text(_family(["null", "'x'"]))
    error = _the_error(eb, root)
    assert "field 'n' is null, not text" in error["message"]
    assert '("1", not 1)' not in error["hint"]
