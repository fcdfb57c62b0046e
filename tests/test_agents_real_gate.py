"""The real-agent conformance suite runs only when asked for, and never skips silently."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

# The integrations suite (`pytest -m integrations`, which .ci/run runs): outside tools
# installed and driven for real, left out of the README's command to keep it under ten minutes.
pytestmark = pytest.mark.integrations


def _pytest(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


def test_the_default_test_command_leaves_the_suite_out() -> None:
    collected = _pytest("--collect-only", "-q", "tests/test_model_server.py", "tests")
    assert collected.returncode == 0, collected.stdout[-2000:]
    assert "tests/agents_real" not in collected.stdout
    assert "test_model_server.py" in collected.stdout


def test_named_suite_without_installed_agents_fails_with_the_fix(tmp_path: Path) -> None:
    done = _pytest(
        "-q",
        "tests/agents_real/test_conformance.py::test_a_wrong_flag_is_reported_by_the_real_cli",
        env={"EVAL_BANANA_AGENTS_HOME": str(tmp_path / "nothing-here")},
    )
    assert done.returncode != 0
    assert "not installed" in done.stdout and "Run `invoke agents` first" in done.stdout
    assert "skipped" not in done.stdout.splitlines()[-1]
