"""Whether every shard `eb merge` joins tested the code of the merge's checkout.

Shards of one plan share their check definitions (shardset.py), not the files the checks read:
a worker on an older commit runs the same check files on other code. Each shard's execute.json
records, per check that declares `inputs:` (and per assertions artifact), the state of what it
read; the merge compares them with its own checkout, as `eb status` compares a run folder's,
before it writes anything. Git tells the state by blob ids, so no file is hashed that git knows.
"""

from __future__ import annotations

from collections.abc import Sequence

from eval_banana.core.words import first_and_count
from eval_banana.models.stages import ConfigDoc, PlannedCheck
from eval_banana.pipeline.resultchanges import recorded_input_changes
from eval_banana.scaleout.shardrun import ShardRun, refuse

# How many other checks on other files a refusal names before it counts the rest.
_NAMED_OTHERS = 5


def refuse_other_inputs(
    *, runs: Sequence[ShardRun], checks: Sequence[PlannedCheck], config: ConfigDoc
) -> None:
    """Refuse the shards when a check's recorded inputs (or artifact) differ from what the
    merge's checkout holds now: its shard tested other code than the merged run would claim."""
    owner: dict[str, ShardRun] = {}
    for run in runs:
        owner.update((check_id, run) for check_id in run.execute.input_digests)
        owner.update((check_id, run) for check_id in run.execute.artifact_ids)
    if not owner:
        return
    changes = recorded_input_changes(
        checks=checks,
        input_digests={k: v for run in runs for k, v in run.execute.input_digests.items()},
        artifact_ids={k: v for run in runs for k, v in run.execute.artifact_ids.items()},
        config=config,
        anew=False,  # the same files, digested another way by an older eb, are the same code
    )
    if not changes:
        return
    ordered = [check.id for check in checks if check.id in changes]
    check_id = ordered[0]
    run = owner[check_id]
    others = ordered[1:]
    more = (
        f"; so did {first_and_count([repr(i) for i in others], shown=_NAMED_OTHERS)}"
        if others
        else ""
    )
    raise refuse(
        f"{run.label} ran check '{check_id}' on other files than this checkout holds "
        f"({changes[check_id]}: the shard's job had another commit or other local changes)"
        f"{more}",
        run_dir=run.run_dir,
        hint="Merge shards of one commit: run every shard on the commit this merge job checked "
        f"out ({config.project_root}), or run eb merge in a checkout of the shards' commit "
        "(--cwd DIR), then merge their folders.",
    )
