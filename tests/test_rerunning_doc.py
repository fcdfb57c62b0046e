"""docs/rerunning-stages.md is run, not just read: every command sequence it shows.

Each fenced ```bash block is run line by line, and each ```console block's `$` commands have
their output compared with the page, on a real project in a temporary folder, in the state the
page describes: one finished run, then `eval_checks/counts.yaml` edited in place. The Invoke
block runs with the page's own one-line tasks.py. The page's example run id and project path
stand for the real ones.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

# The integrations suite (`pytest -m integrations`, which .ci/run runs): outside tools
# installed and driven for real, left out of the README's command to keep it under ten minutes.
pytestmark = pytest.mark.integrations

PAGE = REPO / "docs" / "rerunning-stages.md"
EXAMPLE_RUN_ID = "20260101_120000_1a2b3c4d"
EXAMPLE_ROOT = "/home/me/wordcount"
_FENCE = re.compile(r"^```(?P<language>\w+)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)

CHECKS = {
    "counts": ("counts_ok", "fast"),
    "login": ("login_works", "fast"),
    "judge_readme": ("judge_readme", "slow"),
}


def blocks(language: str) -> list[str]:
    return [m["body"] for m in _FENCE.finditer(PAGE.read_text()) if m["language"] == language]


def _commands(block: str) -> list[str]:
    """The commands of a bash block (comment-only and blank lines left out)."""
    return [line for line in block.splitlines() if line.split("#")[0].strip()]


class Page:
    """The project the page talks about, after one run and an edit of a check file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / ".eval-banana").mkdir(parents=True)
        (root / ".eval-banana" / "config.toml").write_text(
            '[discovery]\nexclude_dirs = [".eval-banana", ".git"]\n'
        )
        (root / "eval_checks").mkdir()
        for name, (check_id, tag) in CHECKS.items():
            self.write_check(name=name, check_id=check_id, tag=tag, extra="")
        first = self.shell("eb run")
        assert first.returncode == 0, first.stdout + first.stderr
        self.write_check(name="counts", check_id="counts_ok", tag="fast", extra="# edited\n")

    def write_check(self, *, name: str, check_id: str, tag: str, extra: str) -> None:
        text = (
            f"schema_version: 1\nid: {check_id}\ntype: deterministic\n"
            f"description: {check_id}.\ntags: [{tag}]\nscript: 'pass'\n{extra}"
        )
        (self.root / "eval_checks" / f"{name}.yaml").write_text(text)

    def newest_run_id(self) -> str:
        """The run `eb` takes by default: the one created last."""
        runs = self.root / ".eval-banana" / "results"
        created = {
            path.name: json.loads((path / "stages" / "config.json").read_text())["run_created_at"]
            for path in runs.iterdir()
            if (path / "stages" / "config.json").is_file()
        }
        return max(created, key=lambda name: created[name])

    def shell(self, command: str) -> subprocess.CompletedProcess[str]:
        """One command line of the page, through bash, with this interpreter's `eb` and
        `invoke` first on PATH."""
        if EXAMPLE_RUN_ID in command:
            command = command.replace(EXAMPLE_RUN_ID, self.newest_run_id())
        environ = dict(os.environ)
        environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ['PATH']}"
        return subprocess.run(
            ["bash", "-c", command],
            cwd=self.root,
            env=environ,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=300,
        )


def _expect_exit(*, command: str, last: bool) -> set[int]:
    """`eb status` exits 1 while something is stale, and 0 at the end of a sequence (where the
    page says every row is ok again); every other command must succeed."""
    if command.split()[:2] == ["eb", "status"] and not last:
        return {0, 1}
    return {0}


def test_the_page_shows_the_sequences_this_test_runs() -> None:
    bash = [_commands(block) for block in blocks("bash")]
    assert any(command.startswith("eb update") for block in bash for command in block)
    # A sequence that ends on `eb status` promises every row ok: it must rebuild every stage.
    manual = [
        block
        for block in bash
        if block[-1].startswith("eb status") and any(c.startswith("eb stage") for c in block)
    ]
    assert manual and all(
        any(command.startswith("eb stage discover") for command in block) for block in manual
    ), "a manual sequence after an edit must rebuild discover too"
    assert any(command.startswith("invoke eval.update") for block in bash for command in block)
    assert len(blocks("console")) >= 2, "the page shows eb status and eb update output"


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(blocks("bash"))))
def test_each_bash_sequence_of_the_page_runs(index: int, tmp_path: Path) -> None:
    block = blocks("bash")[index]
    page = Page(tmp_path / "wordcount")
    if "invoke" in block:
        (page.root / "tasks.py").write_text(blocks("python")[0])  # the page's one-line tasks.py
    commands = _commands(block)
    for position, command in enumerate(commands):
        done = page.shell(command)
        allowed = _expect_exit(command=command, last=position == len(commands) - 1)
        assert done.returncode in allowed, (
            f"`{command}` exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(blocks("console"))))
def test_each_console_example_of_the_page_is_what_eb_prints(index: int, tmp_path: Path) -> None:
    page = Page(tmp_path / "wordcount")
    shown: list[tuple[str, list[str]]] = []
    for line in blocks("console")[index].splitlines():
        if line.startswith("$ "):
            shown.append((line[2:], []))
        elif line != "..." and shown:
            shown[-1][1].append(line)
    assert shown
    for command, expected in shown:
        printed = page.shell(command).stdout.replace(str(page.root), EXAMPLE_ROOT)
        printed = printed.replace(page.newest_run_id(), EXAMPLE_RUN_ID)
        lines = printed.splitlines()
        # Every line the page shows, in the page's order (it may leave some out with `...`).
        found = 0
        for want in expected:
            assert want in lines[found:], f"`{command}` did not print {want!r}:\n{printed}"
            found = lines.index(want, found) + 1
