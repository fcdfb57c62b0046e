"""A cached run's look-ahead: a forked child answers the back half of the stored verdicts.

The threshold is lowered in a real `eb` process, which also writes down each fork it makes, so
these small projects take the forked path that runs of hundreds of checks take.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.cache.store import CacheStore
from tests.cache.rig import (
    Project,
    cache_of,
    judge,
    make_project,
    script_check,
    waiting_for_lock,
)
from tests.conftest import EbResult
from tests.forking import eb_script, events_of, run_script

# The look-ahead from two keyed checks on.
LOOK_AHEAD = """\
import eval_banana.cache.lookahead as lookahead
import eval_banana.cache.session as session
lookahead.LOOK_AHEAD_FORK_CHECKS = 2
"""
LOOKING_AHEAD_EB = eb_script(setup=LOOK_AHEAD)


def _before_each_lookup(body: str) -> str:
    """The look-ahead, with `body` run at each lookup, in eb and in its forked copy (`parent`
    is eb's own pid)."""
    return eb_script(
        setup=LOOK_AHEAD
        + "import signal, time\n"
        + "parent = os.getpid()\n"
        + "look_up = session.CacheSession._look_up\n"
        + "def wrapped(self, *, check):\n"
        + textwrap.indent(textwrap.dedent(body), "    ")
        + "    return look_up(self, check=check)\n"
        + "session.CacheSession._look_up = wrapped\n"
    )


EVIDENCE_SCRIPT = """\
import json, sys
from pathlib import Path
ctx = json.loads(Path(sys.argv[1]).read_text())
(Path(ctx["output_dir"]) / "nested").mkdir()
(Path(ctx["output_dir"]) / "nested" / "seen.txt").write_text("seen\\n")
"""


def _forking_eb(events: Path) -> Callable[..., EbResult]:
    def run(*args: str) -> EbResult:
        done = run_script(script=LOOKING_AHEAD_EB, args=args, events=events)
        return EbResult(exit_code=done.returncode, stdout=done.stdout, stderr=done.stderr)

    return run


def _project(tmp_path: Path, eb: Callable[..., Any], *, first: str = "Judge it.") -> Project:
    checks = {f"c{n:02d}": judge(f"c{n:02d}", inputs=["docs/**"]) for n in range(2, 8)}
    checks["c01"] = judge("c01", instructions=first, inputs=["docs/**"])
    # Last in plan order, so in the half the child answers: evidence in a nested folder.
    checks["c08"] = script_check("c08", script=EVIDENCE_SCRIPT, inputs=["docs/**"])
    return make_project(
        tmp_path=tmp_path, eb=eb, checks=checks, files={"docs/a.md": "# A\n"}, replay=False
    )


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _stems(run_dir: Path) -> dict[str, str]:
    plan = json.loads((run_dir / "stages" / "plan.json").read_text())
    return {check["id"]: check["stem"] for check in plan["checks"]}


def test_the_half_a_forked_child_answers_restores_the_same_run_folder(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    project = _project(tmp_path, eb)
    project.run()  # every verdict stored
    in_place = project.run("--output-dir", str(tmp_path / "in-place"))
    events = tmp_path / "events"
    project.eb = _forking_eb(events)
    starts = project.agent_starts()
    forked = project.run("--output-dir", str(tmp_path / "forked"))

    assert events_of(events) == ["fork"]
    assert project.agent_starts() == starts
    assert all(cache_of(check)["hit"] is True for check in forked["checks"])
    assert forked["checks"] == in_place["checks"]  # reused results carry the times they ran
    forked_dir, in_place_dir = Path(forked["output_dir"]), Path(in_place["output_dir"])
    assert _tree(forked_dir / "checks") == _tree(in_place_dir / "checks")
    stem = _stems(forked_dir)["c08"]
    assert (forked_dir / "checks" / stem / "nested" / "seen.txt").read_text() == "seen\n"


def test_a_damaged_entry_the_child_finds_is_a_miss_and_its_warning_comes_back(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    project = _project(tmp_path, eb)
    project.run()
    (entry,) = [p for p in project.entries() if json.loads(p.read_text())["check_id"] == "c07"]
    # Its prompt is its own (every judge printed the same stdout, which is stored once).
    prompt = next(f for f in json.loads(entry.read_text())["files"] if f["name"] == "prompt.txt")
    store = CacheStore(folder=project.cache_dir, max_bytes=1 << 30)
    store.blob_path(sha256=prompt["sha256"]).write_bytes(b"tampered\n")
    events = tmp_path / "events"
    project.eb = _forking_eb(events)
    starts = project.agent_starts()
    report = project.run()

    assert events_of(events) == ["fork"]
    assert [c["check_id"] for c in report["checks"] if not cache_of(c)["hit"]] == ["c07"]
    assert project.agent_starts() == starts + 1
    assert [warning["file"] for warning in report["warnings"]] == [str(entry)]
    assert "warning: Cache entry" in project.last.stderr
    assert project.misses() == set()  # the fresh verdict replaced the damaged one


# Ctrl-C as eb answers its first check from the cache, after the fork: sent to eb alone, or to
# its whole process group (as a terminal does), which also ends the child, kept busy till then.
INTERRUPTED_EB = _before_each_lookup(
    """\
    ready = os.environ["EB_EVENTS"] + ".busy"
    if os.getpid() != parent:
        if os.environ["TO"] == "group":
            open(ready, "w").close()
            time.sleep(30)
    elif os.environ["TO"] == "group":
        while not os.path.exists(ready):  # the child is at work (and dies of SIGINT)
            time.sleep(0.01)
        os.killpg(0, signal.SIGINT)
    else:
        os.kill(parent, signal.SIGINT)
    """
)


@pytest.mark.parametrize("to", ["eb", "group"])
def test_checks_an_interrupted_run_never_reached_keep_nothing_the_child_restored(
    tmp_path: Path, eb: Callable[..., Any], to: str
) -> None:
    project = _project(tmp_path, eb)
    project.run()  # every verdict stored
    events = tmp_path / "events"
    started = time.monotonic()
    done = run_script(
        script=INTERRUPTED_EB,
        args=["run", "--cwd", str(project.root), "--output-dir", str(tmp_path / "out")]
        + ["--flat-output"],
        events=events,
        env={**os.environ, "TO": to},
        new_session=True,  # a process group of its own, as a shell gives a command
    )

    assert done.returncode == 3, done.stderr  # aborted by the interrupt, reports written
    assert events_of(events) == ["fork"]
    if to == "group":
        assert time.monotonic() - started < 25  # the child ended with the group, not waited on
    run_dir = tmp_path / "out"
    report = json.loads((run_dir / "report.json").read_text())
    assert (run_dir / "report.html").is_file()
    stems = _stems(run_dir)
    by_id = {c["check_id"]: c for c in report["checks"]}
    assert cache_of(by_id["c01"])["hit"] is True  # answered before the interrupt was seen
    held = sorted(i for i, c in by_id.items() if c["details"].get("not_run") is True)
    assert held == [f"c{n:02d}" for n in range(2, 9)]  # the child was answering c05 to c08
    names = sorted(p.name for p in (run_dir / "checks").iterdir())
    for check_id in held:
        stem = stems[check_id]
        assert [name for name in names if name.startswith(stem)] == [f"{stem}.json"], check_id
        written = json.loads((run_dir / "checks" / f"{stem}.json").read_text())
        assert written["details"].get("not_run") is True


# The child dies at its first lookup (as if the kernel's out-of-memory killer chose it).
KILLED_CHILD_EB = _before_each_lookup(
    """\
    if os.getpid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_the_checks_of_a_child_that_died_are_answered_in_place(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    project = _project(tmp_path, eb)
    project.run()
    starts = project.agent_starts()
    events = tmp_path / "events"
    done = run_script(
        script=KILLED_CHILD_EB, args=["run", "--cwd", str(project.root), "--json"], events=events
    )
    assert done.returncode == 0, done.stderr
    assert events_of(events) == ["fork"]
    report = json.loads(done.stdout)
    assert all(cache_of(check)["hit"] is True for check in report["checks"])
    assert project.agent_starts() == starts  # nothing paid for again


# The look-ahead, and a note once the run has taken the cache's state its checks are judged
# against (what changes there from then on, it did not write).
STATE_NOTED_EB = eb_script(
    setup=LOOK_AHEAD
    + "remember_state = session.CacheSession.remember_state\n"
    + "def noted(self):\n"
    + "    remember_state(self)\n"
    + "    note('state')\n"
    + "session.CacheSession.remember_state = noted\n"
)


def test_entries_the_child_reused_stay_when_another_run_stores_the_same_verdicts(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    project = _project(tmp_path, eb)
    project.run()  # every verdict stored
    # c01 is judged again, so the next run waits for its turn once the child has answered.
    project.write({"eval_checks/c01.yaml": judge("c01", instructions="Again.", inputs=["docs/**"])})
    stored = [p for p in project.entries() if json.loads(p.read_text())["check_id"] != "c01"]
    # Another eb run storing in its turn (the cache's lock held alone), as one storing the
    # same verdicts does: each entry written anew, a new file saying the same verdict.
    lock = os.open(project.cache_dir / ".lock", os.O_RDONLY | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)
    events = tmp_path / "events"
    process = subprocess.Popen(
        [sys.executable, "-c", STATE_NOTED_EB, "run", "--cwd", str(project.root), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "EB_EVENTS": str(events)},
    )
    try:
        waiting_for_lock(lock=project.cache_dir / ".lock", process=process)
        for path in stored:
            fresh = path.with_name(path.name + ".new")
            fresh.write_bytes(path.read_bytes())
            os.replace(fresh, path)
    finally:
        os.close(lock)  # the turn ends: the run's checks start
        out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert events_of(events) == ["fork", "state"]
    report = json.loads(out)
    assert [c["check_id"] for c in report["checks"] if not cache_of(c)["hit"]] == ["c01"]
    # Every entry it reused says the same verdict still: none is dropped, in either half
    # (the child answered c05 to c08).
    assert report["warnings"] == [], err
    assert project.misses() == set()
