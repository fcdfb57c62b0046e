"""How `eb plan --shards N` deals checks: by hash as `--shard K/N`, or by expected duration."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.checks.shard import shard_of
from eval_banana.history.balance import balance_shards
from eval_banana.scaleout.plan import Expected, assign_shards, plan_entry
from tests.builders import make_config, planned_inline
from tests.conftest import check_yaml
from tests.processes import eb_process

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


# A judge in the claude dialect that reports a cost of $0.50 for each answer.
PRICED_JUDGE = """\
import json, time
time.sleep(0.05)
verdict = json.dumps({"score": 1, "reason": "ok"})
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": verdict,
                  "total_cost_usd": 0.5, "usage": {"input_tokens": 10, "output_tokens": 1}}))
"""


def _plan_figures(root: Path, *flags: str) -> tuple[float, float]:
    done = eb_process(root, "plan", "--json", *flags)
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(done.stdout)["checks"]
    return entry["expected_seconds"], entry["expected_cost_usd"]


def _recorded(root: Path) -> list[dict[str, Any]]:
    """The judge's entry of each history record, oldest first."""
    records = sorted((root / ".eval-banana" / "history").glob("*.json"))
    return [json.loads(path.read_text())["checks"][0] for path in records]


def _priced_project(project: Callable[..., Path], *, cost_usd: float = 0.5) -> Path:
    """A project of one judge `j` whose agent reports `cost_usd` for each answer."""
    from tests.conftest import PYTHON

    return project(
        {
            "judge.py": PRICED_JUDGE.replace(
                '"total_cost_usd": 0.5', f'"total_cost_usd": {cost_usd!r}'
            ),
            "eval_checks/j.yaml": "schema_version: 1\nid: j\ntype: harness_judge\n"
            "description: d\ninstructions: i\n",
        },
        config='[harness]\nagent = "priced"\n\n[agents.priced]\n'
        f'command = ["{PYTHON}", "judge.py"]\nmodel_flag = ""\noutput_dialect = "claude"\n',
    )


def test_plan_expects_each_sample_the_run_will_take(project: Callable[..., Path]) -> None:
    root = _priced_project(project)
    assert eb_process(root, "run").returncode == 0
    (once,) = _recorded(root)
    assert "samples" not in once and "sample_ms" not in once  # one sample: the defaults
    # Four samples take four times what one took, and cost four times as much.
    seconds, cost = _plan_figures(root, "--repeats", "4")
    assert seconds == pytest.approx(4 * once["duration_ms"] / 1000)
    assert cost == pytest.approx(2.0)
    assert eb_process(root, "run", "--repeats", "4").returncode == 0
    sampled = _recorded(root)[1]
    assert sampled["samples"] == 4 and sampled["cost_usd"] == pytest.approx(2.0)
    # A one-sample plan reads the four-sample run as four samples, not as one.
    seconds, cost = _plan_figures(root)
    assert seconds == pytest.approx((once["duration_ms"] + sampled["sample_ms"]) / 2000)
    assert cost == pytest.approx(0.5)


def test_plan_table_never_shows_a_paid_check_as_free(project: Callable[..., Path]) -> None:
    # A judge that cost $0.00004 read `0.00` in the table, as if it were free; the JSON plan
    # keeps the plain number.
    root = _priced_project(project, cost_usd=0.00004)
    assert eb_process(root, "run").returncode == 0
    assert _plan_figures(root)[1] == pytest.approx(0.00004)
    done = eb_process(root, "plan", "--shards", "2")
    assert done.returncode == 0, done.stderr
    (row,) = [line for line in done.stdout.splitlines() if " j " in line]
    assert " $0.000040 " in row and " 0.00 " not in row, row
    (shard,) = [
        line for line in done.stdout.splitlines() if line.startswith("shard ") and "1 check" in line
    ]
    assert shard.endswith("cost $0.000040"), shard


# Slow while the file `slow` exists: one run's durations differ from the others'.
SOMETIMES_SLOW = """\
import pathlib, time
time.sleep(0.4 if pathlib.Path("slow").exists() else 0.0)
"""


def _expected_seconds(root: Path) -> dict[str, float]:
    done = eb_process(root, "plan", "--json")
    assert done.returncode == 0, done.stderr
    return {entry["id"]: entry["expected_seconds"] for entry in json.loads(done.stdout)["checks"]}


def test_a_merge_does_not_count_its_shards_again(project: Callable[..., Path]) -> None:
    # The merged run and its shard runs were both read: each check's sharded duration counted
    # twice, and one slow unsharded run no longer moved the median.
    from tests.conftest import check_yaml

    root = project(
        {f"eval_checks/c{i}.yaml": check_yaml(f"c{i}", script=SOMETIMES_SLOW) for i in range(2)}
    )
    (root / "slow").touch()
    assert eb_process(root, "run").returncode == 0
    (root / "slow").unlink()
    for k in (1, 2):
        shard = eb_process(
            root, "run", "--shard", f"{k}/2", "--output-dir", f"shard{k}", "--flat-output"
        )
        assert shard.returncode == 0, shard.stderr
    unmerged = _expected_seconds(root)
    merged = eb_process(root, "merge", "shard1", "shard2", "--output-dir", "merged")
    assert merged.returncode == 0, merged.stderr
    assert _expected_seconds(root) == unmerged


def test_balance_without_shards_is_a_usage_error(project: Callable[..., Path]) -> None:
    """`eb plan --balance history` printed an unsharded plan as if it had been balanced;
    it needs --shards N (or --shard K/N, which the balance cuts)."""
    root = project({"eval_checks/a.yaml": check_yaml("a")})
    refused = eb_process(root, "plan", "--balance", "history")
    assert refused.returncode == 2
    assert "--balance history needs --shards N" in refused.stderr
    as_json = eb_process(root, "plan", "--json", "--balance", "history")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["error"]["kind"] == "usage_error"
    for flags in (("--shards", "2"), ("--shard", "1/2")):
        done = eb_process(root, "plan", "--json", "--balance", "history", *flags)
        assert done.returncode == 0, done.stderr
    # The setting alone (config or environment) applies when there are shards, no error.
    assert (
        eb_process(
            root, "plan", env={**os.environ, "EVAL_BANANA_SHARD_BALANCE": "history"}
        ).returncode
        == 0
    )
