"""bench/shared_cache.py (W17) still runs end to end, at tiny sizes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.bench
@pytest.mark.slow
def test_w17_prints_both_rows_at_tiny_sizes() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "bench/shared_cache.py",
            "--judges",
            "4",
            "--slow-judges",
            "3",
            "--runs",
            "1",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| W17 |")]
    assert len(rows) == 2, done.stdout
    assert "4 requests (1.00 per check)" in rows[0]
