"""Is a document a run record? The published schema decides, compiled once per process."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from eval_banana.stagefiles.schemafiles import packaged_schema

SCHEMA_NAME = "history-record"


@functools.cache
def _quick() -> Callable[[Any], bool] | None:
    from eval_banana.stagefiles.schemacheck import compile_schema

    return compile_schema(json.loads(packaged_schema(SCHEMA_NAME)))


def record_problem(document: Any) -> str | None:
    """Why `document` is not valid against the history-record schema (with where), or None."""
    quick = _quick()
    if quick is not None and quick(document):
        return None
    from eval_banana.stagefiles.schemafiles import packaged_schema_problem

    return packaged_schema_problem(document, name=SCHEMA_NAME)
