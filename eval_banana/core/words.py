"""Counts as a sentence says them: `1 check`, `2 checks`, never `2 check(s)`; sizes as a person
reads them: `82.3 MiB`, not `86276486 bytes`."""

from __future__ import annotations

import re
from collections.abc import Sequence


def plural(*, count: int, noun: str, nouns: str | None = None) -> str:
    """`count` with its noun, plural unless the count is one; `nouns` for a plural that is not
    the noun and an s (`entries`)."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {nouns if nouns is not None else noun + 's'}"


_UNITS = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))
# Enough places to tell any rate of a family within `[core] max_cases` from its neighbours.
_MOST_PLACES = 6


def percent_text(ratio: float, *, places: int = 1, bounds: Sequence[float] = ()) -> str:
    """`ratio` (0 to 1) as a percentage with `places` decimals, or with as many more as it takes
    to read as what it is: above 0 % when it is, below 100 % when it is, and below each of
    `bounds` (a gate, which holds at or above it) when it is. 9,999 passed of 10,000 reads
    `99.99%`, never `100.0%` beside a failure; 8,999 under a 0.9 gate reads `89.99%`, never
    `90.0%` beside "NOT held"."""
    text = ""
    for shown_places in range(places, _MOST_PLACES + 1):
        text = f"{ratio * 100:.{shown_places}f}"
        if _reads_alike(shown=float(text) / 100, ratio=ratio, bounds=bounds):
            break
    return f"{text}%"


# The most places a cost is shown to: the cheapest models charge a few hundred-millionths of a
# dollar a token.
_MOST_DOLLAR_PLACES = 10
# From a million dollars on, a cost is shown in three significant figures and a power of ten
# (`$1e+300`): no judge costs that much, so it is an agent's unit error, and written out its
# digits (hundreds of them) would fill the line they are on.
_MOST_DOLLARS_WRITTEN_OUT = 1e6


def dollars_text(cost: float, *, places: int = 4) -> str:
    """`cost` in dollars with `places` decimals, or with as many more as it takes to show two
    significant figures: a cost never reads as free when it is not (a judge that cost $0.00004
    reads `$0.000040`, never `$0.0000`), and small costs keep their proportions, so a run's
    checks add up to the run (`$0.000040` and `$0.000030` to `$0.000070`, not `$0.0001`).
    A cost below the last place shown reads `<$0.0000000001`; a million dollars or more reads
    in three figures and a power of ten (`$1.23e+06`)."""
    if cost >= _MOST_DOLLARS_WRITTEN_OUT:
        return f"${cost:.3g}"
    text = f"{cost:.{places}f}"
    for shown_places in range(places, _MOST_DOLLAR_PLACES + 1):
        text = f"{cost:.{shown_places}f}"
        if cost <= 0 or float(text) >= 10.0 ** (1 - shown_places):
            return f"${text}"
    if float(text) > 0:  # one figure at the last place
        return f"${text}"
    return f"<${10.0**-_MOST_DOLLAR_PLACES:.{_MOST_DOLLAR_PLACES}f}"


def _reads_alike(*, shown: float, ratio: float, bounds: Sequence[float]) -> bool:
    return (
        (shown > 0) == (ratio > 0)
        and (shown >= 1) == (ratio >= 1)
        and all((shown >= bound) == (ratio >= bound) for bound in bounds)
    )


def warning_text(*, message: str, hint: str | None = None) -> str:
    """A warning as every command prints it on stderr: `warning: <message>`, and its fix on the
    next line when it has one."""
    return f"warning: {message}\n" + (f"  hint: {hint}\n" if hint else "")


def first_and_count(items: Sequence[str], *, shown: int) -> str:
    """The first `shown` items joined by commas, and how many more (`a, b and 1,234 more`): a
    message names a few and counts the rest, however many there are."""
    more = len(items) - shown
    return ", ".join(items[:shown]) + (f" and {more:,} more" if more > 0 else "")


def and_list(items: Sequence[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def size_text(size: int) -> str:
    """A size in bytes for people, in the binary units `[cache] max_mb` counts in: `512 bytes`,
    `3.4 KiB`, `82.3 MiB`, `1.25 GiB`."""
    for unit, name in _UNITS:
        if size >= unit:
            digits = 2 if name == "GiB" else 1
            return f"{size / unit:.{digits}f} {name}"
    return plural(count=size, noun="byte")


# Every control character: C0 (line breaks and tabs too), DEL and C1. ESC starts a terminal's
# escape sequences, a line break a line of its own; none belongs in a name or a log line.
_ANY_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# A surrogate: no UTF-8 text (no file eb writes, no terminal) can hold one. Python names each
# byte of a file name that is not UTF-8 with one (U+DC80 to U+DCFF: 0xDC00 plus the byte).
SURROGATES = re.compile("[\ud800-\udfff]")
# The bidirectional controls (embeddings and overrides U+202A to U+202E, isolates U+2066 to
# U+2069, the marks U+200E, U+200F and U+061C): one in a judge's reason reorders what a
# terminal, a log or a page shows after it, so the rest of an eb line can read reversed.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSHOWABLE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")


def unprintable(text: str) -> str | None:
    """What in `text` eb cannot print as it is: "a control character", "a byte that is not
    UTF-8" (of a file name), or None for a name eb can print."""
    if _ANY_CONTROL.search(text) is not None:
        return "a control character"
    if not text.isascii() and SURROGATES.search(text) is not None:
        return "a byte that is not UTF-8"
    return None


def _shown(found: re.Match[str]) -> str:
    code = ord(found.group())
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"  # the byte of a name that is not UTF-8
    return f"\\u{code:04x}" if code > 0xFF else f"\\x{code:02x}"


def visible(text: str) -> str:
    """`text` with every control character, line breaks and tabs too, written as `\\xNN`, each
    bidirectional control as `\\uNNNN` (`\\u202e`), and each byte of a name that is not UTF-8
    as `\\xNN` too: a file name as it can be shown without starting a line, moving the cursor,
    reordering what follows it or failing to be written."""
    return _UNSHOWABLE.sub(_shown, text)


# As _UNSHOWABLE, but tabs and line breaks stay, for text that keeps its lines.
_UNSHOWABLE_IN_LINES = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")


def visible_lines(text: str) -> str:
    """`text` as `visible` shows it, but with its tabs and line breaks kept: a message of
    several lines, for a writer that escapes line breaks its own way (GitHub's `%0A`)."""
    return _UNSHOWABLE_IN_LINES.sub(_shown, text)


# A line break, a tab or another control character a split on whitespace would take (the
# C0 separators, NEL, and Unicode's line and paragraph separators), with the whitespace around it.
_BREAK_RUN = re.compile(r"\s*[\t\n\x0b\x0c\r\x1c-\x1f\x85\u2028\u2029]\s*")


def one_line(text: str) -> str:
    """`text` as one line a log shows safely: each run of whitespace that holds a line break or
    a tab as one space, any other control character as `\\xNN`. A check's or a judge's words
    can then neither start a line of their own (which GitHub Actions would run as a `::`
    workflow command) nor move a terminal's cursor over what eb printed. Runs of spaces stay:
    a value quoted in a reason (`"Release  notes"`) is shown as it is, not as another value."""
    # Once line breaks are spaces, the control characters left are the ones to show.
    return visible(_BREAK_RUN.sub(" ", text).strip())


def given_value(text: str, *, limit: int = 40) -> str:
    """A value the user gave (a flag's, a variable's), quoted for a message and cut after
    `limit` characters: a pasted number of 5,000 digits is named, not echoed."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}..."
