"""Disposable copies of a project: made, run in, compared, removed; the project never touched."""

from __future__ import annotations

import os
import pwd
import subprocess
import tempfile
from pathlib import Path

import pytest

from eval_banana.isolation.detect import ChangeMonitor
from eval_banana.isolation.watch import TreeWatcher
from eval_banana.isolation.workspace import (
    Change,
    make_workspace,
    overlay_usable,
    probe_command,
)
from tests.gitrepo import init_repo

EDIT = "echo x >> README.md; rm gone.txt; mkdir -p src/deep; echo n > src/deep/new.txt; ln -s README.md link"


def _project(root: Path) -> list[str]:
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / "README.md").write_text("read me\n")
    (root / "gone.txt").write_text("soon gone\n")
    (root / "tool.sh").write_text("#!/bin/sh\n")
    os.chmod(root / "tool.sh", 0o755)
    return ["README.md", "gone.txt", "src/a.py", "tool.sh"]


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


METHODS = ["copy", "overlay"] if overlay_usable() else ["copy"]


@pytest.mark.parametrize("method", METHODS)
def test_a_judge_s_edits_stay_in_its_copy_and_are_listed(tmp_path: Path, method: str) -> None:
    root = tmp_path / "project"
    paths = _project(root)
    before = _snapshot(root)
    workspace = make_workspace(root=root, paths=paths, method=method)  # type: ignore[arg-type]
    try:
        assert workspace.method == method
        seen = subprocess.run(
            workspace.wrap(["sh", "-c", f"cat README.md; test -x tool.sh && echo exec; {EDIT}"]),
            cwd=workspace.cwd,
            capture_output=True,
            text=True,
            check=True,
        )
        assert seen.stdout == "read me\nexec\n"
        assert workspace.changes() == [
            Change(path="README.md", kind="changed"),
            Change(path="gone.txt", kind="removed"),
            Change(path="link", kind="added"),
            Change(path="src/deep/new.txt", kind="added"),
        ]
    finally:
        workspace.remove()
    assert _snapshot(root) == before
    assert not workspace.scratch.exists()


@pytest.mark.parametrize("method", METHODS)
def test_a_file_saved_unchanged_in_a_copy_is_no_change(tmp_path: Path, method: str) -> None:
    root = tmp_path / "project"
    paths = _project(root)
    workspace = make_workspace(root=root, paths=paths, method=method)  # type: ignore[arg-type]
    try:
        # Saved with its own bytes, and deleted then made again alike; nothing else written.
        resave = (
            "cat README.md > r && cat r > README.md && rm r; rm src/a.py; echo 'a = 1' > src/a.py"
        )
        subprocess.run(workspace.wrap(["sh", "-c", resave]), cwd=workspace.cwd, check=True)
        assert workspace.changes() == []
        subprocess.run(
            workspace.wrap(["sh", "-c", "echo b = 2 > src/a.py"]), cwd=workspace.cwd, check=True
        )
        assert workspace.changes() == [Change(path="src/a.py", kind="changed")]
    finally:
        workspace.remove()


@pytest.mark.parametrize("method", METHODS)
def test_a_chmod_in_a_copy_is_a_change(tmp_path: Path, method: str) -> None:
    # The project's state counts a file's mode as git records it: a judge that took the
    # execute bit off a script changed what a later check runs.
    root = tmp_path / "project"
    paths = _project(root)
    workspace = make_workspace(root=root, paths=paths, method=method)  # type: ignore[arg-type]
    try:
        subprocess.run(workspace.wrap(["chmod", "-x", "tool.sh"]), cwd=workspace.cwd, check=True)
        assert workspace.changes() == [Change(path="tool.sh", kind="changed")]
    finally:
        workspace.remove()
    assert os.access(root / "tool.sh", os.X_OK)


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_a_chmod_while_a_check_runs_is_charged_to_it(tmp_path: Path, git: bool) -> None:
    root = tmp_path / "project"
    _project(root)
    if git:
        init_repo(root, {})
    monitor = ChangeMonitor.open(root=root, excluded_names=[".git"], skip_folders=[], ignore=[])
    try:
        monitor.started(key="check")
        os.chmod(root / "tool.sh", 0o644)
        assert monitor.ended(key="check") == ["tool.sh"]
        monitor.started(key="later")
        assert monitor.ended(key="later") == []  # the state was brought up to date
    finally:
        monitor.close()


def test_a_copy_holds_only_the_listed_files(tmp_path: Path) -> None:
    root = tmp_path / "project"
    _project(root)
    (root / "ignored.log").write_text("not part of the state\n")
    workspace = make_workspace(root=root, paths=["README.md", "src/a.py"], method="copy")
    try:
        assert sorted(_snapshot(workspace.path)) == ["README.md", "src/a.py"]
        assert workspace.changes() == []
    finally:
        workspace.remove()


def test_the_watcher_reports_what_was_touched_since_the_last_look(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    (root / "a").mkdir(parents=True)
    (root / "a" / "x.txt").write_text("1")
    (root / "b.txt").write_text("2")
    watcher = TreeWatcher.open(root=str(root), folders=["a"])
    assert watcher is not None
    try:
        assert watcher.touched() == set()
        (root / "a" / "x.txt").write_text("changed")
        (root / "b.txt").unlink()
        (root / "new" / "deeper").mkdir(parents=True)
        (root / "new" / "deeper" / "n.txt").write_text("n")
        assert watcher.touched() == {"a/x.txt", "b.txt", "new/deeper/n.txt"}
        (root / "new" / "deeper" / "later.txt").write_text("watched since it appeared")
        os.rename(root / "a", root / "a2")
        assert watcher.touched() == {"new/deeper/later.txt", "a", "a2", "a2/x.txt"}
        assert watcher.touched() == set()
    finally:
        watcher.close()


def _give(path: Path, *, uid: int, gid: int) -> None:
    os.chown(path, uid, gid)
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_a_user_who_is_not_root_gets_an_overlay_in_a_user_namespace() -> None:
    # eb run by an unprivileged user: the overlay is entered through a user namespace. The
    # commands are run here as `nobody`, exactly as that user's eb would run them.
    nobody = pwd.getpwnam("nobody")
    ids = {"uid": nobody.pw_uid, "gid": nobody.pw_gid}

    def as_nobody() -> None:
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)

    folder = Path(tempfile.mkdtemp(prefix="eb-userns-"))
    try:
        folder.chmod(0o755)
        probe = folder / "probe"
        probe.mkdir()
        command = probe_command(namespace="user", scratch=probe)
        _give(probe, **ids)
        done = subprocess.run(command, capture_output=True, preexec_fn=as_nobody, timeout=30)
        assert (done.returncode, done.stdout) == (0, b"y\n"), done.stderr

        root = folder / "project"
        paths = _project(root)
        _give(root, **ids)
        before = _snapshot(root)
        workspace = make_workspace(root=root, paths=paths, method="overlay", namespace="user")
        try:
            _give(workspace.scratch, **ids)
            seen = subprocess.run(
                workspace.wrap(["sh", "-c", f"cat README.md; id -u; {EDIT}"]),
                cwd=workspace.cwd,
                capture_output=True,
                text=True,
                preexec_fn=as_nobody,
                timeout=30,
            )
            assert seen.returncode == 0, seen.stderr
            assert seen.stdout == "read me\n0\n"  # root inside its own namespace only
            assert workspace.changes() == [
                Change(path="README.md", kind="changed"),
                Change(path="gone.txt", kind="removed"),
                Change(path="link", kind="added"),
                Change(path="src/deep/new.txt", kind="added"),
            ]
            # Outside, what it wrote is the user's own.
            assert (workspace.scratch / "upper" / "README.md").stat().st_uid == nobody.pw_uid
        finally:
            workspace.remove()
        assert _snapshot(root) == before
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)
