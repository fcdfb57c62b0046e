"""Which of many patterns match a text, found in one pass over it.

Trying many patterns on a text one after another reads it once per pattern: 200 secrets over a
50 MB output were 200 passes. RE2 matches a set of patterns together, in one pass and in linear
time, and names every one that matched. A set RE2 cannot hold in its memory budget fails to
compile (its compiler tries a search before it answers, since a set has no slower fallback), so
once built, a set never misses a match for lack of memory; where it cannot be built,
`pattern_set` returns None and the caller tries its patterns one at a time, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Far above what a few thousand secrets or globs take: RE2 uses only what a set needs.
_MEMORY_BUDGET = 256 << 20


class PatternSet:
    """Patterns compiled together; `matching` gives the positions of those that match."""

    def __init__(self, compiled: Any) -> None:
        self._compiled = compiled

    def matching(self, data: bytes) -> list[int]:
        """The positions (in the order given) of the patterns that match `data`."""
        found: list[int] = self._compiled.Match(data) or []
        return found


def pattern_set(
    *, patterns: Sequence[str], whole: bool, bytewise: bool = False
) -> PatternSet | None:
    """RE2 `patterns` matched anywhere in a text, or, `whole`, against all of it; None when RE2
    cannot compile one of them or hold them all. Texts are UTF-8, or, `bytewise`, any bytes
    (each byte a character: for patterns of ASCII characters in texts that may not decode)."""
    # Loaded with the first set: a run without secrets or globs is spared its import.
    import re2  # type: ignore[import-untyped]

    options = re2.Options()
    options.log_errors = False  # RE2 would print each pattern it refuses on stderr
    options.max_mem = _MEMORY_BUDGET
    if bytewise:
        options.encoding = re2.Options.Encoding.LATIN1
    compiled = re2.Set.FullMatchSet(options) if whole else re2.Set.SearchSet(options)
    if not patterns:
        return None
    try:
        for position, pattern in enumerate(patterns):
            if compiled.Add(pattern) != position:
                return None
        compiled.Compile()
    except (re2.error, UnicodeEncodeError):
        return None
    return PatternSet(compiled)
