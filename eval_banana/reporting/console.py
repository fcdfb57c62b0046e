"""Human output: progress on stderr while checks run, the run summary on stdout.

On a terminal both are rendered with rich; otherwise they are plain lines (no ANSI codes, no
wrapping) so CI logs and pipes get exactly eval-banana's text.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from eval_banana.core.caseid import family_of
from eval_banana.core.errors import Located
from eval_banana.core.heldstreams import to_nowhere
from eval_banana.core.words import one_line, plural, warning_text
from eval_banana.models.repeats import is_flaky
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import PlannedCheck, ProblemModel, ScoreDoc
from eval_banana.reporting.common import is_not_run
from eval_banana.reporting.recap import closing_line, not_run_line, recap_lines
from eval_banana.reporttext.families import family_lines
from eval_banana.reporttext.notes import (
    cache_line,
    errors_line,
    flaky_line,
    nothing_judged,
    result_summary,
    status_notes,
    usage_summary,
)
from eval_banana.runners.results import (
    FAMILY_CASES_LISTED,
    folded_in_log,
    progress_line,
    selected_family_sizes,
)
from eval_banana.runners.retries import attempts_needed

if TYPE_CHECKING:
    # rich is imported only when a terminal will show it: CI logs never pay for it.
    from rich.console import Console as RichConsole
    from rich.progress import Progress
    from rich.text import Text

Item = TypeVar("Item")
Key = TypeVar("Key", bound=Hashable)
STATUS_STYLES = {"passed": "green", "failed": "red", "error": "yellow", "skipped": "cyan"}
_RECAP_STYLES = {"FAILED": "bold red", "ERROR": "bold yellow"}
_MAX_CURRENT_IDS = 4
# In a log, the cases a large family folds are told as a count at most this often (and when
# the checks end), with the checks running then: a log that has not moved for minutes says
# which checks it waits on.
LOG_COUNT_SECONDS = 10.0
FOLD_REASON = (
    f"a dataset family of more than {FAMILY_CASES_LISTED} cases logs only the cases that did "
    "not pass; report.md lists every case"
)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _rich(stream: TextIO) -> RichConsole:
    from rich.console import Console as RichConsole

    return RichConsole(file=stream, soft_wrap=True, highlight=False, markup=False, emoji=False)


def summary_lines(
    *,
    report: dict[str, Any],
    report_path: Path,
    html_path: Path | None = None,
    places: Mapping[str, Located] | None = None,
) -> list[str]:
    """The summary eval-banana prints: four labels, `Report:` (our addition), one line per check.

    The `Report:` line starts with report.json's path and names report.html when one was
    written, the page a person opens. `places`: where failed cases' rows are, for the recap.
    """
    html = f" (HTML: {html_path})" if html_path is not None else ""
    lines = [
        f"Run ID: {report['run_id']}",
        f"Score: {report['points_earned']}/{report['total_points']}",
        f"Percentage: {report['percentage']:.1f}%",
        f"Passed: {'yes' if report['run_passed'] else 'no'}",
        f"Report: {report_path}{html}",
    ]
    if report.get("allow_empty"):
        lines.append(f"No checks ran: {report['allow_empty']}")
    judged = nothing_judged(report=report)
    if judged is not None:
        lines.append(f"No checks ran: {judged}")
    usage = usage_summary(usage=report.get("judge_usage"))
    if usage is not None:
        lines.append(f"Judge usage: {usage}")
    cached = cache_line(report=report)
    if cached is not None:
        lines.append(cached)
    if report.get("selection_note"):
        lines.append(str(report["selection_note"]))
    flaky = flaky_line(report=report)
    if flaky is not None:
        lines.append(flaky)
    lines.extend(family_lines(report=report))
    errors = errors_line(report=report)
    if errors is not None:
        lines.append(errors)
    checks: Sequence[dict[str, Any]] = report["checks"]
    # The checks a stop or maxfail kept from starting are one line, not an error line each.
    lines.extend(_check_lines(checks=[check for check in checks if not is_not_run(check=check)]))
    held_back = not_run_line(report=report)
    if held_back is not None:
        lines.append(held_back)
    # Skipped checks come last: they were selected but never ran (`skip:` in their file).
    lines.extend(_skipped_lines(skipped=report.get("skipped") or []))
    # The screen ends on what matters: what failed, then the counts (as pytest ends).
    recap = recap_lines(report=report, places=places)
    if recap:
        lines.extend(["", *recap])
    lines.append(closing_line(report=report))
    return lines


def _check_lines(*, checks: Sequence[dict[str, Any]]) -> list[str]:
    """One line per check, as eval-banana prints them; but a dataset family of more than
    FAMILY_CASES_LISTED cases (a new kind of check, which no eval-banana output holds) shows
    its plainly passing cases as one line, where the first of them was: a family of 10,000
    cases would otherwise bury its failures in 10,000 lines of a CI log."""
    sizes = Counter(check.get("family") for check in checks)
    return _folded_lines(
        items=checks,
        group=lambda check: check.get("family") if _plain(check) else None,
        large=lambda family, _: sizes[family] > FAMILY_CASES_LISTED,
        line=lambda check: _check_line(check=check),
        group_line=lambda family, count: (
            f"- {family}: {plural(count=count, noun='case')} "
            "passed (each is listed in report.md and report.json)"
        ),
    )


def _skipped_lines(*, skipped: Sequence[dict[str, Any]]) -> list[str]:
    """`- <id>: skipped - <reason>` per skipped check, as eval-banana prints them; but more than
    FAMILY_CASES_LISTED cases of one family skipped for one reason (a family's own `skip:`)
    are one line, where the first of them was."""

    def group(item: dict[str, Any]) -> tuple[str, str] | None:
        family = family_of(str(item["check_id"]))
        return None if family is None else (family, str(item["reason"]))

    return _folded_lines(
        items=skipped,
        group=group,
        large=lambda _, count: count > FAMILY_CASES_LISTED,
        line=lambda item: f"- {item['check_id']}: skipped - {one_line(str(item['reason']))}",
        group_line=lambda key, count: (
            f"- {key[0]}: {plural(count=count, noun='case')} skipped - {one_line(key[1])}"
        ),
    )


def _folded_lines(
    *,
    items: Sequence[Item],
    group: Callable[[Item], Key | None],
    large: Callable[[Key, int], bool],
    line: Callable[[Item], str],
    group_line: Callable[[Key, int], str],
) -> list[str]:
    """A line per item, but the items of a large group (`large`, given the group and how many
    of the items are in it) as one `group_line`, where the first of them was. Each item's
    group is asked once, and a run of hundreds of families is not scanned once per family."""
    keys = [group(item) for item in items]
    counts = Counter(key for key in keys if key is not None)
    lines: list[str] = []
    said: set[Key] = set()
    for item, key in zip(items, keys, strict=True):
        if key is None or not large(key, counts[key]):
            lines.append(line(item))
        elif key not in said:
            said.add(key)
            lines.append(group_line(key, counts[key]))
    return lines


def _plain(check: dict[str, Any]) -> bool:
    """A check that passed as expected with nothing more to tell: its notes may say that every
    sample passed, that a control caught its defect or that the verdict came from the cache (a
    large family of such cases is one line), never that samples disagreed or that it took
    retries (those keep their line)."""
    details = check.get("details") or {}
    return (
        check.get("status") == "passed"
        and not is_flaky(details)
        and attempts_needed(details=details) <= 1
    )


def _check_line(*, check: dict[str, Any]) -> str:
    status = str(check["status"])
    notes = status_notes(check=check)
    if notes:
        status = f"{status} ({', '.join(notes)})"
    # A reason is the check's or the judge's words: one line, no control characters.
    summary = one_line(result_summary(result=check))
    return f"- {check['check_id']}: {status}" + (f" - {summary}" if summary else "")


def _styled(line: str) -> Text:
    """A summary line with its status word coloured (terminal only)."""
    from rich.text import Text

    text = Text(line)
    word = line.split(" ", 1)[0]
    if word in _RECAP_STYLES:
        text.stylize(_RECAP_STYLES[word], 0, len(word))
    elif line.startswith("Passed: "):
        text.stylize("bold green" if line.endswith("yes") else "bold red", len("Passed: "))
    elif line.startswith("- "):
        _, _, rest = line.partition(": ")
        status = rest.split(" ", 1)[0]
        if status in STATUS_STYLES:
            start = line.index(": ") + 2
            text.stylize(STATUS_STYLES[status], start, start + len(status))
    return text


def print_summary(
    *,
    report: dict[str, Any],
    report_path: Path,
    stream: TextIO | None = None,
    html_path: Path | None = None,
    places: Mapping[str, Located] | None = None,
) -> None:
    """Print the summary on stdout; plain text when stdout is not a terminal."""
    lines = summary_lines(
        report=report, report_path=report_path, html_path=html_path, places=places
    )
    _write_lines(lines=lines, stream=stream)


def _write_lines(*, lines: list[str], stream: TextIO | None) -> None:
    """Lines on `stream` (stdout by default): coloured on a terminal, plain text otherwise."""
    out = stream if stream is not None else sys.stdout
    try:
        if _is_terminal(out):
            console = _rich(out)
            for line in lines:
                console.print(_styled(line))
        else:
            out.write("\n".join(lines) + "\n")
            out.flush()
    except BrokenPipeError:
        # The reports were written before the summary; a closed stdout changes nothing.
        if stream is None:
            to_nowhere(sys.stdout)  # so the exit's flush cannot fail again


def verdict_lines(*, score: ScoreDoc, results: Sequence[CheckResult] = ()) -> list[str]:
    """What `eb stage score` prints: the score, the threshold, the counts and the verdict."""
    lines = [
        f"Run ID: {score.run_id}",
        f"Score: {score.points_earned}/{score.total_points}",
        f"Percentage: {score.percentage:.1f}%",
        f"Pass threshold: {score.pass_threshold!r} "
        f"({'met' if score.meets_threshold else 'not met'})",
        # As the run's closing line counts them: a check never started did not error.
        f"Checks: {score.passed_checks} passed, {score.failed_checks} failed, "
        f"{score.errored_checks - score.not_run_checks} errored, "
        f"{score.not_run_checks} not run",
        f"Passed: {'yes' if score.run_passed else 'no'}",
    ]
    if score.aborted_by is not None:
        not_run = plural(count=score.not_run_checks, noun="check")
        lines.append(f"Aborted by: {score.aborted_by} ({not_run} did not run)")
    document = score.model_dump(mode="json")  # the keys report.json's helpers read
    judged = nothing_judged(report=document)
    if judged is not None:
        lines.append(f"No checks ran: {judged}")
    errors = errors_line(report=document)
    if errors is not None:
        lines.append(errors)
    if score.flaky_checks:
        failing = " (--fail-on-flaky: the run fails)" if score.fail_on_flaky else ""
        lines.append(f"Flaky checks: {score.flaky_checks}{failing}")
    # A family's own gate fails a run whatever the threshold says: each family is told, as
    # the run's summary tells it.
    lines.extend(family_lines(report=document))
    lines.extend(_check_line(check=result.model_dump(mode="json")) for result in results)
    return lines


class Console:
    """One place for human output: warnings and progress on stderr, the summary on stdout."""

    def __init__(
        self, *, quiet: bool = False, stdout: TextIO | None = None, stderr: TextIO | None = None
    ) -> None:
        self.quiet = quiet
        self.stdout = stdout if stdout is not None else sys.stdout
        self.stderr = stderr if stderr is not None else sys.stderr
        self._err: RichConsole | None = None

    @property
    def err(self) -> RichConsole:
        """A rich console on stderr, made on first use (progress on a terminal)."""
        if self._err is None:
            self._err = _rich(self.stderr)
        return self._err

    @property
    def stderr_redraws(self) -> bool:
        """Whether stderr is a terminal rich redraws a live line on: rich draws nothing on a
        dumb one (TERM=dumb, an Emacs shell), which gets the log's lines instead."""
        if not _is_terminal(self.stderr):
            return False  # checked first: a log never imports rich
        err = self.err
        return err.is_terminal and not err.is_dumb_terminal and not err.is_jupyter

    def warn(self, message: str, *, hint: str | None = None) -> None:
        """A warning on stderr (also in quiet mode: it is not part of any stdout format), with
        its fix on the next line when it has one."""
        self.stderr.write(warning_text(message=message, hint=hint))
        self.stderr.flush()

    def warn_each(self, problems: Sequence[ProblemModel]) -> None:
        """A stage's warnings, each with its fix."""
        for problem in problems:
            self.warn(problem.message, hint=problem.hint)

    def verdict(self, *, score: ScoreDoc, results: Sequence[CheckResult] = ()) -> None:
        """The score stage's verdict on stdout (each check's line too when `results` are given)."""
        if not self.quiet:
            _write_lines(lines=verdict_lines(score=score, results=results), stream=self.stdout)

    def notice(self, message: str) -> None:
        """A line about the run on stderr that is not a warning (e.g. maxfail reached)."""
        if not self.quiet:
            self.stderr.write(f"{message}\n")
            self.stderr.flush()

    def summary(
        self,
        *,
        report: dict[str, Any],
        report_path: Path,
        html_path: Path | None = None,
        places: Mapping[str, Located] | None = None,
    ) -> None:
        if not self.quiet:
            print_summary(
                report=report,
                report_path=report_path,
                stream=self.stdout,
                html_path=html_path,
                places=places,
            )


class ProgressReporter:
    """Checks done / total and the running ids: live on a terminal, one line per check in logs.

    In a log, the plainly passing cases of a dataset family of more than FAMILY_CASES_LISTED
    cases get no line each (`folded_in_log`): they are counted, and the count is told at most
    every LOG_COUNT_SECONDS and when the checks end. Every other check keeps its line, as
    eval-banana prints it.
    """

    def __init__(
        self,
        *,
        total: int,
        console: Console | None = None,
        family_sizes: Mapping[str, int] | None = None,
        count_every_s: float = LOG_COUNT_SECONDS,
    ) -> None:
        self.console = console if console is not None else Console()
        self.total = total
        self.done = 0
        self.failed = 0
        self.errored = 0
        self.running: list[str] = []
        self.family_sizes = family_sizes or {}
        self.count_every_s = count_every_s
        self._lock = threading.Lock()
        self._live = not self.console.quiet and self.console.stderr_redraws
        self._progress: Progress | None = None
        self._task: Any = None
        self._counted = 0  # folded cases not yet told
        self._told_at = time.monotonic()
        self._told_a_count = False

    @classmethod
    def over(cls, *, checks: Sequence[PlannedCheck], console: Console) -> ProgressReporter:
        """The progress of running `checks`, folding the large families among them."""
        return cls(
            total=len(checks), console=console, family_sizes=selected_family_sizes(checks=checks)
        )

    def __enter__(self) -> ProgressReporter:
        if self._live and self.total:
            from rich.progress import (
                BarColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.completed}/{task.total} checks"),
                BarColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[failures]}", style="bold red"),
                # Check ids as written: a case id's `[ship]` is no markup tag to drop.
                TextColumn("{task.fields[current]}", markup=False),
                console=self.console.err,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(
                "checks", total=self.total, current="", failures=""
            )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        with self._lock:
            if self._counted:
                self._write(self._count_line(running=False))

    def _current(self) -> str:
        shown = self.running[:_MAX_CURRENT_IDS]
        extra = len(self.running) - len(shown)
        return ", ".join(shown) + (f" (+{extra})" if extra > 0 else "")

    def failures(self) -> str:
        """The failures so far, as the live progress line shows them ("" while there are none)."""
        parts = [f"{self.failed} failed"] if self.failed else []
        if self.errored:
            parts.append(f"{self.errored} errored")
        return ", ".join(parts)

    def started(self, check: PlannedCheck) -> None:
        with self._lock:
            self.running.append(check.id)
            if self._progress is not None:
                self._progress.update(self._task, current=self._current())

    def finished(self, check: PlannedCheck, result: CheckResult) -> None:
        with self._lock:
            self.done += 1
            self.failed += result.status == "failed"
            self.errored += result.status == "error"
            if check.id in self.running:
                self.running.remove(check.id)
            if self._progress is not None:
                self._progress.update(
                    self._task,
                    completed=self.done,
                    current=self._current(),
                    failures=self.failures(),
                )
            elif not self.console.quiet:
                size = self.family_sizes.get(check.family, 0) if check.family else 0
                if not folded_in_log(result=result, family_size=size):
                    line = progress_line(check_id=check.id, result=result)
                    self._write(f"[{self.done}/{self.total}] {line}")
                    return
                self._counted += 1
                if time.monotonic() - self._told_at >= self.count_every_s:
                    self._write(self._count_line(running=True))

    def _count_line(self, *, running: bool) -> str:
        """`[n/total] k cases passed`, the folded cases since the last count; the first count
        of a run says why, and a count told while checks run names them."""
        line = f"[{self.done}/{self.total}] {plural(count=self._counted, noun='case')} passed"
        if not self._told_a_count:
            line += f" ({FOLD_REASON})"
        if running and self.running:
            line += f"; running: {self._current()}"
        self._counted = 0
        self._told_at = time.monotonic()
        self._told_a_count = True
        return line

    def _write(self, line: str) -> None:
        self.console.stderr.write(line + "\n")
        self.console.stderr.flush()

    def replayed(self, *, lines: Sequence[str], folded: Collection[int] = ()) -> None:
        """The lines of a replayed run's checks (`progress_line`), as its run printed them, but
        the lines at the positions in `folded` (the cases a log counts) told as one count."""
        if self._live or self.console.quiet:
            return  # a terminal's bar is gone once a run ends: a replay shows none
        total = len(lines)
        counted = frozenset(folded)
        kept = [
            f"[{done}/{total}] {line}\n"
            for done, line in enumerate(lines, start=1)
            if done - 1 not in counted
        ]
        if folded:
            count = plural(count=len(folded), noun="case")
            kept.append(f"[{total}/{total}] {count} passed ({FOLD_REASON})\n")
        self.console.stderr.write("".join(kept))
        self.console.stderr.flush()
