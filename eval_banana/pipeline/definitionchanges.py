"""Whether a plan is still the one its check files, scripts and selection make now: the
validate stage's staleness, for `eb status` and `eb update` (which reruns the checks it names)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.core.caseid import family_of
from eval_banana.core.errors import EvalBananaError
from eval_banana.core.files import sha256_bytes, sha256_file
from eval_banana.incremental.changed import pinned_commit_gone, pinned_commit_gone_words
from eval_banana.models.config import Selection
from eval_banana.models.stages import ConfigDoc, PlanDoc, PlannedCheck
from eval_banana.pipeline.familychanges import (
    FamilyNow,
    case_change,
    family_as_now,
    files_changed,
    picked_source,
    picks_changed,
    rows_added,
    script_changed_words,
    shown_path,
)
from eval_banana.pipeline.runfiles import snapshots_changed
from eval_banana.pipeline.stalewords import describe_changes, problems_now
from eval_banana.stagefiles.read import read_stage

if TYPE_CHECKING:
    from eval_banana.checks.definition import FrozenScript


def definition_changes(*, doc: PlanDoc, run_dir: Path) -> dict[str, str]:
    """Planned check id -> which of its files has another digest now ('x.yaml changed')."""
    from eval_banana.checks.definition import definition_digest, freeze_script

    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    root = config.project_root
    changes: dict[str, str] = {}
    families: dict[str, FamilyNow] = {}
    arrivals = _Arrivals(config=config, planned={check.source_path for check in doc.checks})
    picked = {picked_source(relative=relative, config=config) for relative in doc.family_picks}
    for check in doc.checks:
        if check.family is not None:
            # A case's digest is its family's definition plus its own row: expand it again.
            if check.source_path not in families:
                families[check.source_path] = family_as_now(
                    check=check,
                    config=config,
                    run_dir=run_dir,
                    picks=doc.selection if check.source_path in picked else None,
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
            changes[check.id] = _gone(check=check, config=config, arrivals=arrivals)
            continue
        script_path = check.definition.get("script_path")
        frozen = freeze_script(yaml_path=source, script_path=script_path) if script_path else None
        if definition_digest(yaml_bytes=data, frozen=frozen) == check.check_definition_sha256:
            continue
        if (
            frozen is not None
            and check.script_path
            and _script_changed(check=check, run_dir=run_dir, frozen=frozen)
        ):
            changes[check.id] = script_changed_words(check=check, now=str(frozen.path), root=root)
        else:
            changes[check.id] = f"{shown_path(path=check.source_path, root=root)} changed"
    changes.update(rows_added(doc=doc, families=families))
    # A dataset file renamed, its rows as they were: the plan names the old file.
    changes.update(files_changed(doc=doc, families=families, told=_told(changes)))
    # A row the selection left out is compared by what the selection picks by, once no other
    # change of its family is told: a tag added to it may put it in the plan.
    changes.update(picks_changed(doc=doc, families=families, config=config, told=_told(changes)))
    return changes


def _told(changes: dict[str, str]) -> set[str]:
    """The families (and plain checks) some change of which is told already."""
    return {family_of(check_id) or check_id for check_id in changes}


class _Arrivals:
    """The check files found now that no planned check came from (a moved or renamed check
    file is one of them), with their bytes; walked once, and only when a planned file is gone."""

    def __init__(self, *, config: ConfigDoc, planned: set[str]) -> None:
        self._config = config
        self._planned = planned
        self._found: dict[str, bytes] | None = None

    def files(self) -> dict[str, bytes]:
        if self._found is None:
            from eval_banana.stages.discover import discover

            contents: dict[str, bytes] = {}
            try:
                discover(config=self._config, inputs={}, contents=contents)
            except EvalBananaError:
                contents = {}  # discovery's own row says why it fails
            self._found = {
                path: data for path, data in contents.items() if path not in self._planned
            }
        return self._found


def _gone(*, check: PlannedCheck, config: ConfigDoc, arrivals: _Arrivals) -> str:
    """Why a planned check's file cannot be read: moved (a file found now holds the same
    definition, its script found from there) or removed."""
    from eval_banana.checks.definition import definition_digest, freeze_script

    old = shown_path(path=check.source_path, root=config.project_root)
    script_path = check.definition.get("script_path")
    for path, data in arrivals.files().items():
        source = Path(path)
        frozen = freeze_script(yaml_path=source, script_path=script_path) if script_path else None
        if definition_digest(yaml_bytes=data, frozen=frozen) == check.check_definition_sha256:
            return f"{old} moved to {shown_path(path=path, root=config.project_root)}"
    return f"{old} removed"


def planned_for(plan: PlanDoc) -> Selection:
    """The selection config.json held when `plan` was made: the plan's own, unless `eb stage
    validate` applied another."""
    return plan.config_selection if plan.config_selection is not None else plan.selection


def definitions_changed(*, doc: PlanDoc, run_dir: Path) -> str | None:
    """A planned check's file or referenced script has another digest now. A reason shared
    by several checks is said once: for cases, after the first of their ids (a family's file
    is every case's reason); for plain checks (a shared script), with their count. Before
    them: config.json selects otherwise than when the plan was made (the run's request
    changed, so the plan is not the one it asks for). After them: a pinned --changed-since
    selection that picks other checks now."""
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
            changes.append(f"{describe_changes(ids)}: {why}")
        else:
            changes.append(why if len(ids) == 1 else f"{why} ({len(ids)} checks)")
    # A --changed-since run selected by what differed from its pinned commit: a check or row
    # it left out that differs now (an input edited since) is one a new plan picks.
    picked = _pinned_selection_changed(doc=doc, config=config)
    if picked is not None:
        changes.append(picked)
    if changes:
        return describe_changes(changes)
    # Execute runs the frozen copies, not the live scripts: one gone or edited is rebuilt.
    return snapshots_changed(doc=doc, run_dir=run_dir)


def _plan_now(*, doc: PlanDoc, config: ConfigDoc) -> PlanDoc | None:
    """The plan validate makes now under the selection `doc` applied, from the check files as
    they are now (as `eb update` would find them, not as a discover.json that may itself be
    stale lists them); None when it cannot be planned now."""
    from eval_banana.stages.discover import discover
    from eval_banana.stages.validate import validate

    try:
        discovered = discover(config=config, inputs={})
        return validate(
            config=config.model_copy(update={"selection": doc.selection}),
            discovered=discovered,
            inputs={},
        ).plan
    except EvalBananaError:
        return None


def _pinned_selection_changed(*, doc: PlanDoc, config: ConfigDoc) -> str | None:
    """Whether a `--changed-since` selection pinned to a commit picks other checks or cases
    now than the plan holds: one git comparison, made only for such runs. None: the same, or
    the selection cannot be made now (the stage that cannot make it tells why), unless its
    pinned commit is gone: then nothing says it selects the same, so that is a change."""
    commit = doc.selection.changed_since_commit
    if doc.selection.changed_since is None or commit is None:
        return None
    now = _plan_now(doc=doc, config=config)
    if now is None and pinned_commit_gone(selection=doc.selection, root=config.project_root):
        # Not "the same": nothing can tell whether an input edited since selects a check more.
        return pinned_commit_gone_words(selection=doc.selection)
    if now is None or not now.ok:
        return None
    planned = _picked_ids(doc)
    picked = _picked_ids(now)
    added = [check_id for check_id in picked if check_id not in planned]
    gone = [check_id for check_id in planned if check_id not in picked]
    reasons = []
    if added:
        reasons.append(f"--changed-since {commit} now also selects {describe_changes(added)}")
    if gone:
        reasons.append(f"--changed-since {commit} no longer selects {describe_changes(gone)}")
    return "; ".join(reasons) or None


def _picked_ids(plan: PlanDoc) -> dict[str, None]:
    """The ids a plan selected, in its order: the checks it runs and those it lists skipped."""
    return dict.fromkeys(
        [*(check.id for check in plan.checks), *(s.check_id for s in plan.skipped)]
    )


def _failure_changed(*, doc: PlanDoc, run_dir: Path) -> str | None:
    """A failed plan holds no checks to compare, only its problems: validate again (under the
    selection it applied) and say whether they are gone or are others now, so a fixed row or
    check file is seen before `eb update`. The same problems keep the plan `failed`."""
    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    now = _plan_now(doc=doc, config=config)
    if now is None:
        return None  # it cannot be planned now either: the failure stands
    return problems_now(recorded=doc.errors, now=now.errors, gone="the checks validate now")


def _script_changed(*, check: PlannedCheck, run_dir: Path, frozen: FrozenScript) -> bool:
    """Whether the referenced script, as the check file's `script_path` leads to it now
    (`frozen`: a link followed as it points now), differs from the copy validate froze. The
    plan's `script_path` is where the link led then: a link pointed at another script leaves
    that file as it was."""
    if not check.snapshot or not check.script_path:
        return True  # it was unavailable then, so whatever is there now is a change
    snapshot = run_dir / check.snapshot
    if frozen.data is None or not snapshot.is_file():
        return True
    return sha256_bytes(data=frozen.data) != sha256_file(path=snapshot)
