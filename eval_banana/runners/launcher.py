"""The `python -c` launcher that runs a frozen script as if it were the original file.

argv after `-c`: `<logical path> <snapshot path> <context path>`. The snapshot bytes are compiled
under the logical path, so tracebacks, `__file__`, `sys.argv[0]` and sibling imports all behave as
if the original file had been run directly, while the live file is never read again.
"""

from __future__ import annotations

LAUNCHER_SOURCE = """\
import builtins as _b, importlib.machinery as _m, os as _o, sys as _s, types as _t
def _launch():
    logical, snapshot, context = _s.argv[1], _s.argv[2], _s.argv[3]
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
    return code, module.__dict__
_code, _namespace = _launch()
del _launch
exec(_code, _namespace)
"""


def launcher_argv(
    *, python: str, logical_path: str, snapshot_path: str, context_path: str
) -> list[str]:
    """The full command line for a referenced script."""
    return [python, "-c", LAUNCHER_SOURCE, logical_path, snapshot_path, context_path]
