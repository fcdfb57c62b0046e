"""How a secret can appear in what a check or a judge prints: as it is, or inside a JSON string.

Agents print JSON (claude's stream-json, codex's events...), so a secret they quote reaches
stdout escaped: `\\` and `"` as `\\\\` and `\\"`, `/` sometimes as `\\/`, control characters as
`\\n` or `\\u000a`, other characters as `\\uXXXX` in either case of hex (non-ASCII ones by
Python's default, `<`, `>` and `&` by Go's, also `'`, `+` and the backtick by .NET's, astral
ones as two surrogates); JSON quoted inside JSON escapes those backslashes again. Any of these
decodes back to the secret, so each is masked.

One pattern per secret takes each of its characters in any of those forms, mixed freely; a form
split between two blocks of a file is found whole (each block is searched with the end of the one
before, as long as the longest form). The printable ASCII characters no encoder escapes stand for
themselves. Which secrets a text may hold is found in one pass for all of them (`AnchorScan`), so
200 secrets cost one read of a large output, not 200; only those it may hold are searched for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from eval_banana.core.masking import MASK
from eval_banana.core.patternset import pattern_set

# JSON's two-character escapes.
_SHORT: dict[str, str] = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "\b": "b",
    "\f": "f",
    "\n": "n",
    "\r": "r",
    "\t": "t",
}
# The printable ASCII characters some encoder writes as `\uXXXX`: HTML-sensitive ones (Go, .NET),
# and `+` and the backtick (.NET).
_ESCAPED_ASCII = frozenset("<>&'+`")
# The backslashes before an escape: 1, and 3 or 7 when the JSON is quoted in JSON once or twice.
_MOST_BACKSLASHES = 7
_BACKSLASHES = rf"\\{{1,{_MOST_BACKSLASHES}}}"


def _raw_bytes(text: str) -> bytes:
    """`text` as a process prints it (an undecodable byte of the environment as it was)."""
    return text.encode("utf-8", "surrogateescape")


def _code_units(char: str) -> list[int]:
    """The UTF-16 code units JSON's `\\uXXXX` escapes write `char` as (two for astral ones)."""
    point = ord(char)
    if point < 0x10000:
        return [point]
    point -= 0x10000
    return [0xD800 + (point >> 10), 0xDC00 + (point & 0x3FF)]


def _hex_digits(unit: int) -> str:
    """Four hex digits of `unit`, each in either case."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{unit:04x}")


def _as_is(char: str) -> bool:
    """Whether every encoder writes `char` as it is."""
    printable = " " <= char <= "~"
    return printable and char not in _SHORT and char not in _ESCAPED_ASCII


def _char_pattern(char: str) -> str:
    if _as_is(char):
        return re.escape(char)
    units = "".join(f"{_BACKSLASHES}u{_hex_digits(unit)}" for unit in _code_units(char))
    forms = [re.escape(char), units]
    if char in _SHORT:
        forms.append(_BACKSLASHES + re.escape(_SHORT[char]))
    return "(?:" + "|".join(forms) + ")"


def _longest_char(char: str) -> int:
    """The most bytes one of `char`'s forms takes."""
    if _as_is(char):
        return 1
    escaped = len(_code_units(char)) * (_MOST_BACKSLASHES + 5)
    return max(len(_raw_bytes(char)), escaped)


def _anchor(secret: str) -> str:
    """The longest run of `secret`'s characters that every form writes as they are."""
    runs = [""]
    for char in secret:
        if _as_is(char):
            runs[-1] += char
        else:
            runs.append("")
    return max(runs, key=len)


class SecretForms:
    """Finds one secret in texts and in blocks of a file, in any of its forms.

    The full pattern runs only on a text or a block that holds the secret's anchor (its longest
    run of characters no encoder escapes), found by a plain search: an output without the secret
    costs what it cost before the escaped forms were masked.
    """

    def __init__(self, secret: str) -> None:
        source = "".join(_char_pattern(char) for char in secret)
        self._text = re.compile(source)
        self._bytes = re.compile(_raw_bytes(source))
        self.anchor = _anchor(secret)
        self._anchor_bytes = _raw_bytes(self.anchor)
        # The most bytes one match can take: how much of a block the next one must see again.
        self.longest = sum(_longest_char(char) for char in secret)

    def masked(self, text: str, *, mask: str) -> str:
        """`text` with every form of the secret replaced by `mask`."""
        return self._text.sub(mask, text) if self.anchor in text else text

    def text_spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of each form of the secret in `text`, in order, not overlapping."""
        if self.anchor not in text:
            return []
        return [match.span() for match in self._text.finditer(text)]

    def occurs_in(self, buffer: bytes) -> bool:
        return self._anchor_bytes in buffer and self._bytes.search(buffer) is not None

    def spans(self, buffer: bytes) -> list[tuple[int, int]]:
        """(start, end) of each form of the secret in `buffer`, in order, not overlapping."""
        if self._anchor_bytes not in buffer:
            return []
        return [match.span() for match in self._bytes.finditer(buffer)]


class AnchorScan:
    """Which of several secrets a text or a block may hold: those whose anchor it holds, found
    in one pass for all of them (eval_banana.core.patternset) rather than a search for each."""

    def __init__(self, forms: Sequence[SecretForms]) -> None:
        self._forms = tuple(forms)
        # An empty anchor is in every text, and one holding the mask's characters can appear
        # where another secret was just masked: those secrets are always searched for.
        self._always = frozenset(
            position
            for position, each in enumerate(self._forms)
            if not each.anchor or set(MASK) & set(each.anchor)
        )
        # Anchors are printable ASCII: byte by byte, they match in any text, decodable or not.
        patterns = ["".join(f"\\x{{{ord(char):x}}}" for char in each.anchor) for each in forms]
        self._set = pattern_set(patterns=patterns, whole=False, bytewise=True)

    def candidates(self, data: str | bytes) -> tuple[SecretForms, ...]:
        """The secrets `data` may hold, in the order given (all, where RE2 could not hold them)."""
        if self._set is None:
            return self._forms
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        found = self._always.union(self._set.matching(raw))
        return tuple(self._forms[position] for position in sorted(found))
