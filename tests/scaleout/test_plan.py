"""How `eb plan --shards N` deals checks: by hash as `--shard K/N`, or by expected duration."""

from __future__ import annotations

from pathlib import Path

from eval_banana.checks.shard import shard_of
from eval_banana.scaleout.plan import Expected, assign_shards, plan_entry
from tests.builders import make_config, planned_inline

IDS = [f"case_{index:03d}" for index in range(12)] + ["lint", "docs", "typing"]


def test_hash_balance_is_the_shard_split() -> None:
    assigned, used = assign_shards(ids=IDS, total=3, balance="hash", expected={})
    assert used == "hash"
    assert assigned == {check_id: shard_of(check_id=check_id, total=3) for check_id in IDS}


def test_history_balance_without_durations_falls_back_to_hash() -> None:
    assigned, used = assign_shards(ids=IDS, total=3, balance="history", expected={})
    assert used == "hash"
    assert assigned == assign_shards(ids=IDS, total=3, balance="hash", expected={})[0]


def test_history_balance_deals_longest_first_to_the_least_loaded_part() -> None:
    seconds = {"lint": 90.0, "docs": 60.0, "typing": 30.0, "case_000": 30.0}
    expected = {key: Expected(seconds=value, cost_usd=None) for key, value in seconds.items()}
    assigned, used = assign_shards(ids=IDS, total=2, balance="history", expected=expected)
    assert used == "history"
    # Longest first, each to the part expected to finish first (ties to the lower part, then
    # by id): lint 90 -> 1, docs 60 -> 2, case_000 30 -> 2 (60 < 90), typing 30 -> 1 (90 = 90).
    assert [assigned[i] for i in ("lint", "docs", "case_000", "typing")] == [1, 2, 2, 1]
    # Checks without a known duration stay where the hash puts them.
    for check_id in IDS:
        if check_id not in seconds:
            assert assigned[check_id] == shard_of(check_id=check_id, total=2)


def test_a_dataset_case_is_planned_under_its_family(tmp_path: Path) -> None:
    config = make_config(project_root=tmp_path)
    plain = planned_inline(id="tone", script="pass", project_root=tmp_path)
    case = plain.model_copy(update={"id": "tone[case_01]"})
    entry = plan_entry(check=case, config=config, cache="miss", expected={})
    assert (entry.id, entry.family, entry.source) == (
        "tone[case_01]",
        "tone",
        "eval_checks/tone.yaml",
    )
    assert plan_entry(check=plain, config=config, cache="off", expected={}).family is None
    known = {"tone": Expected(seconds=2.5, cost_usd=0.01)}
    timed = plan_entry(check=plain, config=config, cache="off", expected=known)
    assert (timed.expected_seconds, timed.expected_cost_usd) == (2.5, 0.01)
