"""A verdict is stored only while the files its key was taken from are as the key took them.

Keys are taken before any check starts; under `[execution] isolation = "off"` (the default) one
check may rewrite what another reads. The reader is then judged on the new bytes, so its verdict
must not be stored under the key of the old ones: once the old bytes are back (a `git checkout`),
that stored pass would be reused for a file that fails. Real runs in a real git repository.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cache.rig import Project, cache_of, make_project, script_check
from tests.gitrepo import commit_all, git

# Writes data.txt as a generator would, reading nothing (its inputs are []).
GENERATOR = 'from pathlib import Path\nPath("data.txt").write_text("ok\\n")\n'
READER = (
    "import sys\nfrom pathlib import Path\n"
    'sys.exit(0 if Path("data.txt").read_text().strip() == "ok" else 1)\n'
)
SEQUENTIAL = ("--max-parallel-checks", "1")


def _project(tmp_path: Path, eb: Callable[..., Any], *, reader_inputs: list[str] | None) -> Project:
    """`a_gen` rewrites data.txt (committed as `bad`) to `ok`; `b_read` passes on `ok` alone."""
    checks = {
        "a_gen": script_check("a_gen", script=GENERATOR, inputs=[]),
        "b_read": script_check("b_read", script=READER, inputs=reader_inputs),
    }
    project = make_project(tmp_path=tmp_path, eb=eb, checks=checks, files={"data.txt": "bad\n"})
    git(project.root, "init", "-q")
    project.write({".gitignore": ".eval-banana/*\n!.eval-banana/config.toml\n"})
    commit_all(project.root, "init")
    return project


def _by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {check["check_id"]: check for check in report["checks"]}


@pytest.mark.parametrize("reader_inputs", [["data.txt"], None], ids=["declared", "whole_project"])
def test_a_verdict_judged_on_bytes_another_check_wrote_is_not_stored_under_the_old_key(
    tmp_path: Path, eb: Callable[..., Any], replays: list[bool], reader_inputs: list[str] | None
) -> None:
    project = _project(tmp_path, eb, reader_inputs=reader_inputs)
    first = _by_id(project.run(*SEQUENTIAL))  # keyed on `bad`, judged on `ok`
    assert first["b_read"]["status"] == "passed"
    assert cache_of(first["b_read"])["stored"] is False
    assert cache_of(first["a_gen"])["stored"] is True  # its own key read nothing it wrote
    said = project.last.stdout + project.last.stderr
    assert "The verdict of check 'b_read' is not stored in the cache: data.txt changed" in said
    assert not list((project.cache_dir / "runs").rglob("*.json"))  # no run kept as a replay

    git(project.root, "checkout", "-q", "data.txt")  # `bad` again; a_gen is reused, unrun
    second = _by_id(project.run(*SEQUENTIAL, expect_exit=1))
    assert (second["b_read"]["status"], cache_of(second["b_read"])["hit"]) == ("failed", False)
    assert replays == [False, False]

    # Nothing rewrote anything this time: the honest verdict was stored, and is reused.
    assert cache_of(second["b_read"])["stored"] is True
    third = _by_id(project.run(*SEQUENTIAL, expect_exit=1))
    assert (third["b_read"]["status"], cache_of(third["b_read"])["hit"]) == ("failed", True)
