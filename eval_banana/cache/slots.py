"""Where a run's own values stand in the files it wrote, and other values put in their place.

A value is found by its exact text (an id, a folder, a time or a digest, each distinctive), or
by its text between a fixed prefix and suffix where the text alone is not (a duration). A longer
match wins over a shorter one inside it: a run folder's path holds the run id.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple


class Needle(NamedTuple):
    """What to look for: `value` between `prefix` and `suffix`; the slot is `value` alone."""

    value: bytes
    name: str
    prefix: bytes = b""
    suffix: bytes = b""


class Slot(NamedTuple):
    offset: int
    length: int
    name: str


def find_slots(*, data: bytes, needles: Iterable[Needle]) -> list[Slot]:
    """Every place a needle's value stands in `data`, in order, none overlapping another."""
    starts: list[int] = []
    taken: list[Slot] = []
    # The longest first: a shorter one may lie inside it (a run id in its folder's path).
    for needle in sorted(needles, key=lambda n: len(n.value), reverse=True):
        if not needle.value:
            continue
        whole = needle.prefix + needle.value + needle.suffix
        at = data.find(whole)
        while at != -1:
            slot = Slot(offset=at + len(needle.prefix), length=len(needle.value), name=needle.name)
            end = slot.offset + slot.length
            index = bisect_right(starts, slot.offset)
            before_free = (
                index == 0 or taken[index - 1].offset + taken[index - 1].length <= slot.offset
            )
            after_free = index == len(taken) or taken[index].offset >= end
            if before_free and after_free:
                starts.insert(index, slot.offset)
                taken.insert(index, slot)
            at = data.find(whole, at + 1)
    return taken


def _pieces(*, data: bytes, slots: Sequence[Slot]) -> list[memoryview]:
    """The literal text between the slots: one piece more than there are slots. Views of
    `data`, not copies: a replay's templates are megabytes, and joining the pieces is the one
    copy their filling needs."""
    view = memoryview(data)
    pieces: list[memoryview] = []
    position = 0
    for slot in slots:
        pieces.append(view[position : slot.offset])
        position = slot.offset + slot.length
    pieces.append(view[position:])
    return pieces


def fill(*, data: bytes, slots: Sequence[Slot], values: Mapping[str, bytes]) -> bytes:
    """`data` with each slot's text replaced by the value of its name."""
    return b"".join(filled_parts(data=data, slots=slots, values=values))


def filled_parts(
    *, data: bytes, slots: Sequence[Slot], values: Mapping[str, bytes]
) -> list[bytes | memoryview]:
    """What `fill` joins, in order: views of `data` between the slots, and the values in
    them; a text only written and hashed needs no joined copy."""
    pieces = _pieces(data=data, slots=slots)
    parts: list[bytes | memoryview] = [pieces[0]]
    for slot, piece in zip(slots, pieces[1:], strict=True):
        parts.append(values[slot.name])
        parts.append(piece)
    return parts


def slots_are_sound(*, data: bytes, slots: Sequence[Slot], forbidden: Iterable[bytes]) -> bool:
    """Whether every trace of the run's own values is in a slot: none of `forbidden` is left in
    the literal text, and no run id slot continues a path (a run folder written in a form not
    looked for would leave its parent behind as literal text)."""
    # Joined by NUL, which no value found in a file holds: no text spans two pieces.
    literal = b"\0".join(_pieces(data=data, slots=slots))
    if any(text and text in literal for text in forbidden):
        return False
    return all(
        not (
            slot.name == "run_id" and slot.offset and data[slot.offset - 1 : slot.offset] in b"/\\"
        )
        for slot in slots
    )
