"""The keys that make a check a family, apart from the expansion: every check file is asked
whether it is one, and a project without families never imports the expansion."""

from __future__ import annotations

from typing import Any

# Keys of a family that describe its dataset, not what each case checks.
DATASET_KEYS = ("cases", "cases_from", "min_pass_rate", "case_schema")


def is_family(definition: dict[str, Any]) -> bool:
    """Whether a definition carries a dataset."""
    return definition.get("cases") is not None or definition.get("cases_from") is not None
