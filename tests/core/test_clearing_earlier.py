"""A report's fault, once the file an earlier run left is cleared, keeps what it was."""

from __future__ import annotations

from pathlib import Path

from eval_banana.core.errors import StdoutFault, WriteFault
from eval_banana.core.files import fault_clearing_earlier


def test_a_fault_keeps_what_eb_failed_to_do_once_the_earlier_file_is_cleared(
    tmp_path: Path,
) -> None:
    report = tmp_path / "report.md"
    report.write_text("Passed: yes\n")
    fault = WriteFault(
        path=str(report), cause="Disk quota exceeded", action="remove the empty file"
    )
    told = fault_clearing_earlier(fault=fault, path=report, fix="free some room")
    assert not report.exists()
    # It was once rebuilt as a plain write ("Cannot write ..."): what eb failed at was lost.
    assert told.action == "remove the empty file"
    assert told.said == (
        f"Cannot remove the empty file {report}: Disk quota exceeded; the earlier file there "
        "was removed, so it is not read as this run's"
    )
    assert told.message == f"{told.said}; the run is aborted"
    assert told.hint == "free some room"
    assert str(told) == told.message


def test_a_fault_keeps_its_kind_once_the_earlier_file_is_cleared(tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    report.write_text("Passed: yes\n")
    told = fault_clearing_earlier(fault=StdoutFault(cause="Input/output error"), path=report)
    assert type(told) is StdoutFault
    assert told.earlier.startswith("the earlier file there was removed")
