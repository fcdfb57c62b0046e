"""The `eb` command line: argparse over the stage functions (one module per subcommand).

This is the one place where exceptions become messages and exit codes:
0 passed / ok, 1 the run did not pass, 2 setup or usage error, 3 aborted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys


class _TerminatedEarly(SystemExit):
    """The exit a SIGTERM, SIGHUP or SIGINT during start-up raises (its own type, so the hook
    below knows it)."""


class _Exit:
    """Whether eb's process has decided its exit code: by a signal that ended it (the first
    one `_terminated_early` handled) or by `main` returning. A signal after that changes
    nothing: it is not to end the exit half done, nor to reach Python's teardown, which gives
    the signals their default back and lets the next one kill eb (status -2 instead of 3)."""

    decided = False


def _terminated_early(signum: int, frame: object) -> None:
    # SIGTERM, SIGHUP or Ctrl-C before the run installs its own handler (and after it restores
    # this one) ends eb as an interrupt does: exit 3, no traceback. Raised here, so it unwinds
    # through whatever start-up is doing, cleanups included.
    if _Exit.decided:
        return
    _Exit.decided = True
    _stopping_signals_ignored()  # also through Python's exit, when one escapes start-up
    # A signal can land inside a print, between its text and its line break: the line that
    # was being written keeps its end, and `Interrupted.` a line of its own.
    broken = getattr(sys.stderr, "mid_line", False) is True
    print("\nInterrupted." if broken else "Interrupted.", file=sys.stderr)
    raise _TerminatedEarly(3)


def _stopping_signals_ignored() -> None:
    """SIGINT, SIGTERM and SIGHUP ignored from here to the exit: Python's own exit (a thread
    still running, a profiler) gives a signal it handled its default back, never an ignored
    one, so none can end eb by the signal after its exit code is decided."""
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None:
            with contextlib.suppress(ValueError, OSError):  # not the main thread: not eb's
                signal.signal(signum, signal.SIG_IGN)


def _started_as_the_program() -> bool:
    """Whether this import is eb's own start-up (`eb`, `eval-banana`, `python -m eval_banana`)
    rather than a program that imports eb (a test runner, an Invoke task): Ctrl-C in those
    stays theirs to handle."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name == "eval_banana.__main__":
        return True
    script = getattr(main, "__file__", None) or ""
    # A console script: bin/eb, or Windows's eb.exe holding its __main__.py.
    names = {os.path.basename(script), os.path.basename(os.path.dirname(script))}
    return any(os.path.splitext(name)[0] in ("eb", "eval-banana") for name in names)


def _leave_when_swallowed(unraisable: sys.UnraisableHookArgs) -> None:
    """The signal can land in a weakref callback or a `__del__` (the import system's
    module-lock callback is one); Python swallows what those raise and prints it as
    "Exception ignored". Nothing there can unwind, so eb leaves at once, with the same exit.
    """
    if isinstance(unraisable.exc_value, _TerminatedEarly):
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(3)
    sys.__unraisablehook__(unraisable)


def _stop_on_signals_from_start() -> None:
    """Installed as the first thing this module does when eb is the program: the rest of
    start-up is imports. A program that imports eb keeps its own handlers and hook for good
    (`main` lends them to a run only while it lasts, and gives them back)."""
    if not _started_as_the_program():
        return
    # Off the main thread (ValueError) this is not the command line's process.
    with contextlib.suppress(ValueError):
        # Ctrl-C as SIGTERM, unless SIGINT is ignored (a shell's background job): a
        # KeyboardInterrupt while the modules below load escaped as a traceback. Before
        # SIGTERM's, so a caught SIGTERM says both are.
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, _terminated_early)
        signal.signal(signal.SIGTERM, _terminated_early)
        # A closed terminal as SIGTERM, unless SIGHUP is ignored (`nohup eb ...`).
        hangup = getattr(signal, "SIGHUP", None)
        if hangup is not None and signal.getsignal(hangup) is not signal.SIG_IGN:
            signal.signal(hangup, _terminated_early)
        sys.unraisablehook = _leave_when_swallowed


# The streams of descriptors 0, 1 and 2, and how each is opened when it was closed.
_STANDARD_STREAMS = ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w"))


def _no_standard_descriptor_closed() -> None:
    """Descriptors 0, 1 and 2 each open: one eb was started without (`eb run >&-`, `2>&-`, as
    some CI wrappers and daemons start programs) is opened on the null device.

    A closed one is the next descriptor eb opens (a check's output file, a pipe to a child):
    what eb, or a child inheriting it, then writes to stdout or stderr would land in that file.
    Python left its stream None, which crashed eb's first line there; it gets a stream on the
    null device, so a lost console costs only its lines.
    """
    for fd, name, mode in _STANDARD_STREAMS:
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        with contextlib.suppress(OSError):
            opened = os.open(os.devnull, os.O_RDWR)
            if opened != fd:  # a lower one was closed as well and kept open by something
                os.dup2(opened, fd)
                os.close(opened)
            if getattr(sys, name) is None:
                stream = open(  # noqa: SIM115 - the process's own stream, open until it ends
                    fd, mode, encoding="utf-8", errors="backslashreplace", closefd=False
                )
                setattr(sys, name, stream)


_stop_on_signals_from_start()
if _started_as_the_program():
    _no_standard_descriptor_closed()

import argparse  # noqa: E402 - after the handler, so SIGTERM during imports is handled too
import errno  # noqa: E402
import gc  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import threading  # noqa: E402
from collections.abc import Iterator, Sequence  # noqa: E402
from typing import TYPE_CHECKING, Any, NoReturn  # noqa: E402

from eval_banana.commands import COMMANDS, RUN_COMMANDS, command_module  # noqa: E402
from eval_banana.commands.common import EXIT_HELP, annotate_problems  # noqa: E402
from eval_banana.core import log  # noqa: E402
from eval_banana.core.errors import (  # noqa: E402
    EvalBananaError,
    ResourceFault,
    StdoutFault,
    UsageError,
    WriteFault,
)
from eval_banana.core.heldstreams import (  # noqa: E402
    STDERR_LOST,
    STDOUT_TOLD,
    held_streams,
    settle,
)
from eval_banana.core.startfolder import gone_error, is_gone  # noqa: E402
from eval_banana.core.version import DISTRIBUTION, tool_version  # noqa: E402

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

# Errors that only a write meets (a full disk or quota, an I/O error, a read-only file system).
_WRITE_FAULT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG})

# pytest's spellings of flags eb names differently: a pytest user's fingers type them.
# argparse's words for flags no action takes.
_UNRECOGNIZED = "unrecognized arguments: "

PYTEST_SPELLINGS = {"-v": "--verbose", "-vv": "--verbose", "--lf": "--last-failed"}


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so usage errors go through one boundary.

    Abbreviations are off: `--verbos` is an error, not `--verbose`, so a flag added later can
    never change what an old command line means.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        # A flag the command being run lacks -> where that flag's job is done instead.
        self.elsewhere: dict[str, str] = {}
        self._given: list[str] = []

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        # argparse drops a write that fails (`eb --help > /dev/full` exited 0): a stdout that
        # cannot take the help is told as any output eb could not write is.
        if message:
            stream = file if file is not None else sys.stderr
            stream.write(message)
            flush = getattr(stream, "flush", None)
            if flush is not None:
                flush()

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        # Python 3.11's argparse drops a `--` that is an option's own value (`--check-id=--`,
        # `-k=--`) as if it ended the options, and the option got `[]`: a crash, or a silently
        # dropped `--baseline`. `--` is a valid check id and a possible file name, so an
        # option takes it as given, as Python 3.13 does. Only a `--` after `=` (or stuck to a
        # short flag) gets here: `--check-id --` is still "expected one argument".
        if not action.option_strings or "--" not in arg_strings:
            return super()._get_values(action, arg_strings)
        values = [self._get_value(action, text) for text in arg_strings]
        for value in values:
            self._check_value(action, value)
        return values[0] if action.nargs in (None, argparse.OPTIONAL) else values

    def error(self, message: str) -> None:  # type: ignore[override]
        misplaced = self._misplaced()
        if misplaced and not message.startswith(_UNRECOGNIZED):
            # Said before argparse's own complaint: the value of a flag the command lacks is
            # taken for its positional argument (`eb update --maxfail 1`: "invalid choice: '1'").
            message = _UNRECOGNIZED + " ".join(misplaced)
        raise UsageError(
            f"{message}\nTry '{self.prog} --help' for help.", hint=self._suggestion(message)
        )

    def _misplaced(self) -> list[str]:
        """The flags given that this command lacks and whose job another command does."""
        found: list[str] = []
        for given in self._given:
            if given == "--":
                break
            flag = given.split("=", 1)[0]
            if flag in self.elsewhere and flag not in found:
                found.append(flag)
        return found

    def _options(self) -> list[str]:
        """Every flag of this parser and of its configured subcommands."""
        found: list[str] = []
        for action in self._actions:
            found.extend(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    found.extend(o for a in sub._actions for o in a.option_strings)
        return found

    def _suggestion(self, message: str) -> str | None:
        """`did you mean --verbose?` for an unknown flag close to a real one."""
        prefix = _UNRECOGNIZED
        if not message.startswith(prefix):
            return None
        from eval_banana.core.suggest import closest

        options = self._options()
        hints: list[str] = []
        for given in message[len(prefix) :].split():
            flag = given.split("=", 1)[0]
            if not flag.startswith("-"):
                continue
            if flag in self.elsewhere:
                hints.append(f"{flag}: {self.elsewhere[flag]}")
                continue
            target = PYTEST_SPELLINGS.get(flag)
            if target is None or target not in options:
                target = closest(flag, options, cutoff=0.75)
            if target == flag:
                # Known, but to `eb` itself (`eb run --version`): said where it goes.
                hints.append(f"{flag}: a flag of eb itself, given before the command (eb {flag})")
            elif target is not None:
                hints.append(f"{flag}: did you mean {target}?")
        return "; ".join(hints) or None


def build_parser(*, command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, with only the subcommand `command` (the one being run) configured;
    with no command (`eb --version`, `eb --help`, a missing one), none is.

    The others are still listed (for `eb --help` and "invalid choice" errors), but importing and
    configuring all seven cost more start-up than the one that is used, and `eb --version`,
    which a wrapper may call before every run, needs none of them.
    """
    parser = _Parser(
        prog="eb",
        description="eval_banana: run YAML-defined evaluation checks as a CI gate.",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{DISTRIBUTION} {tool_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    subparsers.required = True
    for name, (_, help_text) in COMMANDS.items():
        if name != command:
            subparsers.add_parser(name, help=help_text)  # listed, never parsed
            continue
        module = command_module(name)
        sub = subparsers.add_parser(
            name,
            help=help_text,
            description=getattr(module, "DESCRIPTION", help_text),
            epilog=getattr(module, "EPILOG", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.configure(parser=sub)
        parser.elsewhere = dict(getattr(module, "ELSEWHERE", {}))
        if isinstance(sub, _Parser):
            sub.elsewhere = parser.elsewhere  # its own errors (a positional's) name them too
    return parser


def _report_error(
    exc: EvalBananaError, *, as_json: bool, command: str | None, started: bool
) -> int:
    """Tell `exc` in the words of `command` (`started`: past its flags) with --json as a JSON
    object on stdout, else on stderr; the exit code it gives."""
    told = _worded_for(exc, running=started and command in RUN_COMMANDS)
    if as_json and not isinstance(told, StdoutFault):
        try:
            _print_json_error(told, command=command)
            return told.exit_code
        except StdoutFault as fault:
            # The object cannot reach stdout: the error is told on stderr, and then why it is
            # not on stdout (exit 3, as for any output that could not be written).
            print(told.render(), file=sys.stderr)
            told = _worded_for(fault, running=started and command in RUN_COMMANDS)
    # A stdout that failed is told on stderr, never on itself.
    print(told.render(), file=sys.stderr)
    return told.exit_code


def _worded_for(exc: EvalBananaError, *, running: bool) -> EvalBananaError:
    """`exc` as the command says it: a write fault aborts a run, but `eb list` is no run, nor
    is `eb run --help`."""
    if isinstance(exc, WriteFault) and not running:
        return exc.outside_a_run()
    return exc


def _print_json_error(exc: EvalBananaError, *, command: str | None) -> None:
    # A command whose --json output has its own shape (eb validate) renders its errors in it.
    render = getattr(command_module(command), "json_error", None) if command in COMMANDS else None
    document = render(exc) if render else {"error": exc.as_json(), "exit_code": exc.exit_code}
    print(json.dumps(document, ensure_ascii=False, allow_nan=False))
    sys.stdout.flush()  # a stdout that cannot take it fails here, inside the error boundary


def _debug_traceback(exc: BaseException) -> None:
    """--verbose: where an error came from, as `debug:` lines on stderr.

    Only added to the usual message and exit code: the exit code is a CI gate's verdict, so
    --verbose must never turn a setup error (2) or a write fault (3) into a crash (1).
    """
    import traceback

    for line in "".join(traceback.format_exception(exc)).splitlines():
        print(f"debug: {line}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `eb` and `eval-banana`; returns the process exit code."""
    raw = list(argv if argv is not None else sys.argv[1:])
    # A console line that cannot be written (a reader of stdout that went away, a stderr on a
    # full disk) costs only that line: the files and the exit code are the command's own.
    with held_streams(), _signal_handlers_given_back():
        return _main(raw)


@contextlib.contextmanager
def _signal_handlers_given_back() -> Iterator[None]:
    """A program that calls `main` (an Invoke task, a script) has its SIGINT, SIGTERM and
    SIGHUP handlers and its unraisable hook back when the call returns or raises, whatever
    the call lent them to."""
    hook = sys.unraisablehook
    kept: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():  # no other thread may set them
        names = ("SIGINT", "SIGTERM", "SIGHUP")
        for signum in (getattr(signal, name) for name in names if hasattr(signal, name)):
            kept[signum] = signal.getsignal(signum)
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for signum, handler in kept.items():
            if handler is not None:  # None: set outside Python, which Python cannot set back
                signal.signal(signum, handler)


def _json_on_the_line(raw: list[str]) -> bool:
    """`--json` or `--format json` among the arguments, read before they are parsed."""
    return any(
        arg in ("--json", "--format=json") or (arg == "--format" and after == "json")
        for arg, after in itertools.pairwise([*raw, ""])
    )


def _json_asked(args: argparse.Namespace) -> bool:
    """Whether the command prints JSON: `--json`, or `--format json` (`eb plan`, `eb history`
    and `eb diff` store their `--json` as that format)."""
    return bool(getattr(args, "json", False)) or getattr(args, "format", None) == "json"


def _main(raw: list[str]) -> int:
    """The command `raw` names, its errors turned into messages and exit codes."""
    # Known before parsing, so a bad flag next to --json still gets a JSON error.
    as_json = _json_on_the_line(raw)
    command = next((arg for arg in raw if not arg.startswith("-")), None)
    args: argparse.Namespace | None = None
    try:
        args = build_parser(command=command).parse_args(raw)
        as_json = _json_asked(args)
        log.configure(verbose=bool(getattr(args, "verbose", False)))
        result: int = command_module(args.command).run(args)
        # Whatever is still buffered for stdout is written here, inside the boundary: a stdout
        # on a full disk is then a StdoutFault told below, not a traceback at the exit.
        sys.stdout.flush()
        return result
    except EvalBananaError as exc:
        if args is not None and not exc.annotated:
            annotate_problems(args=args, problems=exc.every_problem(), kind=exc.kind)
        if "--verbose" in raw:
            _debug_traceback(exc)
        return _report_error(exc, as_json=as_json, command=command, started=args is not None)
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 3
    except OSError as exc:
        told = _told_os_error(exc, command=command)
        if told is None:
            raise
        if "--verbose" in raw:
            _debug_traceback(exc)
        return _report_error(told, as_json=as_json, command=command, started=args is not None)
    finally:
        # eb may be one call of many in a process (Invoke, a script): its logging ends here.
        log.restore()


def _told_os_error(exc: OSError, *, command: str | None) -> EvalBananaError | None:
    """The message and exit code of an OSError no helper turned into one; None for one that
    is eb's own bug (its traceback is then the report)."""
    if isinstance(exc, FileNotFoundError) and is_gone():
        # A path relative to a folder deleted under eb (`eb init`, `--select FILE`...).
        return gone_error(environ=os.environ)
    doing = f"running `eb {command}`" if command else "starting"
    out_of_files = ResourceFault.during(exc=exc, doing=doing)
    if out_of_files is not None:
        return out_of_files  # whatever eb was opening, read or written: exit 3
    if exc.errno in _WRITE_FAULT_ERRNOS:
        # A write no helper turned into a WriteFault: the same one line and exit 3.
        return WriteFault.of(path=exc.filename or "a file", exc=exc)
    return None


# Objects between collections of the youngest generation (Python's default is 700). A run
# builds tens of thousands of records, reports and stage documents that live until it ends and
# hold no reference cycles: at the default, the collector walks them again and again (about a
# tenth of an `eb merge` of 10,000 checks). Cycles are still collected, just less often.
_YOUNG_COLLECTION_THRESHOLD = 50_000


def _tune_collector() -> None:
    # What start-up imported (modules, classes, compiled schemas) stays for the whole process:
    # frozen, the collector stops scanning it on every older-generation pass.
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(_YOUNG_COLLECTION_THRESHOLD, middle, oldest)


def _others_running() -> bool:
    """Whether a thread Python's own exit would wait for is still alive."""
    import threading

    main_thread = threading.main_thread()
    return any(
        thread is not main_thread and not thread.daemon and thread.is_alive()
        for thread in threading.enumerate()
    )


def _leave(code: int) -> NoReturn:
    """Exit with `code` without the interpreter's teardown.

    Everything eb writes is closed by the time `main` returns (stage files and reports go
    through atomic writes), so tearing down a few hundred modules and every object only
    frees memory the kernel frees anyway: that teardown is a tenth of a short run's end (about
    15 ms). The exit handlers still run (logging's flush, the removal of temporary folders),
    then the two standard streams are flushed. A thread Python's exit would wait for, or a
    profiler or tracer that reports at the exit, gets the usual exit instead.
    """
    if _others_running() or sys.getprofile() is not None or sys.gettrace() is not None:
        # A profiler or tracer (`python -m cProfile`, a debugger) reports at the usual exit.
        _settle_streams()  # the interpreter's own last flush then has nothing to fail on
        sys.exit(code)
    import atexit

    atexit._run_exitfuncs()
    _settle_streams()
    os._exit(code)


def _settle_streams() -> None:
    # A reader that went away, a stderr that cannot be written: nothing more to say. `main`
    # flushed stdout inside its error boundary, so what stdout still holds here is what it
    # refused there, told already (a full disk): dropped too, never a second failure.
    settle(sys.stdout, lost=STDOUT_TOLD)
    settle(sys.stderr, lost=STDERR_LOST)


# What Python does with a character a standard stream cannot encode: end in a traceback
# ("strict", as PYTHONIOENCODING=ascii sets it), or the same for any character but a lone
# surrogate ("surrogateescape", a C or POSIX locale with UTF-8 mode off).
_FAILING_ERRORS = frozenset({"strict", "surrogateescape"})


def _never_fail_to_print() -> None:
    """A stream that cannot encode a character (stdout redirected on Windows is cp1252, a
    locale of ISO-8859-1 or C, PYTHONIOENCODING=ascii) writes it as `\\U0001f6ab` instead of
    ending the run in a traceback: a judge's reason can hold any character. UTF-8 streams write
    as before."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and stream.errors in _FAILING_ERRORS:
            reconfigure(errors="backslashreplace")


def entry() -> None:
    _tune_collector()
    _never_fail_to_print()
    code = _decided_exit()
    _stopping_signals_ignored()
    _leave(code)


def _decided_exit() -> int:
    """`main`'s exit code, or 3 when a signal ended it (a signal after `main` returned too,
    up to the moment the code is decided); later signals are ignored by `_terminated_early`."""
    try:
        code = main()
        _Exit.decided = True
        return code
    except _TerminatedEarly as stopped:  # `_terminated_early` decided the exit as it raised
        return stopped.code if isinstance(stopped.code, int) else 3
