"""Calibration measures a judge as runs treat it: under `[harness] isolation` detect or copy, a
judge that writes files (in its case's copy or in the project) gives an `error` sample, as the
same judge would be an `error` in `eb run`; under `off` it may write, as in a run.

Which writes count is decided as in a run: paths in `[harness] isolation_ignore`, Python's
caches, eb's own folders and the files it writes, and new files git ignores do not. Once every
sample has ended the project is looked at once more, as a run looks at it (`finish`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from eval_banana.calibration.cases import judge_edits
from eval_banana.isolation.detect import NO_LATE_CHANGES, ChangeMonitor, LateChanges
from eval_banana.isolation.modes import (
    isolation_error,
    listed_paths,
    mode_setting,
    setting_name,
    shown_paths,
    write_advice,
)
from eval_banana.isolation.workspace import Workspace
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc
from eval_banana.projectstate.walking import every_file
from eval_banana.settings.folders import own_folders, written_files


class SampleWatch:
    """The project's state for one `eb calibrate`, and what a judge's writes make of a sample."""

    def __init__(self, *, config: ConfigDoc, monitor: ChangeMonitor | None, paths: list[str]):
        self.mode = config.settings.harness.isolation
        self.monitor = monitor
        self.paths = paths

    @classmethod
    def open(cls, *, config: ConfigDoc) -> SampleWatch:
        """List what each case's copy holds; the project's state is watched unless `off`."""
        root = Path(config.project_root)
        skip = own_folders(config=config)
        # A judge in a run sees the project folder itself (detect, or copy's overlay): git's
        # folder and the files git ignores too, so every case's copy holds them as well.
        paths = every_file(root=root, skip_folders=skip)
        if config.settings.harness.isolation == "off":
            return cls(config=config, monitor=None, paths=paths)
        monitor = ChangeMonitor.open(
            root=root,
            excluded_names=config.settings.discovery.exclude_dirs,
            skip_folders=skip,
            ignore=config.settings.harness.isolation_ignore,
            own_files=written_files(config=config),
        )
        return cls(config=config, monitor=monitor, paths=paths)

    def judged(
        self,
        *,
        key: str,
        workspace: Workspace,
        files: Mapping[str, str | None],
        run_in: Callable[[], CheckResult],
    ) -> CheckResult:
        """Run one sample in its copy (`run_in`); an error when the judge wrote where a run
        would not let it."""
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

    def finish(self) -> LateChanges:
        """The last look, once every sample has ended and the processes their judges left
        behind are ended: what changed in the project that no look while they ran saw (a write
        through a hard link, a process left behind), as `eb run`'s last look finds it."""
        return NO_LATE_CHANGES if self.monitor is None else self.monitor.finish()

    def close(self) -> None:
        if self.monitor is not None:
            self.monitor.close()
