"""`eb run` of an isolation test's project, as a process of its own, read back from its report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def run_checks(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[int, dict[str, dict[str, Any]]]:
    """The exit code and each check's result (by id) of `eb run` in `root` (its runs under
    `runs/`, the page not drawn); a traceback fails the test."""
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), "--no-html", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    run_dir = max((root / "runs").iterdir(), key=lambda path: path.stat().st_mtime_ns)
    report = json.loads((run_dir / "report.json").read_text())
    return done.returncode, {check["check_id"]: check for check in report["checks"]}


def started_process(command: list[str], *, env: dict[str, str]) -> subprocess.Popen[str]:
    """`command` started with `env`, its output read through pipes (`communicate`)."""
    return subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until_started(*, process: subprocess.Popen[str], started: Path) -> None:
    """Until the check `process` runs has written `started` (a minute at most); a process that
    ended first fails the test with its output."""
    deadline = time.monotonic() + 60
    while not started.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert started.exists(), process.communicate()
