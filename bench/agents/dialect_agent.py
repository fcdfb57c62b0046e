"""Bench stand-in that prints N bytes in one verdict dialect's shape, then a passing verdict.

Options (`--name=value`; anything else, such as the prompt eb appends, is ignored):
  --dialect=D    text, codex, claude, gemini or openhands (default text)
  --bytes=N      bytes printed before the verdict (default 0)
The filler is what each dialect's reader has to get through: prose with unbalanced braces and
`{"score":` fragments (text, codex), tool and assistant events (claude), assistant deltas and
tool events (gemini), event lines among plain log lines (openhands). Standard library only, and
fast: one pre-built block written over and over. Exit 0.
"""

from __future__ import annotations

import json
import sys

import agentargs  # beside this script, which Python puts first on the path

VERDICT = '{"score": 1, "reason": "ok"}'
PROSE = (
    "I looked at the module and the handler. It builds {a dict from the request and never closes "
    "it, which is confusing: { key: value, other: { nested: [1, 2, 3] and so on.\n"
    'A reviewer might expect {"score": but the text trails off here, and {"reason": is not a '
    "verdict either. The function below keeps state in { braces }} that are not balanced.\n"
    "def handler(event):\n    data = {'id': event['id'], 'items': [{'n': 1}, {'n': 2}\n"
    "    if data: return {**data, 'ok': True\n    return {}\n"
)


def _line(event: dict[str, object]) -> str:
    return json.dumps(event) + "\n"


def _claude_round(index: int) -> str:
    common = {"parent_tool_use_id": None, "session_id": "bench"}
    text = {"type": "text", "text": f"Step {index}. " + PROSE}
    message = {"role": "assistant", "content": [text], "type": "message"}
    result = {"role": "user", "content": [{"type": "tool_result", "content": PROSE * 3}]}
    return _line({"type": "assistant", "message": message, **common}) + _line(
        {"type": "user", "message": result, **common}
    )


def _gemini_round(index: int) -> str:
    delta = {"type": "message", "role": "assistant", "content": PROSE, "delta": True}
    tool = {"type": "tool_result", "tool_id": f"t{index}", "status": "success", "output": PROSE}
    return _line(delta) + _line(tool)


def _openhands_round(index: int) -> str:
    observation = {
        "id": f"o{index}",
        "source": "environment",
        "observation": {"kind": "ExecuteBashObservation", "content": [{"text": PROSE * 2}]},
        "kind": "ObservationEvent",
    }
    return "Agent is working\n" + _line(observation)


def _block(dialect: str) -> str:
    """About 64 KB of the dialect's filler, in whole lines (or prose for text and codex)."""
    rounds = {"claude": _claude_round, "gemini": _gemini_round, "openhands": _openhands_round}
    pieces: list[str] = []
    size = 0
    index = 0
    while size < 64 * 1024:
        piece = rounds[dialect](index) if dialect in rounds else PROSE
        pieces.append(piece)
        size += len(piece)
        index += 1
    return "".join(pieces)


def _verdict(dialect: str) -> str:
    if dialect == "claude":
        return _line({"type": "result", "subtype": "success", "is_error": False, "result": VERDICT})
    if dialect == "gemini":
        delta = {"type": "message", "role": "assistant", "content": VERDICT, "delta": True}
        return _line(delta) + _line({"type": "result", "status": "success"})
    if dialect == "openhands":
        message = {"role": "assistant", "content": [{"type": "text", "text": VERDICT}]}
        event = {"source": "agent", "llm_message": message, "kind": "MessageEvent"}
        return _line(event) + "Agent finished\nGoodbye!\n"
    return "\n" + VERDICT + "\n"


def main() -> int:
    options = agentargs.options(sys.argv[1:])
    dialect = options.get("dialect", "text")
    total = int(options.get("bytes", "0"))
    block = _block(dialect).encode()
    out = sys.stdout.buffer
    written = 0
    while written < total:  # whole blocks: at most one block (64 KB) over `total`
        out.write(block)
        written += len(block)
    out.write(_verdict(dialect).encode())
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
