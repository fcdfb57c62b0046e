"""`eb status` of a run folder an earlier eb made: an `inputs:` digest recorded before file
modes counted is told apart from a change of the files (docs/rerunning-stages.md)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import EbResult, check_yaml

CHECK = check_yaml("reads", script="pass") + 'inputs: ["src/**"]\n'


def _digest_before_modes(*, files: dict[str, bytes]) -> str:
    """The digest an eb before file modes recorded: (path, git blob id) pairs under the v1
    prefix, worked out here from git's object format, not by eb's own code."""
    parts = []
    for path in sorted(files):
        data = files[path]
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        parts += [path, blob]
    digest = hashlib.sha256(b"eval-banana/project-state/v1\0" + b"sha1\0")
    digest.update("\0".join(parts).encode())
    return f"sha256:{digest.hexdigest()}"


def _execute_row(eb: Callable[..., EbResult], root: Path) -> str:
    status = eb("status", "--cwd", str(root))
    (row,) = [line for line in status.stdout.splitlines() if line.split()[:1] == ["execute"]]
    return row


def test_a_digest_an_earlier_eb_recorded_of_unchanged_files_is_no_change_of_them(
    project: Callable[..., Path], eb: Callable[..., EbResult]
) -> None:
    root = project({"eval_checks/reads.yaml": CHECK, "src/value.txt": "42\n"})
    assert eb("run", "--cwd", str(root)).exit_code == 0
    (run_dir,) = (root / ".eval-banana" / "results").iterdir()
    execute = run_dir / "stages" / "execute.json"
    document = json.loads(execute.read_text())
    document["input_digests"]["reads"] = _digest_before_modes(files={"src/value.txt": b"42\n"})
    execute.write_text(json.dumps(document, indent=2) + "\n")

    row = _execute_row(eb, root)
    assert (
        "reads: inputs src/**: digest made anew by this eb version (the files are as they were)"
        in row
    )
    assert "changed" not in row

    (root / "src" / "value.txt").write_text("43\n")
    assert "reads: inputs src/** changed" in _execute_row(eb, root)
