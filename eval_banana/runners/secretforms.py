"""How a secret can appear in what a check or a judge prints: as it is, or inside a JSON string.

Agents print JSON (claude's stream-json, codex's events...), so a secret they quote reaches
stdout escaped: `\\` and `"` as `\\\\` and `\\"`, `/` sometimes as `\\/`, control characters as
`\\n` or `\\u000a`, other characters as `\\uXXXX` in either case of hex (non-ASCII ones by
Python's default, `<`, `>` and `&` by Go's, also `'`, `+` and the backtick by .NET's, astral
ones as two surrogates); JSON quoted inside JSON escapes those backslashes again. Any of these
decodes back to the secret, so each is masked.

One pattern per secret takes each of its characters in any of those forms, mixed freely, so the
masker still reads the output once per secret, in blocks, and a form split between two blocks is
found whole (each block is searched with the end of the one before, as long as the longest form).
The printable ASCII characters no encoder escapes stand for themselves.
"""

from __future__ import annotations

import re

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
        self._anchor = _anchor(secret)
        self._anchor_bytes = _raw_bytes(self._anchor)
        # The most bytes one match can take: how much of a block the next one must see again.
        self.longest = sum(_longest_char(char) for char in secret)

    def masked(self, text: str, *, mask: str) -> str:
        """`text` with every form of the secret replaced by `mask`."""
        return self._text.sub(mask, text) if self._anchor in text else text

    def text_spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of each form of the secret in `text`, in order, not overlapping."""
        if self._anchor not in text:
            return []
        return [match.span() for match in self._text.finditer(text)]

    def occurs_in(self, buffer: bytes) -> bool:
        return self._anchor_bytes in buffer and self._bytes.search(buffer) is not None

    def spans(self, buffer: bytes) -> list[tuple[int, int]]:
        """(start, end) of each form of the secret in `buffer`, in order, not overlapping."""
        if self._anchor_bytes not in buffer:
            return []
        return [match.span() for match in self._bytes.finditer(buffer)]
