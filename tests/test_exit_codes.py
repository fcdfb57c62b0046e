"""Every exit code of `eb run` from a real subprocess (issue 6).

0 passed; 1 the run did not pass; 2 setup or usage error (nothing ran); 3 aborted (fuse,
interrupt). `--json` prints the report, or the structured error, as one JSON object on stdout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import check_yaml
from tests.gitrepo import git
from tests.processes import eb_interrupted, python_process

REPO = Path(__file__).resolve().parent.parent
CONFIG = '[core]\noutput_dir = "results"\nmax_parallel_checks = 1\n'
ERROR_KEYS = ["kind", "message", "file", "field_path", "hint"]


def eb_process(*args: str, cwd: Path) -> subprocess.Popen[str]:
    # The stand-in agents (tests/agents) come first on PATH, for the judge checks.
    path = f"{REPO / 'tests' / 'agents'}{os.pathsep}{os.environ['PATH']}"
    return subprocess.Popen(
        [sys.executable, "-m", "eval_banana", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), "PATH": path},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def eb_run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    process = eb_process("run", *args, cwd=cwd)
    stdout, stderr = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def only_report(root: Path) -> dict[str, Any]:
    (path,) = root.glob("results/*/report.json")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def json_error(completed: subprocess.CompletedProcess[str], *, code: int) -> dict[str, Any]:
    """Exactly one JSON object on stdout, `{"error": {...}, "exit_code": N}`."""
    document: dict[str, Any] = json.loads(completed.stdout)
    assert list(document) == ["error", "exit_code"]
    assert document["exit_code"] == code == completed.returncode
    assert list(document["error"]) == ERROR_KEYS
    return document["error"]  # type: ignore[no-any-return]


def test_exit_0_passed_and_json_prints_the_report(project: Callable[..., Path]) -> None:
    root = project({"eval_checks/ok.yaml": check_yaml("ok")}, config=CONFIG)
    completed = eb_run("--json", cwd=root)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == only_report(root)  # the full report, nothing else
    human = eb_run(cwd=root)
    assert human.returncode == 0 and "Passed: yes" in human.stdout


def test_exit_1_the_run_did_not_pass(project: Callable[..., Path]) -> None:
    root = project(
        {
            "eval_checks/ok.yaml": check_yaml("ok"),
            "eval_checks/bad.yaml": check_yaml("bad", script="raise SystemExit(1)"),
        },
        config=CONFIG,
    )
    completed = eb_run("--json", cwd=root)
    assert completed.returncode == 1, completed.stderr
    report = json.loads(completed.stdout)
    assert report == only_report(root) and report["run_passed"] is False


def test_exit_1_for_a_check_in_error(project: Callable[..., Path]) -> None:
    root = project(
        {"eval_checks/slow.yaml": check_yaml("slow", script="import time\ntime.sleep(30)")},
        config=CONFIG,
    )
    completed = eb_run("--check-timeout-seconds", "1", cwd=root)
    assert completed.returncode == 1, completed.stderr
    assert only_report(root)["errored_checks"] == 1


def test_help_names_every_reason_a_run_does_not_pass(tmp_path: Path) -> None:
    # It said "a check failed or errored, or the threshold was not met": a family's gate and
    # --fail-on-flaky fail a run too, and so does a --maxfail stop.
    for command in ((), ("run",)):
        process = eb_process(*command, "--help", cwd=tmp_path)
        stdout, _ = process.communicate(timeout=60)
        assert process.returncode == 0
        meaning = " ".join(stdout.partition("\n  1  ")[2].partition("\n  2  ")[0].split())
        for reason in ("threshold", "errored", "--maxfail", "min_pass_rate", "--fail-on-flaky"):
            assert reason in meaning, (command, meaning)


def test_version_and_help_without_a_command_configure_no_command(tmp_path: Path) -> None:
    # `eb --version` configured all seven commands (importing each), because no command was
    # named: a wrapper that asks for the version before each run paid that every time.
    probe = (
        "import sys\n"
        "from eval_banana.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith('eval_banana.commands.')))\n"
    )
    for flag in ("--version", "--help"):
        done = subprocess.run(
            [sys.executable, "-c", probe, flag], cwd=tmp_path, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert "eval-banana" in done.stdout or "usage: eb" in done.stdout, done.stdout
        loaded = done.stdout.rpartition("LOADED ")[2].strip()
        assert loaded in ("[]", "['eval_banana.commands.common']"), (flag, loaded)


def test_eb_alone_is_a_usage_error_and_a_flag_of_eb_after_the_command_is_placed(
    tmp_path: Path,
) -> None:
    # `eb` with no argument at all crashed (ValueError from reading the line for --json); `eb
    # run --version` was told "did you mean --version?", the very flag it gave.
    alone = subprocess.run(
        [sys.executable, "-m", "eval_banana"], cwd=tmp_path, capture_output=True, text=True
    )
    assert alone.returncode == 2, alone.stderr
    assert alone.stderr.startswith("the following arguments are required: COMMAND")
    misplaced = subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--version"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert misplaced.returncode == 2
    assert "did you mean --version" not in misplaced.stderr
    assert "--version: a flag of eb itself, given before the command (eb --version)" in (
        misplaced.stderr
    )


def test_exit_2_bad_flag_nothing_ran(project: Callable[..., Path]) -> None:
    root = project({"eval_checks/ok.yaml": check_yaml("ok")}, config=CONFIG)
    completed = eb_run("--no-such-flag", cwd=root)
    assert completed.returncode == 2
    assert "--no-such-flag" in completed.stderr
    error = json_error(eb_run("--json", "--no-such-flag", cwd=root), code=2)
    assert error["kind"] == "usage_error"
    assert not (root / "results").exists()


def test_exit_2_bad_config(project: Callable[..., Path]) -> None:
    root = project(
        {"eval_checks/ok.yaml": check_yaml("ok")},
        config='[core]\noutput_dir = "results"\npass_threshold = 7\n',
    )
    error = json_error(eb_run("--json", cwd=root), code=2)
    assert error["kind"] == "config_error"
    assert not list(root.glob("results/*/report.json"))


def test_exit_2_bad_definition(project: Callable[..., Path]) -> None:
    root = project(
        {"eval_checks/bad.yaml": "schema_version: 1\nid: bad\ntype: deterministic\n"},
        config=CONFIG,
    )
    completed = eb_run(cwd=root)
    assert completed.returncode == 2
    error = json_error(eb_run("--json", cwd=root), code=2)
    assert error["kind"] == "definition_error"
    assert error["file"] is not None and error["file"].endswith("bad.yaml")
    assert not list(root.glob("results/*/report.json"))


@pytest.mark.parametrize("command", ["run", "list", "validate", "history", "init"])
def test_exit_2_started_in_a_folder_deleted_since(tmp_path: Path, command: str) -> None:
    # A shell left in a folder another terminal removed: every command ended in a
    # FileNotFoundError traceback and exit 1.
    gone = tmp_path / "gone"
    gone.mkdir()
    done = subprocess.run(
        ["sh", "-c", 'rmdir "$PWD" && exec "$0" -m eval_banana "$1"', sys.executable, command],
        cwd=gone,
        env={**os.environ, "PYTHONPATH": str(REPO), "PWD": str(gone)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"The folder eb was started in no longer exists ({gone}): it was deleted after the "
        "shell entered it",
        "hint: cd to an existing folder (cd to the same path again if it was made anew), or "
        "pass --cwd with the project's absolute path",
    ]


def test_exit_3_a_fuse_tripped(project: Callable[..., Path]) -> None:
    root = project(
        {
            "eval_checks/a.yaml": check_yaml("a", script="import time\ntime.sleep(60)"),
            "eval_checks/b.yaml": check_yaml("b", script="raise SystemExit(1)"),
        },
        config=CONFIG + "run_timeout_seconds = 1\n",
    )
    began = time.monotonic()
    completed = eb_run("--json", cwd=root)
    assert time.monotonic() - began < 30
    error = json_error(completed, code=3)
    assert error["kind"] == "aborted" and "run_timeout" in error["message"]
    report = only_report(root)  # the report is written before the run ends with 3
    assert report["aborted_by"] == "run_timeout" and report["failed_checks"] == 0


def test_exit_3_the_token_fuse_tripped(project: Callable[..., Path]) -> None:
    judge = (
        "schema_version: 1\nid: {id}\ntype: harness_judge\ndescription: Judge {id}.\n"
        "instructions: |\n  Judge it.\n  standin: score=0\n"
    )
    root = project(
        {f"eval_checks/{name}.yaml": judge.format(id=name) for name in ("j1", "j2", "j3")},
        config=CONFIG + '[harness]\nagent = "claude"\ntoken_fuse = 50\n',
    )
    completed = eb_run(cwd=root)
    assert completed.returncode == 3, completed.stderr
    assert "token_fuse" in completed.stderr
    report = only_report(root)
    assert report["aborted_by"] == "token_fuse" and report["tokens_used"] == 150
    # j1 (which spent the budget) keeps its verdict; j2 and j3 are not run, not failed.
    assert [c["status"] for c in report["checks"]] == ["failed", "error", "error"]
    assert (report["failed_checks"], report["not_run_checks"]) == (1, 2)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_exit_3_interrupted(project: Callable[..., Path], sig: signal.Signals) -> None:
    marker = project({}, config=None) / "started"
    script = f"import time\nopen({str(marker)!r}, 'w').close()\ntime.sleep(60)"
    root = project(
        {
            "eval_checks/a.yaml": check_yaml("a", script=script),
            "eval_checks/b.yaml": check_yaml("b"),
        },
        config=CONFIG,
    )
    done = eb_interrupted(root, "run", started=marker, signum=sig)
    assert done.returncode == 3, done.stderr
    report = only_report(root)
    assert report["aborted_by"] == "interrupt" and report["not_run_checks"] == 1
    assert [c["error_detail"] for c in report["checks"]] == [
        "Stopped: interrupted",
        "Not run: interrupted",
    ]


def test_a_signal_to_eb_and_its_check_at_once_stops_the_check(
    project: Callable[..., Path],
) -> None:
    """A CI runner that cancels a job signals the whole process tree: the check dies of the
    SIGTERM before eb has noted it, and is stopped with the run, not failed."""
    marker = project({}, config=None) / "pid"
    script = f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)"
    root = project({"eval_checks/a.yaml": check_yaml("a", script=script)}, config=CONFIG)
    process = eb_process("run", cwd=root)
    deadline = time.monotonic() + 30
    while not marker.exists() or not marker.read_text():
        assert time.monotonic() < deadline and process.poll() is None, "the check never started"
        time.sleep(0.02)
    # The check first, so it is gone before eb's watchdog could end it.
    os.kill(int(marker.read_text()), signal.SIGTERM)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 3, stderr
    report = only_report(root)
    (check,) = report["checks"]
    assert (check["status"], check["error_detail"]) == ("error", "Stopped: interrupted")
    assert check["details"]["stopped"] is True
    assert (report["aborted_by"], report["failed_checks"]) == ("interrupt", 0)


def test_a_check_that_kills_itself_with_sigterm_in_a_run_that_goes_on_fails(
    project: Callable[..., Path],
) -> None:
    script = "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)"
    root = project({"eval_checks/a.yaml": check_yaml("a", script=script)}, config=CONFIG)
    completed = eb_run(cwd=root)
    assert completed.returncode == 1, completed.stderr
    (check,) = only_report(root)["checks"]
    assert (check["status"], check["exit_code"]) == ("failed", -15)
    assert check["reason"] == "exit code -15 (killed by SIGTERM)"


# --verbose adds a traceback to a failure, never a different exit code -------------------------

_BAD_DEFINITION = {"eval_checks/bad.yaml": "schema_version: 1\nid: bad\ntype: deterministic\n"}
# A passing check that leaves a folder where the JUnit file goes: the report write fails (exit 3).
_BLOCKS_JUNIT = {
    "eval_checks/blocks.yaml": check_yaml(
        "blocks", script="import os\nos.makedirs('junit.xml', exist_ok=True)"
    )
}
_FAILURES = {
    "bad definition": (_BAD_DEFINITION, ["run"], 2),
    "bad flag": ({"eval_checks/ok.yaml": check_yaml("ok")}, ["run", "--no-such-flag"], 2),
    "no run folder": ({"eval_checks/ok.yaml": check_yaml("ok")}, ["status"], 2),
    "write fault": (_BLOCKS_JUNIT, ["run", "--no-html", "--junit-xml", "junit.xml"], 3),
}


def _said(stderr: str) -> list[str]:
    """stderr without the debug records and the progress lines (which carry timings)."""
    return [line for line in stderr.splitlines() if not line.startswith(("debug:", "["))]


@pytest.mark.parametrize("failure", list(_FAILURES))
def test_verbose_keeps_the_exit_code_and_message_of_a_failure(
    project: Callable[..., Path], failure: str
) -> None:
    files, command, code = _FAILURES[failure]
    root = project(files, config=CONFIG)
    plain = eb_process(*command, cwd=root).communicate(timeout=120)
    shutil.rmtree(root / "junit.xml", ignore_errors=True)  # both runs start from the same tree
    verbose = eb_process(*command, "--verbose", cwd=root)
    stdout, stderr = verbose.communicate(timeout=120)
    assert verbose.returncode == code, stderr
    assert _said(stderr) == _said(plain[1]) and _said(stderr), stderr
    # The traceback is there for whoever asked, marked as debug output.
    assert "debug: Traceback (most recent call last):" in stderr
    assert not any(line.startswith("Traceback") for line in stderr.splitlines()), stderr


def test_verbose_through_invoke_keeps_the_exit_code_of_a_setup_error(
    project: Callable[..., Path],
) -> None:
    root = project({**_BAD_DEFINITION, "tasks.py": "from eval_banana.tasks import ns\n"})
    done = python_process(root, "-m", "invoke", "eval", "--args", "--verbose")
    assert done.returncode == 2, done.stderr
    assert "Invalid check definition" in _said(done.stderr)[0], done.stderr
    assert "debug: Traceback" in done.stderr and "\nTraceback" not in done.stderr, done.stderr


# The exit without the interpreter's teardown (cli._leave) ------------------------------------

_LEAVE_SCRIPT = """
import atexit, sys, threading, time
from eval_banana.cli import _leave

class Teardown:
    def __del__(self):
        print("torn down")

kept = Teardown()
atexit.register(lambda: print("exit handler ran"))
sys.stdout.write("x" * 200_000 + "\\n")  # more than a pipe holds: still buffered at the exit
if sys.argv[1] == "thread":
    def late() -> None:
        time.sleep(0.3)
        print("thread finished")
    threading.Thread(target=late).start()
_leave(5)
"""


def _leave_run(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _LEAVE_SCRIPT, mode],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_eb_leaves_without_teardown_but_with_its_exit_handlers_and_whole_output() -> None:
    done = _leave_run("plain")
    assert done.returncode == 5
    lines = done.stdout.splitlines()
    assert lines[0] == "x" * 200_000  # the buffered output arrives whole
    assert lines[1:] == ["exit handler ran"]  # handlers run; objects are not torn down
    assert "torn down" not in done.stdout


def test_eb_waits_for_a_thread_python_would_wait_for() -> None:
    done = _leave_run("thread")
    assert done.returncode == 5
    assert "thread finished" in done.stdout.splitlines()
    assert "exit handler ran" in done.stdout


def test_eb_under_a_profiler_exits_the_usual_way(tmp_path: Path) -> None:
    # `python -m cProfile -m eval_banana ...` writes its figures at the usual exit.
    out = tmp_path / "eb.prof"
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "eval_banana", "list"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr  # `eb list` returns from main: no SystemExit
    assert out.stat().st_size > 0


def test_a_reader_that_closes_stdout_early_gets_no_traceback(tmp_path: Path) -> None:
    """`eb list --cases | head -1`: the reader goes away while eb still prints (a family of
    thousands of cases is far more than a pipe holds). A closed stdout changes nothing: eb
    ends quietly with the exit code it has without the reader (0); a traceback would be eb's
    own failure."""
    root = tmp_path / "proj"
    (root / "eval_checks").mkdir(parents=True)
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text(CONFIG)
    rows = "".join(f"  - {{id: c{n}}}\n" for n in range(5000))
    (root / "eval_checks" / "fam.yaml").write_text(
        'schema_version: 1\nid: fam\ntype: deterministic\ndescription: "a case"\n'
        f"cases:\n{rows}script: pass\n"
    )
    process = eb_process("list", "--cases", cwd=root)
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().startswith("fam[c0]\t")
    process.stdout.close()
    stderr = process.stderr.read()
    process.stderr.close()
    assert process.wait(timeout=60) == 0
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


# The console is not the verdict ---------------------------------------------------------------


def _eb_to(
    *args: str, cwd: Path, stdout: int, stderr: int, env: dict[str, str] | None = None
) -> int:
    """`eb ARGS` with its stdout and stderr on the given descriptors; its exit code."""
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        timeout=120,
        check=False,
    )
    return done.returncode


def _gone_reader() -> int:
    """The write end of a pipe whose reader has gone: every write to it fails (EPIPE)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    return write_end


@pytest.fixture
def full_disk() -> Iterator[int]:
    """A descriptor on which every write fails for want of room (ENOSPC), as a log on a full
    disk does."""
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    fd = os.open("/dev/full", os.O_WRONLY)
    yield fd
    os.close(fd)


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_a_stderr_that_cannot_be_written_costs_only_its_lines(
    tmp_path: Path, full_disk: int, unbuffered: str
) -> None:
    # A project without a config file: eb warns before it runs. With stderr on a full disk that
    # warning ended the command (exit 1 or 120): no run, nothing on stdout.
    root = tmp_path / "proj"
    (root / "eval_checks").mkdir(parents=True)
    (root / "eval_checks" / "ok.yaml").write_text(check_yaml("ok"))
    out = tmp_path / "out.txt"
    env = {"PYTHONUNBUFFERED": unbuffered}
    with out.open("wb") as stdout:
        code = _eb_to(
            "run",
            "--output-dir",
            "runs",
            cwd=root,
            stdout=stdout.fileno(),
            stderr=full_disk,
            env=env,
        )
    assert code == 0
    assert "Passed: yes" in out.read_text()
    assert len(list(root.glob("runs/*/report.json"))) == 1
    with out.open("wb") as stdout:
        code = _eb_to("list", cwd=root, stdout=stdout.fileno(), stderr=full_disk, env=env)
    assert code == 0 and out.read_text().startswith("ok\t")
    # A stderr whose reader has gone (a log pipe that died) is the same.
    gone = _gone_reader()
    with out.open("wb") as stdout:
        code = _eb_to(
            "run", "--output-dir", "runs", cwd=root, stdout=stdout.fileno(), stderr=gone, env=env
        )
    os.close(gone)
    assert code == 0 and "Passed: yes" in out.read_text()


def test_the_notice_after_a_cached_runs_reports_keeps_its_verdict(
    tmp_path: Path, full_disk: int
) -> None:
    # Every verdict from the cache: "Nothing was launched" is said after the reports; on a full
    # disk it turned a passing run into exit 1 or 120.
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q")
    assert _eb_to("init", cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0
    assert _eb_to("run", cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0
    said = eb_process("run", cwd=root).communicate(timeout=120)[1]
    assert "Nothing was launched" in said
    out = tmp_path / "out.txt"
    with out.open("wb") as stdout:
        code = _eb_to("run", cwd=root, stdout=stdout.fileno(), stderr=full_disk)
    assert code == 0 and "Passed: yes" in out.read_text()


def test_a_closed_stdout_changes_no_file_and_no_exit_code(project: Callable[..., Path]) -> None:
    # `eb run --json --baseline latest | head -c 100`: a passing run ended with exit 1, and its
    # diff.json was never written.
    root = project({"eval_checks/ok.yaml": check_yaml("ok")}, config=CONFIG)
    assert eb_run("--cache", "off", cwd=root).returncode == 0
    (baseline,) = root.glob("results/*/report.json")
    gone = _gone_reader()
    code = _eb_to(
        "run",
        "--cache",
        "off",
        "--json",
        "--baseline",
        "latest",
        cwd=root,
        stdout=gone,
        stderr=subprocess.DEVNULL,
    )
    assert code == 0
    (newest,) = (path.parent for path in root.glob("results/*/report.json") if path != baseline)
    assert json.loads((newest / "report.json").read_text())["run_passed"] is True
    assert (newest / "diff.json").is_file()
    # A setup error with --json keeps its exit 2 (it ended in two tracebacks and exit 1).
    (root / "eval_checks" / "bad.yaml").write_text("id: [\n")
    errors = root / "err.txt"
    with errors.open("wb") as stderr:
        code = _eb_to(
            "run",
            "--json",
            cwd=root,
            stdout=gone,
            stderr=stderr.fileno(),
            env={"PYTHONUNBUFFERED": "1"},
        )
    os.close(gone)
    assert code == 2
    assert "Traceback" not in errors.read_text()


def _json_command_lines() -> list[tuple[str, ...]]:
    """Every command line that asks for JSON output, `--json` and `--format json` alike, read
    from the parser: a command that gains a JSON output is covered here without a word."""
    import argparse

    from eval_banana.cli import build_parser
    from eval_banana.commands import COMMANDS

    lines: list[tuple[str, ...]] = []

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        options = {o: action for action in parser._actions for o in action.option_strings}
        # A positional that must be given gets a folder that is no run folder.
        needed = tuple(
            "not-a-run-folder"
            for action in parser._actions
            if not action.option_strings
            and action.nargs in (None, "+")
            and not isinstance(action, argparse._SubParsersAction)
        )
        if "--json" in options:
            lines.append((*words, "--json", *needed))
        if "json" in (getattr(options.get("--format"), "choices", None) or ()):
            lines.append((*words, "--format", "json", *needed))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, (*words, name))

    for command in COMMANDS:
        top = build_parser(command=command)
        (commands,) = (a for a in top._actions if isinstance(a, argparse._SubParsersAction))
        walk(commands.choices[command], (command,))
    return lines


def test_every_json_output_is_found() -> None:
    # The walk above must keep finding them, or the test below would pass on nothing.
    found = {
        line[: line.index("--json" if "--json" in line else "--format")]
        for line in _json_command_lines()
    }
    assert {("run",), ("validate",), ("plan",), ("merge",), ("diff",), ("history",)} <= found
    assert {("cache", "stats"), ("cache", "verify")} <= found


@pytest.mark.parametrize("argv", _json_command_lines(), ids=" ".join)
def test_every_json_output_gives_a_setup_or_usage_error_as_the_json_error_document(
    tmp_path: Path, argv: tuple[str, ...]
) -> None:
    # `eb plan --json`, `eb history --format json`, `eb diff --json`: a setup error printed
    # nothing on stdout (plain text on stderr) where `eb run --json` prints the error
    # document; their `--json` is stored as `--format json`, which the error path missed.
    (tmp_path / ".eval-banana").mkdir()
    (tmp_path / ".eval-banana" / "config.toml").write_text("[core\n")
    for extra, kind in (((), None), (("--no-such-flag",), "usage_error")):
        process = eb_process(*argv, *extra, cwd=tmp_path)
        stdout, stderr = process.communicate(timeout=60)
        document = json.loads(stdout)
        assert document["exit_code"] == 2 == process.returncode, (argv, extra, stderr)
        assert list(document["error"]) == ERROR_KEYS
        if kind is None:  # the broken config, or (eb merge) a folder that is no run
            assert document["error"]["kind"] in ("config_error", "merge_error"), document
        else:
            assert document["error"]["kind"] == kind, document


_ON_A_THREAD = """
import sys, threading
from eval_banana.cli import main

def on_a_thread(argv):
    said = []
    def call():
        try:
            said.append(main(argv))
        except BaseException as exc:
            said.append(repr(exc))
    thread = threading.Thread(target=call)
    thread.start()
    thread.join()
    return said[0]

for argv in (["run"], ["stage", "execute"], ["stage", "score"], ["stage", "report"], ["update"]):
    print(" ".join(argv), "->", on_a_thread([*argv, "--cwd", sys.argv[1]]))
"""


def test_eb_called_on_a_thread_of_the_program_runs_and_returns_its_exit_code(
    project: Callable[..., Path],
) -> None:
    # Off the main thread `eb run`, `eb stage` and `eb update` raised ValueError ("signal only
    # works in main thread") where they set their handlers; the program keeps its signals.
    root = project(
        {
            "eval_checks/ok.yaml": check_yaml("ok"),
            "eval_checks/bad.yaml": check_yaml("bad", script="raise SystemExit(1)"),
        },
        config=CONFIG,
    )
    done = python_process(root, "-c", _ON_A_THREAD, str(root))
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stdout.splitlines() if " -> " in line]
    assert said == [
        "run -> 1",
        "stage execute -> 0",
        "stage score -> 1",
        "stage report -> 1",
        "update -> 1",
    ], done.stdout + done.stderr


# (command, what the one line on stderr says): a run is aborted; `eb list` is no run, and
# neither is `eb run --help`.
_STDOUT_ON_A_FULL_DISK = [
    (
        ("run", "--cache", "off"),
        "Cannot write standard output: No space left on device; the run is aborted",
    ),
    (
        ("run", "--cache", "off", "--json"),
        "Cannot write standard output: No space left on device; the run is aborted",
    ),
    (("validate", "--json"), "Cannot write standard output: No space left on device"),
    (("cache", "stats", "--json"), "Cannot write standard output: No space left on device"),
    (("list",), "Cannot write standard output: No space left on device"),
    (("schema", "check"), "Cannot write standard output: No space left on device"),
    (("run", "--help"), "Cannot write standard output: No space left on device"),
]


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_a_stdout_on_a_full_disk_is_one_line_on_stderr_and_exit_3(
    project: Callable[..., Path], full_disk: int, unbuffered: str
) -> None:
    # With --json the error object went to the stdout that had just failed: two chained
    # tracebacks and exit 1 (exit 120 when Python buffered stdout), which CI reads as "the
    # run did not pass". Without it, `eb list` said "Cannot write a file: ...; the run is
    # aborted": no file named, and a run where there was none.
    root = project({"eval_checks/ok.yaml": check_yaml("ok")}, config=CONFIG)
    errors = root / "err.txt"
    for args, said in _STDOUT_ON_A_FULL_DISK:
        with errors.open("wb") as stderr:
            code = _eb_to(
                *args,
                cwd=root,
                stdout=full_disk,
                stderr=stderr.fileno(),
                env={"PYTHONUNBUFFERED": unbuffered},
            )
        # Besides the progress lines ([n/m] per check), one line: the fault.
        lines = [line for line in errors.read_text().splitlines() if not line.startswith("[")]
        assert (code, lines) == (3, [said]), args


def test_a_json_error_that_cannot_reach_stdout_is_told_on_stderr(
    project: Callable[..., Path], full_disk: int
) -> None:
    # A setup error with --json and a stdout on a full disk: the error itself and then why
    # it is not on stdout, never a traceback.
    root = project({"eval_checks/bad.yaml": "id: [\n"}, config=CONFIG)
    errors = root / "err.txt"
    with errors.open("wb") as stderr:
        code = _eb_to("run", "--json", cwd=root, stdout=full_disk, stderr=stderr.fileno())
    said = errors.read_text()
    assert code == 3
    assert "Traceback" not in said
    assert "bad.yaml" in said.splitlines()[0]
    assert said.splitlines()[-1] == (
        "Cannot write standard output: No space left on device; the run is aborted"
    )


def _eb_closed(
    *args: str, cwd: Path, closed: tuple[int, ...], output: Path
) -> subprocess.CompletedProcess[str]:
    """`eb ARGS` started with the descriptors `closed` closed (`eb run >&-`, `2>&-`), whatever
    of stdout and stderr is still open going to `output`."""
    with output.open("wb") as out:
        return subprocess.run(
            [sys.executable, "-m", "eval_banana", *args],
            cwd=cwd,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            preexec_fn=lambda: [os.close(fd) for fd in closed] and None,
            timeout=120,
            check=False,
        )


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc/<pid>/fd")
@pytest.mark.parametrize("closed", [(1,), (2,), (0, 1, 2)], ids=["stdout", "stderr", "all"])
def test_a_closed_console_costs_only_its_lines(
    project: Callable[..., Path], closed: tuple[int, ...]
) -> None:
    # Python leaves sys.stdout (sys.stderr) None for a descriptor closed at start-up: eb's
    # first line there was an AttributeError and exit 1, and with stderr closed the run died
    # during execute, leaving a run folder without report.json and no history record.
    # The check prints what its parent, eb, has on the descriptors it was started without.
    script = (
        f"import os\nprint([os.readlink(f'/proc/{{os.getppid()}}/fd/{{fd}}') for fd in {closed}])"
    )
    root = project(
        {"eval_checks/ok.yaml": check_yaml("ok", script=script)},
        config=CONFIG + '[history]\nmode = "on"\n',
    )
    output = root.parent / "console.txt"
    assert (
        _eb_closed("run", "--cache", "off", cwd=root, closed=closed, output=output).returncode == 0
    )
    if 1 not in closed:
        assert "Passed: yes" in output.read_text()
    assert "Traceback" not in output.read_text()
    assert only_report(root)["run_passed"] is True
    assert len(list(root.glob(".eval-banana/history/*.json"))) == 1
    # Those hold the null device, so no file eb opens later takes one (a check's output file
    # there would get eb's own lines, and a child's).
    (captured,) = root.glob("results/*/checks/*.stdout.txt")
    assert captured.read_text() == f"{[os.devnull] * len(closed)}\n"
    for command in ("list", "validate"):
        done = _eb_closed(command, cwd=root, closed=closed, output=output)
        assert done.returncode == 0, (command, output.read_text())


def test_eb_in_a_program_without_a_console_runs(project: Callable[..., Path]) -> None:
    # A program that calls eb's main with sys.stdout and sys.stderr None (pythonw, a service):
    # the same AttributeError and exit 1.
    root = project({"eval_checks/ok.yaml": check_yaml("ok")}, config=CONFIG)
    script = (
        "import sys\n"
        "sys.stdout = sys.stderr = None\n"
        "from eval_banana.cli import main\n"
        f"code = main(['run', '--cwd', {str(root)!r}, '--cache', 'off'])\n"
        "sys.__stdout__.write(f'exit {code}')\n"
    )
    done = python_process(root, "-c", script)
    assert (done.stdout, done.stderr) == ("exit 0", "")
    assert only_report(root)["run_passed"] is True
