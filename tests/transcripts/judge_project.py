"""A project with one judge whose agent speaks claude's stream-json: a tool call, its result
(holding a secret from the environment), then the verdict. Run by a real `eb run`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.builders import newest_run_dir

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-transcript-secret-0123456789"
VERDICT = {"score": 1, "reason": "The README shows pip install banana."}

AGENT = """\
import json, os, sys
def out(event):
    print(json.dumps(event))
out({"type": "system", "subtype": "init", "session_id": "s"})
out({"type": "assistant", "message": {"content": [
    {"type": "text", "text": "Let me look for the install command."},
    {"type": "tool_use", "id": "toolu_7", "name": "Grep",
     "input": {"pattern": "pip install", "path": "README.md"}}]}})
out({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_7",
    "content": "README.md:3: pip install banana  # token " + os.environ["DEMO_API_KEY"]}]}})
verdict = json.dumps(VERDICT)
out({"type": "assistant", "message": {"content": [{"type": "text", "text": verdict}]}})
out({"type": "result", "subtype": "success", "is_error": False, "result": verdict,
     "usage": {"input_tokens": 5, "output_tokens": 7}})
"""

# A judge that read 150 files (about 2.5 KB each) before its verdict: a transcript of over 300 KB.
LONG_AGENT = """\
import json
def out(event):
    print(json.dumps(event))
for i in range(150):
    out({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": f"t{i}",
        "name": "Read", "input": {"file_path": f"src/mod{i}.py"}}]}})
    out({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": f"t{i}",
        "content": f"# module {i}\\n" + "def f():\\n    return 1\\n" * 120}]}})
verdict = json.dumps({"score": 0, "reason": "module 7 lacks tests"})
out({"type": "result", "subtype": "success", "is_error": False, "result": verdict,
     "usage": {"input_tokens": 1000, "output_tokens": 50}})
"""

CONFIG = """\
[harness]
agent = "streamer"

[agents.streamer]
command = [{python}, "agent.py"]
output_dialect = "claude"
"""

CHECK = """\
schema_version: 1
id: install_documented
type: harness_judge
description: The README explains how to install the tool.
instructions: Decide whether the README documents the install command.
"""


def write_project(root: Path, *, transcripts: bool = True, long: bool = False) -> Path:
    (root / ".eval-banana").mkdir(parents=True)
    config = CONFIG.format(python=json.dumps(sys.executable))
    if not transcripts:
        config = config.replace("[harness]\n", "[harness]\ntranscripts = false\n")
    (root / ".eval-banana" / "config.toml").write_text(config)
    agent = LONG_AGENT if long else AGENT.replace("VERDICT", repr(VERDICT))
    (root / "agent.py").write_text(agent)
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "install.yaml").write_text(CHECK)
    (root / "README.md").write_text("# banana\n\n pip install banana\n")
    return root


def run_eb(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EVAL_BANANA_"))}
    env.update(PYTHONPATH=str(REPO), DEMO_API_KEY=SECRET)
    return subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_dir_of(root: Path) -> Path:
    return newest_run_dir(root / ".eval-banana" / "results")


def project_with_agent(root: Path, *, agent: str, dialect: str = "claude") -> Path:
    """The judge project with its agent replaced by the script `agent`, read in `dialect`."""
    write_project(root)
    if dialect != "claude":
        config = root / ".eval-banana" / "config.toml"
        config.write_text(config.read_text().replace('"claude"', json.dumps(dialect)))
    (root / "agent.py").write_text(agent)
    return root


def judged(root: Path, *, exit_code: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run eb over `root`, whose exit code must be `exit_code`: its one check's result in
    report.json and the events of that check's transcript."""
    completed = run_eb(root)
    assert completed.returncode == exit_code, completed.stderr
    run_dir = run_dir_of(root)
    (check,) = json.loads((run_dir / "report.json").read_text())["checks"]
    text = (run_dir / check["details"]["transcript_path"]).read_text(encoding="utf-8")
    return check, [json.loads(line) for line in text.splitlines()]
