"""The turn between runs whose watch looks at a project and the reports other runs write there.

A watch on the project (`[harness] isolation` or `[execution] isolation` detect or copy, in `eb
run` or `eb calibrate`) charges a file that appears in the project to the judges or checks
running then: another run's JUnit file or result document, new there, included
(reporting/projectturn.py). So the watch holds its project's root folder itself shared from
before its first read of the project to after its last look, and a report written into that
project waits to hold it alone. A run that watches nothing in the project (no check isolated)
holds nothing here, and no report waits for it.

A report lies in every project on its path: its own run's, and any project around it or
nested in it (a folder holding `.eval-banana/`), whose runs watch it too. It takes the turn of
each, outermost first, so two runs writing reports never hold one each while waiting for the
other's.

The lock is the kernel's, on the root folder (no file is added to the project). Where the
output folder is the project root itself (`output_dir = ""`), every run holds that folder shared
while its checks execute (isolation/state.py), and a report waits for them all.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from eval_banana.core.log import Logger
from eval_banana.core.realpaths import real_path
from eval_banana.core.turns import sharing_folder, waiting_alone_in_folder
from eval_banana.settings.configfile import CONFIG_DIR

logger = Logger("eval_banana.isolation.watchturn")


def project_watched(*, root: Path) -> contextlib.AbstractContextManager[None]:
    """Held (shared, on `root` itself) while a watch looks at the project at `root`: no other
    run writes a report into it meanwhile. Waits while one does (said once)."""
    return sharing_folder(
        folder=root,
        waits=lambda: logger.warning(
            "Waiting for another eb run writing its reports into %s before watching it", root
        ),
    )


def project_roots_around(*, path: Path, root: Path) -> list[Path]:
    """The folders whose watch may count `path`, outermost first: `root` (the writing run's
    project, resolved) when `path` lies in it, and every folder on the way to `path` that holds
    `.eval-banana/` (another project around it, or nested in it, whose runs watch it too)."""
    return [
        folder
        for folder in reversed(real_path(path).parents)
        if folder == root or _holds_project(folder=folder)
    ]


def _holds_project(*, folder: Path) -> bool:
    try:
        return (folder / CONFIG_DIR).is_dir()
    except OSError:  # a folder that cannot be searched: no project eb can tell of
        return False


@contextlib.contextmanager
def reports_turn(
    *, roots: list[Path], waits: Callable[[], None], stop: Callable[[], bool]
) -> Iterator[None]:
    """Held (exclusive, on each of `roots` itself, in the order given) while a run writes
    reports that their watches would count: awaited while another run watches one of them
    (`waits` is called once in all); once `stop()` says the run is stopping, the wait ends and
    the files are written at once."""
    told = False

    def once() -> None:
        nonlocal told
        if not told:
            told = True
            waits()

    with contextlib.ExitStack() as stack:
        for folder in roots:
            stack.enter_context(waiting_alone_in_folder(folder=folder, waits=once, stop=stop))
        yield
