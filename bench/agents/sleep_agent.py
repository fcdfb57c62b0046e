"""Bench stand-in for a judge that takes its own time: it sleeps for the seconds its prompt
names (`sleep=S` anywhere in its arguments), then prints a passing plain-text verdict.

W15 gives every judge a duration drawn once from a log-normal distribution, written into the
judge's instructions, so one agent command serves judges of many lengths.
"""

from __future__ import annotations

import re
import sys
import time

_SLEEP = re.compile(r"sleep=([0-9]+(?:\.[0-9]+)?)")


def main() -> int:
    for item in sys.argv[1:]:
        found = _SLEEP.search(item)
        if found:
            time.sleep(float(found.group(1)))
            break
    sys.stdout.write('{"score": 1, "reason": "ok"}\n')
    return 0


if __name__ == "__main__":
    sys.exit(main())
