"""What differs between a git revision and the work tree, against real repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from eval_banana.projectstate.git import NotARepository
from eval_banana.projectstate.revision import Comparison, UnknownRevision, changes_since
from tests.gitrepo import commit_all, git, init_repo, write


@pytest.fixture(autouse=True)
def _no_repository_above(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def repo(tmp_path: Path) -> Path:
    return init_repo(
        tmp_path / "repo",
        {
            ".gitignore": "out/\n",
            "committed.txt": "1\n",
            "staged.txt": "1\n",
            "unstaged.txt": "1\n",
            "deleted.txt": "1\n",
            "same.txt": "1\n",
            "sub/inner.txt": "1\n",
        },
    )


def test_every_kind_of_change_since_a_revision_counts(tmp_path: Path) -> None:
    root = repo(tmp_path)
    base = git(root, "rev-parse", "HEAD").strip()
    (root / "committed.txt").write_text("2\n")
    commit_all(root)
    (root / "staged.txt").write_text("2\n")
    git(root, "add", "staged.txt")
    (root / "unstaged.txt").write_text("2\n")
    (root / "deleted.txt").unlink()
    write(root, {"untracked.txt": "new\n", "out/ignored.txt": "x\n"})
    found = changes_since(root=str(root), revision=base)
    assert found.commit == base
    assert found.diff.changed == ("committed.txt", "staged.txt", "unstaged.txt")
    assert found.diff.removed == ("deleted.txt",)
    assert found.diff.added == ("untracked.txt",)
    assert found.ignored == []
    assert changes_since(root=str(root), revision=base, with_ignored=True).ignored == [
        "out/ignored.txt"
    ]


def test_a_change_undone_and_a_touch_are_no_change(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "same.txt").write_text("2\n")
    (root / "same.txt").write_text("1\n")
    (root / "committed.txt").touch()
    assert not changes_since(root=str(root), revision="HEAD").diff


def test_prefixes_and_a_subfolder_root(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "sub/inner.txt").write_text("2\n")
    (root / "committed.txt").write_text("2\n")
    narrowed = changes_since(root=str(root), revision="HEAD", prefixes=["sub"])
    assert narrowed.diff.changed == ("sub/inner.txt",)
    inside = changes_since(root=str(root / "sub"), revision="HEAD")
    assert inside.diff.changed == ("inner.txt",)
    assert not changes_since(root=str(root), revision="HEAD", prefixes=[]).diff


def test_eb_folders_never_count(tmp_path: Path) -> None:
    root = repo(tmp_path)
    write(root, {".eval-banana/results/r/report.json": "{}", "keep.txt": "k\n"})
    found = changes_since(root=str(root), revision="HEAD", skip_folders=[".eval-banana/results"])
    assert found.diff.added == ("keep.txt",)


def test_unknown_revisions_and_plain_folders_are_refused(tmp_path: Path) -> None:
    root = repo(tmp_path)
    for bad in ("no-such-branch", "-x", "", "HEAD~5"):
        with pytest.raises(UnknownRevision):
            changes_since(root=str(root), revision=bad)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NotARepository):
        changes_since(root=str(plain), revision="HEAD")


def test_many_prefixes_are_filtered_after_a_whole_tree_comparison(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", {f"d{i:02d}/f.txt": "1\n" for i in range(40)})
    for i in (3, 33):
        (root / f"d{i:02d}/f.txt").write_text("2\n")
    found = changes_since(
        root=str(root), revision="HEAD", prefixes=[f"d{i:02d}" for i in range(30)]
    )
    assert found.diff.changed == ("d03/f.txt",)


def test_what_the_index_holds_is_weighed_against_the_work_tree(tmp_path: Path) -> None:
    # git compares the revision with the index, then the index with the work tree: a path
    # must come out by what the revision and the work tree hold, whatever the index says.
    root = repo(tmp_path)
    (root / "fleeting.txt").write_text("added, then gone\n")
    git(root, "add", "fleeting.txt")
    (root / "fleeting.txt").unlink()  # in the index only: nothing changed against HEAD
    git(root, "rm", "-q", "--cached", "committed.txt")  # untracked now, still in the tree
    git(root, "rm", "-q", "deleted.txt")  # gone from the index and the tree
    (root / "staged.txt").write_text("2\n")
    git(root, "add", "staged.txt")
    (root / "staged.txt").write_text("1\n")  # back to HEAD's content, still staged as 2
    found = changes_since(root=str(root), revision="HEAD")
    assert found.diff.added == ()
    assert found.diff.removed == ("deleted.txt",)
    # A staged change counts even when the work tree went back: at worst a check too many.
    assert found.diff.changed == ("committed.txt", "staged.txt")


def test_a_comparison_started_for_the_whole_root_keeps_what_finish_asks_for(
    tmp_path: Path,
) -> None:
    root = repo(tmp_path)
    (root / "sub/inner.txt").write_text("2\n")
    (root / "committed.txt").write_text("2\n")
    write(root, {"out/ignored.txt": "x\n", "sub/new.txt": "n\n"})
    started = Comparison.start(root=str(root), revision="HEAD")
    try:
        found = started.finish(prefixes=["sub"], with_ignored=True)
    finally:
        started.close()
    assert found == changes_since(root=str(root), revision="HEAD", prefixes=["sub"])
    assert found.diff.changed == ("sub/inner.txt",) and found.diff.added == ("sub/new.txt",)
    whole = Comparison.start(root=str(root), revision="HEAD")
    try:
        assert whole.finish(prefixes=None, with_ignored=True).ignored == ["out/ignored.txt"]
    finally:
        whole.close()


def test_an_unknown_revision_is_refused_by_a_started_comparison_too(tmp_path: Path) -> None:
    root = repo(tmp_path)
    for bad in ("no-such-branch", "-x", ""):
        started = Comparison.start(root=str(root), revision=bad)
        processes = list(started._processes.values())
        assert processes  # the walk of the work tree was started all the same
        with pytest.raises(UnknownRevision):
            started.finish(prefixes=None)
        started.close()
        assert all(process.returncode is not None for process in processes)


def test_a_conflicted_file_of_a_project_below_the_top_is_changed_not_removed(
    tmp_path: Path,
) -> None:
    # git names an unmerged path from the repository's top; whether it is still there must be
    # asked there too, not at the project-relative path.
    root = init_repo(tmp_path / "repo", {"proj/f.txt": "base\n", "proj/g.txt": "g\n"})
    git(root, "checkout", "-q", "-b", "other")
    (root / "proj/f.txt").write_text("other\n")
    (root / "proj/g.txt").write_text("other g\n")
    commit_all(root)
    git(root, "checkout", "-q", "-")
    (root / "proj/f.txt").write_text("mine\n")
    git(root, "rm", "-q", "proj/g.txt")
    commit_all(root)
    base = git(root, "rev-parse", "HEAD").strip()
    merged = subprocess.run(["git", "merge", "-q", "other"], cwd=root, capture_output=True)
    assert merged.returncode != 0  # both files conflict
    found = changes_since(root=str(root / "proj"), revision=base)
    # Both are still in the work tree: f.txt with conflict markers, g.txt (deleted here,
    # changed there) as their version. An unmerged path counts as changed.
    assert found.diff.changed == ("f.txt", "g.txt")
    assert found.diff.removed == ()


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_a_file_git_is_told_not_to_look_at_counts_by_its_bytes(tmp_path: Path, flag: str) -> None:
    root = repo(tmp_path)
    git(root, "update-index", flag, "unstaged.txt", "same.txt", "deleted.txt")
    (root / "unstaged.txt").write_text("2\n")
    (root / "same.txt").touch()
    (root / "deleted.txt").unlink()
    found = changes_since(root=str(root), revision="HEAD")
    assert found.diff.changed == ("unstaged.txt",)
    assert found.diff.removed == ("deleted.txt",)


def test_files_a_sparse_checkout_leaves_out_are_removed(tmp_path: Path) -> None:
    root = repo(tmp_path)
    git(root, "sparse-checkout", "set", "--no-cone", "/sub/", "/*.txt")
    assert not (root / ".gitignore").exists()
    found = changes_since(root=str(root), revision="HEAD")
    assert found.diff == ((), (".gitignore",), ())
