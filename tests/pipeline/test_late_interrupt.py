"""An interrupt once every check of a run has ended: a real `eb run` in its own process, held
where it appends to the GitHub step summary (a FIFO no one reads yet), after it wrote
execute.json and report.json. The run still ends as an interrupted run (exit 3), and every file
that says how it ended says so."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.gitrepo import init_repo

REPO = Path(__file__).resolve().parents[2]
CHECK = """\
schema_version: 1
id: {name}
type: deterministic
description: passes
script: |
  print("ok")
"""


def _project(root: Path) -> Path:
    """Two passing checks in a git repository, with the verdict cache and its replays on."""
    files: dict[str, str | bytes] = {
        ".eval-banana/config.toml": '[core]\noutput_dir = "runs"\n\n[cache]\nmode = "on"\n'
        "replay = true\n",
        ".gitignore": "runs/\n.eval-banana/cache/\n.eval-banana/history/\n",
    }
    for name in ("one", "two"):
        files[f"eval_checks/{name}.yaml"] = CHECK.format(name=name)
    return init_repo(root, files)


def _drain(*, fd: int, run: subprocess.Popen[bytes]) -> bytes:
    """All eb writes into the FIFO through `fd` (open for reading, not blocking) until it ends."""
    taken = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            chunk = None
        if chunk:
            taken += chunk
        elif run.poll() is not None:
            return taken
        else:
            time.sleep(0.01)


@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda signum: signum.name
)
def test_an_interrupt_after_the_checks_ended_makes_the_run_aborted_in_every_report(
    tmp_path: Path, signum: signal.Signals
) -> None:
    root = _project(tmp_path / "proj")
    summary = tmp_path / "summary.md"
    os.mkfifo(summary)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("EVAL_BANANA_")}
    run = subprocess.Popen(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root)],
        env={**environ, "PYTHONPATH": str(REPO), "GITHUB_STEP_SUMMARY": str(summary)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    fd = -1
    try:
        # report.json is written before the step summary, whose FIFO holds eb until it is read.
        deadline = time.monotonic() + 30
        while not list((root / "runs").glob("*/report.json")):
            assert time.monotonic() < deadline, "eb wrote no report.json"
            assert run.poll() is None, run.communicate()
            time.sleep(0.02)
        run.send_signal(signum)
        fd = os.open(summary, os.O_RDONLY | os.O_NONBLOCK)
        summaries = _drain(fd=fd, run=run).decode()
        stdout, stderr = run.communicate(timeout=30)
    finally:
        if fd >= 0:
            os.close(fd)
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 3, stdout.decode() + stderr.decode()
    assert "Run aborted (interrupt" in stderr.decode()
    [run_dir] = (root / "runs").iterdir()
    report = json.loads((run_dir / "report.json").read_text())
    # The verdicts the checks reached, in a run that does not pass.
    assert report["aborted_by"] == "interrupt"
    assert report["run_passed"] is False
    assert report["passed_checks"] == 2
    assert report["not_run_checks"] == 0
    assert "aborted" in (run_dir / "report.md").read_text().lower()
    stages = run_dir / "stages"
    execute_bytes = (stages / "execute.json").read_bytes()
    score = json.loads((stages / "score.json").read_text())
    assert json.loads(execute_bytes)["aborted_by"] == "interrupt"
    assert score["aborted_by"] == "interrupt"
    # The stage files still chain: score.json names the execute.json written last.
    assert score["inputs"]["execute"] == "sha256:" + hashlib.sha256(execute_bytes).hexdigest()
    # One history record of the run, saying it was aborted; no replay kept.
    [record] = [
        json.loads(path.read_text()) for path in (root / ".eval-banana" / "history").rglob("*.json")
    ]
    assert record["exit_code"] == 3, record
    assert "aborted" in summaries.lower()
    replays = root / ".eval-banana" / "cache" / "runs"
    assert not list(replays.rglob("*.json"))
    # The same run not interrupted keeps its replay: the interrupt is what kept it out.
    again = subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root)],
        env={**environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        timeout=60,
    )
    assert again.returncode == 0, again.stderr.decode()
    assert list(replays.rglob("*.json"))
