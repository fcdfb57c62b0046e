"""A run's isolation: which checks are watched or copied, and what their changes make of them.

`[harness] isolation` applies to judges, `[execution] isolation` to deterministic checks
(assertions checks only read one file in eb's own process, so there is nothing to isolate):
- `detect`: the check runs in the project; a project file that changed while it ran makes it
  an `error` (so does every other watched check running at that moment: who wrote is unknown).
- `copy`: the check runs in its own disposable copy; what it changed there is listed in
  `details.isolation.changed`, the project stays as it was, and a check that changed its copy
  is an `error` too (its verdict may be about its own edits), unless the paths are ignored.
- `off`: as eval-banana does, the check runs in the project and may write.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from eval_banana.ebfolders import own_folders
from eval_banana.isolation.detect import SHOWN_PATHS, ChangeMonitor
from eval_banana.isolation.modes import Mode, check_mode, isolates_any
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, PlanDoc, PlannedCheck
from eval_banana.runners.base import ProjectView

RunIn = Callable[[ProjectView | None], CheckResult]


def _noun(check: PlannedCheck) -> str:
    return "judge" if check.type == "harness_judge" else "check"


def _shown(paths: list[str]) -> str:
    listed = ", ".join(paths[:5])
    return listed + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


def _record(*, mode: Mode, paths: list[str], method: str | None) -> dict[str, Any]:
    record: dict[str, Any] = {"mode": mode}
    if method is not None:
        record["method"] = method
    record["changed"] = paths[:SHOWN_PATHS]
    record["changed_count"] = len(paths)
    return record


def _with_isolation(
    *, result: CheckResult, record: dict[str, Any], problem: str | None
) -> CheckResult:
    """The result with `details.isolation`; an `error` (score 0) when there is a problem."""
    if problem is None:
        return result.model_copy(update={"details": {**result.details, "isolation": record}})
    # The check's own answer is kept, but as evidence: its result is the isolation error.
    record = {**record, "status_before": result.status, "reason_before": result.reason}
    return result.model_copy(
        update={
            "status": "error",
            "score": 0,
            "observed_status": "error",
            "reason": None,
            "error_detail": problem,
            "details": {**result.details, "isolation": record},
        }
    )


class IsolationSession:
    """The project's state for a run whose checks are isolated, and how each one runs."""

    def __init__(self, *, config: ConfigDoc, monitor: ChangeMonitor) -> None:
        self.config = config
        self.root = Path(config.project_root)
        self.monitor = monitor

    @classmethod
    def open(cls, *, config: ConfigDoc, plan: PlanDoc) -> IsolationSession | None:
        """Read the project's state when some planned check is isolated; else None."""
        if not isolates_any(config=config, plan=plan):
            return None
        monitor = ChangeMonitor.open(
            root=Path(config.project_root),
            excluded_names=config.settings.discovery.exclude_dirs,
            skip_folders=own_folders(config=config),
            ignore=config.settings.harness.isolation_ignore,
        )
        return cls(config=config, monitor=monitor)

    def run(self, *, check: PlannedCheck, key: str, run_in: RunIn) -> CheckResult:
        """Run one check as its mode says; `run_in(view)` runs it (view None: in the project)."""
        mode = check_mode(config=self.config, check=check)
        if mode == "off":
            return run_in(None)
        if mode == "copy":
            return self._in_copy(check=check, key=key, run_in=run_in)
        self.monitor.started(key=key)
        try:
            result = run_in(None)
        finally:
            changed = self.monitor.ended(key=key)
        problem = None
        if changed:
            problem = (
                f"The project changed while this {_noun(check)} ran: {_shown(changed)}. "
                "A judge must not change what it judges; run judges that need to write with "
                '[harness] isolation = "copy" (or "off" for judges meant to write)'
            )
        record = _record(mode="detect", paths=changed, method=None)
        return _with_isolation(result=result, record=record, problem=problem)

    def _in_copy(self, *, check: PlannedCheck, key: str, run_in: RunIn) -> CheckResult:
        from eval_banana.isolation.workspace import make_workspace

        workspace = make_workspace(root=self.root, paths=self.monitor.paths)
        view = ProjectView(path=workspace.path, cwd=workspace.cwd, wrap=workspace.wrap)
        self.monitor.started(key=key)  # writes through absolute paths still reach the project
        try:
            result = run_in(view)
            edits = self.monitor.project_paths([change.path for change in workspace.changes()])
        finally:
            outside = self.monitor.ended(key=key)
            workspace.remove()
        problem = None
        if outside:
            problem = (
                f"The project changed while this {_noun(check)} ran in its copy: {_shown(outside)}"
            )
        elif edits:
            problem = (
                f"The {_noun(check)} changed its copy of the project: {_shown(edits)}; its "
                "verdict may be about its own edits (the project is untouched). List paths it "
                "may write in [harness] isolation_ignore"
            )
        record = _record(mode="copy", paths=edits, method=workspace.method)
        if outside:
            record["project_changed"] = outside[:SHOWN_PATHS]
        return _with_isolation(result=result, record=record, problem=problem)

    def close(self) -> None:
        self.monitor.close()
