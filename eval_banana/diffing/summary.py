"""One run as `eb diff` and `eb run --baseline` compare it: its totals, checks and families.

A run is read from its report.json, the one file every eb run folder has (eval-banana 0.5.0's
included). Only the fields the comparison uses are checked, with errors that name the file and
the field: checking every key of a 10,000-check report against its schema costs seconds, and
nothing else of it is used here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, NamedTuple, get_args

from eval_banana.core.errors import RunFolderError, StageFileError
from eval_banana.core.files import sha256_bytes
from eval_banana.core.ownmark import is_run_folder
from eval_banana.core.readback import loads_json, read_regular
from eval_banana.core.words import one_line
from eval_banana.diffing.narrowed import Narrowed, read_narrowed
from eval_banana.models.diff import DiffRun, FamilySide, Outcome
from eval_banana.models.repeats import RULES, is_flaky, settled_whatever_undecided
from eval_banana.models.result import ERROR_CLASSES, NOT_RUN, STOPPED, ErrorClass
from eval_banana.models.stages import AbortReason, ReportDoc
from eval_banana.runners.results import judged_outcome
from eval_banana.settings.rundir import run_folder_hint
from eval_banana.stagefiles.layout import REPORT_JSON, stage_path
from eval_banana.stagefiles.read import read_stage

# Where a reason's first line ends: CR, LF or CR LF, none of the other breaks Python knows.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_STATUSES = frozenset({"passed", "failed", "error"})
_VERDICTS = frozenset({"passed", "failed"})  # any other outcome errored or never finished
_KIND_NAMES = {str: "string", int: "whole number", list: "list"}
RATE_DIGITS = 6  # ratios in diff.json: enough to tell one check in a million apart
_ABORT_REASONS: tuple[AbortReason, ...] = get_args(AbortReason)


class CheckOutcome(NamedTuple):
    outcome: Outcome
    digest: str
    summary: str
    error_class: ErrorClass | None = None
    source: str = ""  # its check file, relative to the run's project root when it is inside
    # A sampled check whose samples errored for want of a judge (an infrastructure error),
    # while the ones that answered already decide it under its rule whatever the errored ones
    # would have said: that verdict (its expectation applied); None for any other check.
    settled: Literal["passed", "failed"] | None = None
    # The run stopped before the check had a verdict: it never started it (details.not_run)
    # or ended it part-way (details.stopped). Whatever its error class, nobody judged it
    # because the run was cut short, not because the provider failed.
    unfinished: bool = False
    # Its samples disagreed (details.flaky: some passed, some failed), whatever its rule decided.
    flaky: bool = False

    @property
    def judged(self) -> Outcome:
        """Its outcome as a comparison judges it: a settled verdict stands for its error."""
        return self.settled or self.outcome


class RunSummary(NamedTuple):
    """What a comparison needs of one run: its totals, each check's outcome in report order,
    its dataset families (none in a report from before families) and the checks it skipped,
    with their reasons (none in a report that does not list them)."""

    run: DiffRun
    checks: dict[str, CheckOutcome]
    families: dict[str, FamilySide] = {}
    narrowed: Narrowed | None = None
    skipped: dict[str, str] = {}


def _bad(*, path: Path, where: str, problem: str) -> RunFolderError:
    return RunFolderError(
        f"{path} is not a report eb can compare: {where} {problem}",
        file=str(path),
        field_path=where,
        hint="Pass a run folder that `eb run` or `eb merge` wrote (it holds report.json).",
    )


def _field(*, document: dict[str, Any], key: str, kind: type, path: Path, where: str) -> Any:
    value = document.get(key)
    # bool is an int in Python, but not a number in a report.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _bad(path=path, where=f"{where}.{key}", problem=f"must be a {_KIND_NAMES[kind]}")
    return value


def _first_line(text: object) -> str:
    """A reason's first line, made safe for a log (a reason is a check's or a judge's words);
    "" when there is none."""
    if isinstance(text, str) and text.strip():
        # str.splitlines() also cuts at \x0b, \x0c and \x1c to \x1e: a reason
        # `\x00\x0bRED ...` was summarised as `\x00` alone.
        return one_line(_LINE_BREAK.split(text.strip(), maxsplit=1)[0])
    return ""


def _summary(check: dict[str, Any]) -> str:
    for key in ("reason", "error_detail"):
        if line := _first_line(check.get(key)):
            return line
    exit_code = check.get("exit_code")
    if check.get("status") == "failed" and isinstance(exit_code, int):
        return f"exit code {exit_code}"
    return ""


def _source(*, check: dict[str, Any], root: str) -> str:
    """The check's file relative to the project root (runs of one project on two machines name
    it alike); as written when it is not under the root."""
    source = check.get("source_path")
    if not isinstance(source, str):
        return ""
    prefix = root.rstrip("/") + "/"
    return source[len(prefix) :] if root and source.startswith(prefix) else source


def _outcome(*, check: dict[str, Any], path: Path, where: str, root: str) -> CheckOutcome:
    status = check.get("status")
    if status not in _STATUSES:
        raise _bad(path=path, where=f"{where}.status", problem="must be passed, failed or error")
    details = check.get("details")
    not_run = isinstance(details, dict) and details.get(NOT_RUN) is True
    stopped = status == "error" and isinstance(details, dict) and details.get(STOPPED) is True
    digest = _field(document=check, key="check_definition_sha256", kind=str, path=path, where=where)
    # A check the run stopped part-way is an error in the report, but no defect of its own:
    # told as `stopped`, as one it never started is `not run`.
    outcome: Outcome = "not_run" if not_run else "stopped" if stopped else status
    found = details.get("error_class") if isinstance(details, dict) else None
    # Only an error carries a class; a report from before error classes has none.
    error_class = found if status == "error" and found in ERROR_CLASSES else None
    # Only samples that judged nothing leave a verdict to the others: a judge that changed
    # the project or gave no valid verdict is an error whatever the others said.
    judged_nothing = error_class == "infrastructure"
    return CheckOutcome(
        outcome=outcome,
        digest=digest,
        summary=_summary(check),
        error_class=error_class,
        source=_source(check=check, root=root),
        settled=_settled(details=details, expect=check.get("expect")) if judged_nothing else None,
        unfinished=not_run or stopped,
        flaky=is_flaky(details if isinstance(details, dict) else None),
    )


def _settled(*, details: object, expect: object) -> Literal["passed", "failed"] | None:
    """The verdict a sampled check's judged samples reach under its `aggregate` rule however
    its errored ones would have come out, its expectation (a control's `expect: fail`) applied;
    None when the errored samples could still turn it, or the check has no samples.

    Under majority: more than half of all samples passed, or half or more failed; all: a
    failed sample (never a pass while one errored); any: a passed sample (never a failure)."""
    if not isinstance(details, dict) or details.get("aggregate") not in RULES:
        return None
    samples = details.get("samples")
    if not isinstance(samples, list) or not samples:
        return None
    statuses = [sample.get("status") if isinstance(sample, dict) else None for sample in samples]
    passed, failed = statuses.count("passed"), statuses.count("failed")
    passes = settled_whatever_undecided(
        rule=details["aggregate"],
        passed=passed,
        undecided=len(samples) - passed - failed,
        total=len(samples),
    )
    if passes is None:
        return None
    # The samples record what the check observed; a control passes on a settled failure.
    judged, _ = judged_outcome(
        observed="passed" if passes else "failed", expect="fail" if expect == "fail" else "pass"
    )
    return "passed" if judged == "passed" else "failed"


def _objects(*, items: list[Any], path: Path, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each item of one of the report's lists with where it is (`$.checks[3]`); an item that
    is no JSON object is an error naming it."""
    for index, item in enumerate(items):
        at = f"{where}[{index}]"
        if not isinstance(item, dict):
            raise _bad(path=path, where=at, problem="must be a JSON object")
        yield at, item


def summarize_report(
    *, report: Any, path: Path, run_dir: Path, narrowed: Narrowed | None = None
) -> RunSummary:
    """The comparable part of a report.json object; `path` names it in errors; `narrowed`:
    how the run's selection was narrowed, when its folder says."""
    if not isinstance(report, dict):
        raise _bad(path=path, where="$", problem="must be a JSON object")
    checks = _field(document=report, key="checks", kind=list, path=path, where="$")
    root = report.get("project_root")
    root = root if isinstance(root, str) else ""
    outcomes: dict[str, CheckOutcome] = {}
    for where, check in _objects(items=checks, path=path, where="$.checks"):
        check_id = _field(document=check, key="check_id", kind=str, path=path, where=where)
        if check_id in outcomes:
            raise _bad(path=path, where=f"{where}.check_id", problem=f"repeats '{check_id}'")
        outcomes[check_id] = _outcome(check=check, path=path, where=where, root=root)
    earned = _field(document=report, key="points_earned", kind=int, path=path, where="$")
    total = _field(document=report, key="total_points", kind=int, path=path, where="$")
    _refuse_contradiction(report=report, outcomes=outcomes, earned=earned, total=total, path=path)
    run = DiffRun(
        run_id=str(report.get("run_id", "")),
        run_dir=str(run_dir),
        total_checks=len(outcomes),
        points_earned=earned,
        total_points=total,
        pass_rate=round(earned / total, RATE_DIGITS) if total else 0.0,
        run_passed=report.get("run_passed") is True,
        selection=narrowed.flags if narrowed is not None else None,
        aborted_by=_aborted_by(report=report, path=path),
        unfinished_checks=sum(1 for outcome in outcomes.values() if outcome.unfinished),
        flaky_checks=sum(1 for outcome in outcomes.values() if outcome.flaky),
        fail_on_flaky=report.get("fail_on_flaky") is True,
    )
    return RunSummary(
        run=run,
        checks=outcomes,
        families=_families(report=report, path=path),
        narrowed=narrowed,
        skipped=_skipped(report=report, path=path),
    )


def _aborted_by(*, report: dict[str, Any], path: Path) -> AbortReason | None:
    """report.json `aborted_by`: what stopped the run (absent in eval-banana's reports: none)."""
    found = report.get("aborted_by")
    if found is None:
        return None
    for reason in _ABORT_REASONS:
        if found == reason:
            return reason
    names = ", ".join(_ABORT_REASONS)
    raise _bad(path=path, where="$.aborted_by", problem=f"must be null or one of {names}")


def _refuse_contradiction(
    *,
    report: dict[str, Any],
    outcomes: dict[str, CheckOutcome],
    earned: int,
    total: int,
    path: Path,
) -> None:
    """Refuse totals or a verdict its own checks refute: a comparison would state them beside
    those checks (`1/1 points, passed` over a check still failing). Only rules eval-banana
    0.5.0's reports follow too: a point per check, earned by each passed one, and no pass over
    an error, an abort or an unmet threshold."""
    problem = None
    passed = sum(1 for outcome in outcomes.values() if outcome.outcome == "passed")
    errored = [key for key, found in outcomes.items() if found.outcome not in _VERDICTS]
    if total != len(outcomes):
        problem = "$.total_points", f"is {total}, but the report lists {len(outcomes)} checks"
    elif earned != passed:
        problem = "$.points_earned", f"is {earned}, but {passed} of its checks passed"
    elif report.get("run_passed") is True:
        if errored:
            problem = "$.run_passed", f"is true, but check {errored[0]!r} errored or never ran"
        elif report.get("aborted_by") is not None:
            problem = "$.run_passed", "is true, but the run was aborted (aborted_by)"
        elif report.get("meets_threshold") is False:
            problem = "$.run_passed", "is true, but meets_threshold is false"
    if problem is not None:
        where, what = problem
        raise RunFolderError(
            f"{path} contradicts its own checks: {where} {what}",
            file=str(path),
            field_path=where,
            hint="The report was edited or damaged. For a run folder of eb, "
            f"`eb update --run-dir {path.parent}` writes it again from its stage files; "
            "else run the checks again.",
        )


def _skipped(*, report: dict[str, Any], path: Path) -> dict[str, str]:
    """report.json `skipped`: each skipped check's id and reason (absent in a report that
    does not list them: none)."""
    listed = report.get("skipped")
    if listed is None:
        return {}
    if not isinstance(listed, list):
        raise _bad(path=path, where="$.skipped", problem="must be a list")
    return {
        _field(document=item, key="check_id", kind=str, path=path, where=where): _first_line(
            item.get("reason")
        )
        for where, item in _objects(items=listed, path=path, where="$.skipped")
    }


def _families(*, report: dict[str, Any], path: Path) -> dict[str, FamilySide]:
    """report.json `families`, by id (absent in eval-banana's reports: no families)."""
    listed = report.get("families")
    if listed is None:
        return {}
    if not isinstance(listed, list):
        raise _bad(path=path, where="$.families", problem="must be a list")
    found: dict[str, FamilySide] = {}
    for where, item in _objects(items=listed, path=path, where="$.families"):
        family = _field(document=item, key="id", kind=str, path=path, where=where)
        cases = _field(document=item, key="cases", kind=int, path=path, where=where)
        passed = _field(document=item, key="passed", kind=int, path=path, where=where)
        gate = item.get("min_pass_rate")
        if not isinstance(item.get("gate_held"), bool) or not _is_rate(gate):
            raise _bad(path=path, where=where, problem="has no gate_held / min_pass_rate")
        deferred = item.get("gate_at_merge")
        if not _is_rate(deferred):
            raise _bad(path=path, where=where, problem="has a gate_at_merge that is no number")
        size = item.get("of_cases")
        found[family] = FamilySide(
            cases=cases,
            passed=passed,
            pass_rate=round(passed / cases, RATE_DIGITS) if cases else 0.0,
            min_pass_rate=gate,
            gate_held=item["gate_held"],
            of_cases=size if type(size) is int and size >= 0 else None,
            gate_at_merge=deferred,
        )
    return found


def _is_rate(value: object) -> bool:
    """A gate as report.json gives it: a number, or null for none."""
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _no_report_hint(*, run_dir: Path) -> str:
    """What to pass instead of a folder without report.json: a run that never finished is
    told apart from a folder that holds runs or none."""
    if is_run_folder(folder=str(run_dir)):
        return (
            "It is a run that has not finished: still running, or stopped before it wrote its "
            f"report (killed). Pass a finished run's folder, or `latest` or `previous` (finished "
            f"runs only); `eb update --run-dir {run_dir}` finishes a stopped run."
        )
    return run_folder_hint(
        folder=run_dir,
        otherwise="Pass a folder that `eb run` or `eb merge` wrote, or `latest`.",
    )


def _refuse_edited(*, run_dir: Path, path: Path, data: bytes) -> None:
    """Refuse a report.json other than the one the run's report stage wrote, by the digest
    stages/report.json records (`eb status` calls it edited, so a comparison must not read
    it). A folder without stage files (eval-banana 0.5.0's), or whose report stage predates
    the digest, is read as it is."""
    if not stage_path(run_dir=run_dir, stage="report").is_file():
        return
    fix = (
        f"`eb update --run-dir {run_dir}` writes report.json again from the run's stage files "
        "(`eb status` shows what is out of date)."
    )
    try:
        recorded: ReportDoc = read_stage(run_dir=run_dir, stage="report")
    except StageFileError as exc:
        raise RunFolderError(
            f"Cannot tell whether {path} is the report its run wrote: {exc.message}",
            file=str(path),
            hint=fix,
        ) from None
    if recorded.report_json_sha256 not in (None, sha256_bytes(data=data)):
        raise RunFolderError(
            f"{path} was edited after the report stage wrote it (stages/report.json records "
            "another digest of it)",
            file=str(path),
            hint=fix,
        )


def load_run(*, run_dir: Path) -> RunSummary:
    """Read a run folder's report.json (a setup error, exit 2, when it cannot be compared)."""
    path = run_dir / REPORT_JSON
    if not run_dir.is_dir():
        raise RunFolderError(f"Not a run folder: {run_dir} does not exist", file=str(run_dir))
    try:
        data = read_regular(path)
    except FileNotFoundError:
        raise RunFolderError(
            f"Not a run folder: {run_dir} has no {REPORT_JSON}",
            file=str(run_dir),
            hint=_no_report_hint(run_dir=run_dir),
        ) from None
    except OSError as exc:
        raise RunFolderError(f"Cannot read {path}: {exc}", file=str(path)) from None
    _refuse_edited(run_dir=run_dir, path=path, data=data)
    try:
        report = loads_json(data)
    except ValueError as exc:
        raise _bad(path=path, where="$", problem=f"is not valid JSON ({exc})") from None
    return summarize_report(
        report=report, path=path, run_dir=run_dir, narrowed=read_narrowed(run_dir=run_dir)
    )
