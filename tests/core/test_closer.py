"""A descriptor whose close blocks is closed beside the work that follows, and a fork waits for
it: eb forks only while it is the one thread."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from eval_banana.core import closer, forked
from eval_banana.core.closer import close_in_background, finish_background_closes
from eval_banana.isolation.watch import TreeWatcher


def _open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_a_handed_over_descriptor_is_closed(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY)
    close_in_background(fd)
    finish_background_closes()
    assert not _open(fd)


def test_closing_a_watcher_hands_its_descriptor_over(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    watcher = TreeWatcher.open(root=str(tmp_path), folders=["sub"])
    if watcher is None:
        pytest.skip("inotify is not available on this system")
    fd = watcher._fd
    assert _open(fd)
    watcher.close()
    assert watcher._fd == -1
    # Read after the close: events are reported lost, never read from another descriptor.
    assert watcher.touched() is None
    finish_background_closes()
    assert not _open(fd)


def test_a_fork_waits_for_the_closes_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not hasattr(os, "fork") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs fork and two CPUs")

    def slow_close(fd: int) -> None:
        time.sleep(0.3)  # a kernel teardown that takes its time
        os.close(fd)

    monkeypatch.setattr(closer, "_close", slow_close)
    forked.end_idle_helpers()  # an earlier test's idle watchdog would end in the check below
    before = threading.active_count()  # a test runner may keep threads of its own
    fd = os.open(tmp_path, os.O_RDONLY)
    close_in_background(fd)
    assert threading.active_count() == before + 1
    # Big enough to fork: the check waits for the close, then counts the threads left.
    wanted = forked.worth_forking(items=10, threshold=1)
    assert not _open(fd)
    assert threading.active_count() == before
    assert wanted == (before == 1)


def test_with_no_thread_to_spare_the_descriptor_is_closed_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't create new thread at interpreter shutdown")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    fd = os.open(tmp_path, os.O_RDONLY)
    close_in_background(fd)
    assert not _open(fd)
