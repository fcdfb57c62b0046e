"""canonjson writes exactly the text `json.dumps(..., indent=2, ensure_ascii=False)` writes.

Stage files are hashed as bytes and chained by those digests, so one byte of difference would
make every earlier run folder look stale or changed.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from eval_banana.core import canonjson
from eval_banana.models.result import CheckResult
from eval_banana.runners.results import build_result
from tests.builders import make_execute, planned_inline

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(value=JSON)
def test_plain_values_match_json_dumps(value: Any) -> None:
    for sort_keys in (False, True):
        assert canonjson.dumps(value, sort_keys=sort_keys) == json.dumps(
            value, indent=2, sort_keys=sort_keys, ensure_ascii=False
        )


def test_special_numbers_and_characters() -> None:
    value = {"é": ["\u2028", "\x00", '"\\', math.inf, -math.inf, math.nan, 1e300, -0.0, 10**30]}
    assert canonjson.dumps(value) == json.dumps(value, indent=2, ensure_ascii=False)


def test_records_match_their_dump() -> None:
    check = planned_inline(
        id="unit", script="pass", project_root=Path("/p"), tags=["a"], description="Crème ✓"
    )
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    result = build_result(
        check=check,
        status="failed",
        started=moment,
        completed=moment,
        details={"nested": {"b": [1, 2.5, None]}, "a": True},
        exit_code=3,
    )
    doc = make_execute(results=[result, result])
    for record in (result, doc):
        for sort_keys in (False, True):
            assert canonjson.dumps(record, sort_keys=sort_keys) == json.dumps(
                record.model_dump(mode="json", by_alias=True),
                indent=2,
                sort_keys=sort_keys,
                ensure_ascii=False,
            )
    assert isinstance(result, CheckResult)


def test_keys_that_are_not_strings_fall_back_to_json() -> None:
    value = {1: "one", None: [True]}
    assert canonjson.dumps(value) == json.dumps(value, indent=2, ensure_ascii=False)
