"""Work forked beside the report stage: the same result as in place, errors carried back, and
no child left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from eval_banana.core import forked
from eval_banana.core.errors import OutputDirError


def _write_pid(path: Path) -> None:
    path.write_text(str(os.getpid()))


def test_forked_work_runs_in_a_child_and_finish_waits_for_it(tmp_path: Path) -> None:
    target = tmp_path / "done"
    pending = forked.start(work=lambda: _write_pid(target), fork=True)
    child = pending.pid
    assert child is not None and child != os.getpid()
    pending.finish()
    assert target.read_text() == str(child)  # written by the child, waited for by finish
    with pytest.raises(ChildProcessError):  # reaped: nothing left to wait for
        os.waitpid(child, os.WNOHANG)


def test_work_not_forked_runs_in_place_when_finished(tmp_path: Path) -> None:
    target = tmp_path / "done"
    pending = forked.start(work=lambda: _write_pid(target), fork=False)
    assert not target.exists()  # kept for finish, not run yet
    pending.finish()
    assert target.read_text() == str(os.getpid())


def _answer(path: Path) -> dict[str, object]:
    _write_pid(path)
    return {"pid": os.getpid(), "lines": ["one", "two"] * 40_000}  # more than a pipe holds


@pytest.mark.parametrize("fork", [True, False])
def test_what_the_work_returns_comes_back_from_finish_once_and_for_all(
    tmp_path: Path, fork: bool
) -> None:
    target = tmp_path / "done"
    pending = forked.start(work=lambda: _answer(target), fork=fork)
    value = pending.finish()
    assert value["pid"] == int(target.read_text())  # the value of the one run of the work
    assert (value["pid"] != os.getpid()) is fork
    assert value["lines"] == ["one", "two"] * 40_000
    target.unlink()
    assert pending.finish() is value and not target.exists()  # not run again


def _unwritable(path: Path) -> None:
    path.mkdir()
    os.replace(path.parent / "missing", path)


def test_an_os_error_in_the_child_is_raised_as_one_in_the_parent(tmp_path: Path) -> None:
    pending = forked.start(work=lambda: _unwritable(tmp_path / "target"), fork=True)
    with pytest.raises(OSError, match="No such file or directory"):
        pending.finish()


def test_background_work_runs_at_a_lower_priority_than_eb() -> None:
    mine = os.nice(0)
    pending = forked.start(work=lambda: os.nice(0), fork=True, background=True)
    assert pending.finish() == min(mine + 10, 19)
    assert os.nice(0) == mine  # the parent keeps its own
    assert forked.start(work=lambda: os.nice(0), fork=True).finish() == mine


def _killed() -> None:
    os.kill(os.getpid(), signal.SIGTERM)  # default in the child: it ends at once
    time.sleep(30)


def test_a_child_ended_by_a_signal_is_told_apart_from_a_bug() -> None:
    pending = forked.start(work=_killed, fork=True)
    with pytest.raises(forked.ForkedWorkStopped, match="ended by signal 15"):
        pending.finish()
    assert pending.pid is None  # reaped


def test_work_whose_child_was_ended_by_a_signal_is_done_again_here() -> None:
    redone: list[int] = []

    def redo() -> None:
        redone.append(os.getpid())

    pending = forked.start(work=_killed, fork=True)
    pending.finish_or_redo(redo=redo)
    assert redone == [os.getpid()]
    pending.finish_or_redo(redo=redo)  # done: not again
    assert redone == [os.getpid()]
    finished = forked.start(work=lambda: "from the child", fork=True)
    assert finished.finish_or_redo(redo=lambda: "redone") == "from the child"
    with pytest.raises(forked.ForkedWorkError, match="KeyError"):
        forked.start(work=_broken, fork=True).finish_or_redo(redo=redo)  # a bug is no signal
    assert redone == [os.getpid()]


def _broken() -> None:
    raise KeyError("no such column")


def test_a_bug_in_the_child_is_a_typed_error_naming_it() -> None:
    pending = forked.start(work=_broken, fork=True)
    with pytest.raises(forked.ForkedWorkError, match="KeyError: 'no such column'"):
        pending.finish()


def _refused() -> None:
    raise OutputDirError("Cannot copy a to b: disk full", file="a", hint="Free some space.")


def test_one_of_ebs_own_errors_in_the_child_is_raised_whole_in_the_parent() -> None:
    pending = forked.start(work=_refused, fork=True)
    with pytest.raises(OutputDirError) as raised:
        pending.finish()
    assert (raised.value.message, raised.value.file, raised.value.hint) == (
        "Cannot copy a to b: disk full",
        "a",
        "Free some space.",
    )


def test_abandoned_work_leaves_no_process_behind() -> None:
    pending = forked.start(work=lambda: time.sleep(60), fork=True)
    pid = pending.pid
    assert pid is not None
    started = time.monotonic()
    pending.abandon()
    assert time.monotonic() - started < 5
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_ready_waits_for_the_child_or_stops_when_told(tmp_path: Path) -> None:
    """`ready` is how `eb merge` waits on its links when a signal may only be noted: a stop
    ends the wait at once, the child left for `abandon`; without one it lasts until the
    child's work is done."""
    busy = forked.start(work=lambda: time.sleep(60), fork=True)
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    assert busy.ready(stop=stop.is_set) is False
    assert time.monotonic() - started < 5
    busy.abandon()
    target = tmp_path / "done"
    quick = forked.start(work=lambda: _write_pid(target), fork=True)
    assert quick.ready(stop=lambda: False) is True
    quick.finish()
    assert target.exists()
    in_place = forked.start(work=lambda: _write_pid(target), fork=False)
    assert in_place.ready(stop=lambda: False) is True  # finish does it here


def test_the_parents_buffered_output_is_written_once(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from eval_banana.core import forked\n"
        "sys.stdout.write('once')\n"
        "forked.start(work=lambda: None, fork=True).finish()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "once"


def test_forking_needs_enough_work_and_no_other_thread() -> None:
    assert not forked.worth_forking(items=10, threshold=1_000)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        # A lock the other thread held at the fork would stay held in the child.
        assert not forked.worth_forking(items=5_000, threshold=1_000)
    finally:
        release.set()
        other.join()
