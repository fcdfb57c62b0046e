"""What stages write into a run folder besides their stage files, as `eb status` checks it: the
reports of the report stage.

A stage whose other files are gone or were edited is not up to date, even though its stage file
is: `eb update` writes them again.
"""

from __future__ import annotations

from pathlib import Path

from eval_banana.stagefiles.layout import REPORT_JSON, REPORT_MD


def reports_missing(*, run_dir: Path) -> str | None:
    """A report the report stage wrote (report.json, report.md) that is gone from the run
    folder: `eb diff` and `eb history` read a run from them. Looked for by name in the run
    folder, which may have moved since stages/report.json named them by absolute path."""
    gone = [name for name in (REPORT_JSON, REPORT_MD) if not (run_dir / name).is_file()]
    return f"{' and '.join(gone)} {'is' if len(gone) == 1 else 'are'} missing" if gone else None
