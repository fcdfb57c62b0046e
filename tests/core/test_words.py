"""Counts and sizes as eb's messages say them."""

from __future__ import annotations

import pytest

from eval_banana.core.words import first_and_count


@pytest.mark.parametrize(
    ("size", "told"),
    [
        (0, "0 bytes"),
        (1, "1 byte"),
        (1023, "1023 bytes"),
        (1024, "1.0 KiB"),
        (3_500, "3.4 KiB"),
        (86_276_486, "82.3 MiB"),
        (5 << 30, "5.00 GiB"),
    ],
)
def test_sizes_are_told_in_the_units_max_mb_counts_in(size: int, told: str) -> None:
    from eval_banana.core.words import size_text

    assert size_text(size) == told


def test_a_long_list_is_named_in_part_and_the_rest_counted_with_separators() -> None:
    ids = [f"qa[{n}]" for n in range(10_000)]
    assert first_and_count(ids, shown=2) == "qa[0], qa[1] and 9,998 more"
    assert first_and_count(ids[:2], shown=2) == "qa[0], qa[1]"
    assert first_and_count([], shown=3) == ""
