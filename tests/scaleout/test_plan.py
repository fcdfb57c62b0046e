"""How `eb plan --shards N` deals checks: by hash as `--shard K/N`, or by expected duration."""

from __future__ import annotations

from pathlib import Path

from eval_banana.checks.shard import shard_of
from eval_banana.history.balance import balance_shards
from eval_banana.scaleout.plan import Expected, assign_shards, plan_entry
from tests.builders import make_config, planned_inline

IDS = [f"case_{index:03d}" for index in range(12)] + ["lint", "docs", "typing"]


def test_hash_balance_is_the_shard_split() -> None:
    assigned, used = assign_shards(ids=IDS, total=3, balance="hash", durations={"lint": 9.0})
    assert used == "hash"
    assert assigned == {check_id: shard_of(check_id=check_id, total=3) for check_id in IDS}


def test_history_balance_without_durations_falls_back_to_hash() -> None:
    assigned, used = assign_shards(ids=IDS, total=3, balance="history", durations={"gone": 1.0})
    assert used == "hash"
    assert assigned == assign_shards(ids=IDS, total=3, balance="hash", durations={})[0]


def test_history_balance_is_the_split_of_run_shard_balance_history() -> None:
    durations = {"lint": 90.0, "docs": 60.0, "typing": 30.0, "case_000": 30.0}
    assigned, used = assign_shards(ids=IDS, total=2, balance="history", durations=durations)
    assert used == "history"
    assert assigned == balance_shards(ids=IDS, expected=durations, total=2)
    # The longest check and the next one land in different parts.
    assert assigned["lint"] != assigned["docs"]


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
