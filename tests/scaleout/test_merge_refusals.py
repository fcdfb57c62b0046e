"""Every set of folders `eb merge` must refuse: a setup error (exit 2) that names the folder and
the problem, and no merged folder written."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.core.files import sha256_bytes, stage_json_bytes
from tests.conftest import EbResult, check_yaml
from tests.memlimit import limit_address_space

IDS = [f"check_{index}" for index in range(9)]


def _write_project(root: Path, *, edited: str | None = None) -> Path:
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text('[core]\noutput_dir = "runs"\n')
    for check_id in IDS:
        script = "print('edited')" if check_id == edited else "pass"
        path = root / "eval_checks" / f"{check_id}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(check_yaml(check_id, script=script))
    return root


@pytest.fixture
def shards(tmp_path: Path, eb: Callable[..., EbResult]) -> Callable[..., Path]:
    """`make(name, shard, *flags, project=...)`: a shard run folder under tmp_path/shards/."""
    main = _write_project(tmp_path / "main")

    def make(name: str, shard: str, *flags: str, project: Path | None = None) -> Path:
        run_dir = tmp_path / "shards" / name
        result = eb(
            "run",
            "--cwd",
            str(project or main),
            "--shard",
            shard,
            "--output-dir",
            str(run_dir),
            "--flat-output",
            *flags,
        )
        assert result.exit_code == 0, result.stderr
        return run_dir

    return make


def _merge(eb: Callable[..., EbResult], tmp_path: Path, *run_dirs: Path) -> EbResult:
    out = tmp_path / "merged"
    result = eb("merge", *map(str, run_dirs), "--output-dir", str(out), "--flat-output")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert not out.exists()  # refused before anything was written
    assert result.stderr.startswith("Cannot merge: ")
    return result


def _rewrite(run_dir: Path, stage_file: str, change: Callable[[dict[str, Any]], None]) -> str:
    """Edit a stage file as a hand (or another tool) would; return its new digest."""
    path = run_dir / "stages" / stage_file
    document = json.loads(path.read_text())
    change(document)
    data = stage_json_bytes(document=document)
    path.write_bytes(data)
    return sha256_bytes(data=data)


def _chain_down(run_dir: Path, execute_digest: str) -> None:
    """Record a rewritten execute.json in score.json and that in report.json, as a run does."""
    score_digest = _rewrite(
        run_dir, "score.json", lambda doc: doc["inputs"].update(execute=execute_digest)
    )
    _rewrite(
        run_dir,
        "report.json",
        lambda doc: doc["inputs"].update(execute=execute_digest, score=score_digest),
    )


def test_all_shards_once_merges(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    run_dirs = [shards(f"s{k}", f"{k}/3") for k in (1, 2, 3)]
    result = eb("merge", *map(str, run_dirs), "--output-dir", str(tmp_path / "m"), "--flat-output")
    assert result.exit_code == 0, result.stderr
    assert json.loads((tmp_path / "m" / "report.json").read_text())["total_checks"] == len(IDS)
    # Merged again into a folder of runs with --keep-runs 1: the new merge is the one left.
    merged = tmp_path / "merges"
    for _ in range(2):
        again = eb("merge", *map(str, run_dirs), "--output-dir", str(merged), "--keep-runs", "1")
        assert again.exit_code == 0, again.stderr
    (left,) = list(merged.iterdir())
    assert json.loads((left / "report.json").read_text())["total_checks"] == len(IDS)


def test_missing_shard(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    result = _merge(eb, tmp_path, shards("s1", "1/3"), shards("s2", "2/3"))
    assert "missing shard 3 of 3 (got 1, 2)" in result.stderr


def test_shard_of_another_plan(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    other = _write_project(tmp_path / "other", edited="check_4")
    odd = shards("s2-other", "2/3", project=other)
    result = _merge(eb, tmp_path, shards("s1", "1/3"), odd, shards("s3", "3/3"))
    assert f"{odd} (shard 2/3) is a shard of another plan" in result.stderr


def test_duplicate_shard(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    first = shards("s1", "1/3")
    again = shards("s1-again", "1/3")
    result = _merge(eb, tmp_path, first, again, shards("s2", "2/3"), shards("s3", "3/3"))
    assert f"shard 1 of 3 is given twice: {first} and {again}" in result.stderr


def test_check_in_two_shards(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    s1, s2, s3 = (shards(f"s{k}", f"{k}/3") for k in (1, 2, 3))
    planned = json.loads((s1 / "stages" / "plan.json").read_text())["checks"][0]
    result_doc = json.loads((s1 / "stages" / "execute.json").read_text())["results"][0]
    # Shard 2's files claim shard 1's first check too, chained as a real run would chain them.
    plan_digest = _rewrite(s2, "plan.json", lambda doc: doc["checks"].insert(0, planned))
    guard_digest = _rewrite(
        s2, "guard.json", lambda doc: doc["inputs"].update(validate=plan_digest)
    )

    def add_result(doc: dict[str, Any]) -> None:
        doc["results"].insert(0, result_doc)
        doc["inputs"].update(validate=plan_digest, guard=guard_digest)

    _chain_down(s2, _rewrite(s2, "execute.json", add_result))
    result = _merge(eb, tmp_path, s1, s2, s3)
    assert f"check '{planned['id']}' is in two shards: {s1} (shard 1/3) and {s2}" in result.stderr


def test_parts_that_ran_no_part_of_a_check_name_it_and_blame_the_plan(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    """Parts of a plan that put a check in no part 1..N (as an eb that took such a plan left
    them: the check in the plan's ids, in no part's plan.json): the merge names the check and
    blames the plan, not a changed folder."""
    plan = tmp_path / "plan.json"
    done = eb("plan", "--cwd", str(tmp_path / "main"), "--shards", "3", "--format", "json")
    assert done.exit_code == 0, done.stderr
    plan.write_text(done.stdout)
    s1, s2, s3 = (shards(f"p{k}", f"{k}/3", "--select", str(plan)) for k in (1, 2, 3))
    dropped = json.loads((s2 / "stages" / "plan.json").read_text())["checks"][0]["id"]

    def drop_planned(doc: dict[str, Any]) -> None:
        doc["checks"] = [check for check in doc["checks"] if check["id"] != dropped]
        select = doc["selection"]["select"]
        select["ids"] = [check_id for check_id in select["ids"] if check_id != dropped]

    plan_digest = _rewrite(s2, "plan.json", drop_planned)
    guard_digest = _rewrite(
        s2, "guard.json", lambda doc: doc["inputs"].update(validate=plan_digest)
    )

    def drop_result(doc: dict[str, Any]) -> None:
        doc["results"] = [result for result in doc["results"] if result["check_id"] != dropped]
        doc["inputs"].update(validate=plan_digest, guard=guard_digest)

    _chain_down(s2, _rewrite(s2, "execute.json", drop_result))
    result = _merge(eb, tmp_path, s1, s2, s3)
    assert f"'{dropped}' ran in no part (the plan gave it no shard of 1..3)" in result.stderr
    assert "changed after its run" not in result.stderr
    assert "eb plan --shards N" in result.stderr


def test_not_a_run_folder(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    empty = tmp_path / "downloads" / "nothing-here"
    empty.mkdir(parents=True)
    result = _merge(eb, tmp_path, shards("s1", "1/2"), empty)
    assert f"{empty} is not a run folder (it has no stages/config.json)" in result.stderr


def test_not_a_shard(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    whole = tmp_path / "whole"
    assert (
        eb(
            "run", "--cwd", str(tmp_path / "main"), "--output-dir", str(whole), "--flat-output"
        ).exit_code
        == 0
    )
    result = _merge(eb, tmp_path, shards("s1", "1/2"), whole)
    assert f"{whole} is not a shard: its run had no --shard" in result.stderr


def test_different_n(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    half = shards("half", "1/2")
    result = _merge(eb, tmp_path, shards("s1", "1/3"), half, shards("s3", "3/3"))
    assert f"{half} (shard 1/2) and" in result.stderr
    assert "different numbers of shards" in result.stderr


def test_different_threshold(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    lenient = shards("s3", "3/3", "--pass-threshold", "0.5")
    result = _merge(eb, tmp_path, shards("s1", "1/3"), shards("s2", "2/3"), lenient)
    assert f"{lenient} (shard 3/3) ran with core.pass_threshold = 0.5" in result.stderr
    assert "with 1.0" in result.stderr


def _gated_family(project: Path, *, rate: float) -> None:
    """A family of five cases, four of which pass, gated at `rate` (the run threshold is 0)."""
    (project / ".eval-banana").mkdir(parents=True, exist_ok=True)
    (project / ".eval-banana" / "config.toml").write_text("[core]\npass_threshold = 0.0\n")
    (project / "eval_checks").mkdir(exist_ok=True)
    (project / "eval_checks" / "fam.yaml").write_text(
        "schema_version: 1\nid: fam\ntype: deterministic\ndescription: Rows.\n"
        f"min_pass_rate: {rate}\n"
        "cases: [{id: a, ok: 1}, {id: b, ok: 1}, {id: c, ok: 1}, {id: d, ok: 1}, {id: e, ok: 0}]\n"
        "script: |\n  import json, sys\n"
        '  sys.exit(0 if json.load(open(sys.argv[1]))["case"]["ok"] else "bad")\n'
    )


def test_shards_that_gate_a_family_at_different_rates_are_refused(
    eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    """min_pass_rate is left out of the cases' digests (editing it re-runs no case): shards run
    on either side of an edit share a selection digest, and the merge took one shard's gate."""
    project = tmp_path / "project"

    def shard(name: str, which: str, *, rate: float) -> Path:
        _gated_family(project, rate=rate)
        run_dir = tmp_path / "shards" / name
        flags = ("--shard", which, "--output-dir", str(run_dir), "--flat-output")
        result = eb("run", "--cwd", str(project), *flags)
        assert result.exit_code == 0, result.stderr
        return run_dir

    strict, lenient = shard("s1", "1/2", rate=0.9), shard("s2", "2/2", rate=0.5)
    stated = {strict: f"{strict} (shard 1/2)", lenient: f"{lenient} (shard 2/2)"}
    rates = {strict: "0.9", lenient: "0.5"}
    for first, other in ((strict, lenient), (lenient, strict)):
        result = _merge(eb, tmp_path, first, other)
        assert (
            f"{stated[other]} gates family 'fam' at min_pass_rate {rates[other]}, "
            f"{stated[first]} at min_pass_rate {rates[first]}"
        ) in result.stderr
        assert "rerun every shard from one commit" in result.stderr
    # Shards of one gate merge, and the merged run is judged by it: 4 of 5 is below 0.9.
    again = shard("s2-again", "2/2", rate=0.9)
    out = tmp_path / "merged"
    merged = eb("merge", str(strict), str(again), "--output-dir", str(out), "--flat-output")
    assert merged.exit_code == 1, merged.stdout + merged.stderr
    assert "min_pass_rate 0.9 NOT held" in merged.stdout


def test_unreadable_stage_file(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    broken = shards("s2", "2/2")
    execute = broken / "stages" / "execute.json"
    execute.write_bytes(execute.read_bytes()[:50])  # a download cut short
    result = _merge(eb, tmp_path, shards("s1", "1/2"), broken)
    assert f"{broken}: Stage file {execute} is not valid JSON" in result.stderr


def test_stage_file_changed_after_the_run(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    edited = shards("s1", "1/2")
    _rewrite(edited, "plan.json", lambda doc: doc["warnings"].append({"message": "edited"}))
    result = _merge(eb, tmp_path, edited, shards("s2", "2/2"))
    assert f"{edited}: stages/plan.json changed after the checks ran" in result.stderr


def test_merge_refusals_are_json_errors_with_json(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    result = eb("merge", str(shards("s1", "1/3")), "--json")
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["kind"] == "merge_error" and "missing shard 2, 3 of 3" in error["message"]


def test_a_folder_holding_no_shard_check_is_still_needed(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    """With more shards than a project fills, empty shards pass and must still be merged."""
    run_dirs = [shards(f"s{k}", f"{k}/12") for k in range(1, 13)]
    empty = [
        d for d in run_dirs if json.loads((d / "report.json").read_text())["total_checks"] == 0
    ]
    assert empty  # 9 checks over 12 shards
    result = _merge(eb, tmp_path, *[d for d in run_dirs if d != empty[0]])
    assert "missing shard" in result.stderr
    merged = eb(
        "merge", *map(str, run_dirs), "--output-dir", str(tmp_path / "all"), "--flat-output"
    )
    assert merged.exit_code == 0, merged.stderr
    shutil.rmtree(tmp_path / "all")


@pytest.mark.parametrize("where", ["notes.txt", "evidence/notes.txt"])
def test_a_file_in_the_checks_folder_of_two_shards(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path, where: str
) -> None:
    s1, s2, s3 = (shards(f"s{k}", f"{k}/3") for k in (1, 2, 3))
    # Merged files are links to the shards' own: one copied over another would change a shard.
    for shard in (s1, s3):
        (shard / "checks" / where).parent.mkdir(exist_ok=True)
        (shard / "checks" / where).write_text(f"{shard.name}'s\n")
    result = _merge(eb, tmp_path, s1, s2, s3)
    name = where.split("/")[0]
    assert (
        f"checks/{name} is in two shard folders ({s1 / 'checks'} and {s3 / 'checks'})"
        in result.stderr
    )
    assert (s1 / "checks" / where).read_text() == "s1's\n"


def test_an_execute_file_edited_after_its_score_stage_is_checked_in_full(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    # The merge trusts a shard's execute.json only while it has the digest its score stage
    # recorded; after an edit it is checked against the schema like any stage file.
    edited = shards("s1", "1/2")
    _rewrite(edited, "execute.json", lambda doc: doc["results"][0].update(status="maybe"))
    result = _merge(eb, tmp_path, edited, shards("s2", "2/2"))
    execute = edited / "stages" / "execute.json"
    assert f"{edited}: Stage file {execute}" in result.stderr
    assert "status" in result.stderr


def _passed(result: dict[str, Any]) -> None:
    """A failed result, edited into a pass as a careful hand would (schema-valid, consistent)."""
    result.update(status="passed", observed_status="passed", score=1, reason="fine", exit_code=0)


def test_a_failing_execute_file_edited_into_a_pass_after_its_score_stage_is_refused(
    eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    main = _write_project(tmp_path / "main")
    failing = main / "eval_checks" / "check_0.yaml"
    failing.write_text(check_yaml("check_0", script="raise SystemExit(1)"))
    run_dirs = []
    for k in (1, 2):
        run_dir = tmp_path / "shards" / f"s{k}"
        args = ("--shard", f"{k}/2", "--output-dir", str(run_dir), "--flat-output")
        eb("run", "--cwd", str(main), *args)
        run_dirs.append(run_dir)
    (edited,) = [
        d for d in run_dirs if json.loads((d / "report.json").read_text())["run_passed"] is False
    ]

    def into_a_pass(doc: dict[str, Any]) -> None:
        (failed,) = [r for r in doc["results"] if r["check_id"] == "check_0"]
        _passed(failed)

    _rewrite(edited, "execute.json", into_a_pass)
    result = _merge(eb, tmp_path, *run_dirs)
    assert (
        f"{edited}: stages/execute.json changed after the run was scored "
        "(stages/score.json was made from another version of it)" in result.stderr
    )


@pytest.mark.parametrize(
    ("stage_file", "when", "made"),
    [
        ("config.json", "the checks ran", "execute.json"),
        ("discover.json", "the checks were planned", "plan.json"),
        ("plan.json", "the checks ran", "execute.json"),
        ("guard.json", "the checks ran", "execute.json"),
        ("execute.json", "the run was scored", "score.json"),
        ("score.json", "the run was reported", "report.json"),
    ],
)
def test_every_stage_file_must_have_the_digest_recorded_of_it(
    eb: Callable[..., EbResult],
    shards: Callable[..., Path],
    tmp_path: Path,
    stage_file: str,
    when: str,
    made: str,
) -> None:
    # The same document in other bytes (indented): as valid as before, but not the file the
    # next stage was made from.
    edited = shards("s2", "2/2")
    path = edited / "stages" / stage_file
    path.write_text(json.dumps(json.loads(path.read_text()), indent=3))
    result = _merge(eb, tmp_path, shards("s1", "1/2"), edited)
    assert (
        f"{edited}: stages/{stage_file} changed after {when} (stages/{made} was made from "
        "another version of it)" in result.stderr
    )


@pytest.mark.parametrize("stage_file", ["score.json", "report.json"])
def test_a_shard_without_its_last_stage_files_is_refused(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path, stage_file: str
) -> None:
    # Without them nothing vouches for execute.json: a shard that never finished its run.
    cut = shards("s1", "1/2")
    (cut / "stages" / stage_file).unlink()
    result = _merge(eb, tmp_path, cut, shards("s2", "2/2"))
    assert f"{cut}: Stage file missing: {cut / 'stages' / stage_file}" in result.stderr


# The merge's count of missing shards, run in a child held to 1 GB of address space: N comes
# from the shards' own files, and counting up to an edited N of 10**9 must not happen.
_FORGED_N = """
from types import SimpleNamespace
from eval_banana.core.errors import MergeError
from eval_banana.scaleout.shardset import _check_each_shard_once

runs = [
    SimpleNamespace(shard=SimpleNamespace(index=index, total=10**9), run_dir=f"s{index}")
    for index in (1, 2)
]
try:
    _check_each_shard_once(runs=runs)
except MergeError as exc:
    print(exc.message)
"""


def test_a_forged_shard_count_is_refused_without_counting_to_it() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _FORGED_N],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        preexec_fn=limit_address_space,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    named = ", ".join(str(index) for index in range(3, 23))
    assert f"missing shard {named} and 999999978 more of 1000000000 (got 1, 2)" in done.stdout


@pytest.mark.parametrize("flag", ["--junit-xml", "--result-out"])
def test_a_merged_report_over_a_check_file_of_the_run_is_refused(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path, flag: str
) -> None:
    """As `eb run` refuses it: the merged run's JUnit file or result document named like one
    of its check files would replace the check, and break the next run."""
    run_dirs = [shards(f"s{k}", f"{k}/2") for k in (1, 2)]
    check_file = tmp_path / "main" / "eval_checks" / "check_3.yaml"
    before = check_file.read_bytes()
    out = tmp_path / "merged"
    result = eb(
        "merge",
        *map(str, run_dirs),
        "--cwd",
        str(tmp_path / "main"),
        "--output-dir",
        str(out),
        "--flat-output",
        flag,
        str(check_file),
    )
    assert result.exit_code == 2, result.stdout + result.stderr
    assert f"Refusing {flag} {check_file}: it is a check file this run reads" in result.stderr
    assert check_file.read_bytes() == before
    assert not out.exists()


@pytest.mark.parametrize(
    ("flag", "inside"),
    [("--result-out", "report.json"), ("--junit-xml", "stages/execute.json")],
)
def test_a_merged_report_inside_a_shard_folder_being_merged_is_refused(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path, flag: str, inside: str
) -> None:
    """The report went over the shard's own file: that merge failed, and so did every later
    one of the same shards."""
    run_dirs = [shards(f"s{k}", f"{k}/2") for k in (1, 2)]
    target = run_dirs[1] / inside
    before = target.read_bytes()
    out = tmp_path / "merged"
    result = eb(
        "merge",
        *map(str, run_dirs),
        "--cwd",
        str(tmp_path / "main"),
        "--output-dir",
        str(out),
        "--flat-output",
        flag,
        str(target),
    )
    assert result.exit_code == 2, result.stdout + result.stderr
    assert (
        f"Refusing {flag} {target}: it is inside the folder of shard 2 this merge reads "
        f"({run_dirs[1]})" in result.stderr
    )
    assert target.read_bytes() == before
    assert not out.exists()
    again = eb("merge", *map(str, run_dirs), "--output-dir", str(out), "--flat-output")
    assert again.exit_code == 0, again.stdout + again.stderr


def test_a_merge_holds_its_run_folder_as_a_run_does(
    eb: Callable[..., EbResult], shards: Callable[..., Path], tmp_path: Path
) -> None:
    """`eb merge` writes its folder under the same lock as `eb run`: a folder another eb
    process holds (here this test, as an `eb update` of it would) is refused, not written."""
    run_dirs = [shards(f"s{k}", f"{k}/2") for k in (1, 2)]
    out = tmp_path / "merged"
    out.mkdir()
    held = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        result = eb("merge", *map(str, run_dirs), "--output-dir", str(out), "--flat-output")
    finally:
        os.close(held)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert f"is writing the run folder {out}" in result.stderr
    assert not (out / "report.json").exists()
