"""Calibration measures a judge as runs treat it: under `[harness] isolation` detect or copy, a
judge that writes files (in its case's copy or in the project) gives an `error` sample, as the
same judge would be an `error` in `eb run`; under `off` it may write, as in a run.

Which writes count is decided as in a run: paths in `[harness] isolation_ignore`, Python's
caches, eb's own folders and the files it writes, and new files git ignores do not. Once every
sample has ended the project is looked at once more, as a run looks at it (`finish`).

Whatever the mode, eb's own state (the verdict cache, earlier run folders, the calibration
record, the record of the files eb wrote) is watched while the samples run, by the very watch
`eb run` keeps on it while its checks run (isolation/state.py): a sample that changed it is an
`error`, the changed cache files are removed, and the record is put back as it was before
the first sample started (isolation/putback.py), even when the calibration then stops and
records nothing; the new figures are written over that, never over what a judge made of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from eval_banana.calibration.cases import judge_edits
from eval_banana.calibration.store import earlier_record
from eval_banana.core.log import Logger
from eval_banana.core.words import visible
from eval_banana.isolation.detect import NO_LATE_CHANGES, ChangeMonitor
from eval_banana.isolation.modes import (
    isolation_error,
    listed_paths,
    mode_setting,
    setting_name,
    shown_paths,
    write_advice,
)
from eval_banana.isolation.session import Looks, state_watched
from eval_banana.isolation.state import StateWatch
from eval_banana.isolation.workspace import Workspace
from eval_banana.models.calibration import CalibrationDoc
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, PlannedCheck
from eval_banana.projectstate.walking import every_file
from eval_banana.settings.folders import own_folders, record_path, written_files

logger = Logger("eval_banana.calibration.watch")


class SampleWatch:
    """The project's state and eb's own for one `eb calibrate`, and what a judge's writes make
    of a sample."""

    def __init__(
        self,
        *,
        config: ConfigDoc,
        monitor: ChangeMonitor | None,
        paths: list[str],
        state: StateWatch,
    ) -> None:
        self.mode = config.settings.harness.isolation
        self.monitor = monitor
        self.paths = paths
        self.state = state
        self.record = record_path(config=config)
        # The record as it was before any sample started: what the new figures are added to
        # when a judge changed it meanwhile.
        self.record_before = earlier_record(path=self.record)

    @classmethod
    def open(cls, *, config: ConfigDoc, run_dir: Path) -> SampleWatch:
        """List what each case's copy holds; eb's own state is watched whatever the mode (the
        caller holds it, isolation/state.py `own_state_held`), the project's unless `off`.
        `run_dir`: this calibration's evidence folder, which eb writes all along."""
        root = Path(config.project_root)
        skip = own_folders(config=config)
        # A judge in a run sees the project folder itself (detect, or copy's overlay): git's
        # folder and the files git ignores too, so every case's copy holds them as well.
        paths = every_file(root=root, skip_folders=skip)
        monitor = None
        if config.settings.harness.isolation != "off":
            monitor = ChangeMonitor.open(
                root=root,
                excluded_names=config.settings.discovery.exclude_dirs,
                skip_folders=skip,
                ignore=config.settings.harness.isolation_ignore,
                own_files=written_files(config=config),
            )
        try:
            state = StateWatch.open(config=config, run_dir=run_dir)
            return cls(config=config, monitor=monitor, paths=paths, state=state)
        except BaseException:
            if monitor is not None:
                monitor.close()  # and its turn (isolation/watchturn.py)
            raise

    def judged(
        self,
        *,
        key: str,
        check: PlannedCheck,
        workspace: Workspace,
        files: Mapping[str, str | None],
        run_in: Callable[[], CheckResult],
    ) -> CheckResult:
        """Run one sample in its copy (`run_in`); an error when the judge wrote where a run
        would not let it, or changed eb's own files, as `eb run` watches them."""
        return state_watched(
            state=self.state,
            key=key,
            check=check,
            mode=self.mode,
            run=lambda: self._in_copy(key=key, workspace=workspace, files=files, run_in=run_in),
            command="calibrate",
        )

    def _in_copy(
        self,
        *,
        key: str,
        workspace: Workspace,
        files: Mapping[str, str | None],
        run_in: Callable[[], CheckResult],
    ) -> CheckResult:
        if self.monitor is None:
            return run_in()
        self.monitor.started(key=key)  # writes through absolute paths still reach the project
        try:
            result = run_in()
            edits = self.monitor.project_paths(judge_edits(workspace=workspace, files=files))
        finally:
            outside = self.monitor.ended(key=key)
        if not outside and not edits:
            return result
        record: dict[str, Any] = {
            "mode": self.mode,
            "method": workspace.method,
            "changed": listed_paths(edits),
            "changed_count": len(edits),
        }
        if outside:
            record["project_changed"] = listed_paths(outside)
            problem = (
                f"The project changed while this judge ran in its copy: {shown_paths(outside)}"
            )
        else:
            setting = setting_name(mode_setting("harness_judge"))
            advice = write_advice("harness_judge", command="calibrate")
            problem = (
                f"The judge changed its copy of the project: {shown_paths(edits)}; under "
                f'{setting} = "{self.mode}" `eb run` makes that an error too (its verdict may be '
                f"about its own edits). To let it write, {advice}"
            )
        return isolation_error(result=result, record=record, problem=problem)

    def finish(self) -> Looks:
        """The last looks, once every sample has ended and the processes their judges left
        behind are ended: what changed in the project that no look while they ran saw (a write
        through a hard link, a process left behind), as `eb run`'s last look finds it; and what
        changed in eb's own state, whose changed cache files are removed as a run removes them."""
        state = self.state.finish()
        if state.changed:
            removed = self.state.drop_cache_changes()
            logger.warning(
                "eb's own files changed while judges were calibrated (%s); the samples charged "
                "with it are errors, %d changed files in the cache (or its record of the files "
                "it wrote) were removed, and the calibration record is written over what it "
                "held before the first sample",
                ", ".join(visible(path) for path in state.changed[:5]),
                len(removed),
            )
        if state.record_put_back is not None:
            # Put back at once: a calibration that stops now (a fuse, an interrupt) records
            # nothing, and the next run's gate must not read what a judge wrote there.
            logger.warning(
                "The calibration record %s changed while judges were calibrated; it was %s",
                self.record,
                state.record_put_back,
            )
        project = NO_LATE_CHANGES if self.monitor is None else self.monitor.finish()
        return Looks(state=state, project=project)

    def trusted_record(self) -> CalibrationDoc | None:
        """The record the new figures are added to: as it is now, unless it changed while the
        samples ran (then as it was before the first one: nothing a judge wrote is kept)."""
        if self.state.changed_file(path=str(self.record.absolute())):
            return self.record_before
        return earlier_record(path=self.record)

    def close(self) -> None:
        self.state.close()
        if self.monitor is not None:
            self.monitor.close()
