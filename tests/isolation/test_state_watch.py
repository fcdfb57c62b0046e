"""Checks cannot write eb's own state: a check that rewrites a cached verdict, an earlier run
folder or the calibration record during a run is an `error` naming the path, the run does not
pass, and nothing it would have stored in the cache is kept. End to end through `eb run`, with
real deterministic checks as real subprocesses, under each isolation mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from eval_banana.isolation.workspace import overlay_usable, this_process_namespace
from tests.gitrepo import git

MODES = ["off", "detect", "copy"]


def _read_only_mounts(mode: str) -> bool:
    """Whether the check runs where eb's state is mounted read-only (a copy entered as root)."""
    return mode == "copy" and this_process_namespace() == "mount" and overlay_usable()


def _check(check_id: str, script: str, *, inputs: str) -> str:
    return (
        f"schema_version: 1\nid: {check_id}\ntype: deterministic\ndescription: {check_id}.\n"
        f"inputs: [{json.dumps(inputs)}]\nscript: {json.dumps(script)}\n"
    )


def _project(root: Path, checks: dict[str, str]) -> Path:
    (root / "eval_checks").mkdir(parents=True)
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\nmax_parallel_checks = 1\n\n[cache]\nmode = "on"\n'
    )
    (root / ".gitignore").write_text("runs/\n.eval-banana/cache/\n")
    (root / "input.txt").write_text("the input\n")
    for check_id, text in checks.items():
        (root / "eval_checks" / f"{check_id}.yaml").write_text(text)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


def _poisoner(*, target: Path, edit: str) -> str:
    """A check that rewrites eb's files at `target` (all the cache's entries, or one file),
    says what it did, and passes whatever happened."""
    return f"""\
import json
import os
from pathlib import Path
target = Path({str(target)!r})
paths = sorted(target.glob("entries/*/*.json")) if target.is_dir() else [target]
for path in paths:
    try:
        {edit}
        print("rewrote", path.name)
    except OSError as exc:
        print("refused:", exc.strerror)
"""


FLIP = (
    "doc = json.loads(path.read_text()); "
    "doc['result'].update(status='passed', score=1, observed_status='passed'); "
    "path.write_text(json.dumps(doc))"
)
SCRIBBLE = "path.write_text('{}')"
# A check that writes a file of evidence into its output folder (in the current run folder).
EVIDENCE = (
    "import json, sys\nfrom pathlib import Path\n"
    "out = Path(json.loads(Path(sys.argv[1]).read_text())['output_dir'])\n"
    "(out / 'seen.txt').write_text('evidence')\n"
)


def _run(root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), "--no-html", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    run_dir = max((root / "runs").iterdir(), key=lambda path: path.stat().st_mtime_ns)
    report = json.loads((run_dir / "report.json").read_text())
    report["by_id"] = {check["check_id"]: check for check in report["checks"]}
    return done.returncode, report


def _entries(root: Path) -> dict[str, dict[str, Any]]:
    cache = root / ".eval-banana" / "cache" / "entries"
    return {
        str(path.relative_to(root)): json.loads(path.read_text())
        for path in sorted(cache.glob("*/*.json"))
    }


def _entry_path(key: str) -> str:
    hex_key = key.split(":", 1)[1]
    return f".eval-banana/cache/entries/{hex_key[:2]}/{hex_key}.json"


@pytest.mark.parametrize("mode", MODES)
def test_a_check_that_flips_cached_verdicts_is_an_error_and_nothing_is_kept(
    tmp_path: Path, mode: str
) -> None:
    root = _project(
        tmp_path / "proj",
        {"victim": _check("victim", "raise SystemExit(1)", inputs="input.txt")},
    )
    isolation = ["--execution-isolation", mode]
    code, first = _run(root, *isolation)
    assert code == 1 and first["by_id"]["victim"]["status"] == "failed"
    victim_entry = _entry_path(first["by_id"]["victim"]["details"]["cache"]["key"])
    stored = (root / victim_entry).read_bytes()

    # Run 2: the victim's failure is reused; a new check rewrites every cached verdict to a
    # pass while it runs, and a new honest check before and one after it pass.
    checks = root / "eval_checks"
    poison = _poisoner(target=root / ".eval-banana" / "cache", edit=FLIP)
    (checks / "b_poison.yaml").write_text(_check("b_poison", poison, inputs="input.txt"))
    (checks / "a_fresh.yaml").write_text(_check("a_fresh", EVIDENCE, inputs="input.txt"))
    (checks / "c_after.yaml").write_text(_check("c_after", "pass", inputs="input.txt"))
    code, second = _run(root, *isolation)
    assert code == 1
    by_id = second["by_id"]
    assert by_id["victim"]["details"]["cache"]["hit"] is True
    assert by_id["c_after"]["status"] == "passed"  # it started after the change was seen
    # A check still writes its evidence into the current run folder (writable in a copy).
    assert by_id["a_fresh"]["status"] == "passed", by_id["a_fresh"]
    assert len(list((root / "runs" / second["run_id"] / "checks").glob("a_fresh*/seen.txt"))) == 1
    if _read_only_mounts(mode):
        # In a copy entered as root eb's state is mounted read-only: the write is refused.
        assert "refused: Read-only file system" in by_id["b_poison"]["stdout"]
        assert (root / victim_entry).read_bytes() == stored
        assert by_id["b_poison"]["status"] == "passed"
    else:
        poisoner = by_id["b_poison"]
        assert poisoner["status"] == "error" and poisoner["score"] == 0
        assert poisoner["error_detail"].startswith(
            f"eb's own files changed while this check ran: {victim_entry}"
        )
        assert poisoner["details"]["isolation"]["state_changed"] == [victim_entry]
        assert poisoner["details"]["isolation"]["status_before"] == "passed"
        # The changed entry is dropped, and so is every verdict this run would have stored.
        assert victim_entry not in _entries(root)
        assert not any(
            entry["from_run_id"] == second["run_id"] for entry in _entries(root).values()
        )
        assert by_id["a_fresh"]["details"]["cache"]["stored"] is False
    assert not list((root / ".eval-banana" / "cache").glob("runs/*/*.json"))  # no replay

    # Run 3, the poisoner gone: the victim's verdict is never reused as a pass.
    (checks / "b_poison.yaml").unlink()
    code, third = _run(root, *isolation)
    assert code == 1
    assert third["by_id"]["victim"]["status"] == "failed"
    assert third["by_id"]["victim"]["score"] == 0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("target", ["earlier_run", "calibration"])
def test_a_check_that_writes_an_earlier_run_or_the_calibration_record_fails_the_run(
    tmp_path: Path, mode: str, target: str
) -> None:
    root = _project(tmp_path / "proj", {"ok": _check("ok", "pass", inputs="input.txt")})
    isolation = ["--execution-isolation", mode]
    code, first = _run(root, *isolation)
    assert code == 0
    if target == "earlier_run":
        shown = f"runs/{first['run_id']}/stages/execute.json"
    else:
        shown = ".eval-banana/calibration.json"
    path = root / shown
    before = path.read_bytes() if path.exists() else None
    checks = root / "eval_checks"
    poison = _poisoner(target=path, edit=SCRIBBLE)
    (checks / "b_poison.yaml").write_text(_check("b_poison", poison, inputs="input.txt"))
    (checks / "a_fresh.yaml").write_text(_check("a_fresh", "pass", inputs="input.txt"))
    code, second = _run(root, *isolation)
    poisoner = second["by_id"]["b_poison"]
    if _read_only_mounts(mode) and before is not None:
        assert code == 0
        assert "refused: Read-only file system" in poisoner["stdout"]
        assert path.read_bytes() == before
        return
    # A record that was not there is created (no mount can stop that): the watch sees it.
    assert code == 1
    assert poisoner["status"] == "error"
    assert poisoner["error_detail"].startswith(
        f"eb's own files changed while this check ran: {shown}"
    )
    assert second["by_id"]["a_fresh"]["status"] == "passed"
    assert not any(entry["from_run_id"] == second["run_id"] for entry in _entries(root).values())
    assert second["by_id"]["ok"]["details"]["cache"]["hit"] is True


def _link_forger(*, target: Path) -> str:
    """A check that rewrites eb's files at `target` (every cached failure, re-signed with the
    cache's secret, or one earlier run's report.json) through a hard link it makes outside the
    watched folders: the same file, the same size, its times set back."""
    return f"""\
import hashlib, hmac, os
from pathlib import Path
target = Path({str(target)!r})
if target.is_dir():
    key = (target / "secret.key").read_bytes()[:64]
    paths = sorted(target.glob("entries/*/*.json"))
else:
    key, paths = None, [target]
head = b'{{"mac": "hmac-sha256:'
for path in paths:
    data = path.read_bytes()
    new = data.replace(b'"failed"', b'"passed"').replace(b'"score": 0,', b'"score": 1,')
    new = new.replace(b'"run_passed": false', b'"run_passed": true ')
    if key is not None:
        rest = new[len(head) + 67:]
        mac = hmac.new(key, b"eval-banana/cache-mac/1\\0", hashlib.sha256)
        mac.update(b"{{" + rest)
        new = head + mac.hexdigest().encode() + b'", ' + rest
    assert len(new) == len(data) and new != data
    before = os.stat(path)
    link = Path("forge.link")
    os.link(path, link)
    with open(link, "r+b") as handle:
        handle.write(new)
    link.unlink()
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    print("rewrote", path.name)
"""


@pytest.mark.parametrize("target", ["cache", "earlier_run"])
def test_a_check_that_writes_eb_files_through_a_hard_link_fails_the_run(
    tmp_path: Path, target: str
) -> None:
    root = _project(
        tmp_path / "proj", {"victim": _check("victim", "raise SystemExit(1)", inputs="input.txt")}
    )
    code, first = _run(root)
    assert code == 1 and first["by_id"]["victim"]["status"] == "failed"
    if target == "cache":
        shown = _entry_path(first["by_id"]["victim"]["details"]["cache"]["key"])
        forged = root / ".eval-banana" / "cache"
    else:
        shown = f"runs/{first['run_id']}/report.json"
        forged = root / shown
    checks = root / "eval_checks"
    forger = _link_forger(target=forged)
    (checks / "b_forge.yaml").write_text(_check("b_forge", forger, inputs="input.txt"))
    code, second = _run(root)
    forger_result = second["by_id"]["b_forge"]
    assert "rewrote" in forger_result["stdout"]
    assert code == 1
    assert forger_result["status"] == "error", forger_result
    assert shown in forger_result["details"]["isolation"]["state_changed"]
    assert not any(entry["from_run_id"] == second["run_id"] for entry in _entries(root).values())
    if target == "cache":
        assert shown not in _entries(root)  # the forged pass is dropped
        (checks / "b_forge.yaml").unlink()
        code, third = _run(root)
        assert code == 1 and third["by_id"]["victim"]["status"] == "failed"


def _planter(*, runs: Path, name: str, moment: str, run_id: str | None) -> str:
    """A check that copies the earlier passing run into the output folder as `name`, its
    config stage dated `moment` (and recording `run_id`, when given)."""
    return f"""\
import json, shutil
from pathlib import Path
runs = Path({str(runs)!r})
source = next(run for run in sorted(runs.iterdir())
              if run.name != {name!r} and (run / "report.json").is_file()
              and json.loads((run / "report.json").read_text())["run_passed"])
planted = runs / {name!r}
shutil.copytree(source, planted)
config = planted / "stages" / "config.json"
document = json.loads(config.read_text())
document.update(run_created_at={moment!r}, created_at={moment!r})
if {run_id!r} is not None:
    document["run_id"] = {run_id!r}
config.write_text(json.dumps(document))
print("planted", planted.name)
"""


@pytest.mark.parametrize(
    ("name", "moment", "run_id"),
    [
        # Dated after every run, under a name that is not its run id.
        ("29991231_000000_feedf00d", "2999-12-31T00:00:00.000000Z", None),
        # Its name and run id agree, but the date is still to come.
        ("29991231_000000_feedf00d", "2999-12-31T00:00:00.000000Z", "29991231_000000_feedf00d"),
        # Named and dated as a run of the past: made before this run, it cannot be one beside.
        ("20000101_000000_feedf00d", "2000-01-01T00:00:00.000000Z", "20000101_000000_feedf00d"),
    ],
)
def test_a_run_folder_a_check_plants_in_the_output_folder_fails_the_run_and_is_no_run(
    tmp_path: Path, name: str, moment: str, run_id: str | None
) -> None:
    flag = "assert open('input.txt').read() == 'the input\\n', 'input changed'"
    root = _project(tmp_path / "proj", {"flag": _check("flag", flag, inputs="input.txt")})
    code, _ = _run(root, "--cache", "off")
    assert code == 0
    (root / "input.txt").write_text("broken\n")
    planter = _planter(runs=root / "runs", name=name, moment=moment, run_id=run_id)
    (root / "eval_checks" / "b_plant.yaml").write_text(
        _check("b_plant", planter, inputs="input.txt")
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "eval_banana",
            "run",
            "--cwd",
            str(root),
            "--no-html",
            "--cache",
            "off",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert (root / "runs" / name).is_dir()
    second = max(
        (run for run in (root / "runs").iterdir() if run.name != name),
        key=lambda path: path.stat().st_mtime_ns,
    )
    report = json.loads((second / "report.json").read_text())
    plant = next(check for check in report["checks"] if check["check_id"] == "b_plant")
    assert plant["status"] == "error", plant
    assert f"runs/{name}" in plant["details"]["isolation"]["state_changed"]
    if run_id is None or moment.startswith("2999"):
        # eb status and eb diff pass the planted folder over, naming it: the diff sees the
        # regression of the run that really was the newest.
        for command, code in ((["status"], 0), (["diff"], 1)):
            shown = subprocess.run(
                [sys.executable, "-m", "eval_banana", *command, "--cwd", str(root)],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert shown.returncode == code, (command, shown.stdout, shown.stderr)
            assert str(second) in shown.stdout
            assert f"{name} is not taken for a run" in shown.stderr


def test_a_cache_folder_created_by_a_check_is_removed(tmp_path: Path) -> None:
    # No cache yet, and the cache off: a check that plants entries there is still caught, and
    # what it planted is gone (a later run with the cache on would have reused it).
    root = _project(tmp_path / "proj", {"ok": _check("ok", "pass", inputs="input.txt")})
    config = root / ".eval-banana" / "config.toml"
    config.write_text(config.read_text().replace('mode = "on"', 'mode = "off"'))
    cache = root / ".eval-banana" / "cache"
    plant = (
        f"from pathlib import Path\nfolder = Path({str(cache)!r}) / 'entries' / 'ab'\n"
        "folder.mkdir(parents=True)\n(folder / ('ab' * 32 + '.json')).write_text('{}')\n"
    )
    (root / "eval_checks" / "plant.yaml").write_text(_check("plant", plant, inputs="input.txt"))
    code, report = _run(root)
    assert code == 1
    planted = report["by_id"]["plant"]
    assert planted["status"] == "error"
    assert ".eval-banana/cache" in planted["details"]["isolation"]["state_changed"]
    assert not cache.exists()


def test_a_process_a_check_left_behind_is_charged_to_the_check_running_then(
    tmp_path: Path,
) -> None:
    # `a_leaver` starts a process that outlives it (a cleared environment names no check, so
    # eb leaves it alone while another check runs); it writes into the cache once `b_running`
    # has started and `a_leaver` has ended, and `b_running` ends only after that write. The
    # check running then is charged.
    go, cache = tmp_path / "go", tmp_path / "proj" / ".eval-banana" / "cache"
    stray = cache / "stray.txt"
    writer = (
        "import os, sys, time\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
        "while os.path.exists(f'/proc/{sys.argv[1]}'): time.sleep(0.02)\n"
        "time.sleep(0.5)  # eb has noted a_leaver's end\n"
        f"open({str(stray)!r}, 'w').write('x')\n"
    )
    leaver = (
        "import os, subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', {writer!r}, str(os.getpid())], env={{}}, "
        "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    )
    running = (
        "import os, time\n"
        f"open({str(go)!r}, 'w').close()\n"
        f"deadline = time.time() + 20\n"
        f"while not os.path.exists({str(stray)!r}) and time.time() < deadline: time.sleep(0.02)\n"
    )
    root = _project(
        tmp_path / "proj",
        {
            "a_leaver": _check("a_leaver", leaver, inputs="input.txt"),
            "b_running": _check("b_running", running, inputs="input.txt"),
        },
    )
    cache.mkdir(parents=True)
    code, report = _run(root, "--max-parallel-checks", "2")
    assert code == 1
    charged = report["by_id"]["b_running"]
    assert charged["status"] == "error"
    assert charged["details"]["isolation"]["state_changed"] == [".eval-banana/cache/stray.txt"]
    assert report["by_id"]["a_leaver"]["status"] == "passed"
    assert not stray.exists()  # what changed in the cache is removed
    assert _entries(root) == {}  # and neither verdict is stored


# --- who is charged: the watch itself, on real folders ------------------------------------------


def _watch(tmp_path: Path) -> tuple[Any, Path, Path]:
    from eval_banana.isolation.places import StatePlaces
    from eval_banana.isolation.state import StateWatch

    cache = tmp_path / "cache"
    (cache / "entries" / "ab").mkdir(parents=True)
    (cache / "entries" / "ab" / "old.json").write_text("{}")
    record = tmp_path / "calibration.json"
    places = StatePlaces(
        folders=[str(cache), str(cache / "entries"), str(cache / "entries" / "ab")],
        files=[str(record)],
        cache=str(cache),
    )
    return StateWatch(places=places, project_root=tmp_path), cache, record


def test_a_change_seen_while_no_check_ran_falls_to_those_that_started_before(
    tmp_path: Path,
) -> None:
    watch, cache, _ = _watch(tmp_path)
    watch.started(key="a")
    assert watch.ended(key="a") == []
    (cache / "entries" / "ab" / "old.json").write_text('{"forged": true}')
    watch.started(key="b")  # the change is seen here, before `b` counts as running
    assert watch.ended(key="b") == []
    report = watch.finish()
    assert report.charged == {} and report.unattributed == []
    assert report.late == {"a": ["cache/entries/ab/old.json"]}
    assert report.changed == ["cache/entries/ab/old.json"]


def test_a_change_before_any_check_started_is_charged_to_none_of_them(tmp_path: Path) -> None:
    watch, cache, record = _watch(tmp_path)
    record.write_text("{}")
    watch.started(key="a")
    assert watch.ended(key="a") == []
    report = watch.finish()
    assert report.unattributed == ["calibration.json"]
    assert report.late == {} and report.charged == {}


def test_without_inotify_the_state_is_compared_when_the_checks_are_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past the folder budget no watch is set: the listings are compared at the end, and every
    # check that ran is charged; the calibration record is still compared at every look.
    monkeypatch.setattr("eval_banana.isolation.state.FOLDER_BUDGET", 1)
    watch, cache, record = _watch(tmp_path)
    assert not watch.inotify
    watch.started(key="a")
    (cache / "entries" / "ab" / "new.json").write_text("{}")
    record.write_text("{}")
    assert watch.ended(key="a") == ["calibration.json"]
    watch.started(key="b")
    assert watch.ended(key="b") == []
    report = watch.finish()
    assert report.late == {"a": ["cache/entries/ab/new.json"], "b": ["cache/entries/ab/new.json"]}
    assert watch.drop_cache_changes() == ["cache/entries/ab/new.json"]
    assert sorted(p.name for p in (cache / "entries" / "ab").iterdir()) == ["old.json"]
    assert record.exists()  # only what changed in the cache is removed


@pytest.mark.concurrent
def test_a_run_that_ends_while_another_runs_checks_with_the_cache_stores_nothing(
    tmp_path: Path,
) -> None:
    # Run A's check waits; run B, sharing the cache, runs a check to its end meanwhile. B must
    # not write the cache A is watching (A's check would be blamed): it stores nothing and
    # says so; A, once its check ends, stores its verdict and passes.
    started, release = tmp_path / "a_started", tmp_path / "b_done"
    waiting = (
        "import os, time\n"
        f"open({str(started)!r}, 'w').close()\n"
        "deadline = time.time() + 60\n"
        f"while not os.path.exists({str(release)!r}) and time.time() < deadline: time.sleep(0.02)\n"
    )
    root = _project(
        tmp_path / "proj",
        {
            "slow": _check("slow", waiting, inputs="input.txt"),
            "quick": _check("quick", "pass", inputs="input.txt"),
        },
    )
    argv = [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), "--no-html", "--json"]
    first = subprocess.Popen(
        [*argv, "--check-id", "slow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        for _ in range(3000):
            if started.exists() or first.poll() is not None:
                break
            time.sleep(0.02)
        assert started.exists()
        second = subprocess.run(
            [*argv, "--check-id", "quick"],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
        assert second.returncode == 0, second.stderr
        assert "is running with this cache" in second.stderr
        quick = json.loads(second.stdout)["checks"][0]
        assert quick["details"]["cache"]["stored"] is False
        release.touch()
        out, err = first.communicate(timeout=120)
    finally:
        release.touch()
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, err
    slow = json.loads(out)["checks"][0]
    assert slow["status"] == "passed" and slow["details"]["cache"]["stored"] is True
    assert {entry["check_id"] for entry in _entries(root).values()} == {"slow"}


def test_only_what_eb_reads_back_from_an_earlier_run_folder_counts(tmp_path: Path) -> None:
    """A run beside ours still finishing its report.html (a temporary file, then the rename)
    is no change of eb's state; its report.json or stage files changing is."""
    from eval_banana.isolation.places import StatePlaces
    from eval_banana.isolation.state import StateWatch

    run = tmp_path / "runs" / "20260101_000000_aaaaaaaa"
    (run / "stages").mkdir(parents=True)
    (run / "checks").mkdir()
    (run / "report.json").write_text("{}")
    places = StatePlaces(
        folders=[str(run), str(run / "stages"), str(run / "checks")],
        files=[],
        cache=str(tmp_path / "cache"),
        run_folders=frozenset({str(run)}),
    )
    watch = StateWatch(places=places, project_root=tmp_path)
    watch.started(key="a")
    (run / ".report.html.1.tmp").write_text("<html>")
    (run / ".report.html.1.tmp").rename(run / "report.html")
    (run / "report.md").write_text("# report")
    assert watch.ended(key="a") == []
    watch.started(key="b")
    (run / "report.json").write_text('{"forged": true}')
    (run / "stages" / "score.json").write_text("{}")
    assert sorted(watch.ended(key="b")) == [
        "runs/20260101_000000_aaaaaaaa/report.json",
        "runs/20260101_000000_aaaaaaaa/stages/score.json",
    ]


def test_the_cache_is_watched_down_to_its_files_without_listing_them(tmp_path: Path) -> None:
    """The cache's folders are found two levels down, where its files are, without reading
    each leaf's names; a rewritten blob and a file added to a leaf are still seen."""
    from eval_banana.isolation.places import StatePlaces, cache_folders
    from eval_banana.isolation.state import StateWatch

    cache = tmp_path / "cache"
    for part in ("entries", "blobs", "runs"):
        for group in ("00", "ab"):
            (cache / part / group).mkdir(parents=True)
            for n in range(50):
                (cache / part / group / f"{n:064x}").write_text("x")
    (cache / "blobs" / "ab" / "deeper" / "still").mkdir(parents=True)  # not eb's layout
    (cache / "secret.key").write_text("k")
    found = cache_folders(str(cache))
    expected = [str(cache)] + [
        str(cache / part / group)
        for part in ("entries", "blobs", "runs")
        for group in ("", "00", "ab")
    ]
    assert sorted(found) == sorted(folder.rstrip("/") for folder in expected)
    places = StatePlaces(folders=found, files=[], cache=str(cache))
    watch = StateWatch(places=places, project_root=tmp_path)
    watch.started(key="a")
    (cache / "blobs" / "00" / f"{7:064x}").write_text("forged")
    (cache / "entries" / "ab" / "planted.json").write_text("{}")
    assert sorted(watch.ended(key="a")) == [
        f"cache/blobs/00/{7:064x}",
        "cache/entries/ab/planted.json",
    ]


def test_the_temporary_file_of_another_run_making_the_secret_is_no_change(
    tmp_path: Path,
) -> None:
    # Two runs starting at once on a new cache folder both make its secret: the second writes
    # `.secret.key.<pid>.<n>.tmp` while the first one's checks run, then finds the secret made
    # and removes its file. eb never reads such a file; only the secret itself would count.
    root = _project(tmp_path / "proj", {"ok": _check("ok", "pass", inputs="input.txt")})
    assert _run(root)[0] == 0  # the cache folder and its secret exist
    cache = root / ".eval-banana" / "cache"
    other_run = (
        f"from pathlib import Path\ntemp = Path({str(cache)!r}) / '.secret.key.99999.0.tmp'\n"
        "temp.write_text('0' * 64 + '\\n')\ntemp.unlink()\n"
    )
    (root / "eval_checks" / "other.yaml").write_text(_check("other", other_run, inputs="x"))
    code, report = _run(root)
    assert code == 0, report["by_id"]
    assert report["by_id"]["ok"]["status"] == "passed"


def test_a_run_still_writing_its_report_stage_is_no_earlier_run(tmp_path: Path) -> None:
    # Another eb run beside this one writes report.json, then stages/report.json: until that
    # last file is there, its writes are its own, never a change of an earlier run's files.
    from eval_banana.isolation.places import _earlier_runs

    results = tmp_path / "results"
    for name, files in {
        "finished": ("report.json", "stages/report.json"),
        "writing": ("report.json", "stages/execute.json"),
    }.items():
        for relative in files:
            (results / name / relative).parent.mkdir(parents=True, exist_ok=True)
            (results / name / relative).write_text("{}")
    current = results / "current"
    current.mkdir()
    found = _earlier_runs(bases=[results], run_dir=current, cache=tmp_path / "cache")
    assert [path.name for path in found] == ["finished"]


@pytest.mark.parametrize("kind", ["file", "link", "none"])
def test_a_calibration_record_changed_meanwhile_is_put_back_as_it_stood(
    tmp_path: Path, kind: str
) -> None:
    from eval_banana.isolation.places import StatePlaces
    from eval_banana.isolation.state import StateWatch

    record = tmp_path / "calibration.json"
    honest = tmp_path / "honest.json"
    honest.write_text('{"checks": {}}')
    if kind == "file":
        record.write_bytes(honest.read_bytes())
        record.chmod(0o600)
    elif kind == "link":
        record.symlink_to("honest.json")  # the link put back, not what it names copied
    places = StatePlaces(
        folders=[],
        files=[str(record)],
        cache=str(tmp_path / "cache"),
        calibration_record=str(record),
    )
    watch = StateWatch(places=places, project_root=tmp_path)
    watch.started(key="a")
    if kind == "link":
        record.unlink()
    record.write_text('{"checks": {"forged": {}}}')
    assert watch.ended(key="a") == ["calibration.json"]
    report = watch.finish()
    if kind == "file":
        assert report.record_put_back == "put back as it was before they started"
        assert record.read_bytes() == honest.read_bytes()
        assert record.stat().st_mode & 0o777 == 0o600
    elif kind == "link":
        assert record.is_symlink() and record.readlink() == Path("honest.json")
    else:
        assert report.record_put_back == "removed: there was none before they started"
        assert not record.exists()
    assert honest.read_text() == '{"checks": {}}'


def test_warnings_about_files_a_check_named_after_a_secret_are_masked(tmp_path: Path) -> None:
    """The console's warnings after the checks name the changed files as the files eb writes
    name them: a secret in a name is `***`, and a line break in one starts no line (which
    GitHub Actions would run as a `::` workflow command)."""
    secret = "SuperSecretValue123"
    script = (
        "import os\nfrom pathlib import Path\n"
        "s = os.environ['MY_API_KEY']\n"
        "Path('leak-' + s + '.txt').write_text('x')\n"
        "entries = Path('.eval-banana/cache/entries')\n"
        "entries.mkdir(parents=True, exist_ok=True)\n"
        "(entries / s).write_text('x')\n"
        "(entries / 'nl\\n::error::injected').write_text('x')\n"
    )
    root = _project(tmp_path / "proj", {"leak": _check("leak", script, inputs="input.txt")})
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), "--no-html"]
        + ["--execution-isolation", "detect"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "MY_API_KEY": secret},
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "eb's own files changed while checks ran (" in done.stderr
    assert "The project changed while watched checks ran (leak-***.txt)" in done.stderr
    assert ".eval-banana/cache/entries/***" in done.stderr
    assert "nl\\x0a::error::injected" in done.stderr
    console = done.stdout + done.stderr
    assert secret not in console
    assert not [line for line in console.splitlines() if line.startswith("::")]
