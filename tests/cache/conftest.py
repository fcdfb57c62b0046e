"""Fixtures for the verdict cache tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.pipeline import replaying
from tests.cache.rig import Project, judge, make_project, script_check


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Plain folders (not inside any repository) unless a test makes one; no cache setting leaks
    # in from the shell running the tests.
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in ("EVAL_BANANA_CACHE_MODE", "EVAL_BANANA_CACHE_DIR", "EVAL_BANANA_CACHE_MAX_MB"):
        monkeypatch.delenv(name, raising=False)


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


CHECK_SCRIPT = """\
import json, sys
from pathlib import Path
ctx = json.loads(Path(sys.argv[1]).read_text())
root = Path(ctx["project_root"])
print("src says", (root / "src" / "value.txt").read_text().strip())
(Path(ctx["output_dir"]) / "evidence.txt").write_text("seen\\n")
"""


@pytest.fixture
def standard(tmp_path: Path, eb: Callable[..., Any]) -> Project:
    """A judge reading docs/, a script check reading src/, and a check without inputs."""
    return make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={
            "j": judge("j", inputs=["docs/**"]),
            "d": script_check("d", script_path="../scripts/check.py", inputs=["src/**"]),
            "w": script_check("w", script="print('whole project')\n"),
        },
        files={
            "docs/guide.md": "# Guide\n",
            "src/value.txt": "42\n",
            "scripts/check.py": CHECK_SCRIPT,
            "README.md": "# Project\n",
        },
    )
