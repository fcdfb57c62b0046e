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

from tests.cache.rig import Project, cache_of, judge, make_project, script_check
from tests.gitrepo import commit_all, git

FAILING = "import sys\nsys.exit(1)\n"


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
    # Signed as eb signs, so the test reaches what the MAC cannot say: a process that can
    # read the cache's secret still cannot turn the replay green.
    failing.rewrite(path, {**record, "exit_code": 0})
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
    """Swap the kept run's score.json for an edited one and set the record's exit code: a
    forgery consistent in all but `change`."""
    return _forge(project, "stages/score.json", change, exit_code=exit_code)


def _forge(
    project: Project, name: str, change: Callable[[bytes], bytes], *, exit_code: int = 1
) -> Path:
    """Swap the kept run's file `name` for an edited one (a blob of its own, as the store
    names blobs) and set the record's exit code."""
    path = replay_file(project)
    record = json.loads(path.read_text())
    (template,) = [t for t in record["templates"] if t["name"] == name]
    old = project.cache_dir / "blobs" / template["sha256"][7:9] / template["sha256"][7:]
    data = change(old.read_bytes())
    assert len(data) == template["size"]  # the slots stay where they were
    digest = hashlib.sha256(data).hexdigest()
    blob = project.cache_dir / "blobs" / digest[:2] / digest
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(data)
    template["sha256"] = f"sha256:{digest}"
    record["exit_code"] = exit_code
    project.rewrite(path, record)
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


# --- an assertions check grades the artifact as it is now ---------------------------------------

GRADED = """\
schema_version: 1
id: graded
type: assertions
description: The artifact says ok.
artifact: out/result.json
{inputs}assert:
  - {{path: ok, op: equals, value: true}}
"""


def _graded_project(tmp_path: Path, eb: Callable[..., Any], *, setup: str, replay: bool) -> Project:
    """`ignored`: a git project ignoring out/, the check without `inputs:` (the whole project's
    state does not hold the artifact); `outside`: a plain folder, the check's `inputs:` naming
    docs/ only."""
    inputs = 'inputs: ["docs/**"]\n' if setup == "outside" else ""
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={"graded": GRADED.format(inputs=inputs)},
        files={"docs/a.md": "# A\n", "out/result.json": '{"ok": true}\n'},
        replay=replay,
    )
    if setup == "ignored":
        git(project.root, "init", "-q")
        project.write({".gitignore": "out/\n.eval-banana/results/\n.eval-banana/cache/\n"})
        commit_all(project.root, "init")
    return project


@pytest.mark.parametrize("replay", [True, False], ids=["replay", "lookups"])
@pytest.mark.parametrize("setup", ["ignored", "outside"])
def test_a_regenerated_artifact_is_graded_again(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool], setup: str, replay: bool
) -> None:
    project = _graded_project(tmp_path, eb, setup=setup, replay=replay)
    project.run()
    assert hits(project.run()) == [True]
    if replay:
        project.run()
        assert replays[-1] is True
    project.write({"out/result.json": '{"ok": false}\n'})  # the pipeline wrote it again
    report = project.run(expect_exit=1)
    assert replays == [] if not replay else replays[-1] is False
    (check,) = report["checks"]
    assert (check["status"], hits(report)) == ("failed", [False])
    # And back: the verdict about the first artifact is still the one for those bytes.
    project.write({"out/result.json": '{"ok": true}\n'})
    assert hits(project.run()) == [True]


# --- --cache refresh judges everything again, a kept replay notwithstanding ---------------------


def test_refresh_judges_every_check_again_although_a_replay_is_kept(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool]
) -> None:
    # The check's verdict follows a file outside the project, which no key or state names: only
    # judging it again can tell that it changed.
    flag = tmp_path / "verdict.txt"
    flag.write_text("pass")
    script = f"import sys\nsys.exit(0 if open({str(flag)!r}).read() == 'pass' else 1)\n"
    checks = {
        "outside": script_check("outside", script=script, inputs=[]),
        "plain": script_check("plain", script="pass\n", inputs=[]),
    }
    project = make_project(tmp_path=tmp_path, eb=eb, checks=checks, files={})
    project.run()
    project.run()
    project.run()
    assert replays[-1] is True
    flag.write_text("fail")
    refreshed = project.run("--cache", "refresh", expect_exit=1)
    assert hits(refreshed) == [False, False]
    assert [c["status"] for c in refreshed["checks"]] == ["failed", "passed"]
    # The verdicts stored by the refresh are the ones that count from now on: the run kept
    # before it no longer stands for them.
    after = project.run(expect_exit=1)
    assert [c["status"] for c in after["checks"]] == ["failed", "passed"]
    assert {cache_of(c)["from_run_id"] for c in after["checks"]} == {refreshed["run_id"]}


def _two_judges_kept(tmp_path: Path, eb: Callable[..., Any], replays: list[bool]) -> Project:
    """Two judges that pass, stored and kept as a replay."""
    checks = {"a": judge("a", inputs=[]), "b": judge("b", inputs=[])}
    project = make_project(tmp_path=tmp_path, eb=eb, checks=checks, files={})
    project.run()
    project.run()
    project.run()
    assert replays == [False, False, True]
    return project


def _upgrade_and_break_the_agent(project: Project) -> None:
    # It now answers without a verdict; nothing any key holds says that it changed.
    project.log.with_name(project.log.name + ".broken").write_text("")


def test_a_refresh_that_errors_leaves_no_verdict_from_before_it(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool]
) -> None:
    project = _two_judges_kept(tmp_path, eb, replays)
    _upgrade_and_break_the_agent(project)
    refreshed = project.run("--cache", "refresh", expect_exit=1)
    assert [c["status"] for c in refreshed["checks"]] == ["error", "error"]
    assert project.entries() == []
    assert not list((project.cache_dir / "runs").rglob("*.json"))
    started = project.agent_starts()
    # The next plain run neither replays the run from before nor reuses its passes.
    after = project.run(expect_exit=1)
    assert replays[-1] is False
    assert [c["status"] for c in after["checks"]] == ["error", "error"]
    assert project.agent_starts() == started + 2


def test_a_refresh_of_one_check_that_errors_takes_the_whole_run_replay_with_it(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool]
) -> None:
    project = _two_judges_kept(tmp_path, eb, replays)
    _upgrade_and_break_the_agent(project)
    project.run("--cache", "refresh", "--check-id", "a", expect_exit=1)
    after = project.run(expect_exit=1)
    assert replays[-1] is False
    # b's verdict was not refreshed and stands; a's went with the refresh that could not judge it.
    assert [(c["check_id"], c["status"], hits_of(c)) for c in after["checks"]] == [
        ("a", "error", False),
        ("b", "passed", True),
    ]


def hits_of(check: dict[str, Any]) -> bool:
    return cache_of(check).get("hit") is True


# --- a kept replay goes when a declared input changed -------------------------------------------


def _reads(relative: str) -> str:
    """A check script that fails when the project file at `relative` says `broken`."""
    return (
        "import json, sys\nfrom pathlib import Path\n"
        "root = Path(json.loads(Path(sys.argv[1]).read_text())['project_root'])\n"
        f"sys.exit(1 if 'broken' in (root / {relative!r}).read_text() else 0)\n"
    )


@pytest.mark.parametrize("ignored", [False, True], ids=["tracked", "ignored"])
def test_a_replay_of_declared_inputs_only_goes_when_one_changed(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool], ignored: bool
) -> None:
    # Every check declares `inputs:` (no whole-project state is kept); with `ignored`, the
    # edited file is one git ignores but a pattern matches.
    checks = {
        "docs": script_check("docs", script=_reads("docs/a.md"), inputs=["docs/**"]),
        "gen": script_check("gen", script=_reads("gen/data.json"), inputs=["gen/*.json"]),
    }
    files = {"docs/a.md": "# A\n", "gen/data.json": "{}\n"}
    project = make_project(tmp_path=tmp_path, eb=eb, checks=checks, files=files)
    git(project.root, "init", "-q")
    ignore = "gen/\n" if ignored else ""
    project.write({".gitignore": ignore + ".eval-banana/results/\n.eval-banana/cache/\n"})
    commit_all(project.root, "init")
    project.run()
    project.run()
    project.run()
    assert replays[-1] is True
    edited = "gen" if ignored else "docs"
    project.write({"gen/data.json" if ignored else "docs/a.md": "broken\n"})
    report = project.run(expect_exit=1)
    assert replays[-1] is False
    statuses = {c["check_id"]: (c["status"], cache_of(c).get("hit")) for c in report["checks"]}
    other = "docs" if ignored else "gen"
    assert statuses == {edited: ("failed", False), other: ("passed", True)}


# --- what eb writes into the project is never a project change ----------------------------------


@pytest.mark.parametrize(
    "outputs",
    [
        ["--junit-xml", "junit.xml"],
        ["--result-out", "{root}/eval-result.md"],
        ["--step-summary", "{root}/summary.md"],
        ["--junit-xml", "reports/junit.xml", "--result-out", "{root}/result.json"],
    ],
    ids=["junit", "result-out", "step-summary", "both"],
)
def test_files_eb_writes_in_the_project_leave_every_verdict_reused(
    tmp_path: Path,
    eb: Callable[..., Any],
    replays: list[bool],
    monkeypatch: pytest.MonkeyPatch,
    outputs: list[str],
) -> None:
    # A check without `inputs:` reads the whole project, and one whose pattern matches them.
    checks = {
        "whole": script_check("whole", script="pass\n"),
        "everything": script_check("everything", script="pass\n", inputs=["**"]),
    }
    project = make_project(tmp_path=tmp_path, eb=eb, checks=checks, files={"a.txt": "a\n"})
    git(project.root, "init", "-q")
    project.write({".gitignore": ".eval-banana/results/\n.eval-banana/cache/\n"})
    commit_all(project.root, "init")
    args = [arg.format(root=project.root) for arg in outputs]
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    if args[0] == "--step-summary":
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", args[1])
        args = []
    project.run(*args)
    second = project.run(*args)
    assert hits(second) == [True, True]
    project.run(*args)
    assert replays[-1] is True


def test_eb_s_history_folder_is_no_project_file(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool]
) -> None:
    checks = {"whole": script_check("whole", script="pass\n")}
    project = make_project(tmp_path=tmp_path, eb=eb, checks=checks, files={"a.txt": "a\n"})
    git(project.root, "init", "-q")
    project.write({".gitignore": ".eval-banana/results/\n.eval-banana/cache/\n"})
    commit_all(project.root, "init")
    project.run()
    project.write({".eval-banana/history/last.json": "{}\n"})
    assert hits(project.run()) == [True]
    project.write({".eval-banana/history/last.json": '{"again": true}\n'})
    project.run()
    assert replays[-1] is True


def _passed(data: bytes) -> bytes:
    return data.replace(b'"run_passed": false', b'"run_passed": true ')


def test_a_report_whose_verdict_disagrees_with_the_score_is_no_replay(
    failing: Project, replays: list[bool]
) -> None:
    path = _forge(failing, "report.json", _passed)
    outcome = failing.eb("run", "--cwd", str(failing.root))
    assert outcome.exit_code == 1 and "Passed: no" in outcome.stdout
    assert replays[-1] is False
    assert f"Run replay {path} has a report.json whose run_passed disagrees" in outcome.stderr


def test_a_kept_json_line_is_checked_by_the_run_that_prints_it_and_read_by_no_other(
    failing: Project, replays: list[bool]
) -> None:
    """The report as one JSON line is kept for `eb run --json`: only such a run brings it
    (and checks its verdict against the score); a run that prints none never reads it."""
    path = _forge(failing, "report.json-line", _passed)
    plain = failing.eb("run", "--cwd", str(failing.root))
    assert plain.exit_code == 1 and "Passed: no" in plain.stdout
    assert replays[-1] is True  # the forged line was never read
    printed = failing.eb("run", "--cwd", str(failing.root), "--json")
    assert printed.exit_code == 1 and json.loads(printed.stdout)["run_passed"] is False
    assert replays[-1] is False
    assert f"Run replay {path} has a report.json-line whose run_passed disagrees" in (
        printed.stderr
    )


def test_an_artifact_a_check_regenerates_during_the_run_is_never_keyed_as_it_was_before(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool]
) -> None:
    # `a_gen` writes the artifact `b_graded` grades. Keys are computed before any check starts,
    # so `b_graded` is keyed on the artifact as it was then and graded on the one `a_gen` wrote:
    # a verdict about the new artifact must not be stored under the old one's key.
    gen = (
        "import json, sys\nfrom pathlib import Path\n"
        "root = Path(json.loads(Path(sys.argv[1]).read_text())['project_root'])\n"
        "(root / 'out' / 'result.json').write_text('{\"ok\": true}\\n')\n"
    )
    checks = {
        "a_gen": script_check("a_gen", script=gen, inputs=[]),
        "b_graded": GRADED.format(inputs="inputs: []\n"),
    }
    files = {"out/result.json": '{"ok": false}\n'}
    project = make_project(tmp_path=tmp_path, eb=eb, checks=checks, files=files)
    sequential = ("--max-parallel-checks", "1")
    first = project.run(*sequential)  # keyed on ok: false, graded on ok: true
    assert first["checks"][1]["details"]["cache"]["stored"] is False
    project.write({"out/result.json": '{"ok": false}\n'})  # a_gen is cached: it stays so
    report = project.run(*sequential, expect_exit=1)
    graded = report["checks"][1]
    assert (graded["status"], cache_of(graded)["hit"]) == ("failed", False)
