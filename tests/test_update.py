"""`eb update`: rerun exactly what `eb status` finds not ok, as make rebuilds stale targets.

Every check's script appends its id to a log file each time it runs, so a test counts what ran.
Each kind of staleness `eb status` reports is made on a real project, then `eb update` is asked
to rebuild it: the stages it reran, the checks it reran (and only those), the results the others
kept, the reasons it printed and its exit code are all checked.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.calibration.test_calibration import GOOD, READS_ANSWER, Project, judge
from tests.calibration.test_calibration import make_project as make_project  # noqa: F401 - fixture
from tests.calibration.test_calibration import scripted_env as scripted_env  # noqa: F401 - fixture
from tests.conftest import EbResult, check_yaml
from tests.processes import eb_interrupted, eb_process

STAGES = ("config", "discover", "validate", "guard", "execute", "score", "report")


def _logging_script(*, log: Path, check_id: str, fail: bool = False) -> str:
    lines = [f"open({str(log)!r}, 'a').write({check_id + chr(10)!r})"]
    if fail:
        lines.append(f"raise SystemExit({check_id + ' fails'!r})")
    return "\n".join(lines) + "\n"


def _check(check_id: str, *, body: str) -> str:
    return (
        "\n".join(
            [
                "schema_version: 1",
                f"id: {check_id}",
                "type: deterministic",
                f"description: {check_id}.",
                body,
            ]
        )
        + "\n"
    )


class Proj:
    """A project of three deterministic checks: an inline one, one with a script file, and one
    that declares `inputs:`; plus, when asked, one that fails."""

    def __init__(self, *, root: Path, eb: Callable[..., EbResult], failing: bool) -> None:
        self.root = root
        self.log = root.parent / "ran.log"
        self._eb = eb
        self.checks = ["plain", "scripted", "reads_src"] + (["fails"] if failing else [])
        (root / ".eval-banana").mkdir(parents=True)
        self.config = root / ".eval-banana" / "config.toml"
        self.config.write_text('[core]\noutput_dir = "runs"\n')
        (root / "eval_checks" / "scripts").mkdir(parents=True)
        (root / "src").mkdir()
        (root / "src" / "data.txt").write_text("one\n")
        self.write_check("plain", "script: |\n  " + self._script("plain").replace("\n", "\n  "))
        self.script = root / "eval_checks" / "scripts" / "scripted.py"
        self.script.write_text(self._script("scripted"))
        self.write_check("scripted", "script_path: scripts/scripted.py")
        body = 'inputs: ["src/**"]\nscript: |\n  ' + self._script("reads_src").replace("\n", "\n  ")
        self.write_check("reads_src", body)
        if failing:
            text = _logging_script(log=self.log, check_id="fails", fail=True)
            self.write_check("fails", "script: |\n  " + text.replace("\n", "\n  "))

    def _script(self, check_id: str) -> str:
        return _logging_script(log=self.log, check_id=check_id).rstrip("\n")

    def write_check(self, check_id: str, body: str) -> None:
        (self.root / "eval_checks" / f"{check_id}.yaml").write_text(_check(check_id, body=body))

    def eb(self, *args: str) -> EbResult:
        return self._eb(args[0], "--cwd", str(self.root), *args[1:])

    def ran(self) -> Counter[str]:
        """How often each check ran so far."""
        if not self.log.is_file():
            return Counter()
        return Counter(self.log.read_text().split())

    @property
    def run_dir(self) -> Path:
        (run_dir,) = [path for path in (self.root / "runs").iterdir() if path.is_dir()]
        return run_dir

    def results(self) -> dict[str, dict[str, Any]]:
        document = json.loads((self.run_dir / "stages" / "execute.json").read_text())
        return {result["check_id"]: result for result in document["results"]}


@pytest.fixture
def proj(tmp_path: Path, eb: Callable[..., EbResult]) -> Proj:
    return Proj(root=tmp_path / "proj", eb=eb, failing=False)


def _run_once(proj: Proj, *, expect: int = 0) -> dict[str, dict[str, Any]]:
    outcome = proj.eb("run")
    assert outcome.exit_code == expect, outcome.stdout + outcome.stderr
    assert proj.ran() == Counter(proj.checks)
    return proj.results()


def _rows(output: str) -> dict[str, str]:
    """The stage lines `eb update` printed, by stage."""
    return {
        line.split()[0]: line
        for line in output.splitlines()
        if line.split() and line.split()[0] in STAGES
    }


def _rerun_stages(output: str) -> list[str]:
    return [stage for stage, line in _rows(output).items() if line.endswith(": rerun")]


def _status_ok(proj: Proj) -> None:
    status = proj.eb("status")
    assert status.exit_code == 0, status.stdout
    assert "eb update" not in status.stdout


def _kept(
    before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]], ids: list[str]
) -> None:
    """The results of `ids` are the very ones recorded before (not run again)."""
    for check_id in ids:
        assert after[check_id] == before[check_id], check_id


def test_nothing_stale_reruns_nothing_and_exits_with_the_verdict(proj: Proj) -> None:
    _run_once(proj)
    before = proj.results()
    outcome = proj.eb("update")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    assert "Nothing to update: every stage up to report is ok." in outcome.stdout
    assert _rerun_stages(outcome.stdout) == []
    assert proj.ran() == Counter(proj.checks)  # no check ran again
    assert proj.results() == before


def test_nothing_stale_in_a_failed_run_exits_1(tmp_path: Path, eb: Callable[..., EbResult]) -> None:
    proj = Proj(root=tmp_path / "proj", eb=eb, failing=True)
    _run_once(proj, expect=1)
    outcome = proj.eb("update")
    assert outcome.exit_code == 1, outcome.stdout + outcome.stderr
    assert "Nothing to update" in outcome.stdout
    assert proj.ran() == Counter(proj.checks)


def test_a_changed_config_reruns_every_stage_but_no_check(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    proj = Proj(root=tmp_path / "proj", eb=eb, failing=True)
    before = _run_once(proj, expect=1)  # 3 of 4 pass: below the default threshold of 1.0
    status = proj.eb("status")
    assert status.exit_code == 0
    proj.config.write_text('[core]\noutput_dir = "runs"\npass_threshold = 0.7\n')
    status = proj.eb("status")
    assert status.exit_code == 1
    assert "To rerun exactly what is not ok: eb update" in status.stdout
    outcome = proj.eb("update")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr  # passes at 0.7 now
    assert _rerun_stages(outcome.stdout) == list(STAGES)
    rows = _rows(outcome.stdout)
    assert "config.toml changed" in rows["config"]
    assert "stages/config.json is stale" in rows["discover"]
    assert "0 of 4 checks to run again; 4 keep their results" in outcome.stdout
    assert proj.ran() == Counter(proj.checks)  # a setting changed, no check's definition
    _kept(before, proj.results(), proj.checks)
    score = json.loads((proj.run_dir / "stages" / "score.json").read_text())
    assert (score["pass_threshold"], score["run_passed"]) == (0.7, True)
    _status_ok(proj)


def test_a_rerun_of_config_keeps_the_flags_the_run_was_made_with(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    proj = Proj(root=tmp_path / "proj", eb=eb, failing=True)
    outcome = proj.eb("run", "--pass-threshold", "0.7")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    proj.config.write_text('[core]\noutput_dir = "runs"\nmax_parallel_checks = 2\n')
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr  # still judged at 0.7
    assert "config" in _rerun_stages(updated.stdout)
    config = json.loads((proj.run_dir / "stages" / "config.json").read_text())
    assert config["settings"]["core"]["pass_threshold"] == 0.7
    assert config["settings"]["core"]["max_parallel_checks"] == 2
    assert config["sources"]["core.pass_threshold"] == "cli"
    assert proj.ran() == Counter(proj.checks)


def test_an_edited_check_file_reruns_that_check_only(proj: Proj) -> None:
    before = _run_once(proj)
    proj.write_check(
        "plain",
        "tags: [edited]\nscript: |\n  "
        + _logging_script(log=proj.log, check_id="plain").rstrip("\n"),
    )
    status = proj.eb("status")
    assert "eval_checks/plain.yaml changed" in status.stdout
    outcome = proj.eb("update")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    assert _rerun_stages(outcome.stdout) == list(STAGES[1:])  # not config
    rows = _rows(outcome.stdout)
    assert "eval_checks/plain.yaml changed" in rows["discover"]
    assert "eval_checks/plain.yaml changed" in rows["validate"]
    assert "stages/plan.json" in rows["execute"]
    assert "1 of 3 checks to run again; 2 keep their results" in outcome.stdout
    assert "rerun plain: eval_checks/plain.yaml changed" in outcome.stdout
    assert proj.ran() == Counter({"plain": 2, "scripted": 1, "reads_src": 1})
    _kept(before, proj.results(), ["scripted", "reads_src"])
    assert proj.results()["plain"]["tags"] == ["edited"]
    _status_ok(proj)


def test_an_edited_script_reruns_its_check_from_validate_on(proj: Proj) -> None:
    before = _run_once(proj)
    proj.script.write_text(proj.script.read_text() + "# edited\n")
    outcome = proj.eb("update")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    # The script is no check file: discover's result has not changed.
    assert _rerun_stages(outcome.stdout) == list(STAGES[2:])
    assert "eval_checks/scripts/scripted.py changed" in _rows(outcome.stdout)["validate"]
    assert "rerun scripted: eval_checks/scripts/scripted.py changed" in outcome.stdout
    assert proj.ran() == Counter({"plain": 1, "scripted": 2, "reads_src": 1})
    _kept(before, proj.results(), ["plain", "reads_src"])
    _status_ok(proj)


def test_an_edited_inputs_file_reruns_the_check_that_declares_it(proj: Proj) -> None:
    before = _run_once(proj)
    (proj.root / "src" / "data.txt").write_text("two\n")
    status = proj.eb("status")
    assert status.exit_code == 1
    assert "reads_src: inputs src/** changed" in status.stdout
    outcome = proj.eb("update")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    assert _rerun_stages(outcome.stdout) == ["execute", "score", "report"]
    assert "reads_src: inputs src/** changed" in _rows(outcome.stdout)["execute"]
    assert "rerun reads_src: inputs src/** changed" in outcome.stdout
    assert proj.ran() == Counter({"plain": 1, "scripted": 1, "reads_src": 2})
    _kept(before, proj.results(), ["plain", "scripted"])
    _status_ok(proj)


def test_a_deleted_score_file_is_rebuilt_without_running_a_check(proj: Proj) -> None:
    before = _run_once(proj)
    (proj.run_dir / "stages" / "score.json").unlink()
    outcome = proj.eb("update")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    assert _rerun_stages(outcome.stdout) == ["score", "report"]
    assert "missing" in _rows(outcome.stdout)["score"]
    assert proj.ran() == Counter(proj.checks)
    assert proj.results() == before
    _status_ok(proj)


def test_a_deleted_execute_file_runs_every_check_again(proj: Proj) -> None:
    _run_once(proj)
    (proj.run_dir / "stages" / "execute.json").unlink()
    outcome = proj.eb("update")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    assert _rerun_stages(outcome.stdout) == ["execute", "score", "report"]
    assert "3 of 3 checks to run again; 0 keep their results" in outcome.stdout
    assert "rerun plain: no result recorded" in outcome.stdout
    assert proj.ran() == Counter({check: 2 for check in proj.checks})
    _status_ok(proj)


def test_checks_a_stopped_run_never_started_have_no_result_yet(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    """`eb run -x` stops after the first failure: the checks it never started are recorded as
    not run, which is no result. `eb status` says so, and once the failing check is mended
    `eb update` runs them with it, so the run can pass."""
    proj = Proj(root=tmp_path / "proj", eb=eb, failing=True)
    proj.config.write_text('[core]\noutput_dir = "runs"\nmax_parallel_checks = 1\n')
    assert proj.eb("run", "-x").exit_code == 1
    assert proj.ran() == Counter({"fails": 1})  # planned first (fails.yaml), then stopped
    status = proj.eb("status")
    assert status.exit_code == 1, status.stdout
    never = "plain, reads_src, scripted: no result yet (recorded as not run)"
    assert never in _rows(status.stdout)["execute"], status.stdout
    proj.write_check(
        "fails",
        "script: |\n  " + _logging_script(log=proj.log, check_id="fails").rstrip("\n"),
    )
    outcome = proj.eb("update")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    assert "4 of 4 checks to run again; 0 keep their results" in outcome.stdout
    assert "rerun plain: no result yet (recorded as not run)" in outcome.stdout
    assert "0 skipped, 0 not run" in outcome.stdout
    assert proj.ran() == Counter({"fails": 2, "plain": 1, "reads_src": 1, "scripted": 1})
    _status_ok(proj)


def test_a_check_the_run_stopped_while_it_ran_has_no_result_yet(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    """A check a stopping run ended (here the run timeout, a fuse) is `Stopped: ...`, no
    verdict: `eb status` calls execute stale for it, and `eb update` runs it (and no other),
    so the run can be finished."""
    proj = Proj(root=tmp_path / "proj", eb=eb, failing=False)
    proj.config.write_text('[core]\noutput_dir = "runs"\nrun_timeout_seconds = 1\n')
    slow = tmp_path / "slow"  # outside the project: no check reads it
    slow.touch()
    wait = f"import os, time\nif os.path.exists({str(slow)!r}):\n  time.sleep(30)\n"
    script = wait + _logging_script(log=proj.log, check_id="slow")
    proj.write_check("slow", "script: |\n  " + script.rstrip("\n").replace("\n", "\n  "))
    assert proj.eb("run").exit_code == 3
    assert proj.results()["slow"]["details"]["stopped"] is True
    status = proj.eb("status")
    assert status.exit_code == 1, status.stdout
    stopped = "slow: no result yet (stopped while it ran)"
    assert stopped in _rows(status.stdout)["execute"], status.stdout
    slow.unlink()
    outcome = proj.eb("update")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    assert "1 of 4 checks to run again; 3 keep their results" in outcome.stdout
    assert f"rerun {stopped}" in outcome.stdout
    assert proj.ran() == Counter({"plain": 1, "scripted": 1, "reads_src": 1, "slow": 1})
    _status_ok(proj)


def test_a_check_eb_stage_execute_left_without_a_result_is_run_by_eb_update(proj: Proj) -> None:
    """`eb stage execute --check-id X` runs X alone and records a planned check with no
    earlier result as not run: the plan holds it, so it still has no result, and `eb update`
    runs it (and no other)."""
    before = _run_once(proj)
    proj.write_check(
        "later",
        "script: |\n  " + _logging_script(log=proj.log, check_id="later").rstrip("\n"),
    )
    for stage in ("discover", "validate", "guard"):
        assert proj.eb("stage", stage).exit_code == 0
    assert proj.eb("stage", "execute", "--check-id", "plain").exit_code == 0
    assert proj.results()["later"]["details"]["not_run"] is True
    status = proj.eb("status")
    assert "later: no result yet (recorded as not run)" in _rows(status.stdout)["execute"]
    outcome = proj.eb("update")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    assert "1 of 4 checks to run again; 3 keep their results" in outcome.stdout
    assert proj.ran() == Counter({"plain": 2, "scripted": 1, "reads_src": 1, "later": 1})
    _kept(before, proj.results(), ["scripted", "reads_src"])
    _status_ok(proj)


def test_a_stale_run_that_fails_after_the_update_exits_1(proj: Proj) -> None:
    _run_once(proj)
    proj.write_check(
        "plain",
        "script: |\n  "
        + _logging_script(log=proj.log, check_id="plain", fail=True).replace("\n", "\n  "),
    )
    outcome = proj.eb("update")
    assert outcome.exit_code == 1, outcome.stdout + outcome.stderr
    assert proj.ran() == Counter({"plain": 2, "scripted": 1, "reads_src": 1})
    assert proj.results()["plain"]["status"] == "failed"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda sig: sig.name)
def test_an_interrupted_update_says_the_run_was_aborted_as_eb_run_does(
    proj: Proj, signum: signal.Signals
) -> None:
    """Ctrl-C (or SIGTERM) while `eb update` runs stale checks again: the same `Run aborted`
    line `eb run` ends with, after the reports are written, and exit 3."""
    _run_once(proj)
    started = proj.root.parent / "started"  # outside the project: no check reads it
    wait = f"import time\nopen({str(started)!r}, 'w').close()\ntime.sleep(60)"
    proj.write_check("plain", "script: |\n  " + wait.replace("\n", "\n  "))
    done = eb_interrupted(
        proj.root, "update", "--cwd", str(proj.root), started=started, signum=signum
    )
    stderr = done.stderr
    assert done.returncode == 3, done.stdout + stderr
    report = proj.run_dir / "report.json"
    assert json.loads(report.read_text())["aborted_by"] == "interrupt"
    told = f"Run aborted (interrupt: interrupted); 0 checks did not run. Report: {report}"
    assert told in stderr.splitlines(), stderr


def test_the_history_holds_the_updated_run_once_with_its_new_verdict(proj: Proj) -> None:
    """`eb history` after `eb update` shows the run as its report now says: the rebuilt run's
    record replaces the one its first pass wrote (one record per run id, the new verdict)."""
    _run_once(proj)
    history = proj.root / ".eval-banana" / "history"
    (first,) = history.glob("*.json")
    run_id = json.loads(first.read_text())["run_id"]
    proj.write_check(
        "plain",
        "script: |\n  "
        + _logging_script(log=proj.log, check_id="plain", fail=True).replace("\n", "\n  "),
    )
    assert proj.eb("update").exit_code == 1
    (record,) = history.glob("*.json")
    document = json.loads(record.read_text())
    assert document["run_id"] == proj.run_dir.name == run_id
    assert (document["passed"], document["exit_code"]) == (False, 1)
    shown = proj.eb("history", "--format", "json")
    (run,) = json.loads(shown.stdout)["runs"]
    assert run["passed"] is False, run


def _run_dirs_by_creation(proj: Proj) -> list[Path]:
    """The run folders, oldest first, by the creation time their config.json records."""

    def created(run_dir: Path) -> str:
        config = json.loads((run_dir / "stages" / "config.json").read_text())
        return str(config["run_created_at"])

    return sorted((path for path in (proj.root / "runs").iterdir() if path.is_dir()), key=created)


def test_an_updated_older_run_keeps_its_start_and_its_place_in_history(proj: Proj) -> None:
    """`eb update --run-dir <older run>` brings that run up to date without re-dating it:
    report.json keeps its first start, `eb history` (oldest first) and `--since` still place it
    before the newer run, and its duration is its own time plus the update's, never the time
    between them."""
    for _ in range(2):
        assert proj.eb("run").exit_code == 0
    older, newer = _run_dirs_by_creation(proj)
    before = json.loads((older / "report.json").read_text())
    newer_start = json.loads((newer / "report.json").read_text())["started_at"]
    (proj.root / "src" / "data.txt").write_text("two\n")  # reads_src's input

    assert proj.eb("update", "--run-dir", str(older)).exit_code == 0
    assert proj.ran()["reads_src"] == 3  # two runs, then the update of the older one
    after = json.loads((older / "report.json").read_text())
    assert after["started_at"] == before["started_at"]
    updated_at = datetime.fromisoformat(after["updated_at"])
    assert updated_at > datetime.fromisoformat(newer_start)
    update_ms = (datetime.fromisoformat(after["completed_at"]) - updated_at) // timedelta(
        milliseconds=1
    )
    assert after["duration_ms"] == before["duration_ms"] + update_ms

    shown = json.loads(proj.eb("history", "--format", "json").stdout)["runs"]
    assert [run["run_id"] for run in shown] == [older.name, newer.name]
    assert (shown[0]["started_at"], shown[0]["duration_ms"]) == (
        before["started_at"],
        after["duration_ms"],
    )
    since = json.loads(proj.eb("history", "--since", newer_start, "--format", "json").stdout)
    assert [run["run_id"] for run in since["runs"]] == [newer.name]


def test_an_updated_replay_stays_a_replay_until_a_check_runs_again(proj: Proj) -> None:
    """A run replayed whole whose report is rebuilt keeps its record's kind and the run it
    replayed; once `eb update` executes its checks again, it is a run of its own."""
    proj.config.write_text('[core]\noutput_dir = "runs"\n\n[cache]\nmode = "on"\n')
    _run_once(proj)
    # The second run reuses every verdict and is kept as a replay; the third is replayed.
    for _ in range(2):
        assert proj.eb("run").exit_code == 0
    assert proj.ran() == Counter(proj.checks)
    history = proj.root / ".eval-banana" / "history"

    def records() -> dict[str, dict[str, Any]]:
        documents = [json.loads(path.read_text()) for path in history.glob("*.json")]
        return {document["run_id"]: document for document in documents}

    _, kept, replay = sorted(records().values(), key=lambda document: document["started_at"])
    assert (replay["kind"], replay["replayed_from"]) == ("replay", kept["run_id"])
    replay_dir = proj.root / "runs" / replay["run_id"]
    (replay_dir / "stages" / "score.json").unlink()
    assert proj.eb("update", "--run-dir", str(replay_dir)).exit_code == 0
    updated = records()[replay["run_id"]]
    assert (updated["kind"], updated["replayed_from"]) == ("replay", kept["run_id"])
    assert len(records()) == 3

    # Executed again (each verdict from the cache, as the second run's were): a run now.
    (replay_dir / "stages" / "execute.json").unlink()
    assert proj.eb("update", "--run-dir", str(replay_dir)).exit_code == 0
    rebuilt = records()[replay["run_id"]]
    assert (rebuilt["kind"], rebuilt["replayed_from"]) == ("run", None)


def test_update_stops_at_the_stage_asked_for(proj: Proj) -> None:
    _run_once(proj)
    proj.write_check("plain", "tags: [edited]\nscript: 'pass'")
    outcome = proj.eb("update", "validate")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    assert _rerun_stages(outcome.stdout) == ["discover", "validate"]
    assert proj.ran() == Counter(proj.checks)  # execute was not asked for
    status = proj.eb("status")
    rows = {line.split()[0]: line for line in status.stdout.splitlines()[1:] if line.split()}
    assert "ok" in rows["validate"] and "stale" in rows["execute"]


def test_a_changed_calibration_record_reruns_the_guard_but_not_the_judge(
    make_project: Callable[..., Project],  # noqa: F811
    scripted_env: Path,  # noqa: F811
) -> None:
    bad = {"name": "says goodbye", "expect": "fail", "files": {"answer.txt": "goodbye\n"}}
    proj = make_project({"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, bad])})
    assert proj.eb("calibrate").exit_code == 0
    outcome = proj.eb("run", "--require-calibration")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    before = scripted_env.read_text().count("\n")
    # Measured again (two samples a case): the record the guard read has other bytes now.
    assert proj.eb("calibrate", "--repeats", "2").exit_code == 0
    calibrated = scripted_env.read_text().count("\n")
    assert calibrated > before
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert _rerun_stages(updated.stdout) == ["guard", "execute", "score", "report"]
    assert "calibration.json changed" in _rows(updated.stdout)["guard"]
    assert "0 of 1 check to run again; 1 keeps its result" in updated.stdout
    assert scripted_env.read_text().count("\n") == calibrated  # the judge was not started
    assert proj.eb("status").exit_code == 0


@pytest.mark.slow
def test_invoke_eval_update_reruns_what_is_stale(proj: Proj) -> None:
    _run_once(proj)
    (proj.root / "tasks.py").write_text("from eval_banana.tasks import ns\n")
    (proj.root / "src" / "data.txt").write_text("two\n")
    listed = subprocess.run(
        [sys.executable, "-m", "invoke", "--list"], cwd=proj.root, capture_output=True, text=True
    )
    assert "eval.update" in listed.stdout, listed.stdout + listed.stderr
    updated = subprocess.run(
        [sys.executable, "-m", "invoke", "eval.update"],
        cwd=proj.root,
        capture_output=True,
        text=True,
    )
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert "rerun reads_src: inputs src/** changed" in updated.stdout
    assert proj.ran() == Counter({"plain": 1, "scripted": 1, "reads_src": 2})
    again = subprocess.run(
        [sys.executable, "-m", "invoke", "eval.update", "--stage", "score"],
        cwd=proj.root,
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Nothing to update: every stage up to score is ok." in again.stdout


def test_a_check_file_broken_after_the_run_stops_every_update_at_validate(proj: Proj) -> None:
    """A plan that failed validation is written (it says why), but nothing is built on it: a
    second `eb update` neither guards nor runs an empty plan over the run's report, and once
    the file is mended the update finishes the run."""
    before = _run_once(proj)
    report = (proj.run_dir / "stages" / "report.json").read_bytes()
    good = (proj.root / "eval_checks" / "plain.yaml").read_text()
    (proj.root / "eval_checks" / "plain.yaml").write_text(good + "surprise: 1\n")
    for _ in range(2):
        outcome = proj.eb("update")
        assert outcome.exit_code == 2, outcome.stdout + outcome.stderr
        assert "surprise" in outcome.stderr
        assert _rerun_stages(outcome.stdout)[-1] == "validate"
        assert (proj.run_dir / "stages" / "report.json").read_bytes() == report
        status = proj.eb("status")
        assert status.exit_code == 1
        rows = _rows(status.stdout)
        assert rows["validate"].split()[2] == "failed" and "plain.yaml" in rows["validate"]
        assert rows["guard"].split()[2] == "stale" and "stages/plan.json" in rows["guard"]
    # `eb stage guard` on the failed plan is refused the same way.
    guarded = proj.eb("stage", "guard")
    assert guarded.exit_code == 2 and "surprise" in guarded.stderr
    (proj.root / "eval_checks" / "plain.yaml").write_text(good)
    outcome = proj.eb("update")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    assert proj.ran() == Counter(proj.checks)  # the mended file is the file that ran
    _kept(before, proj.results(), proj.checks)
    _status_ok(proj)


def test_an_updated_merged_run_stays_merged_and_keeps_what_its_shards_spent(
    tmp_path: Path, eb: Callable[..., EbResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`eb update` of a merged run reruns only the edited check: the results it keeps came
    from the shards, so the run still names them (merged_from), its cost still counts the
    judges they ran, and its history record stays a merge that stands for the shards' records."""
    from tests.conftest import STANDIN_AGENTS, judge_yaml

    monkeypatch.setenv("PATH", f"{STANDIN_AGENTS}{os.pathsep}{os.environ['PATH']}")
    root = tmp_path / "proj"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\n\n[harness]\nagent = "claude"\ntimeout_seconds = 30\n'
    )
    (root / "eval_checks").mkdir()
    for name in ("sky", "sea"):
        (root / "eval_checks" / f"{name}.yaml").write_text(
            judge_yaml(name, instructions="Is it blue?\nstandin: score=1 reason=blue")
        )
    plain = root / "eval_checks" / "plain.yaml"
    plain.write_text(_check("plain", body="script: 'pass'"))
    shards = []
    for index in (1, 2):
        done = eb("run", "--cwd", str(root), "--json", "--shard", f"{index}/2")
        assert done.exit_code == 0, done.stderr
        shards.append(json.loads(done.stdout)["output_dir"])
    merged = eb("merge", "--cwd", str(root), "--json", *shards)
    assert merged.exit_code == 0, merged.stderr
    run_dir = Path(json.loads(merged.stdout)["output_dir"])
    before = json.loads((run_dir / "stages" / "execute.json").read_text())
    assert before["cost_usd"] > 0  # each judge's stand-in reports what it spent

    plain.write_text(_check("plain", body="tags: [edited]\nscript: 'pass'"))
    updated = eb("update", "--cwd", str(root), "--run-dir", str(run_dir))
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert "1 of 3 checks to run again" in updated.stdout
    after = json.loads((run_dir / "stages" / "execute.json").read_text())
    assert after["merged_from"] == before["merged_from"]
    assert after["cost_usd"] == pytest.approx(before["cost_usd"])
    shown = json.loads(eb("history", "--cwd", str(root), "--json").stdout)
    assert [(run["run_id"], run["kind"]) for run in shown["runs"]] == [(run_dir.name, "merge")]


def test_a_refused_run_is_stale_once_its_agent_is_installed(
    tmp_path: Path, project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """A guard that refused the run (its agent CLI not found) is decided again by `eb status`:
    once the agent is there, guard.json is stale, not still `failed` with a reason that no
    longer holds, and `eb update` runs the judge."""
    agent = tmp_path / "bin" / "judge"
    root = project(
        {
            "eval_checks/j.yaml": "schema_version: 1\nid: j\ntype: harness_judge\n"
            "description: d\ninstructions: Score 1.\n"
        },
        config=f'[harness]\nagent = "mine"\n[agents.mine]\ncommand = ["{agent}"]\n'
        'model_flag = ""\n',
    )
    assert eb("run", "--cwd", str(root)).exit_code == 2
    status = eb("status", "--cwd", str(root)).stdout
    assert f"failed  (Harness agent 'mine' needs the command '{agent}'" in status
    agent.parent.mkdir()
    agent.write_text('#!/bin/sh\necho \'{"score": 1, "reason": "ok"}\'\n')
    agent.chmod(0o755)
    status = eb("status", "--cwd", str(root)).stdout
    assert "stale  (the problems it recorded are gone: the run would not be refused now)" in status
    updated = eb("update", "--cwd", str(root))
    assert updated.exit_code == 0 and "- j: passed - ok" in updated.stdout


def test_a_failed_plan_is_decided_again_from_the_check_files_of_now(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """The broken check file that failed the plan is deleted: `eb status` validates the
    project as it is now (not the discover.json that still lists the file, which is stale
    itself), so the plan's problems are gone rather than 'cannot read' the deleted file."""
    root = project(
        {
            "eval_checks/ok.yaml": "schema_version: 1\nid: ok\ntype: deterministic\n"
            "description: d\nscript: pass\n",
            "eval_checks/broken.yaml": "schema_version: 1\nid: broken\n",
        }
    )
    assert eb("run", "--cwd", str(root)).exit_code == 2
    (root / "eval_checks" / "broken.yaml").unlink()
    status = eb("status", "--cwd", str(root)).stdout
    assert "stale  (eval_checks/broken.yaml removed)" in status
    assert "stale  (the problems it recorded are gone: the checks validate now)" in status
    assert eb("update", "--cwd", str(root)).exit_code == 0


def test_an_assertions_checks_artifact_is_what_makes_its_result_stale(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    """An assertions check grades its artifact, `inputs:` or not, so `eb status` compares the
    artifact with the one its result graded (as the verdict cache's key does): an edited,
    deleted or new artifact makes that check's result stale, and `eb update` grades it again
    alone."""
    head = "schema_version: 1\ntype: assertions\ndescription: d\n"
    root = project(
        {
            "eval_checks/answer.yaml": f"{head}id: answer\nartifact: out/answer.json\n"
            "assert:\n  - {path: answer, op: equals, value: Paris}\n",
            "eval_checks/other.yaml": f"{head}id: other\nartifact: out/other.json\n"
            "assert:\n  - {path: ok, op: equals, value: true}\n",
            "out/answer.json": '{"answer": "Lyon"}',
            "out/other.json": '{"ok": true}',
        },
        config='[cache]\nmode = "off"\n',
    )
    assert eb("run", "--cwd", str(root)).exit_code == 1
    assert eb("status", "--cwd", str(root)).exit_code == 0
    (root / "out" / "answer.json").write_text('{"answer": "Paris"}')
    status = eb("status", "--cwd", str(root)).stdout
    assert "stale  (answer: artifact out/answer.json changed)" in status
    updated = eb("update", "--cwd", str(root))
    assert "1 of 2 checks to run again; 1 keeps its result" in updated.stdout
    assert updated.exit_code == 0 and "Score: 2/2" in updated.stdout
    assert eb("status", "--cwd", str(root)).exit_code == 0
    (root / "out" / "other.json").unlink()
    assert (
        "stale  (other: artifact out/other.json is gone)" in eb("status", "--cwd", str(root)).stdout
    )
    updated = eb("update", "--cwd", str(root))
    assert updated.exit_code == 1 and "Score: 1/2" in updated.stdout
    (root / "out" / "other.json").write_text('{"ok": true}')
    assert (
        "stale  (other: artifact out/other.json appeared)"
        in eb("status", "--cwd", str(root)).stdout
    )


def test_the_status_hint_runs_as_printed_from_where_status_ran(tmp_path: Path) -> None:
    """`eb status --cwd proj` suggested `eb update` without --cwd: run from the same folder,
    the suggestion found no run folder (exit 2)."""
    root = tmp_path / "proj"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text("")
    (root / "eval_checks").mkdir()
    check = root / "eval_checks" / "ok.yaml"
    check.write_text(check_yaml("ok"))
    (tmp_path / "tasks.py").write_text("from eval_banana.tasks import ns\n")
    assert eb_process(tmp_path, "run", "--cwd", "proj").returncode == 0
    check.write_text(check_yaml("ok", script="print('edited')"))
    invoked = subprocess.run(
        [sys.executable, "-m", "invoke", "eval.status", "--cwd", "proj"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    status = eb_process(tmp_path, "status", "--cwd", "proj")
    assert status.returncode == 1, status.stdout + status.stderr
    hint = status.stdout.splitlines()[-1]
    assert hint == "To rerun exactly what is not ok: eb update --cwd proj", status.stdout
    assert invoked.stdout.splitlines()[-1] == hint, invoked.stdout + invoked.stderr
    eb, *args = shlex.split(hint.partition(": ")[2])
    assert eb == "eb"
    updated = eb_process(tmp_path, *args)
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert "rerun ok: eval_checks/ok.yaml changed" in updated.stdout, updated.stdout


def test_a_setting_flag_given_empty_is_replayed_empty(tmp_path: Path) -> None:
    """`eb run --harness-agent ""` recorded the agent as null with source cli, and the update
    after a config edit gave that null back as the flag's value: exit 2."""
    root = tmp_path / "proj"
    (root / ".eval-banana").mkdir(parents=True)
    config = root / ".eval-banana" / "config.toml"
    config.write_text('[harness]\nagent = "claude"\n')
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "ok.yaml").write_text(check_yaml("ok"))
    for flag in ("--harness-agent=", "--harness-model=", "--junit-xml=", "--cache-remote="):
        made = eb_process(root, "run", flag, "--output-dir", "runs")
        assert made.returncode == 0, made.stderr
        config.write_text(config.read_text() + "# an edit\n")
        updated = eb_process(root, "update", "--run-dir", str(max((root / "runs").iterdir())))
        assert updated.returncode == 0, f"{flag}: {updated.stderr}"
        assert "config    stages/config.json     stale" in updated.stdout


def test_update_refuses_a_setting_flag_by_name(tmp_path: Path) -> None:
    """`eb update --check-timeout-seconds 5` took 5 for STAGE: "invalid choice: '5'"."""
    root = tmp_path / "proj"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text("")
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "ok.yaml").write_text(check_yaml("ok"))
    assert eb_process(root, "run").returncode == 0
    for flags, stage in (
        (["--check-timeout-seconds", "5"], "execute"),
        (["--pass-threshold", "0.8", "score"], "score"),
        (["--harness-agent", "claude"], "guard"),
        (["-x"], "execute"),
    ):
        refused = eb_process(root, "update", *flags)
        assert refused.returncode == 2, refused.stdout
        assert f"unrecognized arguments: {flags[0]}\n" in refused.stderr, refused.stderr
        assert "eb update takes no setting flags" in refused.stderr
        assert f"`eb stage {stage} {flags[0]}" in refused.stderr, refused.stderr


def _planned(run_dir: Path) -> list[str]:
    plan = json.loads((run_dir / "stages" / "plan.json").read_text())
    return [check["id"] for check in plan["checks"]]


def test_an_update_after_eb_stage_config_changed_the_selection_plans_config_jsons(
    proj: Proj,
) -> None:
    """config.json is the run's request: after `eb stage config --check-id plain`, `eb update`
    plans what it selects, as the manual sequence (`eb stage discover`, `eb stage validate`,
    ...) does. A narrowing of `eb stage validate` alone is kept while config.json still holds
    the selection it was made under, and a plan made for another selection than config.json's
    (as an older eb's update left one) is stale."""
    _run_once(proj)
    run_dir = str(proj.run_dir)
    assert eb_process(proj.root, "stage", "config", "--check-id", "plain").returncode == 0
    updated = eb_process(proj.root, "update")
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert _planned(proj.run_dir) == ["plain"]
    assert eb_process(proj.root, "status").returncode == 0
    # `eb stage validate --check-id` narrows the plan itself; a setting changed in config.json
    # since (its selection the same) leaves that narrowing to the update.
    assert (
        eb_process(
            proj.root, "stage", "validate", "--check-id", "plain", "--check-id", "scripted"
        ).returncode
        == 0
    )
    assert eb_process(proj.root, "stage", "config", "--pass-threshold", "0.5").returncode == 0
    updated = eb_process(proj.root, "update", "--run-dir", run_dir)
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert _planned(proj.run_dir) == ["plain", "scripted"]
    # A plan that does not say which selection config.json held when it was made is taken to
    # have been made for its own: config.json selecting otherwise makes it stale.
    plan_path = proj.run_dir / "stages" / "plan.json"
    plan = json.loads(plan_path.read_text())
    del plan["config_selection"]
    plan_path.write_text(json.dumps(plan, indent=2, sort_keys=True) + "\n")
    status = eb_process(proj.root, "status")
    assert status.returncode == 1
    assert (
        "validate  stages/plan.json       stale  "
        "(stages/config.json selects other checks than the plan was made for)" in status.stdout
    )
    assert eb_process(proj.root, "update").returncode == 0
    assert _planned(proj.run_dir) == ["plain"]


def test_a_moved_check_keeps_its_result_under_the_file_it_lives_in_now(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    """A check file moved (renamed, into another folder) keeps its definition, so `eb update`
    keeps its verdict; the kept result named the file it was moved from, in execute.json,
    report.json, checks/<stem>.json and the console's FAILED line, while plan.json named the
    new one, and the plan's reason said only that the old file was removed."""
    proj = Proj(root=tmp_path / "proj", eb=eb, failing=True)

    def real_eb(*args: str) -> subprocess.CompletedProcess[str]:
        return eb_process(proj.root, *args)

    first = real_eb("run")
    assert first.returncode == 1, first.stdout + first.stderr
    old = proj.root / "eval_checks" / "fails.yaml"
    new = proj.root / "eval_checks" / "release" / "fails_check.yaml"
    new.parent.mkdir()
    old.rename(new)
    updated = real_eb("update")
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert proj.ran() == Counter(proj.checks)  # no check ran again
    rows = _rows(updated.stdout)
    assert (
        "(eval_checks/fails.yaml moved to eval_checks/release/fails_check.yaml): rerun"
        in rows["validate"]
    )
    (failed,) = [line for line in updated.stdout.splitlines() if line.startswith("FAILED")]
    assert failed.endswith("(eval_checks/release/fails_check.yaml)"), failed
    report = json.loads((proj.run_dir / "report.json").read_text())
    (reported,) = [check for check in report["checks"] if check["check_id"] == "fails"]
    assert proj.results()["fails"]["source_path"] == reported["source_path"] == str(new)
    (evidence,) = (proj.run_dir / "checks").glob("fails-*.json")
    assert json.loads(evidence.read_text())["source_path"] == str(new)
    status = real_eb("status")
    assert status.returncode == 0, status.stdout
