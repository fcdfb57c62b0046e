"""A `contains` or `matches` value a row's blank field fills with only whitespace is refused:
it is found in almost any answer, as an empty one is in every answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EbResult

CONFIG = """\
[discovery]
exclude_dirs = [".eval-banana", ".git"]
"""

FAMILY = """\
schema_version: 1
id: answers
type: assertions
description: "answer {{ case.id }}"
cases_from: data/answers.csv
artifact: "out/{{ case.id }}.json"
assert:
  - {path: answer, op: OP, value: "{{ case.expected }}"}
"""


@pytest.mark.parametrize("op", ["contains", "matches"])
def test_a_blank_csv_cell_filling_a_finding_value_is_refused_at_its_row(
    op: str, project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # `capital, , ` (a hand-written CSV, its cells left blank) filled the value with " ", which
    # the wrong answer holds: the case passed.
    root = project(
        {
            "eval_checks/answers.yaml": FAMILY.replace("OP", op),
            "data/answers.csv": "id,expected\ncapital, \nriver,Seine\n",
            "out/capital.json": '{"answer": "I do not know the answer"}',
            "out/river.json": '{"answer": "The Seine"}',
        },
        config=CONFIG,
    )
    validated = eb("validate", "--cwd", str(root), "--json")
    assert validated.exit_code == 2, validated.stdout
    (error,) = json.loads(validated.stdout)["errors"]
    check_file = str(root / "eval_checks" / "answers.yaml")
    assert error["message"] == (
        f"{check_file}: case 'capital' (data/answers.csv line 2): assert.0.value: field "
        f"'expected' is ' ', only whitespace: {op} finds that in almost any answer, so the case "
        "could hardly fail"
    )
    assert (error["file"], error["line"], error["field_path"]) == (
        "data/answers.csv",
        2,
        "case.expected",
    )
    assert error["hint"].startswith("write the text assert.0.value should find in expected")
    assert eb("run", "--cwd", str(root)).exit_code == 2


def test_a_space_written_in_the_check_file_itself_is_looked_for_as_meant(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    # A value of spaces the family writes (around a filled field, or alone) is meant.
    family = FAMILY.replace("OP", "contains") + '  - {path: answer, op: contains, value: " "}\n'
    root = project(
        {
            "eval_checks/answers.yaml": family,
            "data/answers.csv": "id,expected\nriver,Seine\n",
            "out/river.json": '{"answer": "The Seine"}',
        },
        config=CONFIG,
    )
    ran = eb("run", "--cwd", str(root), "--json")
    assert ran.exit_code == 0, ran.stderr
    (check,) = json.loads(ran.stdout)["checks"]
    assert check["status"] == "passed"
