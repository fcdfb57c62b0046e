"""What stages write into a run folder besides their stage files, as `eb status` checks it: the
frozen script copies of the validate stage, each check's result file of the execute stage and
the reports of the report stage.

A stage whose other files are gone or were edited is not up to date, even though its stage file
is: `eb update` writes them again.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from eval_banana.core.files import sha256_and_size, sha256_file
from eval_banana.core.readback import file_kind
from eval_banana.core.stem import artifact_stem
from eval_banana.core.words import and_list, first_and_count
from eval_banana.models.stages import ExecuteDoc, PlanDoc, ReportDoc
from eval_banana.stagefiles.layout import REPORT_HTML, REPORT_JSON, REPORT_MD


def snapshots_changed(*, doc: PlanDoc, run_dir: Path) -> str | None:
    """A frozen script under stages/snapshots/ that is gone, or whose bytes are no longer the
    script the plan's digest names. Asked only of a plan whose definitions are unchanged: the
    live script still has the digest's bytes, so a copy that differs from it was edited."""
    changes: list[str] = []
    seen: set[str] = set()
    for check in doc.checks:
        if not check.snapshot or not check.script_path or check.snapshot in seen:
            continue
        seen.add(check.snapshot)  # the cases of a family share one copy
        frozen = run_dir / check.snapshot
        if not frozen.is_file():
            changes.append(f"{check.snapshot} is missing")
            continue
        script = Path(check.script_path)
        if script.is_file() and sha256_file(path=frozen) != sha256_file(path=script):
            changes.append(f"{check.snapshot} was edited after validate froze it")
    return first_and_count(changes, shown=3) if changes else None


def result_files_changed(*, doc: ExecuteDoc, run_dir: Path) -> dict[str, str]:
    """Check id -> why its checks/<stem>.json is not the file the execute stage recorded: gone,
    or other bytes now (a verdict edited by hand or by a script, while execute.json, the
    reports and the cache still say the one the check reached). One read and hash per file;
    a check whose file no digest was recorded for is not looked at."""
    # Joined as text: a Path per file is a third of the time at 1,000 checks.
    checks_dir = str(run_dir / "checks")
    changed: dict[str, str] = {}
    for check_id, digest in doc.result_file_digests.items():
        name = f"{artifact_stem(check_id=check_id)}.json"
        try:
            now = sha256_and_size(path=f"{checks_dir}/{name}")[0]
        except FileNotFoundError:
            changed[check_id] = f"checks/{name} is missing"
            continue
        except OSError as exc:  # a folder or a FIFO in its place, a file eb may not read
            changed[check_id] = f"checks/{name} cannot be read ({exc.strerror or exc})"
            continue
        if now != digest:
            changed[check_id] = f"checks/{name} was edited after the execute stage wrote it"
    return changed


def reports_changed(*, doc: ReportDoc, run_dir: Path) -> str | None:
    """A report the report stage wrote (report.json, report.md, report.html) that is gone from
    the run folder (`eb diff` and `eb history` read a run from them), or whose bytes are no
    longer those the stage recorded: a verdict or count edited by hand or by a script. Looked
    for by name in the run folder, which may have moved since stages/report.json named them by
    absolute path. A stage file from before eb recorded the digests is asked only for the
    presence of report.json and report.md; report.html is looked at only when its digest is
    recorded (a run with --no-html wrote none), and a report the run could not write
    (report.md, report.html, the JUnit file) is told as such: `eb update` writes it. The JUnit
    file the run did write is not looked at: every run of the project replaces it."""
    unwritten = _not_written(doc=doc, run_dir=run_dir)
    if unwritten is not None:
        return unwritten
    recorded = {REPORT_JSON: doc.report_json_sha256, REPORT_MD: doc.report_md_sha256}
    if doc.report_html_sha256 is not None:
        recorded[REPORT_HTML] = doc.report_html_sha256
    gone = [name for name in recorded if not (run_dir / name).is_file()]
    taken = _taken_place(run_dir=run_dir, names=gone)
    if taken is not None:
        return taken
    if gone:
        return f"{_listed(gone)} {'is' if len(gone) == 1 else 'are'} missing"
    edited = [
        name
        for name, digest in recorded.items()
        if digest is not None and sha256_file(path=run_dir / name) != digest
    ]
    if not edited:
        return None
    if len(edited) == 1:
        return f"{edited[0]} was edited after the report stage wrote it"
    return f"{_listed(edited)} were edited after the report stage wrote them"


def _not_written(*, doc: ReportDoc, run_dir: Path) -> str | None:
    """Why the reports the stage recorded as not written are not what it made: each told with
    the cause it recorded (a full disk), or a report of the run folder as a taken place when
    something else holds it now; None when the stage recorded no such fault."""
    told: list[str] = []
    for fault in doc.report_faults:
        # The system's words, then what became of the earlier file, as the fault line said.
        why = fault.cause if fault.earlier is None else f"{fault.cause}; {fault.earlier}"
        if fault.report == "junit_xml":
            told.append(f"the JUnit file {fault.path} could not be written ({why})")
            continue
        if not (run_dir / fault.report).is_file():
            taken = _taken_place(run_dir=run_dir, names=[fault.report])
            if taken is not None:
                return taken
        told.append(f"{fault.report} could not be written ({why})")
    return and_list(told) if told else None


def _taken_place(*, run_dir: Path, names: list[str]) -> str | None:
    """The first of the reports `names` (none a regular file) whose place something else holds
    (a folder made where report.html goes): told as such, not as missing, since `eb update`
    cannot write it until that is removed; None when each is simply gone."""
    for name in names:
        try:
            mode = os.lstat(run_dir / name).st_mode
        except OSError:
            continue
        if not stat.S_ISLNK(mode):
            return f"{name} is not a regular file ({file_kind(mode)})"
    return None


def _listed(names: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
