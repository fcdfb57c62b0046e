"""canonjson writes exactly the text `json.dumps(..., indent=2, ensure_ascii=False,
allow_nan=False)` writes, and refuses what that refuses (NaN, the infinities).

Stage files are hashed as bytes and chained by those digests, so one byte of difference would
make every earlier run folder look stale or changed.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eval_banana.core import canonjson
from eval_banana.core.files import (
    sha256_bytes,
    stage_json_bytes,
    write_json_atomic,
    write_model,
)
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


def _json_dumps(value: Any, *, sort_keys: bool) -> str | None:
    """json.dumps's text as canonjson promises it (NaN refused); None where it refuses."""
    try:
        return json.dumps(value, indent=2, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return None


def _canonjson_dumps(value: Any, *, sort_keys: bool) -> str | None:
    try:
        return canonjson.dumps(value, sort_keys=sort_keys)
    except ValueError:
        return None


@given(value=JSON)
def test_plain_values_match_json_dumps(value: Any) -> None:
    for sort_keys in (False, True):
        assert _canonjson_dumps(value, sort_keys=sort_keys) == _json_dumps(
            value, sort_keys=sort_keys
        )


# Few keys, so the same key recurs in dicts at several depths (its text is kept per depth).
REPEATED_KEYS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "é", ""]), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(value=REPEATED_KEYS)
def test_keys_recurring_at_every_depth_match_json_dumps(value: Any) -> None:
    for sort_keys in (False, True):
        assert canonjson.dumps(value, sort_keys=sort_keys) == _json_dumps(
            value, sort_keys=sort_keys
        )


def test_special_numbers_and_characters() -> None:
    value = {"é": ["\u2028", "\x00", '"\\', 1e300, -0.0, 10**30, 5e-324]}
    assert canonjson.dumps(value) == json.dumps(value, indent=2, ensure_ascii=False)


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_nan_and_infinities_are_refused_not_written(number: float, tmp_path: Path) -> None:
    """Python's json writes NaN and Infinity, which no JSON reader takes (a browser's
    JSON.parse throws on them): every file eb writes through canonjson refuses them, the
    fast path and the fallback alike, and leaves no file behind."""
    for value in ({"cost_usd": number}, {1: number}, [number]):
        with pytest.raises(ValueError, match="not JSON compliant"):
            canonjson.dumps(value)
        target = tmp_path / "doc.json"
        with pytest.raises(ValueError, match="not JSON compliant"):
            write_json_atomic(path=target, document=value)
        assert list(tmp_path.iterdir()) == []


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


def _many_results(count: int) -> list[CheckResult]:
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        build_result(
            check=planned_inline(id=f"c{index}", script="pass", project_root=Path("/p")),
            status="passed",
            started=moment,
            completed=moment,
            details={"n": index},
        )
        for index in range(count)
    ]


def test_dump_hands_over_the_text_in_pieces_that_make_dumps_text() -> None:
    doc = make_execute(results=_many_results(1200))
    pieces: list[str] = []
    assert canonjson.dump(doc, emit=pieces.append, sort_keys=True)
    # Never the whole text at once: a stage file of 10,000 checks is tens of megabytes.
    assert len(pieces) > 3
    assert max(map(len, pieces)) < len("".join(pieces)) / 2
    assert "".join(pieces) == canonjson.dumps(doc, sort_keys=True)


def test_dump_says_when_only_json_dumps_can_write_the_value() -> None:
    pieces: list[str] = []
    assert not canonjson.dump({1: "one"}, emit=pieces.append)


def test_a_stage_file_is_written_piece_by_piece_as_stage_json_bytes_gives_it(
    tmp_path: Path,
) -> None:
    doc = make_execute(results=_many_results(400))
    path = tmp_path / "stages" / "execute.json"
    digest = write_model(path=path, model=doc)
    assert path.read_bytes() == stage_json_bytes(document=doc)
    assert digest == sha256_bytes(data=path.read_bytes())
    # What only json.dumps writes starts the file again: still one whole document.
    odd = make_execute(results=_many_results(400))
    odd.results[-1].details.clear()
    odd.results[-1].details[7] = "a key that is no string"  # type: ignore[index]
    digest = write_model(path=path, model=odd)
    assert path.read_bytes() == stage_json_bytes(document=odd)
    assert digest == sha256_bytes(data=path.read_bytes())
    assert list(path.parent.iterdir()) == [path]
