"""The published pre-commit hook, installed by pre-commit itself from a real (temporary) hook
repository and run by `git commit` in a real consumer repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# The integrations suite (`pytest -m integrations`, which .ci/run runs): outside tools
# installed and driven for real, left out of the README's command to keep it under ten minutes.
pytestmark = pytest.mark.integrations

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
# A check whose script lives in a folder of its own, far from eval_checks/.
REFERENCING = """\
schema_version: 1
id: uses_a_script
type: deterministic
description: Runs tools/probes/probe.py.
script_path: ../tools/probes/probe.py
"""
HOOK_NAME = "eb validate (eval-banana-staged)"


@dataclass(frozen=True)
class HookRepo:
    path: Path
    rev: str
    home: Path  # PRE_COMMIT_HOME, shared so the hook's environment is built once


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GIT, *args], cwd=cwd, check=check, capture_output=True, text=True, env=_git_env()
    )


def _git_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HookRepo]:
    """A git repository holding what pre-commit installs: the package and the hook file."""
    if shutil.which("git") is None:
        pytest.fail("the pre-commit hook tests need git on PATH")
    base = tmp_path_factory.mktemp("hook")
    path = base / "hook-repo"
    path.mkdir()
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy2(REPO / name, path / name)
    shutil.copytree(
        REPO / "eval_banana",
        path / "eval_banana",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "hook")
    rev = _git(path, "rev-parse", "HEAD").stdout.strip()
    yield HookRepo(path=path, rev=rev, home=base / "pre-commit-home")


def _consumer(tmp_path: Path, hook: HookRepo, files: dict[str, str]) -> Path:
    """A repository with one good commit and the hook installed as its git pre-commit hook."""
    consumer = tmp_path / "consumer"
    for relative, text in {"README.md": "# consumer\n", **files}.items():
        target = consumer / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (consumer / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook.path}\n    rev: {hook.rev}\n    hooks:\n      - id: eb-validate\n"
    )
    _git(consumer, "init", "-q")
    installed = _pre_commit(consumer, hook, "install")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    first = _commit(consumer, hook, "first")
    _assert_passed(first)
    return consumer


def _pre_commit(consumer: Path, hook: HookRepo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=consumer,
        env={**_git_env(), "PRE_COMMIT_HOME": str(hook.home)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _commit(consumer: Path, hook: HookRepo, message: str) -> subprocess.CompletedProcess[str]:
    """`git add -A && git commit`, through the installed git hook (as a user commits)."""
    _git(consumer, "add", "-A")
    return subprocess.run(
        [*GIT, "commit", "-q", "-m", message],
        cwd=consumer,
        env={**_git_env(), "PRE_COMMIT_HOME": str(hook.home)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _assert_passed(done: subprocess.CompletedProcess[str]) -> None:
    # git runs its hooks with their output on stderr.
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert f"{HOOK_NAME}..." in output and "Passed" in output, output


def _head(consumer: Path) -> str:
    return _git(consumer, "rev-parse", "HEAD").stdout.strip()


def _refused(consumer: Path, hook: HookRepo, message: str) -> str:
    """Commit; assert that the hook refused it and nothing was committed; return its output."""
    before = _head(consumer)
    done = _commit(consumer, hook, message)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert f"{HOOK_NAME}..." in output and "Failed" in output
    assert _head(consumer) == before
    return output


def test_a_broken_check_file_is_refused(tmp_path: Path, hook_repo: HookRepo) -> None:
    consumer = _consumer(tmp_path, hook_repo, {"eval_checks/ok.yaml": VALID})
    (consumer / "eval_checks" / "broken.yaml").write_text(BROKEN)
    output = _refused(consumer, hook_repo, "add a broken check")
    assert f"Invalid check definition in {consumer / 'eval_checks' / 'broken.yaml'}" in output
    assert "needs exactly one of script or script_path; neither is set" in output


def test_a_config_typo_is_refused(tmp_path: Path, hook_repo: HookRepo) -> None:
    consumer = _consumer(
        tmp_path,
        hook_repo,
        {"eval_checks/ok.yaml": VALID, ".eval-banana/config.toml": "[core]\npass_threshold = 1\n"},
    )
    # Only the config changes: no check file is part of this commit.
    (consumer / ".eval-banana" / "config.toml").write_text("[core]\npass_treshold = 1\n")
    output = _refused(consumer, hook_repo, "tweak the threshold")
    assert "did you mean core.pass_threshold?" in output


def test_a_moved_or_deleted_script_is_refused(tmp_path: Path, hook_repo: HookRepo) -> None:
    consumer = _consumer(
        tmp_path,
        hook_repo,
        {"eval_checks/uses.yaml": REFERENCING, "tools/probes/probe.py": "print('probe')\n"},
    )
    script = consumer / "tools" / "probes" / "probe.py"
    # Editing the script runs the hook too, and a good edit passes.
    script.write_text("print('probe, improved')\n")
    _assert_passed(_commit(consumer, hook_repo, "improve the probe"))

    _git(consumer, "mv", "tools/probes/probe.py", "tools/probes/renamed.py")
    moved = _refused(consumer, hook_repo, "rename the probe")
    # The hook's output names the check file that refers to the script, and the line.
    uses = consumer / "eval_checks" / "uses.yaml"
    named = f"Deterministic script not found: {script} (script_path: ../tools/probes/probe.py"
    assert f"{named} in {uses}:5)" in moved

    _git(consumer, "mv", "tools/probes/renamed.py", "tools/probes/probe.py")
    _git(consumer, "rm", "-q", "tools/probes/probe.py")
    # pre-commit shows hooks no deleted files; the hook runs on every commit to catch this.
    deleted = _refused(consumer, hook_repo, "delete the probe")
    assert f"{named} in {uses}:5)" in deleted


def test_unrelated_commits_pass(tmp_path: Path, hook_repo: HookRepo) -> None:
    consumer = _consumer(tmp_path, hook_repo, {"eval_checks/ok.yaml": VALID})
    (consumer / "README.md").write_text("# consumer\n\nMore words.\n")
    _assert_passed(_commit(consumer, hook_repo, "docs"))
