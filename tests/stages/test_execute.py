"""The execute stage: parallelism, plan order, per-check files, interruption, env policy."""

from __future__ import annotations

import json
import os
import textwrap
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from eval_banana.core.files import sha256_file
from eval_banana.models.config import ExecutionSettings
from eval_banana.models.result import CheckResult, result_json_text
from eval_banana.models.stages import ExecuteDoc, PlannedCheck
from eval_banana.runners import RUNNERS
from eval_banana.runners.base import RunContext
from eval_banana.runners.results import StopSignal, build_result, stop_reason, utc_now
from eval_banana.settings.envpolicy import build_base_env
from eval_banana.stagefiles.read import read_stage
from eval_banana.stages.execute import (
    document_digest,
    execute,
    write_execute_stage,
)
from tests.builders import make_config, make_guard, make_plan, planned_inline

TIMED = """
import json, sys, time
out = json.load(open(sys.argv[1]))["output_dir"]
start = time.time()
time.sleep({sleep})
json.dump({{"start": start, "end": time.time()}}, open(out + "/times.json", "w"))
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def run_execute(
    *,
    root: Path,
    run_dir: Path,
    checks: list[PlannedCheck],
    cancel: threading.Event | None = None,
    environ: dict[str, str] | None = None,
    on_start: Any = None,
    on_result: Any = None,
    **settings: Any,
) -> ExecuteDoc:
    config = make_config(project_root=root, **settings)
    return execute(
        config=config,
        plan=make_plan(checks=checks),
        guard=make_guard(),
        run_dir=run_dir,
        cancel=cancel or threading.Event(),
        environ=environ,
        on_start=on_start,
        on_result=on_result,
    )


def _times(run_dir: Path, check: PlannedCheck) -> tuple[float, float]:
    data = json.loads((run_dir / "checks" / check.stem / "times.json").read_text())
    return data["start"], data["end"]


def test_parallel_checks_overlap_and_keep_plan_order(root: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    # Later checks are quicker, so completion order is the reverse of plan order.
    checks = [
        planned_inline(id=f"p{n}", script=TIMED.format(sleep=1.0 - n * 0.2), project_root=root)
        for n in range(4)
    ]
    began = time.monotonic()
    doc = run_execute(root=root, run_dir=run_dir, checks=checks, max_parallel_checks=4)
    assert time.monotonic() - began < 3
    assert [r.check_id for r in doc.results] == ["p0", "p1", "p2", "p3"]
    assert all(r.status == "passed" for r in doc.results)
    spans = [_times(run_dir, check) for check in checks]
    assert max(start for start, _ in spans) < min(end for _, end in spans)  # all ran at once


def test_parallel_one_runs_serially(root: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    checks = [
        planned_inline(id=f"s{n}", script=TIMED.format(sleep=0.2), project_root=root)
        for n in range(3)
    ]
    doc = run_execute(root=root, run_dir=run_dir, checks=checks, max_parallel_checks=1)
    assert [r.check_id for r in doc.results] == ["s0", "s1", "s2"]
    spans = [_times(run_dir, check) for check in checks]
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert start >= end


def test_per_check_json_and_execute_document(root: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    checks = [
        planned_inline(id="ok", script="print('héllo')\n", project_root=root),
        planned_inline(id="bad", script="raise SystemExit(2)\n", project_root=root),
    ]
    seen: list[tuple[str, str]] = []
    started: list[str] = []
    doc = run_execute(
        root=root,
        run_dir=run_dir,
        checks=checks,
        on_start=lambda check: started.append(check.id),
        on_result=lambda check, result: seen.append((check.id, result.status)),
    )
    assert sorted(started) == ["bad", "ok"]
    assert sorted(seen) == [("bad", "failed"), ("ok", "passed")]
    for check, result in zip(checks, doc.results, strict=True):
        text = (run_dir / "checks" / f"{check.stem}.json").read_text(encoding="utf-8")
        assert text == result_json_text(result=result)
        assert not text.endswith("\n")
        assert list(json.loads(text))[:16] == list(CheckResult.model_fields)[:16]
    assert '"stdout": "héllo\\n"' in (run_dir / "checks" / f"{checks[0].stem}.json").read_text()
    assert doc.aborted_by is None and doc.not_run == []
    assert doc.env_policy == "inherit"
    assert doc.started_at <= doc.completed_at
    assert set(doc.inputs) == {"config", "validate", "guard"}
    digest = write_execute_stage(run_dir=run_dir, doc=doc)
    path = run_dir / "stages" / "execute.json"
    assert digest == sha256_file(path=path) == document_digest(doc=doc)
    assert read_stage(run_dir=run_dir, stage="execute") == doc


def test_runner_exception_becomes_an_error_result(root: Path, tmp_path: Path) -> None:
    good = planned_inline(id="good", script="pass\n", project_root=root)
    odd = planned_inline(id="odd", script="pass\n", project_root=root).model_copy(
        update={"type": "no_such_type"}
    )
    doc = run_execute(root=root, run_dir=tmp_path / "run", checks=[odd, good])
    assert doc.results[0].status == "error"
    assert doc.results[0].error_detail == "LookupError: No runner for check type 'no_such_type'"
    assert doc.results[1].status == "passed"


def test_no_checks_gives_an_empty_document(root: Path, tmp_path: Path) -> None:
    doc = run_execute(root=root, run_dir=tmp_path / "run", checks=[])
    assert doc.results == [] and doc.aborted_by is None


def test_interrupt_stops_running_and_skips_unstarted_checks(root: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    slow = planned_inline(
        id="slow",
        script=textwrap.dedent(
            """
            import json, sys, time
            out = json.load(open(sys.argv[1]))["output_dir"]
            open(out + "/started", "w").close()
            time.sleep(60)
            """
        ),
        project_root=root,
    )
    later = [planned_inline(id=f"later{n}", script="pass\n", project_root=root) for n in range(2)]
    cancel = threading.Event()  # what the CLI's signal handler sets
    marker = run_dir / "checks" / slow.stem / "started"

    def interrupt_when_started() -> None:
        while not marker.exists():
            time.sleep(0.02)
        cancel.set()

    threading.Thread(target=interrupt_when_started, daemon=True).start()
    began = time.monotonic()
    doc = run_execute(
        root=root, run_dir=run_dir, checks=[slow, *later], cancel=cancel, max_parallel_checks=1
    )
    assert time.monotonic() - began < 10
    first, *rest = doc.results
    assert (first.status, first.error_detail) == ("error", "Stopped: interrupted")
    assert "not_run" not in first.details
    for result in rest:
        assert (result.status, result.score) == ("error", 0)
        assert result.error_detail == "Not run: interrupted"
        assert result.details == {"not_run": True}
    assert doc.aborted_by == "interrupt"
    assert doc.not_run == ["later0", "later1"]
    for check in [slow, *later]:
        assert (run_dir / "checks" / f"{check.stem}.json").exists()


def test_fuse_reason_is_recorded(root: Path, tmp_path: Path) -> None:
    cancel = StopSignal()
    cancel.stop(reason="token_fuse")
    check = planned_inline(id="never", script="pass\n", project_root=root)
    doc = run_execute(root=root, run_dir=tmp_path / "run", checks=[check], cancel=cancel)
    assert doc.aborted_by == "token_fuse"
    assert doc.results[0].error_detail == "Not run: token fuse tripped"


def test_allowlist_policy_filters_the_child_environment(root: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    check = planned_inline(
        id="env",
        script=textwrap.dedent(
            """
            import json, os, sys
            out = json.load(open(sys.argv[1]))["output_dir"]
            json.dump(dict(os.environ), open(out + "/env.json", "w"))
            """
        ),
        project_root=root,
    )
    environ = {
        "PATH": os.environ["PATH"],
        "LC_ALL": "C.UTF-8",
        "EB_KEEP": "1",
        "APP_TOKEN_X": "2",
        "EB_SECRET": "nope",
    }
    doc = run_execute(
        root=root,
        run_dir=run_dir,
        checks=[check],
        environ=environ,
        env="allowlist",
        env_allow=["EB_KEEP"],
        env_allow_prefixes=["APP_"],
    )
    assert doc.results[0].status == "passed", doc.results[0].stderr
    assert doc.env_policy == "allowlist"
    seen = json.loads((run_dir / "checks" / check.stem / "env.json").read_text())
    assert seen["EB_KEEP"] == "1" and seen["APP_TOKEN_X"] == "2" and seen["LC_ALL"] == "C.UTF-8"
    assert "EB_SECRET" not in seen


def test_env_policy_inherit_and_allowlist_sets() -> None:
    environ = {"PATH": "/bin", "HOME": "/h", "https_proxy": "p", "SECRET": "s", "LC_CTYPE": "C"}
    assert build_base_env(settings=ExecutionSettings(), environ=environ) == environ
    kept = build_base_env(settings=ExecutionSettings(env="allowlist"), environ=environ)
    assert kept == {"PATH": "/bin", "HOME": "/h", "https_proxy": "p", "LC_CTYPE": "C"}


def test_huge_output_is_never_held_in_memory(root: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    # 64 MB of stdout; the parent's Python allocations must stay tiny (streamed to the file).
    script = "import sys\nblock = 'x' * 65535 + '\\n'\nfor _ in range(1024):\n"
    script += "    sys.stdout.write(block)\n"
    check = planned_inline(id="loud", script=script, project_root=root)
    tracemalloc.start()
    try:
        doc = run_execute(root=root, run_dir=run_dir, checks=[check])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert doc.results[0].status == "passed"
    assert (run_dir / "checks" / f"{check.stem}.stdout.txt").stat().st_size == 64 * 1024 * 1024
    assert len(doc.results[0].stdout) < 2200
    assert peak < 5 * 1024 * 1024


def test_runner_returning_another_digest_is_an_internal_error(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def wrong_hash_runner(ctx: RunContext) -> CheckResult:
        result = build_result(check=ctx.check, status="passed", started=utc_now())
        return result.model_copy(update={"check_definition_sha256": "sha256:" + "0" * 64})

    monkeypatch.setitem(RUNNERS, "wrong_hash", wrong_hash_runner)
    check = planned_inline(id="w", script="pass\n", project_root=root).model_copy(
        update={"type": "wrong_hash"}
    )
    doc = run_execute(root=root, run_dir=tmp_path / "run", checks=[check])
    assert doc.results[0].status == "error"
    assert doc.results[0].error_detail == "Runner returned the wrong definition hash for check 'w'"


def test_a_result_that_cannot_be_written_is_an_error_and_stops_the_run(
    root: Path, tmp_path: Path
) -> None:
    # Evidence that cannot be kept is a write fault: that check is an error (whatever it
    # decided), the run stops (aborted by write_fault) and the checks not yet started never run.
    run_dir = tmp_path / "run"
    checks = [
        planned_inline(id=f"w{n}", script=TIMED.format(sleep=0.1), project_root=root)
        for n in range(3)
    ]
    (run_dir / "checks" / f"{checks[0].stem}.json").mkdir(parents=True)  # blocks the rename
    doc = run_execute(root=root, run_dir=run_dir, checks=checks, max_parallel_checks=1)
    assert doc.aborted_by == "write_fault"
    first, *others = doc.results
    assert first.status == "error"
    assert first.error_detail is not None and first.error_detail.startswith(
        "Output could not be written: "
    )
    assert [(r.status, r.details.get("not_run")) for r in others] == [("error", True)] * 2
    for check in checks[1:]:
        assert json.loads((run_dir / "checks" / f"{check.stem}.json").read_text())["status"] == (
            "error"
        )


def test_an_interrupt_while_stored_verdicts_are_restored_stops_the_run() -> None:
    # Restores run on the main thread before the pool; Ctrl-C there must stop the run like
    # one during checks, leaving every position not yet answered for the pool (not run).
    from eval_banana.runners.pool import unanswered as _unanswered

    stop = StopSignal()

    def answered(index: int) -> bool:
        if index == 2:
            raise KeyboardInterrupt
        return index == 0 or (index > 2 and not stop.is_set())

    assert _unanswered(count=5, answered=answered, stop=stop) == [1, 2, 3, 4]
    assert stop.is_set() and stop_reason(cancel=stop) == "interrupt"
