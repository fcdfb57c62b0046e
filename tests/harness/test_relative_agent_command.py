"""An agent command given as a path relative to the project (`command = ["tools/agent.sh"]`)
works wherever eb is started from: the agent runs in the project (or its copy), and the guard
looks for the file there too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Answers with where it runs and what it was started as, so the test can see both.
_AGENT = """\
#!/bin/sh
printf '{"score": 1, "reason": "cwd=%s argv0=%s"}\\n' "$(pwd)" "$0"
"""


def _project(root: Path) -> Path:
    (root / "eval_checks").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "tools").mkdir()
    agent = root / "tools" / "agent.sh"
    agent.write_text(_AGENT)
    agent.chmod(0o755)
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\n\n[harness]\nagent = "local"\n\n'
        '[agents.local]\ncommand = ["tools/agent.sh"]\nmodel_flag = ""\n'
    )
    (root / "eval_checks" / "judge.yaml").write_text(
        "schema_version: 1\nid: judge\ntype: harness_judge\ndescription: j.\n"
        "instructions: Score 1.\n"
    )
    return root


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--no-html", "--cache", "off", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def _reason(root: Path) -> str:
    run_dir = max((root / "runs").iterdir(), key=lambda path: path.stat().st_mtime_ns)
    report = json.loads((run_dir / "report.json").read_text())
    (judge,) = report["checks"]
    assert judge["status"] == "passed", judge
    return str(judge["reason"])


@pytest.mark.parametrize("mode", ["detect", "copy"])
def test_a_relative_agent_command_runs_from_a_subfolder_and_with_cwd(
    tmp_path: Path, mode: str
) -> None:
    root = _project(tmp_path / "proj")
    from_subfolder = _run("--isolation", mode, cwd=root / "docs")
    assert from_subfolder.returncode == 0, from_subfolder.stdout + from_subfolder.stderr
    reason = _reason(root)
    # The agent starts as written, in the project (or in its copy, which holds the script).
    assert reason.endswith(" argv0=tools/agent.sh"), reason
    if mode == "detect":
        assert reason.startswith(f"cwd={root.resolve()} "), reason
    else:
        assert not reason.startswith(f"cwd={root.resolve()} "), reason
    elsewhere = _run("--cwd", str(root), "--isolation", mode, cwd=tmp_path)
    assert elsewhere.returncode == 0, elsewhere.stdout + elsewhere.stderr


def test_a_missing_relative_agent_command_is_named_as_a_file_of_the_project(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path / "proj")
    (root / "tools" / "agent.sh").unlink()
    done = _run(cwd=root / "docs")
    assert done.returncode == 2
    assert (
        "Harness agent 'local' needs the command 'tools/agent.sh', which is not an executable "
        f"file at {root / 'tools' / 'agent.sh'} (a relative path is taken from the project root)"
    ) in done.stderr
    assert "PATH" not in done.stderr
