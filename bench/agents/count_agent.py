"""Bench stand-in for a judge that records every start: one line appended to --log=PATH.

Prints a plain-text verdict (`output_dialect = "text"`); anything but `--log=...`, such as the
prompt eb appends, is ignored. W7 reads the log to prove a cached run started no agent.
"""

from __future__ import annotations

import sys


def main() -> int:
    for item in sys.argv[1:]:
        if item.startswith("--log="):
            with open(item[len("--log=") :], "a", encoding="utf-8") as handle:
                handle.write("started\n")
    sys.stdout.write('{"score": 1, "reason": "ok"}\n')
    return 0


if __name__ == "__main__":
    sys.exit(main())
