"""`eb status`: each stage file present, valid, and up to date with its inputs (like `make -n`).

A stage file is stale when a file it was built from changed since: an upstream stage file (by
the digest recorded in its `inputs`), or what the stage read from the project itself (the config
file, the check files, the referenced scripts, the calibration record, the files a check's
`inputs:` match). Staleness follows the chain: everything built from a stale, missing, invalid
or failed stage file is stale too. A stage file that is up to date but records a failure (a plan
that failed validation, a guard that refused) is failed. `eb update` reruns what this finds, by
the same reasons.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from eval_banana.core.errors import EvalBananaError, ProjectStateError, StageFileError
from eval_banana.core.files import sha256_file
from eval_banana.core.words import first_and_count
from eval_banana.models.config import Selection
from eval_banana.models.result import NOT_RUN as NOT_RUN_KEY
from eval_banana.models.result import STOPPED as STOPPED_KEY
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import (
    ConfigDoc,
    DiscoverDoc,
    ExecuteDoc,
    GuardDoc,
    PlanDoc,
    PlannedCheck,
    ProblemModel,
)
from eval_banana.pipeline.agreeing import disagreement
from eval_banana.pipeline.familychanges import (
    FamilyNow,
    case_change,
    family_as_now,
    rows_added,
    shown_path,
)
from eval_banana.pipeline.relocation import Relocation, relocation
from eval_banana.pipeline.runfiles import reports_changed, snapshots_changed
from eval_banana.stagefiles.agreement import unresulted
from eval_banana.stagefiles.layout import STAGE_NAMES, stage_path
from eval_banana.stagefiles.read import STAGE_INPUTS, read_stage, stage_digest

_SHOWN_CHANGES = 3
# Why a check recorded as never run, or stopped while it ran, is run by `eb update`: it has no
# result yet.
NOT_RUN = "no result yet (recorded as not run)"
NO_RESULT = "no result recorded"
STOPPED_WHILE_RUNNING = "no result yet (stopped while it ran)"


@dataclass(frozen=True)
class StageState:
    stage: str
    path: Path
    state: str  # ok | missing | invalid | failed | stale
    detail: str = ""


def _describe_changes(changes: list[str]) -> str:
    return first_and_count(changes, shown=_SHOWN_CHANGES)


def _config_source_changed(*, doc: ConfigDoc, run_dir: Path) -> str | None:
    """The config file read then has different bytes now (or is gone)."""
    if doc.config_file is None or doc.config_file_sha256 is None:
        return None
    path = Path(doc.config_file)
    current = sha256_file(path=path) if path.is_file() else None
    if current == doc.config_file_sha256:
        return None
    return f"{doc.config_file} {'changed' if current else 'was removed'}"


def _check_files_changed(*, doc: DiscoverDoc, run_dir: Path) -> str | None:
    """Walk again: a check file added, removed or edited since discover ran."""
    from eval_banana.stages.discover import discover

    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    try:
        now = discover(config=config, inputs={})
    except EvalBananaError as exc:
        return f"discovery fails now: {exc.message}"
    root = config.project_root
    if doc.roots != now.roots:
        # `eb stage discover --check-dir X` walked another folder than the run's request.
        return (
            f"stages/discover.json walked {_walked(roots=doc.roots, root=root)}, not "
            f"{_walked(roots=now.roots, root=root)} that stages/config.json selects"
        )
    before = {item.path: item.sha256 for item in doc.files}
    after = {item.path: item.sha256 for item in now.files}
    changes = [f"{shown_path(path=p, root=root)} added" for p in sorted(after.keys() - before)]
    changes += [f"{shown_path(path=p, root=root)} removed" for p in sorted(before.keys() - after)]
    changes += [
        f"{shown_path(path=p, root=root)} changed"
        for p in sorted(before.keys() & after.keys())
        if before[p] != after[p]
    ]
    return _describe_changes(changes) if changes else None


def _walked(*, roots: list[str], root: str) -> str:
    """The folders a discovery walked, as `eb status` names them."""
    shown = [shown_path(path=path, root=root) for path in roots]
    return ", ".join("the project root" if path == "." else path for path in shown)


def definition_changes(*, doc: PlanDoc, run_dir: Path) -> dict[str, str]:
    """Planned check id -> which of its files has another digest now ('x.yaml changed')."""
    from eval_banana.checks.definition import definition_digest, freeze_script

    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    changes: dict[str, str] = {}
    families: dict[str, FamilyNow] = {}
    for check in doc.checks:
        if check.family is not None:
            # A case's digest is its family's definition plus its own row: expand it again.
            if check.source_path not in families:
                families[check.source_path] = family_as_now(
                    check=check, config=config, run_dir=run_dir
                )
            reason = case_change(
                check=check,
                now=families[check.source_path],
                config=config,
                file_rows=doc.family_file_rows.get(check.family),
            )
            if reason is not None:
                changes[check.id] = reason
            continue
        source = Path(check.source_path)
        try:
            data = source.read_bytes()
        except OSError:
            changes[check.id] = (
                f"{shown_path(path=check.source_path, root=config.project_root)} removed"
            )
            continue
        script_path = check.definition.get("script_path")
        frozen = freeze_script(yaml_path=source, script_path=script_path) if script_path else None
        if definition_digest(yaml_bytes=data, frozen=frozen) == check.check_definition_sha256:
            continue
        changed = check.source_path
        if (
            frozen is not None
            and check.script_path
            and _script_changed(check=check, run_dir=run_dir)
        ):
            changed = check.script_path
        changes[check.id] = f"{shown_path(path=changed, root=config.project_root)} changed"
    changes.update(rows_added(doc=doc, families=families))
    return changes


def planned_for(plan: PlanDoc) -> Selection:
    """The selection config.json held when `plan` was made: the plan's own, unless `eb stage
    validate` applied another."""
    return plan.config_selection if plan.config_selection is not None else plan.selection


def _definitions_changed(*, doc: PlanDoc, run_dir: Path) -> str | None:
    """A planned check's file or referenced script has another digest now. A reason shared
    by several checks is said once: for cases, after the first of their ids (a family's file
    is every case's reason); for plain checks (a shared script), with their count. Before
    them: config.json selects otherwise than when the plan was made (the run's request
    changed, so the plan is not the one it asks for)."""
    from eval_banana.core.caseid import split_case_check_id

    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    if config.selection != planned_for(doc):
        return "stages/config.json selects other checks than the plan was made for"
    if not doc.ok:
        return _failure_changed(doc=doc, run_dir=run_dir)
    by_reason: dict[str, list[str]] = {}
    for check_id, why in definition_changes(doc=doc, run_dir=run_dir).items():
        by_reason.setdefault(why, []).append(check_id)
    changes = []
    for why, ids in by_reason.items():
        if any(split_case_check_id(check_id) is not None for check_id in ids):
            changes.append(f"{_describe_changes(ids)}: {why}")
        else:
            changes.append(why if len(ids) == 1 else f"{why} ({len(ids)} checks)")
    if changes:
        return _describe_changes(changes)
    # Execute runs the frozen copies, not the live scripts: one gone or edited is rebuilt.
    return snapshots_changed(doc=doc, run_dir=run_dir)


def _failure_changed(*, doc: PlanDoc, run_dir: Path) -> str | None:
    """A failed plan holds no checks to compare, only its problems: validate again (under the
    selection it applied) and say whether they are gone or are others now, so a fixed row or
    check file is seen before `eb update`. The same problems keep the plan `failed`."""
    from eval_banana.stages.discover import discover
    from eval_banana.stages.validate import validate

    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    try:
        # The check files as they are now (as `eb update` would find them), not as a
        # discover.json that may itself be stale lists them.
        discovered = discover(config=config, inputs={})
        now = validate(
            config=config.model_copy(update={"selection": doc.selection}),
            discovered=discovered,
            inputs={},
        ).plan
    except EvalBananaError:
        return None  # it cannot be planned now either: the failure stands
    return _problems_now(recorded=doc.errors, now=now.errors, gone="the checks validate now")


def _refusal_changed(*, doc: GuardDoc, run_dir: Path) -> str | None:
    """A guard that refused the run, decided again: an agent CLI installed since, a judge
    calibrated, a setting that now resolves. Else the calibration record it read."""
    if doc.ok:
        return _calibration_record_changed(doc=doc, run_dir=run_dir)
    from eval_banana.stages.guard import guard

    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    plan: PlanDoc = read_stage(run_dir=run_dir, stage="validate")
    now = guard(config=config, plan=plan, inputs={})
    return _problems_now(
        recorded=doc.problems, now=now.problems, gone="the run would not be refused now"
    )


def _problems_now(
    *, recorded: list[ProblemModel], now: list[ProblemModel], gone: str
) -> str | None:
    """Why a stage file that records a failure is stale: its problems are gone, or others now
    (None: the same problem records, so the failure is up to date)."""
    if not now:
        return f"the problems it recorded are gone: {gone}"
    if now == recorded:
        return None
    first = now[0].message.splitlines()[0]
    return f"the problems it recorded changed; the first now: {first}"


def _script_changed(*, check: PlannedCheck, run_dir: Path) -> bool:
    """Whether the referenced script differs from the copy validate froze."""
    if not check.snapshot or not check.script_path:
        return True  # it was unavailable then, so whatever is there now is a change
    snapshot = run_dir / check.snapshot
    script = Path(check.script_path)
    if not script.is_file() or not snapshot.is_file():
        return True
    return sha256_file(path=script) != sha256_file(path=snapshot)


def _calibration_record_changed(*, doc: GuardDoc, run_dir: Path) -> str | None:
    """The calibration record the gate read has other bytes now (written, changed or removed)."""
    if doc.calibration_file is None:
        return None
    path = Path(doc.calibration_file)
    current = sha256_file(path=path) if path.is_file() else None
    if current == doc.calibration_file_sha256:
        return None
    if doc.calibration_file_sha256 is None:
        return f"{doc.calibration_file} was written"
    return f"{doc.calibration_file} {'changed' if current else 'was removed'}"


def input_changes(*, plan: PlanDoc, executed: ExecuteDoc, config: ConfigDoc) -> dict[str, str]:
    """Check id -> why the files its `inputs:` match, or the artifact an assertions check
    grades, differ from those its result was judged on (checks with no recorded input digest
    cannot be compared, as checks without `inputs:`)."""
    changes = _artifact_changes(plan=plan, executed=executed, config=config)
    changes.update(
        (check_id, why)
        for check_id, why in _declared_input_changes(
            plan=plan, executed=executed, config=config
        ).items()
        if check_id not in changes
    )
    return changes


def _artifact_changes(*, plan: PlanDoc, executed: ExecuteDoc, config: ConfigDoc) -> dict[str, str]:
    """Assertions check id -> 'artifact <path> changed' (or appeared, or is gone) since its
    result graded it: the artifact is what its verdict is about, `inputs:` or not."""
    from eval_banana.checks.inputs import artifact_ids, artifact_of

    recorded = executed.artifact_ids
    compared = [check for check in plan.checks if check.id in recorded]
    current = artifact_ids(checks=compared, project_root=Path(config.project_root))
    changes: dict[str, str] = {}
    for check in compared:
        before, now = recorded[check.id], current.get(check.id)
        if now == before:
            continue
        artifact = artifact_of(check)
        what = "is gone" if now == "absent" else "appeared" if before == "absent" else "changed"
        changes[check.id] = f"artifact {artifact} {what}"
    return changes


def _declared_input_changes(
    *, plan: PlanDoc, executed: ExecuteDoc, config: ConfigDoc
) -> dict[str, str]:
    from eval_banana.checks.inputs import CheckInputs, declared_inputs

    recorded = executed.input_digests
    declared = {
        check.id: (patterns, tuple(check.family_files or ()))
        for check in plan.checks
        if check.id in recorded and (patterns := declared_inputs(check.definition)) is not None
    }
    if not declared:
        return {}
    reader = CheckInputs(
        config=config, definitions=[c.definition for c in plan.checks if c.id in declared]
    )
    # A case's own row is its definition's (validate's staleness), not an input's: its family
    # files are left out here as execute left them out when it recorded the digest.
    return {
        check_id: f"inputs {', '.join(patterns) or '(none)'} changed"
        for check_id, (patterns, family_files) in declared.items()
        if reader.digest(inputs=patterns, excluding=family_files) != recorded[check_id]
    }


def outdated_results(
    *,
    plan: PlanDoc,
    executed: ExecuteDoc | None,
    config: ConfigDoc,
    changed_files: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Planned check id -> why its recorded result is not one for the plan and files of now
    (no result, another definition, changed inputs), in plan order; the others are current.
    `changed_files`: check id -> which of its files changed since the plan before this one
    (`definition_changes`), said instead of "its definition changed" where known."""
    recorded = {result.check_id: result for result in executed.results} if executed else {}
    reasons: dict[str, str] = {}
    for check in plan.checks:
        result = recorded.get(check.id)
        if result is None:
            reasons[check.id] = NO_RESULT
        elif result.check_definition_sha256 != check.check_definition_sha256:
            reasons[check.id] = (changed_files or {}).get(check.id, "its definition changed")
        elif (why := _no_result_yet(result=result)) is not None:
            reasons[check.id] = why
    if executed is not None:
        changed = input_changes(plan=plan, executed=executed, config=config)
        reasons.update((key, why) for key, why in changed.items() if key not in reasons)
    order = {check.id: position for position, check in enumerate(plan.checks)}
    return dict(sorted(reasons.items(), key=lambda item: order[item[0]]))


def _results_outdated(*, doc: ExecuteDoc, run_dir: Path) -> str | None:
    """A planned check with no result yet (a stopped run never started it, or ended it), or a
    checked `inputs:` file or an assertions check's artifact changed since the result that
    read it was recorded."""
    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    plan: PlanDoc = read_stage(run_dir=run_dir, stage="validate")
    without = _without_result(plan=plan, executed=doc)
    try:
        changed = input_changes(plan=plan, executed=doc, config=config)
    except ProjectStateError as exc:
        return f"cannot read the checks' inputs: {exc.message}"
    changes = [f"{_describe_changes(ids)}: {why}" for why, ids in without.items()]
    changes += [f"{check_id}: {why}" for check_id, why in changed.items()]
    return _describe_changes(changes) if changes else None


def _no_result_yet(*, result: CheckResult) -> str | None:
    """Why a recorded result is no result: the check never ran (maxfail, an interrupt, a
    budget, or `eb stage execute --check-id` over a check with no earlier result), or the run
    stopped while it ran (an interrupt, a fuse, a file eb could not write), so it reached no
    verdict. A check that timed out or could not start keeps its error."""
    if result.details.get(NOT_RUN_KEY) is True:
        return NOT_RUN
    if result.details.get(STOPPED_KEY) is True:
        return STOPPED_WHILE_RUNNING
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


# What each stage read from outside the run folder, or wrote beside its stage file, and how
# to tell that it changed.
SOURCE_CHECKS: dict[str, Callable[..., str | None]] = {
    "config": _config_source_changed,
    "discover": _check_files_changed,
    "validate": _definitions_changed,
    "guard": _refusal_changed,
    "execute": _results_outdated,
    "report": reports_changed,
}


def stage_state(*, run_dir: Path, stage: str, upstream: dict[str, StageState]) -> StageState:
    """The state of one stage, given the states already found for the stages before it."""
    path = stage_path(run_dir=run_dir, stage=stage)
    if not os.path.lexists(path):
        # Anything else at the path (a folder) is read, and found invalid, as such.
        return StageState(stage=stage, path=path, state="missing")
    try:
        doc = read_stage(run_dir=run_dir, stage=stage)
    except StageFileError as exc:
        return StageState(stage=stage, path=path, state="invalid", detail=exc.message)

    def stale(detail: str) -> StageState:
        return StageState(stage=stage, path=path, state="stale", detail=detail)

    for name in STAGE_INPUTS[stage]:
        relative = stage_path(run_dir=run_dir, stage=name).relative_to(run_dir)
        try:
            digest = stage_digest(run_dir=run_dir, stage=name)
        except StageFileError as exc:  # a FIFO or device in its place
            return stale(exc.message)
        if digest != doc.inputs.get(name):
            return stale(f"{relative} changed")
    # Made from the upstream files there now, so its fields must be what those say.
    problem = disagreement(run_dir=run_dir, stage=stage, doc=doc)
    if problem is not None:
        return StageState(stage=stage, path=path, state="invalid", detail=problem.message)
    source_check = SOURCE_CHECKS.get(stage)
    if source_check is not None:
        try:
            changed = source_check(doc=doc, run_dir=run_dir)
        except StageFileError as exc:
            changed = f"cannot compare: {exc.message}"
        if changed:
            return stale(changed)
    for name in STAGE_INPUTS[stage]:
        state = upstream[name]
        if state.state != "ok":
            relative = state.path.relative_to(run_dir)
            return stale(f"{relative} is {state.state}")
    failure = _recorded_failure(doc=doc)
    if failure is not None:
        # Up to date, but what it records is a failure: nothing may be built on it, and
        # `eb update` runs it again (so it fails again, with its own error and exit code).
        return StageState(stage=stage, path=path, state="failed", detail=failure)
    return StageState(stage=stage, path=path, state="ok")


def _recorded_failure(*, doc: object) -> str | None:
    """The first problem of a plan that failed validation or a guard that refused the run."""
    if isinstance(doc, PlanDoc | GuardDoc) and not doc.ok:
        problems = doc.errors if isinstance(doc, PlanDoc) else doc.problems
        if not problems:
            return "it records a failure without a reason"
        first = problems[0].message.splitlines()[0]  # one line per stage in the table
        more = len(problems) - 1
        return first + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")
    return None


def moved_project(*, run_dir: Path) -> Relocation | None:
    """The project the run folder now sits in, when it is not the one config.json records
    (None: it is, or config.json cannot be read, which its own row says)."""
    try:
        config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    except StageFileError:
        return None
    return relocation(run_dir=run_dir, config=config)


def _moved_state(*, run_dir: Path, stage: str, moved: Relocation) -> StageState:
    """A stage of a run whose project moved: every file it compares names the old folder, so
    none is compared (a file there is no change here); the config stage is rebuilt in the
    project the run belongs to now, and everything built from it after it."""
    path = stage_path(run_dir=run_dir, stage=stage)
    if not os.path.lexists(path):
        # Anything else at the path (a folder) is read, and found invalid, as such.
        return StageState(stage=stage, path=path, state="missing")
    try:
        read_stage(run_dir=run_dir, stage=stage)
    except StageFileError as exc:
        return StageState(stage=stage, path=path, state="invalid", detail=exc.message)
    detail = moved.reason() if stage == "config" else "stages/config.json is stale"
    return StageState(stage=stage, path=path, state="stale", detail=detail)


def run_status(*, run_dir: Path) -> list[StageState]:
    """Every stage's state, in pipeline order; staleness flows down the chain."""
    moved = moved_project(run_dir=run_dir)
    states: dict[str, StageState] = {}
    for stage in STAGE_NAMES:
        if moved is not None:
            states[stage] = _moved_state(run_dir=run_dir, stage=stage, moved=moved)
        else:
            states[stage] = stage_state(run_dir=run_dir, stage=stage, upstream=states)
    return [states[stage] for stage in STAGE_NAMES]
