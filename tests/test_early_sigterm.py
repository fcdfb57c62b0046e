"""SIGTERM or Ctrl-C during start-up ends eb with exit 3 (as one during the run does), never a
traceback or death by the signal.

"Start-up" starts when eb's own code can act: the test watches the process's caught signals
(`SigCgt` in /proc/<pid>/status) and sends SIGTERM the moment eb catches it, then at a few
later moments while it is still importing, reading its config and finding check files.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.forking import default_sigint
from tests.gitrepo import init_repo

_SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


def _catches_sigterm(pid: int) -> bool | None:
    """Whether `pid` has a SIGTERM handler now; None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & _SIGTERM_BIT)
    return None


def _signal_early(
    *, argv: list[str], delay_s: float, signum: signal.Signals
) -> subprocess.CompletedProcess[str]:
    """`argv` sent `signum` `delay_s` after eb's own code catches signals (its SIGINT handler
    goes in before its SIGTERM one); SIGINT at its default, as a terminal's Ctrl-C finds it."""
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        caught = _catches_sigterm(process.pid)
        if caught or caught is None or process.poll() is not None:
            break
        time.sleep(0.0005)
    time.sleep(delay_s)
    if process.poll() is None:
        process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=60)
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


def _project(root: Path) -> Path:
    checks = {
        f"eval_checks/check_{n}.yaml": (
            f"schema_version: 1\nid: check_{n}\ntype: deterministic\n"
            f"description: Check {n}.\nscript: print('fine')\n"
        )
        for n in range(30)
    }
    return init_repo(root, {".eval-banana/config.toml": '[core]\noutput_dir = "runs"\n', **checks})


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
@pytest.mark.parametrize("command", ["run", "validate"])
@pytest.mark.parametrize("delay_s", [0.0, 0.002, 0.01, 0.03])
def test_sigterm_during_start_up_ends_eb_with_exit_3(
    tmp_path: Path, command: str, delay_s: float
) -> None:
    root = _project(tmp_path / "proj")
    argv = [sys.executable, "-m", "eval_banana", command, "--cwd", str(root)]
    done = _signal_early(argv=argv, delay_s=delay_s, signum=signal.SIGTERM)
    assert "Traceback" not in done.stderr, done.stderr
    if done.returncode == 0 and delay_s > 0:
        pytest.skip("eb finished before the signal was sent on this machine")
    assert done.returncode == 3, (done.returncode, done.stderr)


_SIGTERM_IN_A_WEAKREF_CALLBACK = """
import os, signal, weakref
import eval_banana.cli

class Anything:
    pass

def callback(_ref):
    os.kill(os.getpid(), signal.SIGTERM)
    sum(range(3))  # the handler runs here, inside the callback

thing = Anything()
ref = weakref.ref(thing, callback)
del thing
print("still running")
"""


def test_sigterm_landing_where_python_swallows_exceptions_still_ends_eb_with_exit_3(
    tmp_path: Path,
) -> None:
    # The import system's module-lock callback is such a place: a SIGTERM handled there used
    # to print "Exception ignored ... SystemExit: 3" and let eb carry on. A script named `eb`
    # is eb as the program, as the console script is.
    program = tmp_path / "eb"
    program.write_text(_SIGTERM_IN_A_WEAKREF_CALLBACK)
    done = subprocess.run(
        [sys.executable, str(program)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3, (done.returncode, done.stderr)
    assert "still running" not in done.stdout
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert done.stderr.strip() == "Interrupted."


_LAUNCHERS = {
    "python -m eval_banana": [sys.executable, "-m", "eval_banana"],
    "eb": [str(Path(sys.executable).with_name("eb"))],
}


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
@pytest.mark.parametrize("launcher", sorted(_LAUNCHERS))
def test_ctrl_c_during_start_up_ends_eb_with_exit_3_never_a_traceback(
    tmp_path: Path, launcher: str
) -> None:
    argv = _LAUNCHERS[launcher]
    if not Path(argv[0]).exists():
        pytest.skip(f"no {argv[0]} beside this interpreter")
    root = _project(tmp_path / "proj")
    # From the moment eb catches signals, through its imports, its config and its check
    # files, into the run: wherever Ctrl-C lands, exit 3 (0 once it came too late).
    for delay_s in (0.0, 0.001, 0.003, 0.006, 0.01, 0.02, 0.04, 0.08, 0.16):
        done = _signal_early(
            argv=[*argv, "run", "--cwd", str(root)], delay_s=delay_s, signum=signal.SIGINT
        )
        assert "Traceback" not in done.stderr, (delay_s, done.stderr)
        assert done.returncode in (0, 3), (delay_s, done.returncode, done.stderr)
        if done.returncode == 3:
            assert "Interrupted." in done.stderr or "Run aborted (interrupt" in done.stderr


def test_a_program_that_imports_eb_keeps_its_own_ctrl_c() -> None:
    # A test runner or an Invoke task importing eb still gets KeyboardInterrupt from Ctrl-C.
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import signal; before = signal.getsignal(signal.SIGINT); import eval_banana.cli; "
            "assert signal.getsignal(signal.SIGINT) is before",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


# A program with handlers of its own (SIGTERM caught, SIGHUP ignored) and its own unraisable
# hook, which imports eb and runs it twice: once to the end, once until the program's own
# stdout fails it mid-run. Its handlers and hook are its own after each; a SIGTERM then
# reaches its handler and a SIGHUP stays ignored.
_HOST_PROGRAM = """
import os, signal, sys, time
got = []
def mine(signum, frame):
    got.append(signum)
def hook(unraisable):
    pass
sys.unraisablehook = hook
signal.signal(signal.SIGTERM, mine)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
def kept(when):
    now = {s: signal.getsignal(s) for s in before}
    assert now == before and sys.unraisablehook is hook, (when, now)
from eval_banana.cli import main
kept("after the import")
assert main(["run", "--cwd", sys.argv[1]]) == 0
kept("after a run")
class Refusing:
    def write(self, text):
        raise RuntimeError("the program's own stream failed")
    def flush(self):
        pass
real, sys.stdout = sys.stdout, Refusing()
try:
    main(["run", "--cwd", sys.argv[1], "--cache", "off"])
except RuntimeError:
    pass
finally:
    sys.stdout = real
kept("after a run that raised")
os.kill(os.getpid(), signal.SIGTERM)
os.kill(os.getpid(), signal.SIGHUP)
time.sleep(0.05)
print("handled", got)
"""


def test_a_program_that_imports_and_runs_eb_keeps_its_own_signal_handlers(
    tmp_path: Path,
) -> None:
    # Importing eb took SIGTERM and SIGHUP over for good: the program's handler never ran
    # again (a SIGTERM raised SystemExit(3) wherever the program was), and an ignored SIGTERM
    # stopped it.
    root = _project(tmp_path / "proj")
    done = subprocess.run(
        [sys.executable, "-c", _HOST_PROGRAM, str(root)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"handled [{int(signal.SIGTERM)}]", done.stdout


# eb as the program (a script named `eb`), whose exit comes under a burst of signals: three the
# moment `main` has returned its exit code, and one more while Python tears the process down, if
# it ever does (the teardown gives the signals eb handled their default back first): an object
# left in a reference cycle is freed only by the teardown's last collection, never by eb's own
# os._exit. The run itself is interrupted by its one check, which signals eb.
_BURST_AT_THE_EXIT = """
import os, signal, sys
import eval_banana.cli as cli

class AtTeardown:
    def __init__(self):
        self.cycle = self

    def __del__(self, kill=os.kill, pid=os.getpid(), signum=signal.SIGTERM):
        kill(pid, signum)

real_main = cli.main

def main(argv=None):
    code = real_main(argv)
    AtTeardown()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGINT):
        os.kill(os.getpid(), signum)
    return code

cli.main = main
cli.entry()
"""
_INTERRUPTING_CHECK = """\
schema_version: 1
id: interrupting
type: deterministic
description: Sends eb a Ctrl-C, as an impatient user does.
script: |
  import os, signal, time
  os.kill(os.getppid(), signal.SIGINT)
  time.sleep(5)
"""


@pytest.mark.parametrize("first", [signal.SIGINT, signal.SIGTERM])
def test_signals_after_eb_decided_its_exit_never_end_it_by_the_signal(
    tmp_path: Path, first: signal.Signals
) -> None:
    # A Ctrl-C (or SIGTERM) repeated every 2 ms while eb finished an interrupted run made it
    # die by the signal (status -2 or -15) in a few runs of 20, after it had printed `Run
    # aborted ...` and `Interrupted.`: the signal after the run raised eb's exit past its entry
    # point, into Python's full exit, which gave the signals their default back.
    root = init_repo(
        tmp_path / "proj",
        {
            ".eval-banana/config.toml": '[core]\noutput_dir = "runs"\n',
            "eval_checks/interrupting.yaml": _INTERRUPTING_CHECK.replace(
                "signal.SIGINT", f"signal.{first.name}"
            ),
        },
    )
    program = tmp_path / "eb"
    program.write_text(_BURST_AT_THE_EXIT)
    done = subprocess.run(
        [sys.executable, str(program), "run", "--cache", "off", "--cwd", str(root)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        preexec_fn=default_sigint,
    )
    assert done.returncode == 3, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    lines = done.stderr.splitlines()
    assert any(line.startswith("Run aborted (interrupt") for line in lines), done.stderr
    assert lines[-1] == "Interrupted.", done.stderr
    assert lines.count("Interrupted.") == 1, done.stderr


# eb as the program, whose stderr sends it a signal the moment `Run aborted` is written: after
# a print's text, before its line break.
_SIGNAL_INSIDE_A_LINE = """
import os, signal, sys
import eval_banana.cli as cli

class Stderr:
    def __init__(self, stream):
        self.stream = stream

    def write(self, text):
        written = self.stream.write(text)
        if text.startswith("Run aborted"):
            os.kill(os.getpid(), signal.SIGTERM)
        return written

    def __getattr__(self, name):
        return getattr(self.stream, name)

sys.stderr = Stderr(sys.stderr)
cli.entry()
"""


def test_a_signal_inside_a_console_line_leaves_the_line_whole(tmp_path: Path) -> None:
    # `Run aborted (...). Report: .../report.jsonInterrupted.`: the signal's word ran into
    # the line whose line break the print had not written yet.
    root = init_repo(
        tmp_path / "proj",
        {
            ".eval-banana/config.toml": '[core]\noutput_dir = "runs"\n',
            "eval_checks/interrupting.yaml": _INTERRUPTING_CHECK,
        },
    )
    program = tmp_path / "eb"
    program.write_text(_SIGNAL_INSIDE_A_LINE)
    done = subprocess.run(
        [sys.executable, str(program), "run", "--cache", "off", "--cwd", str(root)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        preexec_fn=default_sigint,
    )
    assert done.returncode == 3, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert lines[-1] == "Interrupted.", done.stderr
    assert lines[-2].startswith("Run aborted (interrupt") and lines[-2].endswith(".json"), lines
