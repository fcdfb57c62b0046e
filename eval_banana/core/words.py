"""Counts as a sentence says them: `1 check`, `2 checks`, never `2 check(s)`; sizes as a person
reads them: `82.3 MiB`, not `86276486 bytes`."""

from __future__ import annotations

import re


def plural(*, count: int, noun: str, nouns: str | None = None) -> str:
    """`count` with its noun, plural unless the count is one; `nouns` for a plural that is not
    the noun and an s (`entries`)."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {nouns if nouns is not None else noun + 's'}"


_UNITS = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


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


def control_free(text: str) -> bool:
    """Whether `text` holds no control character at all (a name eb can print as it is)."""
    return _ANY_CONTROL.search(text) is None


def visible(text: str) -> str:
    """`text` with every control character, line breaks and tabs too, written as `\\xNN`: a
    file name as it can be shown without starting a line or moving the cursor."""
    return _ANY_CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


def one_line(text: str) -> str:
    """`text` as one line a log shows safely: each run of whitespace (line breaks included) as
    one space, any other control character as `\\xNN`. A check's or a judge's words can then
    neither start a line of their own (which GitHub Actions would run as a `::` workflow
    command) nor move a terminal's cursor over what eb printed."""
    # Once whitespace runs are spaces, the control characters left are the ones to show.
    return visible(" ".join(text.split()))
