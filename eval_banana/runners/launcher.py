"""The `python -c` launcher that runs a frozen script as if it were the original file.

argv after `-c`: `<logical path> <snapshot path> <code path> <context path> <exit note path>`.
The snapshot bytes are compiled under the logical path, so tracebacks, `__file__`, `sys.argv[0]`
and sibling imports all behave as if the original file had been run directly, while the live
file is never read again. Inline scripts run through it too, with their temporary file as both
paths.

eb has already compiled the snapshot (to refuse one that does not compile) and leaves the code
object at the code path, marshalled, so the launcher does not call `compile()`: its first call
in a process builds the `ast` node types, about a millisecond of every check's process, which
made 200 trivial checks cost 7 % more than running their files directly. An empty code path
(compiling warned, and the warning belongs on the script's stderr) has the launcher compile the
snapshot itself; should that compile fail (the check's warning filters make the warning an
error), the exit note says so and eb tells an error. Either way the code is never optimised:
asserts run even under `python -O` or `PYTHONOPTIMIZE`, where running the file directly would
drop them and pass.
"""

from __future__ import annotations

# The status the launcher ends with when the script asked for a code that would read as 0.
FOLDED_EXIT_STATUS = 1
# The exit note of a script that ended with sys.exit("message"); otherwise it holds the code.
EXIT_MESSAGE_NOTE = "message"
# The exit note's first line when the launcher could not compile the script; then its line
# number (0: none) and the error.
UNCOMPILED_NOTE = "uncompiled"
# Python hands an exit code to the system as a 64-bit integer; beyond it, the status is 255.
_LONGEST_EXIT_CODE = 2**63

LAUNCHER_SOURCE = f"""\
import builtins as _b, marshal as _ms, os as _o, sys as _s
def _launch():
    logical, snapshot, compiled, context, exit_note = _s.argv[1:6]
    if compiled:
        with open(compiled, "rb") as handle:
            code = _ms.loads(handle.read())
    else:
        with open(snapshot, "rb") as handle:
            source = handle.read()
        try:
            code = compile(source, logical, "exec", dont_inherit=True, optimize=0)
        except (SyntaxError, ValueError) as exc:
            # A warning the check's filters make an error (PYTHONWARNINGS=error): the script
            # does not compile, which eb tells as an error, never as the script's failure.
            line = getattr(exc, "lineno", None) or 0
            words = getattr(exc, "msg", None) or str(exc)
            with open(exit_note, "w", encoding="utf-8") as note:
                note.write(f"{UNCOMPILED_NOTE}\\n{{line}}\\n{{type(exc).__name__}}: {{words}}")
            raise SystemExit(1) from None
    _s.argv[:] = [logical, context]
    folder = _o.path.dirname(logical)
    if _s.flags.safe_path or not _s.path:
        _s.path.insert(0, folder)
    else:
        _s.path[0] = folder
    module = type(_s)("__main__")
    module.__file__ = logical
    module.__loader__ = _loader_type()("__main__", logical)
    module.__package__ = None
    module.__spec__ = None
    module.__cached__ = None
    module.__builtins__ = _b
    _s.modules["__main__"] = module
    return code, module.__dict__, exit_note
def _loader_type():
    # Where importlib.machinery takes it from, without importing importlib.machinery.
    bootstrap = _s.modules.get("_frozen_importlib_external")
    if bootstrap is not None and hasattr(bootstrap, "SourceFileLoader"):
        return bootstrap.SourceFileLoader
    import importlib.machinery
    return importlib.machinery.SourceFileLoader
_code, _namespace, _exit_note = _launch()
del _launch, _loader_type
try:
    exec(_code, _namespace)
except SystemExit as _stop:
    _asked = _stop.code
    if _asked is None or (isinstance(_asked, int) and _asked == 0):
        raise
    _coded = isinstance(_asked, int)
    try:
        with open(_exit_note, "w", encoding="ascii") as _note:
            _note.write(str(int(_asked)) if _coded else "{EXIT_MESSAGE_NOTE}")
    except OSError:
        pass
    if _coded and _asked % 256 == 0 and -{_LONGEST_EXIT_CODE} <= _asked < {_LONGEST_EXIT_CODE}:
        raise SystemExit({FOLDED_EXIT_STATUS}) from None
    raise
"""


def folds_to_zero(code: int) -> bool:
    """Whether the system would read this `sys.exit` code as 0 (the launcher's own test)."""
    return code != 0 and code % 256 == 0 and -_LONGEST_EXIT_CODE <= code < _LONGEST_EXIT_CODE


def launcher_argv(
    *,
    python: str,
    logical_path: str,
    snapshot_path: str,
    code_path: str,
    context_path: str,
    exit_note_path: str,
) -> list[str]:
    """The full command line for a script, run as if `logical_path` had been run directly."""
    return [
        python,
        "-c",
        LAUNCHER_SOURCE,
        logical_path,
        snapshot_path,
        code_path,
        context_path,
        exit_note_path,
    ]
