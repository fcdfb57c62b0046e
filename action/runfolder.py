"""The run folder a step's own eb wrote, as the outputs run-dir and report-json name it.

With --flat-output eb refuses a folder that is not empty, so a folder that held anything before
the step holds an earlier run (the action used twice in one job with one `output-dir`), never
this one. Naming it would let the comment post its verdict and the keep step upload it as the
evidence of a run that never started.
"""

from __future__ import annotations

from pathlib import Path

from ghenv import set_output


def holds_anything(folder: Path) -> bool:
    """Whether `folder` is a folder with at least one entry (an earlier run, or its remains)."""
    return folder.is_dir() and any(True for _ in folder.iterdir())


def set_run_outputs(*, run_dir: Path, held_before: bool) -> None:
    """run-dir and report-json, each empty unless this step's eb wrote it."""
    written = not held_before and holds_anything(run_dir)
    report = run_dir / "report.json"
    # A run that never started (a bad flag, a folder not empty) leaves both empty; one that
    # started but stopped before its report (exit 2 at the guard) names its folder only.
    set_output("run-dir", str(run_dir) if written else "")
    set_output("report-json", str(report) if written and report.is_file() else "")
