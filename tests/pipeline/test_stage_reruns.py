"""Rerunning stages as users do: each `eb stage <name>` as a fresh process, selections, status.

These are the make-style promises: a rerun of one stage reproduces what the full run wrote, a
selection given to a stage rerun is honoured, and `eb status` says which files are stale for
every reason a file can go stale (an upstream file, the config file, a check file, a script).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, STANDIN_AGENTS, judge_yaml

DEMO = REPO / "examples" / "demo"
STAGES = ("config", "discover", "validate", "guard", "execute", "score", "report")


def _eb(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`eb` as a fresh interpreter, with the stand-in agents first on PATH."""
    environ = dict(os.environ)
    environ["PATH"] = f"{STANDIN_AGENTS}{os.pathsep}{environ['PATH']}"
    return subprocess.run(
        [sys.executable, "-m", "eval_banana", *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=180,
    )


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """The bundled demo (deterministic and assertions checks) plus a judge on a stand-in agent."""
    root = tmp_path / "demo"
    shutil.copytree(DEMO, root, ignore=shutil.ignore_patterns(".eval-banana"))
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\n\n[harness]\nagent = "claude"\ntimeout_seconds = 60\n'
    )
    (root / "eval_checks" / "judged.yaml").write_text(
        judge_yaml("judged", instructions="Is the README kind?\nstandin: score=1 reason=kind")
    )
    return root


def _only_run(root: Path) -> Path:
    (run_dir,) = [path for path in (root / "runs").iterdir() if path.is_dir()]
    return run_dir


def _outcomes(run_dir: Path) -> dict[str, tuple[Any, ...]]:
    report = json.loads((run_dir / "report.json").read_text())
    return {
        check["check_id"]: (
            check["check_type"],
            check["status"],
            check["score"],
            check["reason"],
            check["check_definition_sha256"],
        )
        for check in report["checks"]
    }


def _totals(run_dir: Path) -> dict[str, Any]:
    score = json.loads((run_dir / "stages" / "score.json").read_text())
    keys = ("total_checks", "passed_checks", "failed_checks", "errored_checks", "run_passed")
    return {key: score[key] for key in keys}


@pytest.mark.slow
def test_each_stage_rerun_in_a_fresh_process_reproduces_the_full_run(demo: Path) -> None:
    full = _eb("run", "--cwd", str(demo))
    assert full.returncode == 0, full.stdout + full.stderr
    run_dir = _only_run(demo)
    types = {outcome[0] for outcome in _outcomes(run_dir).values()}
    assert types == {"deterministic", "assertions", "harness_judge"}
    expected_outcomes, expected_totals = _outcomes(run_dir), _totals(run_dir)
    for stage in STAGES:
        done = _eb("stage", stage, "--run-dir", str(run_dir))
        assert done.returncode == 0, f"eb stage {stage}: {done.stdout}{done.stderr}"
        assert "Traceback" not in done.stderr
    results = json.loads((run_dir / "stages" / "execute.json").read_text())["results"]
    assert all(result["status"] == "passed" for result in results), results
    assert _outcomes(run_dir) == expected_outcomes
    assert _totals(run_dir) == expected_totals
    status = _eb("status", "--run-dir", str(run_dir))
    assert status.returncode == 0, status.stdout


def _status_rows(run_dir: Path) -> dict[str, str]:
    done = _eb("status", "--run-dir", str(run_dir))
    rows = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    assert done.returncode == (0 if all(r.split()[2] == "ok" for r in rows.values()) else 1)
    return rows


def _state(row: str) -> str:
    return row.split()[2]


@pytest.mark.slow
def test_status_follows_edits_of_check_files_and_scripts_down_the_whole_chain(
    demo: Path,
) -> None:
    assert _eb("run", "--cwd", str(demo)).returncode == 0
    run_dir = _only_run(demo)
    assert {_state(row) for row in _status_rows(run_dir).values()} == {"ok"}

    check_file = demo / "eval_checks" / "readme_exists.yaml"
    check_file.write_text(check_file.read_text().replace("description: ", "description: Now, "))
    rows = _status_rows(run_dir)
    assert _state(rows["config"]) == "ok"
    assert _state(rows["discover"]) == "stale" and "readme_exists.yaml changed" in rows["discover"]
    assert _state(rows["validate"]) == "stale" and "readme_exists.yaml changed" in rows["validate"]
    for later in ("guard", "execute", "score", "report"):
        assert _state(rows[later]) == "stale", rows[later]

    # Rebuilding discover and validate leaves the rest stale: their inputs changed.
    assert _eb("stage", "discover", "--run-dir", str(run_dir)).returncode == 0
    assert _eb("stage", "validate", "--run-dir", str(run_dir)).returncode == 0
    rows = _status_rows(run_dir)
    assert [_state(rows[s]) for s in STAGES] == ["ok"] * 3 + ["stale"] * 4
    assert "stages/plan.json changed" in rows["guard"]
    assert "stages/execute.json is stale" in rows["score"]

    for stage in ("guard", "execute", "score", "report"):
        assert _eb("stage", stage, "--run-dir", str(run_dir)).returncode == 0
    assert {_state(row) for row in _status_rows(run_dir).values()} == {"ok"}

    # A referenced script is an input of the plan, though no check file changed.
    script = demo / "src" / "report" / "eval_checks" / "check_sections.py"
    script.write_text(script.read_text() + "\n# edited\n")
    rows = _status_rows(run_dir)
    assert _state(rows["discover"]) == "ok"
    assert _state(rows["validate"]) == "stale" and "check_sections.py changed" in rows["validate"]
    assert _state(rows["report"]) == "stale"


def test_status_sees_a_changed_config_file_and_added_check_files(
    demo: Path, eb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{STANDIN_AGENTS}{os.pathsep}{os.environ['PATH']}")
    assert eb("run", "--cwd", str(demo), "--check-dir", "eval_checks").exit_code == 0
    run_dir = _only_run(demo)
    (demo / "eval_checks" / "new.yaml").write_text(
        judge_yaml("new_one", instructions="standin: score=1")
    )
    rows = {
        line.split()[0]: line
        for line in eb("status", "--run-dir", str(run_dir)).stdout.splitlines()[1:]
    }
    assert "new.yaml added" in rows["discover"]
    config = demo / ".eval-banana" / "config.toml"
    config.write_text(config.read_text().replace("timeout_seconds = 60", "timeout_seconds = 61"))
    done = eb("status", "--run-dir", str(run_dir))
    rows = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    assert done.exit_code == 1
    assert _state(rows["config"]) == "stale" and "config.toml changed" in rows["config"]
    assert all(_state(rows[stage]) == "stale" for stage in STAGES[1:])


COUNTING = "open('counter-{name}.txt', 'a').write('ran\\n')\n"


def _counted_project(root: Path) -> Path:
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text('[core]\noutput_dir = "runs"\n')
    for name in ("alpha", "beta", "gamma"):
        path = root / "eval_checks" / f"{name}.yaml"
        path.parent.mkdir(exist_ok=True)
        script = COUNTING.format(name=name)
        path.write_text(
            f"schema_version: 1\nid: {name}\ntype: deterministic\ndescription: {name}.\n"
            f"tags: [{'odd' if name != 'beta' else 'even'}]\nscript: {json.dumps(script)}\n"
        )
    return root


def _runs(root: Path, name: str) -> int:
    path = root / f"counter-{name}.txt"
    return path.read_text().count("ran") if path.exists() else 0


def test_stage_execute_with_a_selection_runs_only_it_and_keeps_the_other_results(
    tmp_path: Path, eb: Any
) -> None:
    root = _counted_project(tmp_path / "proj")
    assert eb("run", "--cwd", str(root)).exit_code == 0
    run_dir = _only_run(root)
    assert [_runs(root, n) for n in ("alpha", "beta", "gamma")] == [1, 1, 1]
    done = eb("stage", "execute", "--run-dir", str(run_dir), "--check-id", "beta")
    assert done.exit_code == 0, done.stderr
    assert [_runs(root, n) for n in ("alpha", "beta", "gamma")] == [1, 2, 1]
    results = json.loads((run_dir / "stages" / "execute.json").read_text())["results"]
    assert [r["check_id"] for r in results] == ["alpha", "beta", "gamma"]
    assert all(r["status"] == "passed" for r in results)
    assert eb("stage", "execute", "--run-dir", str(run_dir), "--tag", "odd").exit_code == 0
    assert [_runs(root, n) for n in ("alpha", "beta", "gamma")] == [2, 2, 2]
    missing = eb("stage", "execute", "--run-dir", str(run_dir), "--check-id", "delta")
    assert missing.exit_code == 2 and "No check of the plan matches" in missing.stderr


def test_stage_execute_selects_a_familys_cases_as_eb_run_does(tmp_path: Path, eb: Any) -> None:
    # `eb stage execute --check-id` read every value as a glob over whole ids, so a case's own
    # id (`fam[b]`, whose brackets a glob reads as a set of characters), its family's id or a
    # case glob chose nothing, where `eb run` chooses them.
    root = tmp_path / "proj"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text('[core]\noutput_dir = "runs"\n')
    (root / "eval_checks").mkdir()
    script = (
        "import json, sys\n"
        "case_id = json.load(open(sys.argv[1]))['case_id']\n"
        "open(f'counter-{case_id}.txt', 'a').write('ran\\n')\n"
    )
    (root / "eval_checks" / "fam.yaml").write_text(
        "schema_version: 1\nid: fam\ntype: deterministic\ndescription: case.\n"
        "cases: [{id: a}, {id: b}, {id: b2}, {id: z, skip: waiting for a fix}]\n"
        f"script: {json.dumps(script)}\n"
    )
    assert eb("run", "--cwd", str(root)).exit_code == 0
    run_dir = _only_run(root)
    for value, ran in (("fam[b]", ["b"]), ("fam[b*]", ["b", "b2"]), ("fam", ["a", "b", "b2"])):
        before = {name: _runs(root, name) for name in ("a", "b", "b2")}
        done = eb("stage", "execute", "--run-dir", str(run_dir), "--check-id", value)
        assert done.exit_code == 0, done.stderr
        after = {name: _runs(root, name) for name in ("a", "b", "b2")}
        assert sorted(name for name in after if after[name] > before[name]) == ran, value
    missing = eb("stage", "execute", "--run-dir", str(run_dir), "--check-id", "fam[c]")
    assert missing.exit_code == 2 and "No check of the plan matches" in missing.stderr
    # A skipped case is in the plan, but never runs: the refusal says so.
    skipped = eb("stage", "execute", "--run-dir", str(run_dir), "--check-id", "fam[z]")
    assert skipped.exit_code == 2
    assert "; fam[z] is skipped: waiting for a fix" in skipped.stderr


def test_stage_validate_with_a_selection_plans_only_it(tmp_path: Path, eb: Any) -> None:
    root = _counted_project(tmp_path / "proj")
    assert eb("run", "--cwd", str(root)).exit_code == 0
    run_dir = _only_run(root)
    assert eb("stage", "validate", "--run-dir", str(run_dir), "--check-id", "gamma").exit_code == 0
    plan = json.loads((run_dir / "stages" / "plan.json").read_text())
    assert [check["id"] for check in plan["checks"]] == ["gamma"]
    assert plan["selection"]["check_ids"] == ["gamma"]
    for stage in ("guard", "execute"):
        assert eb("stage", stage, "--run-dir", str(run_dir)).exit_code == 0
    assert [_runs(root, n) for n in ("alpha", "beta", "gamma")] == [1, 1, 2]
    # Without a selection, a rerun of validate uses the run's own (none): all three again.
    assert eb("stage", "validate", "--run-dir", str(run_dir)).exit_code == 0
    plan = json.loads((run_dir / "stages" / "plan.json").read_text())
    assert [check["id"] for check in plan["checks"]] == ["alpha", "beta", "gamma"]


def _top_and_sub_project(root: Path) -> Path:
    """`top` in the project's eval_checks, `low` in sub/eval_checks."""
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text('[core]\noutput_dir = "runs"\n')
    for folder, check_id in (("eval_checks", "top"), ("sub/eval_checks", "low")):
        (root / folder).mkdir(parents=True)
        (root / folder / f"{check_id}.yaml").write_text(
            f"schema_version: 1\nid: {check_id}\ntype: deterministic\n"
            f"description: {check_id}.\nscript: pass\n"
        )
    return root


def _planned(run_dir: Path) -> list[str]:
    plan = json.loads((run_dir / "stages" / "plan.json").read_text())
    return [check["id"] for check in plan["checks"]]


def test_stage_discover_with_a_check_dir_walks_only_that_folder(tmp_path: Path) -> None:
    # `eb stage discover --check-dir sub` exited 0 and listed every check file of the project.
    root = _top_and_sub_project(tmp_path / "proj")
    assert _eb("run", "--cwd", str(root)).returncode == 0
    run_dir = _only_run(root)
    done = _eb("stage", "discover", "--run-dir", str(run_dir), "--check-dir", "sub")
    assert done.returncode == 0, done.stderr
    discovered = json.loads((run_dir / "stages" / "discover.json").read_text())
    assert [item["relative_path"] for item in discovered["files"]] == ["sub/eval_checks/low.yaml"]
    assert _eb("stage", "validate", "--run-dir", str(run_dir)).returncode == 0
    assert _planned(run_dir) == ["low"]
    # config.json, the run's request, walks the whole project: discover is stale, and
    # `eb update` walks it again.
    rows = _status_rows(run_dir)
    assert "stages/discover.json walked sub, not the project root" in rows["discover"]
    assert _eb("update", "--run-dir", str(run_dir)).returncode == 0
    assert _planned(run_dir) == ["top", "low"]


def test_stage_validate_with_a_check_dir_plans_only_that_folder(tmp_path: Path) -> None:
    # `eb stage validate --check-dir sub` recorded the folder and planned every check.
    root = _top_and_sub_project(tmp_path / "proj")
    assert _eb("run", "--cwd", str(root)).returncode == 0
    run_dir = _only_run(root)
    done = _eb("stage", "validate", "--run-dir", str(run_dir), "--check-dir", "sub")
    assert done.returncode == 0, done.stderr
    assert _planned(run_dir) == ["low"]
    plan = json.loads((run_dir / "stages" / "plan.json").read_text())
    assert plan["selection"]["check_dir"] == "sub"
    rows = _status_rows(run_dir)
    assert _state(rows["discover"]) == "ok" and _state(rows["validate"]) == "ok"
    # The plan's own selection holds while config.json still selects what it did.
    assert _eb("update", "--run-dir", str(run_dir)).returncode == 0
    assert _planned(run_dir) == ["low"]
    # A selection without --check-dir walks the whole project, as `eb run --check-id top`.
    done = _eb("stage", "validate", "--run-dir", str(run_dir), "--check-id", "top")
    assert done.returncode == 0, done.stderr
    assert _planned(run_dir) == ["top"]


@pytest.mark.parametrize("stage", STAGES[1:])
def test_a_folder_where_a_stage_file_should_be_is_refused_by_every_writer(
    tmp_path: Path, eb: Any, stage: str
) -> None:
    """A folder in place of a stage file: `eb status` reads it as the readers do (invalid, not
    a regular file), and `eb stage` and `eb update` refuse to write over it, exit 2 naming the
    path and the fix, never an IsADirectoryError traceback."""
    root = _counted_project(tmp_path / "proj")
    assert eb("run", "--cwd", str(root)).exit_code == 0
    run_dir = _only_run(root)
    name = "plan.json" if stage == "validate" else f"{stage}.json"
    path = run_dir / "stages" / name
    path.unlink()
    path.mkdir()
    status = _eb("status", "--run-dir", str(run_dir))
    row = next(line for line in status.stdout.splitlines() if line.startswith(stage))
    assert f"invalid  (Stage file {path} is not a regular file (a folder))" in row
    for command in (("stage", stage), ("update",)):
        refused = _eb(*command, "--run-dir", str(run_dir))
        assert refused.returncode == 2, refused.stderr
        assert "Traceback" not in refused.stderr
        assert f"Cannot write {path}: it is not a regular file (a folder)" in refused.stderr
        assert f"hint: Remove it, then rerun the {stage} stage" in refused.stderr
    path.rmdir()
    assert eb("update", "--run-dir", str(run_dir)).exit_code == 0


def test_the_newest_run_is_the_last_created_not_the_last_by_name(tmp_path: Path, eb: Any) -> None:
    root = _counted_project(tmp_path / "proj")
    outputs = root / "runs"
    # Two runs in the same second whose random suffixes sort against their order.
    first, second = outputs / "20261201_100000_ffffffff", outputs / "20261201_100000_00000000"
    for run_dir in (first, second):
        assert (
            eb("run", "--cwd", str(root), "--output-dir", str(run_dir), "--flat-output").exit_code
            == 0
        )
        time.sleep(0.01)
    first_config = json.loads((first / "stages" / "config.json").read_text())
    second_config = json.loads((second / "stages" / "config.json").read_text())
    assert first_config["run_created_at"] < second_config["run_created_at"]
    done = eb("stage", "report", "--cwd", str(root))
    assert done.exit_code == 0
    assert f"Report: {second / 'report.json'}" in done.stdout
    status = eb("status", "--cwd", str(root))
    assert status.stdout.splitlines()[0] == f"Run folder: {second}"
    # Rerunning the older run's config stage does not make it the newest.
    assert eb("stage", "config", "--run-dir", str(first)).exit_code == 0
    assert eb("status", "--cwd", str(root)).stdout.splitlines()[0] == f"Run folder: {second}"


def test_stage_score_prints_the_verdict(tmp_path: Path, eb: Any) -> None:
    root = _counted_project(tmp_path / "proj")
    (root / "eval_checks" / "gamma.yaml").write_text(
        "schema_version: 1\nid: gamma\ntype: deterministic\ndescription: g.\n"
        "script: \"raise SystemExit('gamma is broken')\"\n"
    )
    assert eb("run", "--cwd", str(root)).exit_code == 1
    run_dir = _only_run(root)
    done = eb("stage", "score", "--run-dir", str(run_dir))
    assert done.exit_code == 1
    assert "Score: 2/3" in done.stdout and "Passed: no" in done.stdout
    assert "Pass threshold: 1.0 (not met)" in done.stdout
    assert "gamma" not in done.stdout
    verbose = eb(
        "stage", "score", "--run-dir", str(run_dir), "--verbose", "--pass-threshold", "0.5"
    )
    assert verbose.exit_code == 0 and "Passed: yes" in verbose.stdout
    assert "- gamma: failed - gamma is broken" in verbose.stdout


def test_stage_score_and_report_refuse_results_the_guard_has_since_refused(
    tmp_path: Path, eb: Any
) -> None:
    """Stage files chain the digests of their inputs: once `eb stage guard` refuses the run
    (its agent is gone), execute.json was built on another guard.json, so `eb stage score`
    and `eb stage report` refuse to state a verdict over it, naming the stale file and the
    fix, until `eb update` has rebuilt the chain."""
    agent = tmp_path / "judge"
    agent.write_text(
        f"#!{sys.executable}\nimport json\nprint(json.dumps({{'score': 1, 'reason': 'ok'}}))\n"
    )
    agent.chmod(0o755)
    root = tmp_path / "proj"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\n[harness]\nagent = "fake"\nisolation = "off"\n'
        f'[agents.fake]\ncommand = ["{agent}"]\nprompt_flag = "--prompt"\nmodel_flag = ""\n'
    )
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "judged.yaml").write_text(judge_yaml("judged"))
    assert eb("run", "--cwd", str(root)).exit_code == 0
    run_dir = _only_run(root)
    agent.rename(tmp_path / "judge.gone")
    assert eb("stage", "guard", "--run-dir", str(run_dir)).exit_code == 2
    for stage in ("score", "report"):
        refused = eb("stage", stage, "--run-dir", str(run_dir))
        assert refused.exit_code == 2, refused.stdout
        assert "Passed: yes" not in refused.stdout
        assert "execute.json is stale: stages/guard.json changed since it was built" in (
            refused.stderr
        )
        assert "Run eb update" in refused.stderr
    (tmp_path / "judge.gone").rename(agent)
    assert eb("update", "--run-dir", str(run_dir)).exit_code == 0
    assert eb("stage", "score", "--run-dir", str(run_dir)).exit_code == 0
