"""Deterministic checks: run a Python script, exit 0 passes."""

from __future__ import annotations

import contextlib
import json
import marshal
import os
import shutil
import sys
import tempfile
import threading
import types
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.core.errors import ResourceFault, WriteFault, out_of_files
from eval_banana.core.log import Logger
from eval_banana.core.masking import NO_SECRETS, Masker
from eval_banana.core.textfiles import blank_source
from eval_banana.models.result import NOT_STARTED, STOPPED, CheckResult
from eval_banana.models.stages import PlannedCheck
from eval_banana.runners.base import RunContext
from eval_banana.runners.explain import failure_reason
from eval_banana.runners.launcher import (
    EXIT_MESSAGE_NOTE,
    FOLDED_EXIT_STATUS,
    UNCOMPILED_NOTE,
    folds_to_zero,
    launcher_argv,
)
from eval_banana.runners.process import ProcessOutcome, run_process
from eval_banana.runners.results import build_result, error_result, stopped_detail, utc_now
from eval_banana.runners.tails import stream_tails

logger = Logger("eval_banana.runners.deterministic")

INLINE_NAME = "inline_check.py"
REFERENCED_NAME = "referenced_check.py"
CODE_NAME = "check_code.marshal"  # the script's code object, so the launcher need not compile it
CONTEXT_NAME = "context.json"
EXIT_NOTE_NAME = "exit_code.txt"  # written by the launcher when the script's sys.exit failed


# catch_warnings swaps the warnings module's global state: one compile at a time holds it.
_COMPILING = threading.Lock()


class _LaunchError(Exception):
    """A setup/launch failure whose message is the result's error_detail."""


class _Ending(NamedTuple):
    """How the script's process ended, with what the launcher noted of its `sys.exit`."""

    outcome: ProcessOutcome
    exited: bool  # it ended through a failing sys.exit: no traceback was its last word


def context_json(*, ctx: RunContext, output_dir: Path) -> str:
    """eval-banana's exact context.json text: five keys in order, indent 2, ASCII, no newline."""
    document: dict[str, object] = {
        "check_id": ctx.check.id,
        "description": ctx.check.description,
        "project_root": str(ctx.seen_root),
        "source_path": ctx.check.source_path,
        "output_dir": str(output_dir),
    }
    if ctx.check.case_id is not None:
        # A dataset case: the script reads its row here (plain checks keep the five keys).
        document["case_id"] = ctx.check.case_id
        document["case"] = ctx.check.case or {}
    return json.dumps(document, indent=2, ensure_ascii=True, allow_nan=False)


def _timeout_seconds(*, ctx: RunContext) -> int:
    return ctx.config.settings.core.check_timeout_seconds


def _materialize(*, ctx: RunContext, tmp: Path, context_path: Path) -> list[str]:
    """Write the script into `tmp` and return the command line."""
    check = ctx.check
    script = check.definition.get("script")
    if script is not None:
        inline = tmp / INLINE_NAME
        _write_own(path=inline, content=str(script))
        _refuse_blank(source=str(script), shown="the inline script")
        # The bytes the file holds, as running it would read them (a coding line applies).
        code = _compiled(
            source=str(script).encode("utf-8"), logical=str(inline), shown="the inline script"
        )
        # Through the launcher too, so that its sys.exit(256) cannot read as a pass.
        return _launcher(
            tmp=tmp, logical=str(inline), snapshot=inline, code=code, context_path=context_path
        )
    if check.script_unavailable:
        raise _LaunchError(check.script_unavailable)
    if not check.snapshot or not check.script_path:
        raise _LaunchError(f"No frozen script recorded in the plan for check '{check.id}'")
    referenced = tmp / REFERENCED_NAME
    # The frozen bytes, never the live file: what runs is what the digest names.
    try:
        frozen = (ctx.run_dir / check.snapshot).read_bytes()
    except OSError as exc:
        if out_of_files(exc):
            raise ResourceFault.met(exc=exc, doing=f"reading {check.snapshot}") from None
        raise _LaunchError(
            f"The frozen copy of {check.script_path} cannot be read from the run folder "
            f"({check.snapshot}: {exc.strerror or exc}): `eb update` freezes it again (the "
            "validate stage writes it), or start a new run with `eb run`"
        ) from None
    _write_own(path=referenced, content=frozen)
    _refuse_blank(source=frozen, shown=check.script_path)
    logical = _seen_script_path(ctx=ctx, script_path=check.script_path)
    code = _compiled(source=frozen, logical=logical, shown=check.script_path)
    return _launcher(
        tmp=tmp,
        logical=logical,
        snapshot=referenced,
        code=code,
        context_path=context_path,
    )


def _seen_script_path(*, ctx: RunContext, script_path: str) -> str:
    """The script's path where the check's process sees the project: in a disposable copy,
    the copy's file, so `__file__`, `sys.path[0]` and sibling imports stay inside the copy and
    a script that writes beside itself writes into the copy, not the project."""
    if ctx.view is None:
        return script_path
    try:
        inside = Path(script_path).relative_to(ctx.project_root)
    except ValueError:  # a script outside the project is the same file from the copy
        return script_path
    return str(ctx.view.path / inside)


def _launcher(
    *, tmp: Path, logical: str, snapshot: Path, code: types.CodeType | None, context_path: Path
) -> list[str]:
    # The script runs under sys.executable, the interpreter that compiled it, so the
    # marshalled code object is one it reads. No code: the launcher compiles the snapshot.
    code_path = ""
    if code is not None:
        code_path = str(tmp / CODE_NAME)
        _write_own(path=Path(code_path), content=marshal.dumps(code))
    return launcher_argv(
        python=sys.executable,
        logical_path=logical,
        snapshot_path=str(snapshot),
        code_path=code_path,
        context_path=str(context_path),
        exit_note_path=str(tmp / EXIT_NOTE_NAME),
    )


def _read_ending(*, outcome: ProcessOutcome, tmp: Path, shown: str) -> _Ending:
    """The outcome with what the exit note says: whether sys.exit ended the script, and the
    code it asked for when the system read that code as 0.

    Only a code that folds to 0 is taken from the note: whatever else a script might write
    there can never turn its failure into a pass, nor change the code of any other exit."""
    if outcome.timed_out or outcome.cancelled or not outcome.exit_code:
        return _Ending(outcome=outcome, exited=False)
    try:
        note = (tmp / EXIT_NOTE_NAME).read_text(encoding="utf-8", errors="replace")
    except OSError:  # no note: it did not end through sys.exit
        return _Ending(outcome=outcome, exited=False)
    if note.startswith(f"{UNCOMPILED_NOTE}\n"):
        raise _LaunchError(_uncompiled_detail(note=note, shown=shown))
    if note == EXIT_MESSAGE_NOTE:
        return _Ending(outcome=outcome, exited=True)
    try:
        asked = int(note)
    except ValueError:  # not a note the launcher wrote
        return _Ending(outcome=outcome, exited=False)
    if outcome.exit_code == FOLDED_EXIT_STATUS and folds_to_zero(asked):
        outcome = outcome._replace(exit_code=asked)
    return _Ending(outcome=outcome, exited=True)


def _refuse_blank(*, source: str | bytes, shown: str) -> None:
    """A blank script exits 0 whatever it was meant to check: an error, never a pass.

    Validation refuses one; this holds for a plan that recorded one all the same (a hand-made
    plan, a snapshot emptied after it was frozen), so it cannot count as passed."""
    if blank_source(source):
        raise _LaunchError(
            f"Deterministic script is blank: {shown}: a check with an empty script could never "
            "fail; write the check's rule in it"
        )


def _compiled(*, source: str | bytes, logical: str, shown: str) -> types.CodeType | None:
    """The script's code for the launcher to run, or None when compiling it warned.

    A script that cannot be compiled says nothing about what it checks: an error, not a fail.
    Compiled here with the interpreter the script runs under (microseconds), so a syntax
    error never counts as a failure, which would let a control check (expect: fail) pass.
    Never optimised, whatever eb or the check's environment says: asserts are how many checks
    fail. A compile-time warning (`assert (x, "why")`, which can never fail) belongs on the
    check's stderr under the check's own warning filters, so such a script is compiled again
    by the launcher, in the check's process, and this code is not handed on.
    """
    try:
        with _COMPILING, warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            code = compile(source, logical, "exec", dont_inherit=True, optimize=0)
    except SyntaxError as exc:
        raise _LaunchError(
            _not_compiling(error=f"{type(exc).__name__}: {exc.msg}", line=exc.lineno, shown=shown)
        ) from None
    except ValueError as exc:  # e.g. a NUL byte in the source
        raise _LaunchError(f"Deterministic script does not compile: {exc} ({shown})") from None
    return None if warned else code


def _not_compiling(*, error: str, line: int | None, shown: str) -> str:
    where = f" (line {line} of {shown})" if line else f" ({shown})"
    return f"Deterministic script does not compile: {error}{where}"


def _uncompiled_detail(*, note: str, shown: str) -> str:
    """The error of a script the launcher could not compile, from its exit note."""
    _, line, error = (note.split("\n", 2) + ["", ""])[:3]
    return _not_compiling(
        error=error or "the launcher could not compile it",
        line=int(line) if line.isdigit() else None,
        shown=shown,
    )


def _shown(*, check: PlannedCheck) -> str:
    """How errors name the check's script."""
    if check.definition.get("script") is not None:
        return "the inline script"
    return check.script_path or check.id


def _write_own(*, path: Path, content: str | bytes) -> None:
    """A file eb writes for the script to run (the script, its context): one that cannot be
    written (a full TMPDIR) is a fault of the run naming it, never the check's error."""
    try:
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise WriteFault.of(path=path, exc=exc) from None


def _private_dir(*, ctx: RunContext) -> Path:
    """A new folder of eb's own under TMPDIR for the check's script and context."""
    try:
        return Path(tempfile.mkdtemp(prefix=f"{ctx.stem}_"))
    except OSError as exc:
        raise WriteFault.of(path=tempfile.gettempdir(), exc=exc) from None


def _launch(*, ctx: RunContext, evidence: Path) -> _Ending:
    """Prepare the private temp dir, run the script, and always remove the temp dir."""
    tmp = _private_dir(ctx=ctx)
    try:
        context_path = tmp / CONTEXT_NAME
        argv = _materialize(ctx=ctx, tmp=tmp, context_path=context_path)
        _write_own(path=context_path, content=context_json(ctx=ctx, output_dir=evidence))
        timeout = _timeout_seconds(ctx=ctx)
        outcome = run_process(
            argv=ctx.command(argv),
            cwd=ctx.process_cwd,
            env=ctx.base_env,
            stdout_path=ctx.evidence_path(".stdout.txt"),
            stderr_path=ctx.evidence_path(".stderr.txt"),
            timeout_s=float(timeout) if timeout > 0 else None,
            cancel=ctx.cancel,
        )
        return _read_ending(outcome=outcome, tmp=tmp, shown=_shown(check=ctx.check))
    finally:
        _remove_private_dir(tmp)


def _remove_private_dir(tmp: Path) -> None:
    """Remove the files eb put in the temp dir, then the dir; anything else: rmtree."""
    # A few syscalls instead of rmtree's walk: measurable over hundreds of trivial checks.
    for name in (INLINE_NAME, REFERENCED_NAME, CODE_NAME, CONTEXT_NAME, EXIT_NOTE_NAME):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp / name)
    try:
        os.rmdir(tmp)
    except OSError:  # the script left files of its own there
        shutil.rmtree(tmp, ignore_errors=True)


def _outcome_result(
    *, ctx: RunContext, started: datetime, ending: _Ending, details: dict[str, Any]
) -> CheckResult:
    """Map a finished process to a result."""
    outcome = ending.outcome
    # Its secrets masked before its output is cut (eval_banana.core.masking).
    masker: Masker = ctx.redactor or NO_SECRETS
    stdout, stderr = stream_tails(outcome=outcome, masker=masker, evidence_name=ctx.evidence_name)
    common: dict[str, Any] = {
        "check": ctx.check,
        "started": started,
        "stdout": stdout,
        "stderr": stderr,
        "exit_code": outcome.exit_code,
        "details": details,
    }
    if outcome.cancelled:
        details[STOPPED] = True
        return error_result(error_detail=stopped_detail(cancel=ctx.cancel), **common)
    if outcome.timed_out:
        limit = _timeout_seconds(ctx=ctx)
        return error_result(
            error_detail=f"Deterministic check timed out after {limit} seconds", **common
        )
    if outcome.exit_code == 0:
        return build_result(status="passed", **common)
    reason = failure_reason(
        stderr_path=outcome.stderr_path, exit_code=outcome.exit_code, exited=ending.exited
    )
    return build_result(status="failed", reason=reason, **common)


def run_deterministic(ctx: RunContext) -> CheckResult:
    """Run one deterministic check to a result; a script that cannot be started (or compiled)
    is an `error` result, a file eb cannot write for it a WriteFault (the run aborts)."""
    started = utc_now()
    details: dict[str, Any] = {"timeout_seconds": _timeout_seconds(ctx=ctx)}
    evidence = ctx.evidence_path("")  # the script's output_dir: checks/<stem>/
    try:
        evidence.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteFault.of(path=evidence, exc=exc) from None
    try:
        ending = _launch(ctx=ctx, evidence=evidence)
    except (OSError, _LaunchError) as exc:
        fault = ResourceFault.during(exc=exc, doing=f"running check {ctx.check.id}")
        if fault is not None:
            raise fault from None  # too many open files: eb's, never the check's
        detail = _os_message(exc)
        logger.warning("Deterministic check %s failed to execute: %s", ctx.check.id, detail)
        details[NOT_STARTED] = True  # it never ran: compiling or launching it failed
        return error_result(check=ctx.check, started=started, error_detail=detail, details=details)
    return _outcome_result(ctx=ctx, started=started, ending=ending, details=details)


def _os_message(exc: BaseException) -> str:
    """The exception's message only (as eval-banana), e.g. `[Errno 13] Permission denied: '/x'`."""
    return str(exc) or type(exc).__name__
