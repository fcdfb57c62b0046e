"""`eb update`, `eb stage` and `eb status` beside another eb process: real processes side by
side, a check that waits for a file the test writes, never a guess at timing.

A run folder is written by one eb process at a time (an `eb update` took a running run for a
stopped one and ran its checks a second time in its folder, each process clearing the other's
evidence), and a run folder beside another run's executing checks is rewritten only once they
end (every check of that run became an error: its watch covers the run folders beside it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.builders import newest_run_dir
from tests.processes import eb_process

# The concurrent suite (`pytest -m concurrent`, which .ci/run runs after the README's command):
# two eb processes at once, each test waiting on the other's checks.
pytestmark = pytest.mark.concurrent

TAMPERED = "eb's own files changed"


def _waiting_check(check_id: str, *, tmp: Path) -> str:
    """A check that logs each start, then waits until the test writes `release.txt`."""
    script = (
        "import pathlib, time\n"
        f"log = pathlib.Path({str(tmp / 'started.log')!r})\n"
        f"log.open('a').write({check_id!r} + '\\n')\n"
        f"while not pathlib.Path({str(tmp / 'release.txt')!r}).exists():\n"
        "    time.sleep(0.02)\n"
        "assert pathlib.Path('data.txt').read_text() == 'good\\n', 'data.txt is not good'\n"
    )
    return (
        f"schema_version: 1\nid: {check_id}\ntype: deterministic\n"
        f"description: Waits for the test.\ninputs: [data.txt]\n"
        "script: |\n" + "".join(f"  {line}\n" for line in script.splitlines())
    )


@pytest.fixture
def root(project: Callable[..., Path], tmp_path: Path) -> Path:
    return project(
        {
            "eval_checks/waits.yaml": _waiting_check("waits", tmp=tmp_path),
            "eval_checks/quick.yaml": "schema_version: 1\nid: quick\ntype: deterministic\n"
            "description: Quick.\nscript: pass\n",
            "data.txt": "good\n",
        },
        config='[core]\noutput_dir = "out"\n',
    )


def _environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("EVAL_BANANA_")}


def _eb(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return eb_process(root, *args, timeout=60, env=_environ())


def _background(root: Path, *args: str, log: Path) -> subprocess.Popen[str]:
    """`eb ARGS` going on in the background, its stdout and stderr in `log`."""
    with log.open("w") as stream:
        return subprocess.Popen(
            [sys.executable, "-m", "eval_banana", *args],
            cwd=root,
            env=_environ(),
            stdin=subprocess.DEVNULL,
            stdout=stream,
            stderr=subprocess.STDOUT,
            text=True,
        )


def _until(ready: Callable[[], bool], *, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while not ready():
        assert process.poll() is None, "the background eb ended before it was expected to"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _started(tmp: Path) -> list[str]:
    log = tmp / "started.log"
    return log.read_text().split() if log.exists() else []


def _finished(process: subprocess.Popen[str], *, log: Path) -> str:
    process.wait(timeout=60)
    return log.read_text()


def _result(run_dir: Path, check_id: str) -> dict[str, object]:
    executed = json.loads((run_dir / "stages" / "execute.json").read_text())
    (result,) = [r for r in executed["results"] if r["check_id"] == check_id]
    return dict(result)


def test_a_run_still_executing_is_refused_by_update_and_stage_and_status_says_so(
    root: Path, tmp_path: Path
) -> None:
    running = _background(root, "run", "-k", "waits", log=tmp_path / "run.log")
    try:
        _until(lambda: _started(tmp_path) == ["waits"], process=running)
        (run_dir,) = (root / "out").iterdir()
        status = _eb(root, "status")
        # Its missing stage files are still to come: no advice to rerun them.
        assert status.returncode == 1, status.stdout + status.stderr
        assert (
            f"This run is still in progress: another eb process (pid {running.pid}) is "
            "writing this folder. Wait for it to end, then run eb status again."
        ) in status.stdout
        assert "eb update" not in status.stdout
        for command in (("update",), ("stage", "execute"), ("stage", "report")):
            refused = _eb(root, *command)
            assert refused.returncode == 2, refused.stdout + refused.stderr
            assert (
                f"Another eb process (pid {running.pid}) is writing the run folder {run_dir}"
            ) in refused.stderr
            assert "hint: wait for it to end, then run this command again" in refused.stderr
    finally:
        (tmp_path / "release.txt").write_text("go")
        out = _finished(running, log=tmp_path / "run.log")
    assert running.returncode == 0, out
    assert _started(tmp_path) == ["waits"]  # its check ran once, in one process
    assert _result(run_dir, "waits")["status"] == "passed"
    assert "This run is still in progress" not in _eb(root, "status").stdout


def test_a_run_killed_outright_leaves_its_folder_to_update(root: Path, tmp_path: Path) -> None:
    running = _background(root, "run", "-k", "waits", log=tmp_path / "run.log")
    try:
        _until(lambda: _started(tmp_path) == ["waits"], process=running)
    finally:
        running.send_signal(signal.SIGKILL)
        running.wait(timeout=30)
        (tmp_path / "release.txt").write_text("go")  # its check, left behind, ends too
    # The kernel let go of its lock with the process: nothing is left to clear by hand.
    status = _eb(root, "status")
    assert "in progress" not in status.stdout and "To rerun exactly" in status.stdout
    updated = _eb(root, "update")
    assert updated.returncode == 0, updated.stdout + updated.stderr
    (run_dir,) = (root / "out").iterdir()
    assert _result(run_dir, "waits")["status"] == "passed"


def test_a_second_update_of_one_run_folder_is_refused_and_the_first_keeps_its_verdict(
    root: Path, tmp_path: Path
) -> None:
    (tmp_path / "release.txt").write_text("go")
    assert _eb(root, "run").returncode == 0
    run_dir = newest_run_dir(root / "out")
    (tmp_path / "release.txt").unlink()
    (tmp_path / "started.log").unlink()
    (root / "data.txt").write_text("bad\n")
    first = _background(root, "update", log=tmp_path / "first.log")
    try:
        _until(lambda: _started(tmp_path) == ["waits"], process=first)
        second = _eb(root, "update")
        assert second.returncode == 2, second.stdout + second.stderr
        assert f"is writing the run folder {run_dir}" in second.stderr
    finally:
        (tmp_path / "release.txt").write_text("go")
        out = _finished(first, log=tmp_path / "first.log")
    assert first.returncode == 1, out  # the check fails now, on its own words
    assert _started(tmp_path) == ["waits"]
    result = _result(run_dir, "waits")
    assert result["status"] == "failed" and "data.txt is not good" in str(result["reason"])
    # The cache stored that verdict whole: the next run reuses the same reason.
    again = _eb(root, "run", "-k", "waits")
    assert "data.txt is not good" in again.stdout, again.stdout + again.stderr


def _made_stale(root: Path) -> None:
    """A setting changed since: every stage of the runs made before is stale."""
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "out"\npass_threshold = 0.5\n'
    )


def test_an_update_beside_another_runs_checks_waits_for_them_to_end(
    root: Path, tmp_path: Path
) -> None:
    assert _eb(root, "run", "-k", "quick").returncode == 0
    old = newest_run_dir(root / "out")
    before = (old / "stages" / "config.json").read_bytes()
    _made_stale(root)
    running = _background(root, "run", "-k", "waits", log=tmp_path / "run.log")
    updating = None
    try:
        _until(lambda: _started(tmp_path) == ["waits"], process=running)
        updating = _background(root, "update", "--run-dir", str(old), log=tmp_path / "up.log")
        waiting = f"Waiting for another eb run's checks (or the update of a run) in {old.parent}"
        _until(lambda: waiting in (tmp_path / "up.log").read_text(), process=updating)
        assert (old / "stages" / "config.json").read_bytes() == before
    finally:
        (tmp_path / "release.txt").write_text("go")
        out = _finished(running, log=tmp_path / "run.log")
        if updating is not None:
            updated = _finished(updating, log=tmp_path / "up.log")
    assert running.returncode == 0 and TAMPERED not in out, out
    assert updating is not None and updating.returncode == 0, updated
    assert updated.count("Waiting for another eb run's checks") == 1
    assert _eb(root, "status", "--run-dir", str(old)).returncode == 0


def test_a_run_beside_an_update_waits_for_it_before_its_checks_start(
    root: Path, tmp_path: Path
) -> None:
    (tmp_path / "release.txt").write_text("go")
    assert _eb(root, "run").returncode == 0
    old = newest_run_dir(root / "out")
    (tmp_path / "release.txt").unlink()
    (root / "data.txt").write_text("still good\n")  # `waits` runs again, and fails
    updating = _background(root, "update", log=tmp_path / "up.log")
    running = None
    try:
        _until(lambda: _started(tmp_path) == ["waits", "waits"], process=updating)
        running = _background(root, "run", "-k", "quick", log=tmp_path / "run.log")
        waiting = f"Waiting for another eb process changing {old.parent} to end"
        _until(lambda: waiting in (tmp_path / "run.log").read_text(), process=running)
    finally:
        (tmp_path / "release.txt").write_text("go")
        updated = _finished(updating, log=tmp_path / "up.log")
        if running is not None:
            out = _finished(running, log=tmp_path / "run.log")
    assert updating.returncode == 1 and TAMPERED not in updated, updated
    assert running is not None and running.returncode == 0 and TAMPERED not in out, out
    assert _result(old, "waits")["status"] == "failed"


@pytest.mark.parametrize(
    ("command", "signum"),
    [(("update",), signal.SIGINT), (("stage", "config"), signal.SIGTERM)],
    ids=["update-SIGINT", "stage-SIGTERM"],
)
def test_a_signal_ends_the_wait_for_another_runs_checks_and_rewrites_nothing(
    root: Path, tmp_path: Path, command: tuple[str, ...], signum: signal.Signals
) -> None:
    """Ctrl-C (or SIGTERM) while `eb update` or `eb stage` waits for another run's checks
    beside its folder: the wait ends at once, exit 3, and no stage file is rewritten (the
    update went on waiting until the other run ended, then rewrote every stale stage)."""
    assert _eb(root, "run", "-k", "quick").returncode == 0
    old = newest_run_dir(root / "out")
    stages = {path.name: path.read_bytes() for path in (old / "stages").iterdir()}
    _made_stale(root)
    running = _background(root, "run", "-k", "waits", log=tmp_path / "run.log")
    try:
        _until(lambda: _started(tmp_path) == ["waits"], process=running)
        waiter = _background(root, *command, "--run-dir", str(old), log=tmp_path / "up.log")
        waiting = f"Waiting for another eb run's checks (or the update of a run) in {old.parent}"
        _until(lambda: waiting in (tmp_path / "up.log").read_text(), process=waiter)
        waiter.send_signal(signum)
        waiter.wait(timeout=10)  # while the other run's check still waits for the test
        said = (tmp_path / "up.log").read_text()
        assert running.poll() is None
    finally:
        (tmp_path / "release.txt").write_text("go")
        out = _finished(running, log=tmp_path / "run.log")
    assert waiter.returncode == 3, said
    assert f"Interrupted before rewriting anything in {old}" in said
    assert ": rerun" not in said
    assert {path.name: path.read_bytes() for path in (old / "stages").iterdir()} == stages
    assert running.returncode == 0 and TAMPERED not in out, out
    # Still stale, so a later update rebuilds it.
    assert _eb(root, "status", "--run-dir", str(old)).returncode == 1
    assert _eb(root, "update", "--run-dir", str(old)).returncode == 0
