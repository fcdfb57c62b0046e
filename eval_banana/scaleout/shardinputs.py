"""Whether every shard `eb merge` joins tested the code of the merge's checkout.

Shards of one plan share their check definitions (shardset.py), not the files the checks read:
a worker on an older commit runs the same check files on other code. Each shard's execute.json
records, per check that declares `inputs:` (and per assertions artifact), the state of what it
read, and of that what git tracks. In a git work tree the merge compares only the files git
tracks, by blob id: they are the commit (and local changes to it). Build outputs, which git
ignores or was never told of, are left out: the CI job that merges shards downloads their
folders and builds nothing, and a rebuilt artifact may differ in a timestamp. Outside git eb
cannot tell a source file from a build output, so it compares every file the checks read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from eval_banana.core.words import first_and_count, visible
from eval_banana.models.stages import ConfigDoc, PlannedCheck
from eval_banana.pipeline.resultchanges import recorded_input_changes
from eval_banana.scaleout.shardrun import ShardRun, refuse

# How many other checks on other files a refusal names before it counts the rest.
_NAMED_OTHERS = 5

# Why the files differ, said after what differs, by whether git told source from build output.
_TRACKED_WHY = "the shard's job had another commit, or local changes to files git tracks"
_EVERY_FILE_WHY = (
    "this checkout is in no git repository, so every file the check read counts, build outputs too"
)


def refuse_other_inputs(
    *, runs: Sequence[ShardRun], checks: Sequence[PlannedCheck], config: ConfigDoc
) -> None:
    """Refuse the shards when a check's recorded inputs (or artifact) differ from what the
    merge's checkout holds now: its shard tested other code than the merged run would claim.
    In a git work tree only files git tracks count (`tracked_changes`); a check whose shard
    recorded no such state (its job ran outside git) is compared file by file, as outside git."""
    owner: dict[str, ShardRun] = {}
    for run in runs:
        owner.update((check_id, run) for check_id in run.execute.input_digests)
        owner.update((check_id, run) for check_id in run.execute.artifact_ids)
        owner.update((check_id, run) for check_id in run.execute.tracked_input_digests)
    if not owner:
        return
    recorded = {k: v for run in runs for k, v in run.execute.tracked_input_digests.items()}
    tracked = _tracked_changes(checks=checks, recorded=recorded, config=config)
    whole = [check for check in checks if tracked is None or check.id not in recorded]
    changes = dict(tracked or {})
    changes.update(
        (check_id, f"{why}: {_EVERY_FILE_WHY if tracked is None else _TRACKED_WHY}")
        for check_id, why in recorded_input_changes(
            checks=whole,
            input_digests={k: v for run in runs for k, v in run.execute.input_digests.items()},
            artifact_ids={k: v for run in runs for k, v in run.execute.artifact_ids.items()},
            config=config,
            anew=False,  # the same files, digested another way by an older eb, are the same code
        ).items()
    )
    if changes:
        _refuse(
            checks=checks, changes=changes, owner=owner, config=config, in_git=tracked is not None
        )


def _tracked_changes(
    *, checks: Sequence[PlannedCheck], recorded: Mapping[str, str], config: ConfigDoc
) -> dict[str, str] | None:
    """Check id -> why the files git tracks among what it read differ from its shard's
    record; None when the merge's checkout is in no git work tree."""
    from eval_banana.checks.inputs import (
        CheckInputs,
        artifact_ids,
        artifact_of,
        declared_inputs,
        tracked_digests,
    )

    compared = [check for check in checks if check.id in recorded]
    declared = [c.definition for c in compared if declared_inputs(c.definition) is not None]
    project_root = Path(config.project_root)
    now = tracked_digests(
        checks=compared,
        reader=CheckInputs(config=config, definitions=declared) if declared else None,
        artifacts=artifact_ids(checks=compared, project_root=project_root),
        project_root=project_root,
    )
    if now is None:
        return None
    changes: dict[str, str] = {}
    for check in compared:
        if now.get(check.id) == recorded[check.id]:
            continue
        patterns = declared_inputs(check.definition)
        what = [] if patterns is None else [f"inputs {', '.join(map(visible, patterns))}"]
        if check.type == "assertions":
            what.append(f"artifact {visible(artifact_of(check))}")
        changes[check.id] = f"{' or '.join(what)} changed: {_TRACKED_WHY}"
    return changes


def _refuse(
    *,
    checks: Sequence[PlannedCheck],
    changes: Mapping[str, str],
    owner: Mapping[str, ShardRun],
    config: ConfigDoc,
    in_git: bool,
) -> None:
    """The refusal naming the first check (in plan order) whose shard read other files."""
    ordered = [check.id for check in checks if check.id in changes]
    check_id = ordered[0]
    run = owner[check_id]
    others = ordered[1:]
    more = (
        f"; so did {first_and_count([repr(i) for i in others], shown=_NAMED_OTHERS)}"
        if others
        else ""
    )
    hint = (
        "Merge shards of one commit: run every shard on the commit this merge job checked "
        f"out ({config.project_root}), or run eb merge in a checkout of the shards' commit "
        "(--cwd DIR), then merge their folders."
    )
    if not in_git:
        hint += (
            " Outside git, the merge job must hold the files the checks read as the shards "
            "had them (build outputs and artifacts too), or merge in a git checkout."
        )
    raise refuse(
        f"{run.label} ran check '{check_id}' on other files than this checkout holds "
        f"({changes[check_id]}){more}",
        run_dir=run.run_dir,
        hint=hint,
    )
