"""`eb status` and `eb update` over what a run folder holds besides its stage files, and over a
run folder whose project was moved or copied since the run.

Each case is made on a real project (tests/test_update.py's `Proj`: every check logs each time
it runs), then judged and rebuilt through the real CLI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from eval_banana.core.stem import artifact_stem
from tests.conftest import EbResult
from tests.forking import eb_script, events_of
from tests.processes import eb_process
from tests.test_update import STAGES, Proj, _kept, _rerun_stages, _rows, _run_once, _status_ok
from tests.test_update import proj as proj  # noqa: F401 - fixture


def _project_root(proj: Proj) -> str:
    config = json.loads((proj.run_dir / "stages" / "config.json").read_text())
    return str(config["project_root"])


def test_a_moved_project_is_judged_and_rebuilt_where_it_is_now(proj: Proj) -> None:
    """A moved project showed every file removed, and `eb update` failed with "--cwd is not a
    directory" naming the old folder."""
    before = _run_once(proj)
    made_in = proj.root
    proj.root = made_in.parent / "moved"
    made_in.rename(proj.root)
    status = proj.eb("status")
    assert status.exit_code == 1, status.stdout + status.stderr
    assert "removed" not in status.stdout and "changed" not in status.stdout, status.stdout
    config_row = _rows(status.stdout)["config"]
    assert f"this run was made in {made_in}; its folder now sits in {proj.root}" in config_row
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert _rerun_stages(updated.stdout) == list(STAGES)
    assert "0 of 3 checks to run again; 3 keep their results" in updated.stdout
    assert proj.ran() == Counter(proj.checks)  # nothing changed but the folder's name
    after = proj.results()
    # The verdicts kept, each naming its check file where it is now, as a fresh run would.
    for check_id in proj.checks:
        assert after[check_id]["source_path"] == str(proj.root / "eval_checks" / f"{check_id}.yaml")
    moved = {key: {**result, "source_path": None} for key, result in after.items()}
    _kept(
        {key: {**result, "source_path": None} for key, result in before.items()}, moved, proj.checks
    )
    assert _project_root(proj) == str(proj.root)
    _status_ok(proj)


def test_a_copied_project_reruns_the_copys_edited_inputs_in_the_copy(proj: Proj) -> None:
    """In a copy, an edited input was reported ok, the original's edits were reported instead,
    and `eb update` ran the checks in the original project."""
    _run_once(proj)
    original = proj.root
    copy = original.parent / "copy"
    shutil.copytree(original, copy)
    (original / "eval_checks" / "plain.yaml").write_text("broken: [\n")  # not the copy's
    proj.root = copy
    (copy / "src" / "data.txt").write_text("two\n")
    status = proj.eb("status")
    assert status.exit_code == 1
    assert f"this run was made in {original}; its folder now sits in {copy}" in status.stdout
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert "rerun reads_src: inputs src/** changed" in updated.stdout
    assert "1 of 3 checks to run again; 2 keep their results" in updated.stdout
    assert proj.ran() == Counter({"plain": 1, "scripted": 1, "reads_src": 2})
    assert _project_root(proj) == str(copy)
    _status_ok(proj)
    proj.root = original  # the original's own run is judged against the original
    assert "eval_checks/plain.yaml changed" in proj.eb("status").stdout
    assert _project_root(proj) == str(original)


def test_a_run_folder_that_left_a_project_which_is_gone_is_refused(proj: Proj) -> None:
    _run_once(proj)
    loose = proj.root.parent / "loose"
    proj.run_dir.rename(loose)
    made_in = proj.root
    shutil.rmtree(made_in)
    for command in ("status", "update"):
        refused = proj.eb(command, "--run-dir", str(loose))
        assert refused.exit_code == 2, refused.stdout + refused.stderr
        assert f"This run was made in {made_in}, which is gone" in refused.stderr
        assert f"hint: put the project back at {made_in}" in refused.stderr
    assert proj.ran() == Counter(proj.checks)


def test_deleted_reports_are_written_again_without_running_a_check(proj: Proj) -> None:
    """With report.json and report.md gone, `eb status` said ok and `eb update` "Nothing to
    update", while `eb diff` refused the folder as unfinished."""
    before = _run_once(proj)
    for name in ("report.json", "report.md"):
        (proj.run_dir / name).unlink()
    status = proj.eb("status")
    assert status.exit_code == 1
    assert "stale  (report.json and report.md are missing)" in _rows(status.stdout)["report"]
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert _rerun_stages(updated.stdout) == ["report"]
    assert proj.ran() == Counter(proj.checks)
    assert proj.results() == before
    assert json.loads((proj.run_dir / "report.json").read_text())["run_passed"] is True
    assert (proj.run_dir / "report.md").is_file()
    _status_ok(proj)


def _eb_of_its_own(*args: str) -> EbResult:
    """`eb` as a process of its own, as a user's shell starts it."""
    done = eb_process(Path.cwd(), *args)
    return EbResult(exit_code=done.returncode, stdout=done.stdout, stderr=done.stderr)


def test_an_edited_report_is_written_again_without_running_a_check(tmp_path: Path) -> None:
    """A report.json whose verdict was flipped by hand (or a report.md a script appended to)
    left `eb status` saying every stage was ok, and `eb update` "Nothing to update"."""
    proj = Proj(root=tmp_path / "proj", eb=_eb_of_its_own, failing=False)
    before = _run_once(proj)
    report_json = proj.run_dir / "report.json"
    written = report_json.read_bytes()
    report_json.write_bytes(written.replace(b'"run_passed": true', b'"run_passed": false'))
    status = proj.eb("status")
    assert status.exit_code == 1, status.stdout + status.stderr
    row = _rows(status.stdout)["report"]
    assert "stale  (report.json was edited after the report stage wrote it)" in row
    assert [stage for stage, line in _rows(status.stdout).items() if "ok" in line.split()] == list(
        STAGES[:-1]
    )
    with (proj.run_dir / "report.md").open("a") as markdown:
        markdown.write("Signed off.\n")
    both = _rows(proj.eb("status").stdout)["report"]
    assert "report.json and report.md were edited after the report stage wrote them" in both
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert _rerun_stages(updated.stdout) == ["report"]
    assert proj.ran() == Counter(proj.checks)  # no check ran again
    assert proj.results() == before
    assert json.loads(report_json.read_text())["run_passed"] is True
    assert "Signed off." not in (proj.run_dir / "report.md").read_text()
    _status_ok(proj)


def test_a_deleted_or_edited_html_report_is_written_again_without_running_a_check(
    tmp_path: Path,
) -> None:
    """With report.html deleted or edited, `eb status` said every stage was ok and `eb update`
    "Nothing to update", though `eb stage report` would have written it again."""
    proj = Proj(root=tmp_path / "proj", eb=_eb_of_its_own, failing=False)
    before = _run_once(proj)
    page = proj.run_dir / "report.html"
    written = page.read_bytes()
    page.unlink()
    status = proj.eb("status")
    assert status.exit_code == 1, status.stdout + status.stderr
    assert "stale  (report.html is missing)" in _rows(status.stdout)["report"]
    assert [stage for stage, line in _rows(status.stdout).items() if "ok" in line.split()] == list(
        STAGES[:-1]
    )
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert _rerun_stages(updated.stdout) == ["report"]
    assert page.read_bytes() == written
    _status_ok(proj)
    page.write_bytes(written.replace(b"</body>", b"<p>Signed off.</p></body>"))
    status = proj.eb("status")
    assert status.exit_code == 1, status.stdout + status.stderr
    row = _rows(status.stdout)["report"]
    assert "stale  (report.html was edited after the report stage wrote it)" in row
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert _rerun_stages(updated.stdout) == ["report"]
    assert page.read_bytes() == written
    assert proj.ran() == Counter(proj.checks)  # no check ran again
    assert proj.results() == before
    _status_ok(proj)


def test_a_run_without_a_page_is_up_to_date_without_one(tmp_path: Path) -> None:
    """`--no-html` wrote no report.html: there is none to miss."""
    proj = Proj(root=tmp_path / "proj", eb=_eb_of_its_own, failing=False)
    made = proj.eb("run", "--no-html")
    assert made.exit_code == 0, made.stdout + made.stderr
    assert not (proj.run_dir / "report.html").exists()
    _status_ok(proj)


def _snapshot(proj: Proj) -> Path:
    (snapshot,) = (proj.run_dir / "stages" / "snapshots").iterdir()
    return snapshot


def test_a_deleted_snapshot_is_frozen_again_before_its_check_runs(proj: Proj) -> None:
    """A deleted frozen script was not seen by `eb status`, and `eb update` ran its check into
    a raw "[Errno 2] No such file or directory"."""
    _run_once(proj)
    snapshot = _snapshot(proj)
    snapshot.unlink()
    status = proj.eb("status")
    assert status.exit_code == 1
    relative = snapshot.relative_to(proj.run_dir).as_posix()
    assert f"stale  ({relative} is missing)" in _rows(status.stdout)["validate"]
    proj.script.write_text(proj.script.read_text() + "# edited\n")
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert "rerun scripted: eval_checks/scripts/scripted.py changed" in updated.stdout
    assert proj.results()["scripted"]["status"] == "passed"
    assert snapshot.read_bytes() == proj.script.read_bytes()
    _status_ok(proj)


def test_an_edited_snapshot_is_frozen_again_from_the_script(proj: Proj) -> None:
    """An edited frozen script was not seen, and the next rerun of its check ran the edited
    bytes rather than the ones its definition digest names."""
    before = _run_once(proj)
    snapshot = _snapshot(proj)
    snapshot.write_text("raise SystemExit('the edited copy ran')\n")
    status = proj.eb("status")
    relative = snapshot.relative_to(proj.run_dir).as_posix()
    assert f"{relative} was edited after validate froze it" in _rows(status.stdout)["validate"]
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert _rerun_stages(updated.stdout) == list(STAGES[2:])
    assert snapshot.read_bytes() == proj.script.read_bytes()
    _kept(before, proj.results(), proj.checks)  # the results were judged on the right bytes
    rerun = proj.eb("stage", "execute", "--check-id", "scripted")
    assert rerun.exit_code == 0, rerun.stdout + rerun.stderr
    assert proj.results()["scripted"]["status"] == "passed"


def test_a_check_whose_snapshot_is_gone_at_run_time_errors_with_the_fix(proj: Proj) -> None:
    _run_once(proj)
    _snapshot(proj).unlink()
    proj.eb("stage", "execute", "--check-id", "scripted")
    result = proj.results()["scripted"]
    assert result["status"] == "error"
    error = str(result["error_detail"])
    assert "cannot be read from the run folder" in error, error
    assert "`eb update` freezes it again" in error


def _stage_doc(run_dir: Path, name: str) -> dict[str, object]:
    document: dict[str, object] = json.loads((run_dir / "stages" / name).read_text())
    return document


def test_a_stage_file_of_another_run_is_invalid_and_never_takes_its_id_over(
    proj: Proj, tmp_path: Path
) -> None:
    """A config.json copied in from another run folder was `ok`, and `eb update` took that
    run's id over and rewrote its history record; a stage file whose run_id was edited was
    `ok`. A run is the one its config.json names, config.json the one its folder vouches for
    (its name in its output folder; elsewhere the stage file built next from it)."""
    _run_once(proj)
    first = proj.run_dir
    second = first.parent / "20990101_000000_0000beef"
    shutil.copytree(first, second)
    for path in (second / "stages").glob("*.json"):  # the second run's own files
        document = json.loads(path.read_text())
        document["run_id"] = second.name
        path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    config = second / "stages" / "config.json"
    shutil.copy(first / "stages" / "config.json", config)
    status = eb_process(proj.root, "status", "--run-dir", str(second))
    assert status.returncode == 1
    assert (
        f"config    stages/config.json     invalid  (Stage file {config} belongs to run "
        f"{first.name}, but this folder in that run's output folder is run {second.name})"
    ) in status.stdout
    updated = eb_process(proj.root, "update", "--run-dir", str(second))
    assert updated.returncode == 2, updated.stdout + updated.stderr
    assert "put this run's own config.json back" in updated.stderr
    assert _stage_doc(first, "score.json")["run_id"] == first.name  # the first run untouched
    # Out of its output folder the name says nothing: the stage file built next from it does.
    moved = tmp_path / "kept-run"
    shutil.copytree(second, moved)
    refused = eb_process(proj.root, "status", "--run-dir", str(moved))
    config_row = _rows(refused.stdout)["config"]
    assert f"stages/discover.json, built next from this folder's, names run {second.name}" in (
        config_row
    )
    # A stage file whose run_id is not config.json's is invalid, and no later stage reads it.
    shutil.copy(first / "stages" / "config.json", moved / "stages" / "config.json")
    for path in (moved / "stages").glob("*.json"):
        document = json.loads(path.read_text())
        document["run_id"] = first.name
        path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    score = moved / "stages" / "score.json"
    edited = _stage_doc(moved, "score.json") | {"run_id": "someone_else"}
    score.write_text(json.dumps(edited, indent=2, sort_keys=True) + "\n")
    status = eb_process(proj.root, "status", "--run-dir", str(moved))
    score_row = _rows(status.stdout)["score"]
    assert (
        f"invalid  (Stage file {score} belongs to run someone_else, not to this run "
        f"{first.name} (the run stages/config.json records))"
    ) in score_row
    report = eb_process(proj.root, "stage", "report", "--run-dir", str(moved))
    assert report.returncode == 2 and "belongs to run someone_else" in report.stderr
    assert eb_process(proj.root, "stage", "score", "--run-dir", str(moved)).returncode == 0
    assert _stage_doc(moved, "score.json")["run_id"] == first.name


def _result_file(run_dir: Path, check_id: str) -> Path:
    return run_dir / "checks" / f"{artifact_stem(check_id=check_id)}.json"


def _flip_verdict(path: Path) -> None:
    """A passed check's result file says failed, as a hand or a script would edit it (a new
    file: an edit in place of a file linked from the cache would edit the cache's copy too)."""
    edited = path.read_bytes().replace(b'"status": "passed"', b'"status": "failed"')
    path.unlink()
    path.write_bytes(edited)


def _recorded(run_dir: Path) -> dict[str, dict[str, object]]:
    """Check id -> its result as execute.json records it."""
    document = json.loads((run_dir / "stages" / "execute.json").read_text())
    return {result["check_id"]: result for result in document["results"]}


def _as_recorded(run_dir: Path, check_ids: list[str]) -> None:
    """Each result file holds the result execute.json (and so every report) records."""
    recorded = _recorded(run_dir)
    for check_id in check_ids:
        assert json.loads(_result_file(run_dir, check_id).read_text()) == recorded[check_id]


def test_a_deleted_or_edited_result_file_is_written_again_without_running_a_check(
    tmp_path: Path,
) -> None:
    """With checks/<stem>.json deleted, or its verdict flipped, `eb status` called every stage
    ok and `eb update` said "Nothing to update": the file no longer said what execute.json and
    the reports made from it say."""
    proj = Proj(root=tmp_path / "proj", eb=_eb_of_its_own, failing=False)
    before = _run_once(proj)
    _status_ok(proj)
    gone, edited = _result_file(proj.run_dir, "plain"), _result_file(proj.run_dir, "scripted")
    gone.unlink()
    _flip_verdict(edited)
    status = proj.eb("status")
    assert status.exit_code == 1, status.stdout + status.stderr
    rows = _rows(status.stdout)
    assert f"checks/{gone.name} is missing" in rows["execute"]
    assert f"checks/{edited.name} was edited after the execute stage wrote it" in rows["execute"]
    assert "stale  (stages/execute.json is stale)" in rows["report"]
    assert [stage for stage, line in rows.items() if "ok" in line.split()] == list(STAGES[:4])
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert _rerun_stages(updated.stdout) == ["execute", "score", "report"]
    assert "0 of 3 checks to run again; 3 keep their results" in updated.stdout
    assert f"rewrite plain's result file: checks/{gone.name} is missing" in updated.stdout
    assert proj.ran() == Counter(proj.checks)  # no check ran again
    assert proj.results() == before
    _as_recorded(proj.run_dir, proj.checks)
    _status_ok(proj)


def test_the_result_files_of_a_sampled_dataset_family_are_watched(tmp_path: Path) -> None:
    """A case's checks/<stem>.json under --repeats holds its result with `details` in the order
    the samples filled it, execute.json in sorted order: the bytes eb wrote are what is
    compared, so the run is up to date as it was made, and a case's file gone or edited is
    seen and written again from execute.json."""
    proj = Proj(root=tmp_path / "proj", eb=_eb_of_its_own, failing=False)
    cases = ["greet[ada]", "greet[grace]", "greet[linus]"]
    script = (
        "import json, sys\nfrom pathlib import Path\n"
        "case = json.loads(Path(sys.argv[1]).read_text())['case']['id']\n"
        f"open({str(proj.log)!r}, 'a').write('greet[' + case + ']\\n')"
    )
    body = "cases:\n  - {id: ada}\n  - {id: grace}\n  - {id: linus}\nscript: |\n  "
    proj.write_check("greet", body + script.replace("\n", "\n  "))
    made = proj.eb("run", "--repeats", "2")
    assert made.exit_code == 0, made.stdout + made.stderr
    every = proj.checks + cases
    assert proj.ran() == Counter({check_id: 2 for check_id in every})
    _status_ok(proj)
    run_dir = proj.run_dir
    sampled = json.loads(_result_file(run_dir, "greet[grace]").read_text())
    assert list(sampled["details"]) != sorted(sampled["details"])  # another order than execute's
    written = {check_id: _result_file(run_dir, check_id).read_bytes() for check_id in cases}
    _result_file(run_dir, "greet[ada]").unlink()
    _flip_verdict(_result_file(run_dir, "greet[linus]"))
    status = proj.eb("status")
    assert status.exit_code == 1, status.stdout + status.stderr
    row = _rows(status.stdout)["execute"]
    assert f"checks/{_result_file(run_dir, 'greet[ada]').name} is missing" in row
    assert f"checks/{_result_file(run_dir, 'greet[linus]').name} was edited" in row
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert "rewrite greet[linus]'s result file" in updated.stdout
    assert proj.ran() == Counter({check_id: 2 for check_id in every})  # no check ran again
    for check_id in cases:  # the same result, its details in execute.json's order now
        now = json.loads(_result_file(run_dir, check_id).read_text())
        assert now == json.loads(written[check_id]), check_id
    assert _result_file(run_dir, "greet[grace]").read_bytes() == written["greet[grace]"]
    _as_recorded(run_dir, every)
    _status_ok(proj)


def _history_kinds(proj: Proj) -> dict[str, tuple[str, str | None]]:
    """Run id -> the kind its history record gives it, and the run it replayed, in the order
    the runs started (record names start with the start time; run ids of one second do not
    sort by it)."""
    found = {}
    for path in sorted((proj.root / ".eval-banana" / "history").glob("*.json")):
        document = json.loads(path.read_text())
        found[document["run_id"]] = (document["kind"], document.get("replayed_from"))
    return found


def test_the_result_files_of_cached_and_replayed_runs_are_watched(tmp_path: Path) -> None:
    """A verdict reused from the cache links its checks/<stem>.json to the cache's copy, and a
    replayed run links every one from the kept run: execute.json records what was linked, the
    folders are up to date as made, and a file gone or edited in a replayed run is seen and
    written again, no check run, the run still a replay."""
    proj = Proj(root=tmp_path / "proj", eb=_eb_of_its_own, failing=False)
    proj.config.write_text('[core]\noutput_dir = "runs"\n\n[cache]\nmode = "on"\n')
    for _ in range(3):  # run, reused whole (and kept), replayed
        made = proj.eb("run")
        assert made.exit_code == 0, made.stdout + made.stderr
    assert proj.ran() == Counter(proj.checks)
    kinds = _history_kinds(proj)
    first, cached, replayed = kinds
    assert kinds[replayed] == ("replay", cached)
    for run_id in (cached, replayed):
        run_dir = proj.root / "runs" / run_id
        status = proj.eb("status", "--run-dir", str(run_dir))
        assert status.exit_code == 0, status.stdout + status.stderr
        assert _result_file(run_dir, "plain").stat().st_nlink > 1  # linked from the cache
    run_dir = proj.root / "runs" / replayed
    _result_file(run_dir, "plain").unlink()
    _flip_verdict(_result_file(run_dir, "reads_src"))
    status = proj.eb("status", "--run-dir", str(run_dir))
    assert status.exit_code == 1, status.stdout + status.stderr
    assert f"checks/{_result_file(run_dir, 'plain').name} is missing" in status.stdout
    updated = proj.eb("update", "--run-dir", str(run_dir))
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert proj.ran() == Counter(proj.checks)
    _as_recorded(run_dir, proj.checks)
    status = proj.eb("status", "--run-dir", str(run_dir))
    assert status.exit_code == 0, status.stdout + status.stderr
    assert _history_kinds(proj)[replayed] == ("replay", cached)
    # The kept run the replay linked from is as it was.
    _as_recorded(proj.root / "runs" / cached, proj.checks)


def test_the_result_files_of_a_merged_run_are_watched(tmp_path: Path) -> None:
    """`eb merge` links each shard's checks/<stem>.json in: execute.json records the shards'
    digests, so the merged folder is up to date as made, and a file gone from it is seen and
    written again from the merged execute.json, the shard's own copy left alone."""
    proj = Proj(root=tmp_path / "proj", eb=_eb_of_its_own, failing=False)
    shards = []
    for index in (1, 2):
        out = proj.root / "shards" / str(index)
        made = proj.eb("run", "--shard", f"{index}/2", "--output-dir", str(out))
        assert made.exit_code == 0, made.stdout + made.stderr
        (shard,) = out.iterdir()
        shards.append(shard)
    merged = proj.eb("merge", "--output-dir", str(proj.root / "merged"), *map(str, shards))
    assert merged.exit_code == 0, merged.stdout + merged.stderr
    (run_dir,) = (proj.root / "merged").iterdir()
    status = proj.eb("status", "--run-dir", str(run_dir))
    assert status.exit_code == 0, status.stdout + status.stderr
    gone = _result_file(run_dir, "plain")
    (owner,) = [shard for shard in shards if _result_file(shard, "plain").is_file()]
    kept = _result_file(owner, "plain").read_bytes()
    gone.unlink()
    status = proj.eb("status", "--run-dir", str(run_dir))
    assert status.exit_code == 1, status.stdout + status.stderr
    assert f"checks/{gone.name} is missing" in _rows(status.stdout)["execute"]
    updated = proj.eb("update", "--run-dir", str(run_dir))
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert proj.ran() == Counter(proj.checks)
    _as_recorded(run_dir, proj.checks)
    assert _result_file(owner, "plain").read_bytes() == kept
    status = proj.eb("status", "--run-dir", str(run_dir))
    assert status.exit_code == 0, status.stdout + status.stderr


def test_a_folder_where_a_result_file_should_be_is_refused_with_the_fix(tmp_path: Path) -> None:
    """A folder in place of checks/<stem>.json: `eb status` calls execute stale (the file
    cannot be read) and names `eb update`, which died with an IsADirectoryError traceback
    (exit 1). It is refused before a check runs (exit 2), naming the path, what is there and
    the fix; the folder, which eb did not make, is left as it is."""
    proj = Proj(root=tmp_path / "proj", eb=_eb_of_its_own, failing=False)
    _run_once(proj)
    run_dir = proj.run_dir
    recorded = (run_dir / "stages" / "execute.json").read_bytes()
    path = _result_file(run_dir, "plain")
    path.unlink()
    path.mkdir()
    (path / "notes.txt").write_text("mine\n")
    status = proj.eb("status")
    assert status.exit_code == 1, status.stdout + status.stderr
    row = _rows(status.stdout)["execute"]
    assert f"checks/{path.name} cannot be read (not a regular file (a folder))" in row
    assert "To rerun exactly what is not ok: eb update" in status.stdout
    refused = proj.eb("update")
    assert refused.exit_code == 2, refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr
    assert f"Cannot write {path}: it is not a regular file (a folder)" in refused.stderr
    assert "hint: Remove it, then run eb update: it writes the file again" in refused.stderr
    assert "eb never removes what it did not make" in refused.stderr
    assert (path / "notes.txt").read_text() == "mine\n"
    assert (run_dir / "stages" / "execute.json").read_bytes() == recorded
    assert proj.ran() == Counter(proj.checks)  # no check ran again
    shutil.rmtree(path)
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert proj.ran() == Counter(proj.checks)
    _as_recorded(run_dir, proj.checks)
    _status_ok(proj)


def test_a_file_where_the_checks_folder_should_be_is_refused_with_the_fix(
    tmp_path: Path,
) -> None:
    """A file in place of checks/: `eb update` (writing a result file into it) and `eb stage
    execute` (making the folder) died with a traceback; both are refused (exit 2), naming
    the path and the fix, and the file is left as it is."""
    proj = Proj(root=tmp_path / "proj", eb=_eb_of_its_own, failing=False)
    _run_once(proj)
    run_dir = proj.run_dir
    checks = run_dir / "checks"
    shutil.rmtree(checks)
    checks.write_text("mine\n")
    refused = proj.eb("update")
    assert refused.exit_code == 2, refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr
    assert "a file stands where one of its folders should be" in refused.stderr
    hint = f"hint: Remove the file in the way (in {checks} or above it), then run eb update"
    assert hint in refused.stderr
    staged = proj.eb("stage", "execute")
    assert staged.exit_code == 2, staged.stdout + staged.stderr
    assert "Traceback" not in staged.stderr
    assert f"Cannot make the folder {checks}: a file stands there" in staged.stderr
    assert checks.read_text() == "mine\n"
    assert proj.ran() == Counter(proj.checks)  # no check ran again
    checks.unlink()
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    _as_recorded(run_dir, proj.checks)
    _status_ok(proj)


def test_a_folder_where_a_moved_checks_result_file_goes_is_refused_with_the_fix(
    tmp_path: Path,
) -> None:
    """`eb stage execute --check-id` writes again the result file of a kept result whose check
    file moved (it names the new file); a folder in its place died with a traceback."""
    proj = Proj(root=tmp_path / "proj", eb=_eb_of_its_own, failing=False)
    _run_once(proj)
    run_dir = proj.run_dir
    (proj.root / "eval_checks" / "moved").mkdir()
    (proj.root / "eval_checks" / "plain.yaml").rename(
        proj.root / "eval_checks" / "moved" / "plain.yaml"
    )
    planned = proj.eb("update", "guard")
    assert planned.exit_code == 0, planned.stdout + planned.stderr
    path = _result_file(run_dir, "plain")
    path.unlink()
    path.mkdir()
    refused = proj.eb("stage", "execute", "--check-id", "scripted")
    assert refused.exit_code == 2, refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr
    assert f"Cannot write {path}: it is not a regular file (a folder)" in refused.stderr
    assert "hint: Remove it, then run eb update" in refused.stderr
    path.rmdir()
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert "/moved/plain.yaml" in json.loads(path.read_text())["source_path"]
    _as_recorded(run_dir, proj.checks)
    _status_ok(proj)


def test_a_folder_where_report_html_or_the_junit_file_goes_is_refused_before_a_check_runs(
    tmp_path: Path,
) -> None:
    """`mkdir <run>/report.html` (or a folder where the JUnit file goes): `eb update` ran the
    stale checks again, then ended as a write fault (exit 3) once the verdict was shown, and
    wrote stages/report.json so that `eb status` called the report stage ok. It is refused
    before a check runs (exit 2), naming the path and the fix; the folder, which eb did not
    make, is left as it is, and `eb status` still calls the report stage stale."""
    proj = Proj(root=tmp_path / "proj", eb=_eb_of_its_own, failing=False)
    proj.config.write_text('[core]\noutput_dir = "runs"\njunit_xml = "junit.xml"\n')
    _run_once(proj)
    run_dir = proj.run_dir
    (proj.root / "src" / "data.txt").write_text("two\n")  # reads_src is to run again
    page = run_dir / "report.html"
    page.unlink()
    page.mkdir()
    (page / "notes.txt").write_text("mine\n")
    status = proj.eb("status")
    assert status.exit_code == 1, status.stdout + status.stderr
    assert "report.html is not a regular file (a folder)" in _rows(status.stdout)["report"]

    refused = proj.eb("update")
    assert refused.exit_code == 2, refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr
    assert f"Cannot write {page}: it is not a regular file (a folder)" in refused.stderr
    assert "hint: Remove it, then rerun the report stage" in refused.stderr
    assert (page / "notes.txt").read_text() == "mine\n"
    assert proj.ran() == Counter(proj.checks)  # no check ran again
    staged = proj.eb("stage", "report")  # refused the same way, nothing written
    assert staged.exit_code == 2, staged.stdout + staged.stderr
    assert f"Cannot write {page}: it is not a regular file (a folder)" in staged.stderr
    assert "stale" in _rows(proj.eb("status").stdout)["report"]

    shutil.rmtree(page)
    junit = proj.root / "junit.xml"
    junit.unlink()
    junit.mkdir()
    refused = proj.eb("update")
    assert refused.exit_code == 2, refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr
    assert f"Cannot write {junit}: it is not a regular file (a folder)" in refused.stderr
    assert "or write it elsewhere with eb stage report --junit-xml PATH" in refused.stderr
    assert proj.ran() == Counter(proj.checks)
    assert "stale" in _rows(proj.eb("status").stdout)["report"]

    junit.rmdir()
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert proj.ran() == Counter({"plain": 1, "scripted": 1, "reads_src": 2})
    assert page.is_file() and junit.is_file()
    _status_ok(proj)


# eb that stops for good (until it is killed) as it is about to rename its report.json into
# place: its temporary sibling is written, the rename not made.
_STOPS_BEFORE_RENAMING_THE_REPORT = """\
import time
real_replace = os.replace
def replace(source, target, *args, **kwargs):
    if os.path.basename(target) == "report.json" and "stages" not in str(target):
        note("renaming")
        time.sleep(120)
    return real_replace(source, target, *args, **kwargs)
os.replace = replace
"""


def test_eb_update_removes_the_temporary_files_a_killed_eb_left_and_nothing_else(
    tmp_path: Path,
) -> None:
    """An eb killed (`kill -9`) while it wrote report.json left `.report.json.<pid>.<n>.tmp` in
    the run folder, and `eb update`, which completed the run (exit 0), left it there."""
    root = tmp_path / "proj"
    (root / "eval_checks").mkdir(parents=True)
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text('[core]\noutput_dir = "runs"\n')
    (root / "eval_checks" / "ok.yaml").write_text(
        "schema_version: 1\nid: ok\ntype: deterministic\ndescription: Passes.\n"
        "script: print('fine')\n"
    )
    events = tmp_path / "events"
    killed = subprocess.Popen(
        [sys.executable, "-c", eb_script(setup=_STOPS_BEFORE_RENAMING_THE_REPORT)]
        + ["run", "--cache", "off", "--cwd", str(root)],
        env={**os.environ, "EB_EVENTS": str(events)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while "renaming" not in events_of(events) and time.monotonic() < deadline:
            assert killed.poll() is None, "eb ended before it renamed its report"
            time.sleep(0.01)
    finally:
        killed.kill()
        killed.wait(timeout=60)
    (run_dir,) = (root / "runs").iterdir()
    (left,) = run_dir.glob(".report.json.*.tmp")
    assert left.name.startswith(f".report.json.{killed.pid}."), left.name
    # Beside it: another of eb's own forms a dead writer left (removed too), and files eb
    # never removes: a live writer's (this test's), a name of another form, and a check's own
    # file in its output folder.
    also_left = run_dir / "stages" / f".score.json.{killed.pid}.3.tmp"
    live = run_dir / "checks" / f".ok.json.{os.getpid()}.1.tmp"
    other_form = run_dir / f".notes.{killed.pid}.tmp"
    (checks_own,) = (path for path in (run_dir / "checks").iterdir() if path.is_dir())
    in_checks_own = checks_own / f".data.json.{killed.pid}.1.tmp"
    for path in (also_left, live, other_form, in_checks_own):
        path.write_text("{")
    # A pid in use again, by a process that started after the file was last written (this
    # test's, against a file dated 2001): its writer is gone too. Linux's /proc tells it.
    reused = run_dir / "stages" / f".plan.json.{os.getpid()}.2.tmp"
    reused.write_text("{")
    os.utime(reused, (1_000_000_000, 1_000_000_000))
    updated = eb_process(root, "update")
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert json.loads((run_dir / "report.json").read_text())["run_passed"] is True
    assert not left.exists() and not also_left.exists()
    assert reused.exists() is not Path("/proc/self/stat").exists()
    assert live.exists() and other_form.exists() and in_checks_own.exists()
