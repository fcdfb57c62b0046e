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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from eval_banana.core.errors import EvalBananaError, StageFileError
from eval_banana.core.files import sha256_file
from eval_banana.incremental.changed import pinned_commit_gone, pinned_commit_gone_words
from eval_banana.models.stages import ConfigDoc, DiscoverDoc, GuardDoc, PlanDoc
from eval_banana.pipeline.agreeing import disagreement
from eval_banana.pipeline.definitionchanges import definitions_changed
from eval_banana.pipeline.familychanges import shown_path
from eval_banana.pipeline.relocation import Relocation, relocation
from eval_banana.pipeline.resultchanges import results_outdated
from eval_banana.pipeline.runfiles import reports_changed
from eval_banana.pipeline.settingchanges import executable_moved
from eval_banana.pipeline.stalewords import describe_changes, problems_now
from eval_banana.stagefiles.layout import STAGE_NAMES, stage_path
from eval_banana.stagefiles.read import STAGE_INPUTS, read_stage, stage_digest


@dataclass(frozen=True)
class StageState:
    stage: str
    path: Path
    state: str  # ok | missing | invalid | failed | stale
    detail: str = ""


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
    return describe_changes(changes) if changes else None


def _walked(*, roots: list[str], root: str) -> str:
    """The folders a discovery walked, as `eb status` names them."""
    shown = [shown_path(path=path, root=root) for path in roots]
    return ", ".join("the project root" if path == "." else path for path in shown)


def _refusal_changed(*, doc: GuardDoc, run_dir: Path) -> str | None:
    """A guard that refused the run, decided again: an agent CLI installed since, a judge
    calibrated, a setting that now resolves. Else the agent's command found elsewhere now,
    or the calibration record it read."""
    if doc.ok:
        return (
            executable_moved(doc=doc, run_dir=run_dir)
            or _calibration_record_changed(doc=doc, run_dir=run_dir)
            or _gate_refuses_now(doc=doc, run_dir=run_dir)
        )
    from eval_banana.stages.guard import guard

    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    plan: PlanDoc = read_stage(run_dir=run_dir, stage="validate")
    now = guard(config=config, plan=plan, inputs={})
    return problems_now(
        recorded=doc.problems, now=now.problems, gone="the run would not be refused now"
    )


def _gate_refuses_now(*, doc: GuardDoc, run_dir: Path) -> str | None:
    """A guard that lets judges run although the calibration gate it was under refuses them
    (guard.json edited by hand into a pass): decided again from the record, the harness and the
    min_agreement it names. Only runs with judges and the gate on pay for it."""
    if not doc.judge_checks or doc.harness is None:
        return None
    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    if doc.calibration_file is None and not config.settings.harness.require_calibration:
        return None
    from eval_banana.stages.guard import gate_refusals

    plan: PlanDoc = read_stage(run_dir=run_dir, stage="validate")
    found = gate_refusals(config=config, plan=plan, guarded=doc)
    if not found:
        return None
    first = found[0].message.splitlines()[0]
    return f"it lets the run start, but the calibration gate refuses it: {first}"


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


# What each stage read from outside the run folder, or wrote beside its stage file, and how
# to tell that it changed.
SOURCE_CHECKS: dict[str, Callable[..., str | None]] = {
    "config": _config_source_changed,
    "discover": _check_files_changed,
    "validate": definitions_changed,
    "guard": _refusal_changed,
    "execute": results_outdated,
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
        if upstream[name].state == "missing":
            # Said as such, not as a changed digest: the file is gone, not edited.
            return stale(f"{relative} is missing")
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


def pinned_selection(*, run_dir: Path) -> str | None:
    """What a rebuilt plan of the run compares --changed-since with, said beside the stages:
    the commit its revision named when the run was made (a branch or HEAD may point elsewhere
    by now). None without --changed-since, or when config.json cannot be read (its row says)."""
    try:
        config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    except StageFileError:
        return None
    selection = config.selection
    if selection.changed_since is None:
        return None
    if selection.changed_since_commit is None:
        return (
            f"--changed-since {selection.changed_since} is pinned to no commit (git named "
            "none when the run was made, or an older eb made it): eb update plans against "
            "the commit it names then"
        )
    if pinned_commit_gone(selection=selection, root=config.project_root):
        return pinned_commit_gone_words(selection=selection)
    return (
        f"--changed-since {selection.changed_since} is pinned to commit "
        f"{selection.changed_since_commit}, the one it named when the run was made: eb "
        "update plans against it"
    )
