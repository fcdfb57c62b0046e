"""eb processes sharing a project take turns on eb's own folders whatever state those are in:
a project with no `.eval-banana/` yet, a cache folder not made yet. End to end: real projects in
git, real `eb run` and `eb calibrate` processes side by side, and a judge that is a small
agent script waiting for the test's GO while the other process runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.gitrepo import init_repo
from tests.isolation.rig import started_process, wait_until_started

# The concurrent suite (`pytest -m concurrent`, which .ci/run runs after the README's command):
# two eb processes at once, each test waiting on the other's checks.
pytestmark = pytest.mark.concurrent

# A judge that passes; told WAIT_FOR_GO, it first says it started and waits for GO.
AGENT = """\
import os, sys, time
from pathlib import Path

if "WAIT_FOR_GO" in " ".join(sys.argv):
    Path(os.environ["STARTED_FILE"]).write_text("judging")
    deadline = time.time() + 60
    while not Path(os.environ["GO_FILE"]).exists() and time.time() < deadline:
        time.sleep(0.02)
print('{"score": 1, "reason": "looks fine"}')
"""
OTHER = "schema_version: 1\nid: other\ntype: deterministic\ndescription: o.\nscript: pass\n"
CASES = 'calibration:\n  - {name: fine, expect: pass, files: {"target.txt": "the original\\n"}}\n'
EB = [sys.executable, "-m", "eval_banana"]


def _judge(instructions: str) -> str:
    return (
        "schema_version: 1\nid: judge\ntype: harness_judge\ndescription: j.\n"
        f"instructions: {json.dumps(instructions)}\n{CASES}"
    )


def _project(root: Path, *, cache: str = "off") -> Path:
    """A project with its config in `.eval-banana/` (cache `cache`), a judge waiting for GO and
    a deterministic check `other`."""
    agent = root.parent / "agent.py"
    root.parent.mkdir(parents=True, exist_ok=True)
    agent.write_text(AGENT)
    config = (
        f'[core]\noutput_dir = "runs"\n\n[cache]\nmode = "{cache}"\n\n[harness]\nagent = "fake"\n'
        f"\n[agents.fake]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(agent))}]\n"
        'model_flag = ""\n'
    )
    return init_repo(
        root,
        {
            ".eval-banana/config.toml": config,
            ".gitignore": "runs/\n",
            "target.txt": "the original\n",
            "eval_checks/judge.yaml": _judge("WAIT_FOR_GO"),
            "eval_checks/other.yaml": OTHER,
        },
    )


def _side_by_side(
    tmp_path: Path, *, first: list[str], second: list[str], env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """`first` (an eb command whose judge waits for GO) started; once its judge runs, `second`
    until it ends or says it waits for its turn; then GO. Both, as they ended."""
    started, go = tmp_path / "started", tmp_path / "go"
    environ = {**os.environ, **(env or {}), "STARTED_FILE": str(started), "GO_FILE": str(go)}
    second_err = tmp_path / "second.err"
    running = started_process([*EB, *first], env=environ)
    try:
        wait_until_started(process=running, started=started)
        deadline = time.monotonic() + 60
        with second_err.open("w") as err:
            beside = subprocess.Popen(
                [*EB, *second],
                env=environ,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        while (
            beside.poll() is None
            and "Waiting for another eb" not in second_err.read_text()
            and time.monotonic() < deadline
        ):
            time.sleep(0.02)
    finally:
        go.write_text("go")
    out, _ = beside.communicate(timeout=120)
    done_second = subprocess.CompletedProcess(beside.args, beside.returncode, out, "")
    done_second.stderr = second_err.read_text()
    out, err = running.communicate(timeout=120)
    done_first = subprocess.CompletedProcess(running.args, running.returncode, out, err)
    for done in (done_first, done_second):
        assert "Traceback" not in done.stderr, done.stderr
    return done_first, done_second


def test_runs_take_turns_in_a_project_with_no_eb_folder_yet(tmp_path: Path) -> None:
    # No `.eval-banana/` at all (the agent is chosen by an environment variable): a run whose
    # judge runs, and another run writing junit.xml into the project. The second run made
    # eb's folder (the cache's secret, written.json) and its report under the judge, which
    # was charged with them, as no turn was held on a folder not there.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pi = bin_dir / "pi"
    pi.write_text(f"#!{sys.executable}\n{AGENT}")
    pi.chmod(0o755)
    root = init_repo(
        tmp_path / "proj",
        {
            "eval_checks/judge.yaml": _judge("WAIT_FOR_GO"),
            "eval_checks/other.yaml": OTHER,
            "target.txt": "the original\n",
        },
    )
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "EVAL_BANANA_HARNESS_AGENT": "pi"}
    first, second = _side_by_side(
        tmp_path,
        first=["run", "--cwd", str(root), "--no-html", "--check-id", "judge"]
        + ["--output-dir", str(tmp_path / "out-first")],
        second=["run", "--cwd", str(root), "--no-html", "--check-id", "other"]
        + ["--output-dir", str(tmp_path / "out-second"), "--junit-xml", "junit.xml"],
        env=env,
    )
    assert second.returncode == 0, second.stdout + second.stderr
    assert (root / "junit.xml").is_file()
    assert "changed while this judge ran" not in first.stdout, first.stdout
    assert first.returncode == 0, first.stdout + first.stderr
    # Only eb's folder was made for the turn: no file of its own.
    assert (root / ".eval-banana").is_dir()


def _store_other(root: Path) -> None:
    """Run the check `other` once, so the cache folder is there with its verdict."""
    made = subprocess.run(
        [*EB, "run", "--cwd", str(root), "--no-html", "--check-id", "other"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr


# A judge's command in each form that stores no verdict: calibration, and runs whose cache is
# off or read-only.
STORING_NOTHING = pytest.mark.parametrize(
    "first",
    [["calibrate"], ["run", "--no-html", "--check-id", "judge", "--cache", "off"]]
    + [["run", "--no-html", "--check-id", "judge", "--cache", "read-only"]],
    ids=["calibrate", "run-cache-off", "run-cache-read-only"],
)


@STORING_NOTHING
def test_a_cache_made_beside_running_judges_is_no_judge_s_doing(
    tmp_path: Path, first: list[str]
) -> None:
    # No cache folder yet: judges running (that watch for one to appear, since a judge could
    # plant one with its own secret), and a cache-on run beside them. That run made the
    # folder to hold it and stored its verdict there: the judges were errors, and their
    # process removed the whole folder, that run's stored verdict with it.
    root = _project(tmp_path / "proj", cache="on")
    done, beside = _side_by_side(
        tmp_path,
        first=[*first, "--cwd", str(root)],
        second=["run", "--cwd", str(root), "--no-html", "--check-id", "other"],
    )
    assert beside.returncode == 0, beside.stdout + beside.stderr
    assert "changed while this judge ran" not in done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    # Made while judges watched for it, the cache would be theirs to drop: it waits for them.
    assert "the verdicts of this run are not stored" in beside.stderr, beside.stderr
    assert not (root / ".eval-banana" / "cache").exists()
    # Once they have ended, a run makes the cache and stores its verdict there.
    stored = subprocess.run(
        [*EB, "run", "--cwd", str(root), "--no-html", "--check-id", "other"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert stored.returncode == 0 and "not stored" not in stored.stderr, stored.stderr
    assert list((root / ".eval-banana" / "cache" / "entries").glob("*/*.json"))


def test_eb_calibrate_started_by_a_check_of_the_project_is_refused_at_once(
    tmp_path: Path,
) -> None:
    # A check running `eb calibrate` in the project its run executes checks in: the
    # calibration waited for the run's checks to end before writing its record, and the run
    # waited for the check, until the check's timeout.
    root = _project(tmp_path / "proj")
    source = Path(__file__).resolve().parents[2]
    inner = (
        "import os, subprocess, sys\n"
        f"env = dict(os.environ, PYTHONPATH={str(source)!r}, GO_FILE='go', STARTED_FILE='s')\n"
        f"done = subprocess.run([{sys.executable!r}, '-m', 'eval_banana', 'calibrate'],"
        " capture_output=True, text=True, env=env)\n"
        "print(done.returncode, done.stderr)\n"
        "sys.exit(done.returncode)\n"
    )
    check = "schema_version: 1\nid: inner\ntype: deterministic\ndescription: i.\n"
    (root / "eval_checks" / "inner.yaml").write_text(check + f"script: {json.dumps(inner)}\n")
    (root / "go").write_text("go")
    began = time.monotonic()
    done = subprocess.run(
        [*EB, "run", "--cwd", str(root), "--no-html", "--check-id", "inner"]
        + ["--check-timeout-seconds", "60"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert time.monotonic() - began < 40, done.stdout + done.stderr
    assert done.returncode == 1, done.stdout + done.stderr
    run_dir = max((root / "runs").iterdir(), key=lambda path: path.stat().st_mtime_ns)
    said = "".join(path.read_text() for path in (run_dir / "checks").glob("inner-*.stdout*"))
    assert said.startswith("2 "), said
    assert "eb calibrate was started by a check of an eb run" in said, said
    assert "run eb calibrate outside eb run's checks" in said, said
    assert not (root / ".eval-banana" / "calibration.json").exists()


def test_a_run_beside_eb_calibrate_names_what_holds_the_cache(tmp_path: Path) -> None:
    # The cache is there; `eb calibrate`'s judges hold it while a run beside them ends. The
    # run said `Another eb run is executing checks with this cache`: there was no such run.
    root = _project(tmp_path / "proj", cache="on")
    _store_other(root)
    other = root / "eval_checks" / "other.yaml"
    other.write_text(other.read_text().replace("script: pass", 'script: "pass  # v2"'))
    done, beside = _side_by_side(
        tmp_path,
        first=["calibrate", "--cwd", str(root)],
        second=["run", "--cwd", str(root), "--no-html", "--check-id", "other"],
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert beside.returncode == 0, beside.stdout + beside.stderr
    assert (
        "warning: Another eb process (a run's checks or a calibration's judges) is running "
        "with this cache: the verdicts of this run are not stored"
    ) in beside.stderr, beside.stderr


@pytest.mark.parametrize("target", ["gone.json", "kept.json"], ids=["dangling", "to-a-file"])
def test_another_run_rewriting_a_linked_lastfailed_json_is_no_judge_s_doing(
    tmp_path: Path, target: str
) -> None:
    # `.eval-banana/lastfailed.json` a symbolic link (to no file, or to a file): another run
    # ending beside a judge rewrites it (a rename over the link). Only the link's target was
    # taken for eb's, so the judge was charged: `The project changed while this judge ran:
    # .eval-banana/lastfailed.json`.
    root = _project(tmp_path / "proj")
    bad = "schema_version: 1\nid: bad\ntype: deterministic\ndescription: b.\n"
    (root / "eval_checks" / "bad.yaml").write_text(bad + 'script: "raise SystemExit(1)"\n')
    if target == "kept.json":
        (root / ".eval-banana" / target).write_text('{"failed": {}, "schema_version": 1}\n')
    (root / ".eval-banana" / "lastfailed.json").symlink_to(target)
    done, beside = _side_by_side(
        tmp_path,
        first=["run", "--cwd", str(root), "--no-html", "--check-id", "judge"],
        second=["run", "--cwd", str(root), "--no-html", "--check-id", "bad"]
        + ["--output-dir", str(tmp_path / "out-second")],
    )
    assert beside.returncode == 1, beside.stdout + beside.stderr
    assert "The project changed" not in done.stdout + done.stderr, done.stdout
    assert done.returncode == 0, done.stdout + done.stderr


@STORING_NOTHING
def test_a_cache_folder_without_its_lock_file_is_held_by_judges_that_do_not_store(
    tmp_path: Path, first: list[str]
) -> None:
    # The cache folder is there but its `.lock` is not (a CI cache restore that dropped it, a
    # folder made by hand). A process that stores nothing opened no lock file, so held
    # nothing; the cache-on run beside its judges made `.lock`, took it alone and stored its
    # verdict while they ran: the judges were errors (`eb's own files changed while this
    # judge ran: .eval-banana/cache/...`) and their process removed that run's stored files.
    root = _project(tmp_path / "proj", cache="on")
    _store_other(root)
    cache = root / ".eval-banana" / "cache"
    (cache / ".lock").unlink()
    other = root / "eval_checks" / "other.yaml"
    other.write_text(other.read_text().replace("script: pass", 'script: "pass  # v2"'))
    stored_before = sorted(cache.rglob("entries/*/*.json"))
    done, beside = _side_by_side(
        tmp_path,
        first=[*first, "--cwd", str(root)],
        second=["run", "--cwd", str(root), "--no-html", "--check-id", "other"],
    )
    assert beside.returncode == 0, beside.stdout + beside.stderr
    assert "changed while this judge ran" not in done.stdout + done.stderr, done.stdout
    assert done.returncode == 0, done.stdout + done.stderr
    # The cache-on run took its turn after the judges' process, and stored nothing meanwhile.
    assert "the verdicts of this run are not stored" in beside.stderr, beside.stderr
    assert sorted(cache.rglob("entries/*/*.json")) == stored_before
    assert (cache / ".lock").is_file()  # made by the cache-on run, which may write there
