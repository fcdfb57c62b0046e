"""`eb` started as a process of its own, as a user's shell or a CI step starts it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.forking import default_sigint

REPO = Path(__file__).resolve().parent.parent


def eb_process(
    root: Path, *args: str, timeout: float = 120, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`eb ARGS` run in the project `root`, its output captured and its stdin closed (a
    command that asked for input would fail rather than wait); `env` replaces the whole
    environment."""
    return subprocess.run(
        [sys.executable, "-m", "eval_banana", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def python_process(
    root: Path, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`python ARGS` run in `root` with this checkout importable (`-m invoke`, `-c SCRIPT`), its
    output captured and its stdin closed."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def eb_interrupted(
    root: Path, *args: str, started: Path, signum: int = signal.SIGINT
) -> subprocess.CompletedProcess[str]:
    """`eb ARGS` in the project `root`, sent `signum` (Ctrl-C by default) once a check of it has
    written the file `started`, then waited for."""
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_banana", *args],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 30
    while not started.exists():
        assert time.monotonic() < deadline and process.poll() is None, "the check never started"
        time.sleep(0.02)
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def wait_for_fifo_reader_wait(
    *, run: subprocess.Popen[Any], root: Path, written: str, timeout: float
) -> None:
    """Wait until `run` (an eb run whose report goes to a FIFO no one reads) has written
    `written` (a glob under its run folders, such as `*/report.json`) and is well into its
    wait for the FIFO's reader, still running."""
    deadline = time.monotonic() + timeout
    while not list((root / ".eval-banana" / "results").glob(written)):
        assert time.monotonic() < deadline, f"eb wrote no {written}"
        assert run.poll() is None, run.communicate()
        time.sleep(0.02)
    time.sleep(0.5)  # well into its wait for the FIFO's reader
    assert run.poll() is None, run.communicate()
