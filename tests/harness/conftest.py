"""Fixtures for the harness judge tests: the stand-in agents first on PATH, a fresh project."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.harness.judge_rig import AGENTS_DIR, Rig


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Rig:
    monkeypatch.setenv("PATH", f"{AGENTS_DIR}{os.pathsep}{os.environ.get('PATH', '')}")
    # openhands --override-with-envs insists on a key; no stand-in ever uses it.
    monkeypatch.setenv("LLM_API_KEY", "test-key-not-used")
    root = tmp_path / "project"
    root.mkdir()
    run_dir = tmp_path / "run"
    (run_dir / "checks").mkdir(parents=True)
    return Rig(root=root, run_dir=run_dir, record=tmp_path / "received.jsonl")
