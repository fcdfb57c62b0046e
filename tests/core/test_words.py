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


@pytest.mark.parametrize(
    ("ratio", "places", "bounds", "told"),
    [
        (0.75, 1, (), "75.0%"),
        (1.0, 1, (), "100.0%"),
        (0.0, 1, (), "0.0%"),
        (9_999 / 10_000, 1, (), "99.99%"),  # one failure is not 100.0 %
        (99_999 / 100_000, 1, (), "99.999%"),
        (1 / 100_000, 1, (), "0.001%"),  # one pass is not 0.0 %
        (200 / 201, 0, (), "99.5%"),  # `eb history`'s whole percents
        (0.5, 0, (), "50%"),
        (8_999 / 10_000, 1, (0.9,), "89.99%"),  # under the gate: never the gate's 90.0 %
        (0.9, 1, (0.9,), "90.0%"),  # on the gate, which holds there
        (2 / 3, 1, (0.667,), "66.67%"),
        (0.95, 1, (0.9,), "95.0%"),
    ],
)
def test_a_rate_reads_on_the_side_of_0_100_and_its_gate_that_it_is(
    ratio: float, places: int, bounds: tuple[float, ...], told: str
) -> None:
    from eval_banana.core.words import percent_text

    assert percent_text(ratio, places=places, bounds=bounds) == told


@pytest.mark.parametrize(
    ("cost", "told"),
    [
        (0.0, "$0.0000"),  # free is free
        (0.021, "$0.0210"),  # to the hundredth of a cent
        (1.5, "$1.5000"),
        (0.00135, "$0.0014"),
        (0.00004, "$0.000040"),  # a paid judge never reads as free
        (0.00007, "$0.000070"),  # the sum of 0.00004 and 0.00003, not $0.0001
        (0.0001, "$0.00010"),
        (0.000995, "$0.0010"),
        (5e-11, "$0.0000000001"),
        (1e-12, "<$0.0000000001"),
        (999_999.99, "$999999.9900"),
        (1_234_567.0, "$1.23e+06"),  # an agent's unit error, told compactly
        (1e300, "$1e+300"),  # not 301 digits on every line that shows it
    ],
)
def test_a_cost_shows_two_figures_and_never_reads_as_free(cost: float, told: str) -> None:
    from eval_banana.core.words import dollars_text

    assert dollars_text(cost) == told


@pytest.mark.parametrize(
    "char", ["\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F)), "\u2066", "\u2069"]
)
def test_a_bidirectional_control_is_shown_as_its_escape(char: str) -> None:
    # One in a judge's reason reordered the rest of the line it was printed on.
    from eval_banana.core.words import one_line, visible, visible_lines

    escape = f"\\u{ord(char):04x}"
    assert visible(f"a{char}b") == f"a{escape}b"
    assert one_line(f"a{char}b\nc") == f"a{escape}b c"
    assert visible_lines(f"a{char}b\nc") == f"a{escape}b\nc"
    assert visible("\x85\x1b\udcff") == "\\x85\\x1b\\xff"  # C1, C0, a byte not UTF-8 as before
