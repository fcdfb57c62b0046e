"""Where a setting stands in `.eval-banana/config.toml`: the line of a table's header or of a
key's assignment, for errors and warnings about the file (the TOML reader keeps no positions).

Read line by line, as config files are written: `[table]` headers and `key = value` lines,
dotted keys at the top level (`core.max_parallel_checks = 4`) included. A key inside a
multi-line string or an inline table is not found, and then no line is given, never a wrong
one from another table.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"\s*\[\s*([^\[\]#]+?)\s*\]\s*(?:#.*)?")
_ARRAY_HEADER = re.compile(r"\s*\[\[")
_ASSIGNED = re.compile(
    r"\s*((?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+)(?:\s*\.\s*(?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+))*)\s*="
)
_PART = re.compile(r"\"([^\"]*)\"|'([^']*)'|([A-Za-z0-9_-]+)")


def setting_line(*, text: str, field_path: str) -> int | None:
    """The 1-based line of `field_path` (`core`, `core.max_parallel_checks`,
    `agents.mine.command`) in the config file's `text`, or None when it is not found."""
    wanted = tuple(field_path.split("."))
    table: tuple[str, ...] | None = ()
    for number, line in enumerate(text.splitlines(), start=1):
        if _ARRAY_HEADER.match(line):
            table = None  # an array of tables: no setting of eb's lives there
            continue
        header = _HEADER.fullmatch(line)
        if header is not None:
            table = _parts(header.group(1))
            if table == wanted:
                return number
            continue
        assigned = _ASSIGNED.match(line)
        if assigned is None or table is None:
            continue
        # The key itself, or a dotted key inside it (`remote.url` stands for `remote`).
        if (table + _parts(assigned.group(1)))[: len(wanted)] == wanted:
            return number
    return None


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(
        next(group for group in match.groups() if group is not None)
        for match in _PART.finditer(dotted)
    )
