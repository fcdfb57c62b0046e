"""What judging cost, as the run history tells it: a pipeline merged twice counts once, money a
judge re-run by `eb update` spent stays spent, and no amount an agent reports crashes a run or
`eb history`. Real projects, a stand-in claude agent that reports a cost, real eb commands."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EbResult, check_yaml
from tests.history import synth

Eb = Callable[..., EbResult]

# A stand-in claude agent: the prompt names its judge (`KEY_<name>`), and costs.json beside
# the project says what that judge's call reports it spent.
PAID_AGENT = textwrap.dedent(
    """\
    import json, re, sys
    from pathlib import Path
    key = re.search(r"KEY_(\\w+)", sys.argv[-1]).group(1)
    costs = json.loads(Path(sys.argv[1]).read_text())
    verdict = json.dumps({"score": 1, "reason": "fine"})
    print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                      "result": verdict, "total_cost_usd": costs[key],
                      "usage": {"input_tokens": 100, "output_tokens": 20}}))
    """
)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in ("MODE", "DIR", "KEEP"):
        monkeypatch.delenv(f"EVAL_BANANA_HISTORY_{name}", raising=False)
    monkeypatch.delenv("EVAL_BANANA_CACHE_MODE", raising=False)


def _judge(key: str, *, instructions: str = "Answer.") -> str:
    return (
        f"schema_version: 1\nid: judge_{key}\ntype: harness_judge\ndescription: Judge {key}.\n"
        f"instructions: {json.dumps(f'Judge KEY_{key}. {instructions}')}\n"
    )


def _paid_project(tmp_path: Path, costs: dict[str, Any]) -> Path:
    """A project of a judge per key of `costs` (each reporting that cost) and two scripts."""
    agent, prices = tmp_path / "agent.py", tmp_path / "costs.json"
    agent.write_text(PAID_AGENT)
    prices.write_text(json.dumps(costs))
    config = textwrap.dedent(
        f"""\
        [harness]
        agent = "paid"
        isolation = "off"

        [agents.paid]
        command = [{json.dumps(sys.executable)}, {json.dumps(str(agent))}, \
        {json.dumps(str(prices))}]
        model_flag = ""
        output_dialect = "claude"
        """
    )
    root = tmp_path / "p"
    files = {
        ".eval-banana/config.toml": config,
        "eval_checks/script_a.yaml": check_yaml("script_a"),
        "eval_checks/script_b.yaml": check_yaml("script_b"),
        **{f"eval_checks/judge_{key}.yaml": _judge(key) for key in costs},
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _history(eb: Eb, root: Path, *options: str) -> dict[str, Any]:
    done = eb("history", "--cwd", str(root), "--format", "json", *options)
    assert done.exit_code == 0, done.stderr
    return dict(json.loads(done.stdout))


def _trend_items(run_dir: Path) -> dict[str, dict[str, Any]]:
    """report.html's `eb-trend` block of the run in `run_dir`: each row's marks, by check id."""
    html = (run_dir / "report.html").read_text()
    start = html.index('id="eb-trend">') + len('id="eb-trend">')
    items = json.loads(html[start : html.index("</script>", start)])
    return {item["id"]: item for item in items}


def test_shards_merged_twice_count_once_as_their_latest_merge(tmp_path: Path, eb: Eb) -> None:
    """A merge job run again recorded a second merged run of the same shards: `eb history`
    drew every check twice (`✓✓`) and a $0.05 judge cost $0.10."""
    root = _paid_project(tmp_path, {"fl": 0.05, "st": 0.02})
    shards = []
    for k in (1, 2):
        out = tmp_path / f"shard{k}"
        done = eb("run", "--cwd", str(root), "--shard", f"{k}/2", "--output-dir", str(out),
                  "--flat-output")  # fmt: skip
        assert done.exit_code == 0, done.stdout + done.stderr
        shards.append(str(out))
    merges = []
    for again in ("m1", "m2"):
        # A run id starts with the second it was made: the later merge's sorts after.
        time.sleep(1.1 if merges else 0)
        done = eb("merge", *shards, "--cwd", str(root), "--output-dir", str(tmp_path / again),
                  "--json")  # fmt: skip
        assert done.exit_code == 0, done.stderr
        merges.append(json.loads(done.stdout)["run_id"])

    view = _history(eb, root)
    assert [run["run_id"] for run in view["runs"]] == [merges[1]]
    rows = {row["id"]: row for row in view["checks"]}
    assert {row["strip"] for row in rows.values()} == {"✓"}
    assert (rows["judge_fl"]["cost_usd"], rows["judge_st"]["cost_usd"]) == (0.05, 0.02)
    text = eb("history", "--cwd", str(root)).stdout
    assert "✓✓" not in text and "$0.1000" not in text and text.count(merges[0]) == 0
    markdown = eb("history", "--cwd", str(root), "--format", "md").stdout
    assert "✓✓" not in markdown and markdown.count(merges[1]) == 1
    page = tmp_path / "history.html"
    assert eb("history", "--cwd", str(root), "--html", str(page)).exit_code == 0
    assert merges[0] not in page.read_text() and merges[1] in page.read_text()

    # The second merge's report.html: the first merge of its shards is this run, not one before.
    (run_dir,) = [p for p in (tmp_path / "m2").iterdir() if p.is_dir()]
    # (no earlier run: no sparkline; counted as one before, each check's read `pp`)
    assert {item.get("trend", "") for item in _trend_items(run_dir).values()} <= {"", "p"}


def test_costs_recorded_past_the_ceiling_leave_eb_history_whole(tmp_path: Path, eb: Eb) -> None:
    """Two records of a judge that cost 1e308 dollars (an eb before the ceiling took it) made
    `eb history` (text, JSON, --html) die adding them up (OverflowError)."""
    root = tmp_path / "p"
    (root / ".eval-banana").mkdir(parents=True)
    records = [
        synth.record(
            index=index, checks=[synth.check(check_id="judge", cost_usd=1e308)]
        ).model_copy(update={"cost_usd": 1e308})
        for index in (1, 2)
    ]
    synth.write(folder=root / ".eval-banana" / "history", records=records)
    view = _history(eb, root)
    assert view["checks"][0]["cost_usd"] is None
    assert [run["cost_usd"] for run in view["runs"]] == [None, None]
    assert eb("history", "--cwd", str(root)).exit_code == 0
    page = tmp_path / "history.html"
    assert eb("history", "--cwd", str(root), "--html", str(page)).exit_code == 0


def test_money_a_judge_run_again_by_eb_update_spent_stays_spent(tmp_path: Path, eb: Eb) -> None:
    """`eb update` ran an edited judge again (a new, paid call) and wrote the run's record from
    the current results only: $0.18 spent read $0.08 in `eb history`, the replaced calls gone."""
    root = _paid_project(tmp_path, {"fl": 0.05, "st": 0.02, "nc": 0.01})
    done = eb("run", "--cwd", str(root), "--json")
    assert done.exit_code == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    run_dir = root / ".eval-banana" / "results" / run_id
    for wording in ("Answer briefly.", "Answer now."):
        (root / "eval_checks/judge_fl.yaml").write_text(_judge("fl", instructions=wording))
        updated = eb("update", "--run-dir", str(run_dir), "--cwd", str(root))
        assert updated.exit_code == 0, updated.stdout + updated.stderr
        assert "rerun judge_fl" in updated.stdout

    # The report tells what its current results cost; the history, what judging the folder did.
    report = json.loads((run_dir / "report.json").read_text())
    assert report["judge_usage"]["cost_usd"] == pytest.approx(0.08)
    view = _history(eb, root)
    (run,) = view["runs"]
    assert run["cost_usd"] == pytest.approx(0.18)
    rows = {row["id"]: row["cost_usd"] for row in view["checks"]}
    assert rows["judge_fl"] == pytest.approx(0.15) and rows["judge_st"] == pytest.approx(0.02)
    (record_file,) = (root / ".eval-banana" / "history").glob("*.json")
    record = json.loads(record_file.read_text())
    assert (record["cost_usd"], record["replaced_cost_usd"]) == (
        pytest.approx(0.08),
        pytest.approx(0.10),
    )
    # What one run of the judge costs, as `eb plan` expects it, is still one call's.
    plan = json.loads(eb("plan", "--cwd", str(root), "--json").stdout)
    expected = {check["id"]: check.get("expected_cost_usd") for check in plan["checks"]}
    assert expected["judge_fl"] == pytest.approx(0.05)


def test_merges_of_the_same_shards_in_one_second_stand_in_the_order_they_were_made(
    tmp_path: Path, eb: Eb
) -> None:
    """Merges of the same shards made within one second were ordered by the random rest of
    their run ids: `eb history` could keep an older merge for the pipeline and leave out the
    one just made. Each merge here, all in one second, is the one that stands at once."""
    root = _paid_project(tmp_path, {})
    shards = []
    for k in (1, 2):
        out = tmp_path / f"shard{k}"
        done = eb("run", "--cwd", str(root), "--shard", f"{k}/2", "--output-dir", str(out),
                  "--flat-output")  # fmt: skip
        assert done.exit_code == 0, done.stdout + done.stderr
        shards.append(str(out))
    seconds: set[str] = set()
    for _attempt in range(3):
        # Begun just after a second starts, five merges (tens of milliseconds each) share it.
        time.sleep(1.02 - time.time() % 1)
        made = []
        for _again in range(5):
            done = eb("merge", *shards, "--cwd", str(root), "--output-dir", str(tmp_path / "m"),
                      "--json")  # fmt: skip
            assert done.exit_code == 0, done.stderr
            made.append(json.loads(done.stdout)["run_id"])
            assert [run["run_id"] for run in _history(eb, root)["runs"]] == [made[-1]], made
        seconds = {run_id[: len("YYYYmmdd_HHMMSS")] for run_id in made}
        if len(seconds) == 1:
            break
    assert len(seconds) == 1, "the five merges never fell within one second"


def _shard_runs(eb: Eb, root: Path, out: Path, *shards: int) -> list[str]:
    """Run the shards `shards` of 2, each into its own folder under `out`; their folders."""
    folders = []
    for k in shards:
        folder = out / f"shard{k}"
        done = eb("run", "--cwd", str(root), "--shard", f"{k}/2", "--output-dir", str(folder),
                  "--flat-output")  # fmt: skip
        assert done.exit_code == 0, done.stdout + done.stderr
        folders.append(str(folder))
    return folders


def _merged(eb: Eb, root: Path, out: Path, shards: list[str]) -> str:
    done = eb("merge", *shards, "--cwd", str(root), "--output-dir", str(out), "--json")
    assert done.exit_code == 0, done.stderr
    return str(json.loads(done.stdout)["run_id"])


def _judged(run_dir: str) -> float:
    """What a run folder's current results cost, as its report says."""
    report = json.loads((Path(run_dir) / "report.json").read_text())
    return float((report.get("judge_usage") or {}).get("cost_usd") or 0.0)


def test_shards_updated_and_merged_again_keep_what_their_updates_replaced(
    tmp_path: Path, eb: Eb
) -> None:
    """Shards merged, both judges edited and run again by `eb update` on their shards, merged
    again: the merged run's record was built from the merged report, which holds only the
    current results, so `eb history` showed $0.75 where $0.82 had been paid."""
    root = _paid_project(tmp_path, {"fl": 0.05, "st": 0.02})
    shards = _shard_runs(eb, root, tmp_path, 1, 2)
    _merged(eb, root, tmp_path / "m1", shards)
    (tmp_path / "costs.json").write_text(json.dumps({"fl": 0.5, "st": 0.25}))
    for key in ("fl", "st"):
        (root / f"eval_checks/judge_{key}.yaml").write_text(_judge(key, instructions="Again."))
    for shard in shards:
        updated = eb("update", "--run-dir", shard, "--cwd", str(root))
        assert updated.exit_code == 0, updated.stdout + updated.stderr
    merge = _merged(eb, root, tmp_path / "m2", shards)

    for view in (_history(eb, root), _history(eb, root, "--last", "1")):
        assert [run["run_id"] for run in view["runs"]] == [merge]
        assert view["runs"][0]["cost_usd"] == pytest.approx(0.82)
        assert view["cost_usd"] == pytest.approx(0.82)
        rows = {row["id"]: row["cost_usd"] for row in view["checks"]}
        assert (rows["judge_fl"], rows["judge_st"]) == (pytest.approx(0.55), pytest.approx(0.27))
    assert "Total cost of the 1 run shown: $0.8200" in eb("history", "--cwd", str(root)).stdout


def test_a_shard_run_again_and_merged_again_leaves_the_first_shard_run_paid(
    tmp_path: Path, eb: Eb
) -> None:
    """A shard job run again at the same commit (CI's "re-run job") and merged with the other
    shard: the first merge and its shards were left out of `eb history` whole, and what the
    first run of the shard had paid with them (the window read $0.07 where $0.14 was paid)."""
    root = _paid_project(tmp_path, {"fl": 0.05, "st": 0.02})
    shards = _shard_runs(eb, root, tmp_path, 1, 2)
    _merged(eb, root, tmp_path / "m1", shards)
    # The shard that holds the judges is run again; the other is merged as it was.
    paying = 1 if _judged(shards[0]) > 0 else 2
    (again,) = _shard_runs(eb, root, tmp_path / "again", paying)
    kept = shards[2 - paying]
    merge = _merged(eb, root, tmp_path / "m2", [again, kept])
    paid = _judged(shards[0]) + _judged(shards[1]) + _judged(again)
    assert paid == pytest.approx(0.14)

    view = _history(eb, root)
    assert [run["run_id"] for run in view["runs"]] == [merge]
    assert view["runs"][0]["cost_usd"] == pytest.approx(paid)
    assert view["cost_usd"] == pytest.approx(paid)
    assert f"Total cost of the 1 run shown: ${paid:.4f}" in eb("history", "--cwd", str(root)).stdout
    markdown = eb("history", "--cwd", str(root), "--format", "md").stdout
    assert f"${paid:.4f}" in markdown
    page = tmp_path / "history.html"
    assert eb("history", "--cwd", str(root), "--html", str(page)).exit_code == 0
    assert f"Total cost</dt><dd>${paid:.4f}" in page.read_text()
    # Merged once more, the same shards: nothing was paid, nothing is added.
    _merged(eb, root, tmp_path / "m3", [again, kept])
    assert _history(eb, root)["cost_usd"] == pytest.approx(paid)
