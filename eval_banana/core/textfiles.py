"""What a text file that is not UTF-8 most likely is, for the message that refuses it.

Windows tools write UTF-16 when asked for "Unicode": Excel's "Unicode Text" export, Windows
PowerShell's `>` redirection and `Out-File`. Such a file starts with a UTF-16 byte order mark,
and its first bad byte (0xFF at byte 0) says nothing of that.
"""

from __future__ import annotations

_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


def utf16_marked(data: bytes) -> bool:
    """Whether `data` starts with a UTF-16 byte order mark (little- or big-endian)."""
    return data[:2] in _UTF16_MARKS


UTF16_SAID = "is UTF-16 text, not UTF-8 (it starts with a UTF-16 byte order mark)"
