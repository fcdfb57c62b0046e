"""The run folder of `eb run`: default layout, --flat-output refusals, setup errors on disk."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.builders import newest_run_dir
from tests.conftest import EbResult, check_yaml


@pytest.fixture
def one_check(project: Callable[..., Path]) -> Path:
    return project({"eval_checks/a.yaml": check_yaml("a")}, config='[core]\noutput_dir = "out"\n')


def test_default_layout_is_output_dir_slash_run_id(
    one_check: Path, eb: Callable[..., EbResult]
) -> None:
    result = eb("run", "--cwd", str(one_check))
    assert result.exit_code == 0
    (run_dir,) = list((one_check / "out").iterdir())
    report = json.loads((run_dir / "report.json").read_text())
    assert report["output_dir"] == str(run_dir)
    assert run_dir.name == report["run_id"]
    assert len(run_dir.name) == len("20261130_002431_b31f0879")
    assert (run_dir / "report.md").read_text().startswith("# eval-banana report\n")
    assert sorted(p.name for p in (run_dir / "stages").iterdir()) == [
        "config.json",
        "discover.json",
        "execute.json",
        "guard.json",
        "plan.json",
        "report.json",
        "score.json",
    ]
    lines = result.stdout.splitlines()
    assert lines[0] == f"Run ID: {report['run_id']}"
    assert lines[1:4] == ["Score: 1/1", "Percentage: 100.0%", "Passed: yes"]
    # report.json's path first (what scripts read), then the page a person opens.
    assert lines[4] == f"Report: {run_dir / 'report.json'} (HTML: {run_dir / 'report.html'})"
    assert (run_dir / "report.html").is_file()
    assert lines[5] == "- a: passed"


def test_report_line_names_no_html_when_none_is_written(
    one_check: Path, eb: Callable[..., EbResult]
) -> None:
    result = eb("run", "--cwd", str(one_check), "--no-html")
    assert result.exit_code == 0
    (run_dir,) = list((one_check / "out").iterdir())
    assert not (run_dir / "report.html").exists()
    assert result.stdout.splitlines()[4] == f"Report: {run_dir / 'report.json'}"


def test_relative_output_dir_flag_is_joined_to_the_project_root(
    one_check: Path, eb: Callable[..., EbResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert eb("run", "--cwd", str(one_check), "--output-dir", "custom").exit_code == 0
    assert len(list((one_check / "custom").iterdir())) == 1
    assert list(elsewhere.iterdir()) == []


def test_a_leading_tilde_is_the_home_folder_for_every_path_setting_from_every_source(
    project: Callable[..., Path],
    eb: Callable[..., EbResult],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A TOML file and a CI `env:` block have no shell to expand `~`: eb must, or it makes a
    # folder named `~` in the project holding the cache and its key.
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    root = project(
        {"eval_checks/a.yaml": check_yaml("a")},
        config='[core]\noutput_dir = "~/eb-results"\n\n[cache]\nmode = "on"\ndir = "~/eb-cache"\n',
    )
    monkeypatch.setenv("EVAL_BANANA_HISTORY_DIR", "~/eb-history")
    monkeypatch.setenv("EVAL_BANANA_JUNIT_XML", "~/eb-junit.xml")
    assert eb("run", "--cwd", str(root)).exit_code == 0
    assert sorted(path.name for path in home.iterdir()) == [
        "eb-cache",
        "eb-history",
        "eb-junit.xml",
        "eb-results",
    ]
    assert len(list((home / "eb-results").iterdir())) == 1
    assert any((home / "eb-cache").iterdir()) and any((home / "eb-history").iterdir())
    assert not (root / "~").exists()
    monkeypatch.delenv("EVAL_BANANA_HISTORY_DIR")
    assert eb("run", "--cwd", str(root), "--history-dir", "~/flag-history").exit_code == 0
    assert any((home / "flag-history").iterdir())
    assert not (root / "~").exists()


def test_flat_output_writes_into_the_exact_folder(
    one_check: Path, eb: Callable[..., EbResult]
) -> None:
    target = one_check / "flat"
    result = eb("run", "--cwd", str(one_check), "--output-dir", "flat", "--flat-output")
    assert result.exit_code == 0
    report = json.loads((target / "report.json").read_text())
    assert report["output_dir"] == str(target)
    assert (target / "checks").is_dir() and (target / "stages" / "plan.json").is_file()


def test_flat_output_needs_an_explicit_output_dir(
    one_check: Path, eb: Callable[..., EbResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVAL_BANANA_OUTPUT_DIR", "from-env")
    result = eb("run", "--cwd", str(one_check), "--flat-output")
    assert result.exit_code == 2
    assert "--flat-output requires an explicit --output-dir" in result.stderr
    assert not (one_check / "from-env").exists() and not (one_check / "out").exists()


@pytest.mark.parametrize("trailing_slash", [False, True])
def test_flat_output_refuses_a_symlink(
    one_check: Path, eb: Callable[..., EbResult], tmp_path: Path, trailing_slash: bool
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, one_check / "link")
    target = "link/" if trailing_slash else "link"
    result = eb("run", "--cwd", str(one_check), "--output-dir", target, "--flat-output")
    assert result.exit_code == 2
    assert (
        f"Refusing --flat-output because the exact output path is a symlink: {one_check / 'link'}"
        in result.stderr
    )
    assert list(real.iterdir()) == []


def test_flat_output_refuses_a_file_and_a_non_empty_folder(
    one_check: Path, eb: Callable[..., EbResult]
) -> None:
    (one_check / "afile").write_text("x")
    as_file = eb("run", "--cwd", str(one_check), "--output-dir", "afile", "--flat-output")
    assert as_file.exit_code == 2
    assert "Refusing --flat-output because the output path is not a directory: " in as_file.stderr
    busy = one_check / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("precious")
    refused = eb("run", "--cwd", str(one_check), "--output-dir", "busy", "--flat-output")
    assert refused.exit_code == 2
    assert f"Refusing --flat-output because the output directory is not empty: {busy}" in (
        refused.stderr
    )
    assert [p.name for p in busy.iterdir()] == ["keep.txt"]
    assert (busy / "keep.txt").read_text() == "precious"


def test_unusable_output_dir_is_a_clear_error(one_check: Path, eb: Callable[..., EbResult]) -> None:
    (one_check / "blocker").write_text("a file where a folder must go")
    result = eb("run", "--cwd", str(one_check), "--output-dir", "blocker/sub")
    assert result.exit_code == 2
    assert "Cannot create output directory" in result.stderr
    assert "Traceback" not in result.stderr


def test_setup_error_leaves_stage_files_up_to_the_failing_stage_and_no_report(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project(
        {"eval_checks/bad.yaml": "schema_version: 1\nid: bad\ntype: deterministic\n"},
        config='[core]\noutput_dir = "out"\n',
    )
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 2
    assert "Invalid check definition in " in result.stderr
    (run_dir,) = list((root / "out").iterdir())
    stages = sorted(p.name for p in (run_dir / "stages").iterdir())
    assert stages == ["config.json", "discover.json", "plan.json"]
    plan = json.loads((run_dir / "stages" / "plan.json").read_text())
    assert plan["ok"] is False
    assert plan["errors"][0]["file"].endswith("bad.yaml")
    assert "deterministic.description" in plan["errors"][0]["message"]
    assert not (run_dir / "report.json").exists() and not (run_dir / "report.md").exists()


def test_no_checks_found_is_exit_2(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"README.md": "empty"})
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 2 and "No checks found" in result.stderr


def test_guard_refusal_runs_nothing(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project(
        {
            "eval_checks/judge.yaml": "schema_version: 1\nid: j\ntype: harness_judge\n"
            "description: d\ninstructions: i\n",
            "eval_checks/det.yaml": check_yaml("det", script="open('ran.txt', 'w').write('x')"),
        },
        config='[core]\noutput_dir = "out"\n',
    )
    result = eb("run", "--cwd", str(root))
    assert result.exit_code == 2
    assert "harness_judge check requires a harness but none is configured" in result.stderr
    assert not (root / "ran.txt").exists()
    (run_dir,) = list((root / "out").iterdir())
    assert json.loads((run_dir / "stages" / "guard.json").read_text())["ok"] is False
    # Selecting only the deterministic check needs no agent.
    selected = eb("run", "--cwd", str(root), "--check-id", "det")
    assert selected.exit_code == 0 and (root / "ran.txt").exists()


def _eb_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eval_banana", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={k: v for k, v in os.environ.items() if not k.startswith("EVAL_BANANA_")},
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def _tree(root: Path) -> list[str]:
    return sorted(path.relative_to(root).as_posix() for path in root.rglob("*"))


def test_eb_outside_any_project_writes_nothing_and_says_where_it_looked(tmp_path: Path) -> None:
    folder = tmp_path / "not-a-project"
    folder.mkdir()
    (folder / "notes.txt").write_text("no checks here\n")
    ran = _eb_process("run", cwd=folder)
    assert ran.returncode == 2 and "No checks found" in ran.stderr
    assert _tree(folder) == ["notes.txt"]  # no .eval-banana/results/<id>/ left behind
    # list, validate and run each say that no config was found, which folder was taken as
    # the project root, and how to make it a project.
    said = (
        f"warning: no .eval-banana/config.toml in {folder} or any folder above it, so {folder} "
        "is taken as the project root; run `eb init`"
    )
    for command in ("list", "validate", "run"):
        assert said in _eb_process(command, cwd=folder).stderr, command
    # --no-project-config asks for no config: nothing to warn about.
    assert "warning" not in _eb_process("run", "--no-project-config", cwd=folder).stderr


def test_a_run_that_selects_nothing_leaves_no_run_folder(
    one_check: Path, eb: Callable[..., EbResult]
) -> None:
    assert eb("run", "--cwd", str(one_check), "-k", "nothing_matches").exit_code == 2
    assert not (one_check / "out").exists()  # not even the output folder
    assert eb("run", "--cwd", str(one_check)).exit_code == 0
    (kept,) = list((one_check / "out").iterdir())
    result = eb("run", "--cwd", str(one_check), "--check-id", "absent")
    assert result.exit_code == 2
    assert list((one_check / "out").iterdir()) == [kept]  # the earlier run only
    # An empty --flat-output folder stays, empty.
    flat = one_check / "flat"
    flat.mkdir()
    args = ("run", "--cwd", str(one_check), "-k", "zzz", "--output-dir", str(flat))
    assert eb(*args, "--flat-output").exit_code == 2
    assert list(flat.iterdir()) == []


def test_checks_of_nested_projects_collected_from_a_parent_are_named(tmp_path: Path) -> None:
    parent = tmp_path / "monorepo"
    for name in ("app", "lib"):
        (parent / name / ".eval-banana").mkdir(parents=True)
        (parent / name / ".eval-banana" / "config.toml").write_text("")
        (parent / name / "eval_checks").mkdir()
        (parent / name / "eval_checks" / f"{name}.yaml").write_text(check_yaml(name))
    warned = (
        f"warning: checks of 2 nested projects are collected from {parent}: app/, lib/ "
        "(each holds its own .eval-banana/"
    )
    for command in ("list", "validate", "run"):
        assert warned in _eb_process(command, cwd=parent).stderr, command
    # Inside one of them there is nothing to warn about.
    inside = _eb_process("validate", cwd=parent / "app")
    assert inside.returncode == 0 and "warning" not in inside.stderr


# -- [core] keep_runs ----------------------------------------------------------------------------


def _runs(folder: Path) -> list[str]:
    return sorted(entry.name for entry in folder.iterdir())


def _report_run_id(completed: EbResult) -> str:
    return str(json.loads(completed.stdout)["run_id"])


def test_keep_runs_deletes_the_oldest_finished_runs_and_nothing_else(
    one_check: Path, eb: Callable[..., EbResult]
) -> None:
    out = one_check / "out"
    first = eb("run", "--cwd", str(one_check), "--json")
    assert first.exit_code == 0
    # What pruning must never touch: a run still going (no report.json yet), a folder that is
    # no run, and a link to a finished run.
    going = out / "20000101_000000_0000aaaa"
    (going / "stages").mkdir(parents=True)
    (going / "stages" / "config.json").write_text(
        json.dumps({"run_created_at": "2000-01-01T00:00:00Z"})
    )
    (out / "notes").mkdir()
    (out / "notes" / "keep.txt").write_text("mine\n")
    (out / "linked").symlink_to(out / _report_run_id(first), target_is_directory=True)
    ids = [_report_run_id(first)]
    for _ in range(3):
        completed = eb("run", "--cwd", str(one_check), "--json", "--keep-runs", "2")
        assert completed.exit_code == 0, completed.stderr
        ids.append(_report_run_id(completed))
    # The two newest finished runs are left, the last one among them; the rest as they were.
    assert _runs(out) == sorted([*ids[-2:], going.name, "notes", "linked"])
    assert (out / "notes" / "keep.txt").read_text() == "mine\n"
    # Without the setting (0, the default) every run is kept.
    eb("run", "--cwd", str(one_check))
    assert len(_runs(out)) == 6


def test_an_old_run_folder_that_cannot_be_deleted_is_a_warning_and_is_tried_again(
    one_check: Path, eb: Callable[..., EbResult]
) -> None:
    first = eb("run", "--cwd", str(one_check), "--json")
    old = one_check / "out" / _report_run_id(first)
    checks = old / "checks"
    stuck = next(path for path in checks.iterdir() if path.is_file())
    # Deletion refused for real, part-way through the folder: an immutable file stops even root
    # (chattr), a folder without write permission stops anyone else.
    as_root = os.geteuid() == 0

    def refuse(refused: bool) -> None:
        if as_root:
            subprocess.run(["chattr", "+i" if refused else "-i", str(stuck)], check=True)
        else:
            checks.chmod(0o500 if refused else 0o700)

    warned = f"Could not delete the old run folder {old} ([core] keep_runs = 1)"
    refuse(True)
    try:
        for _ in range(2):
            completed = eb("run", "--cwd", str(one_check), "--keep-runs", "1")
            # The run's own verdict stands; the folder it could not delete is named, with the
            # setting, and it is still a finished run: the next run tries it again (it was
            # left without its report and its stage files, which no later run counted).
            assert completed.exit_code == 0, completed.stderr
            assert warned in completed.stderr
            assert (old / "report.json").is_file()
            assert (old / "stages" / "config.json").is_file()
            assert stuck.is_file()
    finally:
        refuse(False)
    completed = eb("run", "--cwd", str(one_check), "--keep-runs", "1")
    assert completed.exit_code == 0 and warned not in completed.stderr, completed.stderr
    assert not old.exists()
    assert len(_runs(one_check / "out")) == 1


@pytest.mark.concurrent
def test_a_run_beside_another_runs_checks_keeps_the_old_folders_that_run_watches(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    # Two runs in one project (two terminals, `make -j`): the first to end deleted the old run
    # folders the other's watch looks after, and every check of that other run was an error
    # ("eb's own files changed while this check ran").
    started, release = tmp_path / "started.txt", tmp_path / "release.txt"
    waits = (
        "import pathlib, time\n"
        f"pathlib.Path({str(started)!r}).write_text('yes')\n"
        f"while not pathlib.Path({str(release)!r}).exists():\n"
        "    time.sleep(0.05)\n"
    )
    root = project(
        {
            "eval_checks/quick.yaml": check_yaml("quick"),
            "eval_checks/waits.yaml": check_yaml("waits", script=waits),
        },
        config='[core]\noutput_dir = "out"\n',
    )
    old = _eb_process("run", "-k", "quick", cwd=root)
    assert old.returncode == 0, old.stderr
    (old_run,) = [path for path in (root / "out").iterdir() if path.is_dir()]
    waiting = subprocess.Popen(
        [sys.executable, "-m", "eval_banana", "run", "-k", "waits"],
        cwd=root,
        env={k: v for k, v in os.environ.items() if not k.startswith("EVAL_BANANA_")},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert time.monotonic() < deadline and waiting.poll() is None
            time.sleep(0.05)
        beside = _eb_process("run", "-k", "quick", "--keep-runs", "1", cwd=root)
        assert beside.returncode == 0, beside.stderr
        assert (
            f"Kept the old run folders in {root / 'out'} this time ([core] keep_runs = 1): "
            "another eb run is executing checks there"
        ) in beside.stderr
        assert old_run.is_dir()
    finally:
        release.write_text("go")
        out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, out + err
    assert "eb's own files changed" not in out + err
    # Once no run's checks execute there, the next run deletes what was kept.
    later = _eb_process("run", "-k", "quick", "--keep-runs", "1", cwd=root)
    assert later.returncode == 0 and "Kept the old" not in later.stderr, later.stderr
    assert [path.name for path in (root / "out").iterdir() if path.is_dir()] == [
        json.loads((newest_run_dir(root / "out") / "report.json").read_text())["run_id"]
    ]


def test_keep_runs_leaves_a_run_folder_another_process_is_writing(
    one_check: Path, eb: Callable[..., EbResult]
) -> None:
    # An `eb update` of an old run, between taking its folder and the output folder's turn:
    # pruning deleted the folder under it (a "Stage file missing" error, or a husk of the
    # folders it wrote again). The folder's lock is held here as that update holds it.
    first = eb("run", "--cwd", str(one_check), "--json")
    old = one_check / "out" / _report_run_id(first)
    held = os.open(old, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        completed = eb("run", "--cwd", str(one_check), "--keep-runs", "1")
        assert completed.exit_code == 0, completed.stderr
        assert (
            f"Kept the old run folder {old} this time ([core] keep_runs = 1): another eb "
            "process is writing it; a later run deletes it"
        ) in completed.stderr
        assert (old / "report.json").is_file() and (old / "stages" / "config.json").is_file()
    finally:
        os.close(held)
    completed = eb("run", "--cwd", str(one_check), "--keep-runs", "1")
    assert completed.exit_code == 0 and "Kept the old" not in completed.stderr, completed.stderr
    assert not old.exists()


def test_keep_runs_of_one_keeps_the_new_run_and_leaves_a_flat_output_folder_alone(
    one_check: Path, eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    for _ in range(2):
        assert eb("run", "--cwd", str(one_check), "--keep-runs", "1").exit_code == 0
    (kept,) = list((one_check / "out").iterdir())
    assert (kept / "report.json").is_file()
    flat = tmp_path / "flat"
    completed = eb(
        "run",
        "--cwd",
        str(one_check),
        "--output-dir",
        str(flat),
        "--flat-output",
        "--keep-runs",
        "1",
    )
    assert completed.exit_code == 0
    assert (flat / "report.json").is_file()
    # Shards run into one folder wait there to be merged: a shard's run deletes none of them.
    for shard in ("1/2", "2/2"):
        ran = eb("run", "--cwd", str(one_check), "--shard", shard, "--keep-runs", "1")
        assert ran.exit_code == 0, ran.stderr
    assert len(list((one_check / "out").iterdir())) == 3
