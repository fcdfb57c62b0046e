"""Leaving a finished run's record in the history folder, as every kind of run does.

A record that cannot be written costs only that record: the caller gets a warning to show, and
the run's verdict and exit code stand.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from eval_banana.core.errors import EvalBananaError, WriteFault
from eval_banana.history.build import build_record
from eval_banana.history.gitstate import GitProbe, observe
from eval_banana.history.mergespend import merge_spend
from eval_banana.history.record import RunKind
from eval_banana.history.spent import carried_spend
from eval_banana.history.store import drop_other_records, prune, record_of, write_record
from eval_banana.models.stages import ConfigDoc
from eval_banana.settings.folders import history_dir


def record_run(
    *,
    config: ConfigDoc,
    report: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
    kind: RunKind,
    exit_code: int,
    warn: Callable[[str], None],
    replayed_from: str | None = None,
    git: GitProbe | None = None,
    replacing: bool = False,
    ran_again: Collection[str] = (),
) -> Path | None:
    """Write the run's record and prune the oldest past `[history] keep`; return the file
    written (None: history is off, or the record could not be written, which `warn` says).
    `report`: the report.json object, or what loads it (a replay parses it only here);
    `git`: the commit as observed when the run started (None: observed now);
    `replacing`: the run was rebuilt (`eb update`), and its earlier record goes, what it
    says was spent kept (`ran_again`: the checks the update ran again, whose earlier results'
    cost is now spent on replaced runs). A merge's record carries what its shards' updates
    replaced and what the merges it stands for spent on shard runs it does not merge."""
    settings = config.settings.history
    if settings.mode == "off":
        if git is not None:
            git.close()
        return None
    folder = history_dir(config=config)
    try:
        record = build_record(
            report=report() if callable(report) else report,
            selection=config.selection,
            kind=kind,
            exit_code=exit_code,
            git=git.result() if git is not None else observe(root=config.project_root),
            replayed_from=replayed_from,
        )
        if replacing:
            before = record_of(folder=folder, run_id=record.run_id)
            record = carried_spend(record=record, before=before, ran_again=ran_again)
        elif kind == "merge":
            # Its shards' updates and the shard runs its pipeline ran before were paid too.
            record = merge_spend(folder=folder, record=record)
        path = write_record(folder=folder, record=record)
        if replacing:
            drop_other_records(folder=folder, run_id=record.run_id, kept=path)
        prune(folder=folder, keep=settings.keep)
    except (OSError, EvalBananaError, ValueError, KeyError, TypeError) as exc:  # a WriteFault too
        said = WriteFault.told(path=folder, exc=exc)
        warn(f"could not record this run in the history folder {folder}: {said}")
        return None
    return path
