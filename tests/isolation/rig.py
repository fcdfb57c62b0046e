"""`eb run` of an isolation test's project, as a process of its own, read back from its report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
