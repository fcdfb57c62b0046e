"""Run folders that appear in an output folder while a run's checks execute.

`eb status`, `eb update` and `eb diff` take the newest run folder of the output folder for the
run to report or to compare with. A check that plants one there (a copy of an earlier passing
run, dated later) would stand for the run that just failed. Another eb run beside this one
makes run folders too, at any moment (under any name, with `--flat-output`); a folder it made
records the moment the run was created, which is not before this run's own nor still to come.
A run folder that appeared meanwhile and records another moment was made by no run started
meanwhile: it is a change of eb's state.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from eval_banana.core.moments import moment_or_none
from eval_banana.settings.rundating import created_before, record_problem
from eval_banana.settings.rundir import config_stage


def _folders(base: str) -> set[str]:
    try:
        with os.scandir(base) as entries:
            return {entry.name for entry in entries if entry.is_dir(follow_symlinks=False)}
    except OSError:
        return set()


class NewRuns:
    """The folders of each output folder when the checks started, and this run's creation."""

    def __init__(self, *, outputs: Iterable[str], since: str | None) -> None:
        self._since = None if since is None else moment_or_none(since)
        self._before = {base: _folders(base) for base in outputs}

    def planted(self) -> set[str]:
        """Run folders made since that no eb run started meanwhile would have made."""
        now = datetime.now(UTC)
        found: set[str] = set()
        for base, before in self._before.items():
            for name in sorted(_folders(base) - before):
                folder = Path(base, name)
                document = config_stage(run_dir=folder)
                if document is None:
                    continue  # no run (a run starting writes its config stage first)
                early = self._since is not None and created_before(
                    document=document, moment=self._since
                )
                if early or record_problem(document=document, now=now):
                    found.add(str(folder))
        return found
