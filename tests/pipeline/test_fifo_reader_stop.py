"""A report eb writes into a FIFO no one reads (the step summary, `--result-out`,
`--junit-xml`): a real `eb run` waiting for that reader, then SIGTERM. The wait ends: eb exits 3
at once, every report and the history record say the run was interrupted, no green copy went
anywhere, and no other run's turn was held while eb waited."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.forking import default_sigint
from tests.processes import wait_for_fifo_reader_wait

REPO = Path(__file__).resolve().parents[2]
CHECK = """\
schema_version: 1
id: ok
type: deterministic
description: passes
script: "pass"
"""


def _project(root: Path) -> Path:
    (root / "eval_checks").mkdir(parents=True)
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text("")
    (root / "eval_checks" / "ok.yaml").write_text(CHECK)
    return root


def _held_by_another(folder: Path) -> bool:
    """Whether some process holds a flock on `folder` (the project's reports turn)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@pytest.mark.parametrize("kind", ["summary", "result", "junit"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_ends_the_wait_for_a_fifo_reader_and_the_run_is_red_everywhere(
    tmp_path: Path, kind: str, signum: signal.Signals
) -> None:
    root = _project(tmp_path / "proj")
    # Inside the project, where a watch would count it: the write takes the project's turn.
    fifo = root / "report.fifo"
    os.mkfifo(fifo)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("EVAL_BANANA_")}
    environ.pop("GITHUB_STEP_SUMMARY", None)
    environ["PYTHONPATH"] = str(REPO)
    command = [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root)]
    if kind == "summary":
        environ["GITHUB_STEP_SUMMARY"] = str(fifo)
    else:
        command += ["--result-out" if kind == "result" else "--junit-xml", str(fifo)]
    run = subprocess.Popen(
        command,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )
    fd = -1
    try:
        wait_for_fifo_reader_wait(run=run, root=root, written="*/report.json", timeout=30)
        assert not _held_by_another(root), "the project's turn is held while eb waits"
        started = time.monotonic()
        run.send_signal(signum)
        stdout, stderr = run.communicate(timeout=10)
        took = time.monotonic() - started
        # A reader now finds nothing eb wrote into the FIFO, green or red.
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        assert os.read(fd, 65536) == b""
    finally:
        if fd >= 0:
            os.close(fd)
        if run.poll() is None:
            run.kill()
            run.wait()
    told = stdout.decode() + stderr.decode()
    assert run.returncode == 3, told
    assert took < 5, told
    assert "Passed: yes" not in told
    assert "Run aborted (interrupt" in told
    [run_dir] = (root / ".eval-banana" / "results").iterdir()
    report = json.loads((run_dir / "report.json").read_text())
    assert report["aborted_by"] == "interrupt"
    assert report["run_passed"] is False
    [record] = [
        json.loads(path.read_text()) for path in (root / ".eval-banana" / "history").glob("*.json")
    ]
    assert record["exit_code"] == 3, record
    assert record["passed"] is False, record


def test_a_step_summary_warning_is_told_once_when_the_reports_are_written_again(
    tmp_path: Path,
) -> None:
    # The reports of a run interrupted while they were written are written again: the step
    # summary's link loop was told twice, once per pass (warnings were told once only when
    # their words matched; this one was not even compared).
    root = _project(tmp_path / "proj")
    fifo = tmp_path / "result.fifo"
    os.mkfifo(fifo)
    loop = tmp_path / "summary.md"
    loop.symlink_to(loop)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("EVAL_BANANA_")}
    environ["GITHUB_STEP_SUMMARY"] = str(loop)
    environ["PYTHONPATH"] = str(REPO)
    run = subprocess.Popen(
        [sys.executable, "-m", "eval_banana", "run", "--no-html", "--cwd", str(root)]
        + ["--result-out", str(fifo)],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        wait_for_fifo_reader_wait(run=run, root=root, written="*/stages/report.json", timeout=30)
        run.send_signal(signal.SIGINT)
        _, stderr = run.communicate(timeout=10)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 3, stderr
    assert "they are written again" in stderr, stderr
    told = [line for line in stderr.splitlines() if "$GITHUB_STEP_SUMMARY (" in line]
    assert told == [
        f"warning: could not append the report to $GITHUB_STEP_SUMMARY ({loop}): it is a "
        "symbolic link loop; report.md in the run folder holds it"
    ], stderr
