"""What a verdict's key was taken from that a check may change while the run goes on, read again
before the verdict is stored.

Keys are taken before any check starts. A check running in the project (isolation `off`, the
default) may write files another check's key was taken from: the second check is then judged on
bytes its key does not name, and a verdict stored under that key would be reused once the old
bytes are back. So the files the keys of the checks about to be stored read (their `inputs:`
matches, the whole project for a check that declares none, an assertions check's artifact) are
read once more, in one pass over all of them, and compared with the state the keys took.
"""

from __future__ import annotations

from collections.abc import Sequence

from eval_banana.cache.components import KeyContext
from eval_banana.checks.inputs import artifact_id, artifact_of, declared_inputs
from eval_banana.models.stages import PlannedCheck


def changed_since_keyed(
    *, context: KeyContext, checks: Sequence[PlannedCheck], artifacts_now: dict[str, str]
) -> dict[str, list[str]]:
    """Check stem -> the project files its key was taken from that differ now (added, removed
    or changed; empty: none). The input states are read again once for all of `checks`;
    `artifacts_now`: artifact path -> its id now, filled in as artifacts are read (each once).
    Raises what reading the project raises (ProjectStateError, NotARepository, OSError)."""
    again = context.inputs.read_again(definitions=[check.definition for check in checks])
    found: dict[str, list[str]] = {}
    for check in checks:
        changed = again.changed_since(
            earlier=context.inputs,
            inputs=declared_inputs(check.definition),
            excluding=tuple(check.family_files or ()),
        )
        if check.type == "assertions":
            artifact = artifact_of(check)
            now = artifacts_now.get(artifact)
            if now is None:
                now = artifact_id(artifact=artifact, project_root=context.project_root)
                artifacts_now[artifact] = now
            if now != context.artifacts[check.id] and artifact not in changed:
                changed = [artifact, *changed]
        found[check.stem] = changed
    return found
