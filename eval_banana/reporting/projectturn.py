"""A run's reports go into the project only while no other eb run's checks execute there.

The JUnit file, the `--result-out` document and the step summary are written where their flags
say, often inside the project. Another eb run whose judges run in the same project at that
moment watches the project (`[harness] isolation`), and a file that appears in it meanwhile is
charged to those judges: that run's own report files are eb's, but another run's, written there
for the first time, are nothing it can tell from a judge's write. Nor should it try: a judge
runs as the user and could write the same file, or forge any note saying eb did.

So a run takes the project's turn for those writes, as `eb calibrate` does for its record: the
folder of the config file in use (`.eval-banana/` without one), which every run holds shared
while its checks execute and `eb calibrate` while its judges run (isolation/state.py). While
another run holds it, the write waits, saying so once; then no watch is looking. A file outside
the project, or an untracked one git ignores, waits for nothing: no watch counts it. Nor does a
run started by a check (an `eb run` inside another run's check): the run whose check it is
holds the turn until that check ends, and the file is that check's doing, charged as such. A
signal the run's handler only notes ends the wait: the file is written at once, as an
interrupted run still writes its reports.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from eval_banana.core.log import Logger
from eval_banana.core.realpaths import real_path
from eval_banana.core.turns import waiting_alone_in_folder
from eval_banana.models.stages import ConfigDoc
from eval_banana.projectstate.git import command as git_command
from eval_banana.projectstate.git import environment as git_environment
from eval_banana.projectstate.git import may_be_in_work_tree
from eval_banana.runners.orphans import TOKEN_VAR
from eval_banana.settings.folders import record_path

logger = Logger("eval_banana.reporting.projectturn")


@contextlib.contextmanager
def writing_into_project(
    *,
    config: ConfigDoc | None,
    paths: Iterable[Path],
    stop: Callable[[], bool] | None = None,
) -> Iterator[None]:
    """Held while this run writes the report files `paths`: the project's turn, awaited while
    another run's checks execute in it, when one of them counts as a file of the project of
    `config` (None: no config was loaded, so no project is known and nothing is awaited)."""
    counted = [] if config is None else _counted(config=config, paths=paths)
    if config is None or not counted or TOKEN_VAR in os.environ:
        yield
        return
    shown = ", ".join(str(path) for path in counted)

    def waits() -> None:
        logger.warning(
            "Waiting for another eb run's checks in this project to end before writing %s "
            "(its judges' isolation watch would take the file for theirs)",
            shown,
        )

    with waiting_alone_in_folder(
        folder=record_path(config=config).parent,
        waits=waits,
        stop=stop if stop is not None else lambda: False,
    ):
        yield


def _counted(*, config: ConfigDoc, paths: Iterable[Path]) -> list[Path]:
    """The paths a watch on the project counts: inside the project root (both resolved), and
    not untracked files git ignores."""
    root = real_path(config.project_root)
    found: list[Path] = []
    for path in paths:
        try:
            inside = real_path(path).relative_to(root)
        except (OSError, ValueError):
            continue
        if not _git_ignores(root=root, inside=inside):
            found.append(path)
    return found


def _git_ignores(*, root: Path, inside: Path) -> bool:
    """Whether git ignores the file at `inside` (relative to `root`, where git runs: a path
    given relative to another folder would be another file to git) and does not track it (git
    lists a tracked file whatever its ignore rules say); False wherever git cannot say."""
    if not may_be_in_work_tree(root=str(root)):
        return False
    try:
        done = subprocess.run(
            git_command(args=["check-ignore", "-q", "--", str(inside)]),
            cwd=root,
            capture_output=True,
            env=git_environment(),
            check=False,
        )
    except OSError:
        return False
    return done.returncode == 0
