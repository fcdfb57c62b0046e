"""Which of some project files git tracks: the files that identify a commit, as against build
outputs and other files git ignores or was never told of (`eb merge` compares only those)."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from pathlib import Path

from eval_banana.projectstate import git


def tracked_among(*, root: str | Path, paths: Sequence[str]) -> frozenset[str] | None:
    """Those of the project-relative `paths` git's index holds (deleted from the work tree or
    not), or None when `root` is in no git work tree."""
    top = str(root)
    try:
        repo = git.find_repository(root=top)
    except git.NotARepository:
        return None
    if not paths:
        return frozenset()
    # As git spells them (`./out/o.json` is `out/o.json`), each asked for by itself alone.
    spelled = {path: posixpath.normpath(path) for path in paths}
    spec = ["--", *(f":(literal){repo.prefix}{path}" for path in sorted(set(spelled.values())))]
    listed = git.run(args=["ls-files", "-z", "--full-name", *spec], cwd=repo.top, what="ls-files")
    found = frozenset(git.split_paths(output=listed, repo=repo))
    return frozenset(path for path, name in spelled.items() if name in found)
