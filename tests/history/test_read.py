"""Loading the history folder back, and the expected durations and costs taken from it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eval_banana.history.durations import expected_costs, expected_durations
from eval_banana.history.read import load_records
from eval_banana.history.store import import_records, prune, write_record
from tests.history.synth import check, digest, record, write


def test_records_load_oldest_first_and_bad_files_are_skipped_with_a_warning(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "history"
    write(folder=folder, records=[record(index=i, checks=[check(check_id="a")]) for i in (3, 1, 2)])
    (folder / "00000000000000000000-broken.json").write_text("{not json", encoding="utf-8")
    (folder / "00000000000000000001-other.json").write_text('{"run_id": 1}', encoding="utf-8")
    os.mkfifo(folder / "00000000000000000002-fifo.json")
    (folder / ".00000000000000000003-x.json.1.0.tmp").write_text("half", encoding="utf-8")
    warnings: list[str] = []

    records = load_records(folder=folder, warn=warnings.append)

    assert [r.started_at[-15:-13] for r in records] == ["01", "02", "03"]
    assert len(warnings) == 3
    assert any("broken.json" in w and "not JSON" in w for w in warnings)
    assert any("other.json" in w and "not an eb run record" in w for w in warnings)
    assert any("fifo.json" in w and "FIFO" in w for w in warnings)


def test_a_missing_folder_is_an_empty_history(tmp_path: Path) -> None:
    assert load_records(folder=tmp_path / "nowhere") == []


def test_expected_duration_is_the_median_on_the_current_definition(tmp_path: Path) -> None:
    runs = [
        record(index=1, checks=[check(check_id="a", definition="old", duration_ms=90_000)]),
        record(index=2, checks=[check(check_id="a", duration_ms=1_000)]),
        record(index=3, checks=[check(check_id="a", duration_ms=3_000)]),
        # An early error (a missing agent): fast, and no sign of how long the check takes.
        record(index=4, checks=[check(check_id="a", outcome="E", duration_ms=5, early_error=True)]),
        # A reused verdict carries the duration of the run that made it.
        record(index=5, checks=[check(check_id="a", duration_ms=2_000, cached=True)]),
        record(index=6, checks=[check(check_id="b", duration_ms=7_000)]),
    ]
    found = expected_durations(records=runs, digests={"a": digest("v1"), "c": digest("v1")})
    assert found == {"a": 2.0}


def test_expected_cost_counts_only_runs_that_spent(tmp_path: Path) -> None:
    runs = [
        record(index=1, checks=[check(check_id="j", cost_usd=0.10)]),
        record(index=2, checks=[check(check_id="j", cost_usd=0.30)]),
        record(index=3, checks=[check(check_id="j", cost_usd=0.0, cached=True)]),
        record(index=4, checks=[check(check_id="j", cost_usd=None)]),
    ]
    assert expected_costs(records=runs, digests={"j": digest("v1")}) == {"j": pytest.approx(0.2)}


def test_prune_keeps_the_newest(tmp_path: Path) -> None:
    folder = tmp_path / "history"
    for i in range(1, 6):
        write_record(folder=folder, record=record(index=i, checks=[check(check_id="a")]))
    assert len(prune(folder=folder, keep=2)) == 3
    assert [r.started_at[-15:-13] for r in load_records(folder=folder)] == ["04", "05"]


def test_import_copies_new_records_and_skips_duplicates_and_invalid_files(
    tmp_path: Path,
) -> None:
    mine, other = tmp_path / "mine", tmp_path / "other"
    write(folder=mine, records=[record(index=i, checks=[check(check_id="a")]) for i in (1, 2)])
    write(folder=other, records=[record(index=i, checks=[check(check_id="a")]) for i in (2, 3)])
    (other / "00000000000000000000-junk.json").write_text("[]", encoding="utf-8")

    done = import_records(sources=[other], folder=mine)

    assert [r[-2:] for r in done.copied] == ["03"]
    assert [r[-2:] for r in done.duplicates] == ["02"]
    assert [path.name for path, _ in done.refused] == ["00000000000000000000-junk.json"]
    assert len(load_records(folder=mine)) == 3
    again = import_records(sources=[other], folder=mine)
    assert again.copied == [] and len(again.duplicates) == 2
