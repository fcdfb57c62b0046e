"""A judge cannot change the project it judges unnoticed: detect, copy and off, end to end."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.forking import default_sigint
from tests.isolation.rig import run_checks, started_process, wait_until_started

# A judge that rewrites the file it judges and its own check file, deletes another check, and
# then says all is well. TAMPER_WAIT makes it wait first (for the concurrency tests).
TAMPERING_AGENT = """\
import os, sys, time
from pathlib import Path
time.sleep(float(os.environ.get("TAMPER_WAIT", "0")))
if "TAMPER" in " ".join(sys.argv):
    Path("target.txt").write_text("rewritten by the judge\\n")
    own = Path("eval_checks/tamper.yaml")
    own.write_text(own.read_text() + "# edited by the judge\\n")
    Path("eval_checks/other.yaml").unlink()
if "SCRATCH" in " ".join(sys.argv):
    Path("scratch").mkdir(exist_ok=True)
    Path("scratch/out.log").write_text(f"made while judging at {time.time()}\\n")
if "SLOW" in " ".join(sys.argv):
    time.sleep(1.5)
if "WAIT_FOR_GO" in " ".join(sys.argv):
    Path(os.environ["STARTED_FILE"]).write_text("judging")
    deadline = time.time() + 60
    while not Path(os.environ["GO_FILE"]).exists() and time.time() < deadline:
        time.sleep(0.02)
if "WRITE_JUNIT" in " ".join(sys.argv):
    Path("junit.xml").write_text("<testsuites/>\\n")
print('{"score": 1, "reason": "looks fine"}')
"""


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _project(root: Path, *, git: bool, checks: dict[str, str], config: str = "") -> Path:
    (root / "eval_checks").mkdir(parents=True)
    (root / ".eval-banana").mkdir()
    agent = root.parent / "agent.py"
    agent.write_text(TAMPERING_AGENT)
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\nmax_parallel_checks = 4\n\n'
        '[harness]\nagent = "tamper"\n' + config + "\n\n"
        f"[agents.tamper]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(agent))}]\n"
        'model_flag = ""\n'
    )
    (root / "target.txt").write_text("the original\n")
    for check_id, instructions in checks.items():
        (root / "eval_checks" / f"{check_id}.yaml").write_text(
            f"schema_version: 1\nid: {check_id}\ntype: harness_judge\ndescription: j.\n"
            f"instructions: {json.dumps(instructions)}\n"
        )
    (root / "eval_checks" / "other.yaml").write_text(
        "schema_version: 1\nid: other\ntype: deterministic\ndescription: o.\nscript: pass\n"
    )
    if git:
        (root / ".gitignore").write_text("runs/\nscratch/\n")
        _git(root, "init", "-q")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", "start")
    return root


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
        and "runs" not in path.parts
        and ".git" not in path.parts
        # eb's own record of failed checks (for --last-failed) and its run history are
        # written after every run.
        and path.relative_to(root).as_posix() != ".eval-banana/lastfailed.json"
        and "history" not in path.parts
    }


TAMPERED = ["eval_checks/other.yaml", "eval_checks/tamper.yaml", "target.txt"]


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_a_tampering_judge_is_an_error_under_detect(tmp_path: Path, git: bool) -> None:
    root = _project(tmp_path / "proj", git=git, checks={"tamper": "TAMPER"})
    code, checks = run_checks(root)
    assert code == 1
    judge = checks["tamper"]
    assert judge["status"] == "error" and judge["score"] == 0 and judge["reason"] is None
    assert judge["error_detail"].startswith("The project changed while this judge ran: ")
    assert judge["error_detail"].endswith(
        "list the paths it may write in [harness] isolation_ignore, or set [harness] isolation "
        '(--isolation, EVAL_BANANA_HARNESS_ISOLATION) to "off" for judges meant to write'
    )
    isolation = judge["details"]["isolation"]
    assert isolation["mode"] == "detect" and isolation["changed"] == TAMPERED
    assert isolation["changed_count"] == 3 and isolation["reason_before"] == "looks fine"
    # It answered, but it changed what it judged: an isolation error, whatever it said.
    assert judge["details"]["error_class"] == "isolation"


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_a_tampering_judge_is_harmless_under_copy_and_still_does_not_pass(
    tmp_path: Path, git: bool
) -> None:
    root = _project(tmp_path / "proj", git=git, checks={"tamper": "TAMPER"})
    before = _files(root)
    code, checks = run_checks(root, "--isolation", "copy")
    assert code == 1
    assert _files(root) == before  # the project is untouched
    judge = checks["tamper"]
    assert judge["status"] == "error"
    assert judge["error_detail"].startswith("The judge changed its copy of the project: ")
    assert judge["details"]["error_class"] == "isolation"
    isolation = judge["details"]["isolation"]
    assert isolation["mode"] == "copy" and isolation["changed"] == TAMPERED
    assert isolation["method"] in ("overlay", "copy")
    assert checks["other"]["status"] == "passed"  # the deleted check ran, from the project


def test_off_keeps_the_public_tool_s_behaviour(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj", git=True, checks={"tamper": "TAMPER"})
    code, checks = run_checks(root, "--isolation", "off")
    assert code == 0 and checks["tamper"]["status"] == "passed"
    assert "isolation" not in checks["tamper"]["details"]
    assert (root / "target.txt").read_text() == "rewritten by the judge\n"


@pytest.mark.parametrize("mode", ["detect", "copy"])
def test_a_judge_that_writes_nothing_passes_and_says_how_it_was_watched(
    tmp_path: Path, mode: str
) -> None:
    root = _project(tmp_path / "proj", git=True, checks={"calm": "just look"})
    code, checks = run_checks(root, "--isolation", mode)
    assert code == 0, checks
    isolation = checks["calm"]["details"]["isolation"]
    assert isolation["mode"] == mode and isolation["changed"] == []
    assert isolation["changed_count"] == 0


def test_git_ignored_files_and_ignored_patterns_are_not_changes(tmp_path: Path) -> None:
    # scratch/ is git-ignored: writing there is no change under either mode.
    root = _project(tmp_path / "proj", git=True, checks={"scratch": "SCRATCH"})
    assert run_checks(root)[0] == 0
    assert run_checks(root, "--isolation", "copy")[0] == 0
    # Without git nothing says scratch/ is ignored: it is a change until isolation_ignore says.
    plain = _project(tmp_path / "plain", git=False, checks={"scratch": "SCRATCH"})
    code, checks = run_checks(plain)
    assert code == 1 and checks["scratch"]["details"]["isolation"]["changed"] == ["scratch/out.log"]
    config = plain / ".eval-banana" / "config.toml"
    config.write_text(
        config.read_text().replace(
            'agent = "tamper"\n', 'agent = "tamper"\nisolation_ignore = ["scratch/**"]\n'
        )
    )
    assert run_checks(plain)[0] == 0
    config.write_text(config.read_text().replace('["scratch/**"]', '["elsewhere/**"]'))
    assert run_checks(plain)[0] == 1


def test_every_judge_running_while_the_project_changed_is_charged(tmp_path: Path) -> None:
    # `bystander` runs the whole time `tamper` (which waits a little, then writes) runs; `late`
    # starts after the change was seen: only the first two can have seen a changed project.
    root = _project(
        tmp_path / "proj",
        git=True,
        checks={"a_bystander": "SLOW", "b_tamper": "TAMPER", "z_late": "calm"},
    )
    (root / "eval_checks" / "b_tamper.yaml").rename(root / "eval_checks" / "tamper.yaml")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "rename")
    config = root / ".eval-banana" / "config.toml"
    config.write_text(
        config.read_text().replace("max_parallel_checks = 4", "max_parallel_checks = 2")
    )
    code, checks = run_checks(root, env={"TAMPER_WAIT": "0.3"})
    assert code == 1
    assert checks["a_bystander"]["status"] == "error"
    assert checks["b_tamper"]["status"] == "error"
    assert "target.txt" in checks["a_bystander"]["details"]["isolation"]["changed"]
    assert checks["z_late"]["status"] == "passed", checks["z_late"]


def test_deterministic_checks_are_isolated_only_when_asked(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "eval_checks").mkdir(parents=True)
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text('[core]\noutput_dir = "runs"\n')
    script = textwrap.dedent(
        """\
        import json, sys
        from pathlib import Path
        root = Path(json.loads(Path(sys.argv[1]).read_text())["project_root"])
        (root / "written.txt").write_text("a check's output\\n")
        """
    )
    (root / "eval_checks" / "writer.yaml").write_text(
        "schema_version: 1\nid: writer\ntype: deterministic\ndescription: w.\n"
        f"script: {json.dumps(script)}\n"
    )
    assert run_checks(root)[0] == 0  # off by default: checks that write their outputs are common
    assert (root / "written.txt").exists()
    (root / "written.txt").unlink()
    code, checks = run_checks(root, "--execution-isolation", "copy")
    assert code == 1 and not (root / "written.txt").exists()
    assert checks["writer"]["details"]["isolation"]["changed"] == ["written.txt"]
    assert checks["writer"]["error_detail"].startswith("The check changed its copy")


def test_a_judge_is_not_charged_with_a_change_made_before_it_started(tmp_path: Path) -> None:
    # `a_writer`, a deterministic check nothing isolates, rewrites a project file and ends;
    # then the judge starts. Only a look while the judge runs can charge it: the change is
    # seen when the judge starts, before it is counted as running.
    root = _project(tmp_path / "proj", git=True, checks={"b_judge": "calm"})
    script = (
        "import json, sys\nfrom pathlib import Path\n"
        "root = Path(json.loads(Path(sys.argv[1]).read_text())['project_root'])\n"
        "(root / 'target.txt').write_text('rewritten by a check\\n')\n"
    )
    (root / "eval_checks" / "a_writer.yaml").write_text(
        "schema_version: 1\nid: a_writer\ntype: deterministic\ndescription: w.\n"
        f"script: {json.dumps(script)}\n"
    )
    config = root / ".eval-banana" / "config.toml"
    config.write_text(
        config.read_text().replace("max_parallel_checks = 4", "max_parallel_checks = 1")
    )
    code, checks = run_checks(root)
    assert (root / "target.txt").read_text() == "rewritten by a check\n"
    assert checks["b_judge"]["status"] == "passed", checks["b_judge"]
    assert checks["b_judge"]["details"]["isolation"]["changed"] == []
    assert code == 0


@pytest.mark.concurrent
@pytest.mark.parametrize("mode", ["detect", "copy"])
def test_another_run_writing_eb_s_own_files_is_no_change_of_the_project(
    tmp_path: Path, mode: str
) -> None:
    # A config written by hand: nothing git-ignores .eval-banana/lastfailed.json. Run A ends
    # (and remembers its failure there) while run B's judge runs: not the judge's doing.
    root = _project(tmp_path / "proj", git=True, checks={"judge": "WAIT_FOR_GO"})
    (root / "eval_checks" / "failing.yaml").write_text(
        "schema_version: 1\nid: failing\ntype: deterministic\ndescription: f.\n"
        "script: raise SystemExit(1)\n"
    )
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "a failing check")
    started, go = tmp_path / "started", tmp_path / "go"
    command = [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), "--no-html"]
    env = {**os.environ, "STARTED_FILE": str(started), "GO_FILE": str(go)}
    run_b = started_process([*command, "--check-id", "judge", "--isolation", mode], env=env)
    try:
        wait_until_started(process=run_b, started=started)
        run_a = subprocess.run(
            [*command, "--check-id", "failing", "--output-dir", str(tmp_path / "out-a")],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run_a.returncode == 1, run_a.stderr
        assert "failing" in (root / ".eval-banana" / "lastfailed.json").read_text()
    finally:
        go.write_text("go")
        out, err = run_b.communicate(timeout=120)
    assert run_b.returncode == 0, out + err


def _beside_a_reporting_run(
    tmp_path: Path,
    *,
    root: Path,
    judging: list[str],
    report: list[str],
    signal_second: signal.Signals | None = None,
    second_cwd: Path | None = None,
    second_root: Path | None = None,
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """`judging` (an eb command whose judge, or check, waits for GO) started first; once it runs,
    another `eb run` of the deterministic check `other` writing `report` into the project. GO
    comes once that run has ended or waits for the project's turn (and then, with
    `signal_second`, has been sent that signal and ended). `second_cwd`: the folder that run
    starts in (its report paths are relative to it); `second_root`: the project it runs in
    (`root` unless given). Both, as they ended."""
    started, go = tmp_path / "started", tmp_path / "go"
    env = {**os.environ, "STARTED_FILE": str(started), "GO_FILE": str(go)}
    eb = [sys.executable, "-m", "eval_banana"]
    first = subprocess.Popen(
        [*eb, *judging, "--cwd", str(root)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    second_err = tmp_path / "second.err"
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert started.exists(), first.communicate()
        with second_err.open("w") as err:
            second = subprocess.Popen(
                [*eb, "run", "--cwd", str(second_root or root), "--no-html"]
                + ["--check-id", "other", *report]
                + ["--output-dir", str(tmp_path / "out-second")],
                cwd=second_cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                # Ctrl-C's default, as a terminal gives it, also where the suite started with
                # SIGINT ignored (`nohup pytest &`).
                preexec_fn=default_sigint,
            )
        while (
            second.poll() is None
            and "Waiting for another eb run" not in second_err.read_text()
            and time.monotonic() < deadline
        ):
            time.sleep(0.02)
        if signal_second is not None and second.poll() is None:
            second.send_signal(signal_second)
            with contextlib.suppress(subprocess.TimeoutExpired):
                second.wait(timeout=30)  # the signal alone ends its wait: no GO yet
    finally:
        go.write_text("go")
    out, _ = second.communicate(timeout=120)
    done_second = subprocess.CompletedProcess(second.args, second.returncode, out, "")
    done_second.stderr = second_err.read_text()
    out, err = first.communicate(timeout=120)
    return subprocess.CompletedProcess(first.args, first.returncode, out, err), done_second


CALIBRATION_CASE = (
    'calibration:\n  - {name: fine, expect: pass, files: {"target.txt": "the original\\n"}}\n'
)


@pytest.mark.concurrent
@pytest.mark.parametrize(
    ("judging", "report"),
    [
        (["run", "--no-html", "--check-id", "judge"], ["--junit-xml", "junit.xml"]),
        (["run", "--no-html", "--check-id", "judge"], ["--result-out", "RESULT"]),
        (["calibrate"], ["--junit-xml", "junit.xml"]),
    ],
    ids=["run-junit", "run-result-out", "calibrate-junit"],
)
def test_another_run_writing_its_reports_into_the_project_is_no_judge_s_doing(
    tmp_path: Path, judging: list[str], report: list[str]
) -> None:
    # A report another run writes into the project for the first time, while this run's (or
    # calibration's) judge runs: not in eb's record of its files yet, and still not the judge's.
    root = _project(tmp_path / "proj", git=True, checks={"judge": "WAIT_FOR_GO"})
    check = root / "eval_checks" / "judge.yaml"
    check.write_text(check.read_text() + CALIBRATION_CASE)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "a calibration case")
    report = [str(root / "result.md") if part == "RESULT" else part for part in report]
    first, second = _beside_a_reporting_run(tmp_path, root=root, judging=judging, report=report)
    assert second.returncode == 0, second.stdout + second.stderr
    assert (root / report[1]).is_file()
    assert "Traceback" not in first.stderr, first.stderr
    assert "The project changed" not in first.stdout + first.stderr
    assert first.returncode == 0, first.stdout + first.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["term", "int"])
def test_a_signal_while_the_result_document_waits_for_the_project_writes_it(
    tmp_path: Path, signum: signal.Signals
) -> None:
    # The run has ended, all checks passed; its --result-out waits for the judge beside it.
    # A signal then ends the wait: the document is written at once (it was lost, "Interrupted."),
    # and eb ends as interrupted.
    root = _project(tmp_path / "proj", git=True, checks={"judge": "WAIT_FOR_GO"})
    result = root / "result.md"
    _, second = _beside_a_reporting_run(
        tmp_path,
        root=root,
        judging=["run", "--no-html", "--check-id", "judge"],
        report=["--result-out", str(result)],
        signal_second=signum,
    )
    assert "Waiting for another eb run" in second.stderr, second.stderr
    assert second.returncode == 3, second.stdout + second.stderr
    assert "Interrupted." in second.stderr
    assert "passed" in result.read_text()


def test_a_report_named_from_a_subfolder_is_looked_up_in_git_as_that_file(
    tmp_path: Path,
) -> None:
    # `--result-out result.md` from proj/sub is sub/result.md; git ignores only the root's
    # result.md. Asked about "result.md" from the root, git said ignored: no wait, and the
    # judge beside it was charged with sub/result.md.
    root = _project(tmp_path / "proj", git=True, checks={"judge": "WAIT_FOR_GO"})
    (root / "sub").mkdir()
    (root / "sub" / "README").write_text("keep\n")
    (root / ".gitignore").write_text("runs/\n/result.md\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "sub")
    first, second = _beside_a_reporting_run(
        tmp_path,
        root=root,
        judging=["run", "--no-html", "--check-id", "judge"],
        report=["--result-out", "result.md"],
        second_cwd=root / "sub",
    )
    assert second.returncode == 0, second.stdout + second.stderr
    assert (root / "sub" / "result.md").is_file()
    assert "Waiting for another eb run" in second.stderr, second.stderr
    assert "The project changed" not in first.stdout + first.stderr
    assert first.returncode == 0, first.stdout + first.stderr


WAITING_CHECK = """\
schema_version: 1
id: slow
type: deterministic
description: s.
script: |
  import os, time
  from pathlib import Path
  Path(os.environ["STARTED_FILE"]).write_text("running")
  deadline = time.time() + 60
  while not Path(os.environ["GO_FILE"]).exists() and time.time() < deadline:
      time.sleep(0.02)
"""


def test_a_report_does_not_wait_for_a_run_that_watches_nothing(tmp_path: Path) -> None:
    # A run whose only check is deterministic with isolation off watches nothing in the
    # project: another run's JUnit file is written at once beside it (it waited for its end).
    root = _project(tmp_path / "proj", git=True, checks={})
    (root / "eval_checks" / "slow.yaml").write_text(WAITING_CHECK)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "a slow check")
    first, second = _beside_a_reporting_run(
        tmp_path,
        root=root,
        judging=["run", "--no-html", "--check-id", "slow", "--execution-isolation", "off"],
        report=["--junit-xml", "junit.xml"],
    )
    assert second.returncode == 0, second.stdout + second.stderr
    assert "Waiting for another eb run" not in second.stderr, second.stderr
    assert (root / "junit.xml").is_file()
    assert first.returncode == 0, first.stdout + first.stderr


def test_a_report_in_a_nested_project_waits_for_the_judge_of_the_project_around_it(
    tmp_path: Path,
) -> None:
    # proj/sub is a project of its own; a run there writes sub/junit.xml while a judge of
    # proj runs, whose watch counts sub/ too. It waited only for runs of sub.
    root = _project(tmp_path / "proj", git=False, checks={"judge": "WAIT_FOR_GO"})
    inner = root / "sub"
    (inner / ".eval-banana").mkdir(parents=True)
    (inner / ".eval-banana" / "config.toml").write_text('[core]\noutput_dir = "runs"\n')
    (inner / "eval_checks").mkdir()
    (inner / "eval_checks" / "other.yaml").write_text(
        "schema_version: 1\nid: other\ntype: deterministic\ndescription: o.\nscript: pass\n"
    )
    # The inner project's own state (its cache, its records) is ignored, as `eb init` has it.
    (root / ".gitignore").write_text(
        "runs/\nsub/runs/\nsub/.eval-banana/*\n!sub/.eval-banana/config.toml\n"
    )
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "start")
    first, second = _beside_a_reporting_run(
        tmp_path,
        root=root,
        judging=["run", "--no-html", "--check-id", "judge"],
        report=["--junit-xml", "junit.xml"],
        second_root=inner,
    )
    assert second.returncode == 0, second.stdout + second.stderr
    assert (inner / "junit.xml").is_file()
    assert "Waiting for another eb run" in second.stderr, second.stderr
    assert "The project changed" not in first.stdout + first.stderr
    assert first.returncode == 0, first.stdout + first.stderr


@pytest.mark.concurrent
def test_a_judge_writing_the_report_another_run_writes_is_still_caught(tmp_path: Path) -> None:
    # The judge writes junit.xml itself while another run that writes junit.xml runs beside
    # it: that run's report is no cover for the judge's write, even once the file holds eb's.
    root = _project(tmp_path / "proj", git=True, checks={"judge": "WAIT_FOR_GO WRITE_JUNIT"})
    first, second = _beside_a_reporting_run(
        tmp_path,
        root=root,
        judging=["run", "--no-html", "--check-id", "judge"],
        report=["--junit-xml", "junit.xml"],
    )
    assert second.returncode == 0, second.stdout + second.stderr
    assert (root / "junit.xml").read_text() != "<testsuites/>\n"  # the other run's, last
    assert first.returncode == 1, first.stdout + first.stderr
    run_dir = max((root / "runs").iterdir(), key=lambda path: path.stat().st_mtime_ns)
    checks = json.loads((run_dir / "report.json").read_text())["checks"]
    judge = next(check for check in checks if check["check_id"] == "judge")
    assert judge["status"] == "error", judge
    assert judge["details"]["isolation"]["changed"] == ["junit.xml"]


@pytest.mark.parametrize("mode", ["detect", "copy"])
def test_the_file_eb_s_own_output_goes_to_is_no_change_of_the_project(
    tmp_path: Path, mode: str
) -> None:
    # `eb run > eb.log 2>&1` in the project: `quick` ends while `slow` still runs, and eb
    # writes its progress line into eb.log. That is eb's doing, not the slow judge's.
    root = _project(tmp_path / "proj", git=True, checks={"quick": "calm", "slow": "SLOW"})
    log = root / "eb.log"
    with log.open("w") as output:
        done = subprocess.run(
            [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), "--no-html"]
            + ["--isolation", mode],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            timeout=120,
        )
    text = log.read_text()
    assert "quick: passed" in text and "Traceback" not in text
    assert done.returncode == 0, text


# A judge that blinds git's stat check in .git/config (which nothing watches), rewrites the file
# it judges with the same size, puts its times back, and then overflows eb's inotify queue, so
# that eb reads the project's state again through git (as it does wherever inotify is missing).
BLINDING_AGENT = """\
import os, subprocess, sys, time
if os.environ["BLIND"] == "stat":
    subprocess.run(["git", "config", "core.trustctime", "false"], check=True)
    subprocess.run(["git", "config", "core.checkStat", "minimal"], check=True)
else:  # a file-system monitor hook that never reports a change
    hook = os.path.abspath("../fsmonitor.sh")
    open(hook, "w").write("#!/bin/sh\\nprintf 'token\\\\0'\\n")
    os.chmod(hook, 0o755)
    subprocess.run(["git", "config", "core.fsmonitor", hook], check=True)
    subprocess.run(["git", "config", "core.fsmonitorHookVersion", "2"], check=True)
    subprocess.run(["git", "status"], check=True, capture_output=True)
time.sleep(1.02 - time.time() % 1)  # a later second than the one git noted
path = "target.txt"
times = os.stat(path)
with open(path, "r+") as handle:
    handle.write("THE ORIGINAL")
os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))
for number in range(int(os.environ["FLOOD"])):
    open(f".flood{number}", "w").close()
    os.unlink(f".flood{number}")
print('{"score": 1, "reason": "looks fine"}')
"""


def _queue_limit() -> int | None:
    """How many inotify events the kernel queues for one watch before it drops them."""
    try:
        return int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    except (OSError, ValueError):
        return None


@pytest.mark.parametrize("blind", ["stat", "fsmonitor"])
def test_a_judge_that_blinds_git_and_overflows_the_watch_is_still_caught(
    tmp_path: Path, blind: str
) -> None:
    limit = _queue_limit()
    if limit is None or limit > 200_000:
        pytest.skip("no inotify queue small enough to overflow here")
    root = _project(tmp_path / "proj", git=False, checks={"judge": "calm"})
    (root / "eval_checks" / "other.yaml").unlink()
    agent = root.parent / "agent.py"
    agent.write_text(BLINDING_AGENT)
    os.utime(root / "target.txt", (1577836800, 1577836800))  # 2020: never racily clean
    (root / ".gitignore").write_text("runs/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "start")
    # Each short-lived file is three events (created, closed, removed).
    code, checks = run_checks(root, env={"BLIND": blind, "FLOOD": str(limit // 2 + 500)})
    assert (root / "target.txt").read_text() == "THE ORIGINAL\n"
    judge = checks["judge"]
    assert code == 1 and judge["status"] == "error", judge
    assert judge["error_detail"].startswith("The project changed while this judge ran: target.txt")
