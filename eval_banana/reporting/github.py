"""GitHub Actions output: the job step summary and `::error` annotations, for a finished run's
failed checks and for the problems that stop a run before it starts."""

# No `from __future__ import annotations`: it would clash with the public `annotations()`.
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from eval_banana.core.errors import Located, Problem, RunAborted
from eval_banana.core.files import never_stop, write_into
from eval_banana.core.words import visible_lines
from eval_banana.reporting.common import (
    check_place,
    is_control,
    is_not_run,
    relpath,
    status_label,
    summary,
)
from eval_banana.reporting.reasons import abort_text, not_passed_text
from eval_banana.reporting.recap import not_run_text
from eval_banana.settings.folders import STEP_SUMMARY_ENV

# GitHub shows at most ten error (and ten warning) annotations of one step; the log above
# them has every problem.
ANNOTATED_PROBLEMS = 10

Level = Literal["error", "warning"]

# The title of the `::error` of a run that did not pass with no failed check to annotate.
VERDICT_TITLE = "eval_banana did not pass"

# GitHub refuses a step's summary over 1 MiB: the whole file the step appends to, every tool's
# writes and an earlier run's included. A report is cut to keep the file below this, well under.
SUMMARY_LIMIT_BYTES = 900 * 1024
GITHUB_SUMMARY_LIMIT_BYTES = 1024 * 1024
_CUT_NOTE = "\n_eval-banana: summary cut to fit GitHub's size limit; see report.md._\n"
# All a report gets when the step's summary has no room left for any of it.
_NO_ROOM_NOTE = (
    "_eval-banana: no room left in this step's summary (GitHub allows 1 MiB per step); "
    "the report is in report.md in the run folder._\n"
)


def escape_data(text: str) -> str:
    """Workflow-command message escaping: `%`, CR and LF as GitHub reads them, and every other
    control character as the console and JUnit write it (`\\x1b` for ESC), so a check's words
    cannot rewrite the log line or the terminal that shows it."""
    shown = visible_lines(text)
    return shown.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Workflow-command property escaping: the message rules plus `:` and `,`."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _bounded_markdown(*, report_md: str, room: int) -> str:
    """The report, or as much of it as fits in `room` bytes with the cut note; "" when not even
    its first line does (the caller then says there was no room)."""
    text = report_md if report_md.endswith("\n") else report_md + "\n"
    data = text.encode("utf-8")
    if len(data) <= room:
        return text
    # Cut at a line boundary so no table row or list item is left half written.
    head = data[: max(room - len(_CUT_NOTE.encode("utf-8")), 0)].decode("utf-8", errors="ignore")
    head = head[: head.rfind("\n") + 1]
    return head + _CUT_NOTE if head else ""


def _summary_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _line_ending_owed(*, path: Path, size: int) -> str:
    """ "\n" when the summary's last line is not ended (another tool of the step wrote it with
    `printf` or `echo -n`): the report's `# eval-banana report` heading glued onto that line is
    no heading. "" for an empty file or one that ends its last line."""
    if size == 0:
        return ""
    try:
        with path.open("rb") as handle:
            handle.seek(size - 1)
            last = handle.read(1)
    except OSError:
        return ""  # the append below says what is wrong with the file
    return "" if last in (b"", b"\n") else "\n"


def append_step_summary(
    *,
    report_md: str,
    environ: Mapping[str, str],
    limit_bytes: int = SUMMARY_LIMIT_BYTES,
    opened: int | None = None,
    stop: Callable[[], bool] = never_stop,
) -> bool:
    """Append the Markdown report to `$GITHUB_STEP_SUMMARY` when it is set, cut so that the
    whole file stays within `limit_bytes` (or, with no room for any of it, a line saying where
    the report is, while GitHub's own limit has room for that); True if anything was written.
    `opened`: the FIFO or device there, opened already (`open_into`), written into until
    `stop()` says the run is stopping."""
    target = environ.get(STEP_SUMMARY_ENV, "")
    if not target:
        return False
    path = Path(target)
    size = _summary_size(path)
    # The line break an earlier writer owed counts against the limit like the report's bytes.
    lead = _line_ending_owed(path=path, size=size)
    size += len(lead)
    text = _bounded_markdown(report_md=report_md, room=limit_bytes - size)
    if not text:
        fits = size + len(_NO_ROOM_NOTE.encode("utf-8")) <= GITHUB_SUMMARY_LIMIT_BYTES
        if not fits:
            return False
        text = _NO_ROOM_NOTE
    if opened is not None:  # a FIFO's reader or a device takes it as it comes
        write_into(path=path, fd=opened, data=(lead + text).encode("utf-8"), stop=stop)
        return True
    # Appending (not replacing) is the contract of this file: other steps' summaries stay.
    with path.open("a", encoding="utf-8") as handle:
        handle.write(lead + text)
    return True


def _message(*, check: dict[str, Any]) -> str:
    text = summary(check=check)
    if is_control(check=check) and check.get("status") == "failed":
        text = "control check: the planted defect was not caught" + (f": {text}" if text else "")
    return text or f"check {check.get('status')}"


def annotation(*, check: dict[str, Any], project_root: str, place: Located | None = None) -> str:
    """One `::error` workflow command for a failed or errored check: on its check file, or on
    `place` (a case's dataset row) when given."""
    file, line = check_place(check=check, project_root=project_root, place=place)
    properties = [f"file={escape_property(file)}"]
    if line is not None:
        properties.append(f"line={line}")
    title = escape_property(f"{check.get('check_id', '')} {status_label(check=check)}")
    properties.append(f"title={title}")
    return f"::error {','.join(properties)}::{escape_data(_message(check=check))}"


def annotations(
    *, report: dict[str, Any], places: Mapping[str, Located] | None = None
) -> list[str]:
    """For an aborted run first an `::error` saying why, then `::error` lines for the first
    checks that ran and failed or errored, in report order, a `::notice` counting the others
    (GitHub shows ten errors of a step: the abort counts among them; a family of 5,000 failing
    cases printed 5,000 commands, each a copy of a line the log already has) and one
    `::notice` for the checks a stop kept from starting, as the console folds them (annotated
    one by one, they took the ten places of the failure that stopped the run); `places`:
    check id -> where a case's row is (`caseplaces`), to annotate the row rather than the
    family's file."""
    root = str(report.get("project_root", ""))
    places = places or {}
    marked = [
        check
        for check in report.get("checks", [])
        if check.get("status") in ("failed", "error") and not is_not_run(check=check)
    ]
    lines = _abort_annotations(report=report) + _verdict_annotations(
        report=report, marked=len(marked)
    )
    room = ANNOTATED_PROBLEMS - len(lines)
    lines += [
        annotation(check=check, project_root=root, place=places.get(str(check.get("check_id"))))
        for check in marked[:room]
    ]
    rest = len(marked) - room
    if rest > 0:
        more = f"{rest:,} more {'check' if rest == 1 else 'checks'} failed or errored"
        lines.append(
            f"::notice title=eval_banana::{escape_data(more)} than GitHub annotates for one "
            "step: the log above, report.md and report.html list every one"
        )
    held_back = not_run_text(report=report)
    if held_back is not None:
        lines.append(f"::notice title=eval_banana not run::{escape_data(held_back)}")
    return lines


def _abort_annotations(*, report: dict[str, Any]) -> list[str]:
    """The `::error` of an aborted run, as the error it ends with says it ([] for a run that
    was not aborted); the run's own, so it has no file."""
    text = abort_text(report=report)
    if text is None:
        return []
    title = problem_title(kind=RunAborted.kind)
    return [problem_annotation(problem=Problem(message=text), title=title, project_root="")]


def _verdict_annotations(*, report: dict[str, Any], marked: int) -> list[str]:
    """The `::error` of a run that did not pass with no check that failed or errored to
    annotate (every selected check skipped): why, so the step's red is explained; [] for any
    other run (an aborted one has its abort's)."""
    text = not_passed_text(report=report)
    if text is None or marked:
        return []
    return [problem_annotation(problem=Problem(message=text), title=VERDICT_TITLE, project_root="")]


def problem_title(*, kind: str) -> str:
    """The title of the annotation of a problem of `kind` (an error's): `eval_banana config
    error`, `eval_banana aborted`."""
    return f"eval_banana {kind.replace('_', ' ')}"


def problem_annotations(
    *, problems: Sequence[Located], title: str, project_root: str, level: Level = "error"
) -> list[str]:
    """`::error` lines for the first problems that stop a run (a check file's bad field, a
    dataset's bad row, a config key), each on its file and line so that GitHub shows it
    in the pull request's diff; a problem without a file is still annotated, on the run.
    `level` "warning": `::warning` lines, for what the run warned of."""
    return [
        problem_annotation(problem=problem, title=title, project_root=project_root, level=level)
        for problem in problems[:ANNOTATED_PROBLEMS]
    ]


def warning_annotations(*, report: dict[str, Any], before: Sequence[Located] = ()) -> list[str]:
    """`::warning` lines for the first warnings of a finished run (the shared cache failing or
    refusing entries, an `inputs:` pattern matching nothing), so that they show on the run's
    page and not only in its log; `before`: warnings told ahead of them (the config file's, a
    key with no effect, which report.json does not list)."""
    warnings: list[Located] = list(before)
    warnings.extend(
        Problem(
            message=str(item["message"]),
            file=item.get("file"),
            hint=item.get("hint"),
            line=item.get("line"),
            column=item.get("column"),
        )
        for item in report.get("warnings") or []
        if isinstance(item, dict) and item.get("message")
    )
    return problem_annotations(
        problems=warnings,
        title="eval_banana warning",
        project_root=str(report.get("project_root", "")),
        level="warning",
    )


def problem_annotation(
    *, problem: Located, title: str, project_root: str, level: Level = "error"
) -> str:
    properties = []
    if problem.file:
        properties.append(
            f"file={escape_property(relpath(path=problem.file, project_root=project_root))}"
        )
        if problem.line is not None:
            properties.append(f"line={problem.line}")
            if problem.column is not None:
                properties.append(f"col={problem.column}")
    properties.append(f"title={escape_property(title)}")
    text = f"{problem.message}\nhint: {problem.hint}" if problem.hint else problem.message
    return f"::{level} {','.join(properties)}::{escape_data(text)}"
