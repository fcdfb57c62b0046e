"""One eb process writes a run folder at a time (docs/rerunning-stages.md).

`eb run` holds its run folder from its creation to its end. `eb update` and `eb stage` refuse a
folder another eb process holds (its checks would run twice in one folder, each clearing the
other's evidence). The lock is the kernel's, on the folder itself: a process killed in any way
lets go of it, and nothing is left in the folder to clear.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from eval_banana.core.errors import RunInUseError
from eval_banana.core.turns import (
    alone_in_folder,
    holder_pid,
    written_elsewhere,
)


def writer_shown(*, run_dir: Path) -> str | None:
    """`another eb process (pid N)` while one writes `run_dir`; None while none does."""
    if not written_elsewhere(folder=run_dir):
        return None
    return _another(run_dir=run_dir)


def _another(*, run_dir: Path) -> str:
    pid = holder_pid(folder=run_dir)
    return "another eb process" if pid is None else f"another eb process (pid {pid})"


@contextlib.contextmanager
def writing_run(*, run_dir: Path) -> Iterator[None]:
    """Held while this process writes `run_dir`; a folder another eb process is writing is
    refused (RunInUseError), never waited for: a run may go on for hours."""
    with alone_in_folder(folder=run_dir) as ours:
        if not ours:
            raise RunInUseError(
                f"{_another(run_dir=run_dir).capitalize()} is writing the run folder {run_dir}: "
                "an `eb run` "
                "still executing its checks, or an `eb update` or `eb stage` of this folder",
                file=str(run_dir),
                hint="wait for it to end, then run this command again (`eb status` says "
                "whether it is still going)",
            )
        if not (run_dir / "stages").is_dir():
            # Deleted while this process waited for its lock (another run's keep_runs).
            raise RunInUseError(
                f"The run folder {run_dir} was deleted meanwhile", file=str(run_dir)
            )
        yield
