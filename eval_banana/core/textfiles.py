"""What a text file that is not UTF-8 most likely is, for the message that refuses it: one
rule for every file eb reads as text (a check file, the config, a dataset).

Windows tools write UTF-16 when asked for "Unicode": Excel's "Unicode Text" export, Windows
PowerShell's `>` redirection and `Out-File`. Such a file starts with a UTF-16 byte order mark,
and its first bad byte (0xFF at byte 0) says nothing of that. A UTF-32 file's mark starts with
the UTF-16 one, so it is looked for first.
"""

from __future__ import annotations

_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


def _utf16_marked(data: bytes) -> bool:
    """Whether `data` starts with a UTF-16 byte order mark (little- or big-endian)."""
    return data[:2] in _UTF16_MARKS


_UTF16_SAID = "is UTF-16 text, not UTF-8 (it starts with a UTF-16 byte order mark)"

_UTF32_MARKS = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")
# How much of a file's start is looked at for the NUL bytes of UTF-16 or UTF-32 without a
# byte order mark (a multiple of 4, so each byte's place in a character is the same).
HEAD_BYTES = 64


def other_unicode(head: bytes) -> str | None:
    """What the first bytes of a file show it to be when it is UTF-16 or UTF-32, said after
    its name (`is UTF-32 text, not UTF-8 (...)`); None when they show neither. Without a byte
    order mark, the NUL bytes tell: text mostly of ASCII letters has one in every other byte
    in UTF-16 (which UTF-8 text never has), and two or three in every four in UTF-32."""
    if head[:4] in _UTF32_MARKS:
        return "is UTF-32 text, not UTF-8 (it starts with a UTF-32 byte order mark)"
    if _utf16_marked(head):
        return _UTF16_SAID
    if b"\x00" not in head:
        return None
    head = head[: len(head) // 4 * 4]
    places = [head[place::4] for place in range(4)]
    nul = [bool(part) and part.count(0) == len(part) for part in places]
    # A character below U+10000 has two NUL bytes of four in UTF-32: its high ones.
    if (nul[2] and nul[3] and not nul[0]) or (nul[0] and nul[1] and not nul[3]):
        return "is UTF-32 text, not UTF-8 (two of every four bytes are NUL, as UTF-32 writes text)"
    odd, even = head[1::2], head[0::2]
    for nuls, others in ((odd, even), (even, odd)):
        if nuls and nuls.count(0) * 2 >= len(nuls) and others.count(0) * 2 < len(others):
            return (
                "is UTF-16 text without a byte order mark, not UTF-8 (every other byte is NUL, "
                "as UTF-16 writes text)"
            )
    return None


def unicode_said(data: bytes) -> str | None:
    """`other_unicode` of a whole file's first bytes."""
    return other_unicode(data[:HEAD_BYTES])


def blank_source(source: str | bytes) -> bool:
    """Whether a script holds nothing but white space (a UTF-8 byte order mark included): it
    would run and exit 0 whatever it was meant to check, so it can never fail."""
    if isinstance(source, bytes):
        try:
            source = source.decode("utf-8-sig")
        except UnicodeDecodeError:
            return False  # not blank: refused when it is compiled, with its own message
    return not source.lstrip("\ufeff").strip()
