"""JUnit XML from a finished report.json object.

Written with the standard library's `xml.etree.ElementTree`: the format is a handful of
elements and attributes, ElementTree escapes text and attribute values correctly, and the one
thing it does not do (drop characters XML 1.0 forbids) is a regular expression here. A third-party
writer would add a dependency for no gain.
"""

from __future__ import annotations

import errno
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from eval_banana.core.caseid import family_of
from eval_banana.core.errors import Located
from eval_banana.core.files import never_stop, write_named_file
from eval_banana.models.repeats import is_flaky
from eval_banana.reporting.common import (
    Check,
    check_place,
    check_relpath,
    error_class_of,
    is_control,
    is_not_run,
    skipped_checks,
    status_label,
    summary,
    tail,
    xml_safe,
)
from eval_banana.reporting.reasons import abort_text, not_passed_text
from eval_banana.runners.retries import attempts_needed
from eval_banana.settings.folders import junit_loop

SUITE_NAME = "eval-banana"
# The testcase that carries the run's own verdict when no check's testcase shows it (every
# selected check skipped, a run aborted before any check failed): `eval_banana.run_verdict`.
VERDICT_CLASSNAME = "eval_banana"
VERDICT_NAME = "run_verdict"
# The fix of a JUnit file that could not be written once the checks had run (a full disk, an
# immutable file): the run's reports are written again from its stage files, no check rerun.
JUNIT_WRITE_FIX = "make room for it (or make it writable), then `eb update` writes it again"
# report.json already bounds stdout to 2000 characters; stderr may be longer,
# and a CI server renders every byte of system-err, so it is bounded here too.
_STDERR_LIMIT = 8000


def classname(*, check: Check, project_root: str) -> str:
    """The check file's project-relative path without extension, `/` replaced by `.`; for a
    dataset case, its family's id (a CI server then groups the family's cases)."""
    family = family_of(str(check.get("check_id") or ""))
    if family is not None:
        return family
    relative = PurePosixPath(check_relpath(check=check, project_root=project_root))
    return relative.with_suffix("").as_posix().lstrip("/").replace("/", ".")


def _seconds(milliseconds: object) -> str:
    return f"{(int(milliseconds) if isinstance(milliseconds, int) else 0) / 1000:.3f}"


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, tag, {key: xml_safe(value) for key, value in attrs.items()})
    if text is not None:
        element.text = xml_safe(text)
    return element


def _properties(parent: ET.Element, pairs: list[tuple[str, str]]) -> None:
    properties = _sub(parent, "properties")
    for name, value in pairs:
        _sub(properties, "property", name=name, value=value)


def fails_as_flaky(*, check: Check, report: dict[str, Any]) -> bool:
    """A check that passed by its rule while its samples disagreed, in a run that
    --fail-on-flaky fails for it: its testcase fails, so a JUnit reporter shows the run red."""
    return (
        bool(report.get("fail_on_flaky"))
        and check.get("status") == "passed"
        and is_flaky(check.get("details") or {})
    )


def _flaky_failure(case: ET.Element, *, check: Check) -> None:
    details = check.get("details") or {}
    samples = details.get("samples")
    rate = details.get("pass_rate")
    how = f"its {len(samples)} samples disagreed" if isinstance(samples, list) else "flaky"
    if isinstance(rate, int | float):
        how += f" (pass rate {float(rate):.0%})"
    rule = details.get("aggregate")
    passed_by = f"its rule ({rule})" if isinstance(rule, str) and rule else "its rule"
    message = f"flaky under --fail-on-flaky: {how}; {passed_by} passed it"
    _sub(case, "failure", summary(check=check), message=message, type="flaky")


def _outcome(case: ET.Element, *, check: Check, report: dict[str, Any]) -> None:
    """failed → <failure>, error → <error>, not run → <skipped>; passed adds nothing, unless
    --fail-on-flaky fails the run for it (a <failure type="flaky">)."""
    status = check.get("status")
    text = summary(check=check)
    if fails_as_flaky(check=check, report=report):
        _flaky_failure(case, check=check)
    elif is_not_run(check=check):
        detail = str(check.get("error_detail") or "Not run")
        _sub(
            case,
            "skipped",
            message=detail if detail.startswith("Not run") else f"Not run: {detail}",
        )
    elif status == "failed":
        label = status_label(check=check)
        message = f"{label}: {text}" if text else label
        _sub(case, "failure", _failure_body(check=check, text=text), message=message, type="failed")
    elif status == "error":
        detail = str(check.get("error_detail") or text or "error")
        message = detail.splitlines()[0] if detail else ""
        kind = "error"
        found = error_class_of(check=check)
        if found is not None:
            # A CI server groups errors by type: the provider's (infrastructure) apart from a
            # judge that answered without a verdict (verdict), with the cause leading the message.
            kind, cause = found
            message = f"{kind} ({cause}): {message}" if cause != kind else f"{kind}: {message}"
        _sub(case, "error", detail, message=message, type=kind)


def _failure_body(*, check: Check, text: str) -> str:
    lines = [text] if text else []
    if check.get("exit_code") is not None:
        lines.append(f"exit code: {check['exit_code']}")
    if check.get("observed_status") and is_control(check=check):
        lines.append(f"observed status: {check['observed_status']} (expect: fail)")
    return "\n".join(lines)


def _testcase(
    suite: ET.Element,
    *,
    check: Check,
    report: dict[str, Any],
    project_root: str,
    place: Located | None,
) -> None:
    """One check's testcase; `place`: a failed case's dataset row, named by `file` and `line`
    (as pytest names a test's), which reporters that annotate from JUnit put the failure on."""
    file, line = check_place(check=check, project_root=project_root, place=place)
    where = {"file": file} if line is None else {"file": file, "line": str(line)}
    case = _sub(
        suite,
        "testcase",
        classname=classname(check=check, project_root=project_root),
        name=str(check.get("check_id", "")),
        time=_seconds(check.get("duration_ms")),
        **where,
    )
    pairs = [
        ("check_type", str(check.get("check_type", ""))),
        ("expect", str(check.get("expect", "pass"))),
        ("check_definition_sha256", str(check.get("check_definition_sha256", ""))),
    ]
    if is_control(check=check):
        pairs.append(("control", status_label(check=check)))
    attempts = attempts_needed(details=check.get("details") or {})
    if attempts > 1:
        # A judge whose agent needed retries: users want to see it even when it passed.
        pairs.append(("attempts", str(attempts)))
        if check.get("status") == "passed":
            pairs.append(("passed_on_retry", "true"))
    if check.get("tags"):
        pairs.append(("tags", ",".join(str(tag) for tag in check["tags"])))
    cache = (check.get("details") or {}).get("cache")
    if isinstance(cache, dict) and cache.get("hit") is True:
        # A reused verdict: CI shows which run produced it.
        pairs += [("cached", "true"), ("cache_from_run_id", str(cache.get("from_run_id", "")))]
    pairs += _sample_properties(details=check.get("details") or {})
    _properties(case, pairs)
    _outcome(case, check=check, report=report)
    if check.get("stdout"):
        _sub(case, "system-out", str(check["stdout"]))
    if check.get("stderr"):
        text, cut = tail(text=str(check["stderr"]), limit=_STDERR_LIMIT)
        banner = (
            f"[eval-banana: stderr cut to its last {_STDERR_LIMIT} characters]\n" if cut else ""
        )
        _sub(case, "system-err", banner + text)


def _sample_properties(*, details: dict[str, Any]) -> list[tuple[str, str]]:
    """A sampled check: how many samples, its rule, its pass rate and whether it was flaky."""
    samples = details.get("samples")
    if not isinstance(samples, list) or not samples:
        return []
    rate = details.get("pass_rate")
    return [
        ("samples", str(len(samples))),
        ("aggregate", str(details.get("aggregate", ""))),
        ("pass_rate", f"{float(rate):.4g}" if isinstance(rate, int | float) else ""),
        ("flaky", "true" if is_flaky(details) else "false"),
    ]


def _sampled(*, checks: list[Check]) -> bool:
    return any(isinstance((check.get("details") or {}).get("samples"), list) for check in checks)


def _gate_properties(*, report: dict[str, Any]) -> list[tuple[str, str]]:
    """The dataset families whose min_pass_rate gate did not hold, when any did not: their
    failed or errored cases are the testcases that fail, and this names the gate they broke."""
    broken = [
        str(family.get("id"))
        for family in report.get("families") or []
        if isinstance(family, dict) and family.get("gate_held") is False
    ]
    return [("gates_not_held", ",".join(broken))] if broken else []


def _skipped_testcase(suite: ET.Element, *, item: Check, project_root: str) -> None:
    """A check its file skips (`skip: reason`): a testcase with `<skipped message=reason>`."""
    case = _sub(
        suite,
        "testcase",
        classname=classname(check=item, project_root=project_root),
        name=str(item.get("check_id", "")),
        time=_seconds(0),
        file=check_relpath(check=item, project_root=project_root),
    )
    pairs = [("check_type", str(item.get("check_type", "")))]
    if item.get("tags"):
        pairs.append(("tags", ",".join(str(tag) for tag in item["tags"])))
    _properties(case, pairs)
    _sub(case, "skipped", message=str(item.get("reason", "")))


def run_verdict_failure(
    *, report: dict[str, Any], failing: int, fault: str | None = None
) -> tuple[str, str] | None:
    """(type, message) of the `eval_banana.run_verdict` testcase's failure: for a run that
    ends red (exit 1 or 3) while none of its `failing` testcases fails or errors, so a JUnit
    reporter shows it red too; None when a check's testcase shows it, or the run passed.
    `fault`: a report the run could not write before this file (report.html), which ends it
    with exit 3 though report.json says it passed."""
    if failing:
        return None
    if fault is not None:
        return "aborted", fault
    aborted = abort_text(report=report)
    if aborted is not None:
        return "aborted", aborted
    not_passed = not_passed_text(report=report)
    return None if not_passed is None else ("run_verdict", not_passed)


def _verdict_testcase(suite: ET.Element, *, kind: str, message: str) -> None:
    case = _sub(suite, "testcase", classname=VERDICT_CLASSNAME, name=VERDICT_NAME, time=_seconds(0))
    _sub(case, "failure", message, message=message, type=kind)


def junit_tree(
    *,
    report: dict[str, Any],
    project_root: Path,
    places: Mapping[str, Located] | None = None,
    fault: str | None = None,
) -> ET.Element:
    """`<testsuites>` holding the one `eval-banana` suite, one testcase per check, and one for
    the run's verdict when no check's shows it (`run_verdict_failure`); `places`: where failed
    cases' rows are (`caseplaces`); `fault`: a report the run could not write already."""
    places = places or {}
    checks: list[Check] = list(report.get("checks", []))
    skipped = skipped_checks(report=report)
    root_text = str(project_root)
    # JUnit's `skipped` covers both: checks a stop left unstarted and checks their file skips.
    not_started = sum(1 for check in checks if is_not_run(check=check)) + len(skipped)
    failures = sum(
        1
        for check in checks
        if check.get("status") == "failed" or fails_as_flaky(check=check, report=report)
    )
    errors = sum(1 for c in checks if c.get("status") == "error" and not is_not_run(check=c))
    verdict = run_verdict_failure(report=report, failing=failures + errors, fault=fault)
    extra = 0 if verdict is None else 1
    counts = {
        "tests": str(len(checks) + len(skipped) + extra),
        "failures": str(failures + extra),
        "errors": str(errors),
        "skipped": str(not_started),
        "time": _seconds(report.get("duration_ms")),
    }
    root = ET.Element("testsuites", {"name": SUITE_NAME, **counts})
    suite = _sub(root, "testsuite", name=SUITE_NAME, timestamp=str(report.get("started_at", "")))
    suite.attrib.update(counts)
    _properties(
        suite,
        [
            ("run_id", str(report.get("run_id", ""))),
            ("score", f"{report.get('points_earned')}/{report.get('total_points')}"),
            ("pass_threshold", repr(report.get("pass_threshold"))),
            ("run_passed", str(bool(report.get("run_passed"))).lower()),
            ("aborted_by", str(report.get("aborted_by") or "")),
            ("cached_checks", str(report.get("cached_checks", 0))),
            # Only runs with sampled checks name their flaky count: other files stay as they were.
            *(
                [("flaky_checks", str(report.get("flaky_checks", 0)))]
                if _sampled(checks=checks)
                else []
            ),
            *_gate_properties(report=report),
        ],
    )
    for check in checks:
        place = places.get(str(check.get("check_id", "")))
        _testcase(suite, check=check, report=report, project_root=root_text, place=place)
    for item in skipped:
        _skipped_testcase(suite, item=item, project_root=root_text)
    if verdict is not None:
        _verdict_testcase(suite, kind=verdict[0], message=verdict[1])
    return root


def write_junit(
    *,
    report: dict[str, Any],
    project_root: Path,
    path: Path,
    places: Mapping[str, Located] | None = None,
    fault: str | None = None,
    opened: int | None = None,
    stop: Callable[[], bool] | None = None,
) -> None:
    """Write the JUnit XML file for `report` atomically at `path` (parents created), or into
    the device or FIFO there (`write_named_file`; `opened`: it, opened already, and `stop`:
    whether the run is stopping, which ends a wait for its reader); a link made a loop since
    the run began is refused as it is before a run (LinkLoopError, exit 3). `fault`: a report
    the run could not write already, which ends it with exit 3 (its testcase then fails)."""
    root = junit_tree(report=report, project_root=project_root, places=places, fault=fault)
    ET.indent(root)
    data = ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"
    try:
        write_named_file(
            path=path,
            data=data,
            fix=JUNIT_WRITE_FIX,
            opened=opened,
            stop=stop if stop is not None else never_stop,
        )
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise junit_loop(path=path, after_run=True) from None
