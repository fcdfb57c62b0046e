"""The workflows docs/shared-cache.md shows pass actionlint."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "shared-cache.md"


def _actionlint() -> str:
    return shutil.which("actionlint") or str(Path(sys.executable).parent / "actionlint")


WORKFLOWS = [
    block
    for block in re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    if block.startswith("name:")
]


def test_the_page_shows_both_workflows() -> None:
    assert len(WORKFLOWS) == 2


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=["actions-cache", "s3-signed"])
def test_a_workflow_passes_actionlint(tmp_path: Path, workflow: str) -> None:
    path = tmp_path / ".github" / "workflows" / "evals.yml"
    path.parent.mkdir(parents=True)
    path.write_text(workflow)
    done = subprocess.run(
        [_actionlint(), "-no-color", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
