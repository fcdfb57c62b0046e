"""eb's logging in a process it shares: `--verbose` configures eb's own loggers for that one
call and leaves the host's logging (root logger, other libraries) as it found it."""

from __future__ import annotations

from pathlib import Path

from tests.processes import python_process

HOST = """
import contextlib, io, logging
from eval_banana.cli import main

with contextlib.redirect_stdout(io.StringIO()):
    main(["status", "--verbose"])
    main(["status"])
root = logging.getLogger()
print("root:", root.level, root.handlers)
print("eval_banana:", logging.getLogger("eval_banana").handlers)
logging.getLogger("myapp").debug("the host's debug record")
"""


def test_verbose_leaves_the_host_process_logging_as_it_found_it(tmp_path: Path) -> None:
    done = python_process(tmp_path, "-c", HOST, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["root: 30 []", "eval_banana: []"], done.stdout
    assert "the host's debug record" not in done.stderr, done.stderr
