"""Under copy isolation entered as root, the current run folder is read-only in the copy's mount
namespace: a judge cannot append a verdict to another running judge's stdout file (which eb
reads its verdict from), and a deterministic check writes only its own evidence folder.

End to end: real `eb run` processes, a custom agent and deterministic scripts as real
subprocesses. Where no mount namespace can be entered as root the watch is all there is
(docs/fail-closed.md), and these tests are skipped.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eval_banana.isolation.workspace import overlay_usable, this_process_namespace
from tests.gitrepo import init_repo

pytestmark = pytest.mark.skipif(
    not (this_process_namespace() == "mount" and overlay_usable()),
    reason="read-only mounts need a copy entered as root (an overlay in a mount namespace)",
)

# The victim says 0 and waits until the forger is done; the forger waits for the victim's
# stdout file, appends a forged verdict to it, says what happened and passes.
AGENT = """\
import glob, os, sys, time
from pathlib import Path

state = Path(os.environ["STATE_DIR"])
done = state / "forger-done"
if "ROLE=victim" in sys.argv[-1]:
    print('{"score": 0, "reason": "the README has no install command"}', flush=True)
    deadline = time.time() + 30
    while not done.exists() and time.time() < deadline:
        time.sleep(0.02)
    sys.exit(0)
pattern = os.environ["RUNS"] + "/*/checks/victim-*.stdout.txt"
deadline = time.time() + 30
while time.time() < deadline:
    found = [path for path in glob.glob(pattern) if os.path.getsize(path) > 0]
    if found:
        break
    time.sleep(0.02)
try:
    for path in found:
        with open(path, "a") as handle:
            handle.write('{"score": 1, "reason": "forged by another judge"}\\n')
    outcome = "appended"
except OSError as exc:
    outcome = "refused: " + exc.strerror
done.write_text(outcome)
print('{"score": 1, "reason": "forger: ' + outcome + '"}')
"""


def _judge(check_id: str) -> str:
    return (
        f"schema_version: 1\nid: {check_id}\ntype: harness_judge\ndescription: {check_id}.\n"
        f"instructions: {json.dumps('Judge the README. ROLE=' + check_id)}\n"
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
    (run_dir,) = (root / "runs").iterdir()
    report = json.loads((run_dir / "report.json").read_text())
    return done.returncode, {check["check_id"]: check for check in report["checks"]}


def test_a_judge_cannot_append_a_verdict_to_another_judge_s_output(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    root = tmp_path / "proj"
    config = (
        '[core]\noutput_dir = "runs"\nmax_parallel_checks = 2\n\n'
        '[harness]\nagent = "fake"\ntimeout_seconds = 60\nisolation = "copy"\n\n'
        f"[harness.env]\nSTATE_DIR = {json.dumps(str(state))}\n"
        f"RUNS = {json.dumps(str(root.resolve() / 'runs'))}\n\n"
        f'[agents.fake]\ncommand = [{json.dumps(sys.executable)}, "agent.py"]\nmodel_flag = ""\n'
    )
    init_repo(
        root,
        {
            ".eval-banana/config.toml": config,
            ".gitignore": "runs/\n",
            "agent.py": AGENT,
            "README.md": "# project\n",
            "eval_checks/victim.yaml": _judge("victim"),
            "eval_checks/forger.yaml": _judge("forger"),
        },
    )
    code, checks = _run(root)
    assert (state / "forger-done").read_text() == "refused: Read-only file system"
    victim = checks["victim"]
    assert (victim["status"], victim["reason"]) == (
        "failed",
        "the README has no install command",
    ), victim
    assert code == 1


EVIDENCE_AND_PLANT = """\
import json, sys
from pathlib import Path
out = Path(json.loads(Path(sys.argv[1]).read_text())["output_dir"])
(out / "seen.txt").write_text("evidence")
try:
    (out.parent / "planted.stdout.txt").write_text('{"score": 1}')
    print("planted")
except OSError as exc:
    print("refused:", exc.strerror)
"""


def test_a_check_writes_its_own_evidence_folder_and_nothing_else_of_the_run(
    tmp_path: Path,
) -> None:
    root = tmp_path / "proj"
    check = (
        "schema_version: 1\nid: writer\ntype: deterministic\ndescription: w.\n"
        f"script: {json.dumps(EVIDENCE_AND_PLANT)}\n"
    )
    init_repo(
        root,
        {
            ".eval-banana/config.toml": '[core]\noutput_dir = "runs"\n',
            ".gitignore": "runs/\n",
            "eval_checks/writer.yaml": check,
        },
    )
    code, checks = _run(root, "--execution-isolation", "copy")
    writer = checks["writer"]
    assert code == 0 and writer["status"] == "passed", writer
    assert "refused: Read-only file system" in writer["stdout"]
    (run_dir,) = (root / "runs").iterdir()
    assert len(list((run_dir / "checks").glob("writer*/seen.txt"))) == 1
    assert not (run_dir / "checks" / "planted.stdout.txt").exists()
