"""Read-only git observation for the result document: commits and the dirty-tree digest.

Every command runs with the null device as stdin, no optional locks (an observer must not
rewrite the index), git's strict stat comparison whatever the repository's config says (the
project state's `command`: a judge that told git to trust only size and whole seconds must
not hide a same-size edit from the digest), and its output is streamed into the digest
instead of held in memory.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import IO

from eval_banana.projectstate.git import command

DIRTY_TREE_ALGORITHM = "eb-git-status-v2-sha256"
_CHUNK = 1 << 16

# `git diff` output otherwise depends on the user's config (external diff tools, textconv
# filters, forced colour); these flags keep the digest a function of the tree alone. With
# git's default config the bytes are the same as without them.
_DIFF_FLAGS = ("--no-ext-diff", "--no-textconv", "--no-color")


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    return env


def _stream(*, args: list[str], cwd: Path, sink: Callable[[bytes], object]) -> bool:
    """Run `git <args>`, feed stdout (UTF-8, invalid bytes replaced) to `sink`; True on exit 0."""
    try:
        process = subprocess.Popen(
            command(args=args),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_git_env(),
        )
    except OSError:
        return False
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    assert process.stdout is not None
    stdout: IO[bytes] = process.stdout
    with stdout:
        for block in iter(lambda: stdout.read(_CHUNK), b""):
            sink(decoder.decode(block).encode("utf-8"))
        sink(decoder.decode(b"", final=True).encode("utf-8"))
    return process.wait() == 0


def git_commit(*, cwd: Path) -> str | None:
    """`git rev-parse HEAD` trimmed, or None when git cannot answer (no repo, no commit, no git)."""
    parts: list[bytes] = []
    if not _stream(args=["rev-parse", "HEAD"], cwd=cwd, sink=parts.append):
        return None
    commit = b"".join(parts).decode("utf-8").strip()
    return commit or None


def dirty_tree_digest(*, cwd: Path) -> str | None:
    """`sha256:` of status ‖ NUL ‖ diff ‖ NUL ‖ cached; None when `git status` fails."""
    digest = hashlib.sha256()
    if not _stream(args=["status", "--porcelain"], cwd=cwd, sink=digest.update):
        return None
    for args in (["diff", *_DIFF_FLAGS], ["diff", "--cached", *_DIFF_FLAGS]):
        digest.update(b"\x00")
        # A failing diff counts as empty output: keep the state from before it started.
        before = digest.copy()
        if not _stream(args=args, cwd=cwd, sink=digest.update):
            digest = before
    return f"sha256:{digest.hexdigest()}"


def observe_git(*, cwd: Path) -> dict[str, str | None]:
    """`commit`, `dirty_tree_digest` and `dirty_tree_algorithm` of the repository at `cwd`."""
    digest = dirty_tree_digest(cwd=cwd)
    return {
        "commit": git_commit(cwd=cwd),
        "dirty_tree_digest": digest,
        "dirty_tree_algorithm": DIRTY_TREE_ALGORITHM if digest is not None else None,
    }
