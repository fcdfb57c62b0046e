"""A report flag naming a file the run reads is refused before anything runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EbResult

FAMILY = """\
schema_version: 1
id: fam
type: deterministic
description: "case {{ case.id }}"
cases_from: data/rows.jsonl
script: print(1)
"""
SCRIPTED = """\
schema_version: 1
id: scripted
type: deterministic
description: runs a script file
script_path: ../scripts/check.py
"""
FILES = {
    "eval_checks/fam.yaml": FAMILY,
    "eval_checks/scripted.yaml": SCRIPTED,
    "data/rows.jsonl": '{"id": "a"}\n',
    "scripts/check.py": "print('ok')\n",
}


def _project(project: Callable[..., Path]) -> Path:
    return project(FILES, config="[core]\nkeep_runs = 0\n")


def _snapshot(root: Path) -> dict[str, bytes]:
    read = [*FILES, ".eval-banana/config.toml"]
    return {relative: (root / relative).read_bytes() for relative in read}


@pytest.mark.parametrize(
    ("flag", "named", "what"),
    [
        ("--junit-xml", "eval_checks/fam.yaml", "a check file"),
        ("--junit-xml", ".eval-banana/config.toml", "the config file"),
        ("--result-out", "data/rows.jsonl", "a dataset file of family 'fam'"),
        ("--result-out", "scripts/check.py", "the script of check 'scripted'"),
        ("GITHUB_STEP_SUMMARY", "eval_checks/scripted.yaml", "a check file"),
    ],
)
def test_a_report_over_a_file_the_run_reads_is_refused(
    project: Callable[..., Path],
    eb: Callable[..., EbResult],
    monkeypatch: pytest.MonkeyPatch,
    flag: str,
    named: str,
    what: str,
) -> None:
    # Written there, the report replaced the check file or config and the next run failed.
    root = _project(project)
    before = _snapshot(root)
    # --result-out is relative to where eb starts, --junit-xml to the project root.
    target = str(root / named)
    if flag == "GITHUB_STEP_SUMMARY":
        monkeypatch.setenv(flag, target)
        result = eb("run", "--cwd", str(root))
    else:
        result = eb("run", "--cwd", str(root), flag, target)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert f"it is {what} this run reads, and the report would overwrite it" in result.stderr
    assert _snapshot(root) == before
    assert not (root / ".eval-banana" / "results").exists()  # nothing ran, nothing is left


def test_a_replayed_run_refuses_a_report_over_its_script(
    project: Callable[..., Path], eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    # A fully cached run is replayed without validating again: its plan still names the
    # files it read. A script outside the project is no project file, so a report named
    # over it leaves the run replayable.
    shared = tmp_path / "shared" / "check.py"
    shared.parent.mkdir()
    shared.write_text("print('ok')\n")
    checks = {"eval_checks/scripted.yaml": SCRIPTED.replace("../scripts/", "../../shared/")}
    root = project(checks, config='[cache]\nmode = "on"\n')
    for _ in range(2):
        assert eb("run", "--cwd", str(root)).exit_code == 0
    assert "Replayed run " in eb("run", "--cwd", str(root)).stderr
    result = eb("run", "--cwd", str(root), "--junit-xml", str(shared))
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "it is the script of check 'scripted' this run reads" in result.stderr
    assert shared.read_text() == "print('ok')\n"


def test_a_report_target_is_told_among_the_files_a_replay_watched_by_resolved_path(
    tmp_path: Path,
) -> None:
    # A replay reads its kept plan back only when a report is named like a file the kept
    # run read: the test that spares it must see through links and `..` as the refusal does.
    from eval_banana.pipeline.reporttargets import ReportTarget, names_any

    script = tmp_path / "scripts" / "check.py"
    script.parent.mkdir()
    script.write_text("print('ok')\n")
    (tmp_path / "linked").symlink_to(script.parent)
    watched = [str(script), str(tmp_path / "data" / "rows.jsonl")]

    def target(path: Path) -> list[ReportTarget]:
        return [ReportTarget(named_by="--junit-xml", path=path)]

    assert names_any(targets=target(tmp_path / "linked" / "check.py"), paths=watched)
    assert names_any(
        targets=target(tmp_path / "data" / ".." / "scripts" / "check.py"), paths=watched
    )
    assert not names_any(targets=target(tmp_path / "junit.xml"), paths=watched)
    assert not names_any(targets=[], paths=watched)
