"""Which run a run folder is, and whether a stage file read from it belongs to that run.

A run's identity is the run id its config stage records (`stages/config.json`, the first file
the run writes and the mark of its folder), and every other stage file must name the same run.
config.json is itself held to the folder it sits in, since a copy of another run's would
otherwise take that run's id over (and `eb update` would then rewrite that run's history
record):

- in the output folder its own settings name, a run folder is named by its run id (eb names
  every run folder it makes there so), or is that folder itself (`--flat-output`);
- anywhere else (a folder moved or copied out of its output folder, a `--flat-output` folder
  elsewhere), the name says nothing, and config.json must name the run the stage file built
  next from it names (discover.json, or the first later one the folder holds).

The folder's name alone is no anchor (a `--flat-output` folder has any name), nor is any one
file: either way a file copied in from another run disagrees with the files the run built.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from eval_banana.core.errors import StageFileError
from eval_banana.core.readback import read_json
from eval_banana.core.realpaths import real_path
from eval_banana.models.stages import ConfigDoc
from eval_banana.settings.rundir import output_base
from eval_banana.stagefiles.layout import STAGE_NAMES, stage_path

# Peeked run ids, by the stat of the file peeked: `eb status` reads config.json a dozen times.
_PEEKED: dict[tuple[str, int, int, int], str | None] = {}


def refuse_other_run(*, run_dir: Path, stage: str, doc: Any, config_run_id: str | None) -> None:
    """A setup error when the stage file `doc`, read from `run_dir`, belongs to another run.
    `config_run_id`: the run id config.json records (None: it cannot be read, and says so)."""
    path = stage_path(run_dir=run_dir, stage=stage)
    if stage == "config":
        elsewhere = _config_elsewhere(run_dir=run_dir, config=doc)
        if elsewhere is not None:
            raise StageFileError(
                f"Stage file {path} belongs to run {doc.run_id}, but {elsewhere}",
                file=str(path),
                field_path="$.run_id",
                hint="It was copied in from another run folder: put this run's own "
                "config.json back, or start a new run with eb run.",
            )
        return
    if config_run_id is not None and doc.run_id != config_run_id:
        raise StageFileError(
            f"Stage file {path} belongs to run {doc.run_id}, not to this run "
            f"{config_run_id} (the run stages/config.json records)",
            file=str(path),
            field_path="$.run_id",
            hint="It was copied in from another run folder or edited by hand; remove it and "
            f"rerun the {stage} stage: eb stage {stage} (or eb update).",
        )


def _config_elsewhere(*, run_dir: Path, config: ConfigDoc) -> str | None:
    """Why config.json is not this folder's (None: it is, as far as the folder can tell)."""
    folder = real_path(run_dir)
    base = real_path(output_base(config=config))
    if folder == base or (folder.parent == base and folder.name == config.run_id):
        return None  # where eb made that run: in its output folder, or that folder itself
    if folder.parent == base:
        return f"this folder in that run's output folder is run {folder.name}"
    for stage in STAGE_NAMES[1:]:
        path = stage_path(run_dir=run_dir, stage=stage)
        named = _peek_run_id(path)
        if named is None:
            continue  # missing or unreadable: its own row says so
        if named != config.run_id:
            return f"{path.relative_to(run_dir)}, built next from this folder's, names run {named}"
        return None
    return None


def _peek_run_id(path: Path) -> str | None:
    """The `run_id` a stage file names, read without its schema (None: none readable)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    key = (str(path), found.st_ino, found.st_mtime_ns, found.st_size)
    if key not in _PEEKED:
        try:
            document = read_json(path)
        except (OSError, ValueError):
            document = None
        run_id = document.get("run_id") if isinstance(document, dict) else None
        _PEEKED[key] = run_id if isinstance(run_id, str) else None
    return _PEEKED[key]
