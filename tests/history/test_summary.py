"""`eb history`'s figures from synthetic series of records: flips, streaks, listings, windows."""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from eval_banana.checks.keywords import compile_selector
from eval_banana.core.errors import UsageError
from eval_banana.history.families import family_rows
from eval_banana.history.record import HistoryRecord
from eval_banana.history.show import Asked, ListingName, build_view
from eval_banana.history.since import since_moment
from eval_banana.history.view import CheckRow
from eval_banana.models.config import Selection, Shard
from tests.gitrepo import git, init_repo
from tests.history.synth import check, record
from tests.processes import eb_process


def _asked(**changes: object) -> Asked:
    base = Asked(
        last=30,
        since=None,
        check_ids=[],
        selector=compile_selector(keyword=None, tags=[]),
        listing="all",
        min_flips=2,
    )
    return base._replace(**changes)  # type: ignore[arg-type]


def _series(pattern: str, *, definitions: str | None = None) -> list[HistoryRecord]:
    """One record per letter of `pattern` (P, F, E) for check `c`, definition per run."""
    names = definitions or "a" * len(pattern)
    return [
        record(
            index=i + 1,
            checks=[
                check(check_id="c", outcome=outcome, definition=names[i], duration_ms=100 * (i + 1))
            ],
            commit=f"{i + 1:040x}",
        )
        for i, outcome in enumerate(pattern)
    ]


def _row(
    records: list[HistoryRecord], listing: ListingName = "all", **asked: object
) -> list[CheckRow]:
    view = build_view(
        newest_first=records[::-1],
        total=len(records),
        asked=_asked(listing=listing, **asked),
        folder="h",
    )
    return view.checks


def test_flips_count_on_one_definition_only() -> None:
    (row,) = _row(_series("PFPFP"))
    assert (row.strip, row.flips, row.most_flips_on_one_definition) == ("✓✗✓✗✓", 4, 4)
    assert [r.id for r in _row(_series("PFPFP"), "flaky")] == ["c"]
    # The same outcomes, each change coming with a new definition: no flip at all.
    changed = _series("PFPFP", definitions="abcde")
    (row,) = _row(changed)
    assert (row.flips, row.definitions) == (0, 5)
    assert _row(changed, "flaky") == []
    # Two flips on each of two definitions: flaky at --min-flips 2, not at 3.
    mixed = _series("PFPPFP", definitions="aaabbb")
    assert _row(mixed)[0].flips == 4
    assert [r.id for r in _row(mixed, "flaky", min_flips=2)] == ["c"]
    assert _row(mixed, "flaky", min_flips=3) == []
    # Edited and reverted: a's pass, fail, pass have edits between them, so no flip either.
    reverted = _series("PFFPP", definitions="ababa")
    assert (_row(reverted)[0].flips, _row(reverted)[0].most_flips_on_one_definition) == (0, 0)
    assert _row(_series("PPFPP", definitions="aabba"))[0].flips == 1


def test_early_errors_neither_flip_nor_time() -> None:
    records = _series("PPP")
    records[1] = record(
        index=2,
        checks=[check(check_id="c", outcome="E", duration_ms=1, early_error=True)],
    )
    (row,) = _row(records)
    assert (row.strip, row.flips) == ("✓E✓", 0)
    assert row.median_ms == 200.0  # 100 and 300; the early error's 1 ms is left out


def test_a_run_that_stopped_before_the_check_had_an_outcome_is_no_run_of_it() -> None:
    records = _series("PPPP")
    # Run 2 stopped before c had an outcome; in run 3 c could not start (a real error).
    records[1] = record(
        index=2, checks=[check(check_id="c", outcome="E", early_error=True, not_run=True)]
    )
    records[2] = record(index=3, checks=[check(check_id="c", outcome="E", early_error=True)])
    (row,) = _row(records)
    assert (row.strip, row.runs, row.passed, row.flips) == ("✓·E✓", 3, 2, 0)
    assert row.pass_rate == 2 / 3
    # Its latest outcome is the pass before a run that did not run it.
    (latest,) = _row(records[:2])
    assert (latest.strip, latest.status, latest.failing_since) == ("✓·", "passed", None)


def test_a_family_run_cut_short_by_a_stop_is_part_of_it_or_not_run() -> None:
    """A run that stopped before some of a family's cases is a run of part of it; one that
    stopped before all of them did not run it."""

    def run(index: int, *, ran: int) -> HistoryRecord:
        cases = [
            check(check_id=f"fam[r{n}]", outcome="P" if n < ran else "E", not_run=n >= ran)
            for n in range(4)
        ]
        for case in cases:
            case.family = "fam"
        return record(index=index, checks=cases)

    families = family_rows(runs=[run(1, ran=4), run(2, ran=0), run(3, ran=2)], keep=None)
    (family,) = families
    assert (family.strip, family.cases, family.runs[1]) == ("█·◦", 4, None)
    assert family.runs[2] is not None and family.runs[2].cases == 2


def test_failing_since_and_last_passed() -> None:
    (row,) = _row(_series("PPFEF"))
    assert row.status == "failed"
    assert row.failing_since is not None and row.failing_since.run_id.endswith("00000003")
    assert row.failing_since.commit == f"{3:040x}"
    assert row.last_passed is not None and row.last_passed.run_id.endswith("00000002")
    (never,) = _row(_series("FF"))
    assert never.failing_since is not None and never.last_passed is None
    (passing,) = _row(_series("FP"))
    assert passing.failing_since is None and passing.last_passed is None


def test_failing_since_looks_past_the_window() -> None:
    (row,) = _row(_series("PFFFF"), last=2)
    assert row.strip == "✗✗"
    assert row.failing_since is not None and row.failing_since.run_id.endswith("00000002")


def test_durations_costs_and_rankings() -> None:
    records = [
        record(
            index=i,
            checks=[
                check(check_id="fast", duration_ms=10 * i, cost_usd=0.5),
                check(check_id="slow", duration_ms=1000 * i),
                check(check_id="free", duration_ms=1),
            ],
        )
        for i in range(1, 11)
    ]
    rows = {row.id: row for row in _row(records)}
    assert rows["slow"].median_ms == 5500.0
    assert rows["slow"].p90_ms == pytest.approx(9100.0)
    assert rows["fast"].cost_usd == 5.0 and rows["slow"].cost_usd is None
    assert [row.id for row in _row(records, "slowest")] == ["slow", "fast", "free"]
    assert [row.id for row in _row(records, "costliest")] == ["fast"]


def test_window_last_since_and_filters() -> None:
    records = [
        record(
            index=i,
            checks=[check(check_id="judge_a", tags=["judge"]), check(check_id="script_b")],
        )
        for i in range(1, 6)
    ]
    view = build_view(
        newest_first=records[::-1], total=len(records), asked=_asked(last=2), folder="h"
    )
    assert [run.run_id[-2:] for run in view.runs] == ["04", "05"] and view.records == 5
    since = datetime(2026, 1, 1, 0, 0, 3, tzinfo=UTC)
    view = build_view(
        newest_first=records[::-1], total=len(records), asked=_asked(since=since), folder="h"
    )
    assert len(view.runs) == 3
    assert [r.id for r in _row(records, check_ids=["judge_*"])] == ["judge_a"]
    assert [r.id for r in _row(records, check_ids=["script_b"])] == ["script_b"]
    tagged = compile_selector(keyword=None, tags=["not judge"])
    assert [r.id for r in _row(records, selector=tagged)] == ["script_b"]
    keyword = compile_selector(keyword="JUDGE", tags=[])
    assert [r.id for r in _row(records, selector=keyword)] == ["judge_a"]


def test_check_ids_choose_a_familys_cases_as_eb_run_does() -> None:
    """`qa[*]`, `qa[re*]` and the family's own id choose its cases, as `eb run --check-id`."""
    cases = ["qa[refund]", "qa[ship]", "qa[return]"]
    records = [
        record(index=i, checks=[check(check_id=case_id) for case_id in [*cases, "other"]])
        for i in range(1, 3)
    ]

    def chosen(*check_ids: str) -> list[str]:
        return sorted(row.id for row in _row(records, check_ids=list(check_ids)))

    assert chosen("qa[*]") == sorted(cases)
    assert chosen("qa") == sorted(cases)
    assert chosen("qa[re*]") == ["qa[refund]", "qa[return]"]
    assert chosen("qa[ship]", "other") == ["other", "qa[ship]"]
    assert chosen("q*") == sorted(cases)  # a glob on the family's id
    assert chosen("qa[nope]") == []


def test_merged_shards_are_counted_once() -> None:
    shard_1 = record(index=1, checks=[check(check_id="a")])
    shard_2 = record(index=2, checks=[check(check_id="b")])
    merged = record(index=3, checks=[check(check_id="a"), check(check_id="b")])
    merged = merged.model_copy(
        update={"kind": "merge", "merged_from": [shard_1.run_id, shard_2.run_id]}
    )
    view = build_view(newest_first=[merged, shard_2, shard_1], total=3, asked=_asked(), folder="h")
    assert [run.kind for run in view.runs] == ["merge"]
    assert {row.id: row.strip for row in view.checks} == {"a": "✓", "b": "✓"}


def _renamed(
    one: HistoryRecord, *, run_id: str, shard: int | None = None, merged_from: tuple[str, ...] = ()
) -> HistoryRecord:
    """`one` as run `run_id`: shard `shard` of 2, or the merge of `merged_from`."""
    selection = Selection(shard=None if shard is None else Shard(index=shard, total=2))
    kind = "merge" if merged_from else "run"
    changes = {
        "run_id": run_id,
        "selection": selection,
        "kind": kind,
        "merged_from": list(merged_from),
    }
    return one.model_copy(update=changes)


@pytest.mark.parametrize("merge_sorts_first", [True, False])
def test_a_merge_older_than_the_window_stands_for_its_shards(merge_sorts_first: bool) -> None:
    """Its first shard sorts beside it (either side: they share a start), its later shards
    newer than it; the "since" notes name the merge whatever the window."""
    a_fails, b_passes = check(check_id="a", outcome="F"), check(check_id="b")
    before = record(index=1, checks=[check(check_id="a"), b_passes])
    shard_1 = _renamed(record(index=2, checks=[a_fails]), run_id="s1", shard=1)
    merged = _renamed(
        record(index=2, checks=[a_fails, b_passes]), run_id="m", merged_from=("s1", "s2")
    )
    shard_2 = _renamed(record(index=3, checks=[b_passes]), run_id="s2", shard=2)
    latest = record(index=4, checks=[a_fails, check(check_id="b", outcome="F")])
    pair = [merged, shard_1] if merge_sorts_first else [shard_1, merged]
    for last in (1, 2, 30):
        view = build_view(
            newest_first=[latest, shard_2, *pair, before],
            total=5,
            asked=_asked(last=last),
            folder="h",
        )
        a, b = view.checks
        assert a.failing_since is not None and a.failing_since.run_id == "m", last
        assert a.last_passed is not None and a.last_passed.run_id == before.run_id, last
        assert b.last_passed is not None and b.last_passed.run_id == "m", last


def test_since_takes_dates_and_refuses_what_is_neither(tmp_path: object) -> None:
    assert since_moment(text="2026-03-01", root="/") == datetime(2026, 3, 1, tzinfo=UTC)
    assert since_moment(text="2026-03-01T12:00:00+02:00", root="/").hour == 12
    with pytest.raises(UsageError, match="not a valid date"):
        since_moment(text="2026-13-45", root="/")


def test_since_a_revision_git_refuses_to_read_says_what_git_said(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "proj", {".eval-banana/config.toml": ""})
    refusing = {**os.environ, "GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"}  # git's own test switch
    result = eb_process(root, "history", "--since", "HEAD", env=refusing)
    assert result.returncode == 2
    assert "git cannot resolve it as a revision: git rev-parse in " in result.stderr
    assert "fatal: detected dubious ownership" in result.stderr
    assert "not in a git work tree" not in result.stderr


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="signing needs ssh-keygen")
def test_since_a_signed_commit_reads_its_time_whatever_log_show_signature_says(
    tmp_path: Path,
) -> None:
    root = init_repo(tmp_path / "proj", {".eval-banana/config.toml": ""})
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    for name, value in (("gpg.format", "ssh"), ("user.signingkey", f"{key}.pub")):
        git(root, "config", name, value)
    git(root, "-c", "commit.gpgsign=true", "commit", "-q", "--allow-empty", "-m", "signed")
    git(root, "config", "log.showSignature", "true")  # git now prints "No signature" first
    committed = git(root, "show", "-s", "--no-show-signature", "--format=%cI", "HEAD").strip()
    assert since_moment(text="HEAD", root=str(root)) == datetime.fromisoformat(committed)


def test_older_records_are_read_only_for_the_checks_failing_in_the_window() -> None:
    from eval_banana.history.read import Focus

    records = [
        record(index=i, checks=[check(check_id="ok"), check(check_id="bad", outcome="PFFF"[i - 1])])
        for i in range(1, 5)
    ]
    focus = Focus()
    seen: list[frozenset[str] | None] = []

    def newest_first() -> Any:
        for one in records[::-1]:
            seen.append(focus.ids)
            yield one

    view = build_view(
        newest_first=newest_first(), total=4, asked=_asked(last=2), folder="h", focus=focus
    )
    assert seen[:2] == [None, None]  # the window: every check
    assert set(seen[2:]) == {frozenset({"bad"})}  # before it: only the failing check
    row = next(row for row in view.checks if row.id == "bad")
    assert row.failing_since is not None and row.failing_since.run_id.endswith("00000002")
