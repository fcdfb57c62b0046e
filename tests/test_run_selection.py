"""`eb run` end to end: -k, --tag expressions, --check-id globs, -x / --maxfail and `skip:`.

Every script records that it ran by writing a file named after its check id under `ran/`, so
the tests prove which processes started, not only what the report says.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.core.stem import artifact_stem
from tests.conftest import EbResult, judge_yaml

Project = Callable[..., Path]
Eb = Callable[..., EbResult]

# Plan order: these tests read which checks started before a stop, run after run (the
# default starts the checks a history says are longest first).
CONFIG = """\
[core]
output_dir = "results"
max_parallel_checks = 1
schedule = "plan"
"""


def recording(check_id: str, *, fails: bool = False, tags: list[str] | None = None) -> str:
    """A deterministic check that leaves ran/<id> behind, then passes or fails."""
    script = textwrap.dedent(
        f"""\
        import json, sys
        from pathlib import Path
        ctx = json.loads(Path(sys.argv[1]).read_text())
        ran = Path(ctx["project_root"]) / "ran"
        ran.mkdir(exist_ok=True)
        (ran / ctx["check_id"]).write_text("ran")
        assert not {fails!r}, "this check fails on purpose"
        """
    )
    lines = [
        "schema_version: 1",
        f"id: {check_id}",
        "type: deterministic",
        f"description: Check {check_id}.",
        f"tags: {json.dumps(tags or [])}",
        "script: |",
        textwrap.indent(script, "  "),
    ]
    return "\n".join(lines)


def ran(root: Path) -> list[str]:
    folder = root / "ran"
    return sorted(path.name for path in folder.iterdir()) if folder.is_dir() else []


def run_dir_of(root: Path) -> Path:
    (run_dir,) = (root / "results").iterdir()
    return run_dir


def report_of(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir_of(root) / "report.json").read_text())
    return data


def stage(root: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir_of(root) / "stages" / name).read_text())
    return data


# --- selection -------------------------------------------------------------------------------


@pytest.fixture
def five(project: Project) -> Path:
    return project(
        {
            "eval_checks/a.yaml": recording("judge_login", tags=["judge"]),
            "eval_checks/b.yaml": recording("judge_logout", tags=["judge", "slow"]),
            "eval_checks/c.yaml": recording("lint_login", tags=["lint"]),
            "eval_checks/d.yaml": recording("lint_style", tags=["lint", "slow"]),
            "eval_checks/e.yaml": recording("smoke", tags=["smoke"]),
        },
        config=CONFIG,
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-k", "login and not out"], ["judge_login", "lint_login"]),
        (["-k", "LINT or smoke"], ["lint_login", "lint_style", "smoke"]),
        (["--tag", "judge and not slow"], ["judge_login"]),
        (["--tag", "slow", "--tag", "smoke"], ["judge_logout", "lint_style", "smoke"]),
        (["--check-id", "lint_*"], ["lint_login", "lint_style"]),
        (["--check-id", "judge_log?ut", "--check-id", "smoke"], ["judge_logout", "smoke"]),
        (["--check-id", "*_login", "--tag", "not judge", "-k", "lint"], ["lint_login"]),
    ],
)
def test_run_starts_only_the_selected_checks(
    five: Path, eb: Eb, args: list[str], expected: list[str]
) -> None:
    result = eb("run", "--cwd", str(five), *args)
    assert result.exit_code == 0, result.stderr
    assert ran(five) == expected
    assert sorted(check["check_id"] for check in report_of(five)["checks"]) == expected


def test_the_selection_is_recorded_in_config_json(five: Path, eb: Eb) -> None:
    args = ["-k", "login", "--tag", "judge or lint", "--check-id", "*_log*"]
    assert eb("run", "--cwd", str(five), *args).exit_code == 0
    assert stage(five, "config.json")["selection"] == {
        "check_ids": ["*_log*"],
        "check_dir": None,
        "tags": ["judge or lint"],
        "keyword": "login",
        "shard": None,
        "subset": None,
        "changed_since": None,
        "changed_since_commit": None,
        "last_failed": False,
        "last_failed_run_id": None,
        "last_failed_ids": None,
        "select": None,
    }


def test_a_selection_that_leaves_nothing_is_no_checks_found(five: Path, eb: Eb) -> None:
    result = eb("run", "--cwd", str(five), "-k", "nothing_has_this")
    assert result.exit_code == 2 and "No checks found" in result.stderr
    assert ran(five) == []


# --- -x / --maxfail --------------------------------------------------------------------------


@pytest.fixture
def failing_first(project: Project) -> Path:
    # Plan order is path order: f1 fails, f2 fails, then three that would pass.
    return project(
        {
            "eval_checks/1.yaml": recording("f1", fails=True),
            "eval_checks/2.yaml": recording("f2", fails=True),
            "eval_checks/3.yaml": recording("p3"),
            "eval_checks/4.yaml": recording("p4"),
            "eval_checks/5.yaml": recording("p5"),
        },
        config=CONFIG,
    )


def test_exitfirst_stops_launching_after_the_first_failure(failing_first: Path, eb: Eb) -> None:
    result = eb("run", "--cwd", str(failing_first), "-x", "--junit-xml", "junit.xml")
    assert result.exit_code == 1, result.stderr  # a failed run, not an aborted one (3)
    assert ran(failing_first) == ["f1"]  # only one process started
    report = report_of(failing_first)
    assert report["run_passed"] is False and report["aborted_by"] is None
    assert report["halted_by"] == "maxfail" and report["maxfail"] == 1
    assert report["not_run_checks"] == 4
    why = "Not run: stopped after 1 failed or errored check (maxfail 1)"
    by_id = {check["check_id"]: check for check in report["checks"]}
    assert by_id["f1"]["status"] == "failed"
    for name in ("f2", "p3", "p4", "p5"):
        assert by_id[name]["status"] == "error"
        assert by_id[name]["error_detail"] == why
        assert by_id[name]["details"] == {"not_run": True, "not_run_reason": "maxfail"}
        assert by_id[name]["observed_status"] == "error"  # as for an interrupt's not-run checks
    # Every report says why they did not run.
    # On the console they are one `not run` line, not an error line each, and counted apart.
    assert (
        "- not run: 4 checks (f2, p3, p4, p5) - stopped after 1 failed or errored check "
        "(maxfail 1)\n" in result.stdout
    )
    assert "- p5: error" not in result.stdout
    assert result.stdout.splitlines()[-1].startswith(
        "1 failed, 0 passed, 0 errored, 0 skipped, 4 not run in "
    )
    assert "Run stopped after 1 failed or errored check (maxfail 1); 4 checks did not run." in (
        result.stderr
    )
    markdown = (run_dir_of(failing_first) / "report.md").read_text()
    assert "Run stopped after 1 failed or errored check (maxfail 1); 4 checks did not run." in (
        markdown
    )
    suite = ET.parse(failing_first / "junit.xml").getroot()
    skipped = [
        case.get("name") for case in suite.iter("testcase") if case.find("skipped") is not None
    ]
    assert skipped == ["f2", "p3", "p4", "p5"]
    assert suite.find("testsuite/testcase/skipped").get("message") == why  # type: ignore[union-attr]
    execute = stage(failing_first, "execute.json")
    assert execute["halted_by"] == "maxfail" and execute["not_run"] == ["f2", "p3", "p4", "p5"]
    assert stage(failing_first, "score.json")["status"] == "failed"


def test_maxfail_counts_failed_and_errored_checks(project: Project, eb: Eb) -> None:
    root = project(
        {
            "eval_checks/1.yaml": recording("f1", fails=True),
            "eval_checks/2.yaml": recording("p2"),
            # An error (here a timeout) counts like a failure.
            "eval_checks/3.yaml": "schema_version: 1\nid: e3\ntype: deterministic\n"
            "description: Hangs.\nscript: |\n  import time\n  time.sleep(30)\n",
            "eval_checks/4.yaml": recording("f4", fails=True),
            "eval_checks/5.yaml": recording("p5"),
        },
        config=CONFIG + "check_timeout_seconds = 1\n",
    )
    result = eb("run", "--cwd", str(root), "--maxfail", "3")
    assert result.exit_code == 1, result.stderr
    statuses = {check["check_id"]: check["status"] for check in report_of(root)["checks"]}
    assert statuses == {
        "f1": "failed",
        "p2": "passed",
        "e3": "error",
        "f4": "failed",
        "p5": "error",
    }
    assert ran(root) == ["f1", "f4", "p2"]  # p5 never started


def test_maxfail_not_reached_runs_everything(failing_first: Path, eb: Eb) -> None:
    result = eb("run", "--cwd", str(failing_first), "--maxfail", "3")
    assert result.exit_code == 1
    assert ran(failing_first) == ["f1", "f2", "p3", "p4", "p5"]
    report = report_of(failing_first)
    assert report["halted_by"] is None and report["not_run_checks"] == 0
    assert "did not run" not in result.stderr


def test_a_maxfail_stop_never_passes_whatever_the_threshold(failing_first: Path, eb: Eb) -> None:
    result = eb("run", "--cwd", str(failing_first), "-x", "--pass-threshold", "0")
    assert result.exit_code == 1 and "Passed: no" in result.stdout


def test_maxfail_from_the_environment_and_the_later_flag_wins(
    failing_first: Path, eb: Eb, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVAL_BANANA_MAXFAIL", "1")
    assert eb("run", "--cwd", str(failing_first)).exit_code == 1
    assert ran(failing_first) == ["f1"]
    monkeypatch.delenv("EVAL_BANANA_MAXFAIL")
    for path in (failing_first / "ran").iterdir():
        path.unlink()
    # `-x --maxfail 2`: the later flag wins, as with pytest.
    assert eb("run", "--cwd", str(failing_first), "-x", "--maxfail", "2").exit_code == 1
    assert ran(failing_first) == ["f1", "f2"]


def test_failures_from_the_verdict_cache_count_toward_maxfail_and_say_so(
    project: Project, eb: Eb
) -> None:
    """Three cached failures under --maxfail 2 were all listed while the stop said "after 2
    failed": the stop now says the cache answered them before any check started."""
    keyed = {  # `inputs: []`: a key that the files a run writes leave alone
        f"eval_checks/{i}.yaml": recording(name, fails=name.startswith("f")) + "inputs: []\n"
        for i, name in enumerate(("f1", "f2", "f3", "p4"))
    }
    root = project(keyed, config=CONFIG + '\n[cache]\nmode = "on"\n')
    assert eb("run", "--cwd", str(root)).exit_code == 1
    shutil.rmtree(root / "ran")
    shutil.rmtree(root / "results")
    (root / "eval_checks" / "5.yaml").write_text(recording("n5") + "inputs: []\n")
    result = eb("run", "--cwd", str(root), "--maxfail", "2")
    assert result.exit_code == 1, result.stderr
    assert ran(root) == []  # nothing launched: the new check was held back
    report = report_of(root)
    cached = {c["check_id"] for c in report["checks"] if c["details"].get("cache", {}).get("hit")}
    assert cached == {"f1", "f2", "f3", "p4"} and report["failed_checks"] == 3
    assert report["halted_by"] == "maxfail" and report["not_run_checks"] == 1
    said = (
        "Run stopped after 2 failed or errored checks (maxfail 2); 1 check did not run. The "
        "verdict cache answered 3 failed or errored checks before any check started; they "
        "count toward maxfail."
    )
    assert said in result.stderr
    assert said in (run_dir_of(root) / "report.md").read_text()


# --- skip ------------------------------------------------------------------------------------


def test_a_skipped_check_is_not_run_not_scored_and_listed_everywhere(
    project: Project, eb: Eb, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root = project(
        {
            "eval_checks/a.yaml": recording("a_ok"),
            # Would fail and leave ran/b_off behind if it ran.
            "eval_checks/b.yaml": recording("b_off", fails=True, tags=["slow"])
            + 'skip: "broken until the parser upgrade"\n',
            # A judge, with no agent configured: skipped, so the guard does not refuse the run.
            "eval_checks/c.yaml": judge_yaml("c_judge") + "skip: needs an API key\n",
        },
        config=CONFIG,
    )
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = eb("run", "--cwd", str(root), "--junit-xml", "junit.xml")
    assert result.exit_code == 0, result.stderr  # 1/1: the skipped checks are not in the score
    assert ran(root) == ["a_ok"]

    reason = "broken until the parser upgrade"
    # Console.
    assert "Score: 1/1" in result.stdout
    assert f"- b_off: skipped - {reason}" in result.stdout
    assert "- c_judge: skipped - needs an API key" in result.stdout
    # report.json: outside every count, listed under `skipped`.
    report = report_of(root)
    assert [check["check_id"] for check in report["checks"]] == ["a_ok"]
    assert (report["total_checks"], report["points_earned"], report["skipped_checks"]) == (1, 1, 2)
    assert [(item["check_id"], item["reason"], item["tags"]) for item in report["skipped"]] == [
        ("b_off", reason, ["slow"]),
        ("c_judge", "needs an API key", []),
    ]
    assert {check["status"] for check in report["checks"]} <= {"passed", "failed", "error"}
    # report.md, and the step summary that carries it.
    markdown = (run_dir_of(root) / "report.md").read_text()
    for text in (markdown, summary.read_text()):
        assert "| `b_off` | `deterministic` | `skipped` | - | - |" in text
        assert f"## b_off\n\n- Status: `skipped`\n- Reason: {reason}" in text
    # report.html: a row, with the reason as its hint, and a filter group.
    html = (run_dir_of(root) / "report.html").read_text()
    assert 'class="r g-skipped"' in html and f'title="{reason}"' in html
    assert 'data-g="skipped"' in html and "2 skipped" in html
    # JUnit: <skipped message=reason>.
    suite = ET.parse(root / "junit.xml").getroot()
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    skipped = cases["b_off"].find("skipped")
    assert skipped is not None and skipped.get("message") == reason
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures")) == ("3", "2", "0")
    # Stage files.
    assert [item["check_id"] for item in stage(root, "plan.json")["skipped"]] == [
        "b_off",
        "c_judge",
    ]
    assert stage(root, "score.json")["skipped_checks"] == 2
    # No evidence either: nothing was started for it.
    assert not list((run_dir_of(root) / "checks").glob(f"{artifact_stem(check_id='b_off')}*"))


@pytest.mark.parametrize("threshold", ["1.0", "0.0"])
def test_a_run_where_every_selected_check_is_skipped_does_not_pass(
    project: Project, eb: Eb, threshold: str
) -> None:
    root = project(
        {"eval_checks/a.yaml": recording("a") + "skip: later\n"},
        config=CONFIG + f"pass_threshold = {threshold}\n",
    )
    result = eb("run", "--cwd", str(root))
    # Nothing was judged, and a gate that judged nothing is not green.
    assert result.exit_code == 1, result.stderr
    assert "Score: 0/0" in result.stdout and "- a: skipped - later" in result.stdout
    assert ran(root) == []
    # Every report that says why tells that reason, never "below the threshold": 0/0 is no
    # ratio below 0% (report.html's verdict said so under pass_threshold = 0.0).
    why = "No checks ran: every selected check was skipped, so nothing was judged"
    assert why in result.stdout.splitlines()
    assert f"\n{why}.\n" in (run_dir_of(root) / "report.md").read_text()
    html = (run_dir_of(root) / "report.html").read_text()
    assert 'id="verdict">FAILED<small>every selected check was skipped, so nothing was judged<' in (
        html
    )
    assert "below the threshold" not in html


# --- invoke eval -----------------------------------------------------------------------------


@pytest.mark.slow
def test_invoke_eval_passes_the_selection_and_maxfail_flags(project: Project) -> None:
    root = project(
        {
            "eval_checks/1.yaml": recording("judge_a", fails=True, tags=["judge"]),
            "eval_checks/2.yaml": recording("judge_b", tags=["judge"]),
            "eval_checks/3.yaml": recording("judge_c", tags=["judge", "slow"]),
            "eval_checks/4.yaml": recording("lint_a", tags=["lint"]),
            "tasks.py": "from eval_banana.tasks import ns\n",
        },
        config=CONFIG,
    )
    invoke = [sys.executable, "-m", "invoke", "eval"]
    selected = subprocess.run(
        [*invoke, "-k", "judge", "--tag", "not slow", "--check-id", "*_[ab]", "--retries", "1"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert selected.returncode == 1, selected.stderr  # judge_a fails
    assert ran(root) == ["judge_a", "judge_b"]
    config = json.loads(next(root.glob("results/*/stages/config.json")).read_text())
    assert config["selection"]["keyword"] == "judge"
    assert config["settings"]["harness"]["retries"] == 1
    shutil.rmtree(root / "ran")
    stopped = subprocess.run([*invoke, "-x"], cwd=root, capture_output=True, text=True)
    assert stopped.returncode == 1, stopped.stderr  # not 3: a maxfail stop is not an abort
    assert ran(root) == ["judge_a"]
    assert "did not run" in stopped.stderr
