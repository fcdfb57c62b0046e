"""Runs killed at random moments: every JSON file left behind parses, and (after SIGINT or
SIGTERM, which eb handles) no process the run started survives it.

SIGKILL gives eb no chance to act: the files must still be whole (every write is atomic), but the
checks' own processes may outlive it; nothing can end them from inside a killed process.
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


SIGNALS = st.sampled_from([signal.SIGINT, signal.SIGTERM, signal.SIGKILL])


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
    with stderr.open("wb") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
    try:
        time.sleep(delay)
        process.send_signal(signum)
        code = process.wait(timeout=60)
        told = stderr.read_text(errors="replace")[-2000:]
        # Exit codes: finished (0/1), stopped by the signal (3), or killed before handling it.
        assert code in (0, 1, 3, -signum, 128 + signum, 2), f"exit {code}; eb said: {told}"
        for path in (root / "runs").rglob("*.json"):
            json.loads(path.read_text())  # whole, never half written
        if signum != signal.SIGKILL:
            time.sleep(0.2)  # let the last reaped processes disappear from /proc
            survivors = [int(p.name) for p in pids.iterdir() if _alive(int(p.name))]
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
