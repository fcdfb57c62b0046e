"""What a finished `eb run` or `eb merge` hands its command: the run folder, the score, the
exit code, the stage file digests and the report (read only when asked for, after a replay)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eval_banana.models.stages import ScoreDoc


class RunOutcome:
    """A finished run: its folder, report, score, exit code and stage file digests.

    A replayed run parses its report.json only when something asks for the report: a run with
    --json prints the line its replay kept (`json_line`), which equals the report dumped.
    """

    def __init__(
        self,
        *,
        run_dir: Path,
        score: ScoreDoc,
        exit_code: int,
        digests: dict[str, str],
        report: dict[str, Any] | None = None,
        load_report: Callable[[], dict[str, Any]] | None = None,
        json_line: str | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.score = score
        self.exit_code = exit_code
        self.digests = digests
        self._report = report
        self._load_report = load_report
        self._json_line = json_line

    @property
    def report(self) -> dict[str, Any]:
        if self._report is None:
            assert self._load_report is not None, "a run outcome has a report or its loader"
            self._report = self._load_report()
        return self._report

    @property
    def json_line(self) -> str:
        """The report as `--json` prints it: one line of JSON."""
        if self._json_line is None:
            self._json_line = json.dumps(self.report, ensure_ascii=False, allow_nan=False)
        return self._json_line
