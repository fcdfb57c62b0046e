"""Bench stand-in for a claude-style agent: N bytes of stream-json, then one terminal result event.

Options (`--name=value`; anything else, such as the prompt eb appends, is ignored):
  --bytes=N      stream-json bytes printed before the terminal event (default 0)
  --end=E        `success`: a verdict result, exit 0; `error`: an error result, exit 1
  --sleep=S      seconds to sleep before printing anything (default 0)
Standard library only, and fast: the output is one pre-built block written over and over.
"""

from __future__ import annotations

import json
import sys
import time

import agentargs  # beside this script, which Python puts first on the path

SESSION = "bench-0000-session"
VERDICT = '{"score": 1, "reason": "ok"}'
USAGE = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 34,
    "service_tier": "standard",
}
CODE = (
    "def merge(left, right):\n"
    "    out = {**left}\n"
    "    for key, value in right.items():\n"
    '        out[key] = {"old": left.get(key), "new": value}  # {unbalanced\n'
    "    return out\n"
)


def _events(index: int) -> list[dict[str, object]]:
    """One round of a tool call and its result; the text mentions braces and a near-verdict."""
    tool_id = f"toolu_{index:06d}"
    text = (
        f'Step {index}: reading the sources. The config looks like {{"score": maybe, and '
        "a brace that never closes { so the reader must not trip on it.\n" + CODE
    )
    message = {
        "id": f"msg_{index:06d}",
        "type": "message",
        "role": "assistant",
        "model": "bench-model",
        "content": [
            {"type": "text", "text": text},
            {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"file_path": "a.py"}},
        ],
        "stop_reason": None,
        "usage": USAGE,
    }
    result = {
        "role": "user",
        "content": [{"tool_use_id": tool_id, "type": "tool_result", "content": CODE * 6}],
    }
    common = {"parent_tool_use_id": None, "session_id": SESSION}
    return [
        {"type": "assistant", "message": message, **common, "uuid": f"a{index}"},
        {"type": "user", "message": result, **common, "uuid": f"u{index}"},
    ]


def _block() -> list[bytes]:
    """About 64 KB of complete JSON lines."""
    lines: list[bytes] = []
    size = 0
    index = 0
    while size < 64 * 1024:
        for event in _events(index):
            line = json.dumps(event).encode() + b"\n"
            lines.append(line)
            size += len(line)
        index += 1
    return lines


def _body(*, total: int, write: object) -> None:
    """Write whole lines until `total` bytes are out (the last line may overshoot a little)."""
    assert callable(write)
    if total <= 0:
        return
    lines = _block()
    block = b"".join(lines)
    written = 0
    while total - written >= len(block):
        write(block)
        written += len(block)
    for line in lines:
        if written >= total:
            break
        write(line)
        written += len(line)


def _terminal(*, end: str) -> tuple[dict[str, object], int]:
    base: dict[str, object] = {
        "type": "result",
        "duration_ms": 1000,
        "num_turns": 2,
        "session_id": SESSION,
        "total_cost_usd": 0.001,
        "usage": USAGE,
    }
    if end == "error":
        return {
            **base,
            "subtype": "error_during_execution",
            "is_error": True,
            "errors": ["bench: simulated failure"],
        }, 1
    return {**base, "subtype": "success", "is_error": False, "result": VERDICT}, 0


def main() -> int:
    options = agentargs.options(sys.argv[1:])
    delay = float(options.get("sleep", "0"))
    if delay > 0:
        time.sleep(delay)
    out = sys.stdout.buffer
    init = {"type": "system", "subtype": "init", "session_id": SESSION, "model": "bench-model"}
    out.write(json.dumps(init).encode() + b"\n")
    _body(total=int(options.get("bytes", "0")), write=out.write)
    event, code = _terminal(end=options.get("end", "success"))
    out.write(json.dumps(event).encode() + b"\n")
    out.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
