"""Write faults during a run: a file eb could not write is infrastructure, never a verdict.

A check's output is written by the check's own process straight into its files, so eb cannot
see a write of it fail; `capture_fault` asks the file system afterwards whether it had room
and was writable, and whether the file reached the file-size limit the check inherited from eb.
`FaultLog` keeps the first fault of a run and stops the run.
"""

from __future__ import annotations

import errno
import os
import resource
import threading
from pathlib import Path

from eval_banana.core.errors import ResourceFault, WriteFault
from eval_banana.models.result import RESOURCE_FAULT, WRITE_FAULT, CheckResult
from eval_banana.models.stages import AbortReason, PlannedCheck
from eval_banana.runners.results import StopSignal, instant_error, judge_expectation


def capture_fault(*, path: Path) -> WriteFault | None:
    """The fault that may have cut a check's captured output at `path` short, or None.

    A file system that is full, or was made read-only, while the check ran may have refused
    part of what the check wrote there (the check's own process saw the error, eb did not); so
    may the file-size limit (`ulimit -f`), which the check inherited from eb.
    """
    try:
        info = os.statvfs(path.parent)
    except OSError as exc:
        return WriteFault.of(path=path, exc=exc)
    if info.f_flag & os.ST_RDONLY:
        return WriteFault(path=str(path), cause="Read-only file system")
    # Blocks free to this process: root may use the reserved ones, others may not.
    free = info.f_bfree if os.geteuid() == 0 else info.f_bavail
    if info.f_blocks > 0 and free == 0:
        return WriteFault(path=str(path), cause="No space left on device")
    return _size_limit_fault(path=path)


def _size_limit_fault(*, path: Path) -> WriteFault | None:
    """The fault of a captured output that reached the file-size limit, or None.

    The kernel refuses every byte past the limit (EFBIG, or SIGXFSZ kills the writer), so a
    file that reached it may be cut short: the check's verdict (a control "failing" on the
    refused write) says nothing about the subject. A file exactly at the limit is taken as cut
    too: eb cannot tell it from one whose next byte was refused.
    """
    limit, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if limit == resource.RLIM_INFINITY:
        return None
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    except OSError as exc:
        return WriteFault.of(path=path, exc=exc)
    if size < limit:
        return None
    return WriteFault(
        path=str(path),
        cause=f"File too large: it reached the file-size limit (`ulimit -f`) of {limit} bytes"
        " eb and its checks run under; raise it",
    )


# A file of a check's eb cannot write because something stands in its place (a check that made
# a folder where its result goes): what is there and the fix. eb never removes what it did not
# make, and a rename never replaces a folder.
_IN_THE_WAY = {
    errno.EISDIR: "a folder stands there, which eb never removes (remove it, then run eb update)",
    errno.ENOTDIR: "a file stands where one of its folders should be, which eb never removes"
    " (remove it, then run eb update)",
}


def task_fault(*, exc: OSError, folder: Path, doing: str) -> WriteFault:
    """The fault of an OSError out of a check's task (`doing`), which wrote the check's files
    in `folder`: too many open files is a resource fault; a path something stands in the way
    of says what and the fix; any other is a write fault of the file the error names."""
    out_of_files = ResourceFault.during(exc=exc, doing=doing)
    if out_of_files is not None:
        return out_of_files
    fault = WriteFault.of(path=folder, exc=exc)
    in_the_way = _IN_THE_WAY.get(exc.errno) if exc.errno is not None else None
    return fault if in_the_way is None else WriteFault(path=fault.path, cause=in_the_way)


def fault_result(*, check: PlannedCheck, fault: WriteFault) -> CheckResult:
    """A check whose output could not be written: an error, whatever the check decided."""
    if isinstance(fault, ResourceFault):
        # Out of open files: what the check reached, if anything, cannot be trusted either.
        return judge_expectation(
            result=instant_error(
                check=check,
                error_detail=f"Not judged: {fault.said}",
                details={RESOURCE_FAULT: {"doing": fault.doing, "cause": fault.cause}},
            )
        )
    # A file eb failed to change otherwise (an empty output file it could not remove): the
    # check ran, but its result is not kept in a run whose folder eb cannot change.
    said = (
        f"Output could not be written: {fault.path}: {fault.cause}"
        if fault.action == "write"
        else f"Not judged: {fault.said}"
    )
    return judge_expectation(
        result=instant_error(
            check=check,
            error_detail=said,
            details={WRITE_FAULT: {"path": fault.path, "cause": fault.cause}},
        )
    )


class FaultLog:
    """The write faults (and resource faults) of one run: the first is reported; any of them
    stops the run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.faults: list[WriteFault] = []

    def add(self, *, fault: WriteFault, stop: StopSignal | None = None) -> None:
        with self._lock:
            self.faults.append(fault)
        if stop is not None:
            reason: AbortReason = (
                "resource_fault" if isinstance(fault, ResourceFault) else "write_fault"
            )
            stop.stop(reason=reason)

    @property
    def first(self) -> WriteFault | None:
        return self.faults[0] if self.faults else None

    def raise_first(self) -> None:
        """Raise the run's first fault, if it had any (its line names the path and cause)."""
        if self.faults:
            raise self.faults[0]
