"""A run's reports never overwrite a file the run reads.

The JUnit file, the `--result-out` document and the GitHub step summary are written where
their flags say; named like the config file, a check file, a script or a dataset, a report
would silently replace it and break the next run. Each is refused before anything runs
(docs/ci.md#outputs), as a JUnit path that is a folder is.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from eval_banana.core.errors import ReportOverwriteError
from eval_banana.models.config import SELECT_STDIN
from eval_banana.models.stages import ConfigDoc, DiscoverDoc, PlannedCheck
from eval_banana.settings.folders import STEP_SUMMARY_ENV, junit_file


class ReportTarget(NamedTuple):
    """A file a report is written to, and the flag (or variable) that named it."""

    named_by: str
    path: Path


def report_targets(
    *, config: ConfigDoc, outputs: Iterable[Path], environ: Mapping[str, str]
) -> list[ReportTarget]:
    """Every file a run (or a merge) writes a report to outside its run folder: the JUnit
    file, the `--result-out` documents `outputs` and the step summary `environ` names."""
    targets: list[ReportTarget] = []
    junit = config.settings.core.junit_xml
    if junit:
        path = junit_file(setting=junit, project_root=Path(config.project_root))
        targets.append(ReportTarget(named_by="--junit-xml", path=path))
    targets.extend(ReportTarget(named_by="--result-out", path=path) for path in outputs)
    summary = environ.get(STEP_SUMMARY_ENV)
    if summary:
        targets.append(ReportTarget(named_by=f"${STEP_SUMMARY_ENV}", path=Path(summary)))
    return targets


def settings_read(*, config: ConfigDoc) -> dict[str, str]:
    """The files the run reads before any check file: its config file and `--select` plan."""
    read: dict[str, str] = {}
    if config.config_file:
        read[config.config_file] = "the config file"
    select = config.selection.select
    if select is not None and select.file != SELECT_STDIN:
        read[str(Path(select.file).absolute())] = "the --select plan"
    return read


def check_files_read(*, discovered: DiscoverDoc) -> dict[str, str]:
    return {item.path: "a check file" for item in discovered.files}


def plan_files_read(*, config: ConfigDoc, checks: Iterable[PlannedCheck]) -> dict[str, str]:
    """The scripts and dataset files the planned checks read."""
    root = Path(config.project_root)
    read: dict[str, str] = {}
    for check in checks:
        if check.script_path:
            read[check.script_path] = f"the script of check '{check.id}'"
        for relative in check.family_files or ():
            path = str(root / relative)
            if path != check.source_path:
                read.setdefault(path, f"a dataset file of family '{check.family}'")
    return read


def names_any(*, targets: Iterable[ReportTarget], paths: Iterable[str]) -> bool:
    """Whether any report target is one of `paths`, told apart as `refuse_reports_over`
    tells them (by resolved path)."""
    wanted = {os.path.realpath(target.path) for target in targets}
    return bool(wanted) and any(os.path.realpath(path) in wanted for path in paths)


def refuse_reports_over(*, targets: Iterable[ReportTarget], read: Mapping[str, str]) -> None:
    """Raise when a report would be written over one of the files `read` (path -> what it is
    to the run), told apart by their resolved paths (a link or `..` changes nothing)."""
    wanted = {os.path.realpath(target.path): target for target in targets}
    if not wanted:
        return
    for path, what in read.items():
        target = wanted.get(os.path.realpath(path))
        if target is not None:
            shown = "" if str(target.path) == path else f" ({path})"
            raise ReportOverwriteError(
                f"Refusing {target.named_by} {target.path}: it is {what} this run "
                f"reads{shown}, and the report would overwrite it",
                file=str(target.path),
                hint=f"give {target.named_by} a file of its own, one the run does not read",
            )


def refuse_reports_inside(*, targets: Iterable[ReportTarget], folders: Mapping[str, str]) -> None:
    """Raise when a report would be written anywhere inside one of `folders` (path -> what it
    is to the run): `eb merge` reads every file of the shard folders it joins, and a report
    over one (its execute.json, its report.json) would break that merge and every later one."""
    found = {os.path.realpath(folder): (folder, what) for folder, what in folders.items()}
    for target in targets:
        place = os.path.realpath(target.path)
        while True:
            held = found.get(place)
            if held is not None:
                folder, what = held
                raise ReportOverwriteError(
                    f"Refusing {target.named_by} {target.path}: it is inside {what} this "
                    f"merge reads ({folder}), and the report would overwrite or add to it",
                    file=str(target.path),
                    hint=f"give {target.named_by} a file outside the shard folders being merged",
                )
            parent = os.path.dirname(place)
            if parent == place:
                break
            place = parent
