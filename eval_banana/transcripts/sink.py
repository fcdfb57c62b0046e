"""Where a dialect's parser puts its events: masked, cut to size, and bounded in number.

A transcript keeps the first HEAD_EVENTS events and the last TAIL_EVENTS; what lies between is
counted, not kept, so a judge that printed a million events still has a small transcript with
its beginning and its end (where the answer is).
"""

from __future__ import annotations

import copy
from collections import deque
from typing import Any

from eval_banana.core.masking import Masker, cut

HEAD_EVENTS = 200
TAIL_EVENTS = 100

Event = dict[str, Any]


class Sink:
    """The events of one transcript, in order, each text cut to `max_chars`."""

    def __init__(self, *, max_chars: int, masker: Masker) -> None:
        self.max_chars = max_chars
        self.masker = masker
        # What a parser keeps of a long text: max_chars, and what a secret cut at its edge may
        # reach into it (left out once it is masked, eval_banana.core.masking).
        self.keep_chars = max_chars + masker.reach
        self.head: list[Event] = []
        self.tail: deque[Event] = deque(maxlen=TAIL_EVENTS)
        self.dropped = 0  # events pushed out of the tail
        self.skipped_bytes = 0  # output never read (the middle of a very long stream)
        self.skip_at: int | None = None  # where in the head the middle was left out

    def fork(self) -> Sink:
        """A copy that goes on independently (the same mask, its own events)."""
        twin = Sink(max_chars=self.max_chars, masker=self.masker)
        twin.head = copy.deepcopy(self.head)
        twin.tail = copy.deepcopy(self.tail)
        twin.dropped = self.dropped
        twin.skipped_bytes = self.skipped_bytes
        twin.skip_at = self.skip_at
        return twin

    def seen(self) -> list[Event]:
        """The events kept so far, as they stand (nothing is flushed or marked); safe to call
        from another thread than the one reading the output."""
        while True:
            try:
                return [*self.head, *self.tail]
            except RuntimeError:  # the tail moved while it was copied: copy it again
                continue

    def clip(
        self,
        text: str,
        *,
        keep_end: bool = False,
        open_start: bool = False,
        open_end: bool = False,
    ) -> tuple[str, int]:
        """`text` masked and cut to max_chars (its end kept for answers), and how much was cut;
        `open_start`/`open_end`: the text was itself cut there from a longer one."""
        # Masked before it is cut, so a cut cannot leave half a secret that no longer matches.
        return cut(
            text,
            masker=self.masker,
            limit=self.max_chars,
            keep_end=keep_end,
            open_start=open_start,
            open_end=open_end,
        )

    def add(
        self,
        kind: str,
        *,
        text: str | None = None,
        cut: int = 0,
        open_start: bool = False,
        open_end: bool = False,
        **fields: Any,
    ) -> None:
        """One event; its `text` masked and cut (`open_start`/`open_end`: see `clip`)."""
        event: Event = {"kind": kind}
        if text is not None:
            event["text"], more = self.clip(
                text, keep_end=kind == "answer", open_start=open_start, open_end=open_end
            )
            cut += more
        for key, value in fields.items():
            if value is not None:
                event[key] = value
        if cut:
            event["cut"] = cut
        self.put(event)

    def put(self, event: Event) -> None:
        if event["kind"] == "answer":
            self._fold_into_answer(event)
        if len(self.head) < HEAD_EVENTS:
            self.head.append(event)
            return
        if len(self.tail) == TAIL_EVENTS:
            self.dropped += 1
        self.tail.append(event)

    def _fold_into_answer(self, answer: Event) -> None:
        """An answer repeating the assistant's last message replaces it (claude prints both)."""
        last = self.tail if self.tail else self.head
        if not last:
            return
        previous = last[-1]
        if (
            previous["kind"] == "message"
            and previous.get("role") == "assistant"
            and previous.get("text") == answer.get("text")
        ):
            last.pop()

    def skip(self, size: int) -> None:
        """`size` bytes of output are left unread here."""
        self.skipped_bytes += size
        if self.skip_at is None and len(self.head) < HEAD_EVENTS:
            self.skip_at = len(self.head)

    def arguments(self, value: object) -> tuple[str, int]:
        """A tool call's arguments as JSON text, masked and cut."""
        import json

        text = (
            value
            if isinstance(value, str)
            else json.dumps(value, ensure_ascii=False, allow_nan=True)
        )
        return self.clip(text)

    def events(self) -> list[Event]:
        """Every kept event, with one `skipped` event where events or output were left out."""
        tail = list(self.tail)
        if not self.dropped and not self.skipped_bytes:
            events = [*self.head, *tail]
        else:
            parts = []
            if self.dropped:
                parts.append(f"{self.dropped} events")
            if self.skipped_bytes:
                parts.append(f"{self.skipped_bytes} bytes of output")
            note: Event = {
                "kind": "skipped",
                "text": " and ".join(parts) + " left out here; the raw output has everything",
                "cut": self.skipped_bytes,
            }
            at = len(self.head) if self.skip_at is None else self.skip_at
            events = [*self.head[:at], note, *self.head[at:], *tail]
        _mark_answer(events)
        return events


def _mark_answer(events: list[Event]) -> None:
    """With no explicit answer, the assistant's last message is the answer (the verdict is read
    from it by every dialect that has no result event)."""
    if any(event["kind"] == "answer" for event in events):
        return
    for event in reversed(events):
        if event["kind"] == "message" and event.get("role") == "assistant":
            event["kind"] = "answer"
            return
