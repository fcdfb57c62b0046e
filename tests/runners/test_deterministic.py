"""The deterministic runner with real subprocesses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.models.result import CheckResult
from eval_banana.models.stages import PlannedCheck
from eval_banana.runners import RUNNERS, LazyRunner
from eval_banana.runners.base import RunContext
from eval_banana.runners.deterministic import run_deterministic
from eval_banana.runners.results import StopSignal
from tests.builders import (
    make_config,
    planned_inline,
    planned_referenced,
    planned_unavailable,
)
from tests.processes import eb_process

BANNER = (
    "[eval-banana: {stream} truncated to the last 2000 characters; "
    "full output at checks/{stem}.{stream}.txt]\n"
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / "eval_checks").mkdir(parents=True)
    return path


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    path = tmp_path / "run"
    (path / "checks").mkdir(parents=True)
    return path


def run(
    *,
    check: PlannedCheck,
    root: Path,
    run_dir: Path,
    env: dict[str, str] | None = None,
    cancel: threading.Event | None = None,
    **settings: Any,
) -> CheckResult:
    ctx = RunContext(
        check=check,
        config=make_config(project_root=root, **settings),
        harness=None,
        run_dir=run_dir,
        project_root=root,
        base_env=dict(os.environ) if env is None else env,
        placeholder_env=dict(os.environ),
        cancel=cancel or threading.Event(),
    )
    return run_deterministic(ctx)


def inline(root: Path, source: str, *, id: str = "c1", **kw: Any) -> PlannedCheck:
    return planned_inline(id=id, script=textwrap.dedent(source), project_root=root, **kw)


def in_form(form: str, *, root: Path, run_dir: Path, source: str) -> PlannedCheck:
    """Check `c1` running `source` as an inline `script:` or as a `script_path` file."""
    if form == "inline":
        return inline(root, source)
    script = root / "eval_checks" / "c1.py"
    script.write_text(source)
    return planned_referenced(id="c1", script_file=script, project_root=root, run_dir=run_dir)


def test_registry_maps_types_to_runners() -> None:
    # Registered lazily (imported on first call), like every runner.
    deterministic = RUNNERS["deterministic"]
    assert isinstance(deterministic, LazyRunner)
    assert (deterministic.module, deterministic.function) == (
        run_deterministic.__module__,
        run_deterministic.__name__,
    )
    assert "harness_judge" in RUNNERS


def test_exit_zero_passes_with_empty_streams_and_no_stream_files(root: Path, run_dir: Path) -> None:
    check = inline(root, "x = 1\n")
    result = run(check=check, root=root, run_dir=run_dir)
    assert (result.status, result.score, result.exit_code) == ("passed", 1, 0)
    assert result.reason is None and result.error_detail is None
    assert (result.stdout, result.stderr) == ("", "")
    assert result.details == {"timeout_seconds": 900}
    assert result.check_definition_sha256 == check.check_definition_sha256
    assert not (run_dir / "checks" / f"{check.stem}.stdout.txt").exists()
    assert not (run_dir / "checks" / f"{check.stem}.stderr.txt").exists()
    assert (run_dir / "checks" / check.stem).is_dir()  # the evidence dir
    assert result.started_at.endswith("+00:00") and len(result.started_at) == 32


def test_nonzero_exit_fails_with_the_code(root: Path, run_dir: Path) -> None:
    result = run(check=inline(root, "import sys\nsys.exit(3)\n"), root=root, run_dir=run_dir)
    assert (result.status, result.score, result.exit_code) == ("failed", 0, 3)
    assert result.error_detail is None


@pytest.mark.parametrize("form", ["inline", "script_path"])
@pytest.mark.parametrize("code", [256, 512, 2**32, -256])
def test_an_exit_code_the_system_reads_as_zero_fails_with_the_code_asked_for(
    root: Path, run_dir: Path, form: str, code: int
) -> None:
    # sys.exit(len(failures)) with 256 failures: the shell sees 0, a pass, were eb not to look.
    source = f"import sys\nsys.exit({code})\n"
    check = in_form(form, root=root, run_dir=run_dir, source=source)
    result = run(check=check, root=root, run_dir=run_dir)
    assert (result.status, result.score, result.exit_code) == ("failed", 0, code)
    assert result.reason == f"exit code {code}"
    assert result.stderr == ""


def test_a_negative_exit_code_keeps_the_status_the_system_gives(root: Path, run_dir: Path) -> None:
    result = run(check=inline(root, "import sys\nsys.exit(-1)\n"), root=root, run_dir=run_dir)
    assert (result.status, result.exit_code, result.reason) == ("failed", 255, "exit code 255")


def test_only_a_code_that_reads_as_zero_is_taken_from_the_exit_note(
    root: Path, run_dir: Path
) -> None:
    # A script that writes the launcher's note itself cannot change the code of a plain exit.
    check = inline(
        root,
        """
        import os, sys
        folder = os.path.dirname(sys.argv[1])
        open(os.path.join(folder, "exit_code.txt"), "w").write("3")
        sys.exit(1)
        """,
    )
    result = run(check=check, root=root, run_dir=run_dir)
    assert (result.status, result.exit_code) == ("failed", 1)


def test_uncaught_exception_fails_with_traceback_in_stderr(root: Path, run_dir: Path) -> None:
    check = inline(root, "assert 1 == 2, 'boom'\n")
    result = run(check=check, root=root, run_dir=run_dir)
    assert (result.status, result.exit_code) == ("failed", 1)
    assert "AssertionError: boom" in result.stderr
    full = (run_dir / "checks" / f"{check.stem}.stderr.txt").read_text()
    assert "AssertionError: boom" in full


def test_the_exit_message_after_a_logged_exception_is_the_reason(root: Path, run_dir: Path) -> None:
    check = inline(
        root,
        """
        import logging, sys
        try:
            config = {}["optional_setting"]
        except KeyError:
            logging.exception("optional setting missing, using the default")
        sys.exit("total() returned 3, expected 4")
        """,
    )
    result = run(check=check, root=root, run_dir=run_dir)
    assert (result.status, result.exit_code) == ("failed", 1)
    assert "KeyError: 'optional_setting'" in result.stderr
    assert result.reason == "total() returned 3, expected 4"


@pytest.mark.parametrize("form", ["inline", "script_path"])
def test_an_uncaught_exception_group_is_told_by_its_own_line(
    root: Path, run_dir: Path, form: str
) -> None:
    source = (
        "import atexit\n"
        "atexit.register(print, 'cleanup done', file=__import__('sys').stderr)\n"
        "errors = [ValueError('row 3: price is negative'), TypeError('row 7: price is text')]\n"
        "raise ExceptionGroup('2 rows are wrong', errors)\n"
    )
    if form == "inline":
        check = inline(root, source)
    else:
        script = root / "eval_checks" / "rows.py"
        script.write_text(source)
        check = planned_referenced(id="c1", script_file=script, project_root=root, run_dir=run_dir)
    result = run(check=check, root=root, run_dir=run_dir)
    assert (result.status, result.exit_code) == ("failed", 1)
    assert result.stderr.rstrip().endswith("cleanup done")
    assert result.reason == "ExceptionGroup: 2 rows are wrong (2 sub-exceptions)"


def test_killed_by_signal_fails_with_negative_signal(root: Path, run_dir: Path) -> None:
    check = inline(root, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    result = run(check=check, root=root, run_dir=run_dir)
    assert (result.status, result.exit_code) == ("failed", -signal.SIGKILL)


def test_unavailable_script_is_an_error_with_its_reason(root: Path, run_dir: Path) -> None:
    missing = root / "eval_checks" / "gone.py"
    check = planned_unavailable(id="c1", missing=missing, project_root=root)
    result = run(check=check, root=root, run_dir=run_dir)
    assert (result.status, result.score, result.exit_code) == ("error", 0, None)
    assert result.error_detail == f"Deterministic script not found: {missing}"
    assert (run_dir / "checks" / check.stem).is_dir()  # created also when the check errors


def test_missing_snapshot_file_is_an_os_error_result(root: Path, run_dir: Path) -> None:
    script = root / "eval_checks" / "s.py"
    script.write_text("pass\n")
    check = planned_referenced(id="c1", script_file=script, project_root=root, run_dir=run_dir)
    (run_dir / check.snapshot).unlink()  # type: ignore[operator]
    result = run(check=check, root=root, run_dir=run_dir)
    assert result.status == "error"
    assert "No such file or directory" in (result.error_detail or "")


def test_context_json_exact_text_cwd_env_and_stdin(root: Path, run_dir: Path) -> None:
    check = inline(
        root,
        """
        import json, os, sys
        ctx_path = sys.argv[1]
        raw = open(ctx_path, encoding="utf-8").read()
        out = json.loads(raw)["output_dir"]
        with open(os.path.join(out, "seen.json"), "w") as handle:
            json.dump({
                "raw": raw, "argv": sys.argv, "file": __file__, "path0": sys.path[0],
                "cwd": os.getcwd(), "marker": os.environ.get("EB_TEST_MARKER"),
                "stdin": sys.stdin.read(),
            }, handle)
        """,
        id="ctx-check",
        description="Café check",
    )
    env = dict(os.environ, EB_TEST_MARKER="inherited-42")
    result = run(check=check, root=root, run_dir=run_dir, env=env)
    assert result.status == "passed", result.stderr
    evidence = run_dir / "checks" / check.stem
    seen = json.loads((evidence / "seen.json").read_text())
    expected = (
        "{\n"
        '  "check_id": "ctx-check",\n'
        '  "description": "Caf\\u00e9 check",\n'
        f'  "project_root": "{root}",\n'
        f'  "source_path": "{check.source_path}",\n'
        f'  "output_dir": "{evidence}"\n'
        "}"
    )
    assert seen["raw"] == expected  # key order, indent 2, ASCII escapes, no trailing newline
    tmp = Path(seen["argv"][0]).parent
    assert seen["argv"] == [str(tmp / "inline_check.py"), str(tmp / "context.json")]
    assert seen["file"] == str(tmp / "inline_check.py")
    assert seen["path0"] == str(tmp)
    assert tmp.name.startswith(f"{check.stem}_")
    assert not tmp.exists()  # the private temp dir is gone after the check
    assert seen["cwd"] == str(root)
    assert seen["marker"] == "inherited-42"
    assert seen["stdin"] == ""  # stdin is /dev/null


def test_referenced_script_runs_frozen_bytes_as_its_original_path(
    root: Path, run_dir: Path
) -> None:
    folder = root / "eval_checks"
    (folder / "helper_mod.py").write_text("VALUE = 'sibling-ok'\n")
    script = folder / "probe.py"
    script.write_text(
        textwrap.dedent(
            """
            import json, sys
            import helper_mod
            out = json.load(open(sys.argv[1]))["output_dir"]
            if __name__ == "__main__":
                main_mod = sys.modules["__main__"]
                json.dump({
                    "version": "frozen", "file": __file__, "argv": sys.argv,
                    "path0": sys.path[0], "sibling": helper_mod.VALUE,
                    "loader": type(__loader__).__name__, "spec": __spec__ is None,
                    "package": __package__, "same": main_mod.__dict__ is globals(),
                }, open(out + "/seen.json", "w"))
            raise SystemExit(5)
            """
        )
    )
    check = planned_referenced(id="ref", script_file=script, project_root=root, run_dir=run_dir)
    script.write_text("raise SystemExit(0)\n")  # edited after the snapshot: must not run
    result = run(check=check, root=root, run_dir=run_dir)
    assert (result.status, result.exit_code) == ("failed", 5), result.stderr
    seen = json.loads((run_dir / "checks" / check.stem / "seen.json").read_text())
    assert seen["version"] == "frozen"
    assert seen["file"] == str(script)
    assert seen["argv"][0] == str(script)
    assert Path(seen["argv"][1]).name == "context.json"
    assert seen["path0"] == str(folder)
    assert seen["sibling"] == "sibling-ok"
    assert seen["loader"] == "SourceFileLoader"
    assert seen["spec"] is True and seen["package"] is None and seen["same"] is True


def test_referenced_traceback_names_the_original_path(root: Path, run_dir: Path) -> None:
    script = root / "eval_checks" / "boom.py"
    script.write_text("x = 1\nraise ValueError('bad value')\n")
    check = planned_referenced(id="boom", script_file=script, project_root=root, run_dir=run_dir)
    result = run(check=check, root=root, run_dir=run_dir)
    assert result.status == "failed"
    assert f'File "{script}", line 2' in result.stderr
    assert "ValueError: bad value" in result.stderr


ASSERTING_SCRIPT = "import sys\nprint('optimize', sys.flags.optimize)\nassert 1 == 2, 'the rule'\n"


@pytest.mark.parametrize("form", ["inline", "script_path"])
def test_an_optimising_eb_still_runs_the_scripts_asserts(tmp_path: Path, form: str) -> None:
    # eb compiles each script before the launcher runs it; were that compile to take eb's own
    # `python -O`, a check whose rule is an assert would pass without running it.
    project = tmp_path / "project"
    folder = project / "eval_checks"
    folder.mkdir(parents=True)
    if form == "inline":
        body = "script: |\n" + textwrap.indent(ASSERTING_SCRIPT, "  ")
    else:
        (folder / "rule.py").write_text(ASSERTING_SCRIPT)
        body = "script_path: rule.py\n"
    (folder / "rule.yaml").write_text(
        f"schema_version: 1\nid: rule\ntype: deterministic\ndescription: an assert\n{body}"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONOPTIMIZE"}
    done = subprocess.run(
        [sys.executable, "-O", "-m", "eval_banana", "run", "--output-dir", str(tmp_path / "out")],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    (report,) = (tmp_path / "out").glob("*/report.json")
    (result,) = json.loads(report.read_text())["checks"]
    assert (result["status"], result["exit_code"]) == ("failed", 1)
    assert "AssertionError: the rule" in result["stderr"]
    assert "optimize 0" in result["stdout"]


def test_asserts_run_even_when_the_check_s_environment_says_optimise(
    root: Path, run_dir: Path
) -> None:
    # Run directly under PYTHONOPTIMIZE the file drops its asserts and passes; a check whose
    # rule is an assert must not pass unexamined (nor leave that pass in the verdict cache).
    script = root / "eval_checks" / "rule.py"
    script.write_text(ASSERTING_SCRIPT)
    direct = subprocess.run(
        [sys.executable, str(script)],
        env={**os.environ, "PYTHONOPTIMIZE": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (direct.returncode, direct.stdout) == (0, "optimize 1\n")
    for check in (
        inline(root, ASSERTING_SCRIPT),
        planned_referenced(id="ref", script_file=script, project_root=root, run_dir=run_dir),
    ):
        result = run(
            check=check, root=root, run_dir=run_dir, env={**os.environ, "PYTHONOPTIMIZE": "1"}
        )
        assert (result.status, result.exit_code) == ("failed", 1), result.stderr
        assert "AssertionError: the rule" in result.stderr


def test_an_inline_script_s_coding_line_applies_as_it_would_to_its_file(
    root: Path, run_dir: Path
) -> None:
    # The inline script is the UTF-8 file eb writes; its coding line says how that file reads.
    latin = "# -*- coding: latin-1 -*-\nprint('caf\u00e9')\n"
    result = run(check=inline(root, latin), root=root, run_dir=run_dir)
    assert (result.status, result.stdout) == ("passed", "caf\u00c3\u00a9\n"), result.stderr
    # A control check whose file cannot be read as its coding line says is an error, never a
    # failure that would count as the defect caught.
    ascii_only = "# coding: ascii\nassert 'caf\u00e9' == 'cafe'\n"
    result = run(check=inline(root, ascii_only), root=root, run_dir=run_dir)
    assert result.status == "error", result
    assert "does not compile" in (result.error_detail or "")


@pytest.mark.parametrize("form", ["inline", "script_path"])
def test_a_compile_time_warning_is_on_the_check_s_stderr(
    root: Path, run_dir: Path, form: str
) -> None:
    # `assert (x, "why")` can never fail: Python's warning that says so is the check's evidence.
    source = "total = 4\nassert (total == 5, 'total is wrong')\n"
    check = in_form(form, root=root, run_dir=run_dir, source=source)
    result = run(check=check, root=root, run_dir=run_dir)
    assert result.status == "passed"
    assert "SyntaxWarning: assertion is always true" in result.stderr, result
    assert ":2: SyntaxWarning" in result.stderr


@pytest.mark.parametrize("form", ["inline", "script_path"])
def test_a_compile_warning_the_check_s_filters_make_an_error_is_an_error_not_a_failure(
    root: Path, run_dir: Path, form: str
) -> None:
    # Under PYTHONWARNINGS=error the script does not compile in its own process: a failure
    # there would count as the defect caught for a control check (expect: fail).
    source = "x = 1\nif x is 1:\n    pass\n"
    check = in_form(form, root=root, run_dir=run_dir, source=source)
    result = run(
        check=check, root=root, run_dir=run_dir, env={**os.environ, "PYTHONWARNINGS": "error"}
    )
    assert result.status == "error", result
    shown = "the inline script" if form == "inline" else str(root / "eval_checks" / "c1.py")
    assert result.error_detail == (
        'Deterministic script does not compile: SyntaxError: "is" with a literal. '
        f'Did you mean "=="? (line 2 of {shown})'
    )
    # Without the variable the warning is the check's evidence, and the script runs.
    result = run(check=check, root=root, run_dir=run_dir)
    assert result.status == "passed" and "SyntaxWarning" in result.stderr


@pytest.mark.parametrize("count", [1999, 2000, 2001])
@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_bounded_tail_and_full_stream_file(
    root: Path, run_dir: Path, count: int, stream: str
) -> None:
    # Non-ASCII characters: the bound counts code points, not bytes.
    source = f"import sys\nsys.{stream}.write('a' + 'é' * {count - 2} + 'z')\n"
    check = inline(root, source)
    result = run(check=check, root=root, run_dir=run_dir)
    text = "a" + "é" * (count - 2) + "z"
    field = getattr(result, stream)
    if count <= 2000:
        assert field == text
    else:
        assert field == BANNER.format(stream=stream, stem=check.stem) + text[-2000:]
    file = run_dir / "checks" / f"{check.stem}.{stream}.txt"
    assert file.read_text(encoding="utf-8") == text


def test_large_stdout_keeps_the_tail_only(root: Path, run_dir: Path) -> None:
    check = inline(root, "import sys\nfor i in range(200000):\n    print(f'line {i}')\n")
    result = run(check=check, root=root, run_dir=run_dir)
    assert result.stdout.endswith("line 199999\n")
    assert len(result.stdout) == len(BANNER.format(stream="stdout", stem=check.stem)) + 2000
    file = run_dir / "checks" / f"{check.stem}.stdout.txt"
    assert file.read_text().count("\n") == 200000


def test_invalid_utf8_output_is_kept_raw_and_decoded_with_replacement(
    root: Path, run_dir: Path
) -> None:
    check = inline(root, "import sys\nsys.stdout.buffer.write(b'ok\\xff!')\n")
    result = run(check=check, root=root, run_dir=run_dir)
    assert result.status == "passed"
    assert result.stdout == "ok\ufffd!"
    assert (run_dir / "checks" / f"{check.stem}.stdout.txt").read_bytes() == b"ok\xff!"


def _gone(pid: int) -> bool:
    """Dead or a zombie waiting to be reaped: either way it runs no more."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in {"Z", "X"}


def test_timeout_kills_the_whole_process_group(root: Path, run_dir: Path) -> None:
    check = inline(
        root,
        """
        import json, subprocess, sys, time
        out = json.load(open(sys.argv[1]))["output_dir"]
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open(out + "/child.pid", "w").write(str(child.pid))
        print("waiting", flush=True)
        time.sleep(60)
        """,
    )
    began = time.monotonic()
    result = run(check=check, root=root, run_dir=run_dir, check_timeout_seconds=1)
    assert time.monotonic() - began < 10
    assert (result.status, result.score) == ("error", 0)
    assert result.error_detail == "Deterministic check timed out after 1 seconds"
    assert result.details == {"timeout_seconds": 1}
    assert result.stdout == "waiting\n"
    pid = int((run_dir / "checks" / check.stem / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)


def test_zero_timeout_means_none(root: Path, run_dir: Path) -> None:
    check = inline(root, "import time\ntime.sleep(1.2)\n")
    result = run(check=check, root=root, run_dir=run_dir, check_timeout_seconds=0)
    assert result.status == "passed"
    assert result.details == {"timeout_seconds": 0}


def test_leftover_background_child_is_killed_when_the_check_ends(root: Path, run_dir: Path) -> None:
    check = inline(
        root,
        """
        import json, subprocess, sys
        out = json.load(open(sys.argv[1]))["output_dir"]
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open(out + "/child.pid", "w").write(str(child.pid))
        """,
    )
    result = run(check=check, root=root, run_dir=run_dir)
    assert result.status == "passed"
    pid = int((run_dir / "checks" / check.stem / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)


@pytest.mark.parametrize(
    ("reason", "text"), [("interrupt", "interrupted"), ("run_timeout", "run timeout reached")]
)
def test_cancel_stops_a_running_check(root: Path, run_dir: Path, reason: Any, text: str) -> None:
    check = inline(
        root,
        """
        import json, sys, time
        out = json.load(open(sys.argv[1]))["output_dir"]
        open(out + "/started", "w").close()
        time.sleep(60)
        """,
    )
    cancel = StopSignal()
    marker = run_dir / "checks" / check.stem / "started"

    def stop_when_started() -> None:
        while not marker.exists():
            time.sleep(0.02)
        cancel.stop(reason=reason)

    threading.Thread(target=stop_when_started, daemon=True).start()
    began = time.monotonic()
    result = run(check=check, root=root, run_dir=run_dir, cancel=cancel)
    assert time.monotonic() - began < 10
    assert (result.status, result.error_detail) == ("error", f"Stopped: {text}")


def test_the_private_temp_dir_is_removed_even_with_files_the_script_left(
    root: Path, run_dir: Path
) -> None:
    check = inline(
        root,
        """
        import os, sys
        here = os.path.dirname(os.path.abspath(sys.argv[0]))
        os.makedirs(os.path.join(here, "junk", "deeper"))
        open(os.path.join(here, "junk", "deeper", "f.txt"), "w").write("x")
        print(here)
        """,
    )
    result = run(check=check, root=root, run_dir=run_dir)
    assert result.status == "passed"
    private = Path(result.stdout.strip())
    assert private.name.startswith(check.stem) and not private.exists()


def test_the_private_temp_dir_of_an_ordinary_check_is_removed(root: Path, run_dir: Path) -> None:
    check = inline(root, "import os, sys\nprint(os.path.dirname(os.path.abspath(sys.argv[0])))\n")
    result = run(check=check, root=root, run_dir=run_dir)
    assert result.status == "passed" and not Path(result.stdout.strip()).exists()


def test_a_frozen_script_emptied_before_execute_is_an_error_not_a_pass(
    project: Callable[..., Path],
) -> None:
    # What runs is the copy frozen when the run was planned; one that is blank all the same
    # (emptied under the run folder) is an error, as a script that cannot start.
    root = project(
        {
            "eval_checks/a.yaml": "schema_version: 1\nid: c1\ndescription: A check.\n"
            + "type: deterministic\nscript_path: rule.py\n",
            "eval_checks/rule.py": "import sys\n",
        },
        config='[core]\noutput_dir = "runs"\n',
    )
    assert eb_process(root, "run").returncode == 0
    (run_dir,) = list((root / "runs").iterdir())
    (snapshot,) = list((run_dir / "stages" / "snapshots").iterdir())
    snapshot.write_bytes(b"")
    assert eb_process(root, "stage", "execute", "--run-dir", str(run_dir)).returncode == 0
    (result,) = json.loads((run_dir / "stages" / "execute.json").read_text())["results"]
    assert result["status"] == "error"
    assert result["error_detail"].startswith(
        f"Deterministic script is blank: {root / 'eval_checks' / 'rule.py'}: "
    )
    scored = eb_process(root, "stage", "score", "--run-dir", str(run_dir))
    assert scored.returncode == 1 and "Passed: no" in scored.stdout


def test_a_script_that_cannot_be_started_stays_the_checks_error(root: Path, run_dir: Path) -> None:
    # Only eb's own writes (the script and context.json under TMPDIR) abort the run
    # (tests/test_write_faults.py); a process that cannot start is this check's error.
    result = run(check=inline(root, "pass"), root=root / "gone", run_dir=run_dir)
    assert result.status == "error"
    assert "No such file or directory" in (result.error_detail or "")
    assert result.details["not_started"] is True
