"""The --result-out document: rules, formats byte for byte, every status via eb."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from eval_banana.core.errors import (
    ConfigError,
    DefinitionError,
    GuardError,
    LinkLoopError,
    NoChecksError,
    OutputDirError,
    RunAborted,
    UsageError,
    WriteFault,
)
from eval_banana.reporting.gitobs import DIRTY_TREE_ALGORITHM, git_commit, observe_git
from eval_banana.reporting.result_doc import (
    build_provenance,
    build_result_document,
    check_result_target,
    classify_failure,
    parse_provenance_fields,
    render_result,
    report_copy,
    write_result,
)
from tests.reporting.conftest import Run, run_eb, write_project

CLEAN_DIGEST = "sha256:96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        [*GIT, *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def make_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "init")
    return path


# --- git observation -----------------------------------------------------------------------


def test_clean_tree_digest_is_the_hash_of_two_nul_bytes(tmp_path: Path) -> None:
    assert "sha256:" + hashlib.sha256(b"\x00\x00").hexdigest() == CLEAN_DIGEST
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    observed = observe_git(cwd=repo)
    assert observed == {
        "commit": git(repo, "rev-parse", "HEAD").strip(),
        "dirty_tree_digest": CLEAN_DIGEST,
        "dirty_tree_algorithm": DIRTY_TREE_ALGORITHM,
    }
    assert DIRTY_TREE_ALGORITHM == "eb-git-status-v2-sha256"


def test_dirty_tree_digest_follows_the_algorithm(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n", "b.txt": "bee\n"})
    (repo / "a.txt").write_text("two \udcff\n".encode("utf-8", "surrogateescape").decode("latin-1"))
    (repo / "b.txt").write_text("staged\n")
    git(repo, "add", "b.txt")
    (repo / "new.txt").write_text("untracked\n")
    parts = [
        subprocess.run([*GIT, *args], cwd=repo, capture_output=True, check=True).stdout
        for args in (["status", "--porcelain"], ["diff"], ["diff", "--cached"])
    ]
    decoded = [part.decode("utf-8", errors="replace").encode("utf-8") for part in parts]
    expected = "sha256:" + hashlib.sha256(b"\x00".join(decoded)).hexdigest()
    observed = observe_git(cwd=repo)
    assert observed["dirty_tree_digest"] == expected != CLEAN_DIGEST
    assert b"?? new.txt" in parts[0] and parts[1] and parts[2]


def test_a_same_size_edit_the_repository_s_config_hides_from_git_changes_the_digest(
    tmp_path: Path,
) -> None:
    # A judge can write .git/config: told to compare only the size and the whole seconds of
    # the modification time, git would call a same-size edit with its times put back clean.
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    edited = repo / "a.txt"
    os.utime(edited, (1577836800, 1577836800))  # 2020: older than the index, never racily clean
    git(repo, "update-index", "--refresh")
    git(repo, "config", "core.trustctime", "false")
    git(repo, "config", "core.checkStat", "minimal")
    assert observe_git(cwd=repo)["dirty_tree_digest"] == CLEAN_DIGEST
    # git compares whole seconds of the status-change time, which no one can set back: the
    # edit comes in a later second than the one the index noted.
    time.sleep(1.02 - time.time() % 1)
    times = edited.stat()
    edited.write_text("two\n")
    os.utime(edited, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert git(repo, "status", "--porcelain") == ""  # git, as configured, sees nothing
    assert observe_git(cwd=repo)["dirty_tree_digest"] != CLEAN_DIGEST


def test_no_repository_no_commit_no_folder(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    ceiling = {"GIT_CEILING_DIRECTORIES": str(tmp_path)}
    old = {k: os.environ.get(k) for k in ceiling}
    os.environ.update(ceiling)
    try:
        assert observe_git(cwd=plain) == {
            "commit": None,
            "dirty_tree_digest": None,
            "dirty_tree_algorithm": None,
        }
        empty = tmp_path / "empty"
        empty.mkdir()
        git(empty, "init", "-q")
        fresh = observe_git(cwd=empty)
        assert fresh["commit"] is None and fresh["dirty_tree_digest"] == CLEAN_DIGEST
        assert git_commit(cwd=tmp_path / "missing") is None
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# --- document rules ------------------------------------------------------------------------

OBSERVED = {
    "commit": "c0ffee",
    "dirty_tree_digest": CLEAN_DIGEST,
    "dirty_tree_algorithm": DIRTY_TREE_ALGORITHM,
}
MOMENT = datetime(2026, 11, 30, 0, 24, 31, 189726, tzinfo=UTC)


def _report() -> dict[str, Any]:
    return {
        "run_passed": True,
        "checks": [
            {"check_id": "d", "status": "passed", "reason": None, "details": {}},
            {
                "check_id": "j1",
                "status": "failed",
                "reason": "no",
                "details": {"model": 5, "reasoning_effort": None},
            },
            {
                "check_id": "j2",
                "status": "passed",
                "reason": "yes",
                "details": {"model": "m-2", "reasoning_effort": "high"},
            },
            {"check_id": "j3", "status": "passed", "reason": "ok", "details": {"model": "m-3"}},
        ],
    }


def _document(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "status": "completed",
        "report": _report(),
        "error": None,
        "pass_threshold": 1.0,
        "harness_family": "claude",
        "observed_before": OBSERVED,
        "commit_after": "c0ffee",
        "provenance": {"attempt": None},
        "tool_version": "1.2.3",
        "produced_at": MOMENT,
    }
    values.update(overrides)
    return build_result_document(**values)


def test_document_keys_order_and_values() -> None:
    document = _document()
    assert list(document) == [
        "schema_version",
        "tool",
        "tool_version",
        "status",
        "run_passed",
        "pass_threshold",
        "harness",
        "observed",
        "produced_at",
        "provenance",
        "checks",
        "error",
    ]
    assert document["tool"] == "eval-banana-staged" and document["tool_version"] == "1.2.3"
    assert document["harness"] == {"family": "claude", "effort": "high"}
    assert document["observed"] == {
        "commit_before": "c0ffee",
        "commit_after": "c0ffee",
        "dirty_tree_digest": CLEAN_DIGEST,
        "dirty_tree_algorithm": DIRTY_TREE_ALGORITHM,
    }
    assert document["produced_at"] == "2026-11-30T00:24:31.189726+00:00"
    assert document["checks"] == [
        {"id": "d", "status": "passed", "reason": None, "model": None},
        {"id": "j1", "status": "failed", "reason": "no", "model": None},
        {"id": "j2", "status": "passed", "reason": "yes", "model": "m-2"},
        {"id": "j3", "status": "passed", "reason": "ok", "model": "m-3"},
    ]
    assert document["run_passed"] is True


def test_run_passed_is_false_for_every_other_status() -> None:
    for status in ("no_checks", "config_error", "harness_error"):
        document = _document(status=status, report=None, error="boom")
        assert document["run_passed"] is False
        assert document["checks"] == [] and document["error"] == "boom"
        assert document["harness"]["effort"] is None


def test_provenance_fields() -> None:
    fields = parse_provenance_fields(values=["b=1", "a=x=y", "empty=", "b=2"])
    assert fields == {"b": "2", "a": "x=y", "empty": ""}
    assert list(fields) == ["b", "a", "empty"]
    assert build_provenance(attempt="7", fields=fields) == {
        "attempt": "7",
        "b": "2",
        "a": "x=y",
        "empty": "",
    }
    assert build_provenance(attempt="7", fields={"attempt": "8"}) == {"attempt": "8"}
    assert build_provenance(attempt=None, fields={}) == {"attempt": None}
    for bad in ("novalue", "=x"):
        with pytest.raises(UsageError) as caught:
            parse_provenance_fields(values=["ok=1", bad])
        assert caught.value.message == f"--provenance-field must be key=value, got: {bad}"


def test_classification_is_by_type() -> None:
    for reported in (False, True):
        assert classify_failure(error=NoChecksError("anything"), reported=reported) == "no_checks"
        assert classify_failure(error=GuardError("anything"), reported=reported) == "harness_error"
        for error in (
            DefinitionError("No checks found"),
            ConfigError("requires a harness"),
            OutputDirError("x"),
            UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"),
        ):
            assert classify_failure(error=error, reported=reported) == "config_error"
        assert classify_failure(error=RunAborted("stopped"), reported=reported) == "completed"
        assert classify_failure(error=UsageError("bad flag"), reported=reported) is None
    # A file eb could not write: a setup failure before the report, an aborted run after it.
    for fault in (
        WriteFault(path="out/junit.xml", cause="Is a directory"),
        LinkLoopError("loop", file="out/junit.xml", hint="fix", after_run=True),
    ):
        assert classify_failure(error=fault, reported=False) == "config_error"
        assert classify_failure(error=fault, reported=True) == "completed"


def test_a_run_that_ended_with_an_error_did_not_pass_whatever_its_report_says() -> None:
    document = _document(error="Cannot write out/junit.xml: Is a directory; the run is aborted")
    assert document["status"] == "completed" and document["run_passed"] is False
    report = {"run_passed": True, "aborted_by": None}
    copied = report_copy(report=report, report_md="# eval-banana report\n", error="boom [x]")
    assert copied == (
        "**eb ended this run with exit 3 after writing this report:** boom \\[x\\]. The report "
        "below holds the verdict the checks earned; the run did not pass.\n\n"
        "# eval-banana report\n"
    )
    # A report that records its abort, or a run without an error, is copied as written.
    aborted = {"run_passed": False, "aborted_by": "interrupt"}
    assert report_copy(report=aborted, report_md="r\n", error="Run aborted") == "r\n"
    assert report_copy(report=report, report_md="r\n", error=None) == "r\n"


# --- formats, byte for byte ----------------------------------------------------------------

SMALL = {"schema_version": 1, "status": "no_checks", "error": "No checks found", "x": "é"}
SMALL_JSON = '{\n  "schema_version": 1,\n  "status": "no_checks",\n  "error": "No checks found",\n  "x": "é"\n}'  # noqa: E501


def test_md_format_without_report() -> None:
    text = render_result(document=SMALL, report_md=None, fmt="md")
    assert text == "```eval-banana-result v1\n" + SMALL_JSON + "\n```\n"


def test_md_format_with_report() -> None:
    report_md = "# eval-banana report\n\n| Field | Value |\n"
    text = render_result(document=SMALL, report_md=report_md, fmt="md")
    assert text == "```eval-banana-result v1\n" + SMALL_JSON + "\n```\n\n" + report_md


def test_json_format() -> None:
    assert render_result(document=SMALL, report_md="# ignored\n", fmt="json") == SMALL_JSON + "\n"


# --- the target ----------------------------------------------------------------------------


def test_a_link_is_followed_as_a_shell_s_redirection_follows_it(tmp_path: Path) -> None:
    # Its target is written (replaced whole) and the link kept; what the target is decides
    # what is refused.
    real = tmp_path / "real.md"
    real.write_text("an earlier document\n")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    check_result_target(path=link, shown="given/link.md")
    write_result(path=link, text="x")
    assert link.is_symlink() and real.read_text() == "x"
    dangling = tmp_path / "dangling.md"
    dangling.symlink_to(tmp_path / "made.md")
    check_result_target(path=dangling)
    write_result(path=dangling, text="y")
    assert dangling.is_symlink() and (tmp_path / "made.md").read_text() == "y"
    (tmp_path / "folder").mkdir()
    to_folder = tmp_path / "to-folder"
    to_folder.symlink_to(tmp_path / "folder")
    with pytest.raises(OutputDirError) as caught:
        check_result_target(path=to_folder, shown="to-folder")
    assert (
        caught.value.message == "Refusing --result-out because the path is a directory: to-folder"
    )
    (tmp_path / "file").write_text("x")
    under_file = tmp_path / "under-file"
    under_file.symlink_to(tmp_path / "file" / "sub" / "out.md")
    with pytest.raises(OutputDirError) as caught:
        check_result_target(path=under_file)
    assert "is not a directory" in caught.value.message


def test_parent_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputDirError) as caught:
        check_result_target(path=tmp_path / "file" / "sub" / "out.md")
    assert "is not a directory" in caught.value.message
    check_result_target(path=tmp_path / "new" / "deeper" / "out.md")  # creatable: no error


def test_write_result_creates_parents_with_artifact_permissions(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "result.md"
    old = os.umask(0o027)
    try:
        write_result(path=target, text="hello\n")
    finally:
        os.umask(old)
    assert target.read_text() == "hello\n"
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in target.parent.iterdir()] == ["result.md"]


# --- every status through a real `eb run` ----------------------------------------------------


def _read_doc(path: Path) -> tuple[dict[str, Any], str]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("```eval-banana-result v1\n")
    body, _, rest = text[len("```eval-banana-result v1\n") :].partition("\n```\n")
    return json.loads(body), rest


def test_completed_passing_run_in_a_clean_repo(tmp_path: Path) -> None:
    project = write_project(tmp_path / "proj", checks={"eval_checks/pass.yaml": _PASS})
    (project / ".gitignore").write_text(".eval-banana/results/\nout/\n")
    make_repo(project, {})
    head = git(project, "rev-parse", "HEAD").strip()
    completed = run_eb(
        "run",
        "--cwd",
        str(project),
        "--result-out",
        "out/result.md",
        "--provenance-attempt",
        "3",
        "--provenance-field",
        "job=ci=1",
        cwd=project,
    )
    assert completed.returncode == 0, completed.stderr
    document, rest = _read_doc(project / "out" / "result.md")
    run_dir = sorted((project / ".eval-banana" / "results").iterdir())[-1]
    assert rest == "\n" + (run_dir / "report.md").read_text(encoding="utf-8")
    assert document["status"] == "completed" and document["run_passed"] is True
    assert document["error"] is None
    assert document["observed"] == {
        "commit_before": head,
        "commit_after": head,
        "dirty_tree_digest": CLEAN_DIGEST,
        "dirty_tree_algorithm": DIRTY_TREE_ALGORITHM,
    }
    assert document["provenance"] == {"attempt": "3", "job": "ci=1"}
    assert document["checks"] == [
        {"id": "only_check", "status": "passed", "reason": None, "model": None}
    ]
    assert document["pass_threshold"] == 1.0


def test_completed_failing_run_json_format(finished_run: Run, tmp_path: Path) -> None:
    target = tmp_path / "result.json"
    completed = run_eb(
        "run",
        "--cwd",
        str(finished_run.project),
        "--result-out",
        str(target),
        "--result-format",
        "json",
        "--tag",
        "judge",
    )
    assert completed.returncode == 1, completed.stderr
    text = target.read_text(encoding="utf-8")
    document = json.loads(text)
    assert text == json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    assert document["status"] == "completed" and document["run_passed"] is False
    assert document["harness"] == {"family": "standin", "effort": "low"}
    assert {c["id"]: c["model"] for c in document["checks"]} == {
        "answer_is_polite": "stand-in-model",
        "answer_is_kind": "stand-in-model",
    }
    assert document["observed"]["commit_before"] is None or isinstance(
        document["observed"]["commit_before"], str
    )


def test_aborted_run_is_completed_not_passed(aborted_run: Run) -> None:
    document, rest = _read_doc(aborted_run.project / "result.md")
    assert aborted_run.exit_code == 3
    assert document["status"] == "completed" and document["run_passed"] is False
    assert document["error"].startswith("Run aborted (interrupt")
    assert [c["id"] for c in document["checks"]] == [
        c["check_id"] for c in aborted_run.report["checks"]
    ]
    assert rest == "\n" + (aborted_run.run_dir / "report.md").read_text(encoding="utf-8")


def test_no_checks(tmp_path: Path) -> None:
    project = write_project(tmp_path / "proj", checks={})
    target = tmp_path / "r.md"
    completed = run_eb("run", "--cwd", str(project), "--result-out", str(target))
    assert completed.returncode == 2
    document, rest = _read_doc(target)
    assert document["status"] == "no_checks" and document["run_passed"] is False
    assert document["checks"] == [] and document["error"] == "No checks found"
    assert rest == ""
    assert target.read_text(encoding="utf-8").endswith("\n```\n")
    assert document["harness"]["family"] == "standin"


def test_harness_error(tmp_path: Path) -> None:
    project = write_project(tmp_path / "proj", checks={"eval_checks/j.yaml": _JUDGE})
    target = tmp_path / "r.json"
    completed = run_eb(
        "run",
        "--cwd",
        str(project),
        "--harness-agent",
        "",
        "--result-out",
        str(target),
        "--result-format",
        "json",
    )
    assert completed.returncode == 2, completed.stderr
    document = json.loads(target.read_text(encoding="utf-8"))
    assert document["status"] == "harness_error"
    assert document["error"] and document["error"] in completed.stderr
    assert document["harness"]["family"] is None


def test_config_error_from_a_broken_definition(tmp_path: Path) -> None:
    project = write_project(tmp_path / "proj", checks={"eval_checks/bad.yaml": "id: [unclosed\n"})
    target = tmp_path / "r.json"
    completed = run_eb(
        "run", "--cwd", str(project), "--result-out", str(target), "--result-format", "json"
    )
    assert completed.returncode == 2
    document = json.loads(target.read_text(encoding="utf-8"))
    assert document["status"] == "config_error" and document["checks"] == []
    assert document["error"] in completed.stderr


def test_config_error_before_the_config_loads(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".eval-banana").mkdir(parents=True)
    (project / ".eval-banana" / "config.toml").write_text("[core\nbroken = ")
    target = tmp_path / "r.json"
    completed = run_eb(
        "run",
        "--cwd",
        str(project),
        "--pass-threshold",
        "0.5",
        "--harness-agent",
        "codex",
        "--result-out",
        str(target),
        "--result-format",
        "json",
    )
    assert completed.returncode == 2
    document = json.loads(target.read_text(encoding="utf-8"))
    assert document["status"] == "config_error"
    assert document["pass_threshold"] == 0.5
    assert document["harness"] == {"family": "codex", "effort": None}


def test_usage_errors_write_nothing(tmp_path: Path) -> None:
    project = write_project(tmp_path / "proj", checks={"eval_checks/pass.yaml": _PASS})
    target = tmp_path / "r.md"
    completed = run_eb(
        "run", "--cwd", str(project), "--result-out", str(target), "--provenance-field", "nokey"
    )
    assert completed.returncode == 2
    assert "--provenance-field must be key=value, got: nokey" in completed.stderr
    assert not target.exists()
    assert not (project / ".eval-banana" / "results").exists()


def test_result_out_dev_stdout_prints_the_document_where_stdout_goes(tmp_path: Path) -> None:
    # /dev/stdout is a link, and into a pipe it ends in /proc's link to `pipe:[N]`, which no
    # path names: the document is written through the link, after eb's own lines.
    project = write_project(tmp_path / "proj", checks={"eval_checks/pass.yaml": _PASS})
    completed = run_eb(
        "run", "--cwd", str(project), "--result-out", "/dev/stdout", "--result-format", "json"
    )
    assert completed.returncode == 0, completed.stderr
    start = completed.stdout.index('{\n  "schema_version"')
    document, _ = json.JSONDecoder().raw_decode(completed.stdout, start)
    assert document["status"] == "completed" and document["run_passed"] is True
    assert os.path.islink("/dev/stdout")


_PASS = """\
schema_version: 1
id: only_check
type: deterministic
description: Passes.
script: print("ok")
"""

_JUDGE = """\
schema_version: 1
id: needs_agent
type: harness_judge
description: Needs an agent.
instructions: Score 1.
"""
