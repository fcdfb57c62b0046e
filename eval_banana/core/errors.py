"""One root exception; the CLI turns each into a message and an exit code (see cli.py)."""

from __future__ import annotations

import errno
import os
from collections import Counter
from typing import NamedTuple, Protocol


class Problem(NamedTuple):
    """One located problem: what is wrong, where, and how to fix it."""

    message: str
    file: str | None = None
    field_path: str | None = None
    hint: str | None = None
    line: int | None = None  # 1-based, in `file`
    column: int | None = None
    # How many errors `message` tells: a check file's field errors are one message that lists
    # each, and `eb validate --json` gives each an entry of its own, so counts must add them.
    errors: int = 1


class Located(Protocol):
    """Anything that tells one problem: an error, or a problem as a stage file records it."""

    @property
    def message(self) -> str: ...
    @property
    def file(self) -> str | None: ...
    @property
    def field_path(self) -> str | None: ...
    @property
    def hint(self) -> str | None: ...
    @property
    def line(self) -> int | None: ...
    @property
    def column(self) -> int | None: ...


def problem_of(located: Located) -> Problem:
    """The one problem `located` tells (an error's own, without the others it carries)."""
    return Problem(
        message=located.message,
        file=located.file,
        field_path=located.field_path,
        hint=located.hint,
        line=located.line,
        column=located.column,
    )


class EvalBananaError(Exception):
    """Base of every expected failure; `exit_code` decides the process status."""

    exit_code: int = 2
    kind: str = "setup_error"
    # True when the reports printed its workflow command already (`--annotations github`):
    # an aborted run's comes first among its checks', so the CLI does not print it again.
    annotated: bool = False

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        field_path: str | None = None,
        hint: str | None = None,
        problems: tuple[Problem, ...] = (),
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.field_path = field_path
        self.hint = hint
        self.problems = problems
        self.line = line
        self.column = column

    def render(self) -> str:
        """The user-facing text: the message and its hint, then every extra problem with its
        own. Among several problems each hint sits under its own message (a hint after the
        last one would read as that one's), except that problems in a row with the same hint
        (2,000 rows with one bad id pattern) get it once, after the last of them; many
        problems end with their count by file, which is what a terminal shows last."""
        every = self.every_problem()
        if len(every) == 1:
            return f"{self.message}\nhint: {self.hint}" if self.hint else self.message
        lines = _messages_with_hints(problems=every)
        if sum(problem.errors for problem in every) >= _COUNTED_FROM:
            lines.append(_count_by_file(problems=every))
        return "\n".join(lines)

    def every_problem(self) -> tuple[Problem, ...]:
        """This error's own problem, then each other one it carries (a repeat of its own
        message, which some carry in full, is left out)."""
        others = (problem for problem in self.problems if problem.message != self.message)
        return (problem_of(self)._replace(errors=self.errors_told()), *others)

    def errors_told(self) -> int:
        """How many errors this error's own message tells."""
        return 1

    def as_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "message": self.message,
            "file": self.file,
            "field_path": self.field_path,
            "hint": self.hint,
        }


# From this many problems on, the text ends with how many there are in each file.
_COUNTED_FROM = 5


def _messages_with_hints(*, problems: tuple[Problem, ...]) -> list[str]:
    lines: list[str] = []
    sharing = 0  # problems so far in the current run of one hint
    for index, problem in enumerate(problems):
        lines.append(problem.message)
        sharing += 1
        following = problems[index + 1] if index + 1 < len(problems) else None
        if following is not None and following.hint == problem.hint:
            continue
        if problem.hint:
            scope = "" if sharing == 1 else f" (the {sharing:,} problems above)"
            lines.append(f"  hint{scope}: {problem.hint}")
        sharing = 0
    return lines


def _count_by_file(*, problems: tuple[Problem, ...]) -> str:
    """`6 problems in 5 files: 2 in b.yaml, ...`: every error counted, as `--json` lists them
    (a check file's field errors, told in one message, count one each)."""
    counts: Counter[str] = Counter()
    for problem in problems:
        counts[problem.file or "(no file)"] += problem.errors
    total = sum(counts.values())
    if len(counts) == 1:
        return f"{total:,} problems, all in {next(iter(counts))}"
    shown = ", ".join(f"{count:,} in {name}" for name, count in counts.most_common(3))
    rest = len(counts) - 3
    more = f", and more in {rest:,} other file{'s' if rest > 1 else ''}" if rest > 0 else ""
    return f"{total:,} problems in {len(counts):,} files: {shown}{more}"


class UsageError(EvalBananaError):
    """Bad flags or flag combinations."""

    kind = "usage_error"


class ReportOverwriteError(UsageError):
    """A report flag names a file the run reads (its config, a check, a script, a dataset)."""


class ConfigError(EvalBananaError):
    """`.eval-banana/config.toml`, `EVAL_BANANA_*` or a flag value is unusable."""

    kind = "config_error"


class DefinitionError(EvalBananaError):
    """A check file is unreadable or invalid, or the selection is empty or ambiguous.

    `field_errors` holds one located problem per field error of one check file; `message`
    already lists them all, so they are not rendered again.
    """

    kind = "definition_error"

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        field_path: str | None = None,
        hint: str | None = None,
        problems: tuple[Problem, ...] = (),
        line: int | None = None,
        column: int | None = None,
        field_errors: tuple[Problem, ...] = (),
    ) -> None:
        super().__init__(
            message,
            file=file,
            field_path=field_path,
            hint=hint,
            problems=problems,
            line=line,
            column=column,
        )
        self.field_errors = field_errors

    def errors_told(self) -> int:
        return len(self.field_errors) or 1


class NoChecksError(DefinitionError):
    kind = "no_checks"


class GuardError(EvalBananaError):
    """The harness cannot serve the selected judge checks."""

    kind = "harness_error"


class OutputDirError(EvalBananaError):
    """The run folder cannot be used (flat-output refusals, OS errors)."""

    kind = "output_error"


class LinkLoopError(OutputDirError):
    """A report's path is a symbolic link that leads back to itself (ELOOP): no file is there to
    write, and a shell's `>` refuses it too. Refused before anything runs (exit 2); a link made a
    loop after that (by a check, while the run went on: `after_run`) is told in the same words
    once the run's other reports are written, and ends the run as any report that cannot be
    written does (exit 3)."""

    def __init__(self, message: str, *, file: str, hint: str, after_run: bool = False) -> None:
        super().__init__(message, file=file, hint=hint)
        if after_run:
            self.exit_code = 3


class StageFileError(EvalBananaError):
    """A stage file is missing, truncated, hand-broken or of another version."""

    kind = "stage_file_error"


class MergeError(EvalBananaError):
    """`eb merge` was given folders that are not every shard of one plan exactly once."""

    kind = "merge_error"


class MergeInterruptedError(EvalBananaError):
    """`eb update` was asked to complete a merged run whose `eb merge` was interrupted before it
    had brought in every shard's files: only merging the shards again can."""

    kind = "merge_interrupted"


class RunFolderError(EvalBananaError):
    """A folder given as a finished run (`eb diff`, `--baseline`) is not one, or is unreadable."""

    kind = "run_folder_error"


class RunInUseError(EvalBananaError):
    """Another eb process is writing the run folder `eb update` or `eb stage` would rewrite, or
    holds the project a check's `eb calibrate` would write its record into."""

    kind = "run_in_use"


class ProjectStateError(EvalBananaError):
    """The project's files cannot be listed or read (git failed, a file is unreadable)."""

    kind = "project_state_error"


class ChangeSelectionError(EvalBananaError):
    """--changed-since or --last-failed cannot be resolved (no git repository, unknown ref)."""

    kind = "selection_error"


class RunAborted(EvalBananaError):
    """An interrupt or a fuse stopped the run; raised only after the reports are written."""

    exit_code = 3
    kind = "aborted"

    def __init__(self, message: str, *, annotated: bool = False) -> None:
        super().__init__(message)
        self.annotated = annotated


class WriteFault(EvalBananaError):
    """A file eb writes could not be written (disk full, I/O error, read-only, permissions).

    Infrastructure, never a verdict: the run is aborted (exit 3) with one line naming the path
    and the cause; nothing it judged is kept in the verdict cache or as a replay.
    """

    exit_code = 3
    kind = "write_fault"

    def __init__(
        self,
        *,
        path: str,
        cause: str,
        action: str = "write",
        hint: str | None = None,
        earlier: str = "",
    ) -> None:
        told = f"{cause}; {earlier}" if earlier else cause
        super().__init__(
            f"Cannot {action} {path}: {told}; the run is aborted", file=path, hint=hint
        )
        self.path = path
        # Why, in the system's words ("No space left on device").
        self.cause = cause
        # A report's: what became of the file an earlier run left at `path`, in eb's words
        # ("" when none was there), told after the cause.
        self.earlier = earlier
        # What eb failed to do to the file: "write" it, or another change of the folder it is
        # in ("remove the empty file"), told in those words, never as the check's own failure.
        self.action = action

    @property
    def said(self) -> str:
        """What failed, without what it does to a run: for a write whose failure costs only
        itself (a warning), or a command that is no run (`eb init`)."""
        told = f"{self.cause}; {self.earlier}" if self.earlier else self.cause
        return f"Cannot {self.action} {self.path}: {told}"

    @classmethod
    def told(cls, *, path: object, exc: Exception) -> str:
        """`said` of a write of `path` that failed with `exc`, whatever raised it: a fault
        as it says itself; a plain OSError by its cause at `path` (not the temporary file
        the rename came from); anything else in its own words."""
        if isinstance(exc, WriteFault):
            return exc.said
        if isinstance(exc, OSError):
            return cls.at(path=path, exc=exc).said
        return str(exc)

    @classmethod
    def of(cls, *, path: object, exc: OSError) -> WriteFault:
        """The fault of an OSError raised while writing `path` (the error's own file first)."""
        return cls.at(path=exc.filename if exc.filename is not None else path, exc=exc)

    @classmethod
    def at(cls, *, path: object, exc: OSError) -> WriteFault:
        """The fault of an OSError raised while writing `path`, named by `path` (not the
        temporary file beside it); too many open files is a ResourceFault."""
        if out_of_files(exc):
            return ResourceFault.met(exc=exc, doing=f"opening {path} to write it", path=str(path))
        return cls(path=str(path), cause=exc.strerror or str(exc) or type(exc).__name__)

    def with_earlier(self, *, earlier: str, hint: str | None) -> WriteFault:
        """This fault (its class, path, cause and what eb failed to do) told with what became
        of the file an earlier run left at its path, and the hint `hint`."""
        # Made without __init__, whose arguments differ between the kinds of fault.
        told = type(self).__new__(type(self))
        told.__dict__.update(self.__dict__)
        told.earlier = earlier
        told.hint = hint
        told.message = f"{told.said}; the run is aborted"
        told.args = (told.message,)
        return told

    def outside_a_run(self) -> WriteFault:
        """This fault as a command that is no run tells it (`eb list`, `eb status`): what
        failed, and nothing of a run being aborted."""
        # The same fault (its path, cause and type) with only its words changed; made without
        # __init__, whose arguments differ between the kinds of fault.
        told = type(self).__new__(type(self), self.said)
        told.__dict__.update(self.__dict__)
        told.message = self.said
        return told


# What eb's own standard output is called where a fault names the file that failed.
STANDARD_OUTPUT = "standard output"


# The system's limits on open files: the process's own (`ulimit -n`) and the whole system's.
_OUT_OF_FILES = frozenset({errno.EMFILE, errno.ENFILE})


def out_of_files(exc: BaseException) -> bool:
    """Whether `exc` is the system refusing eb one more open file (or pipe, or socket)."""
    return isinstance(exc, OSError) and exc.errno in _OUT_OF_FILES


class ResourceFault(WriteFault):
    """The system refused eb one more open file while it did its own work (`ulimit -n` too low
    for the checks run side by side, or the whole system's table full).

    Infrastructure, never a verdict, wherever it struck: reading, writing or starting a
    process. A WriteFault's kind, so that every place that aborts a run on a fault of eb's own
    aborts it on this one too (exit 3, nothing kept in the verdict cache or as a replay), but
    told as what it is: what eb was doing, never as a write of a file eb was reading.
    """

    kind = "resource_fault"

    def __init__(self, *, doing: str, cause: str, hint: str, path: str = "") -> None:
        said = f"{cause} while eb was {doing}"
        EvalBananaError.__init__(self, f"{said}; the run is aborted", file=path or None, hint=hint)
        self.path = path  # the file eb was opening, when the system named it
        self.cause = cause
        self.doing = doing
        self._said = said

    @property
    def said(self) -> str:
        return self._said

    @classmethod
    def met(cls, *, exc: OSError, doing: str, path: str | None = None) -> ResourceFault:
        """The fault of `exc` (too many open files) met while eb was `doing` something."""
        where = path if path is not None else exc.filename
        return cls(
            doing=doing,
            cause=exc.strerror or str(exc),
            hint=_fewer_files_hint(exc=exc),
            path="" if where is None else str(where),
        )

    @classmethod
    def during(cls, *, exc: BaseException, doing: str) -> ResourceFault | None:
        """The fault of `exc` met while eb was `doing` something (running a check), naming the
        file it was opening when the system named one; None when `exc` is none."""
        if not isinstance(exc, OSError) or not out_of_files(exc):
            return None
        opening = f" (opening {exc.filename})" if exc.filename is not None else ""
        return cls.met(exc=exc, doing=f"{doing}{opening}")


def _fewer_files_hint(*, exc: OSError) -> str:
    """The fix: more open files for eb, or fewer checks at once."""
    if exc.errno == errno.ENFILE:
        return (
            "the whole system has no open file left: close other programs' files, raise the "
            "system's limit (fs.file-max), or lower --max-parallel-checks"
        )
    return (
        f"raise the open-files limit (`ulimit -n`{_current_limit()}) or lower --max-parallel-checks"
    )


def _current_limit() -> str:
    # Read through os, already loaded: importing a module needs one more open file.
    try:
        limit = os.sysconf("SC_OPEN_MAX")
    except (AttributeError, ValueError, OSError):  # not on this system (Windows)
        return ""
    return f", now {limit}" if limit > 0 else ""


class StdoutFault(WriteFault):
    """eb's standard output could not be written, for a cause other than a reader that went
    away (a full disk under `eb run > out.txt`): what the user asked to see is lost, a write
    fault like any other (exit 3). It is told on stderr, never on the stdout that failed."""

    def __init__(self, *, cause: str) -> None:
        super().__init__(path=STANDARD_OUTPUT, cause=cause)

    @classmethod
    def of_error(cls, exc: OSError) -> StdoutFault:
        return cls(cause=exc.strerror or str(exc) or type(exc).__name__)


class SelectionError(UsageError):
    """A `-k` or `--tag` expression cannot be parsed (shown with a caret where it failed)."""


class PlanSelectError(UsageError):
    """`eb run --select`: the selection file names checks this run cannot select, or is a plan
    of another version of the project; nothing ran."""


class CacheOperationError(EvalBananaError):
    """`eb cache` cannot do what was asked: the cache is in use by a run, or the shared cache
    cannot list what it holds (a plain HTTP cache) or is not set."""

    kind = "cache_error"
