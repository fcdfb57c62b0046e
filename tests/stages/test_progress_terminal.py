"""Progress as a real `eb run` shows it on a terminal: live where rich can redraw, lines where not."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import check_yaml


def _run_with_stderr_on_a_terminal(root: Path, *, term: str) -> str:
    """`eb run` in `root` with its stderr on a pty whose TERM is `term`: what the terminal got."""
    primary, secondary = os.openpty()
    env = {**os.environ, "TERM": term}
    for forcing in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR"):
        env.pop(forcing, None)  # rich reads these before it looks at the terminal
    with subprocess.Popen(
        [sys.executable, "-m", "eval_banana", "run", "--cache", "off"],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=secondary,
    ) as process:
        os.close(secondary)
        chunks: list[bytes] = []
        while True:
            ready, _, _ = select.select([primary], [], [], 60)
            if not ready:
                process.kill()
                break
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the terminal's last writer is gone (EIO)
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=60)
    os.close(primary)
    return b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")


@pytest.fixture
def slow_pair(project: Callable[..., Path]) -> Path:
    # Long enough for rich's live line to be drawn at least once.
    script = "import time\ntime.sleep(0.4)\n"
    return project(
        {
            "eval_checks/first.yaml": check_yaml("first", script=script),
            "eval_checks/second.yaml": check_yaml("second", script=script),
        }
    )


def test_a_dumb_terminal_gets_a_line_per_finished_check(slow_pair: Path) -> None:
    shown = _run_with_stderr_on_a_terminal(slow_pair, term="dumb")
    assert "[1/2] " in shown and "[2/2] " in shown
    assert "first: passed (" in shown and "second: passed (" in shown


def test_a_terminal_rich_redraws_gets_the_live_line(slow_pair: Path) -> None:
    shown = _run_with_stderr_on_a_terminal(slow_pair, term="xterm")
    assert "/2 checks" in shown
    assert "[1/2] " not in shown
