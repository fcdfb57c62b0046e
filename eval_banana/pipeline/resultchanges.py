"""Whether a recorded result is still a verdict on the plan, files and settings of now: no
result yet, another definition, changed `inputs:` files or artifact, or other settings than it
was decided under (`settingchanges.py`). The execute stage's staleness, for
`eb status` and `eb update` (which reruns the checks it names)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from eval_banana.core.errors import ProjectStateError
from eval_banana.core.words import visible
from eval_banana.models.result import NOT_RUN as NOT_RUN_KEY
from eval_banana.models.result import RESOURCE_FAULT, WRITE_FAULT, CheckResult
from eval_banana.models.result import STOPPED as STOPPED_KEY
from eval_banana.models.stages import ConfigDoc, ExecuteDoc, PlanDoc, PlannedCheck
from eval_banana.pipeline.interruptedmerge import MERGE_INTERRUPTED
from eval_banana.pipeline.runfiles import result_files_changed
from eval_banana.pipeline.settingchanges import SettingsNow, setting_changes, settings_to_come
from eval_banana.pipeline.stalewords import describe_changes
from eval_banana.runners.results import STOP_REASON_TEXT
from eval_banana.stagefiles.agreement import edited_verdicts, unresulted
from eval_banana.stagefiles.read import read_stage

# Why a check recorded as never run, or stopped while it ran, is run by `eb update`: it has no
# result yet.
NOT_RUN = "no result yet (recorded as not run)"
NO_RESULT = "no result recorded"
STOPPED_WHILE_RUNNING = "no result yet (stopped while it ran)"
# A fault's `error` stands in for what the check decided (or would have): eb could not write
# its output (or its script), or had no file left to open, so its outcome was lost.
OUTPUT_LOST = "no result yet (its output could not be written)"
NOT_JUDGED = "no result yet (eb had too many files open)"
# A result whose verdict no longer has the digest taken when it was made.
VERDICT_EDITED = "its verdict in stages/execute.json was edited after the check reached it"


def input_changes(*, plan: PlanDoc, executed: ExecuteDoc, config: ConfigDoc) -> dict[str, str]:
    """Check id -> why the files its `inputs:` match, or the artifact an assertions check
    grades, differ from those its result was judged on (checks with no recorded input digest
    cannot be compared, as checks without `inputs:`)."""
    return recorded_input_changes(
        checks=plan.checks,
        input_digests=executed.input_digests,
        artifact_ids=executed.artifact_ids,
        config=config,
    )


def recorded_input_changes(
    *,
    checks: Sequence[PlannedCheck],
    input_digests: Mapping[str, str],
    artifact_ids: Mapping[str, str],
    config: ConfigDoc,
    anew: bool = True,
) -> dict[str, str]:
    """`input_changes` of checks whose recorded digests are given apart from an execute
    stage (`eb merge` compares each shard's with the merge's checkout before it writes one).
    `anew`: also name the inputs whose files are as they were but whose digest an earlier eb
    made another way (a rerun's key is new; the files a merge compares are the same)."""
    changes = _artifact_changes(checks=checks, recorded=artifact_ids, config=config)
    changes.update(
        (check_id, why)
        for check_id, why in _declared_input_changes(
            checks=checks, recorded=input_digests, config=config, anew=anew
        ).items()
        if check_id not in changes
    )
    return changes


def _artifact_changes(
    *, checks: Sequence[PlannedCheck], recorded: Mapping[str, str], config: ConfigDoc
) -> dict[str, str]:
    """Assertions check id -> 'artifact <path> changed' (or appeared, or is gone) since its
    result graded it: the artifact is what its verdict is about, `inputs:` or not."""
    from eval_banana.checks.inputs import artifact_ids, artifact_of

    compared = [check for check in checks if check.id in recorded]
    current = artifact_ids(checks=compared, project_root=Path(config.project_root))
    changes: dict[str, str] = {}
    for check in compared:
        before, now = recorded[check.id], current.get(check.id)
        if now == before:
            continue
        artifact = artifact_of(check)
        what = "is gone" if now == "absent" else "appeared" if before == "absent" else "changed"
        changes[check.id] = f"artifact {visible(artifact)} {what}"
    return changes


def _declared_input_changes(
    *,
    checks: Sequence[PlannedCheck],
    recorded: Mapping[str, str],
    config: ConfigDoc,
    anew: bool = True,
) -> dict[str, str]:
    from eval_banana.checks.inputs import CheckInputs, declared_inputs

    own_files = _OwnFiles(config=config)
    declared = {
        check.id: (patterns, own_files.of(check))
        for check in checks
        if check.id in recorded and (patterns := declared_inputs(check.definition)) is not None
    }
    if not declared:
        return {}
    reader = CheckInputs(
        config=config, definitions=[c.definition for c in checks if c.id in declared]
    )
    # A case's own row is its definition's (validate's staleness), not an input's: its family
    # files are left out here as execute left them out when it recorded the digest.
    changes: dict[str, str] = {}
    for check_id, (patterns, family_files) in declared.items():
        before = recorded[check_id]
        if reader.digest(inputs=patterns, excluding=family_files) == before:
            continue
        # A check file's patterns, said on one line of `eb status` and `eb update`.
        shown = ", ".join(visible(pattern) for pattern in patterns) or "(none)"
        if reader.digest_before_modes(inputs=patterns, excluding=family_files) == before:
            # Recorded by an eb that left file modes out of the digest: the files are as they
            # were, and only the verdict's key is new (the check runs again, as its cache misses).
            if not anew:
                continue
            changes[check_id] = (
                f"inputs {shown}: digest made anew by this eb version (the files are as they were)"
            )
        else:
            changes[check_id] = f"inputs {shown} changed"
    return changes


class _OwnFiles:
    """A case's own files, which a run leaves out of its inputs: its check file and the files
    its family's `cases_from` names now, as a fresh run's plan would name them (a dataset file
    renamed since the plan was made is its definition's under its new name, not a new input
    of every case). Found once per family; the plan's `family_files` when they cannot be."""

    def __init__(self, *, config: ConfigDoc) -> None:
        self._config = config
        self._found: dict[str, tuple[str, ...]] = {}

    def of(self, check: PlannedCheck) -> tuple[str, ...]:
        from eval_banana.pipeline.familychanges import dataset_files_now

        planned = tuple(check.family_files or ())
        if check.family is None or not planned:
            return planned
        found = self._found.get(check.source_path)
        if found is None:
            now = dataset_files_now(source_path=check.source_path, config=self._config)
            found = planned if now is None else (planned[0], *now)
            self._found[check.source_path] = found
        return found


def outdated_results(
    *,
    plan: PlanDoc,
    executed: ExecuteDoc | None,
    config: ConfigDoc,
    settings: SettingsNow,
    changed_files: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Planned check id -> why its recorded result is not one for the plan, files and
    `settings` of now (no result, another definition, changed inputs, other settings), in plan
    order; the others are current. `changed_files`: check id -> which of its files changed
    since the plan before this one (`definition_changes`), said instead of "its definition
    changed" where known."""
    recorded = {result.check_id: result for result in executed.results} if executed else {}
    # A verdict edited in execute.json after its result was made is no verdict the check
    # reached: it is reached again (the file is `invalid` in `eb status` meanwhile).
    edited = edited_verdicts(executed) if executed else {}
    reasons: dict[str, str] = {}
    for check in plan.checks:
        result = recorded.get(check.id)
        if result is None:
            reasons[check.id] = NO_RESULT
        elif result.check_definition_sha256 != check.check_definition_sha256:
            reasons[check.id] = (changed_files or {}).get(check.id, "its definition changed")
        elif check.id in edited:
            reasons[check.id] = VERDICT_EDITED
        elif (why := _no_result_yet(result=result)) is not None:
            reasons[check.id] = why
    if executed is not None:
        changed = input_changes(plan=plan, executed=executed, config=config)
        changed.update(
            (key, why)
            for key, why in setting_changes(plan=plan, executed=executed, now=settings).items()
            if key not in changed
        )
        reasons.update((key, why) for key, why in changed.items() if key not in reasons)
    order = {check.id: position for position, check in enumerate(plan.checks)}
    return dict(sorted(reasons.items(), key=lambda item: order[item[0]]))


def results_outdated(*, doc: ExecuteDoc, run_dir: Path) -> str | None:
    """A merged run whose merge was interrupted before it brought in every shard's files, a
    planned check with no result yet (a stopped run never started it, or ended it), a
    checked `inputs:` file or an assertions check's artifact changed since the result that
    read it was recorded, or a check's result file gone or edited since it was written."""
    if doc.merge_interrupted:
        # Said alone: the files it lacks are the shards' to bring, never eb update's to write.
        return MERGE_INTERRUPTED
    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    plan: PlanDoc = read_stage(run_dir=run_dir, stage="validate")
    without = _without_result(plan=plan, executed=doc)
    try:
        changed = input_changes(plan=plan, executed=doc, config=config)
    except ProjectStateError as exc:
        return f"cannot read the checks' inputs: {exc.message}"
    # Compared with what `eb update` would run them under, once it has rebuilt the stages
    # before execute (the configuration resolved again when the config file changed).
    settings = settings_to_come(run_dir=run_dir, config=config)
    if settings is not None:
        no_result = {check_id for ids in without.values() for check_id in ids}
        changed.update(
            (check_id, why)
            for check_id, why in setting_changes(plan=plan, executed=doc, now=settings).items()
            if check_id not in changed and check_id not in no_result
        )
    changes = [f"{describe_changes(ids)}: {why}" for why, ids in without.items()]
    changes += [f"{check_id}: {why}" for check_id, why in changed.items()]
    changes += result_files_changed(doc=doc, run_dir=run_dir).values()
    if changes:
        return describe_changes(changes)
    return _abort_without_loss(doc=doc)


def _abort_without_loss(*, doc: ExecuteDoc) -> str | None:
    """A run recorded as aborted although every planned check holds its verdict (an interrupt
    once its last check had ended, while the verdicts were stored): nothing is left to run, yet
    the run cannot pass, so `eb update` records the results again, without the abort. A fault
    that took a check's outcome is never this: that check has no result yet (`_no_result_yet`)
    and runs again first, its output and result written anew. Nor is a merge interrupted before
    it brought in the shards' files (`merge_interrupted`, asked first): only the shards have
    them."""
    if doc.aborted_by is None:
        return None
    why = STOP_REASON_TEXT.get(doc.aborted_by, doc.aborted_by)
    return f"recorded as aborted ({doc.aborted_by}: {why}) though every check has its result"


def _no_result_yet(*, result: CheckResult) -> str | None:
    """Why a recorded result is no result: the check never ran (maxfail, an interrupt, a
    budget, or `eb stage execute --check-id` over a check with no earlier result), the run
    stopped while it ran (an interrupt, a fuse), or a fault took its outcome (a file eb could
    not write: its output, its script; too many open files), so it reached no verdict. A check
    that timed out or could not start keeps its error: that is its result."""
    if result.details.get(NOT_RUN_KEY) is True:
        return NOT_RUN
    if result.details.get(STOPPED_KEY) is True:
        return STOPPED_WHILE_RUNNING
    # Infrastructure, never a verdict (runners/faults.py): run again once there is room.
    if isinstance(result.details.get(WRITE_FAULT), dict):
        return OUTPUT_LOST
    if isinstance(result.details.get(RESOURCE_FAULT), dict):
        return NOT_JUDGED
    return None


def _without_result(*, plan: PlanDoc, executed: ExecuteDoc) -> dict[str, list[str]]:
    """Why -> the planned checks whose result, for their planned definition, is no result,
    and those execute.json holds no result of at all (the run cannot pass on either)."""
    planned = {check.id: check.check_definition_sha256 for check in plan.checks}
    found: dict[str, list[str]] = {}
    missing = unresulted(plan=plan, execute=executed)
    if missing:
        found[NO_RESULT] = missing
    for result in executed.results:
        why = _no_result_yet(result=result)
        if why is not None and planned.get(result.check_id) == result.check_definition_sha256:
            found.setdefault(why, []).append(result.check_id)
    return found
