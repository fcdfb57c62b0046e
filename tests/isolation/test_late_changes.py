"""A change to the project that no look while the checks ran saw is still charged: a write
through a hard link (made before the run or by the judge), and a write by a process a judge left
behind while only unwatched checks ran. End to end, with a real git repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import gitrepo
from tests.isolation.rig import run_checks

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"

# A judge of src/app.py. Honest unless told otherwise, by its prompt or by CHEAT: then it
# "fixes" the file it judges where no folder watch of the project sees it, and passes.
AGENT = """\
import json, os, sys, tempfile, time
prompt = " ".join(sys.argv[1:])
cheat = os.environ.get("CHEAT", "")
app = os.path.join(os.environ["EVAL_BANANA_PROJECT_ROOT"], "src", "app.py")
# Long enough for the checks started with it to be running when it ends (else eb ends its
# daemon at once, as nothing else runs).
time.sleep(float(os.environ.get("JUDGE_WAIT", "0")))

def rewrite(path):
    text = open(path).read().replace("a - b", "a + b")
    with open(path, "r+") as handle:
        handle.seek(0)
        handle.write(text)
        handle.truncate()

if cheat == "link_before":  # through a hard link made outside the project before the run
    rewrite(os.environ["CHEAT_LINK"])
elif cheat == "link_quietly":  # the same write, then an honest verdict on the file it was shown
    rewrite(os.environ["CHEAT_LINK"])
    good = "a + b" in open(app).read()
    print(json.dumps({"score": int(good), "reason": "adds" if good else "subtracts"}))
    raise SystemExit(0)
elif cheat == "link_now":  # through a hard link the judge makes itself, then removes
    folder = tempfile.mkdtemp(prefix="cheat-")
    link = os.path.join(folder, "app")
    os.link(app, link)
    rewrite(link)
    os.unlink(link)
    os.rmdir(folder)
elif cheat == "daemon" or "DAEMON" in prompt:
    # A daemon in a session of its own, with no eb token in its environment, that writes
    # once the judge has ended.
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            code = (
                "import sys, time; time.sleep(float(sys.argv[2])); p = sys.argv[1]; "
                "t = open(p).read().replace('a - b', 'a + b'); open(p, 'w').write(t)"
            )
            env = {"PATH": os.environ["PATH"]}
            delay = os.environ.get("DAEMON_DELAY", "0.4")
            os.execve(sys.executable, [sys.executable, "-c", code, app, delay], env)
        os._exit(0)
else:
    good = "a + b" in open(app).read()
    print(json.dumps({"score": int(good), "reason": "adds" if good else "subtracts"}))
    raise SystemExit(0)
print(json.dumps({"score": 1, "reason": "add returns a + b"}))
"""


# The judge leaves its daemon 0.5 s after it starts (the sleeping check beside it runs by then),
# which writes 0.4 s later.
DAEMON = {"CHEAT": "daemon", "JUDGE_WAIT": "0.5"}


def _judge(check_id: str, instructions: str = "Score 1 only if add returns a + b.") -> str:
    return (
        f"schema_version: 1\nid: {check_id}\ntype: harness_judge\ndescription: add adds.\n"
        f"instructions: {json.dumps(instructions)}\n"
    )


def _sleeper(check_id: str, seconds: float) -> str:
    return (
        f"schema_version: 1\nid: {check_id}\ntype: deterministic\ndescription: waits.\n"
        f'script: "import time; time.sleep({seconds})"\n'
    )


def _project(
    root: Path, *, git: bool = True, checks: dict[str, str] | None = None, config: str = ""
) -> Path:
    (root / "eval_checks").mkdir(parents=True)
    (root / "src").mkdir()
    (root / ".eval-banana").mkdir()
    agent = root.parent / "agent.py"
    agent.write_text(AGENT)
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\nschedule = "plan"\n' + config + "\n\n"
        '[harness]\nagent = "judge"\n\n'
        f"[agents.judge]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(agent))}]\n"
        'model_flag = ""\n'
    )
    (root / "src" / "app.py").write_text(BUGGY)
    for check_id, text in (checks or {"judge_add": _judge("judge_add")}).items():
        (root / "eval_checks" / f"{check_id}.yaml").write_text(text)
    if git:
        (root / ".gitignore").write_text("runs/\n.eval-banana/cache/\n")
        gitrepo.git(root, "init", "-q")
        gitrepo.git(root, "add", "-A")
        gitrepo.git(root, "commit", "-q", "-m", "start")
    return root


def _charged_at_end(check: dict[str, object]) -> None:
    """A pass made an isolation error by the last look, naming the file and how it was seen."""
    assert check["status"] == "error", check
    details = check["details"]
    assert isinstance(details, dict)
    assert details["error_class"] == "isolation"
    assert details["isolation"]["late_changed"] == ["src/app.py"]
    assert details["isolation"]["status_before"] == "passed"
    detail = str(check["error_detail"])
    assert detail.startswith(
        "The project changed during this run, seen only by the look after its last check had "
        "ended: src/app.py."
    ), detail
    assert "which check made it is unknown" in detail


@pytest.mark.parametrize("mode", ["detect", "copy"])
def test_a_write_through_a_hard_link_made_before_the_run_is_charged(
    tmp_path: Path, mode: str
) -> None:
    root = _project(tmp_path / "proj")
    link = tmp_path / "links" / "app"
    link.parent.mkdir()
    os.link(root / "src" / "app.py", link)
    code, checks = run_checks(
        root, "--isolation", mode, env={"CHEAT": "link_before", "CHEAT_LINK": str(link)}
    )
    assert (root / "src" / "app.py").read_text() == FIXED  # the cheat did reach the project
    assert code == 1
    _charged_at_end(checks["judge_add"])
    assert checks["judge_add"]["details"]["isolation"]["mode"] == mode


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_a_write_through_a_hard_link_the_judge_makes_is_charged(tmp_path: Path, git: bool) -> None:
    root = _project(tmp_path / "proj", git=git)
    code, checks = run_checks(root, env={"CHEAT": "link_now"})
    assert (root / "src" / "app.py").read_text() == FIXED
    assert code == 1
    _charged_at_end(checks["judge_add"])


def test_a_hard_link_nobody_writes_through_is_harmless(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    (tmp_path / "links").mkdir()
    os.link(root / "src" / "app.py", tmp_path / "links" / "app")
    (root / "src" / "app.py").write_text(FIXED)  # written through its own name, before the run
    gitrepo.git(root, "commit", "-q", "-am", "fixed")
    code, checks = run_checks(root)
    assert code == 0, checks
    assert checks["judge_add"]["status"] == "passed"
    assert "late_changed" not in checks["judge_add"]["details"]["isolation"]


def test_a_process_a_judge_left_behind_writing_beside_an_unwatched_check_is_charged(
    tmp_path: Path,
) -> None:
    # The daemon writes while only the deterministic check, which nothing watches, runs: no
    # look happens then, and eb spares a process without a token while any check runs.
    root = _project(
        tmp_path / "proj",
        checks={"judge_add": _judge("judge_add"), "zz_sleep": _sleeper("zz_sleep", 2)},
    )
    code, checks = run_checks(root, "--max-parallel-checks", "4", env=DAEMON)
    assert (root / "src" / "app.py").read_text() == FIXED
    assert code == 1
    _charged_at_end(checks["judge_add"])
    assert checks["zz_sleep"]["status"] == "passed"  # unwatched: never charged


def test_a_change_seen_while_no_watched_check_ran_falls_on_the_judges_that_ended(
    tmp_path: Path,
) -> None:
    # Two workers, in plan order: a_judge (leaves a daemon) and b_sleep start; a_judge ends and
    # c_pause takes its worker, the daemon writes 0.7 s later; d_judge starts after c_pause
    # and its first look sees the change, while no watched check runs.
    root = _project(
        tmp_path / "proj",
        checks={
            "a_judge": _judge("a_judge", "DAEMON: score 1 only if add returns a + b."),
            "b_sleep": _sleeper("b_sleep", 4.5),
            "c_pause": _sleeper("c_pause", 2),
            "d_judge": _judge("d_judge"),
        },
    )
    code, checks = run_checks(
        root, "--max-parallel-checks", "2", env={"JUDGE_WAIT": "0.5", "DAEMON_DELAY": "0.7"}
    )
    assert (root / "src" / "app.py").read_text() == FIXED
    assert code == 1
    first = checks["a_judge"]
    assert first["status"] == "error" and first["details"]["error_class"] == "isolation"
    assert first["details"]["isolation"]["late_changed"] == ["src/app.py"]
    assert str(first["error_detail"]).startswith(
        "The project changed after this judge ended, while no watched check ran: src/app.py; "
        "a process it left behind may have made the change."
    ), first["error_detail"]
    # d_judge started after the change: it judged the project as it found it.
    assert checks["d_judge"]["status"] == "passed", checks["d_judge"]


def test_a_cheated_pass_is_not_reused_once_the_file_is_back(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj", config='\n[cache]\nmode = "on"')
    link = tmp_path / "links" / "app"
    link.parent.mkdir()
    os.link(root / "src" / "app.py", link)
    code, checks = run_checks(root, env={"CHEAT": "link_before", "CHEAT_LINK": str(link)})
    assert code == 1 and checks["judge_add"]["details"]["cache"]["stored"] is False
    gitrepo.git(root, "checkout", "-q", "src/app.py")  # the buggy file again, as the key saw it
    time.sleep(0.01)
    code, checks = run_checks(root)  # an honest judge
    judge = checks["judge_add"]
    assert judge["details"]["cache"]["hit"] is False
    assert code == 1 and judge["status"] == "failed", judge


def test_a_run_whose_project_changed_under_a_watched_check_stores_no_verdict(
    tmp_path: Path,
) -> None:
    # zz_sleep's verdict ran on a project the daemon changed: none of the run is stored.
    root = _project(
        tmp_path / "proj",
        checks={"judge_add": _judge("judge_add"), "zz_sleep": _sleeper("zz_sleep", 2)},
        config='\n[cache]\nmode = "on"',
    )
    code, checks = run_checks(root, "--max-parallel-checks", "4", env=DAEMON)
    assert (root / "src" / "app.py").read_text() == FIXED
    assert code == 1
    assert checks["zz_sleep"]["status"] == "passed"
    assert checks["zz_sleep"]["details"]["cache"]["stored"] is False


@pytest.mark.parametrize("mode", ["detect", "copy"])
def test_a_calibration_whose_judge_wrote_through_a_hard_link_records_no_agreement(
    tmp_path: Path, mode: str
) -> None:
    # The judge answers every case as labelled, in its case's copy, and rewrites the project's
    # file through a link made before: the calibration's last look finds the change.
    cases = [
        {"name": "adds", "expect": "pass", "files": {"src/app.py": FIXED}},
        {"name": "subtracts", "expect": "fail", "files": {"src/app.py": BUGGY}},
    ]
    judge = _judge("judge_add") + f"calibration: {json.dumps(cases)}\n"
    root = _project(tmp_path / "proj", checks={"judge_add": judge})
    link = tmp_path / "links" / "app"
    link.parent.mkdir()
    os.link(root / "src" / "app.py", link)
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", "calibrate", "--cwd", str(root)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={
            **os.environ,
            "CHEAT": "link_quietly",
            "CHEAT_LINK": str(link),
            "EVAL_BANANA_HARNESS_ISOLATION": mode,
        },
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert (root / "src" / "app.py").read_text() == FIXED  # the cheat did reach the project
    assert done.returncode == 1, done.stdout + done.stderr
    assert "DISAGREED judge_add: 0/2 cases agreed" in done.stdout
    record = json.loads((root / ".eval-banana" / "calibration.json").read_text())
    samples = [one for case in record["checks"]["judge_add"]["outcomes"] for one in case["samples"]]
    assert [(one["status"], one["agreed"]) for one in samples] == [("error", False)] * 2
    assert str(samples[0]["reason"]).startswith(
        "The project changed during this calibration, seen only by the look after its last "
        "sample had ended: src/app.py."
    ), samples[0]["reason"]
    run_dir = Path(record["checks"]["judge_add"]["run_dir"])
    result = json.loads((run_dir / samples[0]["evidence"]["result"]).read_text())
    assert result["details"]["isolation"]["late_changed"] == ["src/app.py"]
    assert result["details"]["isolation"]["status_before"] == "passed"
