"""The stage files as a public interface: schemas, reruns, status, and the Invoke collection."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import REPO, EbResult, check_yaml

SCHEMAS = REPO / "schemas"
STAGE_FILE_NAMES = {
    "config": "config.json",
    "discover": "discover.json",
    "validate": "plan.json",
    "guard": "guard.json",
    "execute": "execute.json",
    "score": "score.json",
    "report": "report.json",
}


def _validator(name: str) -> jsonschema.protocols.Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    return jsonschema.validators.validator_for(schema)(schema)  # type: ignore[no-any-return]


COUNTING = """\
import sys
from pathlib import Path
with open("counter.txt", "a") as f:
    f.write("ran\\n")
sys.exit({code})
"""


@pytest.fixture
def counted_project(project: Callable[..., Path]) -> Path:
    """Two checks that append to counter.txt when they run: one passes, one fails."""
    return project(
        {
            "eval_checks/pass.yaml": check_yaml("passes", script=COUNTING.format(code=0)),
            "eval_checks/fail.yaml": check_yaml("fails", script=COUNTING.format(code=1)),
        },
        config='[core]\noutput_dir = "runs"\n',
    )


def _run_dir(root: Path) -> Path:
    (run_dir,) = [p for p in (root / "runs").iterdir() if p.is_dir()]
    return run_dir


def test_every_file_of_a_run_validates_against_its_published_schema(
    counted_project: Path, eb: Callable[..., EbResult]
) -> None:
    assert eb("run", "--cwd", str(counted_project)).exit_code == 1
    run_dir = _run_dir(counted_project)
    for stage, file_name in STAGE_FILE_NAMES.items():
        document = json.loads((run_dir / "stages" / file_name).read_text())
        _validator(f"stages/{stage}").validate(document)
        assert document["stage"] == stage and document["schema_version"] == 1
        assert document["$schema"].endswith(f"stages/{stage}.schema.json")
    _validator("report").validate(json.loads((run_dir / "report.json").read_text()))
    results = sorted((run_dir / "checks").glob("*.json"))
    assert len(results) == 2
    for path in results:
        _validator("check-result").validate(json.loads(path.read_text()))


def test_rescoring_changes_the_verdict_without_running_any_check(
    counted_project: Path, eb: Callable[..., EbResult]
) -> None:
    assert eb("run", "--cwd", str(counted_project)).exit_code == 1
    counter = counted_project / "counter.txt"
    assert counter.read_text().count("ran") == 2
    run_dir = _run_dir(counted_project)
    scored = eb("stage", "score", "--run-dir", str(run_dir), "--pass-threshold", "0.5")
    assert scored.exit_code == 0
    score = json.loads((run_dir / "stages" / "score.json").read_text())
    assert score["pass_threshold"] == 0.5 and score["run_passed"] is True
    reported = eb("stage", "report", "--run-dir", str(run_dir))
    assert reported.exit_code == 0
    assert "Passed: yes" in reported.stdout
    report = json.loads((run_dir / "report.json").read_text())
    assert report["run_passed"] is True and report["pass_threshold"] == 0.5
    assert counter.read_text().count("ran") == 2  # nothing ran again


def test_a_check_deleted_from_the_plan_by_hand_is_refused(
    counted_project: Path, eb: Callable[..., EbResult]
) -> None:
    eb("run", "--cwd", str(counted_project))
    run_dir = _run_dir(counted_project)
    plan_path = run_dir / "stages" / "plan.json"
    plan = json.loads(plan_path.read_text())
    plan["checks"] = [check for check in plan["checks"] if check["id"] != "fails"]
    plan_path.write_text(json.dumps(plan))
    # The selection still holds it: a plan without it would pass a run that never ran it.
    refused = eb("stage", "guard", "--run-dir", str(run_dir))
    assert refused.exit_code == 2
    assert "selected_checks" in refused.stderr and "eb stage validate" in refused.stderr


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda text: text[: len(text) // 2], "is not valid JSON"),
        (
            lambda text: text.replace('"schema_version": 1', '"schema_version": 2'),
            "$.schema_version",
        ),
        (lambda text: text.replace('"total_checks": 2', '"total_checks": "two"'), "$.total_checks"),
    ],
)
def test_a_broken_stage_file_is_a_named_setup_error(
    counted_project: Path,
    eb: Callable[..., EbResult],
    damage: Callable[[str], str],
    expected: str,
) -> None:
    eb("run", "--cwd", str(counted_project))
    run_dir = _run_dir(counted_project)
    score_path = run_dir / "stages" / "score.json"
    score_path.write_text(damage(score_path.read_text()))
    result = eb("stage", "report", "--run-dir", str(run_dir))
    assert result.exit_code == 2
    assert str(score_path) in result.stderr and expected in result.stderr
    status = eb("status", "--run-dir", str(run_dir))
    assert status.exit_code == 1
    assert any(
        line.startswith("score") and "invalid" in line for line in status.stdout.splitlines()
    )


def test_missing_stage_file_is_named(counted_project: Path, eb: Callable[..., EbResult]) -> None:
    eb("run", "--cwd", str(counted_project))
    run_dir = _run_dir(counted_project)
    (run_dir / "stages" / "execute.json").unlink()
    result = eb("stage", "score", "--run-dir", str(run_dir))
    assert result.exit_code == 2
    assert "Stage file missing" in result.stderr and "execute.json" in result.stderr


def test_status_reports_stale_stages_after_an_upstream_rerun(
    counted_project: Path, eb: Callable[..., EbResult]
) -> None:
    eb("run", "--cwd", str(counted_project))
    run_dir = _run_dir(counted_project)
    fresh = eb("status", "--cwd", str(counted_project))
    assert fresh.exit_code == 0
    assert all(line.split()[-1] == "ok" for line in fresh.stdout.splitlines()[1:])
    assert eb("stage", "discover", "--run-dir", str(run_dir)).exit_code == 0
    stale = eb("status", "--run-dir", str(run_dir))
    assert stale.exit_code == 1
    rows = {line.split()[0]: line for line in stale.stdout.splitlines()[1:]}
    # discover.json's bytes changed (new timestamp), so plan.json is stale; guard still matches plan.
    assert "stale" in rows["validate"] and "stages/discover.json changed" in rows["validate"]
    assert rows["discover"].split()[-1] == "ok"
    assert eb("stage", "validate", "--run-dir", str(run_dir)).exit_code == 0
    after = eb("status", "--run-dir", str(run_dir))
    rows = {line.split()[0]: line for line in after.stdout.splitlines()[1:]}
    assert rows["validate"].split()[-1] == "ok" and "stale" in rows["guard"]


def test_report_rerun_keeps_the_report_files_byte_identical(
    counted_project: Path, eb: Callable[..., EbResult]
) -> None:
    eb("run", "--cwd", str(counted_project))
    run_dir = _run_dir(counted_project)
    before = (run_dir / "report.json").read_bytes(), (run_dir / "report.md").read_bytes()
    assert eb("stage", "report", "--run-dir", str(run_dir)).exit_code == 1
    assert ((run_dir / "report.json").read_bytes(), (run_dir / "report.md").read_bytes()) == before


@pytest.mark.slow
def test_invoke_collection_from_a_user_repo(counted_project: Path) -> None:
    (counted_project / "tasks.py").write_text("from eval_banana.tasks import ns\n")
    invoke = [sys.executable, "-m", "invoke"]
    listed = subprocess.run(
        [*invoke, "--list"], cwd=counted_project, capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    for stage in ("config", "discover", "validate", "guard", "execute", "score", "report"):
        assert f"eval.{stage}" in listed.stdout
    helped = subprocess.run(
        [*invoke, "--help", "eval.report"], cwd=counted_project, capture_output=True, text=True
    )
    assert "never runs a check" in helped.stdout
    run = subprocess.run([*invoke, "eval"], cwd=counted_project, capture_output=True, text=True)
    assert run.returncode == 1  # one check fails: the verdict passes through Invoke
    assert "Passed: no" in run.stdout
    counter = counted_project / "counter.txt"
    assert counter.read_text().count("ran") == 2
    rescored = subprocess.run(
        [*invoke, "eval.score", "--args", "--pass-threshold 0.5"],
        cwd=counted_project,
        capture_output=True,
        text=True,
    )
    assert rescored.returncode == 0, rescored.stderr
    report = subprocess.run(
        [*invoke, "eval.report"], cwd=counted_project, capture_output=True, text=True
    )
    assert report.returncode == 0 and "Passed: yes" in report.stdout
    assert counter.read_text().count("ran") == 2


@pytest.mark.slow
def test_invoke_collection_added_to_an_existing_namespace(counted_project: Path) -> None:
    (counted_project / "tasks.py").write_text(
        "from invoke import Collection, task\n"
        "from eval_banana.tasks import collection as eval_collection\n\n"
        "@task\ndef hello(c):\n    print('hi')\n\n"
        "ns = Collection(hello)\nns.add_collection(eval_collection)\n"
    )
    listed = subprocess.run(
        [sys.executable, "-m", "invoke", "--list"],
        cwd=counted_project,
        capture_output=True,
        text=True,
    )
    assert "hello" in listed.stdout and "eval.report" in listed.stdout


def test_report_rerun_writes_html_and_junit_without_running_checks(
    counted_project: Path, eb: Callable[..., EbResult]
) -> None:
    eb("run", "--cwd", str(counted_project))
    run_dir = _run_dir(counted_project)
    (run_dir / "report.html").unlink()
    junit = counted_project / "junit.xml"
    result = eb("stage", "report", "--run-dir", str(run_dir), "--junit-xml", str(junit))
    assert result.exit_code == 1
    assert (run_dir / "report.html").is_file()
    assert 'tests="2"' in junit.read_text() and 'failures="1"' in junit.read_text()
    assert (counted_project / "counter.txt").read_text().count("ran") == 2


def _hand_edited_execute(run_dir: Path) -> tuple[Path, str]:
    """execute.json with a result's status set to a value no schema allows, and its digest."""
    from eval_banana.core.files import sha256_bytes

    path = run_dir / "stages" / "execute.json"
    document = json.loads(path.read_text())
    document["results"][0]["status"] = "maybe"
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False))
    return path, sha256_bytes(data=path.read_bytes())


def test_a_file_is_trusted_only_with_the_digest_a_later_stage_recorded_and_our_version(
    counted_project: Path, eb: Callable[..., EbResult]
) -> None:
    from eval_banana.core.errors import StageFileError
    from eval_banana.core.files import sha256_bytes
    from eval_banana.core.version import tool_version
    from eval_banana.stagefiles.read import read_stage_file

    eb("run", "--cwd", str(counted_project))
    run_dir = _run_dir(counted_project)
    scored = json.loads((run_dir / "stages" / "score.json").read_text())
    vouched = scored["inputs"]["execute"]
    # As eb wrote it: the score stage's digest vouches for it, and it reads the same either way.
    trusted = read_stage_file(run_dir=run_dir, stage="execute", vouched=vouched).doc
    checked = read_stage_file(run_dir=run_dir, stage="execute").doc
    assert trusted.model_dump(mode="json") == checked.model_dump(mode="json")

    path, edited_digest = _hand_edited_execute(run_dir)
    # Edited after the score stage read it: the recorded digest no longer matches, so checked.
    with pytest.raises(StageFileError, match="status"):
        read_stage_file(run_dir=run_dir, stage="execute", vouched=vouched)
    # Only the bytes' own digest skips the checks (what `eb merge` relies on, see docs).
    read_stage_file(run_dir=run_dir, stage="execute", vouched=edited_digest)
    # ...and only for files this version of eb wrote.
    document = json.loads(path.read_text())
    document["tool_version"] = f"{tool_version()}.older"
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False))
    with pytest.raises(StageFileError, match="status"):
        read_stage_file(
            run_dir=run_dir, stage="execute", vouched=sha256_bytes(data=path.read_bytes())
        )


def test_a_stage_file_read_again_unchanged_is_checked_once_and_an_edit_is_checked_again(
    counted_project: Path, eb: Callable[..., EbResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `eb update` and `eb status` read plan.json up to six times in one process: a 10,000-check
    # plan was schema- and consistency-checked each time.
    import os

    from eval_banana.core.errors import StageFileError
    from eval_banana.stagefiles import read as read_module

    eb("run", "--cwd", str(counted_project))
    run_dir = _run_dir(counted_project)
    monkeypatch.setattr(read_module, "_CHECKED", set())
    checked: list[str] = []
    real = read_module.inconsistency

    def counted(*, stage: str, doc: object) -> object:
        checked.append(stage)
        return real(stage=stage, doc=doc)

    monkeypatch.setattr(read_module, "inconsistency", counted)
    first = read_module.read_stage(run_dir=run_dir, stage="execute")
    again = read_module.read_stage(run_dir=run_dir, stage="execute")
    # config.json is read too (the run id execute.json must name), and checked once as well.
    assert checked == ["execute", "config"]
    assert first.model_dump(mode="json") == again.model_dump(mode="json")
    # Edited in place, to the same size, its modification time put back: still checked again.
    path = run_dir / "stages" / "execute.json"
    before = path.stat()
    data = path.read_bytes()
    assert b'"status": "passed"' in data
    with open(path, "r+b") as handle:
        handle.write(data.replace(b'"status": "passed"', b'"status": "passee"', 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_ino == before.st_ino
    with pytest.raises(StageFileError, match="status"):
        read_module.read_stage(run_dir=run_dir, stage="execute")
