"""A merged run folder whose `eb merge` was interrupted before it had brought in every shard's
files (execute.json's `merge_interrupted`): the checks' output files and the frozen scripts
that stayed out are only in the shards, so no rebuild here can complete it. `eb status` calls
its execute stage stale and names the merge to run again; `eb update` refuses it.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from eval_banana.core.errors import MergeInterruptedError, StageFileError
from eval_banana.models.stages import ExecuteDoc
from eval_banana.stagefiles.layout import stage_path
from eval_banana.stagefiles.read import read_stage

# Why execute is stale, as `eb status` says it on the stage's line.
MERGE_INTERRUPTED = (
    "the eb merge that wrote this folder was interrupted before it brought in every shard's "
    "files: merge the same shards again"
)


def interrupted_merge(*, run_dir: Path) -> ExecuteDoc | None:
    """The run's execute.json when it records a merge that was interrupted, else None (also
    when it cannot be read: its own state says so)."""
    try:
        doc: ExecuteDoc = read_stage(run_dir=run_dir, stage="execute")
    except StageFileError:
        return None
    return doc if doc.merge_interrupted else None


def merge_again(*, doc: ExecuteDoc, run_dir: Path) -> str:
    """What completes the merged run `doc` of `run_dir`: the same shards merged again, into a
    new run folder beside this one (or, for a --flat-output folder, into an empty one)."""
    shards = " ".join(shlex.quote(source.run_dir) for source in doc.merged_from)
    if run_dir.name == doc.run_id:
        return f"eb merge {shards} --output-dir {shlex.quote(str(run_dir.parent))}"
    # --flat-output writes only into an empty folder.
    flat = shlex.quote(str(run_dir))
    return f"remove {flat}, then eb merge {shards} --output-dir {flat} --flat-output"


def refuse_interrupted_merge(*, run_dir: Path) -> None:
    """Refuse to rebuild a merged run whose merge was interrupted: rewriting its result files
    from execute.json and dropping the abort would call it complete without the shards' files."""
    doc = interrupted_merge(run_dir=run_dir)
    if doc is None:
        return
    raise MergeInterruptedError(
        f"Cannot update {run_dir}: the eb merge that wrote it was interrupted before it brought "
        "in every shard's files (the checks' output files in checks/, the frozen scripts), "
        "which only the shards hold; eb update would call the run complete without them",
        file=str(stage_path(run_dir=run_dir, stage="execute")),
        field_path="merge_interrupted",
        hint=f"Merge the same shards again: {merge_again(doc=doc, run_dir=run_dir)}",
    )
