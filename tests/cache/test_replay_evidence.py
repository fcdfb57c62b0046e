"""What a replay and a reused verdict stand on: what they re-derive and what must make them go.

Each test here pins a behaviour that a plausible one-line defect in the verdict-deciding code
once left unnoticed by the whole suite, or a number a replay must never take from its record.
Runs go through the real CLI in-process; `replays` records what each run's replay attempt came
to (True: replayed, False: tried and went the usual way).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana import replaying
from tests.cache.rig import Project, cache_of, make_project, script_check

FAILING = "import sys\nsys.exit(1)\n"


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    seen: list[bool] = []
    real = replaying.replay

    def spy(**kwargs: Any) -> Any:
        outcome = real(**kwargs)
        seen.append(outcome is not None)
        return outcome

    monkeypatch.setattr(replaying, "replay", spy)
    return seen


def replay_file(project: Project) -> Path:
    (path,) = sorted((project.cache_dir / "runs").rglob("*.json"))
    return path


def hits(report: dict[str, Any]) -> list[bool]:
    return [cache_of(check).get("hit") is True for check in report["checks"]]


# --- a replay's exit code follows from the score it replays ------------------------------------


@pytest.fixture
def failing(tmp_path: Path, eb: Callable[..., Any], replays: list[bool]) -> Project:
    """A failing run (one of two checks fails), its verdicts stored and kept as a replay."""
    checks = {
        "bad": script_check("bad", script=FAILING),
        "good": script_check("good", script="pass\n"),
    }
    project = make_project(tmp_path=tmp_path, eb=eb, checks=checks, files={})
    project.run(expect_exit=1)
    project.run(expect_exit=1)
    project.run(expect_exit=1)
    assert replays == [False, False, True]
    return project


def test_an_edited_exit_code_in_a_kept_run_never_turns_it_green(
    failing: Project, replays: list[bool]
) -> None:
    path = replay_file(failing)
    record = json.loads(path.read_text())
    assert record["exit_code"] == 1
    path.write_text(json.dumps({**record, "exit_code": 0}))
    outcome = failing.eb("run", "--cwd", str(failing.root))
    assert outcome.exit_code == 1, outcome.stdout + outcome.stderr
    assert "Passed: no" in outcome.stdout
    assert replays[-1] is False
    assert f"Run replay {path} says exit code 0, but its score says 1" in outcome.stderr
    # The usual way kept a sound replay again, which exits as its score says.
    failing.run(expect_exit=1)
    assert replays[-1] is True
    assert json.loads(path.read_text())["exit_code"] == 1


def _forge_score(project: Project, change: Callable[[bytes], bytes], exit_code: int) -> Path:
    """Swap the kept run's score.json for an edited one (a blob of its own, as the store names
    blobs) and set the record's exit code: a forgery consistent in all but `change`."""
    path = replay_file(project)
    record = json.loads(path.read_text())
    (template,) = [t for t in record["templates"] if t["name"] == "stages/score.json"]
    old = project.cache_dir / "blobs" / template["sha256"][7:9] / template["sha256"][7:]
    data = change(old.read_bytes())
    assert len(data) == template["size"]  # the slots stay where they were
    digest = hashlib.sha256(data).hexdigest()
    blob = project.cache_dir / "blobs" / digest[:2] / digest
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(data)
    template["sha256"] = f"sha256:{digest}"
    record["exit_code"] = exit_code
    path.write_text(json.dumps(record))
    return path


def test_a_score_whose_verdict_does_not_follow_from_its_counts_is_no_replay(
    failing: Project, replays: list[bool]
) -> None:
    def passed(data: bytes) -> bytes:
        return (
            data.replace(b'"run_passed": false', b'"run_passed": true ')
            .replace(b'"meets_threshold": false', b'"meets_threshold": true ')
            .replace(b'"status": "failed"', b'"status": "passed"')
        )

    path = _forge_score(failing, passed, exit_code=0)
    report = failing.run(expect_exit=1)
    assert replays[-1] is False
    assert report["run_passed"] is False
    assert f"Run replay {path} has a score.json" in failing.last.stderr


def test_a_score_judged_under_another_threshold_is_no_replay(
    failing: Project, replays: list[bool]
) -> None:
    # Half the checks pass: under a threshold of 0.5 this run would pass. The record is bent to
    # say so, but the settings of the run at hand (the default threshold) decide.
    def halved(data: bytes) -> bytes:
        document = json.loads(data)
        old = f'"pass_threshold": {json.dumps(document["pass_threshold"])}'.encode()
        new = b'"pass_threshold": 0.5'
        return data.replace(old, new.ljust(len(old)))

    _forge_score(failing, halved, exit_code=1)
    failing.run(expect_exit=1)
    assert replays[-1] is False
    assert "judged under other settings" in failing.last.stderr
