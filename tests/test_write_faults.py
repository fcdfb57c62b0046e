"""A file eb cannot write is infrastructure, never a verdict: a full disk aborts the run (exit 3)
with one line naming the file and the cause, the check whose output was cut short is an error,
and nothing the run judged is reused once there is room again.

The disk is a real, small tmpfs mounted over the folder under test (root only; skipped
otherwise), filled by the checks' own output.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.forking import default_sigint
from tests.gitrepo import init_repo
from tests.processes import eb_process, wait_for_fifo_reader_wait

# A check that writes `size` bytes to stdout and passes whatever the write did: a disk that
# fills up cuts its output short while the check itself still says "passed".
WRITER = """\
import os
data = b"x" * {size}
try:
    while data:
        data = data[os.write(1, data):]
except OSError:
    pass
"""


def _check(check_id: str, *, size: int) -> str:
    script = WRITER.format(size=size)
    return (
        f"schema_version: 1\nid: {check_id}\ntype: deterministic\n"
        f"description: Writes {size} bytes.\nscript: |\n{textwrap.indent(script, '  ')}"
    )


def _project(root: Path, *, sizes: dict[str, int]) -> Path:
    files = {
        ".eval-banana/config.toml": textwrap.dedent(
            """\
            [core]
            output_dir = "runs"
            max_parallel_checks = 1

            [discovery]
            exclude_dirs = [".eval-banana", ".git", "runs", "cache"]

            [cache]
            mode = "on"
            dir = "cache"
            """
        ),
        ".gitignore": "runs/\ncache/\n",
    }
    for check_id, size in sizes.items():
        files[f"eval_checks/{check_id}.yaml"] = _check(check_id, size=size)
    return init_repo(root, files)


@contextlib.contextmanager
def _small_disk(folder: Path, *, size: str) -> Iterator[None]:
    """`folder` on a tmpfs of `size`, unmounted (its content gone) when the block ends."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _eb_run(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _report(root: Path) -> dict[str, object]:
    (run,) = sorted((root / "runs").iterdir())
    document: dict[str, object] = json.loads((run / "report.json").read_text())
    return document


def _assert_one_fault_line(done: subprocess.CompletedProcess[str], *, under: Path) -> str:
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    # Besides the progress lines ([n/m] per check), one line: the fault.
    lines = [line for line in done.stderr.splitlines() if line.strip() and line[0] != "["]
    assert len(lines) == 1, done.stderr
    (line,) = lines
    assert line.startswith(f"Cannot write {under}"), line
    assert "No space left on device" in line, line
    return line


def test_a_full_run_folder_aborts_the_run_and_nothing_it_judged_is_reused(tmp_path: Path) -> None:
    # 1 MiB holds the small check's output and the first big one, never the second big one.
    root = _project(tmp_path / "proj", sizes={"a_small": 1_000, "b_big": 600_000, "c_big": 600_000})
    runs = root / "runs"
    with _small_disk(runs, size="1m"):
        done = _eb_run(root)
        _assert_one_fault_line(done, under=runs)
    assert not any((root / "cache" / "entries").rglob("*.json")), "an aborted run stored verdicts"
    # Room again: every check runs afresh; none is answered by a verdict of the aborted run.
    again = _eb_run(root)
    assert again.returncode == 0, again.stdout + again.stderr
    results = {check["check_id"]: check for check in _report(root)["checks"]}  # type: ignore[attr-defined]
    assert set(results) == {"a_small", "b_big", "c_big"}
    for check_id, result in results.items():
        assert result["status"] == "passed", (check_id, result)
        assert result["details"]["cache"]["hit"] is False, (check_id, result["details"])


def test_a_full_cache_folder_aborts_the_run(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj", sizes={"a_big": 600_000, "b_big": 600_001})
    cache = root / "cache"
    with _small_disk(cache, size="1m"):
        done = _eb_run(root)
        _assert_one_fault_line(done, under=cache)
        assert not any((cache / "entries").rglob("*.json")), "an aborted run stored verdicts"
    # The run folder had room: its report is there, readable, and says what happened.
    report = _report(root)
    assert report["aborted_by"] == "write_fault"
    assert report["run_passed"] is False
    statuses = {check["check_id"]: check["status"] for check in report["checks"]}  # type: ignore[attr-defined]
    assert "error" in statuses.values(), statuses
    assert "passed" not in statuses.values() or statuses["a_big"] == "passed", statuses
    # The check whose output was not stored says nothing of itself: the history leaves it out.
    (record,) = (
        json.loads(path.read_text()) for path in (root / ".eval-banana" / "history").glob("*.json")
    )
    faulted = [check["check_id"] for check in report["checks"] if "write_fault" in check["details"]]  # type: ignore[attr-defined]
    early = [check["id"] for check in record["checks"] if check.get("early_error")]
    assert faulted and set(faulted) <= set(early), (faulted, record["checks"])


def test_a_full_tmpdir_for_a_checks_script_aborts_the_run_naming_the_file(tmp_path: Path) -> None:
    # A small /tmp on a CI runner: the script eb writes there for the check could not be
    # written, and the check became an ordinary `error` ("[Errno 28] No space left on
    # device", no file named) with exit 1, as if the project were at fault.
    padding = "".join(
        f"x{n} = {n}  # a long script, padded well past the room left\n" for n in range(400)
    )
    root = _passing_project(
        tmp_path / "proj", check=_check("ok", size=10) + textwrap.indent(padding, "  ")
    )
    tmpdir = tmp_path / "tmp"
    with _small_disk(tmpdir, size="16k"):
        # 4 KiB left: room for the probe of Python's tempfile, never for the 20 KiB script.
        (tmpdir / "fill").write_bytes(b"\0" * 12_288)
        result_doc = tmp_path / "result.json"
        done = subprocess.run(
            [sys.executable, "-m", "eval_banana", "run", "--cache", "off", "--cwd", str(root)]
            + ["--result-out", str(result_doc), "--result-format", "json"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "TMPDIR": str(tmpdir)},
        )
        line = _assert_one_fault_line(done, under=tmpdir)
    assert line.endswith("/inline_check.py: No space left on device; the run is aborted"), line
    (run,) = (root / ".eval-banana" / "results").iterdir()
    report = json.loads((run / "report.json").read_text())
    assert report["aborted_by"] == "write_fault"
    (check,) = report["checks"]
    assert check["status"] == "error" and "write_fault" in check["details"], check
    # The run judged its checks and wrote its report: the document says it completed (it
    # said "config_error", a setup failure), not passed, with the fault's line.
    document = json.loads(result_doc.read_text())
    assert (document["status"], document["run_passed"]) == ("completed", False), document
    assert document["error"] == line and document["checks"][0]["status"] == "error"


def test_eb_update_runs_again_a_check_a_write_fault_kept_from_running(tmp_path: Path) -> None:
    # z_big's script could not be written under a full TMPDIR: the run was aborted with every
    # check holding a result, z_big's being the fault's `error`. eb update took that error for
    # z_big's verdict: it recorded the run again without the abort, ran nothing and ended on
    # exit 1 (z_big errored), where a fresh run passes; the check had never run.
    padding = "".join(
        f"x{n} = {n}  # a long script, padded well past the room left\n" for n in range(400)
    )
    root = _passing_project(tmp_path / "proj", check=_check("a_small", size=10))
    (root / "eval_checks" / "z_big.yaml").write_text(
        _check("z_big", size=10) + textwrap.indent(padding, "  ")
    )
    tmpdir = tmp_path / "tmp"
    with _small_disk(tmpdir, size="64k"):
        # 24 KiB left: room for a_small's files, never for z_big's 24 KiB script and more.
        (tmpdir / "fill").write_bytes(b"\0" * 40_960)
        done = eb_process(
            root,
            "run",
            "--cache",
            "off",
            "--max-parallel-checks",
            "1",
            env={**os.environ, "TMPDIR": str(tmpdir)},
        )
        _assert_one_fault_line(done, under=tmpdir)
    (run,) = (root / ".eval-banana" / "results").iterdir()
    execute = json.loads((run / "stages" / "execute.json").read_text())
    assert execute["aborted_by"] == "write_fault" and execute["not_run"] == [], execute
    statuses = {
        r["check_id"]: (r["status"], "write_fault" in r["details"]) for r in execute["results"]
    }
    assert statuses == {"a_small": ("passed", False), "z_big": ("error", True)}, statuses
    status = eb_process(root, "status")
    assert "z_big: no result yet (its output could not be written)" in status.stdout, status
    updated = eb_process(root, "update")
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert "1 of 2 checks to run again; 1 keeps its result" in updated.stdout, updated.stdout
    report = json.loads((run / "report.json").read_text())
    assert report["aborted_by"] is None and report["run_passed"] is True, report
    (result,) = (check for check in report["checks"] if check["check_id"] == "z_big")
    assert result["status"] == "passed" and "write_fault" not in result["details"], result
    # Its evidence is written anew: its result file is the verdict, its output is there.
    plan = json.loads((run / "stages" / "plan.json").read_text())
    (stem,) = (check["stem"] for check in plan["checks"] if check["id"] == "z_big")
    assert json.loads((run / "checks" / f"{stem}.json").read_text()) == result
    assert (run / "checks" / f"{stem}.stdout.txt").read_text() == "x" * 10
    assert eb_process(root, "status").returncode == 0


@contextlib.contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """`folder` read-only for eb: a read-only bind mount of itself (root, whom permissions do
    not stop), else no write permission on it and below."""
    if os.geteuid() != 0:
        folders = [folder, *(path for path in folder.rglob("*") if path.is_dir())]
        for path in folders:
            path.chmod(0o555)
        try:
            yield
        finally:
            for path in folders:
                path.chmod(0o755)
        return
    for command in (
        ["mount", "--bind", str(folder), str(folder)],
        ["mount", "-o", "remount,bind,ro", str(folder)],
    ):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], check=False)
            pytest.skip(f"cannot mount {folder} read-only here: {done.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_read_only_checkout_keeps_the_verdict_and_its_report(tmp_path: Path) -> None:
    # The project is read-only (a CI sandbox), the run folders go elsewhere. The --last-failed
    # record could not be written: that cost the whole run (exit 3, "the run is aborted") and
    # its report, where it is meant to cost only itself, as the history record does.
    root = tmp_path / "proj"
    (root / ".eval-banana" / "history").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text("")
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "ok.yaml").write_text(_check("ok", size=10))
    (root / "eval_checks" / "bad.yaml").write_text(
        "schema_version: 1\nid: bad\ntype: deterministic\ndescription: Fails.\n"
        "script: raise SystemExit(1)\n"
    )
    runs = tmp_path / "runs"
    with _read_only(root):
        done = subprocess.run(
            [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root)]
            + ["--output-dir", str(runs), "--cache", "off"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 1, done.stdout + done.stderr  # a check failed: the CI verdict
    assert "Traceback" not in done.stderr and "the run is aborted" not in done.stderr
    own = root / ".eval-banana"
    for warned in (
        "warning: could not record the failed checks for --last-failed: Cannot write "
        f"{own / 'lastfailed.json'}: ",
        f"warning: could not record this run in the history folder {own / 'history'}: Cannot "
        f"write {own / 'history'}/",
    ):
        assert warned in done.stderr, done.stderr
    (run,) = runs.iterdir()
    report = json.loads((run / "report.json").read_text())
    assert report["run_passed"] is False and report["aborted_by"] is None
    assert {check["check_id"]: check["status"] for check in report["checks"]} == {
        "ok": "passed",
        "bad": "failed",
    }


def test_eb_init_in_a_read_only_folder_is_a_setup_error_not_an_aborted_run(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    with _read_only(folder):
        done = subprocess.run(
            [sys.executable, "-m", "eval_banana", "init"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"Cannot write {folder}/.eval-banana/config.toml: "), done.stderr
    assert "the run is aborted" not in done.stderr


# -- the reports written beside the run folder ------------------------------------------------

# A check that passes, and puts a folder where the run's JUnit file is to go: the path was
# fine when the run started, and cannot be written once the checks have run.
_BLOCKS_JUNIT = (
    "schema_version: 1\nid: blocks\ntype: deterministic\ndescription: Passes.\n"
    "script: |\n  import os\n  os.makedirs('reports/junit.xml', exist_ok=True)\n"
)


def _passing_project(root: Path, *, check: str | None = None) -> Path:
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text("")
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "ok.yaml").write_text(check or _check("ok", size=10))
    return root


def test_a_junit_file_that_cannot_be_written_after_the_checks_aborts_with_the_verdict_shown(
    tmp_path: Path,
) -> None:
    # It was exit 2 ("nothing ran") with no console report: the one line was all there was,
    # though every check had run and report.json said the run passed.
    root = _passing_project(tmp_path / "proj", check=_BLOCKS_JUNIT)
    done = eb_process(root, "run", "--no-html", "--junit-xml", "reports/junit.xml")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "Passed: yes" in done.stdout and "- blocks: passed" in done.stdout, done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip() and line[0] != "["]
    assert lines == [
        f"Cannot write {root / 'reports' / 'junit.xml'}: Is a directory; the run is aborted"
    ], done.stderr


def test_a_report_fault_after_the_checks_is_a_completed_run_that_did_not_pass(
    tmp_path: Path,
) -> None:
    # The --result-out document of such a run said "config_error" (a setup failure) though
    # every check had been judged and report.json written; and its report.md copy said "Run
    # Passed: yes" under a document that said run_passed false.
    root = _passing_project(tmp_path / "proj", check=_BLOCKS_JUNIT)
    junit = root / "reports" / "junit.xml"
    fault = f"Cannot write {junit}: Is a directory; the run is aborted"
    done = eb_process(
        root,
        "run",
        "--no-html",
        "--junit-xml",
        "reports/junit.xml",
        "--result-out",
        "res.json",
        "--result-format",
        "json",
    )
    assert done.returncode == 3, done.stdout + done.stderr
    document = json.loads((root / "res.json").read_text())
    assert (document["status"], document["run_passed"], document["error"]) == (
        "completed",
        False,
        fault,
    ), document
    assert document["checks"] == [
        {"id": "blocks", "status": "passed", "reason": None, "model": None}
    ]
    # The md document and the step summary say, before their copy of report.md, that the run
    # ended with exit 3; report.md and report.json keep the verdict the checks earned.
    junit.rmdir()
    summary = tmp_path / "summary.md"
    done = eb_process(
        root,
        "run",
        "--no-html",
        "--junit-xml",
        "reports/junit.xml",
        "--result-out",
        "res.md",
        env={**os.environ, "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert done.returncode == 3, done.stdout + done.stderr
    run = sorted((root / ".eval-banana" / "results").iterdir())[-1]
    report = json.loads((run / "report.json").read_text())
    assert report["run_passed"] is True and report["aborted_by"] is None
    report_md = (run / "report.md").read_text()
    assert "| Run Passed | `yes` |" in report_md
    said = (
        "**eb ended this run with exit 3 after writing this report:** "
        f"{fault}. The report below holds the verdict the checks earned; the run did not "
        "pass.\n\n"
    )
    assert summary.read_text() == said + report_md
    fence, _, copied = (root / "res.md").read_text().partition("\n```\n\n")
    assert json.loads(fence.removeprefix("```eval-banana-result v1\n"))["run_passed"] is False
    assert copied == said + report_md


def test_a_junit_path_that_cannot_be_a_file_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    root = _passing_project(tmp_path / "proj")
    (tmp_path / "not_a_dir").write_text("")
    runs = tmp_path / "runs"
    junit = tmp_path / "not_a_dir" / "junit.xml"
    done = eb_process(root, "run", "--output-dir", str(runs), "--junit-xml", str(junit))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(
        f"Cannot write the JUnit XML to {junit}: {tmp_path / 'not_a_dir'} is not a folder\n"
    ), done.stderr
    assert "[1/1]" not in done.stderr and not runs.exists(), "a refused run ran its checks"
    # Missing folders are made, as for --output-dir and --result-out.
    deep = tmp_path / "new" / "deeper" / "junit.xml"
    made = eb_process(root, "run", "--output-dir", str(runs), "--junit-xml", str(deep))
    assert made.returncode == 0, made.stdout + made.stderr
    assert deep.read_text().startswith("<?xml")


def test_a_step_summary_that_cannot_be_appended_is_a_warning_and_the_verdict_stands(
    tmp_path: Path,
) -> None:
    # A container step that passes GITHUB_STEP_SUMMARY on without the runner's file: it was
    # exit 2 for a run whose checks all passed, with no console report.
    root = _passing_project(tmp_path / "proj")
    (tmp_path / "not_a_dir").write_text("")
    summary = tmp_path / "not_a_dir" / "summary.md"
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--no-html"],
        cwd=root,
        env={**os.environ, "GITHUB_STEP_SUMMARY": str(summary)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed: yes" in done.stdout, done.stdout
    assert (
        f"warning: could not append the report to $GITHUB_STEP_SUMMARY ({summary}): "
        "Not a directory; report.md in the run folder holds it"
    ) in done.stderr, done.stderr


# A control whose rule lets its seeded defect through (exit 0) after a verbose log: printing
# past the file-size limit raises "File too large", which looked like the defect caught.
VERBOSE_CONTROL = """\
schema_version: 1
id: ctl
type: deterministic
expect: fail
description: A control that misses its defect after a long log.
script: |
  import sys
  for n in range(2000):
      print("log line %05d " % n + "y" * 90)
  sys.exit(0)
"""


def _limit_file_size() -> None:
    """For eb's process: `ulimit -f 100`, as some CI sandboxes set it (its checks inherit it)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (100 * 1024, resource.RLIM_INFINITY))


def test_a_check_output_cut_at_the_file_size_limit_is_a_fault_not_a_caught_defect(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path / "proj", sizes={})
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "ctl.yaml").write_text(VERBOSE_CONTROL)
    limited = subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
        preexec_fn=_limit_file_size,
    )
    # The control "failing" on its refused print was a pass of the run (exit 0).
    assert limited.returncode == 3, limited.stdout + limited.stderr
    assert "File too large" in limited.stderr and "Traceback" not in limited.stderr
    report = _report(root)
    assert report["aborted_by"] == "write_fault"
    (check,) = report["checks"]  # type: ignore[misc]
    assert check["status"] == "error", check
    assert check["error_detail"].startswith("Output could not be written: "), check
    assert check["details"]["write_fault"]["path"].endswith(".stdout.txt"), check
    assert not any((root / "cache" / "entries").rglob("*.json")), "a faulted verdict was stored"
    # Without the limit the control misses its defect, as it always did; nothing is reused.
    shutil.rmtree(root / "runs")
    again = _eb_run(root)
    assert again.returncode == 1, again.stdout + again.stderr
    (check,) = _report(root)["checks"]  # type: ignore[misc]
    assert (check["status"], check["observed_status"]) == ("failed", "passed"), check
    assert check["details"]["cache"]["hit"] is False, check["details"]


# -- a check's own files, whose place the check took -------------------------------------------

# A check that makes a folder where eb writes its result (checks/<stem>.json), or makes its
# run's checks/ folder immutable (root only), so that eb cannot remove its empty stderr file.
_TAKES_ITS_RESULT_FILE = (
    "schema_version: 1\nid: ok\ntype: deterministic\ndescription: Takes its result's place.\n"
    "script: |\n  import json, os, sys\n"
    "  os.makedirs(json.loads(open(sys.argv[1]).read())['output_dir'] + '.json/x')\n"
)
_FREEZES_ITS_FOLDER = (
    "schema_version: 1\nid: ok\ntype: deterministic\ndescription: Freezes checks/.\n"
    "script: |\n  import json, os, subprocess, sys\n"
    "  out = json.loads(open(sys.argv[1]).read())['output_dir']\n"
    "  subprocess.run(['chattr', '+i', os.path.dirname(out)], check=True)\n"
    "  print('frozen')\n"
)


def _fault_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip() and line[0] != "["]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_a_folder_where_a_checks_result_goes_is_named_not_the_temporary_file(
    tmp_path: Path,
) -> None:
    # It said "Cannot write .../checks/.ok-<sha>.json.<pid>.4.tmp: Is a directory", a file
    # that never was a folder, and no fix.
    root = _passing_project(tmp_path / "proj", check=_TAKES_ITS_RESULT_FILE)
    done = eb_process(root, "run", "--cache", "off")
    line = _fault_line(done)
    (run,) = (root / ".eval-banana" / "results").iterdir()
    (result_file,) = (run / "checks").glob("ok-*.json")
    assert line == (
        f"Cannot write {result_file}: a folder stands there, which eb never removes (remove it,"
        " then run eb update); the run is aborted"
    ), line
    (check,) = json.loads((run / "report.json").read_text())["checks"]
    assert check["details"]["write_fault"]["path"] == str(result_file), check


def test_an_empty_output_file_eb_cannot_remove_is_told_so_not_as_a_check_that_never_ran(
    tmp_path: Path,
) -> None:
    # It warned "Deterministic check ok failed to execute: [Errno 1] Operation not permitted:
    # '...stderr.txt'" and recorded the check as never started, though it had run: what
    # failed was eb removing the empty stderr file the check left.
    probe = tmp_path / "probe"
    probe.mkdir()
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.skip("making a folder immutable needs root and chattr")
    if subprocess.run(["chattr", "+i", str(probe)], capture_output=True, check=False).returncode:
        pytest.skip("this file system has no immutable flag")
    subprocess.run(["chattr", "-i", str(probe)], check=True)
    root = _passing_project(tmp_path / "proj", check=_FREEZES_ITS_FOLDER)
    try:
        done = eb_process(root, "run", "--cache", "off")
    finally:
        for checks in (root / ".eval-banana" / "results").glob("*/checks"):
            subprocess.run(["chattr", "-i", str(checks)], check=False)
    assert "failed to execute" not in done.stderr, done.stderr
    line = _fault_line(done)
    (run,) = (root / ".eval-banana" / "results").iterdir()
    (stderr_file,) = (run / "checks").glob("ok-*.stderr.txt")
    assert line == (
        f"Cannot remove the empty file {stderr_file}: Operation not permitted; the run is aborted"
    ), line
    (check,) = json.loads((run / "report.json").read_text())["checks"]
    assert check["error_detail"] == f"Not judged: {line.removesuffix('; the run is aborted')}"
    assert "not_started" not in check["details"], check["details"]


# -- a report a green run left where this run's could not be written ----------------------------

# A check that passes until the project holds a file named FAIL.
_FAILS_ON_MARK = (
    "schema_version: 1\nid: ok\ntype: deterministic\ndescription: Passes until FAIL exists.\n"
    "script: |\n  import os\n  assert not os.path.exists('FAIL'), 'FAIL present'\n"
)


def _fill(folder: Path) -> None:
    """Write into `folder` until its file system has no room left."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)


def _lines_besides_progress(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return [line for line in done.stderr.splitlines() if line.strip() and line[0] != "["]


def test_a_junit_file_a_full_disk_refuses_leaves_no_green_file_of_an_earlier_run(
    tmp_path: Path,
) -> None:
    # The earlier run's JUnit file stayed where CI reads it: a failing run whose JUnit write
    # failed for want of room showed green in the CI test tab (exit 3 alone said otherwise).
    root = _passing_project(tmp_path / "proj", check=_FAILS_ON_MARK)
    reports = tmp_path / "reports"
    junit = reports / "junit.xml"
    with _small_disk(reports, size="64k"):
        green = eb_process(root, "run", "--no-html", "--junit-xml", str(junit))
        assert green.returncode == 0, green.stdout + green.stderr
        assert 'failures="0"' in junit.read_text()
        (root / "FAIL").write_text("")
        _fill(reports)
        done = eb_process(root, "run", "--no-html", "--junit-xml", str(junit))
        assert "Passed: no" in done.stdout, done.stdout
        assert _lines_besides_progress(done) == [
            f"Cannot write {junit}: No space left on device; the earlier file there was "
            "removed, so it is not read as this run's; the run is aborted",
            # The repair `eb status` and docs/rerunning-stages.md name (it named `eb stage
            # report`, which works too, while `eb status` said `eb update`).
            "hint: make room for it (or make it writable), then `eb update` writes it again",
        ], done.stderr
        assert not junit.exists(), junit.read_text()
        # The stage file keeps the system's words as the cause, and the earlier file's fate
        # apart (the cause held both, though described as the system's words).
        (run,) = [
            path
            for path in (root / ".eval-banana" / "results").iterdir()
            if (path / "report.json").read_text().count('"run_passed": false')
        ]
        stage = json.loads((run / "stages" / "report.json").read_text())
        assert stage["report_faults"] == [
            {
                "report": "junit_xml",
                "path": str(junit),
                "cause": "No space left on device",
                "earlier": "the earlier file there was removed, so it is not read as this run's",
            }
        ], stage
        assert _report_stage_line(root) == (
            f"report    stages/report.json     stale  (the JUnit file {junit} could not be "
            "written (No space left on device; the earlier file there was removed, so it is "
            "not read as this run's))"
        )
        # Room again: the fix the hint names writes the run's red JUnit file.
        (reports / "filler").unlink()
        again = eb_process(root, "update")
        assert again.returncode == 1, again.stdout + again.stderr
        assert 'failures="1"' in junit.read_text()


def test_an_immutable_junit_file_of_an_earlier_run_is_told_as_not_this_runs(
    tmp_path: Path,
) -> None:
    # An immutable file cannot be replaced, removed or emptied: eb says so, naming it, rather
    # than leave CI to read it as this run's result without a word about it.
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.skip("making a file immutable needs root and chattr")
    root = _passing_project(tmp_path / "proj", check=_FAILS_ON_MARK)
    junit = tmp_path / "junit.xml"
    green = eb_process(root, "run", "--no-html", "--junit-xml", str(junit))
    assert green.returncode == 0, green.stdout + green.stderr
    if subprocess.run(["chattr", "+i", str(junit)], capture_output=True, check=False).returncode:
        pytest.skip("this file system has no immutable flag")
    try:
        (root / "FAIL").write_text("")
        done = eb_process(root, "run", "--no-html", "--junit-xml", str(junit))
    finally:
        subprocess.run(["chattr", "-i", str(junit)], check=False)
    assert _lines_besides_progress(done)[0] == (
        f"Cannot write {junit}: Operation not permitted; the earlier file there could not be "
        "removed or emptied either (Operation not permitted), and it is not this run's: "
        "remove it; the run is aborted"
    ), done.stderr


def _limit_file_size_below_the_page() -> None:
    """For eb's process: `ulimit -f 16`, room for every file of a one-check run but its
    report.html (some 20 kB of page and assets)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, resource.RLIM_INFINITY))


def test_a_report_html_a_write_fault_refused_leaves_the_report_stage_stale_for_eb_update(
    tmp_path: Path,
) -> None:
    # stages/report.json recorded no page and no fault, so `eb status` called the report
    # stage ok and `eb update` left the run without its report.html for good.
    root = _passing_project(tmp_path / "proj")
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cache", "off"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
        preexec_fn=_limit_file_size_below_the_page,
    )
    (run,) = (root / ".eval-banana" / "results").iterdir()
    page = run / "report.html"
    assert _lines_besides_progress(done) == [
        f"Cannot write {page}: File too large; the run is aborted"
    ], done.stderr
    assert not page.exists()
    status = eb_process(root, "status")
    assert status.returncode == 1, status.stdout + status.stderr
    assert (
        "report    stages/report.json     stale  (report.html could not be written (File too "
        "large))" in status.stdout
    ), status.stdout
    update = eb_process(root, "update")
    assert update.returncode == 0, update.stdout + update.stderr
    assert page.read_text().startswith("<!DOCTYPE html>"), page.read_text()[:100]
    after = eb_process(root, "status")
    assert after.returncode == 0 and "report    stages/report.json     ok" in after.stdout, (
        after.stdout
    )


def _report_stage_line(root: Path) -> str:
    """`eb status`'s line of the report stage."""
    status = eb_process(root, "status")
    (line,) = [line for line in status.stdout.splitlines() if line.startswith("report ")]
    return line


def test_a_junit_file_a_full_disk_refused_leaves_the_report_stage_stale_for_eb_update(
    tmp_path: Path,
) -> None:
    # stages/report.json recorded nothing of the JUnit file: after the fault `eb status` called
    # the report stage ok and `eb update` did nothing, though the hint said the file was gone.
    root = _passing_project(tmp_path / "proj", check=_FAILS_ON_MARK)
    reports = tmp_path / "reports"
    junit = reports / "junit.xml"
    with _small_disk(reports, size="64k"):
        _fill(reports)
        (root / "FAIL").write_text("")
        done = eb_process(root, "run", "--no-html", "--junit-xml", str(junit))
        assert _lines_besides_progress(done)[0] == (
            f"Cannot write {junit}: No space left on device; the run is aborted"
        ), done.stderr
        assert not junit.exists()
        assert _report_stage_line(root) == (
            f"report    stages/report.json     stale  (the JUnit file {junit} could not be "
            "written (No space left on device))"
        )
        (reports / "filler").unlink()
        update = eb_process(root, "update")
        assert update.returncode == 1, update.stdout + update.stderr  # the run's own verdict
        assert "report    stages/report.json     stale (the JUnit file" in update.stdout
        assert 'failures="1"' in junit.read_text()
        assert _report_stage_line(root) == "report    stages/report.json     ok"


def test_a_report_md_eb_stage_report_cannot_rewrite_is_recorded_for_eb_update(
    tmp_path: Path,
) -> None:
    # The failed rewrite ended `eb stage report` before the verdict, report.html, the JUnit
    # file and the stage file: stages/report.json still described the reports of before, so
    # `eb status` called the stage ok and `eb update` left report.md as it was.
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.skip("making a file immutable needs root and chattr")
    root = _passing_project(tmp_path / "proj")
    first = eb_process(root, "run", "--cache", "off")
    assert first.returncode == 0, first.stdout + first.stderr
    (run,) = (root / ".eval-banana" / "results").iterdir()
    markdown = run / "report.md"
    junit = tmp_path / "junit.xml"
    if subprocess.run(["chattr", "+i", str(markdown)], capture_output=True).returncode:
        pytest.skip("this file system has no immutable flag")
    try:
        done = eb_process(root, "stage", "report", "--junit-xml", str(junit))
    finally:
        subprocess.run(["chattr", "-i", str(markdown)], check=False)
    assert "Passed: yes" in done.stdout, done.stdout  # the verdict is still shown
    # The earlier report.md stays, with the verdict it drew: the line says so, as the JUnit
    # file's does (it said nothing, while the docs said the earlier report.md was removed).
    kept = (
        "Operation not permitted; the earlier file there could not be removed or emptied "
        "either (Operation not permitted), and it is not this run's: remove it"
    )
    assert _lines_besides_progress(done) == [
        f"Cannot write {markdown}: {kept}; the run is aborted"
    ], done.stderr
    # The other reports are still written; the JUnit file tells why the command failed.
    assert (run / "report.html").is_file()
    assert "report.md: Operation not permitted" in junit.read_text()
    assert _report_stage_line(root) == (
        f"report    stages/report.json     stale  (report.md could not be written ({kept}))"
    )
    update = eb_process(root, "update")
    assert update.returncode == 0, update.stdout + update.stderr
    assert markdown.read_text().startswith("# eval-banana report")
    assert _report_stage_line(root) == "report    stages/report.json     ok"


def test_the_junit_file_a_later_run_replaces_leaves_the_earlier_runs_report_stage_ok(
    tmp_path: Path,
) -> None:
    # Every run of the project writes the same JUnit path: the file the next run writes there
    # (or its removal) is no change to this run, and `eb update` must not put this run's
    # verdict back where CI reads the newest's. Only a file the run could not write is its own.
    root = _passing_project(tmp_path / "proj", check=_FAILS_ON_MARK)
    junit = tmp_path / "junit.xml"
    first = eb_process(root, "run", "--no-html", "--cache", "off", "--junit-xml", str(junit))
    assert first.returncode == 0, first.stdout + first.stderr
    (root / "FAIL").write_text("")
    second = eb_process(root, "run", "--no-html", "--cache", "off", "--junit-xml", str(junit))
    assert second.returncode == 1, second.stdout + second.stderr
    junit.unlink()
    for run in sorted((root / ".eval-banana" / "results").iterdir()):
        status = eb_process(root, "status", "--run-dir", str(run))
        assert "report    stages/report.json     ok" in status.stdout, status.stdout


def test_a_junit_file_written_when_an_interrupted_runs_reports_are_written_again_is_no_fault(
    tmp_path: Path,
) -> None:
    # The fault of the first pass (a full disk refused the JUnit file) outlived the pass that
    # wrote the file: the JUnit file told the fault about itself, and eb ended with that
    # "Cannot write" line rather than the interrupt, while stages/report.json recorded none.
    root = _passing_project(tmp_path / "proj")
    reports = tmp_path / "reports"
    junit = reports / "junit.xml"
    fifo = tmp_path / "result.fifo"
    os.mkfifo(fifo)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("EVAL_BANANA_")}
    environ.pop("GITHUB_STEP_SUMMARY", None)
    command = [sys.executable, "-m", "eval_banana", "run", "--no-html", "--cwd", str(root)]
    with _small_disk(reports, size="64k"):
        _fill(reports)
        # --result-out's FIFO holds the run after its reports, until the signal.
        run = subprocess.Popen(
            [*command, "--junit-xml", str(junit), "--result-out", str(fifo)],
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=default_sigint,
        )
        try:
            wait_for_fifo_reader_wait(
                run=run, root=root, written="*/stages/report.json", timeout=60
            )
            (reports / "filler").unlink()  # room again, for the reports written again
            run.send_signal(signal.SIGINT)
            stdout, stderr = run.communicate(timeout=30)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        written = junit.read_text()
    assert run.returncode == 3, stdout + stderr
    assert "Run aborted (interrupt" in stderr, stderr
    assert "Cannot write " + str(junit) not in stderr, stderr
    assert "No space left" not in written and "Run aborted (interrupt" in written, written
    assert '<property name="aborted_by" value="interrupt" />' in written, written
    (run_dir,) = (root / ".eval-banana" / "results").iterdir()
    stage = json.loads((run_dir / "stages" / "report.json").read_text())
    assert stage["report_faults"] == [], stage
