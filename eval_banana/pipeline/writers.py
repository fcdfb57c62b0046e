"""One eb process writes a run folder at a time, and none rewrites one while another run's
checks execute beside it (docs/fail-closed.md, docs/rerunning-stages.md).

`eb run` holds its run folder from its creation to its end. `eb update` and `eb stage` refuse a
folder another eb process holds (its checks would run twice in one folder, each clearing the
other's evidence), and take the output folder's turn as `[core] keep_runs` does: a run's watch
covers the finished run folders beside its own, and a rewrite of one while its checks execute
would be taken for a check's doing. The locks are the kernel's, on the folders themselves: a
process killed in any way lets go of them, and nothing is left in the folder to clear.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from eval_banana.checks.planned import SNAPSHOTS_DIR
from eval_banana.core.errors import RunAborted, RunInUseError
from eval_banana.core.lefttemps import remove_left_temp_files
from eval_banana.core.realpaths import real_path
from eval_banana.core.turns import (
    alone_in_folder,
    holder_pid,
    turn_alone_in_folder,
    written_elsewhere,
)
from eval_banana.reporting.console import Console


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
        # What an eb killed while it wrote here left (`.report.json.<pid>.<n>.tmp`): no other
        # eb process writes the folder now. checks/<stem>/ folders are the checks' own (a
        # merge's copies into them go through checks/).
        remove_left_temp_files(
            folders=(run_dir, run_dir / "stages", run_dir / SNAPSHOTS_DIR, run_dir / "checks")
        )
        yield


@contextlib.contextmanager
def output_turn(*, run_dir: Path, console: Console, stop: Callable[[], bool]) -> Iterator[None]:
    """Held while this process rewrites `run_dir` beside other runs' folders: waits while
    another run's checks execute there (said once), as `eb calibrate` waits. A signal
    (`stop()`, set by the command's handler) ends the wait at once with RunAborted, before
    anything in `run_dir` is rewritten: the folder stays as it was, for a later update."""
    beside = real_path(run_dir).parent

    def waits() -> None:
        console.notice(
            f"Waiting for another eb run's checks (or the update of a run) in {beside} to end "
            f"before rewriting {run_dir}"
        )

    with contextlib.ExitStack() as held:
        try:
            held.enter_context(turn_alone_in_folder(folder=beside, waits=waits, stop=stop))
        except InterruptedError:
            raise RunAborted(
                f"Interrupted before rewriting anything in {run_dir}: it is left as it was "
                "(run the command again to rebuild it)"
            ) from None
        yield


@contextlib.contextmanager
def rewriting_run(*, run_dir: Path, console: Console, stop: Callable[[], bool]) -> Iterator[None]:
    """`writing_run` and `output_turn`, for `eb stage`."""
    with writing_run(run_dir=run_dir), output_turn(run_dir=run_dir, console=console, stop=stop):
        yield
