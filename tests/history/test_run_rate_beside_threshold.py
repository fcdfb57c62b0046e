"""`eb history` shows a run's rate beside the threshold it fell below: a real `eb run` of three
checks, two passing, under --pass-threshold 0.667, then `eb history`. Whole percents would
read 67%, above the 66.7% the run is said to be below."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _eb(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("EVAL_BANANA_")}
    return subprocess.run(
        [sys.executable, "-m", "eval_banana", *args, "--cwd", str(root)],
        env={**environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_run_rate_never_reads_as_its_threshold_or_past_it(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "eval_checks").mkdir(parents=True)
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text("")
    for index, script in enumerate(["pass", "pass", "import sys; sys.exit('nope')"]):
        (root / "eval_checks" / f"c{index}.yaml").write_text(
            f"schema_version: 1\nid: c{index}\ntype: deterministic\ndescription: c{index}\n"
            f"script: {script!r}\n"
        )
    ran = _eb(root, "run", "--pass-threshold", "0.667")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    shown = _eb(root, "history")
    assert shown.returncode == 0, shown.stderr
    [row] = [line for line in shown.stdout.splitlines() if "FAILED" in line]
    assert "below the threshold 66.7%" in row
    assert "66.67%" in row.split(), row
    assert "67%" not in row.split(), row
