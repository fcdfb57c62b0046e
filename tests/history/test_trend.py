"""history.trend: each check's recent outcomes (report.html) and timelines (the history page),
read from real record files."""

from __future__ import annotations

import json
from pathlib import Path

from eval_banana.history.read import load_records
from eval_banana.history.trend import recent, timelines
from tests.reporting.history_sample import write_sample_history


def test_recent_reads_what_the_full_reader_reads_and_skips_a_damaged_record(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "history"
    run_ids = write_sample_history(folder=folder, runs=9)
    damaged = folder / "20990101000000000000-zz.json"
    damaged.write_text('{"run_id": "zz", "checks": [1]}')
    warned: list[str] = []
    found = recent(folder=folder, skip_run_id=run_ids[-1], last=5, warn=warned.append)
    assert len(warned) == 1 and str(damaged) in warned[0]
    records = load_records(folder=folder, warn=lambda _: None)[-6:-1]  # the run skipped
    for check_id, one in found.items():
        seen = [c for r in records for c in r.checks if c.id == check_id]
        assert one.statuses == [c.status for c in seen]
        assert one.digests == [c.digest for c in seen]
    assert found["flipper"].statuses == ["failed", "passed", "failed", "passed", "failed"]
    assert found["flipper"].most_flips() == 4 and found["steady"].most_flips() == 0
    assert found["breaker"].previous() == "failed"


def test_a_timeline_marks_the_run_a_definition_changed(tmp_path: Path) -> None:
    folder = tmp_path / "history"
    write_sample_history(folder=folder, runs=9)
    lines = timelines(window=load_records(folder=folder))
    assert lines["breaker"].strip == "ppppppfff" and lines["breaker"].changes == [6]
    assert lines["refunds[late]"].strip == "pppeepppp" and lines["refunds[late]"].changes == []


def test_recent_skips_a_record_whose_check_status_is_no_word(tmp_path: Path) -> None:
    folder = tmp_path / "history"
    write_sample_history(folder=folder, runs=3)
    newest = sorted(folder.glob("*.json"))[-1]
    document = json.loads(newest.read_text())
    document["checks"][0]["status"] = ["passed"]  # unhashable: no crash, a warning
    newest.write_text(json.dumps(document))
    warned: list[str] = []
    found = recent(folder=folder, skip_run_id=None, last=5, warn=warned.append)
    assert len(warned) == 1 and str(newest) in warned[0] and "malformed" in warned[0]
    assert all(len(one.statuses) == 2 for one in found.values())


def test_recent_counts_only_the_records_before_a_name(tmp_path: Path) -> None:
    folder = tmp_path / "history"
    write_sample_history(folder=folder, runs=6)
    third = sorted(folder.glob("*.json"))[2]
    found = recent(folder=folder, skip_run_id=None, last=19, before=third.name)
    assert all(len(one.statuses) == 2 for one in found.values())


def test_recent_holds_one_copy_of_each_status_and_digest(tmp_path: Path) -> None:
    # report.html's marks keep twenty runs of every check for the whole run: each record's own
    # copy of the same digest was most of eb's memory at 10,000 checks.
    folder = tmp_path / "history"
    write_sample_history(folder=folder, runs=9)
    found = recent(folder=folder, skip_run_id=None, last=9)
    steady = found["steady"]
    assert len(steady.digests) == 9
    assert all(digest is steady.digests[0] for digest in steady.digests)
    statuses = [status for one in found.values() for status in one.statuses]
    assert len({id(status) for status in statuses}) == len(set(statuses))
