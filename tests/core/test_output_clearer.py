"""Clearing a check's output files before it runs: what is there goes, and the file system is
asked only about files that can be there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eval_banana.core.files import CHECK_OUTPUT_NAMES, OutputClearer


def _counting_unlink(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every `os.unlink` (which still unlinks)."""
    calls: list[str] = []
    real = os.unlink

    def unlink(path: str, *args: object, **kwargs: object) -> None:
        calls.append(os.path.basename(path))
        real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", unlink)
    return calls


def test_files_there_when_listed_are_cleared_and_absent_ones_cost_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A restored file is a link to the cache's copy: it must go before its check runs again.
    (tmp_path / "restored.stdout.txt").write_text("cached", encoding="utf-8")
    (tmp_path / "restored.json").write_text("{}", encoding="utf-8")
    clearer = OutputClearer(checks_dir=tmp_path)
    calls = _counting_unlink(monkeypatch)
    clearer.clear(stem="restored")
    assert calls == ["restored.stdout.txt"]
    assert not (tmp_path / "restored.stdout.txt").exists()
    assert (tmp_path / "restored.json").exists()  # a result file is no output: left alone
    for index in range(100):
        clearer.clear(stem=f"fresh{index}")
    assert calls == ["restored.stdout.txt"]


def test_a_stem_cleared_again_loses_what_its_earlier_attempt_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clearer = OutputClearer(checks_dir=tmp_path)
    clearer.clear(stem="check")
    for name in CHECK_OUTPUT_NAMES:
        (tmp_path / f"check.{name}").write_text("first attempt", encoding="utf-8")
    calls = _counting_unlink(monkeypatch)
    clearer.clear(stem="check")
    assert calls == [f"check.{name}" for name in CHECK_OUTPUT_NAMES]
    assert list(tmp_path.iterdir()) == []
