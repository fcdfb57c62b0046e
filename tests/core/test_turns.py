"""Runs take turns on a folder: a run's checks hold it shared, a change to it waits for none."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eval_banana.core.turns import (
    LOCK_NAME,
    alone,
    alone_in_folder,
    holding_file,
    sharing,
    sharing_folder,
)


def test_an_output_folder_is_no_runs_alone_while_another_runs_checks_beside_it(
    tmp_path: Path,
) -> None:
    with sharing_folder(folder=tmp_path), alone_in_folder(folder=tmp_path) as ours:
        assert ours is False
    with alone_in_folder(folder=tmp_path) as ours:
        assert ours is True
    assert list(tmp_path.iterdir()) == []  # the folder itself is the lock: no file added


def test_a_folder_that_cannot_be_locked_is_no_other_runs_turn(tmp_path: Path) -> None:
    with alone_in_folder(folder=tmp_path / "missing") as ours:
        assert ours is True


def test_a_cache_is_no_runs_alone_while_another_runs_checks_with_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with sharing(folder=cache, create=True), alone(folder=cache) as ours:
        assert ours is False
    with alone(folder=cache) as ours:
        assert ours is True
    assert (cache / LOCK_NAME).is_file()


def test_a_cache_folder_without_its_lock_file_is_held_by_a_run_that_makes_none(
    tmp_path: Path,
) -> None:
    # Restored without its `.lock` (or made by hand): a run that stores nothing (cache off or
    # read-only, a calibration) makes no file there, and no other run stores while it holds it.
    cache = tmp_path / "cache"
    cache.mkdir()
    with sharing(folder=cache, create=False):
        assert list(cache.iterdir()) == []
        with alone(folder=cache) as ours:
            assert ours is False
    with alone(folder=cache) as ours:
        assert ours is True
    assert (cache / LOCK_NAME).is_file()  # made by the run that stores


def test_a_file_another_process_holds_is_waited_for_and_held_as_that_process_left_it(
    tmp_path: Path,
) -> None:
    # Another process holds the record, replaces it whole and ends: this one's wait ends
    # then, holding the file now at that path (not the one it opened), so a third waits too.
    record = tmp_path / "lastfailed.json"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, time\nfrom pathlib import Path\n"
            "from eval_banana.core.turns import holding_file\n"
            f"record = Path({str(record)!r})\n"
            "with holding_file(path=record, first=lambda: b'{}\\n'):\n"
            "    print('held', flush=True)\n"
            "    time.sleep(0.5)\n"
            "    Path(f'{record}.new').write_bytes(b'{\"new\": 1}\\n')\n"
            "    os.replace(f'{record}.new', record)\n",
        ],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    assert record.read_bytes() == b"{}\n"  # a missing file is put there whole first
    began = time.monotonic()
    with holding_file(path=record, first=lambda: b"{}\n"):
        assert time.monotonic() - began > 0.3
        assert record.read_bytes() == b'{"new": 1}\n'
        fd = os.open(record, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    assert holder.wait(timeout=30) == 0
    holder.stdout.close()
    assert list(tmp_path.iterdir()) == [record]  # no lock file, no temporary file left
