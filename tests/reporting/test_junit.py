"""JUnit XML over real runs, read back by a real consumer (junitparser)."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from eval_banana.reporting.junit import classname, write_junit
from tests.reporting.conftest import Run


def _suite(path: Path) -> TestSuite:
    xml = JUnitXml.fromfile(str(path))
    suites = list(xml) if isinstance(xml, JUnitXml) else [xml]
    assert len(suites) == 1
    return suites[0]


def _write(run: Run, tmp_path: Path) -> tuple[Path, TestSuite]:
    path = tmp_path / "out" / "junit.xml"
    write_junit(report=run.report, project_root=run.project, path=path)
    return path, _suite(path)


def _counts(report: dict[str, Any]) -> dict[str, int]:
    not_run = sum(1 for c in report["checks"] if c["details"].get("not_run") is True)
    return {
        "tests": report["total_checks"],
        "failures": report["failed_checks"],
        "errors": report["errored_checks"] - not_run,
        "skipped": not_run,
    }


def _case_results(case: TestCase) -> list[object]:
    return list(case.result)


def test_counts_match_report_json(finished_run: Run, tmp_path: Path) -> None:
    _, suite = _write(finished_run, tmp_path)
    assert suite.name == "eval-banana"
    expected = _counts(finished_run.report)
    assert expected["failures"] >= 2 and expected["errors"] >= 1  # the fixture has both
    got = {"tests": suite.tests, "failures": suite.failures, "errors": suite.errors}
    assert got | {"skipped": suite.skipped} == expected


def test_one_testcase_per_check_with_classname_name_time(finished_run: Run, tmp_path: Path) -> None:
    _, suite = _write(finished_run, tmp_path)
    cases = {case.name: case for case in suite}
    report_checks = {check["check_id"]: check for check in finished_run.report["checks"]}
    assert set(cases) == set(report_checks)
    assert cases["answer_is_polite"].classname == "eval_checks.judges.polite"
    assert cases["greeting_ok"].classname == "eval_checks.pass"
    for check_id, check in report_checks.items():
        assert cases[check_id].time == check["duration_ms"] / 1000


def test_statuses_map_to_failure_error_and_nothing(finished_run: Run, tmp_path: Path) -> None:
    _, suite = _write(finished_run, tmp_path)
    cases = {case.name: case for case in suite}
    assert _case_results(cases["greeting_ok"]) == []
    (failure,) = _case_results(cases["totals_match"])
    assert isinstance(failure, Failure)
    assert failure.message == "failed: exit code 1"
    (judge_failure,) = _case_results(cases["answer_is_polite"])
    assert isinstance(judge_failure, Failure)
    assert "ignores" in (judge_failure.message or "")
    (error,) = _case_results(cases["slow_thing"])
    assert isinstance(error, Error)
    assert "timed out" in (error.message or "")


def test_properties_and_stdout(finished_run: Run, tmp_path: Path) -> None:
    path, _ = _write(finished_run, tmp_path)
    root = ET.parse(path).getroot()
    case = root.find(".//testcase[@name='totals_match']")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iterfind("properties/property")}
    check = next(c for c in finished_run.report["checks"] if c["check_id"] == "totals_match")
    assert props["check_type"] == "deterministic"
    assert props["expect"] == "pass"
    assert props["check_definition_sha256"] == check["check_definition_sha256"]
    out = case.findtext("system-out") or ""
    # The markup arrives as text, and the control characters XML cannot carry are made visible.
    assert "<script>alert(1)</script>" in out
    assert "\\x1b[31mred" in out and "\\x00 end" in out


def test_control_check_is_shown_as_control(finished_run: Run, tmp_path: Path) -> None:
    path, suite = _write(finished_run, tmp_path)
    check = next(c for c in finished_run.report["checks"] if c["check_id"] == "planted_defect")
    root = ET.parse(path).getroot()
    case = root.find(".//testcase[@name='planted_defect']")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iterfind("properties/property")}
    assert props["expect"] == "fail"
    assert props["control"].startswith(check["status"]) and "control: defect" in props["control"]
    results = _case_results(next(c for c in suite if c.name == "planted_defect"))
    if check["status"] == "failed":
        assert "control: defect missed" in (results[0].message or "")  # type: ignore[attr-defined]
    else:
        assert results == []


def test_not_run_checks_are_skipped(aborted_run: Run, tmp_path: Path) -> None:
    path, suite = _write(aborted_run, tmp_path)
    expected = _counts(aborted_run.report)
    assert expected["skipped"] >= 1
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (
        expected["tests"],
        expected["failures"],
        expected["errors"],
        expected["skipped"],
    )
    cases = {case.name: case for case in suite}
    (skipped,) = _case_results(cases["never_started"])
    assert isinstance(skipped, Skipped)
    assert (skipped.message or "").startswith("Not run: ")


def test_classname_for_paths() -> None:
    check = {"source_path": "/p/a/b/c.check.yaml"}
    assert classname(check=check, project_root="/p") == "a.b.c.check"
    assert classname(check={"source_path": "/elsewhere/x.yml"}, project_root="/p") == "elsewhere.x"


def test_junit_via_eb_run_relative_to_project_root(tmp_path: Path) -> None:
    from tests.reporting.conftest import run_eb, write_project

    project = write_project(tmp_path / "proj", checks={"eval_checks/pass.yaml": _PASS})
    completed = run_eb("run", "--cwd", str(project), "--junit-xml", "reports/junit.xml")
    assert completed.returncode == 0, completed.stderr
    suite = _suite(project / "reports" / "junit.xml")
    assert (suite.tests, suite.failures, suite.errors) == (1, 0, 0)


_PASS = """\
schema_version: 1
id: only_check
type: deterministic
description: Passes.
script: print("ok")
"""


def _wobbly(flag: Path) -> str:
    """A check sampled three times whose first sample to start fails and the others pass:
    flaky, and passed by its rule (any)."""
    return (
        "schema_version: 1\nid: wobbly\ntype: deterministic\ndescription: Disagrees.\n"
        "repeats: 3\naggregate: any\nscript: |\n  import os, sys\n  try:\n"
        f"      os.close(os.open({str(flag)!r}, os.O_CREAT | os.O_EXCL | os.O_WRONLY))\n"
        "  except FileExistsError:\n      sys.exit(0)\n  sys.exit('the first sample fails')\n"
    )


def test_a_check_flaky_under_fail_on_flaky_is_a_failure_in_the_junit_file(tmp_path: Path) -> None:
    # The run failed (exit 1) for its flaky check alone, while the JUnit file said
    # failures="0" errors="0": a JUnit reporter showed a red run green.
    from tests.reporting.conftest import run_eb, write_project

    for fail_on_flaky in (True, False):
        root = tmp_path / f"fail_on_flaky_{fail_on_flaky}"
        project = write_project(
            root / "proj",
            checks={"eval_checks/pass.yaml": _PASS, "eval_checks/wobbly.yaml": _wobbly(root / "f")},
        )
        flags = ["--fail-on-flaky"] if fail_on_flaky else []
        completed = run_eb("run", "--cwd", str(project), "--junit-xml", "j.xml", *flags)
        assert completed.returncode == (1 if fail_on_flaky else 0), completed.stderr
        suite = _suite(project / "j.xml")
        assert (suite.tests, suite.failures, suite.errors) == (2, int(fail_on_flaky), 0)
        cases = {case.name: _case_results(case) for case in suite}
        assert cases["only_check"] == []
        if not fail_on_flaky:
            assert cases["wobbly"] == []
            continue
        (failure,) = cases["wobbly"]
        assert isinstance(failure, Failure) and failure.type == "flaky"
        assert failure.message == (
            "flaky under --fail-on-flaky: its 3 samples disagreed (pass rate 67%); "
            "its rule (any) passed it"
        )


_GATED_FAMILY = """\
schema_version: 1
id: fam
type: deterministic
description: "case {{ case.id }}"
cases_from: data/rows.jsonl
min_pass_rate: 0.85
script: |
  import json, sys
  sys.exit(0 if json.load(open(sys.argv[1]))["case"]["ok"] == "yes" else 1)
"""


def test_a_family_gate_that_did_not_hold_is_named_beside_its_failed_cases(tmp_path: Path) -> None:
    # The run meets its threshold (6 of 8) and fails for the family's gate (85%) alone: the
    # two failed cases are the failures a reporter shows; the suite names the gate they broke.
    from tests.reporting.conftest import run_eb, write_project

    rows = "".join(
        f'{{"id": "c{n}", "ok": "{"no" if n in (2, 5) else "yes"}"}}\n' for n in range(8)
    )
    project = write_project(
        tmp_path / "proj",
        checks={"eval_checks/fam.yaml": _GATED_FAMILY, "data/rows.jsonl": rows},
    )
    completed = run_eb(
        "run", "--cwd", str(project), "--junit-xml", "j.xml", "--pass-threshold", "0.5"
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr
    suite = _suite(project / "j.xml")
    assert (suite.tests, suite.failures, suite.errors) == (8, 2, 0)
    properties = {prop.name: prop.value for prop in suite.properties()}
    assert properties["run_passed"] == "false"
    assert properties["gates_not_held"] == "fam"
    failed = sorted(case.name for case in suite if _case_results(case))
    assert failed == ["fam[c2]", "fam[c5]"]


_SKIPPED = """\
schema_version: 1
id: waits
type: deterministic
description: Skipped.
skip: waiting for the fixture
script: print("ok")
"""


def _verdict_case(suite: TestSuite) -> Failure:
    """The failure of the suite's `eval_banana.run_verdict` testcase, its last."""
    *_, case = list(suite)
    assert (case.classname, case.name) == ("eval_banana", "run_verdict")
    (failure,) = _case_results(case)
    assert isinstance(failure, Failure)
    return failure


def test_a_run_whose_every_check_is_skipped_fails_in_its_junit_file_and_annotations(
    tmp_path: Path,
) -> None:
    # Exit 1 ("No checks ran"), while the JUnit file said failures="0" errors="0" (a reporter
    # showed the run green) and --annotations github printed no ::error saying why.
    from tests.reporting.conftest import run_eb, write_project

    project = write_project(tmp_path / "proj", checks={"eval_checks/waits.yaml": _SKIPPED})
    completed = run_eb(
        "run", "--cwd", str(project), "--junit-xml", "j.xml", "--annotations", "github"
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr
    reason = "Run did not pass: every selected check was skipped, so nothing was judged"
    suite = _suite(project / "j.xml")
    # The skipped check stays a skip; the run's own testcase fails, and counts as a failure.
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (2, 1, 0, 1)
    failure = _verdict_case(suite)
    assert (failure.type, failure.message, failure.text) == ("run_verdict", reason, reason)
    assert f"::error title=eval_banana did not pass::{reason}" in completed.stdout.splitlines()


def test_an_aborted_run_with_no_failed_check_fails_in_its_junit_file(tmp_path: Path) -> None:
    # The token fuse tripped on a judge that passed: the others never started (skipped in
    # JUnit), so the file said failures="0" errors="0" for a run that ended with exit 3.
    from tests.reporting.conftest import REPO, run_eb, write_project

    judge = (
        "schema_version: 1\nid: {id}\ntype: harness_judge\ndescription: Judge {id}.\n"
        "instructions: |\n  Judge it.\n  standin: score=1\n"
    )
    project = write_project(
        tmp_path / "proj",
        checks={f"eval_checks/{name}.yaml": judge.format(id=name) for name in ("j1", "j2", "j3")},
    )
    config = project / ".eval-banana" / "config.toml"
    config.write_text(
        config.read_text()
        .replace('agent = "standin"', 'agent = "claude"\ntoken_fuse = 50')
        .replace("[core]\n", "[core]\nmax_parallel_checks = 1\n")
    )
    path = f"{REPO / 'tests' / 'agents'}{os.pathsep}{os.environ['PATH']}"
    completed = run_eb("run", "--cwd", str(project), "--junit-xml", "j.xml", PATH=path)
    assert completed.returncode == 3, completed.stdout + completed.stderr
    report = json.loads(next(project.glob(".eval-banana/results/*/report.json")).read_text())
    assert report["aborted_by"] == "token_fuse" and report["passed_checks"] == 1
    suite = _suite(project / "j.xml")
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (4, 1, 0, 2)
    failure = _verdict_case(suite)
    assert failure.type == "aborted"
    assert (failure.message or "").startswith("Run aborted (token_fuse: token fuse tripped); ")
    assert failure.message in completed.stderr


def test_a_report_html_that_cannot_be_written_fails_the_junit_file_written_after_it(
    tmp_path: Path,
) -> None:
    # report.html could not be written (exit 3), and the JUnit file written after it showed
    # the run green: report.json keeps the verdict the checks earned, a pass.
    from tests.reporting.conftest import run_eb, write_project

    blocks_page = (
        "schema_version: 1\nid: blocks\ntype: deterministic\ndescription: Passes.\n"
        "script: |\n  import json, os, pathlib, sys\n"
        "  out = json.loads(pathlib.Path(sys.argv[1]).read_text())['output_dir']\n"
        "  os.makedirs(pathlib.Path(out).parent.parent / 'report.html')\n"
    )
    project = write_project(tmp_path / "proj", checks={"eval_checks/blocks.yaml": blocks_page})
    completed = run_eb("run", "--cwd", str(project), "--junit-xml", "j.xml")
    assert completed.returncode == 3, completed.stdout + completed.stderr
    run_dir = next(project.glob(".eval-banana/results/*"))
    assert json.loads((run_dir / "report.json").read_text())["run_passed"] is True
    suite = _suite(project / "j.xml")
    assert (suite.tests, suite.failures, suite.errors) == (2, 1, 0)
    failure = _verdict_case(suite)
    fault = f"Cannot write {run_dir / 'report.html'}: Is a directory; the run is aborted"
    assert (failure.type, failure.message) == ("aborted", fault)
