"""The file suffixes a dataset may have, each read by its own reader (`reading.py`).

A module of its own: `cases_from` checks a glob's files against them when a replayed run
checks that its datasets are still the files they were, which reads no row.
"""

from __future__ import annotations

SUFFIXES = (".jsonl", ".json", ".yaml", ".yml", ".csv")
