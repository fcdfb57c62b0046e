"""eb's note of the files it wrote into the project (`.eval-banana/written.json`) cannot make a
project file eb's: a check or a judge that writes the note while checks run is an `error` and
the note goes; a note eb did not sign (a tool, a person, a process between runs) notes nothing.
Otherwise a noted `src/app.py` would be left out of a judge's isolation watch, of what its copy's
changes count and of the verdict cache's key. End to end through `eb run`, with a stand-in
agent and real git repositories."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import git
from tests.isolation.rig import run_checks, started_process, wait_until_started

BUGGY = "def add(a, b):\n    return a - b\n"
RECORD = ".eval-banana/written.json"

# A judge of add(): STEP=note writes a note of src/app.py as it is into eb's record, STEP=edit
# fixes the code it judges first; then it answers honestly about what it reads.
AGENT = """\
import hashlib, json, os
step = os.environ.get("STEP", "honest")
path = "src/app.py"
if step == "note":
    data = open(path, "rb").read()
    blob = hashlib.sha1(b"blob %d\\0" % len(data) + data).hexdigest()
    note = {"path": path, "size": len(data), "blob_id": blob}
    json.dump({"$schema": "https://eval-banana.dev/schemas/written.schema.json",
               "schema_version": 1, "tool_version": "0", "updated_at": "2026-01-01T00:00:00Z",
               "files": [note]}, open(".eval-banana/written.json", "w"))
if step == "edit":
    text = open(path).read().replace("a - b", "a + b")
    open(path, "w").write(text)
adds = "a + b" in open(path).read()
print(json.dumps({"score": int(adds), "reason": "add adds" if adds else "add subtracts"}))
"""

# A deterministic check (nothing isolates those by default) that notes src/app.py.
PLANTER = """\
import hashlib, json, os, sys
root = json.load(open(sys.argv[1]))["project_root"]
data = open(os.path.join(root, "src/app.py"), "rb").read()
blob = hashlib.sha1(b"blob %d\\0" % len(data) + data).hexdigest()
note = {"path": "src/app.py", "size": len(data), "blob_id": blob}
json.dump({"$schema": "https://eval-banana.dev/schemas/written.schema.json",
           "schema_version": 1, "tool_version": "0", "updated_at": "2026-01-01T00:00:00Z",
           "files": [note]}, open(os.path.join(root, ".eval-banana/written.json"), "w"))
"""


def _project(root: Path, *, mode: str, planter: bool = False) -> Path:
    (root / "eval_checks").mkdir(parents=True)
    (root / "src").mkdir()
    (root / ".eval-banana").mkdir()
    agent = root.parent / "agent.py"
    agent.write_text(AGENT)
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\nmax_parallel_checks = 1\n\n'
        f'[harness]\nagent = "judge"\nisolation = "{mode}"\n\n[cache]\nmode = "on"\n\n'
        f"[agents.judge]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(agent))}]\n"
        'model_flag = ""\n'
    )
    (root / "src" / "app.py").write_text(BUGGY)
    (root / "eval_checks" / "judge_add.yaml").write_text(
        "schema_version: 1\nid: judge_add\ntype: harness_judge\ndescription: add() adds.\n"
        "instructions: Score 1 only if add returns a + b.\n"
    )
    if planter:
        (root / "eval_checks" / "a_planter.yaml").write_text(
            "schema_version: 1\nid: a_planter\ntype: deterministic\ndescription: p.\n"
            f"script: {json.dumps(PLANTER)}\n"
        )
    (root / ".gitignore").write_text("runs/\nreports/\n.eval-banana/cache/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


def _forge_note(root: Path, path: str = "src/app.py") -> None:
    """Note `path` as it is in eb's record, as a tool or a person could between runs."""
    data = (root / path).read_bytes()
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    document = {
        "$schema": "https://eval-banana.dev/schemas/written.schema.json",
        "schema_version": 1,
        "tool_version": "0",
        "updated_at": "2026-01-01T00:00:00Z",
        "files": [{"path": path, "size": len(data), "blob_id": blob}],
    }
    (root / RECORD).write_text(json.dumps(document))


def _judge(root: Path, step: str, *args: str) -> tuple[int, dict[str, Any]]:
    code, checks = run_checks(root, *args, env={"STEP": step})
    return code, checks["judge_add"]


def _the_edit_is_an_error_and_the_buggy_code_is_judged_again(root: Path, *, mode: str) -> None:
    """The judge fixes src/app.py (in the project, or in its copy) and passes: an isolation
    error either way; with the file buggy again, the honest judge fails it (no stored pass)."""
    code, judge = _judge(root, "edit", "--cache", "refresh")  # not the verdict stored before
    assert code == 1 and judge["status"] == "error", judge
    assert judge["details"]["isolation"]["changed"] == ["src/app.py"]
    if mode == "detect":
        assert judge["error_detail"].startswith("The project changed while this judge ran: ")
        git(root, "checkout", "-q", "src/app.py")
    else:
        assert judge["error_detail"].startswith("The judge changed its copy of the project: ")
    assert (root / "src" / "app.py").read_text() == BUGGY
    code, judge = _judge(root, "honest")
    assert code == 1 and judge["status"] == "failed", judge


def test_a_judge_that_notes_a_project_file_as_eb_s_is_an_error(tmp_path: Path) -> None:
    # (A judge in a copy writes the note into its copy, gone with it.)
    root = _project(tmp_path / "proj", mode="detect")
    code, judge = _judge(root, "note")
    assert code == 1 and judge["status"] == "error", judge
    assert judge["error_detail"].startswith(
        f"eb's own files changed while this judge ran: {RECORD}"
    )
    assert judge["details"]["isolation"]["state_changed"] == [RECORD]
    assert not (root / RECORD).exists()  # the note goes, as a changed cache entry does
    _the_edit_is_an_error_and_the_buggy_code_is_judged_again(root, mode="detect")


@pytest.mark.parametrize("mode", ["detect", "copy"])
def test_a_check_that_notes_a_project_file_as_eb_s_is_an_error(tmp_path: Path, mode: str) -> None:
    root = _project(tmp_path / "proj", mode=mode, planter=True)
    code, checks = run_checks(root, env={"STEP": "honest"})
    assert code == 1
    planter = checks["a_planter"]
    assert planter["status"] == "error", planter
    assert planter["error_detail"].startswith(
        f"eb's own files changed while this check ran: {RECORD}"
    )
    assert not (root / RECORD).exists()
    (root / "eval_checks" / "a_planter.yaml").unlink()
    _the_edit_is_an_error_and_the_buggy_code_is_judged_again(root, mode=mode)


@pytest.mark.parametrize("mode", ["detect", "copy"])
def test_a_note_eb_did_not_sign_makes_no_file_eb_s(tmp_path: Path, mode: str) -> None:
    # Written between runs, where no watch sees it: it notes nothing, with a warning.
    root = _project(tmp_path / "proj", mode=mode)
    assert _judge(root, "honest")[1]["status"] == "failed"  # the cache has its secret now
    _forge_note(root)
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), "--no-html"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "STEP": "edit"},
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"Ignored {root / RECORD}: it has no MAC" in done.stderr
    assert "the files it notes count as project files (src/app.py)" in done.stderr
    if mode == "detect":
        git(root, "checkout", "-q", "src/app.py")
    _forge_note(root)
    _the_edit_is_an_error_and_the_buggy_code_is_judged_again(root, mode=mode)


def test_a_note_eb_did_not_sign_leaves_no_file_out_of_the_cache_key(tmp_path: Path) -> None:
    # A check that no note under notes/ says BUG passes while there are none. A note of a new
    # notes/new.txt saying BUG, were it trusted, would leave it out of the check's key: the
    # stored pass would be reused.
    root = _project(tmp_path / "proj", mode="off")
    (root / "eval_checks" / "judge_add.yaml").unlink()
    (root / "notes").mkdir()
    (root / "notes" / "old.txt").write_text("all good\n")
    script = (
        "import json, sys\nfrom pathlib import Path\n"
        "root = Path(json.load(open(sys.argv[1]))['project_root'])\n"
        "bad = [p.name for p in sorted((root / 'notes').glob('*.txt')) if 'BUG' in p.read_text()]\n"
        "assert not bad, f'notes saying BUG: {bad}'\n"
    )
    (root / "eval_checks" / "no_bugs.yaml").write_text(
        "schema_version: 1\nid: no_bugs\ntype: deterministic\ndescription: n.\n"
        f'inputs: ["notes/*.txt"]\nscript: {json.dumps(script)}\n'
    )
    code, checks = run_checks(root)
    assert code == 0 and checks["no_bugs"]["status"] == "passed"
    (root / "notes" / "new.txt").write_text("BUG: add subtracts\n")
    _forge_note(root, "notes/new.txt")
    code, checks = run_checks(root)
    assert checks["no_bugs"]["details"]["cache"]["hit"] is False
    assert code == 1 and checks["no_bugs"]["status"] == "failed", checks["no_bugs"]


@pytest.mark.concurrent
def test_a_run_ending_beside_another_run_s_checks_notes_nothing(tmp_path: Path) -> None:
    # Run A writes its JUnit file into the project while run B's judge runs: noting it then
    # would change B's watched state under B's judge. A leaves the note out; B passes.
    root = _project(tmp_path / "proj", mode="detect")
    (root / "src" / "app.py").write_text(BUGGY.replace("a - b", "a + b"))
    git(root, "commit", "-q", "-am", "fixed")
    wait = root.parent / "wait.py"
    wait.write_text(
        "import os, sys, time\n"
        "open(os.environ['STARTED_FILE'], 'w').write('judging')\n"
        "deadline = time.time() + 60\n"
        "while not os.path.exists(os.environ['GO_FILE']) and time.time() < deadline:\n"
        "    time.sleep(0.02)\n"
        "exec(open(sys.argv[1]).read())\n"
    )
    config = root / ".eval-banana" / "config.toml"
    agent = json.dumps(str(root.parent / "agent.py"))
    config.write_text(config.read_text().replace(agent, f"{json.dumps(str(wait))}, {agent}"))
    (root / "eval_checks" / "quick.yaml").write_text(
        "schema_version: 1\nid: quick\ntype: deterministic\ndescription: q.\nscript: pass\n"
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "quick")
    started, go = tmp_path / "started", tmp_path / "go"
    command = [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), "--no-html"]
    env = {**os.environ, "STARTED_FILE": str(started), "GO_FILE": str(go)}
    run_b = started_process([*command, "--check-id", "judge_add"], env=env)
    try:
        wait_until_started(process=run_b, started=started)
        run_a = subprocess.run(
            [*command, "--check-id", "quick", "--output-dir", str(tmp_path / "out-a")]
            + ["--junit-xml", str(root / "reports" / "a-junit.xml")],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (root / "reports" / "a-junit.xml").is_file(), run_a.stdout + run_a.stderr
        assert not (root / RECORD).exists()
    finally:
        go.write_text("go")
        out, err = run_b.communicate(timeout=120)
    assert run_b.returncode == 0, out + err
    # Alone, a run notes what it wrote.
    run_checks(root, "--check-id", "quick", "--junit-xml", str(root / "reports" / "b-junit.xml"))
    assert "reports/b-junit.xml" in (root / RECORD).read_text()
