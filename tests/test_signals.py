"""Runs killed at random moments: every JSON file left behind parses, and no process the run
started survives it.

SIGINT, SIGTERM and SIGHUP eb handles: it ends its checks and writes its reports. SIGKILL gives
eb no chance to act: the files must still be whole (every write is atomic), and the guardian
eb keeps while checks run ends the checks' processes a moment later (runners/guardian.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Each script writes its pid, and the daemonizing one its daemon's pid, into pids/.
SLEEPER = """\
import os, sys, time
from pathlib import Path
Path({pids!r}, f"{{os.getpid()}}").write_text("")
time.sleep({seconds})
print("done")
"""
DAEMON = """\
import os, time
from pathlib import Path
pids = Path({pids!r})
(pids / f"{{os.getpid()}}").write_text("")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        (pids / f"{{os.getpid()}}").write_text("")
        time.sleep(120)
        os._exit(0)
    os._exit(0)
time.sleep(0.8)
"""
AGENT = """\
import os, sys, time
from pathlib import Path
Path({pids!r}, f"{{os.getpid()}}").write_text("")
time.sleep(0.6)
print('{{"score": 1, "reason": "fine"}}')
"""


def _project(root: Path, pids: Path) -> Path:
    (root / ".eval-banana").mkdir(parents=True)
    agent = root / "agent.py"
    agent.write_text(AGENT.format(pids=str(pids)))
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\nmax_parallel_checks = 3\n\n[harness]\nagent = "slow"\n\n'
        f"[agents.slow]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(agent))}]\n"
        'model_flag = ""\n'
    )
    checks = root / "eval_checks"
    checks.mkdir()
    scripts = {f"sleep_{n}": SLEEPER.format(pids=str(pids), seconds=0.2 * n) for n in range(1, 6)}
    scripts["daemon"] = DAEMON.format(pids=str(pids))
    for name, script in scripts.items():
        (checks / f"{name}.yaml").write_text(
            f"schema_version: 1\nid: {name}\ntype: deterministic\ndescription: {name}.\n"
            f"script: {json.dumps(script)}\n"
        )
    for n in range(2):
        (checks / f"judge_{n}.yaml").write_text(
            f"schema_version: 1\nid: judge_{n}\ntype: harness_judge\ndescription: j.\n"
            "instructions: Decide.\n"
        )
    return root


def _eb_run_started(*, root: Path, stderr: Path) -> subprocess.Popen[bytes]:
    """`eb run` in `root` as a process of its own, its stderr kept in the file `stderr`."""
    with stderr.open("wb") as errors:
        return subprocess.Popen(
            [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _described(pid: int) -> str:
    """A survivor as a failure shows it: its state, parent and command line."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return f"{pid} (gone)"
    return f"{pid} state {fields[0]} parent {fields[1]}: {command[:200]}"


SIGNALS = st.sampled_from([signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])


@pytest.mark.exhaustive
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(signum=SIGNALS, delay=st.floats(min_value=0.0, max_value=1.6))
def test_a_run_killed_at_any_moment_leaves_whole_files_and_no_survivor(
    signum: signal.Signals, delay: float
) -> None:
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="eb-signal-"))
    pids = base / "pids"
    pids.mkdir()
    root = _project(base / "proj", pids)
    stderr = base / "eb.stderr"
    process = _eb_run_started(root=root, stderr=stderr)
    try:
        time.sleep(delay)
        process.send_signal(signum)
        code = process.wait(timeout=60)
        told = stderr.read_text(errors="replace")[-2000:]
        # Exit codes: finished (0/1), stopped by the signal (3), or killed before handling it.
        assert code in (0, 1, 3, -signum, 128 + signum, 2), f"exit {code}; eb said: {told}"
        for path in (root / "runs").rglob("*.json"):
            json.loads(path.read_text())  # whole, never half written
        survivors = _survivors(pids=pids, within=0.2 if signum != signal.SIGKILL else 5)
        assert survivors == [], (
            f"still running after {signum.name} (exit {code}): "
            f"{[_described(pid) for pid in survivors]}; eb said: {told}"
        )
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for entry in pids.iterdir():
            pid = int(entry.name)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(base, ignore_errors=True)


def _survivors(*, pids: Path, within: float) -> list[int]:
    """The processes that wrote their pid into `pids` and are still running after `within`
    seconds (the last reaped ones leave /proc a moment after, a guardian acts a moment after)."""
    deadline = time.monotonic() + within
    while True:
        alive = [int(p.name) for p in pids.iterdir() if _alive(int(p.name))]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


SPAWNER = """\
import os, subprocess, time
from pathlib import Path
child = subprocess.Popen(["sleep", "120"])
for pid in (os.getpid(), child.pid):
    Path({pids!r}, str(pid)).write_text("")
time.sleep(120)
"""


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGHUP])
def test_no_process_of_a_check_outlives_eb_killed_or_hung_up(
    tmp_path: Path, signum: signal.Signals
) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    root = tmp_path / "proj"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text('[core]\noutput_dir = "runs"\n')
    checks = root / "eval_checks"
    checks.mkdir()
    scripts = {"spawner": SPAWNER.format(pids=str(pids)), "daemon": DAEMON.format(pids=str(pids))}
    for name, script in scripts.items():
        (checks / f"{name}.yaml").write_text(
            f"schema_version: 1\nid: {name}\ntype: deterministic\ndescription: {name}.\n"
            f"script: {json.dumps(script)}\n"
        )
    stderr = tmp_path / "eb.stderr"
    process = _eb_run_started(root=root, stderr=stderr)
    try:
        # The spawner and its sleep, the daemon's first process and the daemon itself.
        deadline = time.monotonic() + 30
        while len(list(pids.iterdir())) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(list(pids.iterdir())) == 4
        process.send_signal(signum)
        code = process.wait(timeout=30)
        survivors = _survivors(pids=pids, within=5)
        assert survivors == [], [_described(pid) for pid in survivors]
        if signum == signal.SIGHUP:  # as SIGTERM: exit 3, the report written
            assert code == 3, stderr.read_text()
            assert list((root / "runs").glob("*/report.json"))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for entry in pids.iterdir():
            if _alive(int(entry.name)):
                os.kill(int(entry.name), signal.SIGKILL)
