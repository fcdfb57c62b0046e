"""run_process: one shared watchdog ends timed-out or cancelled groups without delaying others."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from eval_banana.runners.process import ProcessOutcome, run_process
from eval_banana.runners.watchdog import GRACE_SECONDS

# Ignores SIGTERM, so only the SIGKILL after the grace period ends it.
STUBBORN = (
    "import signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)
SLEEPER = "import time\ntime.sleep(60)\n"


def _run(
    tmp_path: Path, name: str, code: str, *, timeout_s: float | None, cancel: threading.Event
) -> ProcessOutcome:
    return run_process(
        argv=[sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        stdout_path=tmp_path / f"{name}.out",
        stderr_path=tmp_path / f"{name}.err",
        timeout_s=timeout_s,
        cancel=cancel,
    )


def test_a_group_in_its_grace_period_does_not_delay_another_deadline(tmp_path: Path) -> None:
    outcomes: dict[str, ProcessOutcome] = {}
    finished: dict[str, float] = {}
    began = time.monotonic()

    def go(name: str, code: str, timeout_s: float) -> None:
        outcomes[name] = _run(tmp_path, name, code, timeout_s=timeout_s, cancel=threading.Event())
        finished[name] = time.monotonic() - began

    stubborn = threading.Thread(target=go, args=("stubborn", STUBBORN, 0.5))
    stubborn.start()
    time.sleep(0.3)
    go("sleeper", SLEEPER, 1.0)
    stubborn.join()
    assert outcomes["stubborn"].timed_out and outcomes["sleeper"].timed_out
    # The sleeper ends at its own deadline although the stubborn group is still in its grace.
    assert finished["sleeper"] < 0.3 + 1.0 + GRACE_SECONDS - 0.5
    assert finished["stubborn"] >= 0.5 + GRACE_SECONDS - 0.1  # SIGKILL only after the grace


def test_cancel_ends_every_running_child(tmp_path: Path) -> None:
    cancel = threading.Event()
    outcomes: list[ProcessOutcome] = []
    threads = [
        threading.Thread(
            target=lambda n=n: outcomes.append(
                _run(tmp_path, f"c{n}", SLEEPER, timeout_s=None, cancel=cancel)
            )
        )
        for n in range(3)
    ]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    began = time.monotonic()
    cancel.set()
    for thread in threads:
        thread.join(timeout=10)
    assert time.monotonic() - began < 2
    assert len(outcomes) == 3
    assert all(outcome.cancelled and not outcome.timed_out for outcome in outcomes)


def test_a_quick_child_is_neither_timed_out_nor_cancelled(tmp_path: Path) -> None:
    outcome = _run(tmp_path, "quick", "print('hi')", timeout_s=5, cancel=threading.Event())
    assert (outcome.exit_code, outcome.timed_out, outcome.cancelled) == (0, False, False)
    assert outcome.stdout_path is not None and outcome.stdout_path.read_text() == "hi\n"


SELF_KILLED = "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n"


def test_a_child_killed_by_the_signal_that_stops_the_run_is_cancelled(tmp_path: Path) -> None:
    # The run notes the stop a moment after the child has died of the same SIGTERM.
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    outcome = _run(tmp_path, "tree", SELF_KILLED, timeout_s=30, cancel=cancel)
    assert (outcome.exit_code, outcome.timed_out, outcome.cancelled) == (-15, False, True)


def test_a_child_killed_by_a_signal_in_a_run_that_goes_on_is_not_cancelled(
    tmp_path: Path,
) -> None:
    outcome = _run(tmp_path, "self", SELF_KILLED, timeout_s=30, cancel=threading.Event())
    assert (outcome.exit_code, outcome.timed_out, outcome.cancelled) == (-15, False, False)


# In a process of its own, so no thread another test left behind is counted.
AFTER_A_CHECK = """\
import json, sys, threading
from pathlib import Path
from eval_banana.core import forked
from eval_banana.runners.process import run_process

folder = Path(sys.argv[1])

def start(code, timeout_s, name):
    return run_process(
        argv=[sys.executable, "-c", code], cwd=folder, env={"PATH": "/usr/bin:/bin"},
        stdout_path=folder / f"{name}.out", stderr_path=folder / f"{name}.err",
        timeout_s=timeout_s, cancel=threading.Event(),
    )

first = start("pass", 30, "first")
before = sorted(thread.name for thread in threading.enumerate())
forks = forked.worth_forking(items=1, threshold=1)
after = sorted(thread.name for thread in threading.enumerate())
second = start("import time; time.sleep(60)", 0.5, "second")
print(json.dumps({"exit": first.exit_code, "before": before, "forks": forks, "after": after,
                  "timed_out": second.timed_out}))
"""


def test_the_idle_watchdog_ends_for_a_fork_and_comes_back_for_the_next_check(
    tmp_path: Path,
) -> None:
    # eb forks only while it is its own only thread: the watchdog a finished check left
    # waiting must end when asked, or a run that started a check never forks its report.html.
    done = subprocess.run(
        [sys.executable, "-c", AFTER_A_CHECK, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    seen = json.loads(done.stdout)
    assert seen["exit"] == 0
    assert seen["before"] == ["MainThread", "eb-watchdog"]
    assert seen["after"] == ["MainThread"]
    assert seen["forks"] is (sys.platform == "linux" and len(os.sched_getaffinity(0)) > 1)
    # A new watchdog ends the next child at its deadline.
    assert seen["timed_out"] is True


# Runs in a process of its own: it uses up every descriptor but the two the check's output
# files take, so that opening them again to read them as the child writes is refused.
_NO_FILE_LEFT_TO_READ = """\
import os, sys, threading
from pathlib import Path
from eval_banana.core.errors import ResourceFault
from eval_banana.runners.process import run_process

class Reader:
    def stdout(self, data): pass
    def stderr(self, data): pass
    def idle(self): return False

folder = Path(sys.argv[1])
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
for fd in held[-2:]:
    os.close(fd)
try:
    run_process(argv=[sys.executable, "-c", "pass"], cwd=folder, env={}, stdout_path=folder / "out",
                stderr_path=folder / "err", timeout_s=None, cancel=threading.Event(), follow=Reader())
except ResourceFault as fault:
    print(fault.said)
"""


def test_too_many_open_files_reading_a_checks_output_is_no_write_of_it(tmp_path: Path) -> None:
    # It said "Output could not be written: .../err" of a file eb was opening to read.
    done = subprocess.run(
        [sys.executable, "-c", _NO_FILE_LEFT_TO_READ, str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout == (
        f"Too many open files while eb was opening {tmp_path / 'out'} to read it\n"
    ), done.stderr
