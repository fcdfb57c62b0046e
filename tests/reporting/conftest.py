"""A real finished run (and a real interrupted one) of a small project, shared by the tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.builders import newest_run_dir

REPO = Path(__file__).resolve().parents[2]

CONFIG = """\
[core]
check_timeout_seconds = 1

[harness]
agent = "standin"
model = "stand-in-model"
reasoning_effort = "low"

[agents.standin]
command = ["{python}", "judge.py"]
model_flag = "--model"
reasoning_effort_flag = ["--effort", "{{effort}}"]
"""

# A judge stand-in that speaks the plain-text dialect: the verdict JSON on stdout.
JUDGE = """\
import json, sys
prompt = sys.argv[-1]
if "PASS-ME" in prompt:
    print(json.dumps({"score": 1, "reason": "The answer is polite."}))
else:
    print(json.dumps({"score": 0, "reason": "The answer <b>ignores</b> the user & is rude.\\nSo: no, 100%."}))
"""

CHECKS = {
    "eval_checks/pass.yaml": """\
schema_version: 1
id: greeting_ok
type: deterministic
description: Passing check.
tags: [fast, unit]
script: print("hello")
""",
    "eval_checks/fail.yaml": """\
schema_version: 1
id: totals_match
type: deterministic
description: Failing check with output.
tags: [unit]
script: |
  import sys
  print("expected 3 got 4 <script>alert(1)</script> \\x1b[31mred\\x1b[0m \\x00 end")
  sys.exit(1)
""",
    "eval_checks/slow.yaml": """\
schema_version: 1
id: slow_thing
type: deterministic
description: Runs past its time limit.
tags: [slow]
script: |
  import time
  time.sleep(30)
""",
    "eval_checks/control.yaml": """\
schema_version: 1
id: planted_defect
type: deterministic
description: Control check; the planted defect must be caught.
expect: fail
script: raise SystemExit(1)
""",
    "eval_checks/judges/polite.yaml": """\
schema_version: 1
id: answer_is_polite
type: harness_judge
description: A judge that fails the answer.
tags: [judge]
instructions: |
  Is the answer polite? Look closely.
""",
    "eval_checks/judges/kind.yaml": """\
schema_version: 1
id: answer_is_kind
type: harness_judge
description: A judge that passes, with a long prompt.
tags: [judge, fast]
instructions: |
  PASS-ME
  {long}
""",
}


@dataclass(frozen=True)
class Run:
    """One finished `eb run`: its process result, report.json object and folders."""

    project: Path
    run_dir: Path
    report: dict[str, Any]
    exit_code: int
    stdout: str
    stderr: str


def eb_env(**extra: str) -> dict[str, str]:
    """The environment for an `eb` child: this checkout importable, no GitHub step summary."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EVAL_BANANA_"))}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def eb_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "eval_banana", *args]


def run_eb(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """Run `eb` as a real process and wait for it."""
    return subprocess.run(
        eb_command(*args),
        cwd=cwd or REPO,
        env=eb_env(**env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def write_project(root: Path, *, checks: dict[str, str] | None = None) -> Path:
    """The fixture project: every status, a control check and two judges."""
    (root / ".eval-banana").mkdir(parents=True, exist_ok=True)
    (root / ".eval-banana" / "config.toml").write_text(CONFIG.format(python=sys.executable))
    (root / "judge.py").write_text(JUDGE)
    long_text = " ".join(f"word{i}" for i in range(1200))
    for relative, text in (CHECKS if checks is None else checks).items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("{long}", long_text))
    return root


def latest_run_dir(project: Path) -> Path:
    return newest_run_dir(project / ".eval-banana" / "results")


def finish(project: Path, completed: subprocess.CompletedProcess[str]) -> Run:
    run_dir = latest_run_dir(project)
    report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    return Run(
        project=project,
        run_dir=run_dir,
        report=report,
        exit_code=completed.returncode,
        stdout=completed.stdout,
        stderr=completed.stderr,
    )


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """A completed run with passed, failed, error, control and judge checks."""
    project = write_project(tmp_path_factory.mktemp("finished") / "proj")
    completed = run_eb("run", "--cwd", str(project))
    assert completed.returncode == 1, completed.stderr
    return finish(project, completed)


ABORT_CHECKS = {
    "eval_checks/a_first.yaml": """\
schema_version: 1
id: waits_forever
type: deterministic
description: Signals that it started, then waits to be stopped.
script: |
  import pathlib, time
  pathlib.Path(r"{marker}").write_text("started")
  time.sleep(60)
""",
    "eval_checks/b_second.yaml": """\
schema_version: 1
id: never_started
type: deterministic
description: Never runs, the run is interrupted first.
tags: [unit]
script: print("unreachable")
""",
    "eval_checks/c_third.yaml": """\
schema_version: 1
id: also_never_started
type: deterministic
description: Never runs either.
script: print("unreachable")
""",
}


@pytest.fixture(scope="session")
def aborted_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """A run interrupted (SIGINT) while its only running check waits: the rest are not run."""
    base = tmp_path_factory.mktemp("aborted")
    marker = base / "started.txt"
    checks = {k: v.replace("{marker}", str(marker)) for k, v in ABORT_CHECKS.items()}
    project = write_project(base / "proj", checks=checks)
    process = subprocess.Popen(
        eb_command(
            "run",
            "--cwd",
            str(project),
            "--max-parallel-checks",
            "1",
            "--result-out",
            str(project / "result.md"),
        ),
        cwd=REPO,
        env=eb_env(EVAL_BANANA_CHECK_TIMEOUT_SECONDS="0"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 3, stderr
    return finish(project, subprocess.CompletedProcess(process.args, 3, stdout, stderr))
