"""The project state against real git repositories and plain folders: ids, file sets, digests."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from eval_banana.projectstate.blobs import blob_id, file_blob_id
from eval_banana.projectstate.patterns import InputPatterns
from eval_banana.projectstate.reading import read_project_state
from eval_banana.projectstate.state import ProjectState
from eval_banana.projectstate.walking import every_file
from tests.gitrepo import GIT, commit_all, git, hash_object, init_repo, write


@pytest.fixture(autouse=True)
def _no_repository_above(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # "Not a git repository" must not depend on where the temporary folder happens to be.
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


FILES: dict[str, str | bytes] = {
    "README.md": "# project\n",
    "src/app.py": "print('hi')\n",
    "src/lib/util.py": "x = 1\n",
    "data/blob.bin": bytes(range(256)) * 40,
    "empty.txt": "",
    ".gitignore": "out/\n*.log\nnode_modules/\n",
}


def state(root: Path, **kwargs: object) -> ProjectState:
    return read_project_state(root=root, **kwargs)  # type: ignore[arg-type]


# --- blob ids ------------------------------------------------------------------------------


def test_blob_ids_are_the_ids_git_computes(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", FILES)
    for relative in FILES:
        assert file_blob_id(path=str(root / relative)) == hash_object(root, relative), relative
    assert blob_id(data=b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def test_a_large_file_is_hashed_in_blocks_to_the_same_id(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", {"big.bin": os.urandom(9 * 1024 * 1024 + 7)})
    assert file_blob_id(path=str(root / "big.bin")) == hash_object(root, "big.bin")


def test_a_symbolic_link_counts_by_its_target_as_git_stores_it(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", {"target.txt": "content\n"})
    os.symlink("target.txt", root / "link")
    commit_all(root)
    listed = git(root, "ls-files", "-s", "link").split()[1]
    assert state(root).files["link"] == listed == blob_id(data=b"target.txt")


# --- git: what counts, and where ids come from ----------------------------------------------


def test_committed_files_take_their_ids_from_the_index(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", FILES)
    found = state(root)
    assert found.source == "git"
    assert dict(found.files) == {rel: hash_object(root, rel) for rel in FILES}
    # A file git vouches for is never opened: an unreadable one still gets the index's id.
    (root / "src/app.py").chmod(0)
    try:
        assert state(root).files["src/app.py"] == found.files["src/app.py"]
    finally:
        (root / "src/app.py").chmod(0o644)


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_a_file_git_is_told_not_to_look_at_is_read_from_the_work_tree(
    tmp_path: Path, flag: str
) -> None:
    root = init_repo(tmp_path / "repo", FILES)
    before = state(root)
    git(root, "update-index", flag, "src/app.py")
    (root / "src/app.py").write_text("print('changed without git noticing')\n")
    assert git(root, "diff-files", "--name-only") == ""  # git does not see it
    after = state(root)
    assert after.files["src/app.py"] == hash_object(root, "src/app.py")
    assert after.diff(before).changed == ("src/app.py",)
    (root / "src/app.py").unlink()
    assert "src/app.py" not in state(root).files  # gone, as a deleted file is


def test_files_a_sparse_checkout_leaves_out_are_not_in_the_project(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", FILES)
    git(root, "sparse-checkout", "set", "--no-cone", "/src/", "/README.md")
    assert not (root / "data/blob.bin").exists()
    assert set(state(root).files) == {"README.md", "src/app.py", "src/lib/util.py"}


def test_staged_unstaged_untracked_ignored_deleted_and_renamed(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", FILES)
    (root / "src/app.py").write_text("print('staged')\n")
    git(root, "add", "src/app.py")
    (root / "README.md").write_text("# unstaged edit\n")
    write(root, {"new.txt": "untracked\n", "out/result.json": "{}\n", "debug.log": "x\n"})
    (root / "empty.txt").unlink()
    git(root, "mv", "src/lib/util.py", "src/lib/helpers.py")
    found = state(root)
    files = dict(found.files)
    assert files["src/app.py"] == hash_object(root, "src/app.py")
    assert files["README.md"] == hash_object(root, "README.md")
    assert files["new.txt"] == hash_object(root, "new.txt")
    assert files["src/lib/helpers.py"] == hash_object(root, "src/lib/helpers.py")
    for gone in ("empty.txt", "src/lib/util.py", "out/result.json", "debug.log"):
        assert gone not in files, gone
    assert found.ignored == []  # only listed when asked for
    with_ignored = state(root, include_ignored=True)
    assert with_ignored.ignored == ["debug.log", "out/result.json"]
    assert dict(with_ignored.files) == files


def test_the_same_content_has_the_same_id_whatever_git_thinks_of_it(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", {"committed.txt": "same bytes\n"})
    write(root, {"untracked.txt": "same bytes\n", "staged.txt": "same bytes\n"})
    git(root, "add", "staged.txt")
    (root / "modified.txt").write_text("other\n")
    commit_all(root)
    (root / "modified.txt").write_text("same bytes\n")
    write(root, {"untracked.txt": "same bytes\n"})
    ids = state(root).files
    assert len({ids[name] for name in ("committed.txt", "staged.txt", "modified.txt")}) == 1
    assert ids["untracked.txt"] == ids["committed.txt"]


def test_a_touched_file_keeps_its_id_and_the_digest(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", FILES)
    before = state(root)
    stamp = (root / "src/app.py").stat().st_mtime + 100
    os.utime(root / "src/app.py", (stamp, stamp))
    assert git(root, "diff-files", "--name-only") == "src/app.py\n"  # git sees it as stat-dirty
    after = state(root)
    assert after.digest() == before.digest()
    assert not before.diff(after)


# A file-system monitor hook (protocol 2) that says nothing changed since its last answer.
SILENT_FSMONITOR = "#!/bin/sh\nprintf 'token\\0'\n"


@pytest.mark.parametrize("blinded", ["stat", "fsmonitor"])
def test_an_edit_the_repository_s_config_hides_from_git_is_still_read(
    tmp_path: Path, blinded: str
) -> None:
    # A check or a judge can write .git/config, which nothing watches. `stat`: git told to
    # compare only the size and the whole seconds of the modification time, and an edit of the
    # same size with its times put back; `fsmonitor`: a hook that reports no change at all.
    root = init_repo(tmp_path / "repo", FILES)
    app = root / "src/app.py"
    os.utime(app, (1577836800, 1577836800))  # 2020: older than the index, never racily clean
    git(root, "update-index", "--refresh")
    if blinded == "stat":
        git(root, "config", "core.trustctime", "false")
        git(root, "config", "core.checkStat", "minimal")
    else:
        hook = tmp_path / "fsmonitor.sh"
        hook.write_text(SILENT_FSMONITOR)
        hook.chmod(0o755)
        git(root, "config", "core.fsmonitor", str(hook))
        git(root, "config", "core.fsmonitorHookVersion", "2")
        git(root, "status")  # writes the hook's token into the index: trusted from now on
    before = state(root)
    # git compares whole seconds of the status-change time, which no one can set back: the
    # edit comes in a later second than the one the index noted.
    time.sleep(1.02 - time.time() % 1)
    times = app.stat()
    app.write_text("print('HI')\n")
    os.utime(app, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert git(root, "diff-files", "--name-only") == ""  # git, as configured, sees nothing
    after = state(root)
    assert after.files["src/app.py"] == hash_object(root, "src/app.py")
    assert after.diff(before).changed == ("src/app.py",)


def test_eb_folders_and_a_subfolder_root(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", {"proj/a.txt": "a\n", "other/b.txt": "b\n"})
    write(root, {"proj/.eval-banana/results/r1/report.json": "{}", "proj/cache/x/e.json": "{}"})
    found = state(root / "proj", skip_folders=[".eval-banana/results", root / "proj" / "cache"])
    assert dict(found.files) == {"a.txt": hash_object(root, "proj/a.txt")}


CONFIG_STAGE = '{"$schema": "https://eval-banana.dev/schemas/stages/config.schema.json"}'
MARK = "eval-banana folder: cache\n"


@pytest.mark.parametrize("where", ["no repository", "untracked", "committed", "ignored"])
def test_a_folder_eb_wrote_never_counts_wherever_it_lies(tmp_path: Path, where: str) -> None:
    # No setting names these: a run folder sent elsewhere, a cache folder a setting left.
    eb_files: dict[str, str | bytes] = {
        "ci-out/r1/stages/config.json": CONFIG_STAGE,
        "ci-out/r1/checks/a.result.json": "{}",
        "deep/old-cache/.eval-banana-folder": MARK,
        "deep/old-cache/entries/ab/e.json": "{}",
    }
    # Look-alikes stay the project's: another tool's stages/config.json, a file by the name.
    own: dict[str, str | bytes] = {
        "a.txt": "a\n",
        "tool/stages/config.json": '{"$schema": "other"}',
        "notes/.eval-banana-folder": "mine\n",
    }
    root = tmp_path / "repo"
    if where == "no repository":
        write(root, {**own, **eb_files})
    else:
        ignore = {".gitignore": "ci-out/\ndeep/\n"} if where == "ignored" else {}
        init_repo(root, {**own, **ignore, **(eb_files if where == "committed" else {})})
        write(root, eb_files)
    found = state(root, include_ignored=True)
    expected = {*own, *([".gitignore"] if where == "ignored" else [])}
    assert set(found.files) == expected
    assert found.ignored == []
    assert found.select(patterns=InputPatterns(["**/*.json"])) == ["tool/stages/config.json"]
    # What a judge sees of the project (git's own folder aside).
    assert {path for path in every_file(root=root) if not path.startswith(".git/")} == expected
    # Narrowed to a path inside one, the state holds nothing.
    assert not state(root, prefixes=["ci-out/r1/checks"])


def test_a_submodule_counts_by_the_commit_it_records(tmp_path: Path) -> None:
    inner = init_repo(tmp_path / "inner", {"x.txt": "x\n"})
    root = init_repo(tmp_path / "repo", {"a.txt": "a\n"})
    git(root, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(inner), "sub")
    commit_all(root)
    assert state(root).files["sub"] == git(inner, "rev-parse", "HEAD").strip()


def test_a_dirty_submodule_still_counts_by_the_commit_it_records(tmp_path: Path) -> None:
    inner = init_repo(tmp_path / "inner", {"data.txt": "good\n", "notes.txt": "n\n"})
    # Entries sort before the submodule, so it is not the index's first.
    root = init_repo(tmp_path / "repo", {"a.txt": "a\n", "b.txt": "b\n"})
    git(root, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(inner), "sub")
    commit_all(root)
    (root / "sub/notes.txt").write_text("a local edit\n")  # git now reports `sub` as modified
    assert git(root, "diff-files", "--name-only") == "sub\n"
    first = state(root)
    assert first.files["sub"] == git(root, "rev-parse", "HEAD:sub").strip()
    (root / "sub/data.txt").write_text("bad\n")
    git(root / "sub", "commit", "-q", "-am", "a new submodule commit")
    commit_all(root, "record the new submodule commit")
    second = state(root)
    assert second.files["sub"] == git(root, "rev-parse", "HEAD:sub").strip()
    assert second.diff(first).changed == ("sub",) and second.digest() != first.digest()


def test_a_merge_conflict_is_read_from_the_work_tree(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", {"f.txt": "base\n"})
    git(root, "checkout", "-q", "-b", "other")
    (root / "f.txt").write_text("other\n")
    commit_all(root)
    git(root, "checkout", "-q", "-")
    (root / "f.txt").write_text("mine\n")
    commit_all(root)
    assert git_allowing_failure(root, "merge", "-q", "other") != 0  # a conflict
    assert state(root).files["f.txt"] == hash_object(root, "f.txt")


def _set_mtime_later(path: Path) -> None:
    stamp = path.stat().st_mtime + 100
    os.utime(path, (stamp, stamp))


def test_a_file_git_converts_counts_by_its_work_tree_bytes(tmp_path: Path) -> None:
    root = init_repo(
        tmp_path / "repo",
        {".gitattributes": "*.txt text eol=crlf\n", "a.txt": b"one\r\n", "b.bin": b"x\r\n"},
    )
    before = state(root)
    # The index holds "one\n"; the file, and so the id, holds what a check reads.
    assert before.files["a.txt"] == blob_id(data=b"one\r\n") != git(root, "rev-parse", ":a.txt")
    assert before.files["b.bin"] == git(root, "rev-parse", ":b.bin").strip()  # from the index
    _set_mtime_later(root / "a.txt")  # stat-dirty for git, the same bytes
    assert state(root).digest() == before.digest()


def test_line_endings_git_would_convert_back_still_count(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", {"a.txt": "one\n"})
    git(root, "config", "core.autocrlf", "true")
    before = state(root)
    (root / "a.txt").write_bytes(b"one\r\n")
    git(root, "add", "a.txt")  # the index is fresh and holds "one\n" as before
    after = state(root)
    assert after.files["a.txt"] == blob_id(data=b"one\r\n")
    assert after.diff(before).changed == ("a.txt",)


def test_a_clean_filter_counts_the_bytes_it_filters(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "filter.fix.clean", "sed s/bad!/good/")
    git(root, "config", "filter.fix.smudge", "cat")
    write(root, {".gitattributes": "data.txt filter=fix\n", "data.txt": "good\n"})
    commit_all(root)
    before = state(root)
    _set_mtime_later(root / "data.txt")
    assert state(root).digest() == before.digest()  # touched: no change
    (root / "data.txt").write_text("bad!\n")
    git(root, "status")  # git's index is fresh: the filtered bytes are what it holds
    after = state(root)
    assert after.files["data.txt"] == blob_id(data=b"bad!\n")
    assert after.diff(before).changed == ("data.txt",)


def test_without_attributes_or_autocrlf_no_file_is_asked_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = init_repo(tmp_path / "repo", FILES)
    started = _started_git_commands(monkeypatch)
    state(root)
    assert "check-attr" not in started
    write(root, {"src/.gitattributes": "*.py text\n"})
    assert state(root).files["src/app.py"] == hash_object(root, "src/app.py")


def git_allowing_failure(root: Path, *args: str) -> int:
    return subprocess.run([*GIT, *args], cwd=root, capture_output=True).returncode


# --- outside git ----------------------------------------------------------------------------


def test_a_plain_folder_is_walked_outside_the_excluded_folders(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(
        root,
        {
            "a.txt": "a\n",
            "sub/b.txt": "b\n",
            "node_modules/pkg/index.js": "x",
            "deep/node_modules/y.js": "y",
            ".eval-banana/cache/entries/aa/k.json": "{}",
        },
    )
    os.symlink("a.txt", root / "link")
    found = state(root, excluded_names=["node_modules"], skip_folders=[".eval-banana/cache"])
    assert found.source == "walk"
    assert sorted(found.files) == ["a.txt", "link", "sub/b.txt"]
    assert found.files["a.txt"] == blob_id(data=b"a\n")
    assert found.files["link"] == blob_id(data=b"a.txt")


# --- digests, subsets, diffs ----------------------------------------------------------------


def test_digest_and_subsets_follow_content_only(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", FILES)
    first = state(root)
    patterns = InputPatterns(["src/**", "!src/lib/**"])
    assert first.select(patterns=patterns) == ["src/app.py"]
    sub = first.digest_of(paths=first.select(patterns=patterns))
    (root / "src/lib/util.py").write_text("x = 2\n")  # outside the subset
    second = state(root)
    assert second.digest_of(paths=second.select(patterns=patterns)) == sub
    assert second.digest() != first.digest()
    (root / "src/app.py").write_text("print('bye')\n")
    third = state(root)
    assert third.digest_of(paths=third.select(patterns=patterns)) != sub


def test_diff_names_added_removed_and_changed_paths(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", FILES)
    before = state(root)
    (root / "src/app.py").write_text("changed\n")
    (root / "README.md").unlink()
    write(root, {"added.txt": "new\n"})
    diff = before.diff(state(root))
    assert diff.added == ("added.txt",)
    assert diff.removed == ("README.md",)
    assert diff.changed == ("src/app.py",)
    assert diff.paths == {"added.txt", "README.md", "src/app.py"}


# --- modes: the execute bit and the kind of file count ---------------------------------------


def _plain_copy(root: Path, to: Path) -> Path:
    """The work tree of `root` without its `.git`: the same files, modes and links."""
    shutil.copytree(root, to, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    return to


def _git_modes(root: Path) -> dict[str, str]:
    """The modes git records in the index for the entries that are no regular file."""
    records = git(root, "ls-files", "-s").splitlines()
    found = {line.split("\t")[1]: line.split()[0] for line in records}
    return {path: mode for path, mode in found.items() if mode != "100644"}


def test_git_and_a_walk_give_the_same_modes_and_digest(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", {**FILES, "run.sh": "echo run\n", "tool.sh": "echo\n"})
    (root / "run.sh").chmod(0o755)
    os.symlink("README.md", root / "readme-link")
    commit_all(root)
    (root / "tool.sh").chmod(0o755)  # dirty: git reports it, eb hashes and lstat()s it
    write(root, {"new.sh": "echo new\n"})
    (root / "new.sh").chmod(0o755)  # untracked
    os.symlink("src/app.py", root / "new-link")
    from_git = state(root)
    walked = state(_plain_copy(root, tmp_path / "plain"))
    assert (from_git.source, walked.source) == ("git", "walk")
    expected = {
        "run.sh": "100755",
        "readme-link": "120000",
        "tool.sh": "100755",
        "new.sh": "100755",
        "new-link": "120000",
    }
    assert dict(from_git.modes) == dict(walked.modes) == expected
    git(root, "add", "-A")  # git records what eb read from the work tree
    assert _git_modes(root) == expected
    assert dict(from_git.files) == dict(walked.files)
    assert from_git.digest() == walked.digest()
    paths = ["run.sh", "src/app.py", "new-link"]
    assert from_git.digest_of(paths=paths) == walked.digest_of(paths=paths)


@pytest.mark.parametrize("where", ["git", "walk"])
def test_a_chmod_changes_the_digest_and_is_a_change(tmp_path: Path, where: str) -> None:
    files = {"build.sh": "#!/bin/sh\necho built\n", "other.txt": "x\n"}
    root = init_repo(tmp_path / "repo", files) if where == "git" else tmp_path / "plain"
    write(root, files)
    (root / "build.sh").chmod(0o755)
    if where == "git":
        commit_all(root)
    before = state(root)
    assert before.source == where and before.mode_of("build.sh") == "100755"
    (root / "build.sh").chmod(0o644)
    after = state(root)
    assert after.files == before.files  # the same bytes: only the mode says it changed
    assert after.mode_of("build.sh") == "100644"
    assert after.digest() != before.digest()
    assert after.digest_of(paths=["build.sh"]) != before.digest_of(paths=["build.sh"])
    assert after.digest_of(paths=["other.txt"]) == before.digest_of(paths=["other.txt"])
    assert before.diff(after).changed == ("build.sh",)
    (root / "build.sh").chmod(0o755)
    assert state(root).digest() == before.digest()


@pytest.mark.parametrize("file_mode", ["false", "true"])
def test_core_filemode_false_leaves_the_executable_bit_out_as_git_does(
    tmp_path: Path, file_mode: str
) -> None:
    """A file system without executable bits (git sets core.fileMode false there) shows every
    file executable: git keeps the mode its index lists, so eb does too for an edited file and
    a new one; a chmod alone is then no change, where core.fileMode true counts it."""
    root = init_repo(tmp_path / "repo", {"tool.sh": "echo one\n", "other.txt": "x\n"})
    git(root, "config", "core.fileMode", file_mode)
    write(root, {"tool.sh": "echo two\n", "new.sh": "echo new\n"})  # edited, and a new file
    plain = state(root)
    (root / "tool.sh").chmod(0o755)
    (root / "new.sh").chmod(0o755)
    chmodded = state(root)
    assert chmodded.files == plain.files
    if file_mode == "false":
        assert (chmodded.mode_of("tool.sh"), chmodded.mode_of("new.sh")) == ("100644", "100644")
        assert chmodded.digest() == plain.digest() and not plain.diff(chmodded).changed
        # What git records when both are committed: the same modes, the same digest.
        commit_all(root)
        assert git(root, "ls-files", "-s", "tool.sh", "new.sh").split()[::4] == ["100644"] * 2
        assert state(root).digest() == plain.digest()
    else:
        assert (chmodded.mode_of("tool.sh"), chmodded.mode_of("new.sh")) == ("100755", "100755")
        assert plain.diff(chmodded).changed == ("new.sh", "tool.sh")


@pytest.mark.parametrize("where", ["git", "walk"])
def test_a_file_replaced_by_a_link_holding_the_same_text_is_a_change(
    tmp_path: Path, where: str
) -> None:
    # A file holding `real.txt` and a link to real.txt have the same blob id: git tells them
    # apart by the mode, and so must the state (the check reads other bytes through the link).
    files = {"data.txt": "real.txt", "real.txt": "bad\n"}
    root = init_repo(tmp_path / "repo", files) if where == "git" else tmp_path / "plain"
    write(root, files)
    before = state(root)
    (root / "data.txt").unlink()
    os.symlink("real.txt", root / "data.txt")
    after = state(root)
    assert after.files["data.txt"] == before.files["data.txt"]
    assert (before.mode_of("data.txt"), after.mode_of("data.txt")) == ("100644", "120000")
    assert after.digest() != before.digest()
    assert after.digest_of(paths=["data.txt"]) != before.digest_of(paths=["data.txt"])
    assert before.diff(after).changed == ("data.txt",)


def test_an_ignored_file_counts_by_its_mode_too(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", {".gitignore": "*.log\n"})
    write(root, {"run.log": "x\n"})
    before = state(root, include_ignored=True).digest_of(paths=["run.log"])
    (root / "run.log").chmod(0o755)
    assert state(root, include_ignored=True).digest_of(paths=["run.log"]) != before


def test_prefixes_narrow_the_state_in_git_and_outside(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", FILES)
    write(root, {"src/new.py": "n\n"})
    assert sorted(state(root, prefixes=["src/lib", "README.md"]).files) == [
        "README.md",
        "src/lib/util.py",
    ]
    plain = tmp_path / "plain"
    write(plain, {k: v for k, v in FILES.items()})
    assert sorted(state(plain, prefixes=["src/lib", "README.md"]).files) == [
        "README.md",
        "src/lib/util.py",
    ]
    assert len(state(root, prefixes=[])) == 0


def test_ignored_files_are_selectable_but_outside_the_state(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo", FILES)
    write(root, {"out/r.json": "{}\n", "node_modules/m/x.json": "{}\n"})
    found = state(root, include_ignored=True, excluded_names=["node_modules"])
    assert "out/r.json" not in found.files
    assert found.select(patterns=InputPatterns(["**/*.json"])) == ["out/r.json"]
    assert found.select(patterns=InputPatterns(["**/*.json"]), include_ignored=False) == []
    assert found.id_of("out/r.json") == hash_object(root, "out/r.json")


def test_many_prefixes_give_the_same_state_as_few(tmp_path: Path) -> None:
    # Past git.MAX_PATHSPECS the whole tree is asked for and filtered: the answer is the same.
    files: dict[str, str | bytes] = {f"d{i:02d}/f.txt": f"{i}\n" for i in range(40)}
    root = init_repo(tmp_path / "repo", {**files, ".gitignore": "out/\n"})
    write(root, {"d03/new.txt": "n\n", "d05/out/x.json": "{}", "elsewhere.txt": "e\n"})
    (root / "d04/f.txt").write_text("edited\n")
    many = [f"d{i:02d}" for i in range(30)]
    wide = state(root, prefixes=many, include_ignored=True)
    narrow = [state(root, prefixes=[p], include_ignored=True) for p in many]
    assert dict(wide.files) == {k: v for part in narrow for k, v in part.files.items()}
    assert "elsewhere.txt" not in wide.files and "d35/f.txt" not in wide.files
    assert wide.ignored == ["d05/out/x.json"]


# --- prefetching ---------------------------------------------------------------------------


def _started_git_commands(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The first argument of every git command started from here on."""
    from eval_banana.projectstate import git as git_module

    started: list[str] = []
    real_start = git_module.start

    def start(*, args: list[str], cwd: str, stdin: bool = False) -> subprocess.Popen[bytes]:
        started.append(args[0])
        return real_start(args=args, cwd=cwd, stdin=stdin)

    monkeypatch.setattr(git_module, "start", start)
    return started


def test_a_prefetched_state_is_taken_over_by_the_first_whole_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eval_banana.projectstate.prefetch import prefetched_state

    root = init_repo(tmp_path / "repo", FILES)
    (root / "README.md").write_text("# unstaged edit\n")
    write(root, {"new.txt": "untracked\n", "out/result.json": "{}\n"})
    fresh = state(root, include_ignored=True)
    started = _started_git_commands(monkeypatch)
    with prefetched_state(root=root):
        assert sorted(started) == ["diff-files", "ls-files", "rev-parse"]
        started.clear()
        taken = state(root, include_ignored=True)
        # The index, the ignored files and the settings that may convert files only.
        assert sorted(started) == ["config", "ls-files", "ls-files"]
        assert dict(taken.files) == dict(fresh.files) and taken.ignored == fresh.ignored
        started.clear()
        again = state(root)  # used once: a later read starts its own
        assert "diff-files" in started and dict(again.files) == dict(fresh.files)


def test_a_narrow_read_starts_its_own_commands_and_ends_the_prefetched_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eval_banana.projectstate.prefetch import prefetched_state

    root = init_repo(tmp_path / "repo", FILES)
    write(root, {"src/new.py": "y = 2\n", "docs/new.md": "# new\n"})
    with prefetched_state(root=root):
        started = _started_git_commands(monkeypatch)
        narrow = state(root, prefixes=["src"])
        assert "diff-files" in started  # with the prefix as its pathspec
        assert sorted(dict(narrow.files)) == ["src/app.py", "src/lib/util.py", "src/new.py"]
        started.clear()
        whole = state(root)
        assert "diff-files" in started  # nothing left over from the prefetch
        assert "docs/new.md" in dict(whole.files)


def test_a_prefetch_no_read_took_over_never_answers_a_later_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eval_banana.projectstate.prefetch import prefetched_state

    root = init_repo(tmp_path / "repo", FILES)
    with prefetched_state(root=root):
        pass  # the run ended before its keys (a check file did not validate, say)
    (root / "README.md").write_text("# edited after git walked\n")
    started = _started_git_commands(monkeypatch)
    found = state(root)
    assert "diff-files" in started
    assert dict(found.files)["README.md"] == hash_object(root, "README.md")


def test_a_folder_outside_git_is_walked_without_starting_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eval_banana.projectstate.prefetch import prefetched_state

    root = tmp_path / "plain"
    write(root, {"README.md": "# plain\n", "src/a.py": "a = 1\n"})
    started = _started_git_commands(monkeypatch)
    # No `.git` from the folder up: neither the prefetch nor the read asks git anything.
    with prefetched_state(root=root):
        assert started == []
        found = state(root)
    assert started == []
    assert found.source == "walk" and sorted(dict(found.files)) == ["README.md", "src/a.py"]
    assert state(root).source == "walk" and started == []


def test_a_folder_with_git_pointed_elsewhere_still_asks_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIT_DIR can make a folder without `.git` part of a repository: git is asked then.
    root = tmp_path / "plain"
    write(root, {"README.md": "# plain\n"})
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nowhere.git"))
    started = _started_git_commands(monkeypatch)
    assert state(root).source == "walk"
    assert started == ["rev-parse"]


def test_a_walk_hashes_contents_already_read_from_memory(tmp_path: Path) -> None:
    # Discovery reads every check file; a walk of the same project takes their bytes from it.
    root = tmp_path / "proj"
    write(root, {"eval_checks/a.yaml": "id: a\n", "src/b.py": "print(1)\n"})
    os.symlink("a.yaml", root / "eval_checks" / "link.yaml")
    check = str((root / "eval_checks" / "a.yaml").resolve())
    plain = read_project_state(root=root)
    same = read_project_state(root=root, known={check: b"id: a\n"})
    assert same.files == plain.files
    assert plain.files["eval_checks/link.yaml"] == blob_id(data=b"a.yaml")  # a link's own id
    # The bytes given are the ones hashed: the file is not read again.
    told = read_project_state(root=root, known={check: b"id: told\n"})
    assert told.files["eval_checks/a.yaml"] == blob_id(data=b"id: told\n")
    assert told.files["src/b.py"] == plain.files["src/b.py"]


# --- eb's own folders are never walked ------------------------------------------------------


def _git_counted(trace: Path, *, category: str, key: str) -> int:
    """What git's own trace2 counted under `category`/`key`, over every command traced."""
    import json

    events = [json.loads(line) for line in trace.read_text().splitlines()]
    counts = [
        int(event["value"])
        for event in events
        if event.get("category") == category and event.get("key") == key
    ]
    assert counts, f"git reported no {category}/{key} (GIT_TRACE2_EVENT needs git 2.30 or later)"
    return sum(counts)


def _paths_git_visited(trace: Path) -> int:
    """Every path git's walks for untracked files (`ls-files -o`) visited."""
    return _git_counted(trace, category="read_directory", key="paths-visited")


def _repo_with_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A repository with one untracked file and, beside it, a results folder as a few runs
    leave it (600 small files nobody ignores); git traced to the second path returned."""
    root = init_repo(tmp_path / "repo", FILES)
    runs = {f".eval-banana/results/run{n // 50}/checks/c{n}.json": "{}\n" for n in range(600)}
    write(root, {"new.txt": "untracked\n", **runs})
    trace = tmp_path / "trace2.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    return root, trace


def test_git_never_walks_the_folders_eb_skips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Run folders pile up run after run, and a project need not ignore them: listing the
    # untracked files used to walk every one of them, only for eb to drop them afterwards.
    from eval_banana.projectstate.prefetch import prefetched_state

    root, trace = _repo_with_runs(tmp_path, monkeypatch)
    skip = [".eval-banana/results", ".eval-banana/cache"]
    found = state(root, skip_folders=skip, include_ignored=True)
    assert "new.txt" in dict(found.files)
    assert not any(path.startswith(".eval-banana/") for path in dict(found.files))
    assert _paths_git_visited(trace) < 100  # the project's dozen paths, not the 600 files
    trace.unlink()
    started = _started_git_commands(monkeypatch)
    with prefetched_state(root=root, skip_folders=skip):
        started.clear()
        taken = state(root, skip_folders=skip)  # the same folders skipped: taken over
        assert sorted(started) == ["config", "ls-files"]  # no walk of the tree is started
    assert dict(taken.files) == dict(state(root, skip_folders=skip).files)
    assert _paths_git_visited(trace) < 100


def test_a_prefetch_that_skips_other_folders_never_answers_a_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eval_banana.projectstate.prefetch import prefetched_state

    root = init_repo(tmp_path / "repo", FILES)
    write(root, {"out2/kept.txt": "x\n"})
    started = _started_git_commands(monkeypatch)
    with prefetched_state(root=root, skip_folders=["out2"]):
        started.clear()
        found = state(root)  # skips nothing: out2/ counts, so the read walks again
        assert "diff-files" in started
    assert "out2/kept.txt" in dict(found.files)


def test_changed_since_never_walks_the_folders_eb_skips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eval_banana.projectstate.revision import changes_since

    root, trace = _repo_with_runs(tmp_path, monkeypatch)
    changes = changes_since(
        root=str(root), revision="HEAD", skip_folders=[".eval-banana/results"], with_ignored=True
    )
    assert changes.diff.added == ("new.txt",)
    # What `git status` found untracked before eb looked: new.txt, not the 600 files.
    assert _git_counted(trace, category="status", key="count/untracked") < 10


def test_attributes_that_convert_nothing_ask_git_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Many repositories keep a .gitattributes for linguist or diff drivers only: asking git
    # about every path there cost about 9 µs a path on every run.
    root = init_repo(
        tmp_path / "repo",
        {
            **FILES,
            ".gitattributes": "*.lock linguist-generated\n*.png binary\n*.md diff=markdown\n",
        },
    )
    started = _started_git_commands(monkeypatch)
    assert state(root).files["src/app.py"] == hash_object(root, "src/app.py")
    assert "check-attr" not in started
    # The old name of `text` still converts: a CRLF file git stores with LF counts by its bytes.
    write(root, {"src/.gitattributes": "*.py crlf\n"})
    (root / "src" / "app.py").write_bytes(b"print('crlf')\r\n")
    git(root, "add", "-A")
    git(root, "status", "--porcelain")  # the index now vouches for the file's stat
    assert state(root).files["src/app.py"] == hash_object(root, "src/app.py")
    assert "check-attr" in started
