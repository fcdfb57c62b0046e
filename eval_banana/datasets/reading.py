"""One dataset file's rows, read by its suffix: .jsonl, .json, .yaml/.yml or .csv.

Only a regular file is read, checked on the open descriptor (a FIFO put in a dataset's place
after it was found would block the read forever), and only as UTF-8.
"""

from __future__ import annotations

import os
from pathlib import Path

from eval_banana.core.errors import DefinitionError
from eval_banana.core.readback import open_regular, read_regular
from eval_banana.datasets.jsonlrows import jsonl_rows
from eval_banana.datasets.jsonrows import json_rows
from eval_banana.datasets.rows import SUFFIXES, Row, dataset_problem, decode_dataset


def read_rows(
    *, path: Path, file: str, problems: list[DefinitionError], limit: int | None = None
) -> list[Row]:
    """The rows of one dataset file; row problems go to `problems`, a file-wide one is raised.
    `limit`: a .jsonl or .csv file of more rows raises TooManyRows with their count."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise dataset_problem(
            file=file,
            line=None,
            message=f"Dataset {file} has an unknown format '{suffix or '(no suffix)'}'",
            hint="use a .jsonl, .json, .yaml, .yml or .csv file",
        )
    try:
        # Regular files only, checked on the open descriptor: a FIFO put in a dataset's place
        # after it was found would block the read forever.
        if suffix == ".jsonl":
            with os.fdopen(open_regular(path), "rb") as handle:
                return jsonl_rows(handle=handle, file=file, problems=problems, limit=limit)
        data = read_regular(path)
    except OSError as exc:
        raise dataset_problem(
            file=file,
            line=None,
            message=f"Cannot read dataset {file}: {exc}",
            hint="fix cases_from",
        ) from None
    text = decode_dataset(data=data, file=file)
    # Each format's reader is imported when a file of it is read: a replay that only matches
    # a family's files never pays for the csv module or the YAML loaders.
    if suffix == ".csv":
        from eval_banana.datasets.csvrows import csv_rows

        return csv_rows(text=text, file=file, problems=problems, limit=limit)
    if suffix == ".json":
        return json_rows(text=text, data=data, file=file, problems=problems)
    from eval_banana.datasets.yamlrows import yaml_rows

    return yaml_rows(text=text, file=file, problems=problems)
