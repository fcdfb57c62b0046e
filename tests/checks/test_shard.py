"""`--shard K/N`: which checks a shard runs, what its run folder records, and empty shards."""

from __future__ import annotations

import itertools
import json
import string
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eval_banana.checks.shard import parse_shard, selection_digest, shard_of, split_counts
from eval_banana.checks.shardenv import AUTO_VARIABLES
from eval_banana.core.errors import UsageError
from eval_banana.models.config import Shard
from tests.builders import planned_inline
from tests.conftest import EbResult, check_yaml

IDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=24)


def _project(make: Callable[..., Path], count: int, **extra: str) -> Path:
    files = {
        f"eval_checks/c{index:02d}.yaml": check_yaml(f"c{index:02d}") for index in range(count)
    }
    files.update(extra)
    return make(files, config='[core]\noutput_dir = "runs"\n')


def _listed(eb: Callable[..., EbResult], root: Path, *args: str) -> list[str]:
    result = eb("list", "--cwd", str(root), *args)
    assert result.exit_code == 0, result.stderr
    return [line.split("\t")[0] for line in result.stdout.splitlines()]


@pytest.mark.parametrize(
    ("text", "expected"), [("2/4", Shard(index=2, total=4)), (" 1 / 1 ", Shard(index=1, total=1))]
)
def test_parse_k_of_n(text: str, expected: Shard) -> None:
    assert parse_shard(text=text, environ={}) == expected


def test_n_past_any_ci_matrix_is_a_usage_error_before_anything_is_sized_by_it() -> None:
    assert parse_shard(text="10000/10000", environ={}) == Shard(index=10_000, total=10_000)
    with pytest.raises(UsageError, match="N can be at most 10,000"):
        parse_shard(text="1/1000000000", environ={})
    # More digits than Python's int() reads: still told as too large, and the value is cut.
    with pytest.raises(UsageError, match="N can be at most 10,000") as caught:
        parse_shard(text="1/" + "9" * 5000, environ={})
    assert len(caught.value.message) < 200


@pytest.mark.parametrize("text", ["\u00b2/4", "1/\u0663", "1/4\u00b2"])
def test_digits_that_are_not_ascii_are_no_whole_number(text: str) -> None:
    """'²' and other scripts' digits pass str.isdigit(), and int() refused or read them."""
    with pytest.raises(UsageError, match="is not a whole number"):
        parse_shard(text=text, environ={})
    with pytest.raises(UsageError, match="CI_NODE_INDEX='\u00b2' is not a whole number"):
        parse_shard(text="auto", environ={"CI_NODE_INDEX": "\u00b2", "CI_NODE_TOTAL": "4"})


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "-1/4", "a/4", "2", "2/4/6", "", "1.5/4"])
def test_k_outside_one_to_n_or_malformed_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="--shard"):
        parse_shard(text=text, environ={})


def test_auto_reads_gitlab_node_index_and_total() -> None:
    environ = {"CI_NODE_INDEX": "3", "CI_NODE_TOTAL": "5"}
    assert parse_shard(text="auto", environ=environ) == Shard(
        index=3, total=5, variables=["CI_NODE_INDEX", "CI_NODE_TOTAL"]
    )
    with pytest.raises(UsageError, match="CI_NODE_INDEX is set but CI_NODE_TOTAL is not"):
        parse_shard(text="auto", environ={"CI_NODE_INDEX": "3"})
    with pytest.raises(UsageError, match="must lie between 1 and 5"):
        parse_shard(text="auto", environ={"CI_NODE_INDEX": "6", "CI_NODE_TOTAL": "5"})


@given(ids=st.lists(IDS, unique=True, max_size=40), extra=IDS, total=st.integers(1, 16))
def test_adding_or_removing_a_check_moves_no_other_check(
    ids: list[str], extra: str, total: int
) -> None:
    before = {check_id: shard_of(check_id=check_id, total=total) for check_id in ids}
    after = {check_id: shard_of(check_id=check_id, total=total) for check_id in [*ids, extra]}
    assert all(after[check_id] == shard for check_id, shard in before.items())
    assert all(1 <= shard <= total for shard in after.values())


def test_ids_without_a_family_split_like_a_fair_die() -> None:
    named = ["".join(letters) for letters in itertools.product(string.ascii_lowercase, repeat=3)]
    counts = split_counts(check_ids=named, total=8)
    assert sum(counts) == len(named) == 17_576
    # No digits, so a hash alone: within four standard deviations of an even share.
    even = len(named) / 8
    assert max(abs(count - even) for count in counts) < 4 * (even * 7 / 8) ** 0.5


@pytest.mark.parametrize("total", [2, 3, 5, 7, 8, 10, 16])
@pytest.mark.parametrize("stride", [1, 2, 5, 10])
def test_a_numbered_family_is_dealt_round_the_shards_evenly(stride: int, total: int) -> None:
    family = [f"summarize_{index * stride:04d}_judge" for index in range(1_000)]
    counts = split_counts(check_ids=family, total=total)
    # A hash of each id would stray by some sqrt(1000 / N); the family stays within 8 checks.
    assert max(counts) - min(counts) <= 8, counts


def test_the_benchmark_shaped_ids_split_within_a_check_or_two_of_even() -> None:
    counts = split_counts(check_ids=[f"check_{index:05d}" for index in range(10_000)], total=8)
    assert sum(counts) == 10_000
    assert max(abs(count - 1_250) for count in counts) <= 3, counts


def test_families_are_placed_apart_from_each_other() -> None:
    # Two families numbered alike do not share their slices: each has its own starting point.
    first = [shard_of(check_id=f"alpha_{index}", total=8) for index in range(40)]
    second = [shard_of(check_id=f"beta_{index}", total=8) for index in range(40)]
    assert first != second
    assert shard_of(check_id="case_007", total=8) == shard_of(check_id="case_7", total=8)


def test_selection_digest_names_paths_relative_to_the_project_root() -> None:
    def plan(root: str) -> list[object]:
        return [
            planned_inline(id=name, script="pass", project_root=Path(root)) for name in ("a", "b")
        ]

    here = selection_digest(checks=plan("/ci/job-1/repo"), project_root="/ci/job-1/repo")
    there = selection_digest(checks=plan("/home/me/repo"), project_root="/home/me/repo")
    assert here == there
    reordered = selection_digest(
        checks=list(reversed(plan("/home/me/repo"))), project_root="/home/me/repo"
    )
    assert reordered == here
    fewer = selection_digest(checks=plan("/home/me/repo")[:1], project_root="/home/me/repo")
    assert fewer != here


def test_shards_partition_the_selection_and_stay_put_when_a_check_is_added(
    eb: Callable[..., EbResult], project: Callable[..., Path]
) -> None:
    root = _project(project, 20)
    every = _listed(eb, root)
    slices = [_listed(eb, root, "--shard", f"{k}/4") for k in range(1, 5)]
    assert sorted(sum(slices, [])) == sorted(every)  # each check in exactly one shard
    (root / "eval_checks" / "zz_new.yaml").write_text(check_yaml("zz_new"))
    again = [_listed(eb, root, "--shard", f"{k}/4") for k in range(1, 5)]
    for before, after in zip(slices, again, strict=True):
        assert set(before) <= set(after)
    assert sum(len(s) for s in again) == 21
    # Shard selection comes after the other filters: --check-id first, then its slice.
    tagged = _listed(eb, root, "--check-id", "c03", "--check-id", "c07")
    assert sorted(
        sum(
            (
                _listed(eb, root, "--check-id", "c03", "--check-id", "c07", "--shard", f"{k}/2")
                for k in (1, 2)
            ),
            [],
        )
    ) == sorted(tagged)


def test_shard_run_records_the_shard_and_the_whole_selection(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    root = _project(project, 12)
    digests = set()
    total = 0
    for k in (1, 2, 3):
        run_dir = tmp_path / f"s{k}"
        result = eb(
            "run",
            "--cwd",
            str(root),
            "--shard",
            f"{k}/3",
            "--output-dir",
            str(run_dir),
            "--flat-output",
        )
        assert result.exit_code == 0, result.stderr
        config = json.loads((run_dir / "stages" / "config.json").read_text())
        plan = json.loads((run_dir / "stages" / "plan.json").read_text())
        report = json.loads((run_dir / "report.json").read_text())
        shard = {"index": k, "total": 3, "balance": "hash", "history_digest": None, "variables": []}
        assert config["selection"]["shard"] == shard
        assert report["shard"] == shard
        assert plan["selected_checks"] == 12
        assert [c["id"] for c in plan["checks"]] == [c["check_id"] for c in report["checks"]]
        assert all(shard_of(check_id=c["id"], total=3) == k for c in plan["checks"])
        digests.add(plan["selection_digest"])
        total += report["total_checks"]
    assert total == 12 and len(digests) == 1
    # An ordinary run of the same selection records the same digest: it is the plan's.
    whole = tmp_path / "whole"
    assert eb("run", "--cwd", str(root), "--output-dir", str(whole), "--flat-output").exit_code == 0
    assert json.loads((whole / "stages" / "plan.json").read_text())["selection_digest"] in digests


def test_an_empty_shard_passes_with_zero_checks_and_says_so(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    root = _project(project, 1)  # one check, three shards: two of them get nothing
    owner = shard_of(check_id="c00", total=3)
    empty = next(k for k in (1, 2, 3) if k != owner)
    run_dir = tmp_path / "empty"
    result = eb(
        "run",
        "--cwd",
        str(root),
        "--shard",
        f"{empty}/3",
        "--output-dir",
        str(run_dir),
        "--flat-output",
        "--junit-xml",
        str(tmp_path / "junit.xml"),
    )
    assert result.exit_code == 0, result.stderr
    reason = f"shard {empty}/3 received none of the 1 selected check"
    assert f"No checks ran: {reason}" in result.stdout
    report = json.loads((run_dir / "report.json").read_text())
    assert report["total_checks"] == 0 and report["run_passed"] is True
    assert report["allow_empty"] == reason
    assert f"No checks ran: {reason}." in (run_dir / "report.md").read_text()
    assert "PASSED" in (run_dir / "report.html").read_text()
    assert (tmp_path / "junit.xml").is_file()
    status = eb("status", "--run-dir", str(run_dir))
    assert status.exit_code == 0, status.stdout


def test_an_ordinary_empty_selection_is_still_no_checks_found(
    eb: Callable[..., EbResult], project: Callable[..., Path]
) -> None:
    root = project({"README.md": "no checks here\n"}, config="")
    result = eb("run", "--cwd", str(root), "--shard", "1/3")
    assert result.exit_code == 2
    assert "No checks found" in result.stderr
    plain = eb("run", "--cwd", str(root))
    assert plain.exit_code == 2 and "No checks found" in plain.stderr


def test_shard_flags_are_usage_errors_before_anything_runs(
    eb: Callable[..., EbResult], project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(project, 2)
    for name in AUTO_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for flag in ("5/4", "auto", "x"):
        result = eb("run", "--cwd", str(root), "--shard", flag)
        assert result.exit_code == 2, flag
        assert "--shard" in result.stderr
    assert not (root / "runs").exists()
    monkeypatch.setenv("CI_NODE_INDEX", "1")
    monkeypatch.setenv("CI_NODE_TOTAL", "1")
    result = eb("run", "--cwd", str(root), "--shard", "auto")
    assert result.exit_code == 0, result.stderr
    assert "Score: 2/2" in result.stdout


def test_a_stage_rerun_of_a_shard_keeps_to_its_slice(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    root = _project(project, 10)
    run_dir = tmp_path / "s1"
    assert (
        eb(
            "run",
            "--cwd",
            str(root),
            "--shard",
            "1/2",
            "--output-dir",
            str(run_dir),
            "--flat-output",
        ).exit_code
        == 0
    )
    planned = json.loads((run_dir / "stages" / "plan.json").read_text())["checks"]
    result = eb("stage", "execute", "--run-dir", str(run_dir), "--cwd", str(root), "--shard", "1/2")
    assert result.exit_code == 0, result.stderr
    executed = json.loads((run_dir / "stages" / "execute.json").read_text())["results"]
    assert [r["check_id"] for r in executed] == [c["id"] for c in planned]
