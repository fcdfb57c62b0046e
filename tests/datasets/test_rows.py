"""Reading one dataset file: what a file that is not a list of cases is told."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval_banana.core.errors import DefinitionError
from eval_banana.datasets.rows import read_rows


@pytest.mark.parametrize(
    ("name", "text", "hint"),
    [
        (
            "export.json",
            '{"examples": [{"q": "a"}, {"q": "b"}], "version": 2}',
            "its key 'examples' holds a list of 2: make that list the whole file (or write one "
            "case per line in a .jsonl file)",
        ),
        ("rows.yaml", "cases:\n  - {q: a}\n", "its key 'cases' holds a list of 1: make"),
        ("one.json", '{"q": "a"}', "write the cases as a list of mappings"),
    ],
)
def test_a_mapping_instead_of_a_list_says_where_the_rows_are(
    tmp_path: Path, name: str, text: str, hint: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DefinitionError) as raised:
        read_rows(path=path, file=name, problems=[])
    assert "list of cases, not a mapping" in raised.value.message
    assert raised.value.hint is not None and raised.value.hint.startswith(hint)
