"""`eb` as a real process with some of eb's thresholds lowered and each fork it makes written
down, so a small project takes the forked paths that big runs take."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

# Before the setup: `note(line)` appends a line to the events file; every fork notes "fork".
_NOTING = """\
import os, sys
def note(line):
    with open(os.environ["EB_EVENTS"], "a") as events:
        events.write(line + "\\n")
real_fork = os.fork
def fork():
    pid = real_fork()
    if pid:
        note("fork")
    return pid
os.fork = fork
"""
_MAIN = """\
from eval_banana.cli import main
sys.exit(main(sys.argv[1:]))
"""


def default_sigint() -> None:
    """For a child a test sends SIGINT to: Ctrl-C's default, as a terminal gives it. A suite
    started where SIGINT is ignored (`nohup pytest &`, some CI launchers) would hand the
    child that ignoring, and Python would then never raise KeyboardInterrupt in it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def eb_script(*, setup: str) -> str:
    """The program: forks noted, then `setup` (lines that lower thresholds or wrap functions,
    and may call `note`), then eb's command line."""
    return _NOTING + textwrap.dedent(setup) + _MAIN


def run_script(
    *,
    script: str,
    args: Sequence[str],
    events: Path,
    env: Mapping[str, str] | None = None,
    new_session: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run `script` with eb's arguments; its events go to `events`."""
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env={**(os.environ if env is None else env), "EB_EVENTS": str(events)},
        stdin=subprocess.DEVNULL,
        timeout=240,
        start_new_session=new_session,
    )


def events_of(events: Path) -> list[str]:
    """The lines noted so far, in order."""
    return events.read_text().split() if events.exists() else []
