"""The stand-in agents' options: only `--name=value` items count; the prompt and unknown words
are ignored (the agents are run as scripts, so this sits beside them and is imported by name).
"""

from __future__ import annotations


def options(argv: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in argv:
        if item.startswith("--") and "=" in item:
            name, _, value = item[2:].partition("=")
            found[name] = value
    return found
