"""Bench stand-in for a plain-text agent that never gives a verdict.

Prints `--bytes=N` bytes of prose and code with unbalanced braces and JSON-looking fragments that
are not a verdict (a reader that restarts a scan at every `{` goes quadratic here). Exit 0.
Anything that is not `--name=value` (such as the prompt eb appends) is ignored.
"""

from __future__ import annotations

import sys

PARAGRAPHS = (
    "I looked at the module and the handler. It builds {a dict from the request and never closes "
    "it in the docs, which is confusing: { key: value, other: { nested: [1, 2, 3] and so on.\n",
    'A reviewer might expect {"score": but the text trails off here, and {"reason": is not a '
    "verdict either. The function below keeps state in { braces }} that are not balanced.\n",
    "def handler(event):\n    data = {'id': event['id'], 'items': [{'n': 1}, {'n': 2}\n"
    "    if data: return {**data, 'ok': True\n    return {}\n",
    "Overall the change is {mostly} fine but {incomplete; see {the notes { above and below.\n",
)


def main() -> int:
    total = 0
    for item in sys.argv[1:]:
        if item.startswith("--bytes="):
            total = int(item.split("=", 1)[1])
    chunk = "".join(PARAGRAPHS).encode()
    out = sys.stdout.buffer
    written = 0
    while written < total:
        piece = chunk[: total - written]
        out.write(piece)
        written += len(piece)
    out.write(b"\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
