"""A check cannot make a folder of the project eb's own by writing eb's mark into it: only the
folders that held the mark before the checks started are excused (core/ownmark.py `OwnMarks`),
through `eb run` processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.isolation.rig import run_checks

CONFIG_STAGE = {"$schema": "https://eval-banana.dev/schemas/stages/config.schema.json"}
# What makes a folder eb's (core/ownmark.py): a run folder's config stage, or the mark file
# eb writes into a cache, history or calibration folder.
MARKS = {
    "run folder": ("src/stages/config.json", json.dumps(CONFIG_STAGE)),
    "cache folder": ("src/.eval-banana-folder", "eval-banana folder: cache\n"),
}

# Plants FORGE_TEXT at FORGE_MARK (or takes the mark at FORGE_UNMARK away), then rewrites the
# file it judges and says all is well. It writes below FORGE_ROOT: the project itself, even
# when it runs in a copy.
FORGING = """\
import os
from pathlib import Path
root = Path(os.environ["FORGE_ROOT"])
mark = root / os.environ["FORGE_MARK"]
mark.parent.mkdir(parents=True, exist_ok=True)
mark.write_text(os.environ["FORGE_TEXT"])
if os.environ.get("FORGE_UNMARK"):
    (root / os.environ["FORGE_UNMARK"]).unlink()
(root / "src/app.py").write_text("def add(a, b):\\n    return a + b\\n")
print('{"score": 1, "reason": "add adds"}')
"""


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _project(root: Path, *, git: bool, check: str, config: str = "") -> Path:
    """A project whose one check (`check`: its YAML after the description) is judged by an
    agent running FORGING (`forge.py`, beside the project)."""
    (root / "eval_checks").mkdir(parents=True)
    (root / ".eval-banana").mkdir()
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def add(a, b):\n    return a - b\n")
    forge = root.parent / "forge.py"
    forge.write_text(FORGING)
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\n[cache]\nmode = "off"\n\n'
        '[harness]\nagent = "forger"\n' + config + "\n\n"
        f"[agents.forger]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(forge))}]\n"
        'model_flag = ""\n'
    )
    (root / "eval_checks" / "c.yaml").write_text(
        f"schema_version: 1\nid: c\ndescription: c.\n{check}"
    )
    if git:
        (root / ".gitignore").write_text("runs/\n.eval-banana/history/\n")
        _git(root, "init", "-q")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", "start")
    return root


JUDGE = "type: harness_judge\ninstructions: Score 1 if add adds.\n"


def _forging(*, root: Path, mark: str, text: str, unmark: str = "") -> dict[str, str]:
    return {"FORGE_ROOT": str(root), "FORGE_MARK": mark, "FORGE_TEXT": text, "FORGE_UNMARK": unmark}


@pytest.mark.parametrize("kind", sorted(MARKS))
@pytest.mark.parametrize(
    ("isolation", "git"),
    [("detect", True), ("detect", False), ("copy", True)],
    ids=["detect-git", "detect-plain", "copy-git"],
)
def test_a_judge_that_plants_eb_s_mark_is_still_charged_with_its_rewrite(
    tmp_path: Path, kind: str, isolation: str, git: bool
) -> None:
    mark, text = MARKS[kind]
    root = _project(
        tmp_path / "proj",
        git=git,
        check=JUDGE,
        config=f'isolation = "{isolation}"',
    )
    code, checks = run_checks(root, env=_forging(root=root, mark=mark, text=text))
    assert (root / "src/app.py").read_text().endswith("a + b\n")  # it did rewrite it
    judge = checks["c"]
    assert code == 1 and judge["status"] == "error", judge
    assert judge["details"]["error_class"] == "isolation"
    # Under copy it wrote into the project itself, by its absolute path.
    shown = (
        "The project changed while this judge ran: "
        if isolation == "detect"
        else "The project changed while this judge ran in its copy: "
    )
    assert judge["error_detail"].startswith(shown), judge["error_detail"]
    # Both the rewrite and the mark it planted are named: the mark is a new file like any other.
    assert "src/app.py" in judge["error_detail"] and mark in judge["error_detail"]


@pytest.mark.parametrize("kind", sorted(MARKS))
def test_a_watched_check_that_plants_eb_s_mark_is_still_charged_with_its_rewrite(
    tmp_path: Path, kind: str
) -> None:
    mark, text = MARKS[kind]
    script = f"import runpy\nrunpy.run_path({str(tmp_path / 'forge.py')!r})\n"
    root = _project(
        tmp_path / "proj",
        git=True,
        check=f"type: deterministic\nscript: {json.dumps(script)}\n",
        config='\n[execution]\nisolation = "detect"',
    )
    code, checks = run_checks(root, env=_forging(root=root, mark=mark, text=text))
    check = checks["c"]
    assert code == 1 and check["status"] == "error", check
    assert check["error_detail"].startswith("The project changed while this check ran: ")
    assert "src/app.py" in check["error_detail"] and mark in check["error_detail"]


def test_a_judge_that_removes_an_old_run_folder_s_mark_is_charged_with_what_it_holds(
    tmp_path: Path,
) -> None:
    # An earlier run sent into the project (`--output-dir ci-out`), which git does not ignore:
    # eb's, never the project's. A judge that takes its mark away makes its files the project's.
    root = _project(tmp_path / "proj", git=True, check=JUDGE)
    (root / "ci-out/r1/stages").mkdir(parents=True)
    (root / "ci-out/r1/stages/config.json").write_text(json.dumps(CONFIG_STAGE))
    (root / "ci-out/r1/report.json").write_text("{}\n")
    (root / "src/app.py").write_text("def add(a, b):\n    return a + b\n")  # no rewrite
    forging = _forging(
        root=root,
        mark="ci-out/r1/notes.txt",
        text="planted\n",
        unmark="ci-out/r1/stages/config.json",
    )
    code, checks = run_checks(root, env=forging)
    judge = checks["c"]
    assert code == 1 and judge["status"] == "error", judge
    assert "ci-out/r1/notes.txt" in judge["error_detail"], judge["error_detail"]


HONEST = """\
import sys
from pathlib import Path
good = "a + b" in Path("src/app.py").read_text()
print('{"score": %d, "reason": "read it"}' % good)
"""


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_an_honest_judge_beside_eb_s_own_folders_in_the_project_passes(
    tmp_path: Path, git: bool
) -> None:
    root = _project(tmp_path / "proj", git=git, check="type: harness_judge\ninstructions: judge\n")
    (root / "src/app.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "forge.py").write_text(HONEST)
    # Folders eb made before this run, inside the project where git does not ignore them: a
    # run sent to `--output-dir ci-out` (a real one), a cache folder a changed `[cache] dir`
    # left behind.
    earlier = subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), "--no-html"]
        + ["--output-dir", str(root / "ci-out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert earlier.returncode == 0, earlier.stdout + earlier.stderr
    (root / "old-cache").mkdir()
    (root / "old-cache/.eval-banana-folder").write_text("eval-banana folder: cache\n")
    (root / "old-cache/entry.json").write_text("{}\n")
    for isolation in ("detect", "copy"):
        code, checks = run_checks(root, "--isolation", isolation)
        judge = checks["c"]
        assert code == 0 and judge["status"] == "passed", judge
        assert judge["details"]["isolation"]["changed"] == []
    # This run's own folder inside the project, where its earlier runs lie too.
    code, _ = run_checks(root, "--output-dir", str(root / "ci-out"))
    assert code == 0
