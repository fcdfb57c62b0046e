"""What judges cost, as eb counts, stores and shows it: a real `eb run` of judges whose agent
(a claude-dialect script) reports the usage and cost its instructions tell it to."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from eval_banana.harness.usage import read_usage, summed_usage, usage_totals
from tests.processes import REPO, eb_process

# The agent prints one result event; a `report: ...` line in the check's instructions holds the
# text of its fields after the verdict (`"total_cost_usd": 4e-7`), written as is.
AGENT = """\
import json, sys
prompt = sys.argv[-1]
fields = next(line.split("report:", 1)[1] for line in prompt.splitlines() if "report:" in line)
verdict = json.dumps(json.dumps({"score": 1, "reason": "r"}))
print('{"type":"result","subtype":"success","is_error":false,"result":%s,%s}' % (verdict, fields))
"""

CONFIG = """\
[harness]
agent = "stand"

[agents.stand]
command = [{python}, "{agent}"]
model_flag = ""
output_dialect = "claude"
"""


def judge_yaml(check_id: str, *, fields: str, repeats: int = 1) -> str:
    more = f"repeats: {repeats}\n" if repeats > 1 else ""
    return (
        f"schema_version: 1\nid: {check_id}\ntype: harness_judge\ndescription: d\n"
        f"instructions: |\n  Judge it.\n  report: {fields}\n{more}"
    )


def make_project(root: Path, judges: dict[str, str], *, config: str = "") -> Path:
    """A project whose judges (id -> their check file's text) run the reporting agent."""
    (root / ".eval-banana").mkdir(parents=True)
    (root / "agent.py").write_text(AGENT)
    text = CONFIG.format(python=json.dumps(sys.executable), agent=root / "agent.py")
    (root / ".eval-banana" / "config.toml").write_text(text + config)
    (root / "eval_checks").mkdir()
    for check_id, check in judges.items():
        (root / "eval_checks" / f"{check_id}.yaml").write_text(check)
    return root


def eb(root: Path, *args: str) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EVAL_BANANA_"))}
    env["PYTHONPATH"] = str(REPO)
    return eb_process(root, *args, env=env)


def _newest(root: Path, name: str) -> Path:
    # Run ids sort by their second only: two runs of one second are told apart by when written.
    found = (root / ".eval-banana" / "results").glob(f"2*/{name}")
    return max(found, key=lambda path: path.stat().st_mtime_ns)


def newest_report(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_newest(root, "report.json").read_text(encoding="utf-8"))
    return data


def newest_report_md(root: Path) -> str:
    return _newest(root, "report.md").read_text(encoding="utf-8")


# --- tiny costs keep their digits ---------------------------------------------------------------


def test_tiny_costs_are_summed_exactly_and_stored_unrounded() -> None:
    claude = {"dialect": "claude", "total_tokens": 15}
    assert summed_usage([{**claude, "cost_usd": 3e-7}, {**claude, "cost_usd": 3e-7}]) == {
        "dialect": "claude",
        "total_tokens": 30,
        "cost_usd": 6e-7,
    }
    totals = usage_totals([{**claude, "cost_usd": 4e-7}])
    assert totals is not None and totals["cost_usd"] == 4e-7
    # Ten thousand judges at a tenth of a cent: the sum as written, not ten float errors off.
    many = usage_totals([{**claude, "cost_usd": 0.001}] * 10_000)
    assert many is not None and many["cost_usd"] == 10.0


def test_a_judge_that_cost_a_fraction_of_a_cent_never_reads_free(tmp_path: Path) -> None:
    fields = '"usage":{"input_tokens":10,"output_tokens":5},"total_cost_usd":4e-7'
    root = make_project(tmp_path / "p", {"a": judge_yaml("a", fields=fields)})
    run = eb(root, "run")
    assert run.returncode == 0, run.stderr
    line = "Judge usage: 15 tokens (10 in, 5 out), $0.00000040, as reported by 1 judge"
    assert line in run.stdout + run.stderr
    assert line + "." in newest_report_md(root)
    report = newest_report(root)
    assert report["judge_usage"]["cost_usd"] == 4e-7
    history = eb(root, "history", "--json")
    assert history.returncode == 0, history.stderr
    view = json.loads(history.stdout)
    assert view["runs"][0]["cost_usd"] == 4e-7 and view["checks"][0]["cost_usd"] == 4e-7
    shown = eb(root, "history")
    rows = [row for row in shown.stdout.splitlines() if row.startswith(("2", "a "))]
    assert len(rows) == 2 and all("$0.00000040" in row for row in rows), shown.stdout


def test_the_samples_of_a_judge_add_up_to_what_they_cost(tmp_path: Path) -> None:
    fields = '"usage":{"input_tokens":10,"output_tokens":5},"total_cost_usd":3e-7'
    root = make_project(tmp_path / "p", {"a": judge_yaml("a", fields=fields, repeats=2)})
    run = eb(root, "run")
    assert run.returncode == 0, run.stderr
    (check,) = newest_report(root)["checks"]
    assert check["details"]["usage"]["cost_usd"] == 6e-7
    assert "$0.00000060, as reported by 1 judge" in run.stdout + run.stderr


# --- a cost the fuse can count, and one it cannot -----------------------------------------------


def test_a_cost_is_read_without_the_tokens_and_what_does_not_read_is_kept_as_written() -> None:
    def read(event: dict[str, Any]) -> dict[str, Any] | None:
        return read_usage(dialect="claude", usage_event=event, stderr_path=None)

    assert read({"type": "result", "total_cost_usd": 0.6}) == {"dialect": "claude", "cost_usd": 0.6}
    tokens = {"input_tokens": 10, "output_tokens": 5}
    assert read({"usage": tokens, "total_cost_usd": "0.6"}) == {
        "dialect": "claude",
        "input_tokens": 10,
        "output_tokens": 5,
        "total_tokens": 15,
        "unreadable": {"total_cost_usd": '"0.6"'},
    }
    assert read({"usage": {"input_tokens": -1, "output_tokens": 5}, "total_cost_usd": 0.25}) == {
        "dialect": "claude",
        "cost_usd": 0.25,
        "unreadable": {"usage.input_tokens": "-1"},
    }
    # null says nothing was counted: no report, and nothing to warn of.
    assert read({"usage": None, "total_cost_usd": None}) is None
    only_unread = read({"total_cost_usd": float("nan")})
    assert only_unread == {"dialect": "claude", "unreadable": {"total_cost_usd": "NaN"}}
    # A judge whose usage holds nothing readable is in no total.
    assert usage_totals([only_unread]) is None


def test_the_cost_fuse_counts_a_cost_reported_without_token_usage(tmp_path: Path) -> None:
    fields = '"total_cost_usd":0.6'
    judges = {f"j{n}": judge_yaml(f"j{n}", fields=fields) for n in range(4)}
    root = make_project(tmp_path / "p", judges)
    run = eb(root, "run", "--cost-fuse-usd", "1", "--max-parallel-checks", "1")
    assert run.returncode == 3, run.stderr
    report = newest_report(root)
    assert report["aborted_by"] == "cost_fuse"
    assert report["judge_usage"]["cost_usd"] == 1.2 and report["judge_usage"]["judges"] == 2
    assert "Judge usage: $1.2000, as reported by 2 judges" in run.stdout + run.stderr


def test_a_cost_that_does_not_read_is_warned_of_and_the_fuse_says_it_did_not_count_it(
    tmp_path: Path,
) -> None:
    fields = '"usage":{"input_tokens":10,"output_tokens":5},"total_cost_usd":"0.6"'
    root = make_project(tmp_path / "p", {"s": judge_yaml("s", fields=fields)})
    run = eb(root, "run", "--cost-fuse-usd", "1")
    # The fuse cannot count it, so never trips on it (as the token fuse on unseen usage).
    assert run.returncode == 0, run.stderr
    said = (
        "Judge check 's' reported total_cost_usd \"0.6\", which is no amount of dollars (a "
        "JSON number from 0 to 1e+09): no total holds its cost; the cost fuse could not count it"
    )
    assert f"warning: {said}" in run.stderr
    report = newest_report(root)
    (warning,) = report["warnings"]
    assert warning["message"] == said and warning["file"] == report["checks"][0]["source_path"]
    assert report["judge_usage"]["cost_usd"] is None
    # Without a fuse it is still said: no report shows that judge's cost.
    plain = eb(root, "run")
    assert plain.returncode == 0, plain.stderr
    (warning,) = newest_report(root)["warnings"]
    assert warning["message"].endswith("no total holds its cost")


def test_with_a_cost_fuse_a_judge_that_reports_no_cost_is_said_to_be_uncounted(
    tmp_path: Path,
) -> None:
    fields = '"usage":{"input_tokens":10,"output_tokens":5}'
    root = make_project(tmp_path / "p", {"n": judge_yaml("n", fields=fields)})
    run = eb(root, "run", "--cost-fuse-usd", "1")
    assert run.returncode == 0, run.stderr
    assert "Judge check 'n' reported no cost; the cost fuse could not count it" in run.stderr
    assert eb(root, "run").stderr.count("warning:") == 0  # without a cost fuse: nothing to say


def test_token_counts_that_do_not_read_are_named(tmp_path: Path) -> None:
    fields = '"usage":{"input_tokens":-5,"output_tokens":5},"total_cost_usd":0.1'
    root = make_project(tmp_path / "p", {"t": judge_yaml("t", fields=fields)})
    run = eb(root, "run", "--token-fuse", "1000")
    assert run.returncode == 0, run.stderr
    assert (
        "Judge check 't' reported token usage that is no count (a JSON whole number, 0 or "
        "more): usage.input_tokens -5; no total holds its tokens; the token fuse could not "
        "count it"
    ) in run.stderr
    assert newest_report(root)["judge_usage"]["cost_usd"] == 0.1


# --- what a judge the cache answers is expected to cost ---------------------------------------


def test_a_judge_the_cache_answered_keeps_its_expected_cost_as_its_duration(
    tmp_path: Path,
) -> None:
    """`eb plan` reads the newest 30 runs: once they all reused a judge's verdict, it knew the
    judge's duration (the run that made the verdict's) but no longer its cost. The reused
    verdict now carries that run's cost too."""
    from eval_banana.history.durations import expected_costs, expected_durations
    from eval_banana.history.read import load_records

    fields = '"usage":{"input_tokens":100,"output_tokens":50},"total_cost_usd":0.25'
    root = make_project(
        tmp_path / "p", {"j1": judge_yaml("j1", fields=fields)}, config='[cache]\nmode = "on"\n'
    )
    assert eb(root, "run").returncode == 0
    again = eb(root, "run")
    assert again.returncode == 0, again.stderr
    (reused,) = newest_report(root)["checks"]
    assert reused["details"]["cache"]["hit"] is True
    assert reused["details"]["cache"]["from_run_cost_usd"] == 0.25
    assert reused["details"]["usage"] is None  # nothing was spent on it in this run
    # Only the runs that reused it are left in the window (as after 30 reuses).
    history = root / ".eval-banana" / "history"
    first, second = sorted(history.glob("*.json"), key=lambda path: path.stat().st_mtime_ns)
    first.unlink()
    record = json.loads(second.read_text(encoding="utf-8"))
    (entry,) = record["checks"]
    assert entry["cached"] is True and entry["verdict_cost_usd"] == 0.25
    assert entry.get("cost_usd") is None and record["cost_usd"] is None

    plan = eb(root, "plan", "--json")
    assert plan.returncode == 0, plan.stderr
    document = json.loads(plan.stdout)
    (check,) = document["checks"]
    assert check["expected_cost_usd"] == 0.25 and check["expected_seconds"] is not None
    assert document["expected_cost_usd"] == 0.25
    records = load_records(folder=history)
    digests = {"j1": entry["digest"]}
    assert expected_costs(records=records, digests=digests) == {"j1": 0.25}
    assert set(expected_durations(records=records, digests=digests)) == {"j1"}


def test_an_absurd_cost_is_shown_compactly(tmp_path: Path) -> None:
    # 5e8 dollars: an agent's unit error, written out in digits on every line showing it.
    fields = '"usage":{"input_tokens":1,"output_tokens":1},"total_cost_usd":5e8'
    root = make_project(tmp_path / "p", {"a": judge_yaml("a", fields=fields)})
    run = eb(root, "run")
    assert run.returncode == 0, run.stderr
    line = "Judge usage: 2 tokens (1 in, 1 out), $5e+08, as reported by 1 judge"
    assert line in run.stdout + run.stderr and line + "." in newest_report_md(root)
    assert newest_report(root)["judge_usage"]["cost_usd"] == 5e8  # stored as reported
    shown = eb(root, "history").stdout.splitlines()
    rows = [row for row in shown if row.startswith(("2", "a "))]
    assert len(rows) == 2 and all(row.rstrip().endswith("$5e+08") for row in rows), shown
    assert max(len(row) for row in rows) < 100


def test_a_cost_past_the_ceiling_is_no_amount_and_never_crashes_a_run(tmp_path: Path) -> None:
    # Two judges reporting 1e308 dollars (finite, 0 or more) added up to an infinity: `eb run`
    # died writing the execute stage (no JSON holds it) and left no report.
    fields = '"usage":{"input_tokens":1,"output_tokens":1},"total_cost_usd":1e308'
    judges = {n: judge_yaml(n, fields=fields) for n in ("a", "b")}
    root = make_project(
        tmp_path / "p", {**judges, "c": judge_yaml("c", fields=fields[:-5] + "0.25")}
    )
    run = eb(root, "run")
    assert run.returncode == 0, run.stderr
    said = "reported total_cost_usd 1e+308, which is no amount of dollars (a JSON number from 0"
    assert run.stderr.count(said) == 2
    report = newest_report(root)
    assert report["judge_usage"]["cost_usd"] == 0.25 and len(report["warnings"]) == 2
    assert eb(root, "history").returncode == 0
