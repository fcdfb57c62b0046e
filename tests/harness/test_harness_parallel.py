"""Judges run concurrently under max_parallel_checks; the report order stays the plan order."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from eval_banana.harness.resolve import resolve_harness
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import PlannedCheck
from eval_banana.stages.execute import execute
from tests.builders import make_guard, make_plan
from tests.harness.judge_rig import AGENTS_DIR, config_doc, judge_check


def test_parallel_judges_keep_plan_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    root.mkdir()
    # Earlier checks answer later, so completion order is the reverse of plan order.
    sleeps = [1.2, 0.8, 0.4, 0.0]
    checks = [
        judge_check(
            id=f"judge-{index}",
            project_root=root,
            instructions=f"Judge it.\nstandin: score={index % 2} sleep={delay}",
        )
        for index, delay in enumerate(sleeps)
    ]
    config = config_doc(
        project_root=root,
        harness={"agent": "claude", "timeout_seconds": 30},
        core={"max_parallel_checks": 4},
    )
    environ = {**os.environ, "PATH": f"{AGENTS_DIR}{os.pathsep}{os.environ.get('PATH', '')}"}
    finished: list[str] = []
    lock = threading.Lock()

    def on_result(check: PlannedCheck, result: CheckResult) -> None:
        with lock:
            finished.append(check.id)

    monkeypatch.setenv("PATH", environ["PATH"])  # resolve_harness looks the agent up on PATH
    harness = resolve_harness(settings=config.settings, project_root=Path(config.project_root))
    assert harness is not None and harness.executable == str(AGENTS_DIR / "claude")
    doc = execute(
        config=config,
        plan=make_plan(checks=checks),
        guard=make_guard(harness=harness),
        run_dir=tmp_path / "run",
        cancel=threading.Event(),
        on_result=on_result,
        environ=environ,
    )
    ids = [check.id for check in checks]
    assert [result.check_id for result in doc.results] == ids
    assert [result.status for result in doc.results] == ["failed", "passed", "failed", "passed"]
    assert sorted(finished) == ids
    assert finished != ids  # they really overlapped: the slowest, first check finished last
    assert finished[-1] == "judge-0"
