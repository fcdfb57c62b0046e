"""--changed-since REF and --last-failed: which checks run, and runs that select nothing."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cache.rig import script_check
from tests.conftest import EbResult
from tests.gitrepo import commit_all, git, init_repo, write
from tests.processes import eb_process


@pytest.fixture(autouse=True)
def _no_repository_above(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def repo(tmp_path: Path) -> Path:
    """A git project: checks reading src/, docs/, an ignored artifact, and one without inputs."""
    return init_repo(
        tmp_path / "proj",
        {
            ".gitignore": "out/\n.eval-banana/results/\n",
            ".eval-banana/config.toml": "",
            "eval_checks/src.yaml": script_check("src", script="pass\n", inputs=["src/**"]),
            "eval_checks/docs.yaml": script_check("docs", script="pass\n", inputs=["docs/*.md"]),
            "eval_checks/scripted.yaml": script_check(
                "scripted", script_path="../scripts/s.py", inputs=["nothing/**"]
            ),
            "eval_checks/artifact.yaml": script_check(
                "artifact", script="pass\n", inputs=["out/result.json"]
            ),
            "eval_checks/everything.yaml": script_check("everything", script="pass\n"),
            "src/app.py": "print(1)\n",
            "docs/guide.md": "# Guide\n",
            "docs/notes.txt": "not a .md file\n",
            "scripts/s.py": "pass\n",
        },
    )


def listed(eb: Callable[..., EbResult], root: Path, *args: str) -> list[str]:
    result = eb("list", "--cwd", str(root), *args)
    assert result.exit_code == 0, result.stderr
    return sorted(line.split("\t")[0] for line in result.stdout.splitlines() if "\t" in line)


ALWAYS = ["everything"]  # no inputs: nothing says what it reads


def test_nothing_changed_selects_only_checks_without_inputs(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    root = repo(tmp_path)
    assert listed(eb, root, "--changed-since", "HEAD") == ALWAYS


@pytest.mark.parametrize(
    ("change", "selected"),
    [
        ("commit", ["everything", "src"]),
        ("stage", ["everything", "src"]),
        ("edit", ["everything", "src"]),
        ("untracked", ["everything", "src"]),
        ("delete", ["everything", "src"]),
        ("outside-pattern", ["everything"]),
        ("check-file", ["docs", "everything"]),
        ("new-check-file", ["everything", "new"]),
        ("script", ["everything", "scripted"]),
        ("ignored-artifact", ["artifact", "everything"]),
    ],
)
def test_changes_select_the_checks_they_affect(
    tmp_path: Path, eb: Callable[..., EbResult], change: str, selected: list[str]
) -> None:
    root = repo(tmp_path)
    base = git(root, "rev-parse", "HEAD").strip()
    if change == "commit":
        (root / "src/app.py").write_text("print(2)\n")
        commit_all(root)
    elif change == "stage":
        (root / "src/app.py").write_text("print(2)\n")
        git(root, "add", "src/app.py")
    elif change == "edit":
        (root / "src/app.py").write_text("print(2)\n")
    elif change == "untracked":
        write(root, {"src/new_module.py": "x = 1\n"})
    elif change == "delete":
        (root / "src/app.py").unlink()
    elif change == "outside-pattern":
        (root / "docs/notes.txt").write_text("still not .md\n")  # docs/*.md does not match it
    elif change == "check-file":
        path = root / "eval_checks/docs.yaml"
        path.write_text(path.read_text().replace("Script docs.", "Script docs, reworded."))
    elif change == "new-check-file":
        write(root, {"eval_checks/new.yaml": script_check("new", script="pass\n", inputs=["x"])})
    elif change == "script":
        (root / "scripts/s.py").write_text("print('changed')\n")
    elif change == "ignored-artifact":
        write(root, {"out/result.json": "{}\n"})  # git cannot say whether it changed
    assert listed(eb, root, "--changed-since", base) == selected


def test_a_run_with_nothing_affected_passes_with_zero_checks(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    root = repo(tmp_path)
    (root / "eval_checks/everything.yaml").unlink()
    commit_all(root)
    result = eb("run", "--cwd", str(root), "--changed-since", "HEAD")
    assert result.exit_code == 0, result.stderr
    assert "No check was selected: no check's files changed since HEAD." in result.stdout
    run_dir = Path(
        result.stdout.split("Report: ", 1)[1].splitlines()[0].split(" (HTML: ")[0]
    ).parent
    report = json.loads((run_dir / "report.json").read_text())
    assert (report["total_checks"], report["run_passed"]) == (0, True)
    assert "no check's files changed since HEAD" in (run_dir / "report.md").read_text()
    assert "no check&#x27;s files changed since HEAD" in (run_dir / "report.html").read_text()
    config = json.loads((run_dir / "stages/config.json").read_text())
    assert config["selection"]["changed_since"] == "HEAD"
    assert config["selection"]["last_failed"] is False


def test_a_change_only_skipped_checks_read_passes_and_says_they_are_skipped(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    # It said "no check's files changed since HEAD", which was not true: they had, and the
    # checks that read them were skipped.
    root = repo(tmp_path)
    (root / "eval_checks/everything.yaml").unlink()
    for check_id in ("src", "docs"):
        path = root / f"eval_checks/{check_id}.yaml"
        path.write_text(path.read_text() + "skip: broken on CI\n")
    commit_all(root)
    (root / "src/app.py").write_text("print(2)\n")
    one = eb("run", "--cwd", str(root), "--changed-since", "HEAD")
    assert one.exit_code == 0 and "Score: 0/0" in one.stdout, one.stdout + one.stderr
    assert "- src: skipped - broken on CI" in one.stdout
    assert (
        "No check ran: the 1 check whose files changed since HEAD is skipped (skip: in its "
        "check file), and no other check's files changed."
    ) in one.stdout
    assert "no check's files changed" not in one.stdout
    (root / "docs/guide.md").write_text("# Guide, edited\n")
    both = eb("run", "--cwd", str(root), "--changed-since", "HEAD", "--json")
    report = json.loads(both.stdout)
    assert (report["run_passed"], report["skipped_checks"]) == (True, 2)
    assert report["selection_note"] == (
        "No check ran: all 2 checks whose files changed since HEAD are skipped (skip: in their "
        "check files), and no other check's files changed."
    )


def test_an_ordinary_empty_selection_is_still_an_error(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    root = repo(tmp_path)
    result = eb("run", "--cwd", str(root), "--tag", "no-such-tag")
    assert result.exit_code == 2 and "No checks found" in result.stderr


def test_outside_git_and_unknown_revisions_are_setup_errors(
    tmp_path: Path, eb: Callable[..., EbResult], project: Callable[..., Path]
) -> None:
    plain = project({"eval_checks/a.yaml": script_check("a", script="pass\n")})
    result = eb("run", "--cwd", str(plain), "--changed-since", "main")
    assert result.exit_code == 2
    assert "--changed-since needs a git repository" in result.stderr
    root = repo(tmp_path)
    result = eb("list", "--cwd", str(root), "--changed-since", "no-such-ref")
    assert result.exit_code == 2
    assert "'no-such-ref' names no commit" in result.stderr and "hint: fetch" in result.stderr
    as_json = eb("run", "--cwd", str(root), "--changed-since", "no-such-ref", "--json")
    assert json.loads(as_json.stdout)["error"]["kind"] == "selection_error"


@pytest.mark.parametrize(
    ("given", "said", "hint"),
    [
        ("main...HEAD", "is a range of commits", "give the base alone (main)"),
        ("main..HEAD", "is a range of commits", "$(git merge-base main HEAD)"),
        ("HEAD^!", "is a range of commits", "not a range"),
        ("--output=x", "is not a revision name", "git reads a value starting with '-'"),
    ],
)
def test_a_range_or_an_option_is_not_told_to_be_fetched(
    tmp_path: Path, eb: Callable[..., EbResult], given: str, said: str, hint: str
) -> None:
    """A range names two commits, an option none: fetching would not help either."""
    root = repo(tmp_path)
    result = eb("list", "--cwd", str(root), f"--changed-since={given}")
    assert result.exit_code == 2
    assert f"'{given}' {said}" in result.stderr and hint in result.stderr, result.stderr
    assert "fetch" not in result.stderr


def test_a_changed_since_git_cannot_answer_leaves_no_run_folder(
    tmp_path: Path, eb: Callable[..., EbResult], project: Callable[..., Path]
) -> None:
    """Like every other setup error told before any check: no stages/config.json and
    stages/discover.json left in a run folder nothing ran in, for an unknown revision in a real
    repository and for a project outside any."""
    plain = project({"eval_checks/a.yaml": script_check("a", script="pass\n")})
    result = eb("run", "--cwd", str(plain), "--changed-since", "main")
    assert result.exit_code == 2 and "--changed-since needs a git repository" in result.stderr
    assert not (plain / ".eval-banana" / "results").exists()
    root = repo(tmp_path)
    result = eb("run", "--cwd", str(root), "--changed-since", "nosuch")
    assert result.exit_code == 2
    assert "--changed-since nosuch: 'nosuch' names no commit" in result.stderr
    assert "hint: fetch nosuch first" in result.stderr
    assert not (root / ".eval-banana" / "results").exists()
    flat = tmp_path / "flat"
    flat.mkdir()
    result = eb(
        "run", "--cwd", str(root), "--changed-since", "nosuch", "--output-dir", str(flat),
        "--flat-output",
    )  # fmt: skip
    assert result.exit_code == 2 and list(flat.iterdir()) == []


def test_changed_since_without_git_on_path_says_git_cannot_start(tmp_path: Path) -> None:
    root = repo(tmp_path)
    no_git = tmp_path / "bin"
    no_git.mkdir()
    result = eb_process(
        root, "list", "--changed-since", "HEAD", env={**os.environ, "PATH": str(no_git)}
    )
    assert result.returncode == 2
    assert "--changed-since needs git: git cannot be started: " in result.stderr
    assert "hint: install git, or put it on PATH" in result.stderr
    assert "is not inside" not in result.stderr


def test_changed_since_says_what_git_said_when_it_refuses_the_checkout(tmp_path: Path) -> None:
    root = repo(tmp_path)
    refusing = {**os.environ, "GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"}  # git's own test switch
    result = eb_process(root, "list", "--changed-since", "HEAD", env=refusing)
    assert result.returncode == 2
    assert (
        f"--changed-since needs a git repository: git rev-parse in {root} failed: fatal: "
        "detected dubious ownership in repository at" in result.stderr
    )
    assert "is not inside" not in result.stderr


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_a_checkout_another_user_owns_gets_the_safe_directory_hint(tmp_path: Path) -> None:
    """As in a CI container, whose checkout the runner's user made."""
    root = repo(tmp_path)
    for folder, _, names in os.walk(root):
        for name in [".", *names]:
            os.lchown(os.path.join(folder, name), 4321, 4321)
    result = eb_process(root, "list", "--changed-since", "HEAD")
    assert result.returncode == 2
    assert "fatal: detected dubious ownership" in result.stderr
    assert f"git config --global --add safe.directory {root}\n" in result.stderr


def test_relative_git_dir_and_work_tree_are_read_from_where_eb_started(tmp_path: Path) -> None:
    """A bare repository and a work tree named by GIT_DIR/GIT_WORK_TREE (dotfiles style),
    eb started in a subfolder: the relative paths name folders from there, as for git."""
    source = repo(tmp_path)
    git(tmp_path, "clone", "-q", "--bare", str(source), "repo.git")
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    absolute = {**os.environ, "GIT_DIR": str(tmp_path / "repo.git"), "GIT_WORK_TREE": str(tree)}
    subprocess.run(["git", "checkout", "-q", "-f"], cwd=tree, env=absolute, check=True)
    write(tree, {"src/app.py": "print(2)\n"})
    relative = {**os.environ, "GIT_DIR": "../../repo.git", "GIT_WORK_TREE": ".."}
    result = eb_process(tree / "sub", "list", "--changed-since", "HEAD", env=relative)
    assert result.returncode == 0, result.stderr
    ids = sorted(line.split("\t")[0] for line in result.stdout.splitlines() if "\t" in line)
    assert ids == sorted([*ALWAYS, "src"])


# --- --last-failed ---------------------------------------------------------------------------


def failing_project(project: Callable[..., Path]) -> Path:
    return project(
        {
            "eval_checks/ok.yaml": script_check("ok", script="pass\n"),
            "eval_checks/bad.yaml": script_check("bad", script="raise SystemExit(1)\n"),
            # An error (it does not compile); a missing script would refuse the whole run.
            "eval_checks/broken.yaml": script_check("broken", script="x = (\n"),
        }
    )


def run_later(eb: Callable[..., EbResult], root: Path, *args: str) -> EbResult:
    """`eb run` right after the run before it: the newest run is the one created last, even
    within one second (eval_banana.settings.rundir orders runs by their recorded creation time)."""
    return eb("run", "--cwd", str(root), *args)


def ran(result: EbResult) -> list[str]:
    return sorted(
        line[2:].split(":")[0] for line in result.stdout.splitlines() if line.startswith("- ")
    )


def test_last_failed_reruns_the_failures_of_the_newest_earlier_run(
    eb: Callable[..., EbResult], project: Callable[..., Path]
) -> None:
    root = failing_project(project)
    assert ran(run_later(eb, root, "--last-failed")) == ["bad", "broken", "ok"]
    first_config = newest_config(root)
    assert first_config["selection"]["last_failed_run_id"] is None  # there was no earlier run
    again = run_later(eb, root, "--last-failed")
    assert ran(again) == ["bad", "broken"]  # failed and errored
    config = newest_config(root)
    assert config["selection"]["last_failed"] is True
    assert config["selection"]["last_failed_run_id"] == first_config["run_id"]
    assert config["selection"]["last_failed_ids"] == ["bad", "broken"]
    # Fix the failures: the next --last-failed runs them, then (none failed) every check.
    (root / "eval_checks/bad.yaml").write_text(script_check("bad", script="pass\n"))
    (root / "eval_checks/broken.yaml").write_text(script_check("broken", script="pass\n"))
    assert ran(run_later(eb, root, "--last-failed")) == ["bad", "broken"]
    assert ran(run_later(eb, root, "--last-failed")) == ["bad", "broken", "ok"]


def test_last_failed_with_gone_checks_runs_every_check(
    eb: Callable[..., EbResult], project: Callable[..., Path]
) -> None:
    # As pytest: remembered failures that are not among the selected checks select nothing
    # special, so every check runs (or none with --last-failed-none skip). A failure whose
    # check is gone is said to be gone, and the run that says so forgets it.
    root = failing_project(project)
    run_later(eb, root)
    (root / "eval_checks/bad.yaml").unlink()
    (root / "eval_checks/broken.yaml").unlink()
    assert listed(eb, root, "--last-failed") == ["ok"]
    assert listed(eb, root, "--last-failed", "--last-failed-none", "skip") == []
    memory = (root / ".eval-banana/lastfailed.json").read_bytes()
    assert list(_memory(root)["failed"]) == ["bad", "broken"]  # listing forgets nothing
    every = run_later(eb, root, "--last-failed")
    assert ran(every) == ["ok"]
    # It says why it runs every check, rather than one that failed (with judges, that costs).
    said = (
        "warning: --last-failed: the 2 checks remembered as failed (bad, broken) are gone (no "
        "check file defines them now; eb run forgets them), so all 1 selected checks run, as "
        "pytest's --lf does\n  hint: --last-failed-none skip runs none instead\n"
    )
    assert said in every.stderr, every.stderr
    run_dir = root / ".eval-banana" / "results" / newest_config(root)["run_id"]
    report = json.loads((run_dir / "report.json").read_text())
    assert [w["hint"] for w in report["warnings"]] == ["--last-failed-none skip runs none instead"]
    assert _memory(root)["failed"] == {}
    # Under --last-failed-none skip, the same: without a word, an empty run read as "nothing
    # failed last time".
    (root / ".eval-banana/lastfailed.json").write_bytes(memory)
    result = run_later(eb, root, "--last-failed", "--last-failed-none", "skip")
    assert result.exit_code == 0 and "No check was selected" in result.stdout
    gone = (
        "warning: --last-failed: the 2 checks remembered as failed (bad, broken) are gone (no "
        "check file defines them now; eb run forgets them), so no check runs "
        "(--last-failed-none skip)\n"
    )
    assert gone in result.stderr, result.stderr
    assert _memory(root)["failed"] == {}
    assert "warning" not in run_later(eb, root, "--last-failed").stderr


def test_a_deleted_failing_check_is_forgotten_by_the_next_run_that_reads_every_check(
    project: Callable[..., Path],
) -> None:
    """After its only failing check was deleted, every `eb run --last-failed` warned that the
    failure "is not among the selected checks", for good, until lastfailed.json was deleted by
    hand; a failure only filtered out or outside a narrowed selection must stay remembered."""
    root = project(
        {
            "eval_checks/ok.yaml": script_check("ok", script="pass\n"),
            "eval_checks/other.yaml": script_check("other", script="pass\n"),
            "eval_checks/bad.yaml": script_check("bad", script="raise SystemExit(1)\n"),
        }
    )
    assert eb_process(root, "run").returncode == 1  # bad fails
    filtered = eb_process(root, "run", "--last-failed", "-k", "other")
    assert filtered.returncode == 0, filtered.stderr
    assert "(bad) is not among the selected checks (filtered out)" in filtered.stderr
    (root / "eval_checks/bad.yaml").unlink()
    # --check-id reads only the files it names: it cannot tell a gone check from another.
    assert eb_process(root, "run", "--check-id", "ok").returncode == 0
    assert list(_memory(root)["failed"]) == ["bad"]
    done = eb_process(root, "run", "--last-failed")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "warning: --last-failed: the check remembered as failed (bad) is gone (no check file "
        "defines it now; eb run forgets it), so all 2 selected checks run"
    ) in done.stderr
    assert "- ok: passed" in done.stdout and "- other: passed" in done.stdout
    assert _memory(root)["failed"] == {}
    again = eb_process(root, "run", "--last-failed")
    assert again.returncode == 0 and "--last-failed" not in again.stderr, again.stderr


@pytest.mark.parametrize(
    ("damage", "told"),
    [
        ("a folder", "cannot read {path}: not a regular file (a folder)"),
        ("not json", "{path} is not JSON"),
        ("another document", "{path} is not eb's record of failed checks"),
    ],
)
def test_an_unreadable_failure_record_is_said_before_every_check_runs(
    eb: Callable[..., EbResult], project: Callable[..., Path], damage: str, told: str
) -> None:
    # `--last-failed` ran every check with no word on why, as if none had failed.
    root = failing_project(project)
    run_later(eb, root)
    record = root / ".eval-banana/lastfailed.json"

    def spoil() -> None:
        if record.is_dir():
            return  # a folder stays: no run can write the record over it
        record.unlink()
        if damage == "a folder":
            record.mkdir()
        else:
            record.write_text("{" if damage == "not json" else '{"failed": 3}')

    spoil()
    result = run_later(eb, root, "--last-failed", "--json")
    assert sorted(c["check_id"] for c in json.loads(result.stdout)["checks"]) == [
        "bad",
        "broken",
        "ok",
    ]
    assert "--last-failed remembers no failed check" in result.stderr
    if damage == "a folder":  # nor can the run write it: said of the record, not a temp file
        assert (
            "warning: could not record the failed checks for --last-failed: Cannot write "
            f"{record}: Is a directory\n"
        ) in result.stderr
    (warning,) = [w for w in newest_config(root)["warnings"] if "remembers" in w["message"]]
    assert warning["message"].startswith(
        "--last-failed remembers no failed check, so it selects every check: "
        + told.format(path=record)
    ), warning
    assert warning["file"] == str(record)
    spoil()  # the run wrote it anew (a file) or could not (a folder)
    skipped = run_later(eb, root, "--last-failed", "--last-failed-none", "skip")
    assert skipped.exit_code == 0 and "No check was selected" in skipped.stdout
    assert "--last-failed remembers no failed check, so it selects none" in skipped.stderr


def _memory(root: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((root / ".eval-banana/lastfailed.json").read_text())
    return document


def test_a_failure_is_remembered_across_partial_runs_until_a_run_passes_it(
    tmp_path: Path, project: Callable[..., Path]
) -> None:
    root = project(
        {
            "eval_checks/ok.yaml": script_check("ok", script="pass\n"),
            "eval_checks/other.yaml": script_check("other", script="pass\n"),
            "eval_checks/bad.yaml": script_check("bad", script="raise SystemExit(1)\n"),
        }
    )

    def eb_run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), *args],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )

    def ran_ids(done: subprocess.CompletedProcess[str]) -> list[str]:
        return sorted(
            line[2:].split(":")[0] for line in done.stdout.splitlines() if line.startswith("- ")
        )

    assert eb_run().returncode == 1  # bad fails
    assert ran_ids(eb_run("-k", "other")) == ["other"]  # a partial run that passes
    assert ran_ids(eb_run("--check-id", "ok")) == ["ok"]  # another one
    # The failure of the first run is still remembered, in eb's own folder.
    assert list(_memory(root)["failed"]) == ["bad"]
    again = eb_run("--last-failed")
    assert ran_ids(again) == ["bad"] and again.returncode == 1
    # Fixed, and passed by a run in which it ran: forgotten; then nothing failed, so every
    # check runs (pytest's default), or none with --last-failed-none skip.
    (root / "eval_checks/bad.yaml").write_text(script_check("bad", script="pass\n"))
    assert ran_ids(eb_run("--last-failed")) == ["bad"]
    assert _memory(root)["failed"] == {}
    assert ran_ids(eb_run("--last-failed")) == ["bad", "ok", "other"]
    skipped = eb_run("--last-failed", "--last-failed-none", "skip")
    assert skipped.returncode == 0 and ran_ids(skipped) == []
    # The record is a small document valid against its published schema, written atomically.
    import jsonschema

    from eval_banana.stagefiles.schemafiles import packaged_schema

    jsonschema.validate(_memory(root), json.loads(packaged_schema("lastfailed")))
    assert [p.name for p in (root / ".eval-banana").iterdir() if p.name.endswith(".tmp")] == []


def newest_config(root: Path) -> dict[str, Any]:
    """The config document of the run created last (run ids of one second sort at random)."""
    configs = [
        json.loads((run / "stages/config.json").read_text())
        for run in (root / ".eval-banana" / "results").iterdir()
    ]
    document: dict[str, Any] = max(configs, key=lambda config: config["created_at"])
    return document


def test_list_inputs_shows_what_each_pattern_matches(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    root = repo(tmp_path)
    write(root, {"out/result.json": "{}\n"})
    result = eb("list", "--cwd", str(root), "--inputs")
    assert result.exit_code == 0
    blocks = {}
    for line in result.stdout.splitlines():
        if "\t" in line:
            current = line.split("\t")[0]
            blocks[current] = []
        else:
            blocks[current].append(line.strip())
    assert blocks["src"] == ["inputs: src/** (1 file)", "src/app.py"]
    assert blocks["docs"] == ["inputs: docs/*.md (1 file)", "docs/guide.md"]
    assert blocks["artifact"] == ["inputs: out/result.json (1 file)", "out/result.json"]
    assert blocks["scripted"] == ["inputs: nothing/** (0 files)"]
    assert blocks["everything"] == ["inputs: not declared (the whole project counts)"]


def test_an_inputs_pattern_naming_a_file_with_a_bracket_says_how_to_escape_it(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    # `data/v[1].txt` reads as a glob: "matches no file" alone hid why the file was not an input.
    root = repo(tmp_path)
    check = script_check("v", script="pass\n", inputs=["data/v[1].txt"])
    write(root, {"eval_checks/v.yaml": check, "data/v[1].txt": "1\n"})
    done = eb("validate", "--cwd", str(root))
    assert (
        "inputs pattern 'data/v[1].txt' matches no file, so no change there reruns it "
        "(data/v[1].txt is a file, but `*`, `?` and `[` are glob characters: write "
        "data/v[[]1].txt to name it)"
    ) in done.stderr, done.stderr
    write(
        root, {"eval_checks/v.yaml": script_check("v", script="pass\n", inputs=["data/v[[]1].txt"])}
    )
    assert "Check 'v'" not in eb("validate", "--cwd", str(root)).stderr


def test_an_inputs_pattern_through_a_link_to_a_folder_says_so_and_how_to_name_it(
    tmp_path: Path,
) -> None:
    """No pattern follows a link to a folder (git records the link by its text): a pattern
    through one matched nothing, and the warning said only that, which left the user to guess.
    It names the link, where it leads, and the pattern to write instead."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()

    def linked(*patterns: str) -> str:
        return script_check("linked", script="pass\n", inputs=list(patterns))

    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": ".eval-banana/results/\n",
            ".eval-banana/config.toml": "",
            "eval_checks/linked.yaml": linked("site/**", "docs/latest/*.md", "ext/**"),
            "site-v1/index.html": "<p>1</p>\n",
            "releases/v2/guide.md": "# Guide\n",
        },
    )
    (root / "site").symlink_to("site-v1")
    (root / "docs").mkdir()
    (root / "docs/latest").symlink_to("../releases/v2")
    (root / "ext").symlink_to(outside)
    commit_all(root, "links")
    done = eb_process(root, "validate", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    said = {w["message"].split("'")[3]: w for w in json.loads(done.stdout)["warnings"]}
    assert said["site/**"]["message"] == (
        "Check 'linked': inputs pattern 'site/**' matches no file, so no change there reruns "
        "it ('site' is a symbolic link to the folder 'site-v1', and no pattern follows a link "
        "to a folder)"
    )
    assert said["site/**"]["hint"] == (
        "name the folder's real path instead, 'site-v1/**' (add 'site' too, so that pointing "
        "the link elsewhere counts), or list the files you mean by their paths in 'site-v1'"
    )
    assert (
        "('docs/latest' is a symbolic link to '../releases/v2', the folder 'releases/v2', "
        in said["docs/latest/*.md"]["message"]
    )
    assert "instead, 'releases/v2/*.md' (add 'docs/latest' too" in said["docs/latest/*.md"]["hint"]
    assert (
        f"('ext' is a symbolic link to {str(outside)!r}, a folder outside the project, "
        in said["ext/**"]["message"]
    )
    assert said["ext/**"]["hint"].startswith("no pattern reaches outside the project")
    # The fix the hint gives matches the files, and the link by its text: no warning.
    write(root, {"eval_checks/linked.yaml": linked("site-v1/**", "site")})
    again = eb_process(root, "validate")
    assert again.returncode == 0 and "inputs pattern" not in again.stderr, again.stderr
    # A pattern that matches nothing for another reason says nothing of links.
    write(root, {"eval_checks/linked.yaml": linked("gone/**")})
    other = eb_process(root, "validate")
    assert "matches no file, so no change there reruns it\n" in other.stderr, other.stderr
    assert "symbolic link" not in other.stderr


def test_an_inputs_pattern_that_matches_nothing_is_a_warning_with_the_folder_meant(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    """A typo in `inputs:` keys the check on nothing: the run says so (with the folder it was
    most likely written for), once per check file, and the report keeps the warning."""
    root = repo(tmp_path)
    write(
        root, {"eval_checks/typo.yaml": script_check("typo", script="pass\n", inputs=["srcc/**"])}
    )
    done = eb("run", "--cwd", str(root), "--json")
    assert done.exit_code == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "inputs pattern" in line]
    assert said == [
        "warning: Check 'artifact': inputs pattern 'out/result.json' matches no file, so no "
        "change there reruns it",
        "warning: Check 'scripted': inputs pattern 'nothing/**' matches no file, so no change "
        "there reruns it",
        "warning: Check 'typo': inputs pattern 'srcc/**' matches no file, so no change there "
        "reruns it (did you mean 'src/**'?)",
    ]
    (warning,) = [w for w in json.loads(done.stdout)["warnings"] if "'typo'" in w["message"]]
    assert warning["field_path"] == "inputs" and warning["file"].endswith("typo.yaml")

    # eb validate finds them before any verdict is keyed on nothing (as a pre-commit hook).
    validated = eb("validate", "--cwd", str(root))
    assert validated.exit_code == 0, validated.stderr
    assert [line for line in validated.stderr.splitlines() if "inputs pattern" in line] == said
    listed = json.loads(eb("validate", "--cwd", str(root), "--json").stdout)["warnings"]
    (typo,) = [w for w in listed if "'typo'" in w["message"]]
    assert (typo["field_path"], typo["hint"]) == ("inputs", warning["hint"])


def test_the_record_of_failures_is_no_project_file_for_the_verdict_cache(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    # A check without `inputs:` reads the whole project; the record eb writes after a failing
    # run must not count as a change of it, or every such check would miss the cache again.
    from tests.cache.rig import make_project

    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={
            "ok": script_check("ok", script="pass\n"),
            "bad": script_check("bad", script="raise SystemExit(1)\n"),
        },
        files={},
        replay=False,
    )
    # Even where the project walks eb's own folder (exclude_dirs without .eval-banana).
    config = project.root / ".eval-banana" / "config.toml"
    config.write_text(config.read_text().replace('[".eval-banana", ".git"]', '[".git"]'))
    assert project.misses(expect_exit=1) == {"ok", "bad"}
    assert (project.root / ".eval-banana" / "lastfailed.json").is_file()
    assert project.misses(expect_exit=1) == set()


@pytest.mark.parametrize("ignored", [False, True], ids=["untracked", "git-ignored"])
def test_the_record_of_failures_is_no_change_for_changed_since(
    tmp_path: Path, ignored: bool
) -> None:
    # A check reading every JSON file of the project: the record a failing run leaves in
    # .eval-banana/ is eb's, so it neither changed since HEAD nor is an ignored input.
    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": ".eval-banana/lastfailed.json\n" if ignored else "",
            ".eval-banana/config.toml": "",
            "eval_checks/json.yaml": script_check(
                "json", script="raise SystemExit(1)\n", inputs=["**/*.json"]
            ),
            "data/a.json": "{}\n",
        },
    )
    assert eb_process(root, "run").returncode == 1
    assert (root / ".eval-banana" / "lastfailed.json").is_file()
    done = eb_process(root, "list", "--changed-since", "HEAD")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and "0 checks listed" in done.stderr, done.stdout
    (root / "data" / "a.json").write_text("[]\n")
    assert "json\t" in eb_process(root, "list", "--changed-since", "HEAD").stdout


def test_reports_an_earlier_run_wrote_into_the_project_are_no_change_for_changed_since(
    tmp_path: Path,
) -> None:
    # `eb run --junit-xml ... --result-out ...` leaves two files no later `eb list` names:
    # while they hold what eb wrote, they are eb's, not a change since HEAD; edited, they are.
    root = init_repo(
        tmp_path / "proj",
        {
            ".eval-banana/config.toml": "",
            "eval_checks/docs.yaml": script_check("docs", script="pass\n", inputs=["**/*.md"]),
            "eval_checks/xml.yaml": script_check("xml", script="pass\n", inputs=["**/*.xml"]),
            "README.md": "# Project\n",
        },
    )
    reports = ("--junit-xml", "eval-junit.xml", "--result-out", "eval-result.md")
    assert eb_process(root, "run", *reports).returncode == 0
    done = eb_process(root, "list", "--changed-since", "HEAD")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and "0 checks listed" in done.stderr, done.stdout
    (root / "eval-result.md").write_text("# Notes of mine\n")
    assert eb_process(root, "list", "--changed-since", "HEAD").stdout.startswith("docs\t")


@pytest.mark.parametrize("ignored", [False, True], ids=["untracked", "git-ignored"])
def test_a_run_folder_sent_into_the_project_is_no_change_for_changed_since(
    tmp_path: Path, ignored: bool
) -> None:
    # `--output-dir ci-out` leaves a run folder no setting names afterwards: its JSON files
    # (report.json, the stage files) are eb's, neither changed since HEAD nor ignored inputs.
    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": "ci-out/\n" if ignored else "",
            ".eval-banana/config.toml": "",
            "eval_checks/json.yaml": script_check("json", script="pass\n", inputs=["**/*.json"]),
            "data/a.json": "{}\n",
        },
    )
    assert eb_process(root, "run", "--output-dir", "ci-out").returncode == 0
    assert list((root / "ci-out").glob("*/report.json"))
    done = eb_process(root, "list", "--changed-since", "HEAD")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and "0 checks listed" in done.stderr, done.stdout


def test_the_record_of_failures_costs_no_heavy_import(project: Callable[..., Path]) -> None:
    # Read and rewritten by every run: checked against its schema without jsonschema/pydantic.
    root = failing_project(project)
    probe = (
        "import sys\n"
        "from eval_banana.cli import main\n"
        f"code = main(['run', '--cwd', {str(root)!r}, '--last-failed'])\n"
        "heavy = sorted(m for m in ('pydantic', 'jsonschema') if m in sys.modules)\n"
        "print('HEAVY', heavy, code)\n"
    )
    for _ in range(2):  # the first run writes the record, the second reads and updates it
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
        )
        assert "HEAVY [] 1" in done.stdout, done.stdout + done.stderr
    assert (root / ".eval-banana" / "lastfailed.json").is_file()


def test_an_assertions_checks_artifact_selects_it_inputs_or_not(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    """An assertions check grades its artifact whether `inputs:` name it or not (its cache key
    counts it always): a tracked artifact changed since REF selects the check, an unchanged one
    does not, and one git ignores (generated output) selects it always, since git cannot say
    whether it changed."""
    grades = (
        "schema_version: 1\ntype: assertions\ndescription: d\ninputs: [src/**]\n"
        "assert:\n  - {path: ok, op: equals, value: true}\n"
    )
    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": "gen/\n.eval-banana/results/\n",
            ".eval-banana/config.toml": "",
            "eval_checks/tracked.yaml": f"{grades}id: tracked\nartifact: expected/out.json\n",
            "eval_checks/generated.yaml": f"{grades}id: generated\nartifact: gen/out.json\n",
            "src/app.py": "print(1)\n",
            "expected/out.json": '{"ok": true}',
        },
    )
    write(root, {"gen/out.json": '{"ok": true}'})
    assert listed(eb, root, "--changed-since", "HEAD") == ["generated"]
    write(root, {"expected/out.json": '{"ok": false}'})
    assert listed(eb, root, "--changed-since", "HEAD") == ["generated", "tracked"]
    commit_all(root)
    assert listed(eb, root, "--changed-since", "HEAD") == ["generated"]
    assert listed(eb, root, "--changed-since", "HEAD~1") == ["generated", "tracked"]


def test_a_familys_cases_are_matched_against_the_changes_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Every case of a family reads the same files: matching each one against every changed
    # path again made 10,000 cases against 3,000 changed files take 10 s.
    from eval_banana import cli
    from eval_banana.projectstate.patterns import InputPatterns

    rows = "".join(json.dumps({"id": f"r{n}", "q": f"q{n}"}) + "\n" for n in range(300))
    family = script_check("fam", script="pass\n", inputs=["src/**"]) + (
        "cases_from: data/rows.jsonl\n"
    )
    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": ".eval-banana/results/\n",
            ".eval-banana/config.toml": "",
            "eval_checks/fam.yaml": family,
            "data/rows.jsonl": rows,
            **{f"src/f{n}.txt": "x\n" for n in range(50)},
        },
    )
    write(root, {f"src/f{n}.txt": "y\n" for n in range(50)})
    commit_all(root)
    matched: list[int] = []
    select = InputPatterns.select

    def counted(self: InputPatterns, paths: Any, **options: Any) -> list[str]:
        matched.append(len(paths))
        return select(self, paths, **options)

    monkeypatch.setattr(InputPatterns, "select", counted)
    assert cli.main(["list", "--cwd", str(root), "--changed-since", "HEAD~1"]) == 0
    assert "300 checks listed" in capsys.readouterr().err
    assert len(matched) <= 2  # the changed paths, and git's ignored ones: once for the family


FAMILY = """\
schema_version: 1
id: qa
type: deterministic
description: "row {{ case.id }}"
cases: [{id: bad, ok: false}, {id: slow-1, ok: true}, {id: slow-2, ok: true}]
script: |
  import json, sys
  sys.exit(0 if json.load(open(sys.argv[1]))["case"]["ok"] else 1)
"""


def test_last_failed_says_it_runs_every_check_before_the_first_one_starts(
    project: Callable[..., Path],
) -> None:
    # The warning travelled with the execute stage's and was printed once every check had
    # run; `eb plan` and `eb list`, which select the same way, did not print it at all.
    root = project({"eval_checks/qa.yaml": FAMILY})
    assert eb_process(root, "run", "--cache", "off").returncode == 1  # qa[bad] fails
    said = "warning: --last-failed: the check remembered as failed (qa[bad]) is not among"
    done = eb_process(
        root, "run", "--cache", "off", "--max-parallel-checks", "1", "--last-failed", "-k", "slow"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    (warned,) = [n for n, line in enumerate(lines) if line.startswith(said)]
    first = next(n for n, line in enumerate(lines) if line.startswith("[1/2] "))
    assert warned < first, done.stderr
    for command in ("plan", "list"):
        shown = eb_process(root, command, "--last-failed", "-k", "slow")
        assert shown.returncode == 0 and said in shown.stderr, (command, shown.stderr)


def test_a_remembered_failure_skipped_now_selects_as_none(
    eb: Callable[..., EbResult], project: Callable[..., Path]
) -> None:
    # It selected the skipped case alone: no check ran, the run passed 0/0 and named
    # --last-failed-none skip, which nobody had set.
    root = project({"eval_checks/qa.yaml": FAMILY})
    assert run_later(eb, root, "--cache", "off").exit_code == 1
    (root / "eval_checks/qa.yaml").write_text(
        FAMILY.replace("{id: bad, ok: false}", "{id: bad, ok: false, skip: flaky}")
    )
    every = run_later(eb, root, "--cache", "off", "--last-failed")
    assert every.exit_code == 0, every.stdout + every.stderr
    assert ran(every) == ["qa[bad]", "qa[slow-1]", "qa[slow-2]"]  # bad: listed as skipped
    assert "Score: 2/2" in every.stdout and "- qa[bad]: skipped - flaky" in every.stdout
    assert "--last-failed-none" not in every.stdout
    assert (
        "warning: --last-failed: the check remembered as failed (qa[bad]) is skipped now (skip: "
        "in its check file), so all 2 selected checks run, as pytest's --lf does\n"
    ) in every.stderr
    # Asked for, --last-failed-none skip runs none, and says why truly.
    none = run_later(eb, root, "--cache", "off", "--last-failed", "--last-failed-none", "skip")
    assert none.exit_code == 0 and "Score: 0/0" in none.stdout
    assert (
        "No check was selected: none of the selected checks failed the last time it ran, or "
        "those that did are skipped now (--last-failed-none skip)."
    ) in none.stdout
    # Every selected check skipped: judged nothing, so not a pass, and no setting named.
    alone = run_later(eb, root, "--cache", "off", "--last-failed", "-k", "bad")
    assert alone.exit_code == 1 and "Score: 0/0" in alone.stdout
    assert "No check was selected" not in alone.stdout and "--last-failed" not in alone.stderr


def test_skip_set_by_the_variable_is_named_as_the_variable(
    eb: Callable[..., EbResult], project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # EVAL_BANANA_LAST_FAILED_NONE=skip, no flag given: the note and the warning said
    # "(--last-failed-none skip)", a flag nobody passed.
    root = project({"eval_checks/qa.yaml": FAMILY})
    assert run_later(eb, root, "--cache", "off").exit_code == 1
    (root / "eval_checks/qa.yaml").write_text(
        FAMILY.replace("{id: bad, ok: false}", "{id: bad, ok: false, skip: flaky}")
    )
    monkeypatch.setenv("EVAL_BANANA_LAST_FAILED_NONE", "skip")
    none = run_later(eb, root, "--cache", "off", "--last-failed")
    assert none.exit_code == 0 and "Score: 0/0" in none.stdout
    assert ("those that did are skipped now (EVAL_BANANA_LAST_FAILED_NONE=skip).") in none.stdout, (
        none.stdout
    )
    assert (
        "so no check runs (EVAL_BANANA_LAST_FAILED_NONE=skip)\n"
        "  hint: set EVAL_BANANA_LAST_FAILED_NONE=all to run every selected check instead\n"
    ) in none.stderr, none.stderr
    assert "--last-failed-none" not in none.stdout + none.stderr


def test_a_check_that_empties_the_failure_record_while_it_runs_forgets_nothing(
    project: Callable[..., Path],
) -> None:
    # A check run with -k rewrote lastfailed.json while it ran; the run's own update read the
    # record back at its end and took the edit over, so the failure of `bad`, which it did not
    # run, was forgotten and `--last-failed --last-failed-none skip` passed with no check.
    eraser = (
        "import json, sys\nfrom pathlib import Path\n"
        "root = Path(json.loads(Path(sys.argv[1]).read_text())['project_root'])\n"
        "record = root / '.eval-banana' / 'lastfailed.json'\n"
        "record.write_text(json.dumps({**json.loads(record.read_text()), 'failed': {}}))\n"
    )
    root = project(
        {
            "eval_checks/bad.yaml": script_check("bad", script="raise SystemExit(1)\n"),
            "eval_checks/other.yaml": script_check("other", script=eraser),
        },
        config='[cache]\nmode = "off"\n',
    )
    assert eb_process(root, "run", "-k", "bad").returncode == 1
    assert list(_memory(root)["failed"]) == ["bad"]
    erasing = eb_process(root, "run", "-k", "other")
    assert erasing.returncode == 0, erasing.stderr
    assert list(_memory(root)["failed"]) == ["bad"]
    again = eb_process(root, "run", "--last-failed", "--last-failed-none", "skip")
    assert again.returncode == 1
    assert "bad" in again.stdout


def _waits_for(other: str, *, itself: str, marks: Path) -> str:
    """A check's script: say `itself` started, wait (at most 30 s) until `other` has, then
    fail."""
    return (
        "import time\nfrom pathlib import Path\n"
        f"marks = Path({str(marks)!r})\n"
        f"(marks / {itself!r}).touch()\n"
        "deadline = time.monotonic() + 30\n"
        f"while not (marks / {other!r}).exists() and time.monotonic() < deadline:\n"
        "    time.sleep(0.005)\n"
        "raise SystemExit(1)\n"
    )


@pytest.mark.concurrent
def test_two_runs_ending_together_each_remember_their_failure(
    tmp_path: Path, project: Callable[..., Path]
) -> None:
    # `eb run -k a` and `eb run -k b`, side by side, each failed its check and both ended
    # together: each read lastfailed.json, added its own failure and wrote it back, so the
    # one that wrote last put back a record without the other's, and --last-failed forgot it.
    marks = tmp_path / "marks"
    marks.mkdir()
    root = project(
        {
            "eval_checks/a.yaml": script_check(
                "a", script=_waits_for("b", itself="a", marks=marks)
            ),
            "eval_checks/b.yaml": script_check(
                "b", script=_waits_for("a", itself="b", marks=marks)
            ),
        },
        config='[cache]\nmode = "off"\n',
    )
    record = root / ".eval-banana" / "lastfailed.json"
    # A long record of earlier failures (of checks gone since) makes each run's read and
    # rewrite of it take long enough for the two ends to overlap in it.
    earlier = {f"gone-{n:05d}": {"status": "failed", "run_id": "earlier"} for n in range(5000)}
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for _ in range(3):
        for started in marks.iterdir():
            started.unlink()
        record.write_text(json.dumps({**_record_of_nothing(), "failed": earlier}))
        runs = [
            subprocess.Popen(
                [sys.executable, "-m", "eval_banana", "run", "-k", check_id],
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for check_id in ("a", "b")
        ]
        for run in runs:
            _, stderr = run.communicate(timeout=120)
            assert run.returncode == 1, stderr
            assert "could not record" not in stderr, stderr
        # Both read every check file, so the gone checks' failures are forgotten.
        assert sorted(_memory(root)["failed"]) == ["a", "b"]


def _record_of_nothing() -> dict[str, Any]:
    return {
        "$schema": "https://eval-banana.dev/schemas/lastfailed.schema.json",
        "schema_version": 1,
        "tool_version": "0.0.0",
        "updated_at": "2024-01-01T00:00:00+00:00",
        "failed": {},
    }


def test_a_pattern_into_an_excluded_folder_says_exclude_dirs_is_why(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": "build/\n.eval-banana/results/\n",
            ".eval-banana/config.toml": '[discovery]\nexclude_dirs = [".eval-banana", "build"]\n',
            "eval_checks/built.yaml": script_check(
                "built", script="pass\n", inputs=["build/data.txt"]
            ),
        },
    )
    write(root, {"build/data.txt": "generated\n"})
    done = eb("validate", "--cwd", str(root))
    assert done.exit_code == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "inputs pattern" in line]
    assert said == [
        "warning: Check 'built': inputs pattern 'build/data.txt' matches no file, so no change "
        "there reruns it ('build/' is a folder [discovery] exclude_dirs leaves out, which no "
        "pattern reaches into)"
    ]


def test_a_failure_record_that_links_to_no_file_is_replaced_by_the_record(
    tmp_path: Path, project: Callable[..., Path]
) -> None:
    # lastfailed.json a symbolic link to a file not made yet: the run's end spun at 100 % CPU
    # for good (the link opened as no file, and no file could be put in its place), deaf to
    # SIGTERM. The link now goes, as the record's every rewrite renames over a link.
    root = project(
        {"eval_checks/bad.yaml": script_check("bad", script="raise SystemExit(1)\n")},
        config='[cache]\nmode = "off"\n',
    )
    record = root / ".eval-banana" / "lastfailed.json"
    record.symlink_to(tmp_path / "shared" / "lastfailed.json")
    began = time.monotonic()
    done = eb_process(root, "run", timeout=20)
    assert done.returncode == 1, done.stderr
    assert time.monotonic() - began < 15
    assert "could not record" not in done.stderr
    assert not record.is_symlink() and list(_memory(root)["failed"]) == ["bad"]
    assert not (tmp_path / "shared").exists()
    again = eb_process(root, "run", "--last-failed", "--last-failed-none", "skip", timeout=20)
    assert again.returncode == 1 and "bad" in again.stdout, again.stderr


def _run_until_executed(*, root: Path, args: list[str] | None = None) -> subprocess.Popen[str]:
    """`eb run` started in `root`, once its execute stage is written (its checks have ended)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_banana", "run", *(args or [])],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not list((root / ".eval-banana" / "results").glob("*/stages/execute.json")):
        assert time.monotonic() < deadline and process.poll() is None, "no check ran"
        time.sleep(0.02)
    return process


def test_a_sigterm_ends_a_runs_wait_for_its_turn_at_the_failure_record(
    project: Callable[..., Path],
) -> None:
    # Another process held lastfailed.json: a SIGTERM during the run's wait for it was noted
    # and the wait went on, 30 s, before the run stopped.
    root = project(
        {"eval_checks/bad.yaml": script_check("bad", script="raise SystemExit(1)\n")},
        config='[cache]\nmode = "off"\n',
    )
    record = root / ".eval-banana" / "lastfailed.json"
    record.write_text(json.dumps(_record_of_nothing()))
    with open(record, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        # The execute stage is written just before the record's turn is waited for.
        process = _run_until_executed(root=root)
        time.sleep(0.5)
        assert process.poll() is None  # waiting for the record
        process.send_signal(signal.SIGTERM)
        began = time.monotonic()
        _, stderr = process.communicate(timeout=60)
        assert time.monotonic() - began < 10
    assert process.returncode == 3, stderr
    assert (
        f"could not record the failed checks for --last-failed: Cannot write {record}: "
        "interrupted while waiting for its turn at the file"
    ) in stderr
    assert "Run aborted (interrupt: interrupted)" in stderr, stderr
    assert _memory(root)["failed"] == {}  # the record stands as it was


def test_a_run_meeting_a_link_another_run_replaces_keeps_that_runs_record(
    tmp_path: Path, project: Callable[..., Path]
) -> None:
    # lastfailed.json a link to no file, met by two runs at once: each saw the link, then
    # removed whatever stood there, so one removed the record the other had put there and
    # rewritten meanwhile, and that run's failure was forgotten. Here the test is the other
    # run: it holds the turn of the link's replacement (the file beside the record), has seen
    # the link, and replaces it with its record only after the run reached its own end.
    root = project(
        {
            "eval_checks/bad.yaml": script_check("bad", script="raise SystemExit(1)\n"),
            "eval_checks/other.yaml": script_check("other", script="raise SystemExit(1)\n"),
        },
        config='[cache]\nmode = "off"\n',
    )
    record = root / ".eval-banana" / "lastfailed.json"
    record.symlink_to(tmp_path / "shared" / "lastfailed.json")
    turn = record.with_name(".lastfailed.json.turn.tmp")
    turn.touch()
    with open(turn, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        # The run's end comes while the turn is held: it waits for it (or, as before, went on
        # and finished).
        process = _run_until_executed(root=root, args=["-k", "bad"])
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=3)
        others = {**_record_of_nothing(), "failed": {"other": {"status": "failed", "run_id": "r"}}}
        (tmp_path / "others.json").write_text(json.dumps(others))
        os.replace(tmp_path / "others.json", record)
        turn.unlink()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1, stderr
    assert "could not record" not in stderr, stderr
    assert sorted(_memory(root)["failed"]) == ["bad", "other"]
    assert not turn.exists() and not (tmp_path / "shared").exists()


def test_a_dataset_behind_a_link_to_a_folder_selects_the_cases_whose_rows_changed(
    tmp_path: Path,
) -> None:
    """A dataset reached through a link to a folder (`data -> realdata`) is read, as an
    artifact behind one is, by the file the link leads to: a committed change to a row there
    selects its case (it selected none: the diff names realdata/, the case data/), the rows at
    REF read from that file, and a link retargeted since REF selects every case."""
    family = (
        "schema_version: 1\nid: fam\ntype: deterministic\ndescription: f\n"
        "cases_from: data/rows.jsonl\ninputs: []\n"
        "script: |\n  import json, sys\n"
        '  assert json.load(open(sys.argv[1]))["case"]["ok"] is True\n'
    )
    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": ".eval-banana/results/\n.eval-banana/lastfailed.json\n",
            ".eval-banana/config.toml": "",
            "eval_checks/fam.yaml": family,
            "realdata/rows.jsonl": '{"id": "r1", "ok": true}\n{"id": "r2", "ok": true}\n',
            "otherdata/rows.jsonl": '{"id": "r1", "ok": true}\n{"id": "r2", "ok": true}\n',
        },
    )
    (root / "data").symlink_to("realdata")
    commit_all(root, "link")

    def selected(*args: str) -> list[str]:
        made = eb_process(root, "list", "--cases", *args)
        assert made.returncode == 0, made.stdout + made.stderr
        return sorted(line.split("\t")[0] for line in made.stdout.splitlines() if "\t" in line)

    write(root, {"realdata/rows.jsonl": '{"id": "r1", "ok": true}\n{"id": "r2", "ok": false}\n'})
    commit_all(root, "break r2 behind the folder link")
    assert selected("--changed-since", "HEAD~1") == ["fam[r2]"]
    made = eb_process(root, "run", "--changed-since", "HEAD~1", "--cache", "off")
    assert made.returncode == 1, made.stdout + made.stderr
    assert "fam[r2]: failed" in made.stdout
    # The link pointed elsewhere: the rows behind it now have no past in REF's realdata/.
    (root / "data").unlink()
    (root / "data").symlink_to("otherdata")
    assert selected("--changed-since", "HEAD") == ["fam[r1]", "fam[r2]"]
    # A chain (data -> latest -> realdata): pointing `latest` elsewhere selects every case too.
    (root / "data").unlink()
    (root / "data").symlink_to("latest")
    (root / "latest").symlink_to("realdata")
    commit_all(root, "a chain of links")
    assert selected("--changed-since", "HEAD") == []
    (root / "latest").unlink()
    (root / "latest").symlink_to("otherdata")
    assert selected("--changed-since", "HEAD") == ["fam[r1]", "fam[r2]"]


def test_a_dataset_glob_looking_through_a_link_to_a_folder_sees_files_move_behind_it(
    tmp_path: Path,
) -> None:
    """`cases_from: data/**/*.jsonl` reads the files behind `data/shared -> ../prompts-v1`
    (it read none: a link to a folder was never followed). git names those files by the
    folder the link leads to, so a file added or removed there, and the link pointed
    elsewhere or removed, must select every case, as a file of the glob's own folder does."""
    family = (
        "schema_version: 1\nid: fam\ntype: deterministic\ndescription: f\n"
        'cases_from: "data/**/*.jsonl"\ninputs: []\n'
        "script: |\n  import json, sys\n"
        '  assert json.load(open(sys.argv[1]))["case"]["ok"] is True\n'
    )
    rows = '{"id": "s1", "ok": true}\n{"id": "s2", "ok": true}\n'
    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": ".eval-banana/results/\n.eval-banana/lastfailed.json\n",
            ".eval-banana/config.toml": "",
            "eval_checks/fam.yaml": family,
            "data/local.jsonl": '{"id": "local-1", "ok": true}\n',
            "prompts-v1/team.jsonl": rows,
            "prompts-v1/more.jsonl": '{"id": "m1", "ok": true}\n',
            "prompts-v2/team.jsonl": rows,
        },
    )
    (root / "data/shared").symlink_to("../prompts-v1")
    commit_all(root, "link")
    every = ["fam[local-1]", "fam[m1]", "fam[s1]", "fam[s2]"]

    def selected() -> list[str]:
        made = eb_process(root, "list", "--cases", "--changed-since", "HEAD")
        assert made.returncode == 0, made.stdout + made.stderr
        return sorted(line.split("\t")[0] for line in made.stdout.splitlines() if "\t" in line)

    def relink(target: str | None) -> None:
        (root / "data/shared").unlink()
        if target is not None:
            (root / "data/shared").symlink_to(target)

    assert selected() == []
    write(root, {"prompts-v1/team.jsonl": rows.replace('"s2", "ok": true', '"s2", "ok": false')})
    assert selected() == ["fam[s2]"]  # an edited row behind the link: its case alone
    git(root, "checkout", "-q", "--", "prompts-v1")
    write(root, {"prompts-v1/new.jsonl": '{"id": "n1", "ok": true}\n'})
    assert selected() == sorted(["fam[n1]", *every])  # a file added behind it
    (root / "prompts-v1/new.jsonl").unlink()
    git(root, "rm", "-q", "prompts-v1/more.jsonl")
    assert selected() == ["fam[local-1]", "fam[s1]", "fam[s2]"]  # a file removed behind it
    git(root, "reset", "-q", "--hard")
    relink("../prompts-v2")  # the same rows elsewhere: another file read
    assert selected() == ["fam[local-1]", "fam[s1]", "fam[s2]"]
    (root / "empty").mkdir()
    relink("../empty")  # every file behind it gone from the family
    assert selected() == ["fam[local-1]"]
    relink(None)
    assert selected() == ["fam[local-1]"]
    git(root, "reset", "-q", "--hard")
    assert selected() == []
