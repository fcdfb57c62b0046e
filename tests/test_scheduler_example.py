"""The tiny scheduler in examples/scheduler/ (docs/scale-out.md) runs as a user would run it:
it plans, starts three `eb run --select` workers and merges them, and its exit code and merged
report are the ones a single `eb run` gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.gitrepo import init_repo
from tests.test_plan_select import _files
from tests.test_run_selection import ran

# The integrations suite (`pytest -m integrations`, which .ci/run runs): outside tools
# installed and driven for real, left out of the README's command to keep it under ten minutes.
pytestmark = pytest.mark.integrations

SCHEDULER = REPO / "examples" / "scheduler" / "scheduler.py"
SCALE_OUT_DOC = REPO / "docs" / "scale-out.md"


def _scheduler(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCHEDULER), *args],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_the_scheduler_runs_three_parts_and_merges_them(tmp_path: Path) -> None:
    project = init_repo(tmp_path / "proj", _files())
    one = subprocess.run(
        [
            sys.executable,
            "-m",
            "eval_banana",
            "run",
            "--cwd",
            str(project),
            "--output-dir",
            str(tmp_path / "one"),
            "--flat-output",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert one.returncode == 1, one.stderr
    for path in (project / "ran").iterdir():
        path.unlink()
    done = _scheduler("--project", str(project), "--workers", "3", "--out", str(tmp_path / "s"))
    assert done.returncode == 1, done.stdout + done.stderr  # the merged verdict: a check fails
    plan = json.loads((tmp_path / "s" / "plan.json").read_text())
    assert plan["shards"] == 3
    for index in (1, 2, 3):
        assert f"part {index}/3 finished with exit code" in done.stdout
        config = json.loads(
            (tmp_path / "s" / f"part-{index}" / "stages" / "config.json").read_text()
        )
        part = [entry["id"] for entry in plan["checks"] if entry["shard"] == index]
        assert config["selection"]["select"]["ids"] == part
    merged = json.loads((tmp_path / "s" / "merged" / "report.json").read_text())
    alone = json.loads((tmp_path / "one" / "report.json").read_text())
    assert [c["check_id"] for c in merged["checks"]] == [c["check_id"] for c in alone["checks"]]
    for key in ("total_checks", "passed_checks", "failed_checks", "run_passed", "skipped"):
        assert merged[key] == alone[key], key
    assert ran(project) == sorted(entry["id"] for entry in plan["checks"])  # each ran once


def test_the_scheduler_stops_on_a_setup_error(tmp_path: Path) -> None:
    files = _files()
    files["eval_checks/broken.yaml"] = "schema_version: 1\nid: broken\ntype: nope\n"
    project = init_repo(tmp_path / "proj", files)
    done = _scheduler("--project", str(project), "--out", str(tmp_path / "s"))
    assert done.returncode == 2
    assert "broken.yaml" in done.stderr
    assert not (tmp_path / "s" / "part-1").exists()  # no worker was started


def test_the_scheduler_refuses_an_out_folder_that_exists(tmp_path: Path) -> None:
    """A second schedule into the same --out is refused with the documented exit code 2,
    naming the folder, before anything is planned or started (not a traceback, exit 1)."""
    project = init_repo(tmp_path / "proj", _files())
    out = tmp_path / "s"
    out.mkdir()
    done = _scheduler("--project", str(project), "--out", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"--out {out} already exists" in done.stderr
    assert "Traceback" not in done.stderr
    assert list(out.iterdir()) == [] and not (project / "ran").exists()


def test_the_scale_out_page_shows_the_scheduler_as_it_is() -> None:
    text = SCALE_OUT_DOC.read_text()
    assert "examples/scheduler/scheduler.py" in text
    source = SCHEDULER.read_text()
    # The commands the page walks through are the ones the script runs.
    for words in ('"--balance",\n            "history"', '"--select"', '"merge"'):
        assert words in source
    for words in ("eb plan --shards 3 --balance history", "eb run --select", "eb merge"):
        assert words in text
