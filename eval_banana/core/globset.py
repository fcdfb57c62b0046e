"""Which of many shell-style globs match an id, found in one pass over it.

Trying 2,000 `--check-id` globs on each of 20,000 case ids was 40 million matches. Each glob is
written here as the RE2 pattern that matches, whole, exactly the texts `fnmatch.fnmatchcase`
matches it with, and all of them go in one RE2 set (core/patternset), which names every glob an
id matches in a single pass over the id. A glob RE2 cannot take, every glob when RE2 cannot
hold the set, and any id that is not UTF-8 (a lone surrogate) are matched by `fnmatchcase`.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from eval_banana.core.patternset import PatternSet, pattern_set

# One character, a line end included (fnmatch's `?` and `*` match a newline too).
_ANY = "(?s:.)"
_ANY_TEXT = "(?s:.*)"
# A class whose every range is reversed holds no character: the glob matches nothing.
_NO_CHARACTER = r"[^\x00-\x{10ffff}]"


def _literal(char: str) -> str:
    """`char` as RE2 reads it, whatever it is (a hex escape is never a metacharacter)."""
    return char if char.isascii() and char.isalnum() else f"\\x{{{ord(char):x}}}"


def _class_end(*, glob: str, start: int) -> int:
    """Where the `]` closing a class opened just before `start` is, or -1 when it is not closed
    (the `[` is then a plain character). A `]` first in the class, after any `!`, is a member."""
    member = start + 1 if glob.startswith("!", start) else start
    if glob.startswith("]", member):
        member += 1
    return glob.find("]", member)


def _range_chunks(members: str) -> list[str]:
    """`members` cut at each `-` that makes a range: the last character of one chunk and the
    first of the next are its ends, every other character stands for itself. A `-` first, last,
    or just after a range's end is a plain member; a reversed range is dropped, both ends too."""
    chunks: list[str] = []
    start = 0
    dash = members.find("-", 1)
    while dash >= 0:
        chunks.append(members[start:dash])
        start = dash + 1
        dash = members.find("-", dash + 3)
    if members[start:] or not chunks:
        chunks.append(members[start:])
    else:
        chunks[-1] += "-"
    # From the last range to the first, as fnmatch drops them: a dropped range joins its
    # neighbours' remaining characters into one chunk, whose first character is unchanged.
    for later in range(len(chunks) - 1, 0, -1):
        if chunks[later - 1][-1] > chunks[later][0]:
            chunks[later - 1] = chunks[later - 1][:-1] + chunks[later][1:]
            del chunks[later]
    return chunks


def _class_pattern(body: str) -> str:
    """The RE2 of the class `[<body>]`: `!` first negates it."""
    negated = body.startswith("!")
    chunks = _range_chunks(body[1:] if negated else body)
    members = "-".join("".join(_literal(char) for char in chunk) for chunk in chunks)
    if not members:
        return _ANY if negated else _NO_CHARACTER
    return f"[{'^' if negated else ''}{members}]"


def glob_pattern(glob: str) -> str:
    """The RE2 pattern that, matched whole, matches the texts `fnmatchcase` matches `glob`
    with: `*` any text, `?` one character, `[...]` a class (`[!...]` its complement), an
    unclosed `[` and every other character itself."""
    parts: list[str] = []
    position = 0
    while position < len(glob):
        char = glob[position]
        position += 1
        if char == "*":
            if not parts or parts[-1] != _ANY_TEXT:
                parts.append(_ANY_TEXT)
        elif char == "?":
            parts.append(_ANY)
        elif char == "[" and (close := _class_end(glob=glob, start=position)) >= 0:
            parts.append(_class_pattern(glob[position:close]))
            position = close + 1
        else:
            parts.append(_literal(char))
    return "".join(parts)


def _encodes(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


class GlobSet:
    """Globs matched against a text together; `matching` gives the positions of those that
    match it whole, as `fnmatchcase` would."""

    def __init__(self, globs: Sequence[str]) -> None:
        self._globs = tuple(globs)
        in_set = [position for position, glob in enumerate(self._globs) if _encodes(glob)]
        self._set: PatternSet | None = None
        if in_set:
            patterns = [glob_pattern(self._globs[position]) for position in in_set]
            self._set = pattern_set(patterns=patterns, whole=True)
        if self._set is None:
            in_set = []
        self._in_set = in_set  # a set member's position -> its glob's
        held = frozenset(in_set)
        self._loose = [position for position in range(len(self._globs)) if position not in held]

    def matching(self, text: str) -> list[int]:
        """The positions (in the order given) of the globs that match `text`."""
        try:
            data = text.encode()
        except UnicodeEncodeError:  # a lone surrogate: no UTF-8 for RE2 to read
            return [
                position for position, glob in enumerate(self._globs) if fnmatchcase(text, glob)
            ]
        found = [] if self._set is None else self._set.matching(data)
        chosen = [self._in_set[member] for member in found]
        chosen.extend(
            position for position in self._loose if fnmatchcase(text, self._globs[position])
        )
        return sorted(chosen)
