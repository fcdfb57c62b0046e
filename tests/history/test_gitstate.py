"""The commit probe of a run record: no git process where no work tree can be."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from eval_banana.history.gitstate import observe


def _counting_git(folder: Path, calls: Path) -> None:
    """A `git` first on PATH that notes each start, then hands over to the real one."""
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout
    folder.mkdir()
    script = folder / "git"
    script.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec {real.strip()} "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    noted = tmp_path / "calls.txt"
    _counting_git(tmp_path / "bin", noted)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    for name in ("GIT_DIR", "GIT_WORK_TREE"):
        monkeypatch.delenv(name, raising=False)
    return noted


def test_a_plain_folder_starts_no_git(tmp_path: Path, calls: Path) -> None:
    plain = tmp_path / "plain" / "project"
    plain.mkdir(parents=True)
    assert observe(root=str(plain)) is None
    assert not calls.exists()


def test_a_work_tree_is_asked_and_answers_its_commit(tmp_path: Path, calls: Path) -> None:
    repo = tmp_path / "repo"
    sub = repo / "sub"
    sub.mkdir(parents=True)
    run = {"cwd": repo, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q"], **run)  # type: ignore[call-overload]
    (repo / "f.txt").write_text("x")
    subprocess.run(["git", "add", "f.txt"], **run)  # type: ignore[call-overload]
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "one"],
        **run,  # type: ignore[call-overload]
    )
    state = observe(root=str(sub))
    assert state is not None and len(state.commit) == 40 and state.dirty is False
    assert "rev-parse" in calls.read_text()
