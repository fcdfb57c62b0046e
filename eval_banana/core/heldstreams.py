"""eb's stdout and stderr held so that a line which cannot be written never decides a command.

The exit code is a CI gate's verdict and the reports are files. A stdout whose reader went away
(`eb list | head -1`, `eb run --json | head -c 100`) and a stderr that cannot be written (a log
on a full disk, a log pipe whose reader died) cost only the lines they lose: the command goes on,
writes its files and exits with its own code. A stdout on a full disk still fails as any write
eb makes does (exit 3): there the lost text is what the user asked for, and the write raises a
StdoutFault, so the command line tells it on stderr rather than on the stdout that failed.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO, cast

from eval_banana.core.errors import StdoutFault

# What each stream may lose without failing the command.
STDOUT_LOST: tuple[type[OSError], ...] = (BrokenPipeError,)
STDERR_LOST: tuple[type[OSError], ...] = (OSError,)
# What stdout may refuse at the process's very end, once the command line has told any fault
# of it: nothing is left to say.
STDOUT_TOLD: tuple[type[OSError], ...] = (OSError,)


def to_nowhere(stream: TextIO) -> None:
    """Point `stream`'s descriptor at /dev/null: what is still buffered for it, and what comes
    later, then goes nowhere instead of failing again (at the exit's flush too)."""
    with contextlib.suppress(OSError, ValueError):  # no descriptor (a test's capture), no room
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)


class _Held:
    """A text stream whose `write` and `flush` drop what `lost` refuses instead of raising, and
    raise what `fault` makes of any other OSError.

    Everything else (fileno, isatty, encoding...) is the wrapped stream's.
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        lost: tuple[type[OSError], ...],
        fault: Callable[[OSError], Exception] | None = None,
    ) -> None:
        self._stream = stream
        self._lost = lost
        self._fault = fault
        # Whether the last text written ends inside a line: a signal's `Interrupted.` that
        # lands between a print's text and its line break starts a line of its own.
        self.mid_line = False

    def write(self, text: str) -> int:
        if text:
            self.mid_line = not text.endswith("\n")
        try:
            return self._stream.write(text)
        except self._lost as exc:
            self._dropped(exc)
            return len(text)
        except OSError as exc:
            raise self._told(exc) from None

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except self._lost as exc:
            self._dropped(exc)
        except OSError as exc:
            raise self._told(exc) from None

    def _told(self, exc: OSError) -> Exception:
        return exc if self._fault is None else self._fault(exc)

    def _dropped(self, exc: OSError) -> None:
        # A reader that went away never comes back; a full disk may have room again later,
        # and then the lines still buffered are written after all.
        if isinstance(exc, BrokenPipeError):
            to_nowhere(self._stream)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Nowhere(io.TextIOBase):
    """The console of a stream the process never had (Python leaves it None when the
    descriptor was closed as the process started, `eb run >&-`): what is said there is lost,
    as a lost console's lines are, and nothing else is."""

    def write(self, text: str) -> int:
        return len(text)


@contextlib.contextmanager
def held_streams() -> Iterator[None]:
    """Inside: sys.stdout loses what a reader that went away refuses (any other failure is a
    StdoutFault), sys.stderr whatever it cannot write, and a stream that is None everything;
    both are put back as they were on the way out."""
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout = cast(
        TextIO, _Held(_or_nowhere(stdout), lost=STDOUT_LOST, fault=StdoutFault.of_error)
    )
    sys.stderr = cast(TextIO, _Held(_or_nowhere(stderr), lost=STDERR_LOST))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = stdout, stderr


def _or_nowhere(stream: TextIO | None) -> TextIO:
    return stream if stream is not None else cast(TextIO, _Nowhere())


def settle(stream: TextIO | None, *, lost: tuple[type[OSError], ...]) -> None:
    """The last flush of `stream` before the process ends; what `lost` refuses is dropped, so
    neither this flush nor the interpreter's own can fail the exit. None: no stream at all."""
    if stream is None:
        return
    try:
        stream.flush()
    except lost:
        to_nowhere(stream)
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    except ValueError:
        pass  # a stream a handler closed: nothing more to say
