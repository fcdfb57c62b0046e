"""Shards across CI jobs, merged: every shard is a separate `eb run --shard K/4` process in its
own checkout (as CI jobs are), `eb merge` gathers them, and the merged report must be the
report of the same run on one machine, field by field.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.core.files import TEMP_SIBLING_NAME
from tests.conftest import STANDIN_AGENTS, EbResult, check_yaml, judge_yaml
from tests.forking import default_sigint, eb_script, events_of, run_script

SHARDS = 4
# A shard split by the id hash records no history.
BY_HASH = {"balance": "hash", "history_digest": None, "variables": []}
CONFIG = """\
[core]
output_dir = "runs"
check_timeout_seconds = 2
max_parallel_checks = 4

[harness]
agent = "claude"
timeout_seconds = 60
"""
ASSERTIONS = """\
schema_version: 1
id: {id}
type: assertions
description: The plan artifact has {what}.
artifact: out/plan.json
assert:
  - {{path: {path}, op: exists}}
"""
REFERENCED = """\
schema_version: 1
id: referenced_script
type: deterministic
description: A check whose script lives next to it.
script_path: count.py
"""
# Leaves evidence in a folder of its own output folder: the merge brings sub-folders too.
COUNT_SCRIPT = """\
import json, sys
from collections.abc import Callable
from pathlib import Path
out = Path(json.loads(Path(sys.argv[1]).read_text())["output_dir"]) / "nested"
out.mkdir(parents=True)
(out / "counted.txt").write_text("counted\\n")
print('counted')
"""
CONTROL = """\
schema_version: 1
id: control_defect_caught
type: deterministic
description: Control check; the planted defect must be caught.
expect: fail
script: raise SystemExit(1)
"""
# Listed by every shard (a skip is outside the split), reported once by the merge.
SKIPPED = """\
schema_version: 1
id: waits_for_the_fix
type: deterministic
description: A check its file skips.
skip: waits for the upstream fix
script: raise SystemExit(1)
"""
# Fields that name a moment, a duration or a folder: the only ones a merge may change.
VOLATILE_REPORT = {"run_id", "output_dir", "started_at", "completed_at", "duration_ms"}
VOLATILE_CHECK = {"started_at", "completed_at", "duration_ms"}


def _project(root: Path) -> Path:
    """40 checks of every kind: deterministic (pass, fail, time out, referenced script, a
    control), assertions (pass, fail) and judges on a stand-in agent (pass, fail); and one
    check its file skips."""
    files: dict[str, str] = {".eval-banana/config.toml": CONFIG}
    for index in range(28):
        folder = ("eval_checks/core", "eval_checks/extra", "services/api/eval_checks")[index % 3]
        files[f"{folder}/pass_{index:02d}.yaml"] = check_yaml(f"pass_{index:02d}", tags=["fast"])
    for index in range(4):
        script = f"import sys\nprint('expected 3, got {index}')\nsys.exit({index + 1})"
        files[f"eval_checks/core/fail_{index}.yaml"] = check_yaml(f"fail_{index}", script=script)
    files["eval_checks/slow/times_out.yaml"] = check_yaml(
        "times_out", script="import time\ntime.sleep(30)"
    )
    files["eval_checks/artifact/has_title.yaml"] = ASSERTIONS.format(
        id="plan_has_title", what="a title", path="title"
    )
    files["eval_checks/artifact/has_owner.yaml"] = ASSERTIONS.format(
        id="plan_has_owner", what="an owner", path="owner"
    )
    files["out/plan.json"] = json.dumps({"title": "Release", "steps": []})
    files["eval_checks/judges/kind.yaml"] = judge_yaml(
        "judge_kind", instructions="Is the README kind?\nstandin: score=1 reason=it_is_kind"
    )
    files["eval_checks/judges/short.yaml"] = judge_yaml(
        "judge_short", instructions="Is the README short?\nstandin: score=1 reason=short_enough"
    )
    files["eval_checks/judges/typo.yaml"] = judge_yaml(
        "judge_no_typos", instructions="Is it free of typos?\nstandin: score=0 reason=two_typos"
    )
    files["eval_checks/control/defect.yaml"] = CONTROL
    files["eval_checks/later/skipped.yaml"] = SKIPPED
    files["eval_checks/scripts/referenced.yaml"] = REFERENCED
    files["eval_checks/scripts/count.py"] = COUNT_SCRIPT
    files["README.md"] = "# A kind, short project\n"
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    checks = [name for name in files if name.endswith(".yaml") and "eval_checks" in name]
    assert len(checks) == 41
    return root


def _environ(**extra: str) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    # These merges run in the repository's own folder: they leave no run record there (what a
    # merge records is tested in tests/test_history.py).
    environ["EVAL_BANANA_HISTORY_MODE"] = "off"
    environ["PATH"] = f"{STANDIN_AGENTS}{os.pathsep}{environ['PATH']}"
    environ.update(extra)
    return environ


def _eb(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eval_banana", *args],
        capture_output=True,
        text=True,
        env=_environ(**extra),
        stdin=subprocess.DEVNULL,
        timeout=240,
    )


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "eval_banana", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_environ(),
        stdin=subprocess.DEVNULL,
    )


def _same_paths(check: dict[str, Any], *, checkouts: list[str], main: str) -> dict[str, Any]:
    """What a check printed, with the shard's checkout folder written as the main one (a judge
    agent prints its working folder, which is the job's checkout)."""
    text = json.dumps(check)
    for checkout in checkouts:
        text = text.replace(checkout, main)
    moved: dict[str, Any] = json.loads(text)
    return moved


def _report(run_dir: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((run_dir / "report.json").read_text())
    return report


def _run_shards(*, checkouts: list[Path], shards_dir: Path, total: int) -> list[int]:
    """Every shard at once, each in its own checkout (its own absolute paths), as CI jobs run."""
    jobs = [
        _start(
            "run",
            "--cwd",
            str(checkout),
            "--shard",
            f"{index}/{total}",
            "--output-dir",
            str(shards_dir / f"shard-{index}"),
            "--flat-output",
        )
        for index, checkout in enumerate(checkouts, start=1)
    ]
    codes = []
    for job in jobs:
        _, stderr = job.communicate(timeout=240)
        assert job.returncode in (0, 1), stderr
        codes.append(job.returncode)
    return codes


@pytest.fixture(scope="module")
def scale_out(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One run on one machine, four shard runs in four other checkouts, and their merge."""
    base = tmp_path_factory.mktemp("scale-out")
    main = _project(base / "checkout-main")
    checkouts = []
    for index in range(1, SHARDS + 1):
        checkout = base / f"ci-job-{index}" / "repo"
        shutil.copytree(main, checkout)
        checkouts.append(checkout)
    one = _eb("run", "--cwd", str(main), "--output-dir", str(base / "one"), "--flat-output")
    assert one.returncode == 1, one.stderr
    _run_shards(checkouts=checkouts, shards_dir=base / "shards", total=SHARDS)
    summary = base / "step-summary.md"
    merged = _eb(
        "merge",
        *(str(base / "shards" / f"shard-{k}") for k in range(1, SHARDS + 1)),
        "--cwd",
        str(main),
        "--output-dir",
        str(base / "merged"),
        "--flat-output",
        "--junit-xml",
        str(base / "merged.junit.xml"),
        "--annotations",
        "github",
        GITHUB_STEP_SUMMARY=str(summary),
    )
    (base / "merge.stdout").write_text(merged.stdout)
    (base / "merge.rc").write_text(str(merged.returncode))
    return {"base": base, "main": main, "one": base / "one", "merged": base / "merged"}


def test_merged_report_equals_the_one_machine_report(scale_out: dict[str, Path]) -> None:
    one, merged = _report(scale_out["one"]), _report(scale_out["merged"])
    assert (scale_out["base"] / "merge.rc").read_text() == "1"  # the verdict: checks failed
    # The same keys, plus only the ones naming the shards.
    assert [key for key in merged if key not in one] == []
    assert [source["shard"] for source in merged["merged_from"]] == [1, 2, 3, 4]
    assert sum(source["checks"] for source in merged["merged_from"]) == 40
    for key in one:
        if key in VOLATILE_REPORT or key in ("checks", "merged_from"):
            continue
        assert merged[key] == one[key], key
    # Totals and verdict, spelled out (they are also among the keys above).
    for key in ("total_checks", "passed_checks", "failed_checks", "errored_checks"):
        assert merged[key] == one[key]
    assert (merged["points_earned"], merged["run_passed"]) == (one["points_earned"], False)
    assert one["total_checks"] == 40 and one["errored_checks"] == 1
    # The skipped check, once, as one machine lists it (under the merge's project root).
    assert merged["skipped"] == one["skipped"]
    assert [item["check_id"] for item in one["skipped"]] == ["waits_for_the_fix"]
    assert merged["skipped_checks"] == one["skipped_checks"] == 1
    # Every check, in the same order, every field but its times.
    assert [c["check_id"] for c in merged["checks"]] == [c["check_id"] for c in one["checks"]]
    checkouts = [str(scale_out["base"] / f"ci-job-{k}" / "repo") for k in range(1, SHARDS + 1)]
    for mine, theirs in zip(merged["checks"], one["checks"], strict=True):
        assert _same_paths(
            {k: v for k, v in mine.items() if k not in VOLATILE_CHECK},
            checkouts=checkouts,
            main=str(scale_out["main"]),
        ) == {k: v for k, v in theirs.items() if k not in VOLATILE_CHECK}, mine["check_id"]
    # The shards ran in other checkouts; the merged paths are the merge's project's.
    assert all(c["source_path"].startswith(str(scale_out["main"])) for c in merged["checks"])


def test_each_shard_ran_its_own_slice_and_recorded_the_whole_plan(
    scale_out: dict[str, Path],
) -> None:
    digests, ids = set(), []
    for index in range(1, SHARDS + 1):
        run_dir = scale_out["base"] / "shards" / f"shard-{index}"
        config = json.loads((run_dir / "stages" / "config.json").read_text())
        plan = json.loads((run_dir / "stages" / "plan.json").read_text())
        assert config["selection"]["shard"] == {"index": index, "total": SHARDS, **BY_HASH}
        assert plan["selection"]["shard"] == {"index": index, "total": SHARDS, **BY_HASH}
        assert plan["selected_checks"] == 40
        digests.add(plan["selection_digest"])
        ids += [check["id"] for check in plan["checks"]]
        assert _report(run_dir)["shard"] == {"index": index, "total": SHARDS, **BY_HASH}
    assert len(digests) == 1  # four checkouts at four paths, one plan
    assert sorted(ids) == sorted(c["check_id"] for c in _report(scale_out["one"])["checks"])


def test_merged_folder_is_a_complete_run(scale_out: dict[str, Path]) -> None:
    merged = scale_out["merged"]
    status = _eb("status", "--run-dir", str(merged))
    assert status.returncode == 0, status.stdout + status.stderr
    assert status.stdout.count(" ok") == 7
    for name in ("report.json", "report.md", "report.html"):
        assert (merged / name).is_file()
    junit = (scale_out["base"] / "merged.junit.xml").read_text()
    assert junit.count("<testcase ") == 41  # the skipped check is a skipped testcase
    assert 'message="waits for the upstream fix"' in junit
    summary = (scale_out["base"] / "step-summary.md").read_text()
    assert summary == (merged / "report.md").read_text()
    stdout = (scale_out["base"] / "merge.stdout").read_text()
    assert stdout.count("::error file=") == 7  # 4 failed, 1 timed out, 1 assertion, 1 judge
    assert "::error file=eval_checks/core/fail_0.yaml," in stdout
    # The skipped check on the console and in every report.
    assert "- waits_for_the_fix: skipped - waits for the upstream fix" in stdout
    assert "waits_for_the_fix" in (merged / "report.md").read_text()
    assert "waits_for_the_fix" in (merged / "report.html").read_text()
    score = json.loads((merged / "stages" / "score.json").read_text())
    assert (score["total_checks"], score["run_passed"]) == (40, False)
    assert score["skipped_checks"] == 1
    # What eb status compares each assertions check's artifact with came from its shard.
    executed = json.loads((merged / "stages" / "execute.json").read_text())
    alone = json.loads((scale_out["one"] / "stages" / "execute.json").read_text())
    assert executed["artifact_ids"] == alone["artifact_ids"]
    assert sorted(alone["artifact_ids"]) == ["plan_has_owner", "plan_has_title"]


def test_merged_stage_files_are_the_bytes_a_fresh_dump_writes(scale_out: dict[str, Path]) -> None:
    # The merge copies the shards' checks and results as text instead of dumping them again;
    # the files must come out exactly as if it had dumped them.
    from eval_banana.core.files import stage_json_bytes
    from eval_banana.stagefiles.read import read_stage

    merged = scale_out["merged"]
    for stage, name in (
        ("discover", "discover.json"),
        ("validate", "plan.json"),
        ("execute", "execute.json"),
    ):
        written = (merged / "stages" / name).read_bytes()
        assert written == stage_json_bytes(document=read_stage(run_dir=merged, stage=stage))


def test_evidence_and_snapshots_are_linked_from_the_shards(scale_out: dict[str, Path]) -> None:
    merged, shards = scale_out["merged"], scale_out["base"] / "shards"
    plan = json.loads((merged / "stages" / "plan.json").read_text())
    (referenced,) = [c for c in plan["checks"] if c["id"] == "referenced_script"]
    snapshot = merged / referenced["snapshot"]
    assert snapshot.read_text() == COUNT_SCRIPT
    (owner,) = [p for p in shards.iterdir() if (p / referenced["snapshot"]).is_file()]
    assert os.path.samefile(snapshot, owner / referenced["snapshot"])
    # The evidence the check left in a folder of its output folder, brought whole.
    evidence = Path("checks", referenced["stem"], "nested", "counted.txt")
    assert (merged / evidence).read_text() == "counted\n"
    assert os.path.samefile(merged / evidence, owner / evidence)
    stem = next(c["stem"] for c in plan["checks"] if c["id"] == "fail_0")
    # Its output folder was left empty: no evidence, no folder made.
    assert [p for p in shards.iterdir() if (p / "checks" / stem).is_dir()]
    assert not (merged / "checks" / stem).exists()
    stdout = merged / "checks" / f"{stem}.stdout.txt"
    assert stdout.read_text() == "expected 3, got 0\n"
    assert any(
        os.path.samefile(stdout, p / "checks" / stdout.name)
        for p in shards.iterdir()
        if (p / "checks" / stdout.name).is_file()
    )
    # checks/<stem>.json stays the shard's own copy (naming its checkout); execute.json and
    # report.json name the merge's project.
    copy = merged / "checks" / f"{stem}.json"
    (shard_copy,) = [
        p / "checks" / copy.name for p in shards.iterdir() if (p / "checks" / copy.name).is_file()
    ]
    assert os.path.samefile(copy, shard_copy)
    assert "/ci-job-" in json.loads(copy.read_text())["source_path"]
    executed = json.loads((merged / "stages" / "execute.json").read_text())["results"]
    assert all(r["source_path"].startswith(str(scale_out["main"])) for r in executed)


# `eb merge` with the fork thresholds lowered to this small project: the evidence files and
# folders are then linked, and report.html rendered, in forked children.
FORKING_MERGE = eb_script(
    setup="""\
    import eval_banana.scaleout.merge as merge
    import eval_banana.reporting as reporting
    merge.LINK_FORK_FILES = reporting.HTML_FORK_CHECKS = 1
    """
)


def _shard_folders(scale_out: dict[str, Path]) -> list[str]:
    return [str(scale_out["base"] / "shards" / f"shard-{k}") for k in range(1, SHARDS + 1)]


def _scripted_merge(
    *, script: str, shards: list[str], scale_out: dict[str, Path], merged: Path, events: Path
) -> subprocess.CompletedProcess[str]:
    """`eb merge` of `shards` into `merged`, run by one of the scripts above."""
    return run_script(
        script=script,
        args=["merge", *shards, "--cwd", str(scale_out["main"])]
        + ["--output-dir", str(merged), "--flat-output"],
        events=events,
        env=_environ(),
    )


def test_forked_links_and_page_make_the_same_folder(
    scale_out: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eval_banana.reporting.html import render_html

    # The page is compared with one rendered here from report.json alone: no run history marks.
    monkeypatch.setenv("EVAL_BANANA_HISTORY_MODE", "off")

    events = tmp_path / "events"
    shards = _shard_folders(scale_out)
    merged = tmp_path / "merged"
    done = _scripted_merge(
        script=FORKING_MERGE, shards=shards, scale_out=scale_out, merged=merged, events=events
    )
    assert done.returncode == 1, done.stderr  # the same verdict as the merge done in place
    assert events_of(events) == ["fork"] * 3  # the links, the folders, then report.html
    # Every shard's evidence is linked in, and the page was rendered once all of it was there
    # (it links only the files it finds in checks/).
    shard_files = sorted(
        p.name for k in shards for p in (Path(k) / "checks").iterdir() if p.is_file()
    )
    assert len(shard_files) > 40
    assert sorted(p.name for p in (merged / "checks").iterdir() if p.is_file()) == shard_files
    assert all(
        os.path.samefile(
            merged / "checks" / name,
            next(Path(k) / "checks" / name for k in shards if (Path(k) / "checks" / name).exists()),
        )
        for name in shard_files
    )
    # The one output folder holding evidence, brought by the folders' child.
    (nested,) = [p for k in shards for p in Path(k).glob("checks/*/nested/counted.txt")]
    assert os.path.samefile(merged / nested.relative_to(nested.parents[3]), nested)
    page = (merged / "report.html").read_text()
    assert page == render_html(report=_report(merged), run_dir=merged)
    assert [p.name for p in merged.iterdir() if p.name.endswith(".tmp")] == []


# The same, but each linking child is killed part-way (as the out-of-memory killer might):
# at its second shard folder, and at its second output folder.
KILLED_LINKS_MERGE = eb_script(
    setup="""\
    import signal
    import eval_banana.scaleout.merge as merge
    import eval_banana.scaleout.shardevidence as shardevidence
    import eval_banana.reporting as reporting
    merge.LINK_FORK_FILES = reporting.HTML_FORK_CHECKS = 1
    parent = os.getpid()

    def dies_at_second(real):
        calls = []

        def wrapped(**kwargs):
            if os.getpid() != parent:
                calls.append(1)
                if len(calls) == 2:
                    note("killed")
                    os.kill(os.getpid(), signal.SIGKILL)
            return real(**kwargs)

        return wrapped

    shardevidence._link_folder = dies_at_second(shardevidence._link_folder)
    shardevidence._link_tree = dies_at_second(shardevidence._link_tree)
    """
)


def test_linking_children_killed_part_way_leave_the_same_folder(
    scale_out: dict[str, Path], tmp_path: Path
) -> None:
    shards = _shard_folders(scale_out)
    folders = {}
    for name, script in (("forked", FORKING_MERGE), ("killed", KILLED_LINKS_MERGE)):
        events = tmp_path / f"{name}.events"
        merged = tmp_path / name
        done = _scripted_merge(
            script=script, shards=shards, scale_out=scale_out, merged=merged, events=events
        )
        assert done.returncode == 1, done.stderr  # the merge's verdict, not an error
        if name == "killed":
            assert events_of(events).count("killed") == 2, events_of(events)
        # What the children left part done was done again in place: every file, linked.
        folders[name] = sorted(
            (path.relative_to(merged).as_posix(), path.stat().st_ino)
            for path in (merged / "checks").rglob("*")
            if not path.is_dir()
        )
    assert folders["killed"] == folders["forked"]
    assert any("/nested/" in name for name, _ in folders["killed"])


# The links' child waits at its first shard folder, so a signal finds it busy. With
# EB_SLOW_STAGES set, eb itself is busy writing the stage files too when the signal comes: it
# notes "writing" and goes on once the test has sent the signal and made the file EB_GO names
# (a merge that ends on the signal there, as the start-up handler made it, never writes on).
SLOW_LINKS_MERGE = eb_script(
    setup="""\
    import time
    import eval_banana.scaleout.merge as merge
    import eval_banana.scaleout.mergedstages as mergedstages
    import eval_banana.scaleout.shardevidence as shardevidence
    import eval_banana.reporting as reporting
    merge.LINK_FORK_FILES = reporting.HTML_FORK_CHECKS = 1
    parent = os.getpid()
    real = shardevidence._link_folder
    real_stages = mergedstages.write_merged_stages

    def slow(**kwargs):
        if os.getpid() != parent:
            note("linking")
            time.sleep(60)
        return real(**kwargs)

    def slow_stages(**kwargs):
        if os.environ.get("EB_SLOW_STAGES"):
            note("writing")
            deadline = time.monotonic() + 60
            while not os.path.exists(os.environ["EB_GO"]) and time.monotonic() < deadline:
                time.sleep(0.02)
        return real_stages(**kwargs)

    shardevidence._link_folder = slow
    mergedstages.write_merged_stages = slow_stages
    """
)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("to", ["group", "eb"])
@pytest.mark.parametrize("eb_is", ["waiting", "writing"])
def test_a_signal_during_the_merge_stops_it_and_writes_its_reports_as_interrupted(
    scale_out: dict[str, Path], tmp_path: Path, to: str, eb_is: str, signum: signal.Signals
) -> None:
    """As `eb run` stops on a signal: the merge ends promptly (its linking child stopped, not
    waited for), and still writes its stage files, reports, JUnit file, step summary and
    --result-out, each whole and saying the run was interrupted (exit 3)."""
    shards = _shard_folders(scale_out)
    events, go = tmp_path / "events", tmp_path / "go"
    slow_stages = {"EB_SLOW_STAGES": "1"} if eb_is == "writing" else {}
    merged, summary = tmp_path / "merged", tmp_path / "summary.md"
    result, junit = tmp_path / "result.json", tmp_path / "junit.xml"
    process = subprocess.Popen(
        [sys.executable, "-c", SLOW_LINKS_MERGE, "merge", *shards, "--cwd", str(scale_out["main"])]
        + ["--output-dir", str(merged), "--flat-output", "--result-out", str(result)]
        + ["--result-format", "json", "--junit-xml", str(junit)],
        env={
            **_environ(GITHUB_STEP_SUMMARY=str(summary)),
            "EB_EVENTS": str(events),
            "EB_GO": str(go),
            **slow_stages,
        },
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a process group of its own, as a shell gives a command
        preexec_fn=default_sigint,  # Ctrl-C as in a terminal, whatever the suite was started with
    )
    busy = {"linking", "writing"} if slow_stages else {"linking"}
    deadline = time.monotonic() + 60
    while not busy <= set(events_of(events)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert busy <= set(events_of(events))
    if to == "group":  # Ctrl-C in a terminal, or a CI runner ending the job's process group
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    go.touch()  # sent: eb may go on writing its stage files
    try:
        _, stderr = process.communicate(timeout=30)
    finally:  # a merge that hangs must not outlive the test either
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
    # Interrupted, as `eb run` is (exit 3), not an error about its forked work, and promptly:
    # the links' child is stopped, not waited for.
    assert process.returncode == 3, stderr
    assert "Run aborted (interrupt" in stderr and "forked" not in stderr, stderr
    assert "Traceback" not in stderr
    assert _group_gone(pgid=process.pid, within_s=10)  # no child outlives the merge
    # The merged run is written whole, as an interrupted run: every shard's result stands.
    report = _report(merged)
    assert (report["aborted_by"], report["run_passed"]) == ("interrupt", False)
    assert len(report["checks"]) == 40
    assert (merged / "report.html").is_file()
    for stage in ("config", "discover", "plan", "guard", "execute", "score", "report"):
        json.loads((merged / "stages" / f"{stage}.json").read_text())
    assert [p for p in merged.rglob("*") if p.name.endswith(".tmp")] == []
    # The documents CI reads, written as `eb run` writes them for an interrupted run.
    document = json.loads(result.read_text())
    assert (document["status"], document["run_passed"]) == ("completed", False)
    assert "interrupt" in document["error"]
    assert len(document["checks"]) == 40
    assert "<testsuite" in junit.read_text()
    assert "interrupt" in summary.read_text().lower()


# `eb merge` whose report stage waits, the first time, for the file EB_GO names, having noted
# "reporting": every shard's evidence is in by then (a small merge links it in place).
SLOW_REPORTS_MERGE = eb_script(
    setup="""\
    import time
    import eval_banana.pipeline.finish as finish
    real = finish.publish_report

    def slow(**kwargs):
        note("reporting")
        deadline = time.monotonic() + 60
        while not os.path.exists(os.environ["EB_GO"]) and time.monotonic() < deadline:
            time.sleep(0.02)
        return real(**kwargs)

    finish.publish_report = slow
    """
)


def _interrupted_merge(
    *, script: str, busy: str, shards: list[str], cwd: Path, output: Path, tmp_path: Path
) -> Path:
    """`eb merge` of `shards` into a run folder under `output`, Ctrl-C'd once it noted `busy`
    (exit 3); the merged run folder."""
    events, go = tmp_path / "events", tmp_path / "go"
    process = subprocess.Popen(
        [sys.executable, "-c", script, "merge", *shards, "--cwd", str(cwd)]
        + ["--output-dir", str(output)],
        env={**_environ(), "EB_EVENTS": str(events), "EB_GO": str(go)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 60
    while busy not in events_of(events) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert busy in events_of(events)
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C in a terminal
    go.touch()
    try:
        _, stderr = process.communicate(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
    assert process.returncode == 3, stderr
    assert "Traceback" not in stderr
    (run_dir,) = output.iterdir()
    return run_dir


def _evidence(run_dir: Path) -> list[str]:
    """What checks/ holds besides the result files: the checks' output files and folders."""
    return sorted(p.name for p in (run_dir / "checks").iterdir() if not p.name.endswith(".json"))


def _output_files(run_dir: Path) -> list[str]:
    return [name for name in _evidence(run_dir) if (run_dir / "checks" / name).is_file()]


def test_a_merge_interrupted_before_its_evidence_came_in_is_merged_again_not_updated(
    scale_out: dict[str, Path], tmp_path: Path
) -> None:
    """A merge interrupted while it linked the shards' evidence left checks/ without it:
    `eb status` called execute stale (result files missing) and named `eb update`, which
    wrote the result files from execute.json, dropped the abort and called every stage ok,
    exit 0, the checks' output files still missing. execute.json now records the merge as
    interrupted: `eb status` names the merge to run again and `eb update` refuses (exit 2)."""
    shards = _shard_folders(scale_out)
    output = tmp_path / "merged"
    run_dir = _interrupted_merge(
        script=SLOW_LINKS_MERGE,
        busy="linking",
        shards=shards,
        cwd=scale_out["main"],
        output=output,
        tmp_path=tmp_path,
    )
    assert _output_files(run_dir) == []  # the links' child was stopped at its first folder
    assert _output_files(scale_out["merged"]) != []
    written = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    status = _eb("status", "--run-dir", str(run_dir))
    assert status.returncode == 1, status.stdout + status.stderr
    (row,) = [line for line in status.stdout.splitlines() if line.startswith("execute")]
    assert row.endswith(
        "stale  (the eb merge that wrote this folder was interrupted before it brought in "
        "every shard's files: merge the same shards again)"
    )
    merge_again = f"eb merge {' '.join(shards)} --output-dir {output}"
    assert status.stdout.splitlines()[-1].endswith(f"Merge the same shards again: {merge_again}")
    assert "eb update" not in status.stdout.replace("eb update cannot complete it", "")
    refused = _eb("update", "--run-dir", str(run_dir))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr
    assert f"Cannot update {run_dir}: the eb merge that wrote it was interrupted" in refused.stderr
    assert f"hint: Merge the same shards again: {merge_again}" in refused.stderr
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == written
    executed = json.loads((run_dir / "stages" / "execute.json").read_text())
    assert (executed["aborted_by"], executed["merge_interrupted"]) == ("interrupt", True)
    # One check run again here brings none of the other checks' files in.
    rerun = _eb("stage", "execute", "--run-dir", str(run_dir), "--check-id", "pass_00")
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "was interrupted" in _eb("status", "--run-dir", str(run_dir)).stdout
    assert _eb("update", "--run-dir", str(run_dir)).returncode == 2
    # The merge it names makes a complete folder beside it.
    again = _eb(*merge_again.split()[1:], "--cwd", str(scale_out["main"]))
    assert again.returncode == 1, again.stderr  # the verdict: checks failed
    (complete,) = [folder for folder in output.iterdir() if folder != run_dir]
    assert _evidence(complete) == _evidence(scale_out["merged"])
    status = _eb("status", "--run-dir", str(complete))
    assert status.returncode == 0, status.stdout + status.stderr


def test_a_merge_interrupted_once_its_evidence_came_in_is_updated_without_the_abort(
    scale_out: dict[str, Path], tmp_path: Path
) -> None:
    """Interrupted while it wrote its reports, the merge had brought in every shard's files:
    the run is recorded as aborted though every check has its result, and `eb update` records
    it again without the abort, as it does for `eb run`."""
    output = tmp_path / "merged"
    run_dir = _interrupted_merge(
        script=SLOW_REPORTS_MERGE,
        busy="reporting",
        shards=_shard_folders(scale_out),
        cwd=scale_out["main"],
        output=output,
        tmp_path=tmp_path,
    )
    executed = json.loads((run_dir / "stages" / "execute.json").read_text())
    assert executed["aborted_by"] == "interrupt"
    assert not executed.get("merge_interrupted", False)
    assert _evidence(run_dir) == _evidence(scale_out["merged"])
    status = _eb("status", "--run-dir", str(run_dir))
    assert "though every check has its result" in status.stdout, status.stdout
    updated = _eb("update", "--run-dir", str(run_dir))
    assert updated.returncode == 1, updated.stdout + updated.stderr  # the verdict, no abort
    assert _report(run_dir)["aborted_by"] is None
    assert _eb("status", "--run-dir", str(run_dir)).returncode == 0


# `eb merge` whose output folders' child (forked, as for thousands of checks) stays at its
# first folder, and which notes "awaiting folders" once it waits for that child: the files'
# links are in by then.
SLOW_FOLDERS_MERGE = eb_script(
    setup="""\
    import time
    import eval_banana.scaleout.merge as merge
    import eval_banana.scaleout.shardevidence as shardevidence
    merge.LINK_FORK_FILES = 1
    parent = os.getpid()
    real_tree, real_bring = shardevidence._link_tree, merge._bring

    def slow_tree(**kwargs):
        if os.getpid() != parent:
            time.sleep(60)
        return real_tree(**kwargs)

    def noted_bring(pending, *, redo, stop):
        if redo.__name__ == "bring_folders":
            note("awaiting-folders")
        return real_bring(pending, redo=redo, stop=stop)

    shardevidence._link_tree = slow_tree
    merge._bring = noted_bring
    """
)


def test_a_merge_interrupted_while_it_brought_the_output_folders_is_recorded_as_interrupted(
    scale_out: dict[str, Path], tmp_path: Path
) -> None:
    """The output folders were brought after the reports: a Ctrl-C then dropped them, the
    merge exited 3 and nothing said so (`eb status` all ok, `eb update` nothing to do). They
    are brought before the reports now, and a signal meanwhile records the merge as
    interrupted: `eb status` names the merge to run again, `eb update` refuses the folder."""
    shards = _shard_folders(scale_out)
    output = tmp_path / "merged"
    run_dir = _interrupted_merge(
        script=SLOW_FOLDERS_MERGE,
        busy="awaiting-folders",
        shards=shards,
        cwd=scale_out["main"],
        output=output,
        tmp_path=tmp_path,
    )
    # The files are in; the check's output folder (nested/counted.txt) stayed out.
    assert _output_files(run_dir) == _output_files(scale_out["merged"])
    assert _evidence(run_dir) != _evidence(scale_out["merged"])
    executed = json.loads((run_dir / "stages" / "execute.json").read_text())
    assert (executed["aborted_by"], executed["merge_interrupted"]) == ("interrupt", True)
    assert _report(run_dir)["aborted_by"] == "interrupt"
    status = _eb("status", "--run-dir", str(run_dir))
    assert status.returncode == 1, status.stdout + status.stderr
    assert "was interrupted before it brought in every shard's files" in status.stdout
    merge_again = f"eb merge {' '.join(shards)} --output-dir {output}"
    assert status.stdout.splitlines()[-1].endswith(f"Merge the same shards again: {merge_again}")
    refused = _eb("update", "--run-dir", str(run_dir))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    again = _eb(*merge_again.split()[1:], "--cwd", str(scale_out["main"]))
    assert again.returncode == 1, again.stderr  # the verdict: checks failed
    (complete,) = [folder for folder in output.iterdir() if folder != run_dir]
    assert _evidence(complete) == _evidence(scale_out["merged"])


# eb merge on a file system without hard links (every evidence file copied), that stops for good
# (until it is killed) as it is about to rename its copy of a check's output file into place.
_COPIES_AND_STOPS_BEFORE_RENAMING = """\
import errno, time
def link(*args, **kwargs):
    raise OSError(errno.EXDEV, "Invalid cross-device link")
os.link = link
real_replace = os.replace
def replace(source, target, *args, **kwargs):
    if os.path.basename(target) == "counted.txt":
        note("renaming " + str(source))
        time.sleep(120)
    return real_replace(source, target, *args, **kwargs)
os.replace = replace
"""


def test_the_copies_a_killed_merge_left_are_removed_by_the_next_eb_update(
    scale_out: dict[str, Path], tmp_path: Path
) -> None:
    """A merge copying the shards' evidence, killed (`kill -9`) before it renamed a copy into
    place, left `.<name>.<pid>.tmp` files, a form the cleanup of a killed writer's temporary
    files never knew, beside the copy (in a check's own folder, never cleaned): `eb update`
    left them there. The copies' temporary files are named as every atomic write's now, and
    those for a check's own folder go in checks/, which `eb update` cleans."""
    output = tmp_path / "merged"
    events = tmp_path / "events"
    killed = subprocess.Popen(
        [sys.executable, "-c", eb_script(setup=_COPIES_AND_STOPS_BEFORE_RENAMING)]
        + ["merge", *_shard_folders(scale_out), "--cwd", str(scale_out["main"])]
        + ["--output-dir", str(output)],
        env={**_environ(), "EB_EVENTS": str(events)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not events_of(events) and time.monotonic() < deadline:
            assert killed.poll() is None, "eb merge ended before it renamed its copy"
            time.sleep(0.01)
    finally:
        killed.kill()
        killed.wait(timeout=60)
    assert "fork" not in events_of(events)  # the copies were made by the merge itself
    (run_dir,) = output.iterdir()
    (left,) = (p for p in run_dir.rglob("*.tmp") if p.is_file())
    assert left.parent == run_dir / "checks", left
    assert left.name.startswith(f".counted.txt.{killed.pid}."), left.name
    assert TEMP_SIBLING_NAME.fullmatch(left.name), left.name
    # A frozen script's copy a killed merge (or run) left in stages/snapshots/ goes too.
    snapshot = next((run_dir / "stages" / "snapshots").iterdir())
    also_left = snapshot.parent / f".{snapshot.name}.{killed.pid}.0.tmp"
    also_left.write_text("print(")
    updated = _eb("update", "--run-dir", str(run_dir))
    assert "Traceback" not in updated.stderr, updated.stderr
    assert not left.exists() and not also_left.exists()
    assert [p for p in run_dir.rglob("*.tmp")] == []


def _group_gone(*, pgid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_shard_output_folder_comes_whole_and_an_empty_one_not_at_all(tmp_path: Path) -> None:
    from eval_banana.scaleout.shardevidence import _link_tree

    source = tmp_path / "shard" / "checks" / "stem"
    (source / "deep" / "er").mkdir(parents=True)
    (source / "deep" / "er" / "log.txt").write_text("log\n")
    (source / "shot.png").write_bytes(b"\x89PNG")
    (source / "latest").symlink_to("deep/er/log.txt")
    (source / "nothing").mkdir()
    target = tmp_path / "merged" / "checks"
    target.mkdir(parents=True)
    _link_tree(source=str(source), target=str(target / "stem"), temp_folder=str(target))
    assert os.path.samefile(target / "stem/deep/er/log.txt", source / "deep/er/log.txt")
    assert os.path.samefile(target / "stem/shot.png", source / "shot.png")
    assert os.readlink(target / "stem/latest") == "deep/er/log.txt"  # a link stays a link
    assert not (target / "stem/nothing").exists()
    (tmp_path / "empty").mkdir()
    _link_tree(
        source=str(tmp_path / "empty"), target=str(target / "empty"), temp_folder=str(target)
    )
    assert not (target / "empty").exists()


def test_a_stop_in_any_shard_stops_the_merged_run(tmp_path: Path) -> None:
    """A fuse tripped in shard 3 of 4 aborts the merged run (exit 3), and maxfail reached in
    shard 2 halts it: the merge reports every shard's stop, not only the first shard's."""
    from eval_banana.checks.shard import shard_of

    ids = [f"check_{index:02d}" for index in range(12)]
    in_shard = {k: [i for i in ids if shard_of(check_id=i, total=SHARDS) == k] for k in (2, 3)}
    failing, sleeping = in_shard[2][0], in_shard[3][0]
    root = tmp_path / "project"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text('[core]\noutput_dir = "runs"\n')
    for check_id in ids:
        script = {failing: "raise SystemExit(1)", sleeping: "import time\ntime.sleep(30)"}
        (root / "eval_checks").mkdir(exist_ok=True)
        (root / "eval_checks" / f"{check_id}.yaml").write_text(
            check_yaml(check_id, script=script.get(check_id, "pass"))
        )
    # -x in every shard (the shards must share it: report.json states it), which only shard 2
    # reaches; and each shard's own budget, a one-second run timer in shard 3.
    budgets = {
        2: ("--max-parallel-checks", "1"),
        3: ("--run-timeout-seconds", "1"),
    }
    expected = {1: 0, 2: 1, 3: 3, 4: 0}
    run_dirs = []
    for k in range(1, SHARDS + 1):
        run_dir = tmp_path / "shards" / f"shard-{k}"
        done = _eb(
            "run", "--cwd", str(root), "--shard", f"{k}/{SHARDS}",
            "--output-dir", str(run_dir), "--flat-output", "--maxfail", "1",
            *budgets.get(k, ()),
        )  # fmt: skip
        assert done.returncode == expected[k], done.stderr
        run_dirs.append(str(run_dir))
    merged = _eb("merge", *run_dirs, "--cwd", str(root), "--output-dir", str(tmp_path / "m"))
    assert merged.returncode == 3, merged.stdout + merged.stderr
    assert "Run aborted (run_timeout" in merged.stderr
    (run_dir,) = (tmp_path / "m").iterdir()
    report = _report(run_dir)
    assert (report["aborted_by"], report["run_passed"]) == ("run_timeout", False)
    assert (report["halted_by"], report["maxfail"]) == ("maxfail", 1)
    score = json.loads((run_dir / "stages" / "score.json").read_text())
    assert score["status"] == "aborted"
    not_run = {c["check_id"] for c in report["checks"] if c["details"].get("not_run") is True}
    assert set(in_shard[2][1:]) <= not_run  # left unstarted by -x in shard 2
    executed = json.loads((run_dir / "stages" / "execute.json").read_text())
    assert executed["aborted_by"] == "run_timeout" and executed["halted_by"] == "maxfail"


def test_a_shard_updated_later_adds_its_own_time_not_the_wait_before_its_update(
    tmp_path: Path,
) -> None:
    """Shard 1 stopped at its run timeout, was brought up to date by `eb update` later: the
    merged run's duration runs from the earliest start to the latest shard's start plus its
    own duration (its run and its update), not over the wait between them."""
    from datetime import datetime, timedelta

    from eval_banana.checks.shard import shard_of

    ids = [f"check_{index}" for index in range(6)]
    slow = next(check_id for check_id in ids if shard_of(check_id=check_id, total=2) == 1)
    root = tmp_path / "project"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text('[core]\noutput_dir = "runs"\n')
    (root / "eval_checks").mkdir()
    waiting = tmp_path / "waiting"  # outside the project: while it is there, `slow` sleeps
    waiting.touch()
    sleeps = f"import os, time\nif os.path.exists({str(waiting)!r}):\n    time.sleep(30)"
    for check_id in ids:
        script = sleeps if check_id == slow else "pass"
        (root / "eval_checks" / f"{check_id}.yaml").write_text(check_yaml(check_id, script=script))
    run_dirs = [tmp_path / "shards" / f"shard-{k}" for k in (1, 2)]
    for k, run_dir in enumerate(run_dirs, start=1):
        budget = ("--run-timeout-seconds", "1") if k == 1 else ()
        done = _eb(
            "run", "--cwd", str(root), "--shard", f"{k}/2",
            "--output-dir", str(run_dir), "--flat-output", *budget,
        )  # fmt: skip
        assert done.returncode == (3 if k == 1 else 0), done.stderr
    waiting.unlink()
    time.sleep(1.5)  # the wait before the update: no check runs in it
    updated = _eb("update", "--cwd", str(root), "--run-dir", str(run_dirs[0]))
    assert updated.returncode == 0, updated.stdout + updated.stderr
    merged = _eb(
        "merge", *map(str, run_dirs), "--cwd", str(root), "--output-dir", str(tmp_path / "m")
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    (run_dir,) = (tmp_path / "m").iterdir()
    report = _report(run_dir)
    shards = [_report(shard) for shard in run_dirs]
    starts = [datetime.fromisoformat(shard["started_at"]) for shard in shards]
    ends = [
        start + timedelta(milliseconds=shard["duration_ms"])
        for start, shard in zip(starts, shards, strict=True)
    ]
    wall = (max(ends) - min(starts)) / timedelta(milliseconds=1)
    assert abs(report["duration_ms"] - wall) <= 1, (report["duration_ms"], wall)
    assert report["started_at"] == min(shard["started_at"] for shard in shards)
    assert report["completed_at"] == shards[0]["completed_at"]  # the update's checks ended last
    assert shards[0]["updated_at"] is not None and report["updated_at"] == shards[0]["updated_at"]


def _dataset_families(root: Path, *, names: list[str]) -> None:
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text("[core]\npass_threshold = 0.0\n")
    (root / "data").mkdir()
    (root / "eval_checks").mkdir()
    for name in names:
        (root / "data" / f"{name}.jsonl").write_text('{"id": "a"}\n{"id": "b"}\n')
        (root / "eval_checks" / f"{name}.yaml").write_text(
            f"schema_version: 1\nid: {name}\ntype: deterministic\ndescription: row\n"
            f"cases_from: data/{name}.jsonl\nscript: pass\n"
        )


def test_a_merged_plan_knows_every_shards_families_so_status_sees_a_row_added_to_any(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    # The merged plan.json took its family maps (sizes, case ids, file rows, gates,
    # calibration) from the first shard alone, which holds only the families it planned: a
    # row added to another shard's family was no change to `eb status` of the merged run.
    names = ["f1", "f2", "f3", "f4"]
    project = tmp_path / "project"
    _dataset_families(project, names=names)
    shards = []
    for index in (1, 2):
        out = tmp_path / f"shard{index}"
        ran = eb("run", "--cwd", str(project), "--shard", f"{index}/2", "--output-dir", str(out))
        assert ran.exit_code == 0, ran.stderr
        shards.extend(out.iterdir())
    merged_out = tmp_path / "merged"
    merged = eb("merge", *map(str, shards), "--cwd", str(project), "--output-dir", str(merged_out))
    assert merged.exit_code == 0, merged.stderr
    (run_dir,) = merged_out.iterdir()
    plan = json.loads((run_dir / "stages" / "plan.json").read_text())
    assert plan["family_sizes"] == dict.fromkeys(names, 2)
    assert sorted(plan["family_case_ids"]) == names
    for name in names:
        with (project / "data" / f"{name}.jsonl").open("a") as rows:
            rows.write('{"id": "c"}\n')
    status = eb("status", "--cwd", str(project), "--run-dir", str(run_dir))
    validate_line = next(line for line in status.stdout.splitlines() if "plan.json" in line)
    # Three rows are named and the fourth counted: every family's added row is seen.
    named = [name for name in names if f"{name}[c]: row added" in validate_line]
    assert "stale" in validate_line and len(named) == 3, validate_line
    assert validate_line.endswith("and 1 more)"), validate_line
