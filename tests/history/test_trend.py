"""history.trend: each check's recent outcomes (report.html) and timelines (the history page),
read from real record files."""

from __future__ import annotations

import json
from pathlib import Path

from eval_banana.history.read import load_records
from eval_banana.history.record import HistoryRecord
from eval_banana.history.trend import Recent, recent, timelines
from eval_banana.models.config import Selection, Shard
from tests.history.synth import check, record, write
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


def _shard_pipelines(*, pipelines: int, shards: int) -> list[HistoryRecord]:
    """`pipelines` runs an hour apart, each `shards` shard runs a second apart and, when
    merged, their merge, which starts when its first shard did (as `eb merge` records it).
    The one check runs in shard 1; oldest first."""
    base = record(index=1, checks=[check(check_id="x")])
    records: list[HistoryRecord] = []
    for hour in range(pipelines):
        shard_ids = [f"p{hour:02d}_s{k}" for k in range(1, shards + 1)]
        for k, run_id in enumerate(shard_ids, start=1):
            records.append(
                base.model_copy(
                    update={
                        "run_id": run_id,
                        "started_at": f"2026-01-01T{hour:02d}:00:{k:02d}.000000+00:00",
                        "selection": Selection(shard=Shard(index=k, total=shards)),
                        "checks": base.checks if k == 1 else [],
                    }
                )
            )
        records.append(
            base.model_copy(
                update={
                    "run_id": f"p{hour:02d}_merge",
                    "kind": "merge",
                    "merged_from": shard_ids,
                    "started_at": f"2026-01-01T{hour:02d}:00:01.000000+00:00",
                }
            )
        )
    return records


def test_the_sparkline_counts_a_merged_run_once_and_never_its_shards(tmp_path: Path) -> None:
    # A merge starts when its first shard did, so shards 2..8 sort after it: counted as they
    # came, the newest 19 "runs" were mostly shards, and the check had 3 outcomes, not 19.
    folder = tmp_path / "history"
    write(folder=folder, records=_shard_pipelines(pipelines=25, shards=8))
    found = recent(folder=folder, skip_run_id=None, last=19)
    assert found["x"].statuses == ["passed"] * 19


def test_the_sparkline_reads_no_more_records_than_its_runs_take(tmp_path: Path) -> None:
    # A damaged record is warned of when read: the one past what the runs take never is.
    folder = tmp_path / "history"
    plain = [record(index=n, checks=[check(check_id="x")]) for n in range(1, 26)]
    write(folder=folder, records=plain)
    damaged = folder / "20260101000005000000-20260101_000005_00000005.json"
    assert damaged.is_file()
    damaged.write_text("{}")
    warned: list[str] = []
    found = recent(folder=folder, skip_run_id=None, last=19, warn=warned.append)
    assert len(found["x"].statuses) == 19 and warned == []

    # Shard runs no merge names (each CI job keeping its own) are runs: each waits for a
    # merge through its shard count and the runs asked for, then counts.
    alone = tmp_path / "alone"
    lone = [
        one.model_copy(update={"selection": Selection(shard=Shard(index=1, total=2))})
        for one in [record(index=n, checks=[check(check_id="x")]) for n in range(1, 60)]
    ]
    write(folder=alone, records=lone)
    (alone / "20260101000010000000-20260101_000010_0000000a.json").write_text("{}")
    found = recent(folder=alone, skip_run_id=None, last=19, warn=warned.append)
    assert len(found["x"].statuses) == 19 and warned == []


def test_runs_of_the_same_checks_read_as_columns_give_what_check_by_check_gives(
    tmp_path: Path,
) -> None:
    """Runs of one suite are read column by column (`_same_checks`); one run without an
    outcome of a check sends the window the check-by-check way: the answers are the same."""
    outcomes = ["P", "F", "E", "P"]

    def runs(not_run_at: int | None) -> list[HistoryRecord]:
        return [
            record(
                index=index,
                checks=[
                    check(check_id="a", outcome=outcome, definition=f"v{index // 2}"),
                    check(check_id="b", early_error=index == 1),
                    check(check_id="c", outcome="F", not_run=index == not_run_at),
                ],
            )
            for index, outcome in enumerate(outcomes, start=1)
        ]

    for not_run_at in (None, 3):
        folder = tmp_path / f"history-{not_run_at}"
        written = runs(not_run_at)
        write(folder=folder, records=written)
        found = recent(folder=folder, skip_run_id=None, last=19)
        assert list(found) == ["a", "b", "c"]
        for check_id, one in found.items():
            seen = [c for r in written for c in r.checks if c.id == check_id and not c.not_run]
            assert one.statuses == [c.status for c in seen]
            assert one.digests == [c.digest for c in seen]
            assert one.early == [c.early_error for c in seen]
        assert found["a"].statuses[0] is found["b"].statuses[0]  # one copy of each status
        assert len(found["c"].statuses) == (4 if not_run_at is None else 3)


def test_a_check_of_one_outcome_throughout_flipped_never_whatever_its_digests() -> None:
    steady = Recent(
        statuses=["failed"] * 4, digests=["a", "b", "a", "b"], early=[False, True, False, False]
    )
    assert steady.most_flips() == 0 and steady.most_flips(digest="a") == 0
    flipping = Recent(
        statuses=["failed", "passed", "failed", "passed"], digests=["a"] * 4, early=[False] * 4
    )
    assert flipping.most_flips() == 3 and flipping.most_flips(digest="b") == 0
