"""Generated docs match the code: the reference tables and the real stage examples."""

from __future__ import annotations

import pytest

from eval_banana.docgen import REPO, reference_markdown, stage_examples


def test_reference_matches_the_models() -> None:
    committed = (REPO / "docs" / "reference.md").read_text()
    assert committed == reference_markdown(), "docs/reference.md drifted: run `invoke docs`"


@pytest.mark.slow
def test_stage_examples_match_what_eb_run_writes() -> None:
    for stage, text in stage_examples().items():
        committed = (REPO / "docs" / "stages" / f"{stage}.example.json").read_text()
        assert committed == text, f"docs/stages/{stage}.example.json drifted: run `invoke docs`"
