"""A reused C encoder writes what `JSONEncoder.encode` writes, and fails where it fails, value
after value (a dataset family encodes every row with one)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eval_banana.core.jsonencoder import reused_encoder
from eval_banana.datasets.casedigest import CANONICAL_ENCODER
from tests.core.test_canonjson import JSON

ENCODERS = (
    CANONICAL_ENCODER,  # a case's digest: sorted, compact, no NaN
    json.JSONEncoder(ensure_ascii=False),  # a judge's fenced case
    json.JSONEncoder(),
)


def _outcome(encode: Any, value: object) -> tuple[str, str]:
    try:
        return "text", encode(value)
    except (TypeError, ValueError) as exc:
        return type(exc).__name__, str(exc)


@given(values=st.lists(JSON, max_size=6))
def test_a_reused_encoder_writes_and_refuses_what_encode_does(values: list[object]) -> None:
    for encoder in ENCODERS:
        reused = reused_encoder(encoder)
        for value in values:
            assert _outcome(reused, value) == _outcome(encoder.encode, value)


def test_a_value_that_failed_leaves_no_mark_on_the_next_one() -> None:
    """The cycle check's marks of a value that failed are gone: the same mapping, fixed, is
    written, not taken for a value inside itself."""
    reused = reused_encoder(CANONICAL_ENCODER)
    row: dict[str, Any] = {"q": [{"when": {1, 2}}]}
    with pytest.raises(TypeError):
        reused(row)
    row["q"] = [{"when": [1, 2]}]
    assert reused(row) == CANONICAL_ENCODER.encode(row) == '{"q":[{"when":[1,2]}]}'


def test_a_value_inside_itself_is_refused_as_encode_refuses_it() -> None:
    row: dict[str, Any] = {"q": []}
    row["q"].append(row)
    with pytest.raises(ValueError, match="Circular reference"):
        reused_encoder(CANONICAL_ENCODER)(row)
