"""How eb tells a run folder it wrote, wherever it was written: the default results folder,
`--output-dir`, `[core] output_dir`, a shard's folder, `eb merge`'s, one copied elsewhere.

Every run folder, of every version of eb, holds `stages/config.json`, the first file a run
writes: its config stage, naming eb's config-stage schema. That file is the mark; no other is
written, so run folders of earlier versions are told the same way and nothing else in eb (a
replay, a merge, pruning) has one more file to know about."""

from __future__ import annotations

import os
from pathlib import Path

from eval_banana.core.readback import read_json

# A walk asks whether a folder is a run folder only when its listing names this one: the
# project's other folders cost no extra file system call.
STAGES_FOLDER = "stages"
CONFIG_STAGE_SCHEMA = "https://eval-banana.dev/schemas/stages/config.schema.json"


def is_run_folder(*, folder: str) -> bool:
    """Whether `folder` is a run folder eb wrote: its `stages/config.json` is eb's config stage."""
    try:
        document = read_json(os.path.join(folder, STAGES_FOLDER, "config.json"))
    except (OSError, ValueError):
        return False
    return isinstance(document, dict) and document.get("$schema") == CONFIG_STAGE_SCHEMA


def in_run_folder(*, path: Path, root: Path) -> bool:
    """Whether `path` is, or lies in, a run folder below `root` (the project root, which never
    counts as one itself); False for a path outside `root`."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return False
    return any(
        is_run_folder(folder=str(root.joinpath(*parts[:depth])))
        for depth in range(1, len(parts) + 1)
    )
