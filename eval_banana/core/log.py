"""Warnings for the console without importing `logging` up front.

`logging` (with traceback, string, tokenize...) costs ~3 ms of every start-up, and most runs never
warn. Modules take a `Logger` here; the stdlib logger is fetched on its first warning, and the
CLI's configuration (`configure`) is applied then.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

FORMAT = "%(message)s"  # after the level: `warning: <message>`
_DEBUG, _WARNING = 10, 30  # logging.DEBUG, logging.WARNING
# The logger every eb module logs below. The CLI configures this one, never the root logger:
# eb runs inside Invoke or a host application, whose own logging it must leave alone.
ROOT = "eval_banana"
# The level the CLI asked for, not yet applied to the `eval_banana` logger (None: nothing pending).
_pending_level: int | None = None
# What `restore` puts back once the logger is configured: eb's handler to remove, and the
# logger's own level and propagation before.
_installed: tuple[Any, int, bool] | None = None
# Whether --verbose asked for debug records: a debug call costs nothing otherwise.
_verbose = False
# While checks run: the run's redactor, applied to every warning before it is printed. A
# runner's warning quotes what an agent printed, which may hold a secret the run masks in files.
_mask: Callable[[str], str] | None = None


@contextlib.contextmanager
def masked(mask: Callable[[str], str] | None) -> Iterator[None]:
    """Warnings printed inside the block go through `mask` (None: as they are)."""
    global _mask
    previous, _mask = _mask, mask
    try:
        yield
    finally:
        _mask = previous


def configure(*, verbose: bool) -> None:
    """What `eb` sets up: `warning: message` on stderr, debug records only with --verbose."""
    global _pending_level, _verbose
    restore()
    _pending_level = _DEBUG if verbose else _WARNING
    _verbose = verbose
    if verbose:
        _stdlib_logging()


def restore() -> None:
    """Undo `configure` when a command ends: the next one in the process starts afresh."""
    global _pending_level, _verbose, _installed
    _pending_level, _verbose = None, False
    if _installed is None:
        return
    import logging

    handler, level, propagate = _installed
    logger = logging.getLogger(ROOT)
    logger.removeHandler(handler)
    logger.setLevel(level)
    logger.propagate = propagate
    _installed = None


def _stdlib_logging() -> Any:
    global _pending_level, _installed
    import logging

    if _pending_level is not None:
        logger = logging.getLogger(ROOT)
        handler = logging.StreamHandler()  # stderr as it is now, not as it was at import
        handler.setFormatter(_level_prefix_formatter(logging))
        _installed = (handler, logger.level, logger.propagate)
        logger.addHandler(handler)
        logger.setLevel(_pending_level)
        logger.propagate = False  # a host's root handlers would print every record twice
        _pending_level = None
    return logging


def _level_prefix_formatter(logging: Any) -> Any:
    """`warning: <message>`, as Console.warn prints it: users never see a module name."""

    class LevelPrefix(logging.Formatter):  # type: ignore[misc]
        def format(self, record: Any) -> str:
            return f"{record.levelname.lower()}: {super().format(record)}"

    return LevelPrefix(FORMAT)


class Logger:
    """A named stdlib logger, fetched on first use."""

    def __init__(self, name: str) -> None:
        self.name = name

    def debug(self, message: str, *args: object) -> None:
        """A `debug:` record on stderr with --verbose; nothing (not even formatting) otherwise."""
        if not _verbose:
            return
        mask = _mask
        if mask is not None:
            message, args = mask(message % args if args else message), ()
        _stdlib_logging().getLogger(self.name).debug(message, *args)

    def warning(self, message: str, *args: object, exc_info: bool = False) -> None:
        mask = _mask
        if mask is not None:
            message, args = mask(message % args if args else message), ()
        _stdlib_logging().getLogger(self.name).warning(message, *args, exc_info=exc_info)
