"""The files eb's stdout and stderr write to, found in a process of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO

# Prints, on stderr, the files stream_files finds (the candidates from argv) as JSON.
_PROBE = """\
import json, sys
from pathlib import Path
from eval_banana.core.streams import stream_files
found = stream_files(among=lambda: [Path(path) for path in sys.argv[1:]])
sys.stderr.write(json.dumps(sorted(str(path) for path in found)))
"""


def _found(*, stdout: IO[str] | int, among: list[Path]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *map(str, among)],
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        timeout=60,
        check=True,
    )
    return list(json.loads(done.stderr))


def test_a_file_behind_stdout_is_found_and_pipes_are_not(tmp_path: Path) -> None:
    log = tmp_path / "eb.log"
    with log.open("w") as output:
        found = _found(stdout=output, among=[])
    assert found == [str(log)]
    assert _found(stdout=subprocess.PIPE, among=[]) == []


def test_a_file_the_system_cannot_name_is_found_among_the_candidates(tmp_path: Path) -> None:
    # stdout's file is deleted while another name for it stays: the system names no path
    # for it any more, and the other name is found by device and inode.
    log, other = tmp_path / "eb.log", tmp_path / "same.log"
    with log.open("w") as output:
        os.link(log, other)
        log.unlink()
        found = _found(stdout=output, among=[tmp_path / "x", other])
    assert found == [str(other)]
