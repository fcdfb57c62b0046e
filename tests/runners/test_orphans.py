"""No process a check started outlives it: not even a daemon that double-forks and calls setsid."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

# Forks, the child calls setsid and forks the daemon, the child exits: the daemon is in its own
# session with no parent but init (or a subreaper). It writes its pid, then sleeps for minutes.
DAEMONIZE = """\
import os, sys, time
from pathlib import Path
from typing import NamedTuple
pidfile = Path({pidfile!r})
first = os.fork()
if first == 0:
    os.setsid()
    if os.fork() == 0:
        pidfile.write_text(str(os.getpid()))
        time.sleep(300)
        os._exit(0)
    os._exit(0)
os.waitpid(first, 0)
while not pidfile.exists():
    time.sleep(0.01)
{after}
"""

# A server started in a session of its own with a small environment of its own: no check token
# reaches it, and the check does not stop it. It writes its pid, then serves for minutes.
TOKENLESS_SERVER = """\
import os, subprocess, sys, time
from pathlib import Path
from typing import NamedTuple
pidfile = Path({pidfile!r})
serve = "import os, pathlib, time; pathlib.Path(%r).write_text(str(os.getpid())); time.sleep(300)"
subprocess.Popen([sys.executable, "-c", serve % str(pidfile)], env={{"PATH": os.environ["PATH"]}},
                 start_new_session=True)
while not pidfile.exists():
    time.sleep(0.01)
{after}
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended


@pytest.fixture
def pidfiles(tmp_path: Path) -> Iterator[list[Path]]:
    """Pid files of the daemons a test starts; any survivor is killed after the test."""
    files: list[Path] = []
    yield files
    for path in files:
        if path.exists():
            pid = int(path.read_text())
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _project(root: Path, *, checks: dict[str, str], config: str = "") -> Path:
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text('[core]\noutput_dir = "runs"\n' + config)
    for name, script in checks.items():
        path = root / "eval_checks" / f"{name}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(
            f"schema_version: 1\nid: {name}\ntype: deterministic\ndescription: {name}.\n"
            f"script: {json.dumps(script)}\n"
        )
    return root


def _eb(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def _gone_soon(pid: int) -> bool:
    """Whether the process is gone (or a zombie) within a moment."""
    deadline = time.monotonic() + 2
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


class Leftover(NamedTuple):
    """A process a check leaves behind: a daemon that keeps eb's token, or a server started
    with an environment of its own (no token says whose it is)."""

    template: str
    pidfile: str
    # What proves the leftover ended once its check did (a token-less one is found by a
    # scan, a moment later).
    ended: Callable[[int], bool]
    # The check that keeps using it also signals it, where it is its own child's.
    signals_it: bool


DAEMON = Leftover(
    template=DAEMONIZE, pidfile="daemon.pid", ended=lambda pid: not _alive(pid), signals_it=True
)
SERVER = Leftover(
    template=TOKENLESS_SERVER, pidfile="server.pid", ended=_gone_soon, signals_it=False
)
LEFTOVERS = pytest.mark.parametrize(
    "leftover", [DAEMON, SERVER], ids=["daemon", "tokenless-server"]
)


@LEFTOVERS
def test_a_process_a_check_leaves_does_not_survive_the_run(
    tmp_path: Path, pidfiles: list[Path], leftover: Leftover
) -> None:
    pidfile = tmp_path / leftover.pidfile
    pidfiles.append(pidfile)
    root = _project(
        tmp_path / "proj",
        checks={"spawns": leftover.template.format(pidfile=str(pidfile), after="")},
    )
    done = _eb(root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert leftover.ended(int(pidfile.read_text())), "the check's process outlived eb"


@LEFTOVERS
def test_a_leftover_dies_when_its_own_check_ends_not_when_the_run_ends(
    tmp_path: Path, pidfiles: list[Path], leftover: Leftover
) -> None:
    # Check `a_early` leaves the process; check `b_later`, running after it (parallel 1),
    # records whether it is still alive while the run goes on.
    pidfile = tmp_path / leftover.pidfile
    pidfiles.append(pidfile)
    probe = _state_probe(pidfile=pidfile, seen=tmp_path / "seen.txt")
    root = _project(
        tmp_path / "proj",
        checks={
            "a_early": leftover.template.format(pidfile=str(pidfile), after=""),
            "b_later": probe,
        },
    )
    done = _eb(root, "--max-parallel-checks", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "seen.txt").read_text() in ("gone", "Z")


@LEFTOVERS
def test_a_leftover_of_another_running_check_is_left_alone_until_that_check_ends(
    tmp_path: Path, pidfiles: list[Path], leftover: Leftover
) -> None:
    # `a_server` starts the process and keeps using it for a while; `b_quick` ends meanwhile.
    # Ending b_quick must not end a_server's process: a_server checks it is alive at its end.
    pidfile = tmp_path / leftover.pidfile
    pidfiles.append(pidfile)
    still_alive = textwrap.dedent(
        f"""\
        time.sleep(1.5)
        pid = int(pidfile.read_text())
        {"os.kill(pid, 0)" if leftover.signals_it else ""}
        state = Path(f"/proc/{{pid}}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert state != "Z", "the process was ended while its check was running"
        """
    )
    root = _project(
        tmp_path / "proj",
        checks={
            "a_server": leftover.template.format(pidfile=str(pidfile), after=still_alive),
            "b_quick": "import time; time.sleep(0.3)",
        },
    )
    done = _eb(root, "--max-parallel-checks", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert leftover.ended(int(pidfile.read_text()))


def test_a_daemon_started_by_a_judge_does_not_survive_an_interrupted_run(
    tmp_path: Path, pidfiles: list[Path]
) -> None:
    pidfile = tmp_path / "daemon.pid"
    pidfiles.append(pidfile)
    agent = tmp_path / "agent.py"
    agent.write_text(DAEMONIZE.format(pidfile=str(pidfile), after="time.sleep(300)"))
    root = tmp_path / "proj"
    (root / "eval_checks").mkdir(parents=True)
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\n\n[harness]\nagent = "spawner"\n\n'
        f"[agents.spawner]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(agent))}]\n"
        'model_flag = ""\n'
    )
    (root / "eval_checks" / "judge.yaml").write_text(
        "schema_version: 1\nid: judge\ntype: harness_judge\ndescription: j.\ninstructions: Judge.\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pidfile.exists()
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 3
    assert not _alive(int(pidfile.read_text()))


GET_SUBREAPER = """\
import ctypes, sys
from eval_banana.cli import main

def subreaper() -> int:
    flag = ctypes.c_int(-1)
    ctypes.CDLL(None).prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
    return flag.value

code = main(["run", "--cwd", sys.argv[1]])
print(code, subreaper())
"""


def _program_running_a_daemons_check(
    *, program: str, tmp_path: Path, pidfiles: list[Path]
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`program` (Python that calls eb's `main` on the project it is given) run over a project
    whose one check leaves a daemon; what it printed, and the daemon's pid file."""
    pidfile = tmp_path / "daemon.pid"
    pidfiles.append(pidfile)
    root = _project(
        tmp_path / "proj", checks={"spawns": DAEMONIZE.format(pidfile=str(pidfile), after="")}
    )
    done = subprocess.run(
        [sys.executable, "-c", program, str(root)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done, pidfile


def test_a_program_that_runs_eb_in_process_is_no_subreaper_afterwards(
    tmp_path: Path, pidfiles: list[Path]
) -> None:
    # The check proves the role was held during the run: its daemon is still ended.
    done, pidfile = _program_running_a_daemons_check(
        program=GET_SUBREAPER, tmp_path=tmp_path, pidfiles=pidfiles
    )
    assert done.stdout.split()[-2:] == ["0", "0"], done.stdout + done.stderr
    assert not _alive(int(pidfile.read_text()))


ON_A_THREAD = """\
import sys, threading
from eval_banana.cli import main

said = []
thread = threading.Thread(target=lambda: said.append(main(["run", "--cwd", sys.argv[1]])))
thread.start()
thread.join()
print(said)
"""


def test_a_program_that_runs_eb_on_a_thread_of_its_own_gets_its_checks_processes_ended(
    tmp_path: Path, pidfiles: list[Path]
) -> None:
    # Off the main thread eb sets no signal handler (it raised ValueError trying); what ends
    # a check's processes with the run does not need one.
    done, pidfile = _program_running_a_daemons_check(
        program=ON_A_THREAD, tmp_path=tmp_path, pidfiles=pidfiles
    )
    assert done.stdout.splitlines()[-1] == "[0]", done.stdout + done.stderr
    assert _gone_soon(int(pidfile.read_text()))


def _state_probe(*, pidfile: Path, seen: Path) -> str:
    """A check script that writes the state of the process in `pidfile` (`gone` if none)."""
    return textwrap.dedent(
        f"""\
        from pathlib import Path
        pid = int(Path({str(pidfile)!r}).read_text())
        try:
            state = Path(f"/proc/{{pid}}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            state = "gone"
        Path({str(seen)!r}).write_text(state)
        """
    )


# A chain of sessions: each level calls setsid, starts the next with an environment of its own
# (no token), writes its pid and stays alive as the next one's parent. Ending one level hands
# the next to eb; eb scanned its children a few times, so the deeper levels outlived the run.
CHAIN = """\
import os, sys, time
from pathlib import Path
depth, folder = int(sys.argv[1]), Path(sys.argv[2])
os.setsid()
if depth < {levels}:
    os.spawnve(os.P_NOWAIT, sys.executable, [sys.executable, __file__, str(depth + 1), str(folder)],
               {{"PATH": os.environ["PATH"]}})
(folder / f"{{depth}}.pid").write_text(str(os.getpid()))
time.sleep(300)
"""
# The check starts the chain's first level and ends once every level is up.
CHAIN_START = """\
import os, subprocess, sys, time
from pathlib import Path
folder = Path({folder!r})
subprocess.Popen([sys.executable, {chain!r}, "1", str(folder)], env={{"PATH": os.environ["PATH"]}},
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
while not (folder / "{levels}.pid").exists():
    time.sleep(0.01)
"""


def test_a_chain_of_sessions_of_any_depth_a_check_leaves_does_not_survive_it(
    tmp_path: Path, pidfiles: list[Path]
) -> None:
    levels = 30
    folder = tmp_path / "pids"
    folder.mkdir()
    pidfiles.extend(folder / f"{depth}.pid" for depth in range(1, levels + 1))
    chain = tmp_path / "chain.py"
    chain.write_text(CHAIN.format(levels=levels))
    start = CHAIN_START.format(folder=str(folder), chain=str(chain), levels=levels)
    # `b_later` runs after the check that left the chain (parallel 1): by then it is gone.
    probe = _state_probe(pidfile=folder / f"{levels}.pid", seen=tmp_path / "seen.txt")
    root = _project(tmp_path / "proj", checks={"a_chain": start, "b_later": probe})
    began = time.monotonic()
    done = _eb(root, "--max-parallel-checks", "1")
    took = time.monotonic() - began
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "seen.txt").read_text() in ("gone", "Z")
    left = [depth for depth in range(1, levels + 1) if _alive(int(pidfiles[depth - 1].read_text()))]
    assert left == [], f"levels {left} of the chain outlived eb"
    assert took < 20, took  # the chain is ended at once, not a level at a time
    assert "gave up ending" not in done.stderr
