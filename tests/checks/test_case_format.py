"""A case's `case_format` (the format its fix of a value is said in), by where its row is."""

from __future__ import annotations

import pytest

from eval_banana.checks.planned import case_format
from eval_banana.datasets.expand import ExpandedCase
from eval_banana.datasets.rows import Row


def _case(*, file: str, inline_index: int | None = None) -> ExpandedCase:
    row = Row({"id": "a"}, file, "line 1", 1, True, inline_index)
    return ExpandedCase("fam[a]", "a", {"id": "a"}, {}, "sha256:0", row)


@pytest.mark.parametrize(
    ("file", "expected"),
    [
        ("data/qa.jsonl", "json"),
        ("data/qa.JSON", "json"),
        ("data/rows.csv", "csv"),
        ("data/ROWS.CSV", "csv"),
        ("data/rows.yaml", "yaml"),
        ("data/rows.yml", "yaml"),
        ("data.csv/rows.yaml", "yaml"),
        ("data/.csv", "yaml"),  # a dot file has no suffix
    ],
)
def test_a_dataset_files_suffix_names_the_format(file: str, expected: str) -> None:
    # Asked twice: the second answer comes from the per-file memo and must be the same.
    assert case_format(case=_case(file=file)) == expected
    assert case_format(case=_case(file=file)) == expected


def test_a_row_of_the_check_files_own_cases_is_yaml_whatever_the_file() -> None:
    assert case_format(case=_case(file="eval_checks/fam.csv", inline_index=0)) == "yaml"
