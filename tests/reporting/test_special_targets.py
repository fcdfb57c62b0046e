"""Reports given a device, a FIFO or a socket as their path: written into, or refused before the
run, never replaced by a file (as root in a CI container, `--result-out /dev/null` replaced the
system's /dev/null). Device nodes are made under tmp_path only, and only as root; the FIFO cases
run as any user."""

from __future__ import annotations

import json
import os
import shlex
import socket
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.reporting.conftest import eb_command, eb_env, run_eb, write_project

AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
ROOT_ONLY = pytest.mark.skipif(not AS_ROOT, reason="only root may make a device node")
# The same numbers as the system's /dev/null and /dev/full, made in the test's own folder.
NULL, FULL = os.makedev(1, 3), os.makedev(1, 7)

PASSES = """\
schema_version: 1
id: only_check
type: deterministic
description: Passes.
script: print("ok")
"""

# How each report is asked for, given its path: the flags and the environment.
TARGETS: dict[str, Callable[[Path], tuple[list[str], dict[str, str]]]] = {
    "--result-out": lambda path: (["--result-out", str(path)], {}),
    "--junit-xml": lambda path: (["--junit-xml", str(path)], {}),
    "step summary": lambda path: ([], {"GITHUB_STEP_SUMMARY": str(path)}),
}
FIRST_BYTES = {
    "--result-out": b"```eval-banana-result v1",
    "--junit-xml": b"<?xml",
    "step summary": b"#",
}


def _project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "proj", checks={"eval_checks/pass.yaml": PASSES})


def _run(project: Path, target: str, path: Path) -> subprocess.CompletedProcess[str]:
    flags, env = TARGETS[target](path)
    return run_eb("run", "--cwd", str(project), "--history", "off", *flags, **env)


@pytest.fixture
def reader() -> Iterator[Callable[[Path], subprocess.Popen[bytes]]]:
    """A process that waits on a FIFO and reads what comes (ended if it is still waiting)."""
    started: list[subprocess.Popen[bytes]] = []

    def start(fifo: Path) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("kind", ["fifo", pytest.param("character device", marks=ROOT_ONLY)])
def test_a_report_is_written_into_a_fifo_or_device_never_over_it(
    tmp_path: Path,
    reader: Callable[[Path], subprocess.Popen[bytes]],
    target: str,
    kind: str,
) -> None:
    project = _project(tmp_path)
    path = tmp_path / "out"
    waiting = None
    if kind == "fifo":
        os.mkfifo(path)
        waiting = reader(path)
    else:
        os.mknod(path, stat.S_IFCHR | 0o666, NULL)
    completed = _run(project, target, path)
    assert completed.returncode == 0, completed.stderr
    assert "warning" not in completed.stderr, completed.stderr
    check = stat.S_ISFIFO if kind == "fifo" else stat.S_ISCHR
    assert check(os.lstat(path).st_mode), f"{target} replaced the {kind} with a file"
    if waiting is not None:
        try:
            received, _ = waiting.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{target} never opened the FIFO its reader waited on")
        assert received.startswith(FIRST_BYTES[target]), received[:80]


@ROOT_ONLY
@pytest.mark.parametrize("target", ["--result-out", "--junit-xml"])
def test_a_report_a_full_device_refuses_is_a_write_fault(tmp_path: Path, target: str) -> None:
    # Replaced by a file, the report "was written" and the run exited 0; written into the device,
    # the write fails as on a full disk: exit 3, one line naming the file.
    project = _project(tmp_path)
    path = tmp_path / "full"
    os.mknod(path, stat.S_IFCHR | 0o666, FULL)
    completed = _run(project, target, path)
    assert completed.returncode == 3, completed.stderr
    assert f"Cannot write {path}: No space left on device" in completed.stderr
    assert "Traceback" not in completed.stderr
    assert stat.S_ISCHR(os.lstat(path).st_mode)


def test_a_step_summary_a_full_device_refuses_costs_only_itself(tmp_path: Path) -> None:
    if not AS_ROOT:
        pytest.skip("only root may make a device node")
    project = _project(tmp_path)
    path = tmp_path / "full"
    os.mknod(path, stat.S_IFCHR | 0o666, FULL)
    completed = _run(project, "step summary", path)
    assert completed.returncode == 0, completed.stderr
    assert f"could not append the report to $GITHUB_STEP_SUMMARY ({path})" in completed.stderr


def _socket(path: Path) -> socket.socket:
    # Bound from its own folder: a socket's path is limited to about 100 bytes.
    held = socket.socket(socket.AF_UNIX)
    here = Path.cwd()
    os.chdir(path.parent)
    try:
        held.bind(path.name)
    finally:
        os.chdir(here)
    return held


@pytest.mark.parametrize(
    ("target", "told"),
    [
        ("--result-out", "Refusing --result-out because the path is {kind}: {path}"),
        ("--junit-xml", "Cannot write the JUnit XML to {path}: it is {kind}"),
    ],
)
@pytest.mark.parametrize(
    "kind", ["a socket", pytest.param("a block device (a disk)", marks=ROOT_ONLY)]
)
def test_a_socket_or_disk_is_refused_before_anything_runs(
    tmp_path: Path, target: str, told: str, kind: str
) -> None:
    project = _project(tmp_path)
    path = tmp_path / "s"
    held = None
    if kind == "a socket":
        held = _socket(path)
    else:
        os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(7, 250))
    try:
        completed = _run(project, target, path)
    finally:
        if held is not None:
            held.close()
    assert completed.returncode == 2, completed.stderr
    assert told.format(kind=kind, path=path) in completed.stderr
    assert not (project / ".eval-banana" / "results").exists()
    assert not stat.S_ISREG(os.lstat(path).st_mode)


@pytest.mark.parametrize(
    ("target", "told"),
    [
        ("--result-out", "Refusing --result-out because the path is a symbolic link loop: {path}"),
        ("--junit-xml", "Cannot write the JUnit XML to {path}: it is a symbolic link loop"),
        ("history --html", "Cannot write the history page to {path}: --html names a symbolic"),
    ],
)
def test_a_report_named_by_a_link_loop_is_refused_before_anything_runs(
    tmp_path: Path, target: str, told: str
) -> None:
    # `ln -s loop.md loop.md`: a shell's `>` refuses it ("Too many levels of symbolic links");
    # eb renamed its report over the link and passed.
    project = _project(tmp_path)
    loop = tmp_path / "loop.md"
    loop.symlink_to(loop.name)
    if target == "history --html":
        completed = run_eb("history", "--cwd", str(project), "--html", str(loop))
    else:
        completed = _run(project, target, loop)
    assert completed.returncode == 2, completed.stderr
    assert told.format(path=loop) in completed.stderr
    assert "hint: remove the link or point it at a file" in completed.stderr
    assert not (project / ".eval-banana" / "results").exists()
    assert loop.is_symlink() and os.readlink(loop) == loop.name


@pytest.mark.parametrize("target", ["--result-out", "--junit-xml", "step summary"])
def test_a_report_named_by_a_link_is_written_through_it_and_the_link_kept(
    tmp_path: Path, reader: Callable[[Path], subprocess.Popen[bytes]], target: str
) -> None:
    # As a shell's `>` does. The link was replaced by a regular file: `--junit-xml /dev/stdout`
    # run as root replaced the system's link to the process's own stdout.
    project = _project(tmp_path)
    kept = tmp_path / "reports" / "junit.xml"
    kept.parent.mkdir()
    kept.write_text("an earlier report\n")
    link = tmp_path / "latest.xml"
    link.symlink_to(kept)
    result = _run(project, target, link)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and link.resolve() == kept
    assert FIRST_BYTES[target] in kept.read_bytes()
    # A link to a FIFO (as /dev/stdout is to a pipe): the reader gets the report.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    piped = tmp_path / "stdout-like"
    piped.symlink_to(fifo)
    waiting = reader(fifo)
    result = _run(project, target, piped)
    assert result.returncode == 0, result.stderr
    received, _ = waiting.communicate(timeout=30)
    assert received.startswith(FIRST_BYTES[target]) or FIRST_BYTES[target] in received
    assert piped.is_symlink() and stat.S_ISFIFO(os.stat(piped).st_mode)


@pytest.mark.parametrize("target", ["--result-out", "--junit-xml"])
def test_a_report_to_dev_stdout_reaches_a_pipe(tmp_path: Path, target: str) -> None:
    # eb's stdout is a pipe here: /dev/stdout ends in /proc's link to `pipe:[N]`, a name no
    # file has. Resolved to it, the report was "Cannot write /proc/<pid>/fd/pipe:[N]" (exit 3);
    # --result-out refused the link (exit 2).
    completed = _run(_project(tmp_path), target, Path("/dev/stdout"))
    assert completed.returncode == 0, completed.stderr
    assert FIRST_BYTES[target].decode() in completed.stdout


@pytest.mark.parametrize("target", ["--result-out", "--junit-xml"])
@pytest.mark.parametrize(
    ("stream", "redirect", "own"),
    [("stdout", ">", b"Run ID: "), ("stderr", "2>>", b"only_check: passed")],
    ids=["stdout", "stderr-appended"],
)
def test_a_report_to_eb_s_own_stream_sent_to_a_file_is_written_into_that_file(
    tmp_path: Path, target: str, stream: str, redirect: str, own: bytes
) -> None:
    # `eb run --result-out /dev/stdout > out.txt`: the link led to out.txt, a regular file, so
    # the report replaced it whole. What eb had printed there was lost, and what it printed
    # after went to the old file, which no name reached any more.
    project = _project(tmp_path)
    out = tmp_path / "out.txt"
    out.write_bytes(b"earlier\n")
    inode = out.stat().st_ino
    command = eb_command("run", "--cwd", str(project), "--history", "off", target, f"/dev/{stream}")
    completed = subprocess.run(
        ["sh", "-c", f"exec {shlex.join(command)} {redirect} {shlex.quote(str(out))}"],
        env=eb_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    written = out.read_bytes()
    # `>>` keeps what was there: the report went where the stream stood, never over it.
    assert written.startswith(b"earlier\n") == (redirect == "2>>"), written
    assert own in written and FIRST_BYTES[target] in written, written
    assert written.count(FIRST_BYTES[target]) == 1
    assert out.stat().st_ino == inode  # written into, as the shell opened it: never replaced


def _looping_check(path: Path) -> str:
    """A check that makes `path` a symbolic link that leads back to itself while it runs (after
    the run's up-front checks of its report paths), and fails."""
    return (
        "schema_version: 1\nid: makes_a_loop\ntype: deterministic\n"
        "description: Makes a report's path a loop, and fails.\n"
        "script: |\n"
        "  import os\n"
        f"  os.symlink({path.name!r}, {str(path)!r})\n"
        "  raise SystemExit(1)\n"
    )


# How the report whose path becomes a loop is told: as the refusal before a run tells it.
LOOP_TOLD = {
    "--result-out": "Refusing --result-out because the path is a symbolic link loop: {path}",
    "--junit-xml": "Cannot write the JUnit XML to {path}: it is a symbolic link loop",
    "step summary": "warning: could not append the report to $GITHUB_STEP_SUMMARY ({path}): "
    "it is a symbolic link loop; report.md in the run folder holds it",
}


@pytest.mark.parametrize("target", list(TARGETS))
def test_a_report_path_a_check_makes_a_link_loop_is_told_as_before_a_run(
    tmp_path: Path, target: str
) -> None:
    # A link loop made by a check, after the run's checks of the path, failed the write with
    # `Cannot write PATH: Too many levels of symbolic links` (the JUnit file), a traceback and
    # exit 1 (--result-out), or a bare warning naming no fix (the step summary), and the files
    # the run wrote went unnoted.
    loop = tmp_path / "loop.out"
    project = write_project(
        tmp_path / "proj", checks={"eval_checks/loop.yaml": _looping_check(loop)}
    )
    # Every other report is named too (in the project, so the run notes it): each is written.
    others = {name: project / f"other-{index}" for index, name in enumerate(TARGETS)}
    flags: list[str] = []
    env: dict[str, str] = {}
    for name, path in others.items():
        named, named_env = TARGETS[name](loop if name == target else path)
        flags += named
        env.update(named_env)
    completed = run_eb("run", "--cwd", str(project), *flags, **env)
    # The step summary costs only itself: the failing check's verdict stands (exit 1); another
    # report that cannot be written ends the run as a fault (exit 3), after the rest.
    assert completed.returncode == (1 if target == "step summary" else 3), completed.stderr
    assert LOOP_TOLD[target].format(path=loop) in completed.stderr
    assert "hint: remove the link or point it at a file" in completed.stderr
    assert "Traceback" not in completed.stderr and "Too many levels" not in completed.stderr
    assert loop.is_symlink() and os.readlink(loop) == loop.name
    for name, path in others.items():
        if name != target and (name, target) != ("step summary", "--junit-xml"):
            assert path.read_bytes().startswith(FIRST_BYTES[name]), name
    if target == "--junit-xml":
        # Appended after the JUnit file was tried: the summary says first that the run ends
        # with exit 3 for it, then copies report.md.
        told = LOOP_TOLD[target].format(path=loop)
        said = f"**eb ended this run with exit 3 after writing this report:** {told}. "
        assert others["step summary"].read_text().startswith(said)
    run_dir = next((project / ".eval-banana" / "results").iterdir())
    report = json.loads((run_dir / "report.json").read_text())
    assert report["failed_checks"] == 1
    assert (run_dir / "report.md").is_file() and (run_dir / "report.html").is_file()
    # The files the run wrote are noted all the same (a later run does not count them).
    written = json.loads((project / ".eval-banana" / "written.json").read_text())
    noted = {entry["path"] for entry in written["files"]}
    assert noted == {path.name for name, path in others.items() if name != target}


def test_a_step_summary_that_is_a_link_loop_is_a_warning_and_the_verdict_stands(
    tmp_path: Path,
) -> None:
    # GITHUB_STEP_SUMMARY a loop from the start: the summary is a copy of report.md, so it is
    # no refusal (as a folder there is none), but told as the other reports' loops are.
    project = _project(tmp_path)
    loop = tmp_path / "summary.md"
    loop.symlink_to(loop.name)
    completed = _run(project, "step summary", loop)
    assert completed.returncode == 0, completed.stderr
    assert LOOP_TOLD["step summary"].format(path=loop) in completed.stderr
    assert "hint: remove the link or point it at a file" in completed.stderr
    assert "Too many levels" not in completed.stderr
    assert loop.is_symlink() and os.readlink(loop) == loop.name
