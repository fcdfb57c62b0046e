"""`eb diff BASE HEAD` and `eb run --baseline`: what changed between two runs, check by check.

A run is read from its report.json, the one file every eb run folder has (eval-banana 0.5.0's
included). Only the fields the comparison uses are checked, with errors that name the file and
the field: checking every key of a 10,000-check report against its schema costs seconds, and
nothing else of it is used here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.core.errors import RunFolderError
from eval_banana.core.readback import loads_json, read_regular
from eval_banana.core.words import one_line
from eval_banana.diffing.narrowed import Narrowed, read_narrowed
from eval_banana.models.diff import (
    DiffEntry,
    DiffRun,
    FamilyChange,
    FamilySide,
    Outcome,
    RunDiff,
)
from eval_banana.models.result import ERROR_CLASSES, ErrorClass
from eval_banana.settings.rundir import run_folder_hint

REPORT_JSON = "report.json"
DIFF_JSON = "diff.json"
_STATUSES = frozenset({"passed", "failed", "error"})
_KIND_NAMES = {str: "string", int: "whole number", list: "list"}
_RATE_DIGITS = 6  # ratios in diff.json: enough to tell one check in a million apart


class CheckOutcome(NamedTuple):
    outcome: Outcome
    digest: str
    summary: str
    error_class: ErrorClass | None = None
    source: str = ""  # its check file, relative to the run's project root when it is inside


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
        return one_line(text.strip().splitlines()[0])
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
    not_run = isinstance(details, dict) and details.get("not_run") is True
    digest = _field(document=check, key="check_definition_sha256", kind=str, path=path, where=where)
    outcome: Outcome = "not_run" if not_run else status
    found = details.get("error_class") if isinstance(details, dict) else None
    # Only an error carries a class; a report from before error classes has none.
    error_class = found if status == "error" and found in ERROR_CLASSES else None
    return CheckOutcome(
        outcome=outcome,
        digest=digest,
        summary=_summary(check),
        error_class=error_class,
        source=_source(check=check, root=root),
    )


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
    run = DiffRun(
        run_id=str(report.get("run_id", "")),
        run_dir=str(run_dir),
        total_checks=len(outcomes),
        points_earned=earned,
        total_points=total,
        pass_rate=round(earned / total, _RATE_DIGITS) if total else 0.0,
        run_passed=report.get("run_passed") is True,
        selection=narrowed.flags if narrowed is not None else None,
    )
    return RunSummary(
        run=run,
        checks=outcomes,
        families=_families(report=report, path=path),
        narrowed=narrowed,
        skipped=_skipped(report=report, path=path),
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
            pass_rate=round(passed / cases, _RATE_DIGITS) if cases else 0.0,
            min_pass_rate=gate,
            gate_held=item["gate_held"],
            of_cases=size if type(size) is int and size >= 0 else None,
            gate_at_merge=deferred,
        )
    return found


def _is_rate(value: object) -> bool:
    """A gate as report.json gives it: a number, or null for none."""
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _family_changes(*, base: RunSummary, head: RunSummary) -> list[FamilyChange]:
    """The families that differ, head's order then base-only ones."""
    changes: list[FamilyChange] = []
    for family in [*head.families, *(f for f in base.families if f not in head.families)]:
        before, now = base.families.get(family), head.families.get(family)
        if before == now or (now is None and head.narrowed is not None):
            continue  # unchanged, or none of its cases was selected in head
        # A head that ran part of the family (--last-failed, -k) judged its gate on that part.
        broke = (
            now is not None
            and now.of_cases is None
            and not now.gate_held
            and (before is None or before.gate_held)
        )
        changes.append(FamilyChange(family=family, base=before, head=now, gate_broke=broke))
    return changes


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
            hint=run_folder_hint(
                folder=run_dir,
                otherwise="Pass a folder that `eb run` or `eb merge` wrote, or `latest`.",
            ),
        ) from None
    except OSError as exc:
        raise RunFolderError(f"Cannot read {path}: {exc}", file=str(path)) from None
    try:
        report = loads_json(data)
    except ValueError as exc:
        raise _bad(path=path, where="$", problem=f"is not valid JSON ({exc})") from None
    return summarize_report(
        report=report, path=path, run_dir=run_dir, narrowed=read_narrowed(run_dir=run_dir)
    )


def _entry(
    *,
    check_id: str,
    base: CheckOutcome | None,
    head: CheckOutcome | None,
    skip_reason: str | None = None,
) -> DiffEntry:
    changed = base is not None and head is not None and base.digest != head.digest
    shown = head if head is not None else base
    return DiffEntry(
        check_id=check_id,
        base=base.outcome if base is not None else None,
        head=head.outcome if head is not None else None,
        definition_changed=changed,
        summary=shown.summary if shown is not None else "",
        error_class=shown.error_class if shown is not None else None,
        skip_reason=skip_reason,
    )


def _left_out(*, check: CheckOutcome, by: RunSummary) -> bool:
    """Whether a check the run `by` does not have was only left out by its narrowed selection:
    its file is among the ones `by` found (or `by` narrowed discovery too). A case whose row
    was deleted from a file `by` still has is counted here too: `by` cannot tell."""
    narrowed = by.narrowed
    if narrowed is None:
        return False
    return narrowed.files is None or check.source in narrowed.files


def compare(*, base: RunSummary, head: RunSummary) -> RunDiff:
    """Every check of both runs in its categories (head's order, then base-only checks)."""
    regressions: list[DiffEntry] = []
    fixes: list[DiffEntry] = []
    could_not_judge: list[DiffEntry] = []
    still_failing: list[DiffEntry] = []
    new_checks: list[DiffEntry] = []
    unskipped: list[DiffEntry] = []
    unselected_in_base: list[DiffEntry] = []
    changed: list[DiffEntry] = []
    unchanged = 0
    for check_id, now in head.checks.items():
        before = base.checks.get(check_id)
        entry = _entry(
            check_id=check_id, base=before, head=now, skip_reason=base.skipped.get(check_id)
        )
        passes = now.outcome == "passed"
        if before is None:
            # Not new when base skipped it or a narrowed base only left it out; either way
            # base says nothing of its verdict.
            if check_id in base.skipped:
                unskipped.append(entry)
            elif _left_out(check=now, by=base):
                unselected_in_base.append(entry)
            else:
                new_checks.append(entry)
        if now.error_class == "infrastructure":
            # The provider or the agent failed: the check was not judged, so it neither
            # regressed nor still fails; it is listed apart (a retry or a rerun decides).
            could_not_judge.append(entry)
            if before is not None and entry.definition_changed:
                changed.append(entry)
            continue
        if before is None:
            if not passes:
                # A new check that does not pass is a new failure: the gate is "nothing that
                # passed before, or was not there, fails now".
                regressions.append(entry)
            continue
        if entry.definition_changed:
            changed.append(entry)
        passed = before.outcome == "passed"
        if passed and passes:
            unchanged += 1
        elif passed:
            regressions.append(entry)
        elif passes:
            fixes.append(entry)
        else:
            still_failing.append(entry)
    families = _family_changes(base=base, head=head)
    removed: list[DiffEntry] = []
    skipped_now: list[DiffEntry] = []
    not_selected: list[DiffEntry] = []
    for check_id, before in base.checks.items():
        if check_id in head.checks:
            continue
        reason = head.skipped.get(check_id)
        entry = _entry(check_id=check_id, base=before, head=None, skip_reason=reason)
        if reason is not None:
            skipped_now.append(entry)  # still in head's project: not removed
        elif _left_out(check=before, by=head):
            not_selected.append(entry)
        else:
            removed.append(entry)
    return RunDiff(
        base=base.run,
        head=head.run,
        regressions=regressions,
        fixes=fixes,
        could_not_judge=could_not_judge,
        still_failing=still_failing,
        new_checks=new_checks,
        removed_checks=removed,
        skipped_now=skipped_now,
        no_longer_skipped=unskipped,
        not_selected=not_selected,
        not_selected_in_base=unselected_in_base,
        changed_definitions=changed,
        unchanged_passing=unchanged,
        points_earned_delta=head.run.points_earned - base.run.points_earned,
        pass_rate_delta=round(head.run.pass_rate - base.run.pass_rate, _RATE_DIGITS),
        families=families,
        regressed=bool(regressions) or any(change.gate_broke for change in families),
    )
