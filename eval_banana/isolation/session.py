"""A run's isolation: which checks are watched or copied, and what their changes make of them.

`[harness] isolation` applies to judges, `[execution] isolation` to deterministic checks
(assertions checks only read one file in eb's own process, so there is nothing to isolate):
- `detect`: the check runs in the project; a project file that changed while it ran makes it
  an `error` (so does every other watched check running at that moment: who wrote is unknown).
- `copy`: the check runs in its own disposable copy; what it changed there is listed in
  `details.isolation.changed`, the project stays as it was, and a check that changed its copy
  is an `error` too (its verdict may be about its own edits), unless the paths are ignored.
- `off`: as eval-banana does, the check runs in the project and may write.

Whatever the mode, eb's own state (its cache, earlier run folders, the calibration record, the
record of the files it wrote into the project) is watched while any check or judge runs
(isolation/state.py): a change there makes every check running at that moment an `error`, and
the run stores no verdict.

Once every check has ended, the project is looked at once more (isolation/detect.py): a change
no look while the checks ran had seen (a write through a hard link, a process left behind)
makes every watched check that ran an `error`, as does one seen while no watched check ran for
the watched checks that had ended before it; a run whose project changed under a watched check
stores no verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from eval_banana.isolation.modes import (
    Mode,
    check_mode,
    ignore_list,
    isolates_any,
    isolation_error,
    listed_paths,
    noun,
    shown_paths,
    write_advice,
)
from eval_banana.isolation.places import ReadOnly, read_only_places
from eval_banana.isolation.state import StateReport, StateWatch
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, PlanDoc, PlannedCheck
from eval_banana.runners.base import ProjectView

if TYPE_CHECKING:
    from eval_banana.isolation.detect import ChangeMonitor, LateChanges

RunIn = Callable[[ProjectView | None], CheckResult]
# The eb command a check or a judge runs under: `eb calibrate` runs a judge's samples.
Command = Literal["run", "calibrate"]
# The end of every message about eb's state: what it means for the run, or the calibration.
_STATE_RULE = (
    "Checks and judges must never write eb's verdict cache, run folders, calibration record "
    "or record of the files it wrote: "
)
_STATE_OUTCOME: dict[Command, str] = {
    "run": "the run cannot pass, and it stores no verdict in the cache",
    "calibrate": (
        "the sample never agrees with its label, and the calibration record keeps nothing a "
        "judge changed there"
    ),
}


def _record(
    *, mode: Mode, paths: list[str], method: str | None, ignore: list[str]
) -> dict[str, Any]:
    """`ignore`: the patterns whose changes did not count, kept so that the verdict cache
    reuses this verdict only where those changes would not count either."""
    record: dict[str, Any] = {"mode": mode}
    if method is not None:
        record["method"] = method
    record["changed"] = listed_paths(paths)
    record["changed_count"] = len(paths)
    record["ignore"] = ignore
    return record


def _with_isolation(
    *, result: CheckResult, record: dict[str, Any], problem: str | None
) -> CheckResult:
    """The result with `details.isolation`; an `error` (score 0) when there is a problem."""
    if problem is None:
        return result.model_copy(update={"details": {**result.details, "isolation": record}})
    return isolation_error(result=result, record=record, problem=problem)


def with_state_change(
    *,
    result: CheckResult,
    mode: Mode,
    paths: list[str],
    when: str,
    command: Command = "run",
) -> CheckResult:
    """`result` made an `error` for a change to eb's state seen `when` (e.g. "while this
    check ran"; `command`: the eb command it ran under); the paths are kept in
    `details.isolation.state_changed`."""
    before = result.details.get("isolation")
    record: dict[str, Any] = dict(before) if isinstance(before, dict) else {"mode": mode}
    shown = sorted({*record.get("state_changed", []), *paths})
    record["state_changed"] = listed_paths(shown)
    record["state_changed_count"] = len(shown)
    rule = _STATE_RULE + _STATE_OUTCOME[command]
    problem = f"eb's own files changed {when}: {shown_paths(paths)}. {rule}"
    if result.status == "error" and result.error_detail and isinstance(before, dict):
        problem = f"{problem}. {result.error_detail}"  # an isolation error of its own too
    return _with_isolation(result=result, record=record, problem=problem)


def state_watched(
    *,
    state: StateWatch,
    key: str,
    check: PlannedCheck,
    mode: Mode,
    run: Callable[[], CheckResult],
    command: Command = "run",
) -> CheckResult:
    """Run one check, or one sample of a judge (`run`), under the watch on eb's own state
    (`key`: its key there); an `error` when eb's files changed while it ran. `eb run` and `eb
    calibrate` both run their checks and judges through this."""
    state.started(key=key)
    try:
        result = run()
    finally:
        changed = state.ended(key=key)
    if not changed:
        return result
    when = f"while this {noun(check.type)} ran"
    return with_state_change(result=result, mode=mode, paths=changed, when=when, command=command)


# When a change charged after a check ended was seen: while no watched check ran, or only by
# the last look once every check had ended.
Seen = Literal["alone", "at_end"]


class _Words(NamedTuple):
    """What a late change's message calls the whole and its parts, by the command that ran."""

    whole: str
    part: str


LATE_WORDS: dict[Command, _Words] = {
    "run": _Words("run", "check"),
    "calibrate": _Words("calibration", "sample"),
}


def with_late_project_change(
    *,
    result: CheckResult,
    check: PlannedCheck,
    mode: Mode,
    paths: list[str],
    seen: Seen,
    command: Command = "run",
) -> CheckResult:
    """`result` made an `error` for a change to the project charged to it after it ended
    (`seen`: how; `command`: the eb command it ran under, `eb calibrate` for a sample); the
    paths are kept in `details.isolation.late_changed`."""
    before = result.details.get("isolation")
    record: dict[str, Any] = dict(before) if isinstance(before, dict) else {"mode": mode}
    shown = sorted({*record.get("late_changed", []), *paths})
    record["late_changed"] = listed_paths(shown)
    record["late_changed_count"] = len(shown)
    what = noun(check.type)
    whole, part = LATE_WORDS[command]
    if seen == "at_end":
        problem = (
            f"The project changed during this {whole}, seen only by the look after its last "
            f"{part} had ended: {shown_paths(paths)}. No look while the {part}s ran saw it (a "
            f"write through a hard link, or a process a {part} left behind, tells none), so "
            f"which {part} made it is unknown and every watched {part} of the {whole} is "
            "charged"
        )
    else:
        problem = (
            f"The project changed after this {what} ended, while no watched {part} ran: "
            f"{shown_paths(paths)}; a process it left behind may have made the change"
        )
    advice = write_advice(check.type, command=command)
    problem = f"{problem}. A {what} must not change what it {what}s: {advice}"
    if result.status == "error" and result.error_detail and isinstance(before, dict):
        problem = f"{problem}. {result.error_detail}"  # an error of its own too
    return _with_isolation(result=result, record=record, problem=problem)


class Looks(NamedTuple):
    """The last looks once every check has ended: at eb's state, and at the project."""

    state: StateReport
    project: LateChanges


class IsolationSession:
    """eb's state watched for a run's checks, the project's state for the isolated ones, and
    how each check runs."""

    def __init__(
        self, *, config: ConfigDoc, monitor: ChangeMonitor | None, state: StateWatch
    ) -> None:
        self.config = config
        self.root = Path(config.project_root)
        self.monitor = monitor
        self.state = state
        # What a copy's private namespace mounts read-only, and what stays writable inside.
        self.mounts = ReadOnly(paths=[], checks="")

    @classmethod
    def open(
        cls,
        *,
        config: ConfigDoc,
        plan: PlanDoc,
        run_dir: Path,
        running: frozenset[str] = frozenset(),
    ) -> IsolationSession:
        """Watch eb's state; read the project's state too when some planned check is isolated.
        `running`: the stems of the checks about to run, whose files eb itself replaces."""
        monitor = None
        if isolates_any(config=config, plan=plan):
            from eval_banana.isolation.detect import ChangeMonitor
            from eval_banana.settings.folders import own_folders, written_files

            monitor = ChangeMonitor.open(
                root=Path(config.project_root),
                excluded_names=config.settings.discovery.exclude_dirs,
                skip_folders=own_folders(config=config),
                ignore=config.settings.harness.isolation_ignore,
                own_files=written_files(config=config),
            )
        try:
            state = StateWatch.open(config=config, run_dir=run_dir, running=running)
            session = cls(config=config, monitor=monitor, state=state)
            session.mounts = read_only_places(config=config, places=state.places, run_dir=run_dir)
        except BaseException:
            if monitor is not None:
                monitor.close()  # its turn too: this run's own reports would wait for it
            raise
        return session

    def run(self, *, check: PlannedCheck, key: str, run_in: RunIn) -> CheckResult:
        """Run one check as its mode says; `run_in(view)` runs it (view None: in the project)."""
        mode = check_mode(config=self.config, check=check)
        if check.type == "assertions":
            return run_in(None)  # read in eb's own process: no process of its own to watch
        return state_watched(
            state=self.state,
            key=key,
            check=check,
            mode=mode,
            run=lambda: self._in_mode(mode=mode, check=check, key=key, run_in=run_in),
        )

    def _in_mode(self, *, mode: Mode, check: PlannedCheck, key: str, run_in: RunIn) -> CheckResult:
        if mode == "off" or self.monitor is None:
            return run_in(None)
        if mode == "copy":
            return self._in_copy(monitor=self.monitor, check=check, key=key, run_in=run_in)
        self.monitor.started(key=key)
        try:
            result = run_in(None)
        finally:
            changed = self.monitor.ended(key=key)
        problem = None
        if changed:
            problem = (
                f"The project changed while this {noun(check.type)} ran: "
                f"{shown_paths(changed)}. A {noun(check.type)} must not change what it "
                f"{noun(check.type)}s: {write_advice(check.type)}"
            )
        record = _record(
            mode="detect", paths=changed, method=None, ignore=ignore_list(config=self.config)
        )
        return _with_isolation(result=result, record=record, problem=problem)

    def _in_copy(
        self, *, monitor: ChangeMonitor, check: PlannedCheck, key: str, run_in: RunIn
    ) -> CheckResult:
        from eval_banana.isolation.workspace import make_workspace

        workspace = make_workspace(
            root=self.root,
            paths=monitor.paths,
            read_only=self.mounts.paths,
            writable=self.mounts.writable_for(check_type=check.type, stem=key),
        )
        view = ProjectView(path=workspace.path, cwd=workspace.cwd, wrap=workspace.wrap)
        monitor.started(key=key)  # writes through absolute paths still reach the project
        try:
            result = run_in(view)
            edits = monitor.project_paths([change.path for change in workspace.changes()])
        finally:
            outside = monitor.ended(key=key)
            workspace.remove()
        problem = None
        if outside:
            shown = shown_paths(outside)
            problem = f"The project changed while this {noun(check.type)} ran in its copy: {shown}"
        elif edits:
            problem = (
                f"The {noun(check.type)} changed its copy of the project: {shown_paths(edits)}; "
                "its verdict may be about its own edits (the project is untouched). To let it "
                f"write, {write_advice(check.type)}"
            )
        record = _record(
            mode="copy",
            paths=edits,
            method=workspace.method,
            ignore=ignore_list(config=self.config),
        )
        if outside:
            record["project_changed"] = listed_paths(outside)
        return _with_isolation(result=result, record=record, problem=problem)

    def finish(self) -> Looks:
        """Once every check has ended (and the processes they left behind): the last looks at
        eb's state and at the project; the watches are closed."""
        from eval_banana.isolation.detect import NO_LATE_CHANGES

        try:
            state = self.state.finish()
            project = NO_LATE_CHANGES if self.monitor is None else self.monitor.finish()
            return Looks(state=state, project=project)
        finally:
            self.close()

    def close(self) -> None:
        self.state.close()
        if self.monitor is not None:
            self.monitor.close()
