"""`.eval-banana/calibration.json`: where it lives, how it is read and (atomically) updated."""

from __future__ import annotations

from pathlib import Path

from eval_banana.calibration.figures import document_ratio_problem
from eval_banana.models.calibration import CalibrationDoc, JudgeCalibration
from eval_banana.stagefiles.schemafiles import read_packaged_document


class UnreadableRecord(Exception):
    """calibration.json exists but is not a calibration record eb can read."""

    def __init__(self, message: str, *, field_path: str | None = None) -> None:
        super().__init__(message)
        self.field_path = field_path


def read_record(*, path: Path) -> CalibrationDoc | None:
    """The record at `path`; None when there is none; UnreadableRecord when it is damaged."""
    document = read_packaged_document(
        path=path, name="calibration", what="a calibration record", unreadable=UnreadableRecord
    )
    if document is None:
        return None
    # JSON's NaN passes every minimum and maximum of the schema: the figures are checked here.
    bad = document_ratio_problem(document)
    if bad is not None:
        where, what = bad
        raise UnreadableRecord(
            f"{path} is not a calibration record: {where} {what} (a figure must be a finite "
            "ratio from 0 to 1)",
            field_path=where,
        )
    return CalibrationDoc.model_validate(document)


def unwritable_record(*, path: Path) -> str | None:
    """Why the record at `path` cannot be replaced by a new one (a folder stands there), or
    None: checked before any sample runs, so nothing is paid for a record that cannot be kept."""
    if path.is_dir() and not path.is_symlink():
        return f"cannot write {path}: not a regular file (a folder)"
    return None


def earlier_record(*, path: Path) -> CalibrationDoc | None:
    """The record at `path` as new figures are added to it: None when there is none, or it is
    damaged (then it is replaced by what was just measured)."""
    try:
        return read_record(path=path)
    except UnreadableRecord:
        return None


def write_record(
    *,
    path: Path,
    measured: list[JudgeCalibration],
    earlier: CalibrationDoc | None,
    tool_version: str,
) -> None:
    """Write at `path` the entries of the judges just measured over those of `earlier` (the
    record they are added to: `earlier_record`); every other entry of it is kept."""
    from eval_banana.core.files import write_model
    from eval_banana.runners.results import iso, utc_now

    checks = dict(earlier.checks) if earlier is not None else {}
    for entry in measured:
        checks[entry.check_id] = entry
    document = CalibrationDoc(
        tool_version=tool_version,
        updated_at=iso(utc_now()),
        checks=dict(sorted(checks.items())),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_model(path=path, model=document)
