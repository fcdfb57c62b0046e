"""The published pre-commit hook, run by pre-commit itself from a real (temporary) hook repo."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]

VALID = """\
schema_version: 1
id: ok
type: deterministic
description: Fine.
script: print("ok")
"""
BROKEN = """\
schema_version: 1
id: broken
type: deterministic
description: Has no script.
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    return env


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        [*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def _hook_repo(tmp_path: Path) -> tuple[Path, str]:
    """A git repository holding what pre-commit installs: the package and the hook file."""
    hook_repo = tmp_path / "hook-repo"
    hook_repo.mkdir()
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy2(REPO / name, hook_repo / name)
    shutil.copytree(
        REPO / "eval_banana",
        hook_repo / "eval_banana",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    _git(hook_repo, "init", "-q")
    _git(hook_repo, "add", "-A")
    _git(hook_repo, "commit", "-q", "-m", "hook")
    return hook_repo, _git(hook_repo, "rev-parse", "HEAD")


def _pre_commit(consumer: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", *args],
        cwd=consumer,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_eb_validate_hook(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.fail("the pre-commit hook test needs git on PATH")
    hook_repo, rev = _hook_repo(tmp_path)
    consumer = tmp_path / "consumer"
    (consumer / "eval_checks").mkdir(parents=True)
    (consumer / "eval_checks" / "ok.yaml").write_text(VALID)
    (consumer / "README.md").write_text("# consumer\n")
    (consumer / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n      - id: eb-validate\n"
    )
    _git(consumer, "init", "-q")
    _git(consumer, "add", "-A")

    passing = _pre_commit(consumer, tmp_path, "--all-files")
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "eval_banana validate" in passing.stdout and "Passed" in passing.stdout

    # A change to a file outside eval_checks/ does not run the hook.
    skipped = _pre_commit(consumer, tmp_path, "--files", "README.md")
    assert skipped.returncode == 0 and "Skipped" in skipped.stdout

    (consumer / "eval_checks" / "broken.yaml").write_text(BROKEN)
    _git(consumer, "add", "-A")
    failing = _pre_commit(consumer, tmp_path, "--files", "eval_checks/broken.yaml")
    assert failing.returncode == 1
    assert "Failed" in failing.stdout
    assert f"Invalid check definition in {consumer / 'eval_checks' / 'broken.yaml'}" in (
        failing.stdout
    )
    assert "needs exactly one of script or script_path; neither is set" in failing.stdout
