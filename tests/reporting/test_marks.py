"""report.html's history marks redrawn on a written page (as a replay does) are the marks a
page rendered with that history has: byte for byte, whatever the marks were before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eval_banana.history.trend import Recent
from eval_banana.reporting.html import render_html
from eval_banana.reporting.marks import NoMarks, redraw

DIGEST = "sha256:" + "a" * 64


def _check(check_id: str, status: str, **extra: Any) -> dict[str, Any]:
    return {
        "check_id": check_id,
        "status": status,
        "check_type": "deterministic",
        "check_definition_sha256": DIGEST,
        "duration_ms": 5,
        "tags": ["t"],
        **extra,
    }


REPORT = {
    "run_id": "20260101_000000_abcdef12",
    "run_passed": False,
    "checks": [
        _check("steady", "passed"),
        _check('odd <"id"> & more', "failed", reason="broke"),
        _check("flaky_now", "passed", details={"flaky": True, "samples": []}),
        _check("errs", "error", error_detail="boom"),
        _check("unseen", "passed"),
    ],
}


def _recent(statuses: str) -> Recent:
    words = {"p": "passed", "f": "failed", "e": "error"}
    return Recent(
        statuses=[words[letter] for letter in statuses],
        digests=[DIGEST] * len(statuses),
        early=[False] * len(statuses),
    )


BEFORE = {"steady": _recent("pp"), 'odd <"id"> & more': _recent("p"), "errs": _recent("e")}
AFTER = {
    "steady": _recent("ppfpfp"),
    'odd <"id"> & more': _recent("fpp"),
    "flaky_now": _recent("f"),
    "errs": _recent("ep"),
}


@pytest.mark.parametrize("before", [BEFORE, {}])
@pytest.mark.parametrize("after", [AFTER, BEFORE, {}])
def test_redrawn_marks_are_those_of_a_page_rendered_with_that_history(
    tmp_path: Path, before: dict[str, Recent], after: dict[str, Recent]
) -> None:
    page = render_html(report=REPORT, run_dir=tmp_path, history=before).encode()
    expected = render_html(report=REPORT, run_dir=tmp_path, history=after).encode()
    assert redraw(page=page, history=after) == expected


def test_the_marks_change_where_the_history_did(tmp_path: Path) -> None:
    page = render_html(report=REPORT, run_dir=tmp_path, history=BEFORE).encode()
    redrawn = redraw(page=page, history=AFTER).decode()
    assert "flaky in history" in redrawn and "flaky in history" not in page.decode()
    assert 'data-n="7"' in redrawn  # steady: six recorded runs and this one


def test_a_page_without_a_history_block_is_refused() -> None:
    with pytest.raises(NoMarks):
        redraw(page=b"<html><body>no block</body></html>", history=AFTER)


def test_a_page_whose_marks_are_those_of_now_is_left_as_it_is(tmp_path: Path) -> None:
    page = render_html(report=REPORT, run_dir=tmp_path, history=AFTER).encode()
    assert redraw(page=page, history=AFTER) is page
