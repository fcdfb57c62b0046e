"""Fixtures for the verdict cache tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.pipeline import replaying
from tests.cache.rig import Project, isolate, standard_project


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(folder=tmp_path, monkeypatch=monkeypatch)


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each `eb run` since was a replay (a spy on `replaying.replay`)."""
    seen: list[bool] = []
    real = replaying.replay

    def spy(**kwargs: Any) -> Any:
        outcome = real(**kwargs)
        seen.append(outcome is not None)
        return outcome

    monkeypatch.setattr(replaying, "replay", spy)
    return seen


@pytest.fixture
def standard(tmp_path: Path, eb: Callable[..., Any]) -> Project:
    return standard_project(tmp_path=tmp_path, eb=eb)
