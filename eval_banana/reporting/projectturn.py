"""A run's reports go into the project only while no other eb run watches it for writes.

The JUnit file, the `--result-out` document and the step summary are written where their flags
say, often inside the project. Another eb run whose judges (or isolated checks) run in the same
project at that moment watches the project (`[harness] isolation`, `[execution] isolation`),
and a file that appears in it meanwhile is charged to them: that run's own report files are
eb's, but another run's, written there for the first time, are nothing it can tell from a
judge's write. Nor should it try: a judge runs as the user and could write the same file, or
forge any note saying eb did.

So a run takes the project's watch turn for those writes (isolation/watchturn.py), which every
run watching the project holds shared from before its first look to after its last, `eb
calibrate` included. While another run holds it, the write waits, saying so once; then no
watch is looking. A run whose checks are watched by nobody (no check isolated) holds nothing,
and no report waits for it. A report in a project nested in another (or holding one) waits
for the runs watching either. A file outside every project, or an untracked one git ignores,
waits for nothing: no watch counts it. Nor does a run started by a check (an `eb run` inside another
run's check): the run whose check it is holds the turn until that check ends, and the file is
that check's doing, charged as such. A signal the run's handler only notes ends the wait: the
file is written at once, as an interrupted run still writes its reports.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from eval_banana.core.files import never_stop
from eval_banana.core.log import Logger
from eval_banana.core.realpaths import real_path
from eval_banana.isolation.watchturn import project_roots_around, reports_turn
from eval_banana.models.stages import ConfigDoc
from eval_banana.projectstate.git import command as git_command
from eval_banana.projectstate.git import environment as git_environment
from eval_banana.projectstate.git import may_be_in_work_tree
from eval_banana.runners.orphans import TOKEN_VAR

logger = Logger("eval_banana.reporting.projectturn")


@contextlib.contextmanager
def writing_into_project(
    *,
    config: ConfigDoc | None,
    paths: Iterable[Path],
    stop: Callable[[], bool] | None = None,
) -> Iterator[None]:
    """Held while this run writes the report files `paths`: the turn of each project a watch
    would count one of them in (that of `config`, and any around or inside it), awaited while
    another run watches it (None: no config was loaded, so no project is known and nothing is
    awaited)."""
    counted = {} if config is None else _counted(config=config, paths=paths)
    if not counted or TOKEN_VAR in os.environ:
        yield
        return
    shown = ", ".join(str(path) for path in counted)
    roots = sorted({root for found in counted.values() for root in found}, key=_outermost)

    def waits() -> None:
        logger.warning(
            "Waiting for another eb run's judges (or isolated checks), watched in this "
            "project, to end before writing %s (its isolation watch would take the file for "
            "their write)",
            shown,
        )

    with reports_turn(roots=roots, waits=waits, stop=stop if stop is not None else never_stop):
        yield


def _outermost(folder: Path) -> tuple[int, str]:
    return len(folder.parts), str(folder)


def _counted(*, config: ConfigDoc, paths: Iterable[Path]) -> dict[Path, list[Path]]:
    """Each of `paths` a watch counts, with the project roots whose watch would: those it lies
    in (`project_roots_around`) where it is not an untracked file git ignores."""
    own = real_path(config.project_root)
    found: dict[Path, list[Path]] = {}
    for path in paths:
        real = real_path(path)
        roots = [
            root
            for root in project_roots_around(path=real, root=own)
            if not _git_ignores(root=root, inside=real.relative_to(root))
        ]
        if roots:
            found[path] = roots
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
