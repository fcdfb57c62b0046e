"""The distribution has a name of its own, used everywhere a user installs or reads it."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from eval_banana.version import DISTRIBUTION, tool_version

REPO = Path(__file__).resolve().parent.parent
# Package indexes compare names after lowercasing and folding runs of -, _ and . (PEP 503).
PUBLIC_TOOL = "eval-banana"


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_distribution_name_is_not_the_public_tools() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "eval-banana-staged"
    assert _normalized(DISTRIBUTION) != _normalized(PUBLIC_TOOL)
    # The import package and both commands keep their names.
    assert project["scripts"] == {
        "eb": "eval_banana.cli:entry",
        "eval-banana": "eval_banana.cli:entry",
    }


def test_the_installed_metadata_carries_the_name_and_version() -> None:
    assert importlib.metadata.version(DISTRIBUTION) == tool_version()
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", "--version"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert done.stdout.strip() == f"{DISTRIBUTION} {tool_version()}"


def test_docs_install_our_name_never_the_public_tool() -> None:
    texts = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    texts += sorted((REPO / "skills").rglob("*.md"))
    installs = []
    for path in texts:
        for command in re.findall(r"pip install ([^\s`]+)", path.read_text()):
            installs.append((path.name, command.strip("'\"")))
    assert ("README.md", DISTRIBUTION) in installs and ("ci.md", DISTRIBUTION) in installs
    for name, command in installs:
        assert _normalized(command) != _normalized(PUBLIC_TOOL), (name, command)
