"""Two `eb run`s at once sharing one local cache folder (`--cache-dir`), as two checkouts on
one machine do: what one run reuses, fetches or keeps never becomes the other's error or loss.
Real `eb` processes; run A's check waits for a file, so run B happens while it executes."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.cache.rig import waiting_for_lock

# The concurrent suite (`pytest -m concurrent`, which .ci/run runs after the README's command):
# two eb processes at once, each test waiting on the other's checks.
pytestmark = pytest.mark.concurrent

_EB = [sys.executable, "-m", "eval_banana", "run", "--no-html", "--json"]


def _check(check_id: str, script: str, *, inputs: str = "input.txt") -> str:
    return (
        f"schema_version: 1\nid: {check_id}\ntype: deterministic\ndescription: {check_id}.\n"
        f"inputs: [{json.dumps(inputs)}]\nscript: {json.dumps(script)}\n"
    )


def _waiting(*, started: Path, release: Path, hold: Path | None = None) -> str:
    """A check that says it started, then waits (at most a minute) for `release`; with
    `hold`, only while that file exists (else it passes at once)."""
    return (
        "import os, sys, time\n"
        + (f"if not os.path.exists({str(hold)!r}): sys.exit(0)\n" if hold else "")
        + f"open({str(started)!r}, 'w').close()\n"
        "deadline = time.time() + 60\n"
        f"while not os.path.exists({str(release)!r}) and time.time() < deadline:\n"
        "    time.sleep(0.02)\n"
    )


def _project(root: Path, checks: dict[str, str]) -> Path:
    (root / "eval_checks").mkdir(parents=True)
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\nmax_parallel_checks = 2\n\n[cache]\nmode = "on"\n'
    )
    (root / "input.txt").write_text("the input\n")
    (root / "own.txt").write_text("the first\n")
    for check_id, text in checks.items():
        (root / "eval_checks" / f"{check_id}.yaml").write_text(text)
    return root


def _quick(root: Path) -> Path:
    """Checkout B: two quick checks that pass."""
    return _project(root, {"q1": _check("q1", "pass"), "q2": _check("q2", "print('two')")})


def _run(root: Path, *args: str) -> tuple[dict[str, Any], str]:
    done = subprocess.run(
        [*_EB, "--cwd", str(root), *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def _hits(report: dict[str, Any]) -> dict[str, bool]:
    return {check["check_id"]: check["details"]["cache"]["hit"] for check in report["checks"]}


@contextmanager
def _executing(root: Path, *args: str, started: Path, release: Path) -> Iterator[list[Any]]:
    """Run A, held while its waiting check executes; yields a list that gets, once A is
    released and ends, its report and its stderr."""
    process = subprocess.Popen(
        [*_EB, "--cwd", str(root), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    ended: list[Any] = []
    try:
        for _ in range(3000):
            if started.exists() or process.poll() is not None:
                break
            time.sleep(0.02)
        assert started.exists(), process.communicate(timeout=60)[1]
        yield ended
        release.touch()
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        ended.extend([json.loads(out), err])
    finally:
        release.touch()
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=120)


def test_verdicts_fetched_while_another_run_executes_checks_never_make_its_checks_errors(
    tmp_path: Path,
) -> None:
    # B's verdicts are in the shared cache (stored from a private local folder). While A's
    # check executes with the local folder B then uses, B fetches them: it reuses them, but
    # keeps nothing in that folder (A's watch would charge its check), and says so.
    shared, local = tmp_path / "shared", tmp_path / "local"
    quick = _quick(tmp_path / "b")
    _run(quick, "--cache-dir", str(tmp_path / "private"), "--cache-remote", str(shared))
    started, release = tmp_path / "started", tmp_path / "release"
    slow = _project(
        tmp_path / "a", {"slow": _check("slow", _waiting(started=started, release=release))}
    )
    with _executing(slow, "--cache-dir", str(local), started=started, release=release) as a:
        report, err = _run(quick, "--cache-dir", str(local), "--cache-remote", str(shared))
        assert _hits(report) == {"q1": True, "q2": True}
        assert report["cache"]["remote_hits"] == 2
        assert "the 2 verdicts this run fetched from the shared cache are not kept" in err
    report_a, err_a = a
    assert [check["status"] for check in report_a["checks"]] == ["passed"], err_a
    assert "eb's own files changed" not in err_a
    # A later run, with the folder to itself, fetches them again and keeps them.
    again, _ = _run(quick, "--cache-dir", str(local), "--cache-remote", str(shared))
    assert again["cache"]["remote_hits"] == 2
    local_only, _ = _run(quick, "--cache-dir", str(local))
    assert _hits(local_only) == {"q1": True, "q2": True}


def test_verdicts_fetched_while_another_run_executes_checks_are_kept_in_this_run_s_turn(
    tmp_path: Path,
) -> None:
    # B fetches while A's check executes, and runs a check of its own that outlasts A's: once
    # its own has ended (A is done by then), B stores its verdict and keeps what it fetched.
    shared, local = tmp_path / "shared", tmp_path / "local"
    b_started, b_release, hold = (tmp_path / name for name in ("b_started", "b_release", "hold"))
    quick = _project(
        tmp_path / "b",
        {
            "q1": _check("q1", "pass"),
            "q2": _check("q2", "print('two')"),
            "own": _check(
                "own",
                _waiting(started=b_started, release=b_release, hold=hold),
                inputs="own.txt",
            ),
        },
    )
    _run(quick, "--cache-dir", str(tmp_path / "private"), "--cache-remote", str(shared))
    (quick / "own.txt").write_text("the second\n")  # B's own check runs again, and now waits
    hold.touch()
    started, release = tmp_path / "started", tmp_path / "release"
    slow = _project(
        tmp_path / "a", {"slow": _check("slow", _waiting(started=started, release=release))}
    )
    b_args = ("--cache-dir", str(local), "--cache-remote", str(shared))
    with (
        _executing(slow, "--cache-dir", str(local), started=started, release=release) as a,
        _executing(quick, *b_args, started=b_started, release=b_release) as b,
    ):
        release.touch()  # A ends first, while B's own check still executes
        for _ in range(3000):
            if list((tmp_path / "a" / "runs").glob("*/report.json")):
                break
            time.sleep(0.02)
    report_a, err_a = a
    assert [check["status"] for check in report_a["checks"]] == ["passed"], err_a
    report_b, err_b = b
    assert report_b["cache"]["remote_hits"] == 2, err_b
    assert "not kept" not in err_b
    local_only, _ = _run(quick, "--cache-dir", str(local))
    assert _hits(local_only) == {"own": True, "q1": True, "q2": True}


def test_verdicts_another_run_reuses_meanwhile_stay_in_the_cache(tmp_path: Path) -> None:
    # B only reuses its verdicts from the folder A's check executes with. A reuse marks the
    # entry as used (its times change, nothing else): A must not take that for a write.
    local = tmp_path / "local"
    quick = _quick(tmp_path / "b")
    _run(quick, "--cache-dir", str(local))
    started, release = tmp_path / "started", tmp_path / "release"
    slow = _project(
        tmp_path / "a", {"slow": _check("slow", _waiting(started=started, release=release))}
    )
    with _executing(slow, "--cache-dir", str(local), started=started, release=release) as a:
        reused, _ = _run(quick, "--cache-dir", str(local))
        assert _hits(reused) == {"q1": True, "q2": True}
    report_a, err_a = a
    assert [check["status"] for check in report_a["checks"]] == ["passed"], err_a
    assert "changed during this run" not in err_a
    again, _ = _run(quick, "--cache-dir", str(local))
    assert _hits(again) == {"q1": True, "q2": True}


def test_a_check_rewriting_an_entry_in_place_with_its_times_set_back_is_still_caught(
    tmp_path: Path,
) -> None:
    # What a touch changes and what a rewrite keeping the size and the times changes look
    # alike on the file; the watch on eb's files still sees the write.
    local = tmp_path / "local"
    quick = _quick(tmp_path / "b")
    _run(quick, "--cache-dir", str(local))
    entry = sorted(local.glob("entries/*/*.json"))[0]
    rewrite = (
        "import os\n"
        f"path = {str(entry)!r}\n"
        "info = os.stat(path)\n"
        "data = open(path, 'rb').read()\n"
        "open(path, 'r+b').write(data.replace(b'\"passed\"', b'\"passeD\"', 1))\n"
        "os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))\n"
    )
    writer = _project(tmp_path / "a", {"writer": _check("writer", rewrite)})
    done = subprocess.run(
        [*_EB, "--cwd", str(writer), "--cache-dir", str(local)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["checks"][0]["status"] == "error"
    assert not entry.exists()


def test_what_another_run_stores_while_this_one_waits_for_its_turn_is_kept(
    tmp_path: Path,
) -> None:
    # B stores its verdicts in its turn (the cache's lock held alone) while A, about to run
    # its check, waits for that turn: what B wrote before A's checks began is B's, not a
    # change A's checks made, and A must not drop it.
    local = tmp_path / "local"
    quick = _quick(tmp_path / "b")
    _run(quick, "--cache-dir", str(local))
    entries = sorted((local / "entries").rglob("*.json"))
    assert len(entries) == 2
    slow = _project(tmp_path / "a", {"own": _check("own", "print('a')")})
    lock_file = local / ".lock"
    lock = os.open(lock_file, os.O_RDONLY)
    fcntl.flock(lock, fcntl.LOCK_EX)
    process = subprocess.Popen(
        [*_EB, "--cwd", str(slow), "--cache-dir", str(local)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        waiting_for_lock(lock=lock_file, process=process)
        for entry in entries:  # each written anew, as a storing run replaces an entry
            fresh = entry.with_name(entry.name + ".new")
            fresh.write_bytes(entry.read_bytes())
            os.replace(fresh, entry)
    finally:
        os.close(lock)
        out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert [check["status"] for check in json.loads(out)["checks"]] == ["passed"], err
    assert "changed during this run" not in err
    again, _ = _run(quick, "--cache-dir", str(local))
    assert _hits(again) == {"q1": True, "q2": True}
