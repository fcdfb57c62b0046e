"""The run replay: a fully cached run kept whole, and replayed while nothing it read changed.

Runs go through the real CLI in-process; `replays` records what each run's replay attempt came
to (True: replayed, False: tried and went the usual way), so a test knows which path it saw.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.cache.replay_entry import replay_problem
from eval_banana.runners.results import shown_time
from tests.cache.rig import (
    Project,
    cache_of,
    judge,
    links_to_the_limit,
    make_project,
    script_check,
)

# A deterministic check that leaves evidence in a nested folder of its output folder.
SCRIPT = """\
import json, sys
from pathlib import Path
out = Path(json.loads(Path(sys.argv[1]).read_text())["output_dir"])
(out / "nested").mkdir()
(out / "nested" / "seen.txt").write_text("seen\\n")
"""
FAILING = "import sys\nsys.exit(1)\n"


def _project(tmp_path: Path, eb: Callable[..., Any], **kwargs: Any) -> Project:
    checks = {
        "whole": judge("whole"),
        "docs": judge("docs", inputs=["docs/**"]),
        "script": script_check("script", script_path="../checks/ok.py", inputs=["docs/**"]),
    }
    files = {"docs/a.md": "# A\n", "src/app.py": "print(1)\n", "checks/ok.py": SCRIPT}
    return make_project(tmp_path=tmp_path, eb=eb, checks=checks, files=files, **kwargs)


@pytest.fixture
def kept(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool], monkeypatch: pytest.MonkeyPatch
) -> Project:
    """A project whose verdicts are stored and whose last run was kept as a replay.

    Without run history: a replay gives back the kept run's page as it was drawn, and these
    tests compare it with pages drawn later, when the history holds more runs."""
    monkeypatch.setenv("EVAL_BANANA_HISTORY_MODE", "off")
    project = _project(tmp_path, eb)
    project.run()  # every check runs and is stored
    project.run()  # every verdict reused: the run is kept
    assert replays == [False, False]
    assert len(replay_files(project)) == 1
    return project


def replay_files(project: Project) -> list[Path]:
    return sorted((project.cache_dir / "runs").rglob("*.json"))


def _stage(run_dir: Path, name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((run_dir / "stages" / name).read_text())
    return document


def _run_values(run_dir: Path) -> list[bytes]:
    """What differs between any two runs: folder, id, the digests of its stage files and of
    the reports stages/report.json records."""
    config = _stage(run_dir, "config.json")
    digested = [path for path in (run_dir / "stages").iterdir() if path.is_file()]
    digested += [run_dir / "report.json", run_dir / "report.md", run_dir / "report.html"]
    digested = [path for path in digested if path.is_file()]
    stage_digests = ["sha256:" + hashlib.sha256(path.read_bytes()).hexdigest() for path in digested]
    return [str(run_dir).encode(), config["run_id"].encode(), *(d.encode() for d in stage_digests)]


def normalized(run_dir: Path) -> dict[str, bytes]:
    """Every file of a run folder with the run's own values (folder, id, stage file digests,
    run times and duration) blanked; the per-check files as they are."""
    values = _run_values(run_dir)
    report = json.loads((run_dir / "report.json").read_text())
    out: dict[str, bytes] = {}
    for path in sorted(run_dir.rglob("*")):
        if not path.is_file():
            continue
        name = path.relative_to(run_dir).as_posix()
        data = path.read_bytes()
        if not name.startswith("checks/"):
            for value in values:
                data = data.replace(value, b"<run>")
            for moment in (report["started_at"], report["completed_at"]):
                data = data.replace(moment.encode(), b"<time>")
            # report.html's start, to the second.
            data = data.replace(shown_time(report["started_at"]).encode(), b"<time>")
            data = re.sub(rb'(\n  "(run_)?created_at": ")[^"]+', rb"\1<time>", data)
            data = re.sub(rb'(\n  "duration_ms": )\d+', rb"\1<ms>", data)
            data = re.sub(rb"(<dt>Duration</dt><dd>)\d+", rb"\1<ms>", data)
        out[name] = data
    return out


def test_a_kept_run_is_replayed_to_the_folder_the_usual_way_writes(
    kept: Project, replays: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    starts = kept.agent_starts()
    replayed = kept.run()
    assert replays[-1] is True
    assert kept.agent_starts() == starts
    assert replayed["cached_checks"] == 3
    assert all(cache_of(check)["hit"] is True for check in replayed["checks"])
    monkeypatch.setenv("EVAL_BANANA_CACHE_REPLAY", "false")
    usual = kept.run()
    assert len(replays) == 3  # the usual run asked for no replay
    replayed_dir, usual_dir = Path(replayed["output_dir"]), Path(usual["output_dir"])
    assert replayed_dir != usual_dir
    mine, theirs = normalized(replayed_dir), normalized(usual_dir)
    assert set(mine) == set(theirs)
    differing = {name for name in mine if mine[name] != theirs[name]}
    # config.json names the setting that turned the replay off; nothing else may differ.
    assert differing == {"stages/config.json"}
    # The --json line is the report, and the report is this run's own.
    assert replayed == json.loads((replayed_dir / "report.json").read_text())
    assert replayed["run_id"] == replayed_dir.name
    assert replayed["output_dir"] == str(replayed_dir)


def test_a_replayed_page_shows_its_own_start_not_the_kept_runs(
    kept: Project, replays: list[bool]
) -> None:
    time.sleep(1.1)  # the kept run started at least a second before this one
    replayed = kept.run()
    assert replays[-1] is True
    page = (Path(replayed["output_dir"]) / "report.html").read_text()
    assert f"<dt>Started</dt><dd>{shown_time(replayed['started_at'])}</dd>" in page


def test_a_replayed_run_chains_its_own_stage_files(kept: Project, replays: list[bool]) -> None:
    run_dir = Path(kept.run()["output_dir"])
    assert replays[-1] is True
    run_id = run_dir.name
    upstream = {
        "plan.json": ("config", "discover"),
        "guard.json": ("config", "validate"),
        "execute.json": ("config", "validate", "guard"),
        "score.json": ("config", "execute"),
        "report.json": ("config", "execute", "score"),
    }
    files = {"config": "config.json", "discover": "discover.json", "validate": "plan.json"}
    files.update({"guard": "guard.json", "execute": "execute.json", "score": "score.json"})
    created = []
    for name, stages in upstream.items():
        document = _stage(run_dir, name)
        assert document["run_id"] == run_id
        created.append(document["created_at"])
        for stage in stages:
            data = (run_dir / "stages" / files[stage]).read_bytes()
            assert document["inputs"][stage] == "sha256:" + hashlib.sha256(data).hexdigest()
    assert created == sorted(created)  # plan, guard, execute, score, report: in that order
    execute = _stage(run_dir, "execute.json")
    assert _stage(run_dir, "config.json")["created_at"] <= created[0]
    assert execute["started_at"] <= execute["completed_at"]
    status = kept.eb("status", "--cwd", str(kept.root), "--run-dir", str(run_dir))
    assert status.exit_code == 0
    lines = [line.split() for line in status.stdout.splitlines()[1:]]
    assert len(lines) == 7 and all(line[-1] == "ok" for line in lines), status.stdout


# In the process of its own: each `eb run` notes whether it was a replay.
_NOTING_REPLAYS = """\
from eval_banana.pipeline import replaying
real_replay = replaying.replay
def replay(**kwargs):
    outcome = real_replay(**kwargs)
    note("replayed" if outcome is not None else "usual")
    return outcome
replaying.replay = replay
"""


def test_a_replayed_run_s_edited_report_is_stale_and_written_again(
    kept: Project, tmp_path: Path
) -> None:
    """A replay wrote the kept run's stages/report.json first, so a digest of the reports in it
    would name the kept run's reports: an edited report of a replayed run must be seen all the
    same, and rebuilt from the replayed run's own stage files."""
    from tests.forking import events_of

    events = tmp_path / "events"
    kept.eb = _scripted(_NOTING_REPLAYS, events)
    run_dir = Path(kept.run()["output_dir"])
    assert events_of(events) == ["replayed"]
    report_stage = _stage(run_dir, "report.json")
    for name, field in (
        ("report.json", "report_json_sha256"),
        ("report.md", "report_md_sha256"),
        ("report.html", "report_html_sha256"),
    ):
        written = (run_dir / name).read_bytes()
        assert report_stage[field] == "sha256:" + hashlib.sha256(written).hexdigest(), name
    status = kept.eb("status", "--cwd", str(kept.root), "--run-dir", str(run_dir))
    assert status.exit_code == 0, status.stdout + status.stderr
    report_json = run_dir / "report.json"
    report_json.write_bytes(
        report_json.read_bytes().replace(b'"run_passed": true', b'"run_passed": false')
    )
    status = kept.eb("status", "--cwd", str(kept.root), "--run-dir", str(run_dir))
    assert status.exit_code == 1, status.stdout + status.stderr
    assert "report.json was edited after the report stage wrote it" in status.stdout
    starts = kept.agent_starts()
    updated = kept.eb("update", "--cwd", str(kept.root), "--run-dir", str(run_dir))
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert kept.agent_starts() == starts  # no check ran
    assert json.loads(report_json.read_text())["run_passed"] is True
    status = kept.eb("status", "--cwd", str(kept.root), "--run-dir", str(run_dir))
    assert status.exit_code == 0, status.stdout + status.stderr


def test_an_edited_input_goes_the_usual_way_and_reruns_only_its_readers(
    kept: Project, replays: list[bool]
) -> None:
    kept.write({"docs/a.md": "# A, edited\n"})
    assert kept.misses() == {"whole", "docs", "script"}
    assert replays[-1] is False
    kept.write({"src/app.py": "print(2)\n"})
    assert kept.misses() == {"whole"}  # src/ is no declared input: the whole project's reader
    assert replays[-1] is False
    kept.run()  # a fully cached run again: kept
    assert replays[-1] is False
    kept.run()
    assert replays[-1] is True


def test_an_edited_check_file_or_setting_is_another_replay(
    kept: Project, replays: list[bool]
) -> None:
    kept.write({"eval_checks/docs.yaml": judge("docs", instructions="Judge again.")})
    assert kept.misses() == {"docs", "whole"}  # a check file is a file of the project too
    assert replays[-1] is False
    kept.run()  # fully cached under the new check file: kept under another key
    kept.run()
    assert replays[-2:] == [False, True]
    kept.run("--max-parallel-checks", "3")
    assert replays[-1] is False  # a setting is part of the key too
    kept.run("--max-parallel-checks", "3")
    assert replays[-1] is True
    assert len(replay_files(kept)) == 3


def test_an_edited_referenced_script_goes_the_usual_way(kept: Project, replays: list[bool]) -> None:
    kept.write({"checks/ok.py": SCRIPT + "# edited\n"})
    assert kept.misses() == {"script", "whole"}  # the script is also a file of the project
    assert replays[-1] is False


def test_a_replay_after_an_edit_to_a_file_the_plan_read_brings_nothing(
    kept: Project, tmp_path: Path
) -> None:
    from tests.forking import events_of

    # Every replay that brings files forks for them here: none may start for an edited script.
    events = tmp_path / "events"
    kept.eb = _scripted(
        "import eval_banana.cache.replay as replay\nreplay.PLACE_FORK_FILES = 1\n", events
    )
    kept.write({"checks/ok.py": SCRIPT + "# edited\n"})
    assert kept.misses() == {"script", "whole"}
    assert events_of(events) == []


def test_read_only_replays_and_writes_nothing(kept: Project, replays: list[bool]) -> None:
    from tests.cache.test_store import snapshot

    before = snapshot(kept.cache_dir)
    report = kept.run("--cache", "read-only")
    assert replays[-1] is True
    assert report["cached_checks"] == 3
    assert snapshot(kept.cache_dir) == before


def test_read_only_keeps_no_replay(tmp_path: Path, eb: Callable[..., Any]) -> None:
    project = _project(tmp_path, eb)
    project.run()
    project.run("--cache", "read-only")
    assert replay_files(project) == []


def test_a_damaged_replay_is_one_warning_and_the_usual_way_keeps_a_sound_one(
    kept: Project, replays: list[bool]
) -> None:
    (path,) = replay_files(kept)
    path.write_text(path.read_text()[:100])
    starts = kept.agent_starts()
    report = kept.run()
    assert replays[-1] is False
    assert kept.last.stderr.count("Run replay") == 1
    assert str(path) in kept.last.stderr
    assert report["cached_checks"] == 3 and kept.agent_starts() == starts
    assert replay_problem(json.loads(path.read_text())) is None
    kept.run()
    assert replays[-1] is True


def test_a_damaged_stored_file_takes_the_replay_back(kept: Project, replays: list[bool]) -> None:
    (path,) = replay_files(kept)
    entry = json.loads(path.read_text())
    template = next(t for t in entry["templates"] if t["name"] == "report.md")
    blob = kept.cache_dir / "blobs" / template["sha256"][7:9] / template["sha256"][7:]
    data = bytearray(blob.read_bytes())
    data[0] ^= 1  # same size, other content
    blob.write_bytes(bytes(data))
    report = kept.run()
    assert replays[-1] is False
    assert "damaged" in kept.last.stderr
    run_dir = Path(report["output_dir"])
    assert (run_dir / "report.md").read_bytes().startswith(b"# eval-banana report")
    assert sorted(p.name for p in (run_dir / "stages").iterdir()) == sorted(
        ["config.json", "discover.json", "plan.json", "guard.json", "execute.json"]
        + ["score.json", "report.json", "snapshots"]
    )
    kept.run()
    assert replays[-1] is True


def test_a_damaged_check_file_takes_the_replay_back_and_only_its_check_runs(
    kept: Project, replays: list[bool]
) -> None:
    # One of the files a replay links into checks/ (a judge's prompt), damaged in the cache:
    # the replay is taken back whole, and the usual way runs the one check it belongs to.
    (path,) = replay_files(kept)
    files = json.loads(path.read_text())["files"]
    prompt = next(item for item in files if item["name"].endswith(".prompt.txt"))
    blob = kept.cache_dir / "blobs" / prompt["sha256"][7:9] / prompt["sha256"][7:]
    data = bytearray(blob.read_bytes())
    data[-1] ^= 1  # same size, other content
    blob.write_bytes(bytes(data))
    starts = kept.agent_starts()
    report = kept.run()
    assert replays[-1] is False
    assert f"cannot bring {prompt['name']}: its stored file" in kept.last.stderr
    assert kept.agent_starts() == starts + 1  # the check whose prompt it was, alone
    assert report["cached_checks"] == len(report["checks"]) - 1
    run_dir = Path(report["output_dir"])
    # What the run folder holds for it is this run's prompt, not the damaged bytes.
    assert (run_dir / prompt["name"]).read_bytes() != bytes(data)
    kept.run()  # every verdict reused again: kept as the replay anew
    assert replays[-1] is False
    kept.run()
    assert replays[-1] is True


def test_a_verdict_the_cache_let_go_is_no_replay(kept: Project, replays: list[bool]) -> None:
    from tests.cache.test_store import entry_for

    entry_for(kept, "docs").unlink()
    starts = kept.agent_starts()
    assert kept.misses() == {"docs"}
    assert replays[-1] is False
    assert "no longer stored" in kept.last.stderr
    assert kept.agent_starts() == starts + 1


def test_a_kept_run_goes_once_a_verdict_it_reused_is_stored_again_into_an_emptied_slot(
    tmp_path: Path,
    eb: Callable[..., Any],
    replays: list[bool],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The entry a kept run reused is removed (a prune, an eviction, a user's delete); the
    check is judged again under the same key and fails: the next run must not replay the
    old pass (the environment is no part of a key, so it stands in for a flaky judge)."""
    from tests.cache.test_store import entry_for

    flaky = "import os, sys\nsys.exit(int(os.environ.get('FLAKY_FAIL', '0')))\n"
    checks = {"flaky": script_check("flaky", script=flaky), "good": judge("good")}
    project = make_project(tmp_path=tmp_path, eb=eb, checks=checks, files={})
    project.run()
    project.run()  # every verdict reused: the run is kept
    assert len(replay_files(project)) == 1
    entry_for(project, "flaky").unlink()
    monkeypatch.setenv("FLAKY_FAIL", "1")
    project.run(expect_exit=1)  # judged again: the failure is stored in the emptied slot
    assert replay_files(project) == []
    again = project.run(expect_exit=1)
    assert replays[-1] is False
    assert {c["check_id"]: c["status"] for c in again["checks"]}["flaky"] == "failed"


def test_a_flat_output_folder_is_never_replayed(
    kept: Project, replays: list[bool], tmp_path: Path
) -> None:
    report = kept.run("--output-dir", str(tmp_path / "flat"), "--flat-output")
    assert report["cached_checks"] == 3
    assert len(replays) == 2  # no replay was tried


def test_a_replay_prints_what_the_usual_run_prints(
    kept: Project, replays: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    replayed = _shown(kept.eb("run", "--cwd", str(kept.root)))
    assert replays[-1] is True
    monkeypatch.setenv("EVAL_BANANA_CACHE_REPLAY", "false")
    usual = _shown(kept.eb("run", "--cwd", str(kept.root)))
    notice = [line for line in replayed[1] if line.startswith("Replayed run ")]
    assert len(notice) == 1
    assert replayed[0] == usual[0]
    # Each says in its own words that nothing ran: the replay names the run it replays.
    said = [line for line in usual[1] if line.startswith("Nothing was launched: ")]
    assert len(said) == 1
    assert [line for line in replayed[1] if line not in notice] == [
        line for line in usual[1] if line not in said
    ]
    assert any(line.startswith("[3/3] ") and "(cached, " in line for line in usual[1])


def _shown(result: Any) -> tuple[list[str], list[str]]:
    """A run's stdout and stderr lines with its id and its wall times blanked (two runs can
    round to different tenths of a second)."""
    assert result.exit_code == 0, result.stdout + result.stderr
    (run_id,) = re.findall(r"^Run ID: (\S+)$", result.stdout, flags=re.M)

    def blanked(text: str) -> list[str]:
        return re.sub(r"\b\d+(\.\d+)?s\b", "<time>", text.replace(run_id, "<run>")).splitlines()

    return blanked(result.stdout), blanked(result.stderr)


def test_a_failed_run_is_replayed_as_failed(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool]
) -> None:
    checks = {"bad": script_check("bad", script=FAILING), "good": judge("good")}
    project = make_project(tmp_path=tmp_path, eb=eb, checks=checks, files={})
    project.run(expect_exit=1)
    first = project.run(expect_exit=1)
    replayed = project.run(expect_exit=1)
    assert replays == [False, False, True]
    assert replayed["run_passed"] is False
    assert [c["status"] for c in replayed["checks"]] == [c["status"] for c in first["checks"]]


def test_an_in_process_replay_leaves_the_signal_handlers_as_they_were(
    kept: Project, replays: list[bool]
) -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    kept.run()
    assert replays[-1] is True
    assert {sig: signal.getsignal(sig) for sig in before} == before


def _scripted(setup: str, events: Path) -> Callable[..., Any]:
    from tests.conftest import EbResult
    from tests.forking import eb_script, run_script

    script = eb_script(setup=setup)

    def run(*args: str) -> EbResult:
        done = run_script(script=script, args=args, events=events)
        return EbResult(exit_code=done.returncode, stdout=done.stdout, stderr=done.stderr)

    return run


def test_a_forked_replay_brings_the_same_folder(kept: Project, tmp_path: Path) -> None:
    from tests.forking import events_of

    in_place = Path(kept.run()["output_dir"])
    events = tmp_path / "events"
    kept.eb = _scripted(
        "import eval_banana.cache.replay as replay\nreplay.PLACE_FORK_FILES = 1\n", events
    )
    forked = Path(kept.run()["output_dir"])
    assert events_of(events) == ["fork"]
    assert normalized(forked) == normalized(in_place)


def test_a_ctrl_c_during_a_replay_stops_the_run_the_usual_way(
    kept: Project, tmp_path: Path
) -> None:
    setup = """\
import signal, time
import eval_banana.cache.replay as replay
real = replay._state_holds
def holds(**kwargs):
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, while the replay is under way
    time.sleep(0.1)
    return real(**kwargs)
replay._state_holds = holds
"""
    kept.eb = _scripted(setup, tmp_path / "events")
    starts = kept.agent_starts()
    error = kept.run(expect_exit=3)["error"]
    assert error["kind"] == "aborted"
    (path,) = re.findall(r"Report: (\S+)$", error["message"])
    run_dir = Path(path).parent
    report = json.loads((run_dir / "report.json").read_text())
    assert report["aborted_by"] == "interrupt"
    assert report["not_run_checks"] == 3 and report["cached_checks"] == 0
    assert kept.agent_starts() == starts
    # Nothing the replay brought is left: the check files are the usual way's, of checks that
    # did not run, and so are the stage files.
    left = [p for p in (run_dir / "checks").rglob("*") if p.is_file()]
    assert len(left) == 3 and all(p.suffix == ".json" for p in left)
    execute = json.loads((run_dir / "stages" / "execute.json").read_text())
    assert {json.loads(p.read_text())["status"] for p in left} == {
        result["status"] for result in execute["results"]
    }
    assert all(cache_of(result) == {} for result in execute["results"])


def test_a_replay_brings_a_check_s_evidence_folder(kept: Project, replays: list[bool]) -> None:
    run_dir = Path(kept.run()["output_dir"])
    assert replays[-1] is True
    (evidence,) = (run_dir / "checks").rglob("seen.txt")
    assert evidence.read_text() == "seen\n" and evidence.parent.name == "nested"


def test_a_git_project_is_replayed_while_its_files_read_the_same(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool]
) -> None:
    from tests.gitrepo import commit_all, git

    project = _project(tmp_path, eb)
    git(project.root, "init", "-q")
    project.write({".gitignore": ".eval-banana/results/\n.eval-banana/cache/\n"})
    commit_all(project.root, "init")
    project.run()
    project.run()
    project.run()
    assert replays[-1] is True
    # Staged, committed: the same bytes are the same state.
    project.write({"src/new.py": "print(3)\n"})
    assert project.misses() == {"whole"}
    git(project.root, "add", "-A")
    project.run()  # kept
    commit_all(project.root, "more")
    project.run()
    assert replays[-1] is True
    # An ignored file is no file of the project: no reader sees it.
    project.write({".gitignore": ".eval-banana/results/\n.eval-banana/cache/\nscratch/\n"})
    assert project.misses() == {"whole"}
    project.run()
    project.write({"scratch/notes.txt": "ignored\n"})
    project.run()
    assert replays[-1] is True
    tried = len(replays)
    project.run("--changed-since", "HEAD")  # the selection follows a revision: never replayed
    assert len(replays) == tried


def test_a_replay_writes_the_junit_file_the_usual_run_writes(
    kept: Project, replays: list[bool], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replayed_xml, usual_xml = tmp_path / "replayed.xml", tmp_path / "usual.xml"
    # Where the JUnit file goes is no part of the key: the run kept without one replays.
    replayed = kept.run("--junit-xml", str(replayed_xml))
    assert replays[-1] is True
    monkeypatch.setenv("EVAL_BANANA_CACHE_REPLAY", "false")
    usual = kept.run("--junit-xml", str(usual_xml))
    times = re.compile(r'(timestamp|time)="[^"]*"')
    replayed_text = times.sub("", replayed_xml.read_text()).replace(replayed["run_id"], "<run>")
    usual_text = times.sub("", usual_xml.read_text()).replace(usual["run_id"], "<run>")
    assert replayed_text == usual_text
    assert replayed_text.count('name="cached" value="true"') == 3


@pytest.mark.parametrize(
    ("flags", "summary"),
    [
        (["--json"], False),
        (["--no-html"], False),
        (["--junit-xml", "{tmp}/junit.xml"], False),
        (["--verbose"], False),
        (["--annotations", "github"], False),
        (["--result-out", "{tmp}/result.md"], False),
        (["--baseline", "latest"], False),
        ([], True),
    ],
    ids=["json", "no-html", "junit", "verbose", "annotations", "result-out", "baseline", "summary"],
)
def test_a_flag_that_only_shows_the_result_replays_the_kept_run(
    kept: Project,
    replays: list[bool],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    summary: bool,
) -> None:
    if summary:
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    shown = kept.eb("run", "--cwd", str(kept.root), *(f.format(tmp=tmp_path) for f in flags))
    assert shown.exit_code == 0, shown.stdout + shown.stderr
    assert replays[-1] is True
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    plain = kept.eb("run", "--cwd", str(kept.root))
    assert plain.exit_code == 0, plain.stdout + plain.stderr
    assert replays[-1] is True
    assert len(replay_files(kept)) == 1  # the one kept run served both


def test_a_replay_under_no_html_writes_no_page(kept: Project, replays: list[bool]) -> None:
    replayed = kept.run("--no-html")
    assert replays[-1] is True
    assert not (Path(replayed["output_dir"]) / "report.html").exists()
    assert "HTML report" not in kept.last.stdout + kept.last.stderr
    # The kept run's stages/report.json recorded its page: this run's records none.
    assert _stage(Path(replayed["output_dir"]), "report.json")["report_html_sha256"] is None
    status = kept.eb("status", "--cwd", str(kept.root), "--run-dir", replayed["output_dir"])
    assert status.exit_code == 0, status.stdout + status.stderr


def test_a_run_kept_without_a_page_is_replayed_with_one_rendered_from_its_report(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVAL_BANANA_HISTORY_MODE", "off")
    project = _project(tmp_path, eb)
    project.run("--no-html")
    project.run("--no-html")  # kept, without report.html
    replayed = project.run()
    assert replays == [False, False, True]
    monkeypatch.setenv("EVAL_BANANA_CACHE_REPLAY", "false")
    usual = project.run()
    mine = normalized(Path(replayed["output_dir"]))
    theirs = normalized(Path(usual["output_dir"]))
    assert "report.html" in mine
    assert mine["report.html"] == theirs["report.html"]
    # The page rendered here is the one its stages/report.json records.
    run_dir = Path(replayed["output_dir"])
    page = hashlib.sha256((run_dir / "report.html").read_bytes()).hexdigest()
    assert _stage(run_dir, "report.json")["report_html_sha256"] == f"sha256:{page}"


def test_a_referenced_script_outside_every_input_state_is_watched(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool]
) -> None:
    # No check reads the whole project and no `inputs:` match the script: only the watched
    # files can tell that it changed.
    checks = {
        "docs": judge("docs", inputs=["docs/**"]),
        "script": script_check("script", script_path="../checks/ok.py", inputs=["docs/**"]),
    }
    files = {"docs/a.md": "# A\n", "checks/ok.py": SCRIPT}
    project = make_project(tmp_path=tmp_path, eb=eb, checks=checks, files=files)
    project.run()
    project.run()
    project.run()
    assert replays[-1] is True
    project.write({"checks/ok.py": SCRIPT + "# edited\n"})
    assert project.misses() == {"script"}
    assert replays[-1] is False


def test_a_replay_marks_the_verdicts_it_stands_on_as_used(
    kept: Project, replays: list[bool]
) -> None:
    for entry in kept.entries():
        os.utime(entry, (1_000_000, 1_000_000))
    kept.run()
    assert replays[-1] is True
    assert all(entry.stat().st_mtime > 1_000_000 for entry in kept.entries())


def test_a_replayed_run_writes_its_result_document(
    kept: Project, replays: list[bool], tmp_path: Path
) -> None:
    out = tmp_path / "result.json"
    report = kept.run("--result-out", str(out), "--result-format", "json")
    assert replays[-1] is True
    document = json.loads(out.read_text())
    assert document["status"] == "completed" and document["run_passed"] is True
    assert [c["id"] for c in document["checks"]] == [c["check_id"] for c in report["checks"]]


def test_eviction_keeps_a_replay_s_files_while_the_replay_is_kept(tmp_path: Path) -> None:
    from eval_banana.cache.store import CacheStore

    store = CacheStore(folder=tmp_path / "cache", max_bytes=1 << 30)
    template = store.put_bytes(data=b"t" * 1000)
    per_check = store.put_bytes(data=b"f" * 1000)
    stray = store.put_bytes(data=b"s" * 1000)
    key = "sha256:" + "a" * 64
    item = {"name": "checks/x.json", "sha256": per_check.sha256, "size": per_check.size}
    document = {"files": [item], "templates": [{**item, "name": "report.md", **template._asdict()}]}
    store.write_replay(key=key, document=document)
    for blob in (template, per_check, stray):
        os.utime(store.blob_path(sha256=blob.sha256), (1, 1))  # older than the replay
    store.max_bytes = 2500  # room for the replay and its two files, not for the stray one
    store.evict()
    assert store.replay_path(key=key).exists()
    assert store.blob_path(sha256=template.sha256).exists()
    assert store.blob_path(sha256=per_check.sha256).exists()
    assert not store.blob_path(sha256=stray.sha256).exists()
    store.max_bytes = 10  # now the replay goes, and its files with it
    store.evict()
    assert not store.replay_path(key=key).exists()
    assert not store.blob_path(sha256=template.sha256).exists()


def test_eb_itself_is_part_of_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eval_banana.cache import replay_key

    package = tmp_path / "package"
    package.mkdir()
    module = package / "stage.py"
    module.write_text("A = 1\n")
    monkeypatch.setattr(replay_key, "_PACKAGE", package)
    before = replay_key.code_fingerprint()
    module.write_text("A = 22\n")  # an edited checkout, the same version number
    assert replay_key.code_fingerprint() != before


def test_a_kept_run_s_own_files_are_copied_into_the_cache_never_linked(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    project = _project(tmp_path, eb)
    project.run()
    run_dir = Path(project.run()["output_dir"])  # kept
    (snapshot,) = (run_dir / "stages" / "snapshots").iterdir()
    # The frozen script is the run's own file, not a reused one: the cache holds a copy, so
    # nothing done to either can change the other.
    assert snapshot.stat().st_nlink == 1
    digest = hashlib.sha256(snapshot.read_bytes()).hexdigest()
    stored = project.cache_dir / "blobs" / digest[:2] / digest
    assert stored.read_bytes() == snapshot.read_bytes()
    (entry,) = replay_files(project)
    names = {item["name"] for item in json.loads(entry.read_text())["files"]}
    assert f"stages/snapshots/{snapshot.name}" in names


def _crowd_an_output(*, project: Project, run_dir: Path, folder: Path) -> tuple[str, Path]:
    """Give the cache's copy of a judge's output in `run_dir` as many links as the file system
    allows, as kept run folders do; (its name in a run folder's checks/, the cache's copy)."""
    placed = next(
        path
        for path in sorted((run_dir / "checks").iterdir())
        if path.name.endswith(".stdout.txt") and path.stat().st_size
    )
    digest = hashlib.sha256(placed.read_bytes()).hexdigest()
    stored = project.cache_dir / "blobs" / digest[:2] / digest
    assert os.path.samefile(placed, stored)
    links_to_the_limit(stored, folder=folder)
    return placed.name, stored


def _links_from(run_dir: Path, stored: Path) -> int:
    return sum(os.path.samefile(path, stored) for path in (run_dir / "checks").iterdir())


def test_a_replay_links_again_a_blob_at_the_file_system_s_link_limit(
    kept: Project, replays: list[bool], tmp_path: Path
) -> None:
    # Kept run folders hold links to the blobs: a family whose cases print the same output
    # reaches the limit (ext4: 65,000) in 65 runs of 1,000 cases, and each replay then copied every
    # such file. The replay stores the blob again and links to it.
    run_dir = Path(kept.run()["output_dir"])
    assert replays[-1] is True
    name, stored = _crowd_an_output(project=kept, run_dir=run_dir, folder=tmp_path / "kept")
    again = Path(kept.run()["output_dir"])
    assert replays[-1] is True
    assert os.path.samefile(again / "checks" / name, stored)
    # A file of its own again: the cache's name and this run's links to it (two judges print
    # the same output), not the 65,000 the kept folders hold.
    assert stored.stat().st_nlink == 1 + _links_from(again, stored)
    assert (run_dir / "checks" / name).read_bytes() == stored.read_bytes()


def test_the_usual_way_stores_a_crowded_blob_again_once_its_checks_have_ended(
    kept: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # While checks run, a change in the cache would be taken for a check's: the run copies the
    # file, and stores the blob again once no check runs, so the next run links it.
    monkeypatch.setenv("EVAL_BANANA_CACHE_REPLAY", "false")
    run_dir = Path(kept.run()["output_dir"])
    name, stored = _crowd_an_output(project=kept, run_dir=run_dir, folder=tmp_path / "kept")
    crowded = Path(kept.run()["output_dir"])
    assert not os.path.samefile(crowded / "checks" / name, stored)
    assert stored.stat().st_nlink == 1  # stored again after the run: nothing links to it yet
    later = Path(kept.run()["output_dir"])
    assert os.path.samefile(later / "checks" / name, stored)
    assert stored.stat().st_nlink == 1 + _links_from(later, stored)
    assert kept.run()["cached_checks"] == 3  # every verdict still reused


def test_a_run_with_transcripts_off_reuses_and_replays_no_transcript(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVAL_BANANA_HISTORY_MODE", "off")
    project = make_project(tmp_path=tmp_path, eb=eb, checks={"whole": judge("whole")}, files={})
    (stored,) = project.run()["checks"]
    assert stored["details"]["transcript_path"] is not None  # stored with its transcript
    monkeypatch.setenv("EVAL_BANANA_HARNESS_TRANSCRIPTS", "false")
    reused = project.run()  # the verdict reused, the run kept
    replayed = project.run()
    assert replays == [False, False, True]
    assert project.agent_starts() == 1
    for report in (reused, replayed):
        (check,) = report["checks"]
        assert cache_of(check)["hit"] is True and check["details"]["transcript_path"] is None
        run_dir = Path(report["output_dir"])
        assert not list((run_dir / "checks").glob("*.transcript.jsonl"))
        assert 'id="tr-' not in (run_dir / "report.html").read_text(encoding="utf-8")
