"""Control checks: `expect: fail` is met only by a real failure.

An `error`, a timeout, a stop or a check that never ran never counts as a caught defect.
"""

from __future__ import annotations

import json
import os
import textwrap
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from eval_banana.models.result import CheckResult, Status
from eval_banana.runners.results import build_result, error_result, judge_expectation
from eval_banana.stages.execute import execute
from eval_banana.stages.score import score
from tests.builders import make_config, make_guard, make_plan, planned_inline
from tests.conftest import STANDIN_AGENTS
from tests.processes import eb_process

MOMENT = datetime(2026, 11, 30, tzinfo=UTC)
ROOT = Path("/project")


def observed(status: Status, *, expect: str) -> CheckResult:
    check = planned_inline(id="c", script="pass", project_root=ROOT, expect=expect)
    if status == "error":
        return error_result(check=check, started=MOMENT, error_detail="broken")
    return build_result(check=check, status=status, started=MOMENT)


@pytest.mark.parametrize(
    ("expect", "seen", "status", "points"),
    [
        ("fail", "failed", "passed", 1),  # defect caught
        ("fail", "passed", "failed", 0),  # defect missed
        ("fail", "error", "error", 0),  # nothing was graded
        ("pass", "passed", "passed", 1),
        ("pass", "failed", "failed", 0),
        ("pass", "error", "error", 0),
    ],
)
def test_judge_expectation_table(expect: str, seen: Status, status: str, points: int) -> None:
    judged = judge_expectation(result=observed(seen, expect=expect))
    assert (judged.status, judged.score, judged.observed_status, judged.expect) == (
        status,
        points,
        seen,
        expect,
    )
    # Judging twice changes nothing (a rerun of a stage must not flip a control back).
    assert judge_expectation(result=judged) == judged


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def test_every_outcome_of_a_control_through_the_execute_stage(root: Path, tmp_path: Path) -> None:
    checks = [
        planned_inline(
            id="caught", script="raise SystemExit(1)\n", project_root=root, expect="fail"
        ),
        planned_inline(id="missed", script="pass\n", project_root=root, expect="fail"),
        planned_inline(
            id="crashed", script="import no_such_module_xyz\n", project_root=root, expect="fail"
        ),
        planned_inline(
            id="timed_out", script="import time\ntime.sleep(30)\n", project_root=root, expect="fail"
        ),
        planned_inline(id="plain", script="pass\n", project_root=root),
    ]
    # The crash is a failed exit (exit 1 from the traceback), so it counts as a real failure;
    # only infrastructure errors (timeout, stop, not run, unusable script) are errors.
    config = make_config(project_root=root, check_timeout_seconds=1, max_parallel_checks=5)
    doc = execute(
        config=config,
        plan=make_plan(checks=checks),
        guard=make_guard(),
        run_dir=tmp_path / "run",
        cancel=threading.Event(),
    )
    seen = {r.check_id: (r.expect, r.observed_status, r.status, r.score) for r in doc.results}
    assert seen == {
        "caught": ("fail", "failed", "passed", 1),
        "missed": ("fail", "passed", "failed", 0),
        "crashed": ("fail", "failed", "passed", 1),
        "timed_out": ("fail", "error", "error", 0),
        "plain": ("pass", "passed", "passed", 1),
    }
    timed_out = doc.results[3]
    assert timed_out.error_detail is not None and "timed out" in timed_out.error_detail
    # checks/<stem>.json holds the judged result too.
    stored = json.loads((tmp_path / "run" / "checks" / f"{checks[0].stem}.json").read_text())
    assert (stored["status"], stored["observed_status"], stored["expect"]) == (
        "passed",
        "failed",
        "fail",
    )
    scored = score(config=config, execute=doc)
    assert (scored.points_earned, scored.total_points) == (3, 5)
    assert (scored.control_checks, scored.controls_met) == (4, 2)
    assert not scored.run_passed


def test_unavailable_script_never_satisfies_a_control(root: Path, tmp_path: Path) -> None:
    from tests.builders import planned_unavailable

    check = planned_unavailable(id="gone", missing=root / "gone.py", project_root=root)
    check.definition["expect"] = "fail"
    doc = execute(
        config=make_config(project_root=root),
        plan=make_plan(checks=[check]),
        guard=make_guard(),
        run_dir=tmp_path / "run",
        cancel=threading.Event(),
    )
    (result,) = doc.results
    assert (result.expect, result.observed_status, result.status, result.score) == (
        "fail",
        "error",
        "error",
        0,
    )


CONTROL_PROJECT = {
    "src/slug.py": """\
        def slug(text):
            return text.lower()  # seeded defect: spaces are kept
        """,
    "out/plan.json": '{"steps": [{"name": "build"}]}',
    "eval_checks/slug_control.yaml": """\
        # Control: the seeded defect in slug() must make this check fail.
        schema_version: 1
        id: slug_control
        type: deterministic
        expect: fail
        description: slug() replaces spaces with dashes.
        script: |
          import os, sys
          sys.path.insert(0, os.path.join(os.getcwd(), "src"))
          from slug import slug
          assert slug("Hello World") == "hello-world"
        """,
    "eval_checks/plan_control.yaml": """\
        schema_version: 1
        id: plan_control
        type: assertions
        expect: fail
        description: The plan has two steps (control on a one-step plan).
        artifact: out/plan.json
        assert:
          - {path: steps, op: lengthAtLeast, value: 2}
        """,
    "eval_checks/judge_control.yaml": """\
        schema_version: 1
        id: judge_control
        type: harness_judge
        expect: fail
        description: The judge rejects the defect.
        instructions: |
          Score 1 only if slug() replaces spaces.
          standin: score=0
        """,
}


def test_controls_of_every_check_type_through_eb_run(
    project: Callable[..., Path], eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{STANDIN_AGENTS}{os.pathsep}{os.environ['PATH']}")
    root = project(
        CONTROL_PROJECT,
        config='[core]\noutput_dir = "results"\n[harness]\nagent = "claude"\n',
    )
    outcome = eb("run", "--cwd", str(root))
    assert outcome.exit_code == 0, outcome.stderr + outcome.stdout
    assert "- slug_control: passed (control: defect caught)" in outcome.stdout
    run_dir = next(root.glob("results/*"))
    report = json.loads((run_dir / "report.json").read_text())
    assert report["run_passed"] is True and report["points_earned"] == 3
    for check in report["checks"]:
        assert (check["expect"], check["observed_status"], check["status"]) == (
            "fail",
            "failed",
            "passed",
        )
    md = (run_dir / "report.md").read_text()
    assert "| `passed` (control: defect caught) |" in md


def test_a_fixed_defect_turns_the_control_red(
    project: Callable[..., Path], eb: Callable[..., Any]
) -> None:
    files = {key: value for key, value in CONTROL_PROJECT.items() if "judge" not in key}
    files["src/slug.py"] = "def slug(text):\n    return text.lower().replace(' ', '-')\n"
    root = project(files, config='[core]\noutput_dir = "results"\n')
    outcome = eb("run", "--cwd", str(root))
    assert outcome.exit_code == 1
    assert "- slug_control: failed (control: defect missed)" in outcome.stdout
    report = json.loads(next(root.glob("results/*/report.json")).read_text())
    statuses = {c["check_id"]: (c["observed_status"], c["status"]) for c in report["checks"]}
    assert statuses["slug_control"] == ("passed", "failed")
    assert statuses["plan_control"] == ("failed", "passed")
    md = next(root.glob("results/*/report.md")).read_text()
    assert "| `failed` (control: defect missed) |" in md


def test_a_judge_control_that_times_out_is_an_error(
    project: Callable[..., Path], eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A timeout proves nothing: the stand-in would say 0 (defect caught), but only after the
    # judge's time limit.
    monkeypatch.setenv("PATH", f"{STANDIN_AGENTS}{os.pathsep}{os.environ['PATH']}")
    text = CONTROL_PROJECT["eval_checks/judge_control.yaml"]
    files = {"eval_checks/judge_control.yaml": text.replace("score=0", "score=0 sleep=30")}
    root = project(
        files,
        config='[core]\noutput_dir = "results"\n[harness]\nagent = "claude"\ntimeout_seconds = 1\n',
    )
    outcome = eb("run", "--cwd", str(root))
    assert outcome.exit_code == 1
    (check,) = json.loads(next(root.glob("results/*/report.json")).read_text())["checks"]
    assert (check["observed_status"], check["status"], check["score"]) == ("error", "error", 0)
    assert "timed out" in check["error_detail"]


def test_expect_is_validated(project: Callable[..., Path], eb: Callable[..., Any]) -> None:
    root = project(
        {
            "eval_checks/bad.yaml": textwrap.dedent(
                """\
                schema_version: 1
                id: bad
                type: deterministic
                expect: maybe
                description: x
                script: pass
                """
            )
        }
    )
    outcome = eb("validate", "--cwd", str(root))
    assert outcome.exit_code == 2
    assert "expect" in outcome.stderr + outcome.stdout


PLAN_CONTROL = CONTROL_PROJECT["eval_checks/plan_control.yaml"]


@pytest.mark.parametrize(
    ("artifact", "content", "problem"),
    [
        ("out/plan_defcet.json", None, "artifact out/plan_defcet.json does not exist"),
        ("out/broken.json", "{", "artifact out/broken.json is not valid JSON: "),
        ("out", None, "artifact out is a directory, not a file"),
        # YAML with no document (only a comment), or whose document is empty (`---` alone),
        # loads as null: the control counted its "the top level is null" as a caught defect.
        (
            "out/seeded.yaml",
            "# generated by seed-defects.py\n",
            "artifact out/seeded.yaml is empty",
        ),
        ("out/seeded.yaml", "---\n", "artifact out/seeded.yaml is empty"),
    ],
)
def test_an_assertions_control_that_graded_nothing_is_an_error(
    project: Callable[..., Path], artifact: str, content: str | None, problem: str
) -> None:
    # A mistyped or unusable seeded-defect artifact fails every assertion without grading
    # anything: as a control, that is no caught defect. An ordinary check on it still fails.
    files = {
        "out/plan.json": CONTROL_PROJECT["out/plan.json"],
        "eval_checks/plan_control.yaml": PLAN_CONTROL.replace("out/plan.json", artifact),
        "eval_checks/plain.yaml": PLAN_CONTROL.replace("out/plan.json", artifact)
        .replace("id: plan_control", "id: plain")
        .replace("        expect: fail\n", ""),
    }
    if content is not None:
        files[artifact] = content
    root = project(files, config='[core]\noutput_dir = "results"\n')
    outcome = eb_process(root, "run", "--no-html")
    assert outcome.returncode == 1
    expected = f"- plan_control: error - Control graded nothing, so it caught no defect: {problem}"
    assert expected in outcome.stdout
    assert "Make `artifact` (relative to the project root) name the seeded-defect file" in (
        outcome.stdout
    )
    report = json.loads(next(root.glob("results/*/report.json")).read_text())
    checks = {check["check_id"]: check for check in report["checks"]}
    control = checks["plan_control"]
    assert (control["observed_status"], control["status"], control["score"]) == (
        "error",
        "error",
        0,
    )
    assert control["details"] == {"artifact": artifact}
    assert (checks["plain"]["status"], checks["plain"]["error_detail"]) == ("failed", None)
    assert report["run_passed"] is False


@pytest.mark.parametrize(
    "assertions",
    [
        # Its only assertion: a string over what matches reads (the log even has the line).
        ['{path: log, op: matches, value: "SUMMARY: all \\\\d+ steps passed"}'],
        # Beside one that was evaluated and failed: the control still has not shown its rules.
        ['{path: log, op: matches, value: "^SUMMARY"}', "{path: missing, op: exists}"],
    ],
)
def test_an_assertions_control_with_an_assertion_not_evaluated_is_an_error(
    project: Callable[..., Path], assertions: list[str]
) -> None:
    log = "step ok\n" * 20_000 + "SUMMARY: all 20000 steps passed\n"
    listed = "".join(f"  - {assertion}\n" for assertion in assertions)
    control = (
        "schema_version: 1\nid: log_control\ntype: assertions\nexpect: fail\n"
        "description: The summary rule fails on a log without a summary line.\n"
        f"artifact: fixtures/log.json\nassert:\n{listed}"
    )
    plain = control.replace("log_control", "log_plain").replace("expect: fail\n", "")
    root = project(
        {
            "fixtures/log.json": json.dumps({"log": log}),
            "eval_checks/log_control.yaml": control,
            "eval_checks/log_plain.yaml": plain,
        },
        config='[core]\noutput_dir = "results"\n',
    )
    outcome = eb_process(root, "run", "--no-html")
    assert outcome.returncode == 1
    assert "- log_control: error - Control could not evaluate 1 of its" in outcome.stdout
    report = json.loads(next(root.glob("results/*/report.json")).read_text())
    checks = {check["check_id"]: check for check in report["checks"]}
    control_result = checks["log_control"]
    assert (control_result["observed_status"], control_result["status"]) == ("error", "error")
    assert (
        "matches reads at most 102400 bytes, so it was not evaluated"
        in (control_result["error_detail"])
    )
    first = control_result["details"]["assertions"][0]
    assert (first["ok"], first["evaluated"]) == (False, False)
    # The ordinary check on the same artifact fails: an assertion not evaluated never holds.
    assert checks["log_plain"]["status"] == "failed"


def test_deterministic_and_judge_controls_that_graded_nothing_are_errors(
    project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same hole for the other kinds: a script that cannot start, a judge with no verdict.
    monkeypatch.setenv("PATH", f"{STANDIN_AGENTS}{os.pathsep}{os.environ['PATH']}")
    judge = CONTROL_PROJECT["eval_checks/judge_control.yaml"]
    root = project(
        {
            "eval_checks/judge_control.yaml": judge.replace("score=0", "score=0 mode=no_verdict"),
            "eval_checks/script_control.yaml": textwrap.dedent(
                """\
                schema_version: 1
                id: script_control
                type: deterministic
                expect: fail
                description: A script that does not compile graded nothing.
                script: "def ("
                """
            ),
        },
        config='[core]\noutput_dir = "results"\n[harness]\nagent = "claude"\n',
    )
    outcome = eb_process(root, "run", "--no-html")
    assert outcome.returncode == 1
    report = json.loads(next(root.glob("results/*/report.json")).read_text())
    seen = {c["check_id"]: (c["observed_status"], c["status"]) for c in report["checks"]}
    assert seen == {"judge_control": ("error", "error"), "script_control": ("error", "error")}
