"""The subset's arithmetic: how many cases a share keeps, and which ones."""

from __future__ import annotations

import pytest

from eval_banana.checks.subset import Member, parse_subset, subset_positions, subset_size
from eval_banana.models.config import CaseSubset


@pytest.mark.parametrize(
    ("percent", "cases", "kept"),
    [(10, 30, 3), (10, 31, 4), (0.1, 5, 1), (100, 7, 7), (33.3, 1000, 333), (12.5, 8, 1)],
)
def test_a_share_is_rounded_up_to_whole_cases_and_never_past_a_float_bit(
    percent: float, cases: int, kept: int
) -> None:
    assert subset_size(subset=CaseSubset(percent=percent), cases=cases) == kept


def test_subsets_of_one_seed_nest_and_every_family_is_cut_alone() -> None:
    members = [Member(family="a", check_id=f"a[{n}]") for n in range(200)]
    members += [Member(family="b", check_id=f"b[{n}]") for n in range(5)]
    members.insert(50, Member(family=None, check_id="plain"))
    members.insert(60, Member(family="a", check_id="a[skipped]", skipped=True))
    previous: set[int] = set()
    for count in (1, 5, 20, 100, 200):
        kept = subset_positions(members=members, subset=CaseSubset(count=count))
        assert kept == sorted(kept)  # the members' own order
        chosen = [members[at] for at in kept]
        assert sum(member.family == "a" for member in chosen) == count
        assert sum(member.family == "b" for member in chosen) == min(count, 5)
        assert Member(family=None, check_id="plain") in chosen
        assert not any(member.skipped for member in chosen)
        assert previous <= set(kept)
        previous = set(kept)


def test_parse_reads_a_count_a_share_and_a_seed() -> None:
    assert parse_subset(text=" 20 ", seed_text=None) == CaseSubset(count=20)
    assert parse_subset(text="12.5%", seed_text="3") == CaseSubset(percent=12.5, seed=3)
