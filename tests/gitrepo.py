"""Real git repositories for tests: init, commit, and git's own view to compare against."""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(
        [*GIT, *args], cwd=repo, input=stdin, capture_output=True, check=True, timeout=60
    )
    return done.stdout.decode("utf-8", "surrogateescape")


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def init_repo(root: Path, files: dict[str, str | bytes], *, message: str = "init") -> Path:
    """A repository holding `files`, all committed."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    write(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    return root


def commit_all(root: Path, message: str = "change") -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def hash_object(root: Path, relative: str) -> str:
    """git's blob id of a work-tree file, as `git hash-object` computes it (no filters)."""
    return git(root, "hash-object", "--no-filters", relative).strip()
