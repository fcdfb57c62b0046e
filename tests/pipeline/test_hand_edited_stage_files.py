"""Stage files edited by hand into a pass: `eb status` must not call them ok, `eb update` must
not report the pass, and the verdict cache must not keep it (docs/rerunning-stages.md, the
`invalid` state)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT_CHECK = """\
schema_version: 1
id: {id}
type: deterministic
description: {id}
script: |
  import sys; sys.exit({code})
"""


def _eb(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("EVAL_BANANA_")}
    return subprocess.run(
        [sys.executable, "-m", "eval_banana", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environ,
        stdin=subprocess.DEVNULL,
        timeout=180,
    )


def _project(root: Path, *, checks: dict[str, int], config: str = "") -> Path:
    (root / "eval_checks").mkdir(parents=True)
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text(config)
    for check_id, code in checks.items():
        (root / "eval_checks" / f"{check_id}.yaml").write_text(
            SCRIPT_CHECK.format(id=check_id, code=code)
        )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _run_dir(root: Path) -> Path:
    (run_dir,) = sorted((root / ".eval-banana" / "results").iterdir())
    return run_dir


def _edit(run_dir: Path, name: str, change: Any) -> None:
    path = run_dir / "stages" / name
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def _rows(root: Path, run_dir: Path) -> dict[str, str]:
    done = _eb("status", "--run-dir", str(run_dir), cwd=root)
    return {line.split()[0]: line for line in done.stdout.splitlines()[1:] if line.strip()}


def _state(row: str) -> str:
    return row.split()[2]


def test_an_edited_planned_definition_is_invalid_refused_and_never_cached(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", checks={"bad": 1}, config='[cache]\nmode = "on"\n')
    assert _eb("run", cwd=root).returncode == 1
    run_dir = _run_dir(root)

    def passing(document: dict[str, Any]) -> None:
        document["checks"][0]["definition"]["script"] = "import sys; sys.exit(0)\n"

    _edit(run_dir, "plan.json", passing)
    rows = _rows(root, run_dir)
    assert _state(rows["validate"]) == "invalid", rows["validate"]
    assert "definition" in rows["validate"]
    _eb("stage", "guard", "--run-dir", str(run_dir), cwd=root)
    refused = _eb("stage", "execute", "--run-dir", str(run_dir), "--cache", "refresh", cwd=root)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "plan.json" in refused.stderr and "eb stage validate" in refused.stderr
    # Stored under the real file's key, a pass reached on the edited script would be replayed.
    fresh = _eb("run", cwd=root)
    assert fresh.returncode == 1, fresh.stdout
    updated = _eb("update", "--run-dir", str(run_dir), cwd=root)
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert all(_state(row) == "ok" for row in _rows(root, run_dir).values())


def test_a_verdict_run_on_an_edited_definition_is_keyed_by_that_definition(tmp_path: Path) -> None:
    """Even a plan edited with its definition digest to match: the cache keys what ran."""
    root = _project(tmp_path / "p", checks={"bad": 1}, config='[cache]\nmode = "on"\n')
    assert _eb("run", cwd=root).returncode == 1
    run_dir = _run_dir(root)

    def forged(document: dict[str, Any]) -> None:
        from eval_banana.checks.planneddigest import planned_definition_digest

        check = document["checks"][0]
        check["definition"]["script"] = "import sys; sys.exit(0)\n"
        check["definition_sha256"] = planned_definition_digest(definition=check["definition"])

    _edit(run_dir, "plan.json", forged)
    _eb("stage", "guard", "--run-dir", str(run_dir), cwd=root)
    executed = _eb("stage", "execute", "--run-dir", str(run_dir), "--cache", "refresh", cwd=root)
    assert executed.returncode == 0, executed.stdout + executed.stderr
    fresh = _eb("run", cwd=root)
    assert fresh.returncode == 1, fresh.stdout
    assert "bad: failed" in fresh.stdout


def test_a_check_dropped_from_the_plan_is_invalid_and_runs_again(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", checks={"good": 0, "bad": 1})
    assert _eb("run", cwd=root).returncode == 1
    run_dir = _run_dir(root)

    def dropped(document: dict[str, Any]) -> None:
        document["checks"] = [check for check in document["checks"] if check["id"] != "bad"]

    _edit(run_dir, "plan.json", dropped)
    rows = _rows(root, run_dir)
    assert _state(rows["validate"]) == "invalid", rows["validate"]
    assert "selected_checks" in rows["validate"]
    updated = _eb("update", "--run-dir", str(run_dir), cwd=root)
    assert updated.returncode == 1, updated.stdout + updated.stderr
    report = json.loads((run_dir / "report.json").read_text())
    assert len(report["checks"]) == 2


JUDGE_CHECK = """\
schema_version: 1
id: judge
type: harness_judge
description: j
instructions: Is it good?
"""


def _judged_project(root: Path, *, score: int, config: str = "") -> Path:
    """A project with one judge answered by tools/judge.sh (always `score`) as agent `fake`."""
    _project(
        root,
        checks={},
        config='[harness]\nagent = "fake"\n' + config + "[agents.fake]\n"
        'command = ["tools/judge.sh"]\nmodel_flag = ""\noutput_dialect = "text"\n',
    )
    (root / "eval_checks" / "judge.yaml").write_text(JUDGE_CHECK)
    (root / "tools").mkdir()
    for name, answer in (("judge.sh", score), ("yes.sh", 1)):
        script = root / "tools" / name
        script.write_text(f'#!/bin/sh\necho \'{{"score": {answer}, "reason": "r"}}\'\n')
        script.chmod(0o755)
    return root


def test_a_guard_set_to_ok_is_still_refused_by_the_calibration_gate(tmp_path: Path) -> None:
    root = _judged_project(tmp_path / "p", score=1, config="require_calibration = true\n")
    assert _eb("run", cwd=root).returncode == 2
    run_dir = _run_dir(root)

    def passing(document: dict[str, Any]) -> None:
        document["ok"] = True
        document["problems"] = []

    _edit(run_dir, "guard.json", passing)
    rows = _rows(root, run_dir)
    assert _state(rows["guard"]) == "stale", rows["guard"]
    assert "calibration gate refuses" in rows["guard"]
    updated = _eb("update", "--run-dir", str(run_dir), cwd=root)
    assert updated.returncode == 2, updated.stdout + updated.stderr
    assert not (run_dir / "stages" / "execute.json").exists()


def test_a_guard_whose_harness_command_was_edited_is_invalid(tmp_path: Path) -> None:
    root = _judged_project(tmp_path / "p", score=0)
    assert _eb("run", cwd=root).returncode == 1
    run_dir = _run_dir(root)
    assert _state(_rows(root, run_dir)["guard"]) == "ok"

    def always_passing(document: dict[str, Any]) -> None:
        harness = document["harness"]
        harness["template"]["command"] = ["tools/yes.sh"]
        harness["executable"] = harness["executable"].replace("judge.sh", "yes.sh")

    _edit(run_dir, "guard.json", always_passing)
    rows = _rows(root, run_dir)
    assert _state(rows["guard"]) == "invalid", rows["guard"]
    assert "$.harness.template" in rows["guard"]
    updated = _eb("update", "--run-dir", str(run_dir), cwd=root)
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert "judge: failed" in updated.stdout


def test_a_deleted_upstream_stage_file_is_said_missing_not_changed(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", checks={"good": 0})
    assert _eb("run", cwd=root).returncode == 0
    run_dir = _run_dir(root)
    (run_dir / "stages" / "plan.json").unlink()
    rows = _rows(root, run_dir)
    assert _state(rows["validate"]) == "missing"
    for stage in ("guard", "execute"):
        assert "(stages/plan.json is missing)" in rows[stage], rows[stage]


@pytest.mark.parametrize(
    ("config", "source"), [("", "default"), ("[core]\npass_threshold = 1.0\n", "project")]
)
def test_a_setting_edited_against_its_source_is_invalid(
    tmp_path: Path, config: str, source: str
) -> None:
    root = _project(tmp_path / "p", checks={"good": 0, "bad": 1}, config=config)
    assert _eb("run", cwd=root).returncode == 1
    run_dir = _run_dir(root)

    def lenient(document: dict[str, Any]) -> None:
        assert document["sources"]["core.pass_threshold"] == source
        document["settings"]["core"]["pass_threshold"] = 0.5

    _edit(run_dir, "config.json", lenient)
    rows = _rows(root, run_dir)
    assert _state(rows["config"]) == "invalid", rows["config"]
    assert "$.settings.core.pass_threshold" in rows["config"]
    updated = _eb("update", "--run-dir", str(run_dir), cwd=root)
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert json.loads((run_dir / "report.json").read_text())["run_passed"] is False


def _flipped_to_a_pass(check_id: str) -> Any:
    """An edit turning `check_id`'s failure into a pass in execute.json alone, every field the
    score reads agreeing with the others (checks/<stem>.json still holds the failure)."""

    def flip(document: dict[str, Any]) -> None:
        (result,) = [r for r in document["results"] if r["check_id"] == check_id]
        result.update(status="passed", observed_status="passed", score=1, exit_code=0, reason="ok")

    return flip


def test_a_verdict_edited_in_execute_json_is_invalid_and_reached_again(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", checks={"good": 0, "bad": 1})
    assert _eb("run", cwd=root).returncode == 1
    run_dir = _run_dir(root)
    _edit(run_dir, "execute.json", _flipped_to_a_pass("bad"))
    rows = _rows(root, run_dir)
    assert _state(rows["execute"]) == "invalid", rows["execute"]
    assert "$.results[" in rows["execute"] and "'bad'" in rows["execute"]
    refused = _eb("stage", "score", "--run-dir", str(run_dir), cwd=root)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "execute.json" in refused.stderr and "eb update" in refused.stderr
    updated = _eb("update", "--run-dir", str(run_dir), cwd=root)
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert "rerun bad:" in updated.stdout and "rerun good" not in updated.stdout
    assert json.loads((run_dir / "report.json").read_text())["run_passed"] is False
    assert all(_state(row) == "ok" for row in _rows(root, run_dir).values())


def test_a_partial_rerun_keeps_an_edited_verdict_told(tmp_path: Path) -> None:
    """A rerun of another check keeps the edited result with the digest recorded for it, never
    one taken again from the edited fields."""
    root = _project(tmp_path / "p", checks={"good": 0, "bad": 1})
    assert _eb("run", cwd=root).returncode == 1
    run_dir = _run_dir(root)
    _edit(run_dir, "execute.json", _flipped_to_a_pass("bad"))
    rerun = _eb("stage", "execute", "--run-dir", str(run_dir), "--check-id", "good", cwd=root)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    rows = _rows(root, run_dir)
    assert _state(rows["execute"]) == "invalid", rows["execute"]
    assert "'bad'" in rows["execute"]


def test_an_execute_json_without_verdict_digests_is_still_read(tmp_path: Path) -> None:
    """One an earlier eb wrote has none: its results are not compared."""
    root = _project(tmp_path / "p", checks={"good": 0, "bad": 1})
    assert _eb("run", cwd=root).returncode == 1
    run_dir = _run_dir(root)
    _edit(run_dir, "execute.json", lambda document: document.pop("verdict_digests"))
    assert _state(_rows(root, run_dir)["execute"]) == "ok"
    assert _eb("update", "--run-dir", str(run_dir), cwd=root).returncode == 1


FAMILY_CHECK = """\
schema_version: 1
id: fam
type: deterministic
description: case {{ case.id }}
min_pass_rate: 0.9
cases:
  - {id: a, code: "0"}
  - {id: b, code: "0"}
  - {id: c, code: "0"}
  - {id: d, code: "1"}
script: |
  import json, sys
  from pathlib import Path
  ctx = json.loads(Path(sys.argv[1]).read_text())
  sys.exit(1 if ctx["description"].endswith(" d") else 0)
"""


def test_a_family_case_marked_stopped_by_hand_is_invalid(tmp_path: Path) -> None:
    """A family's gate counts a case the run's stop ended part-way as not run, so `stopped` is
    part of the verdict execute.json recorded, as its status is."""
    root = _project(tmp_path / "p", checks={})
    (root / "eval_checks" / "fam.yaml").write_text(FAMILY_CHECK)
    assert _eb("run", cwd=root).returncode == 1
    run_dir = _run_dir(root)

    def stopped(document: dict[str, Any]) -> None:
        (result,) = [r for r in document["results"] if r["status"] != "passed"]
        assert result["family"] == "fam", result
        result["details"]["stopped"] = True

    _edit(run_dir, "execute.json", stopped)
    rows = _rows(root, run_dir)
    assert _state(rows["execute"]) == "invalid", rows["execute"]
    assert "verdict_digests" in rows["execute"]
    updated = _eb("update", "--run-dir", str(run_dir), cwd=root)
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert all(_state(row) == "ok" for row in _rows(root, run_dir).values())
