"""Too many open files is infrastructure, never a verdict: whichever of eb's opens the system
refuses (a check's output file, the script it writes, a pipe to start the check, a module a
lazy import reads), the run is aborted with exit 3 and one fault that says what eb was doing
and how to fix it, never a check's error (exit 1) and never "Cannot write" a file eb reads.

eb runs under a real, low open-files limit (RLIMIT_NOFILE) with many checks side by side.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import check_yaml

resource = pytest.importorskip("resource")

REPO = Path(__file__).resolve().parent.parent
CHECKS = 24
HINT = "hint: raise the open-files limit (`ulimit -n`, now {limit}) or lower --max-parallel-checks"


def _project(root: Path) -> Path:
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\nmax_parallel_checks = 8\n\n[history]\nmode = "on"\n'
    )
    (root / "eval_checks").mkdir()
    for n in range(CHECKS):
        script = "import time\ntime.sleep(0.2)\nprint('fine')"
        (root / "eval_checks" / f"ok{n:02}.yaml").write_text(check_yaml(f"ok{n:02}", script=script))
    return root


def _eb_run_with_at_most(root: Path, *, open_files: int) -> subprocess.CompletedProcess[str]:
    def limited() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, hard))

    return subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cache", "off"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=limited,
    )


@pytest.mark.parametrize("open_files", [16, 24])
def test_too_many_open_files_aborts_the_run_as_a_resource_fault(
    tmp_path: Path, open_files: int
) -> None:
    # It ended with exit 1 (a check `error - [Errno 24] Too many open files`) in one run and
    # exit 3 in the next, saying "Cannot write .../logging/__init__.py" (a module eb only
    # read) or "Output could not be written: ...stderr.txt" (a file eb opened to read).
    root = _project(tmp_path / "proj")
    done = _eb_run_with_at_most(root, open_files=open_files)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "Cannot write" not in done.stderr, done.stderr
    # Besides the progress lines ([n/m] per check): the fault and its fix.
    lines = [line for line in done.stderr.splitlines() if line.strip() and line[0] != "["]
    assert len(lines) == 2, done.stderr
    fault, hint = lines
    assert fault.startswith("Too many open files while eb was "), fault
    assert fault.endswith("; the run is aborted"), fault
    assert hint == HINT.format(limit=open_files)
    (run,) = (root / ".eval-banana" / "results").iterdir()
    report = json.loads((run / "report.json").read_text())
    assert (report["aborted_by"], report["run_passed"]) == ("resource_fault", False)
    faulted = [c["check_id"] for c in report["checks"] if "resource_fault" in c["details"]]
    assert faulted, report["checks"]
    for check in report["checks"]:
        # No verdict comes of it: never a check's own error about open files.
        assert "Errno 24" not in (check["error_detail"] or ""), check
    # Those checks say nothing of how they behave: the history leaves them out.
    (record,) = (
        json.loads(p.read_text()) for p in (root / ".eval-banana" / "history").glob("*.json")
    )
    early = {check["id"] for check in record["checks"] if check.get("early_error")}
    assert set(faulted) <= early, (faulted, record["checks"])
