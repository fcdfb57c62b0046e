"""The `python -c` launcher that runs a frozen script as if it were the original file.

argv after `-c`: `<logical path> <snapshot path> <context path> <exit note path>`. The snapshot
bytes are compiled under the logical path, so tracebacks, `__file__`, `sys.argv[0]` and sibling
imports all behave as if the original file had been run directly, while the live file is never
read again. Inline scripts run through it too, with their temporary file as both paths.

A script that ends with a failing `sys.exit` leaves the exit note, where the runner reads how
it ended: the code it asked for, or `EXIT_MESSAGE_NOTE` for a message. Then no traceback was its
last word (one it logged earlier is not its reason). And the system keeps only the low 8 bits of
an exit status, so `sys.exit(256)` (say, `sys.exit(len(failures))` with 256 failures) would read
as 0, a pass: the launcher ends such a script with status `FOLDED_EXIT_STATUS` instead.
"""

from __future__ import annotations

# The status the launcher ends with when the script asked for a code that would read as 0.
FOLDED_EXIT_STATUS = 1
# The exit note of a script that ended with sys.exit("message"); otherwise it holds the code.
EXIT_MESSAGE_NOTE = "message"
# Python hands an exit code to the system as a 64-bit integer; beyond it, the status is 255.
_LONGEST_EXIT_CODE = 2**63

LAUNCHER_SOURCE = f"""\
import builtins as _b, importlib.machinery as _m, os as _o, sys as _s, types as _t
def _launch():
    logical, snapshot, context, exit_note = _s.argv[1:5]
    with open(snapshot, "rb") as handle:
        source = handle.read()
    code = compile(source, logical, "exec", dont_inherit=True)
    _s.argv[:] = [logical, context]
    folder = _o.path.dirname(logical)
    if _s.flags.safe_path or not _s.path:
        _s.path.insert(0, folder)
    else:
        _s.path[0] = folder
    module = _t.ModuleType("__main__")
    module.__file__ = logical
    module.__loader__ = _m.SourceFileLoader("__main__", logical)
    module.__package__ = None
    module.__spec__ = None
    module.__cached__ = None
    module.__builtins__ = _b
    _s.modules["__main__"] = module
    return code, module.__dict__, exit_note
_code, _namespace, _exit_note = _launch()
del _launch
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
    *, python: str, logical_path: str, snapshot_path: str, context_path: str, exit_note_path: str
) -> list[str]:
    """The full command line for a script, run as if `logical_path` had been run directly."""
    return [
        python,
        "-c",
        LAUNCHER_SOURCE,
        logical_path,
        snapshot_path,
        context_path,
        exit_note_path,
    ]
