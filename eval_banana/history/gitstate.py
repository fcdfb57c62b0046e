"""The commit a run's project was at, and whether tracked files differed from it."""

from __future__ import annotations

from eval_banana.core.errors import ProjectStateError
from eval_banana.history.record import GitState
from eval_banana.projectstate import git


def observe(*, root: str) -> GitState | None:
    """HEAD and the dirty flag of the work tree holding `root`; None outside a work tree or
    before the first commit. Untracked files are not counted: eb's own outputs are untracked
    in most projects and would mark every run dirty."""
    try:
        repo = git.find_repository(root=root)
        commit = git.run(
            args=["rev-parse", "--verify", "-q", "HEAD"], cwd=repo.top, what="rev-parse"
        )
        status = git.run(
            args=["status", "--porcelain", "-z", "--untracked-files=no", "--ignore-submodules"],
            cwd=repo.top,
            what="status",
        )
    except (git.NotARepository, ProjectStateError):
        return None
    head = commit.decode("ascii", "replace").strip()
    return GitState(commit=head, dirty=bool(status)) if head else None
