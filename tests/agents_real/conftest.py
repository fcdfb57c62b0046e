"""Fixtures of the conformance suite: the installed real agents, the model server, the users.

This folder is collected only when named (`python -m pytest tests/agents_real`); the default
test command leaves it out (see tests/conftest.py). Without the installed CLIs every test
fails with the instruction to run `invoke agents`: a missing install is never a skip.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents_real.install import agents_home, install_problem
from tests.agents_real.runner import (
    Runtime,
    User,
    build_portable_runtime,
    current_user,
    python_for_everyone,
    unprivileged_user,
    world_folder,
)
from tests.agents_real.setups import SERVED_MODELS
from tests.model_server import ModelServer

pytestmark = pytest.mark.agents_real


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.agents_real)


@pytest.fixture(scope="session", autouse=True)
def installed_agents() -> Path:
    problem = install_problem()
    if problem is not None:
        pytest.fail(
            f"{problem}. Run `invoke agents` first (it installs the pinned CLIs of "
            f"tests/agents_real/ into {agents_home()}; set EVAL_BANANA_AGENTS_HOME to choose "
            "another folder).",
            pytrace=False,
        )
    return agents_home()


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    server = ModelServer(models=SERVED_MODELS).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def runtimes() -> Iterator[dict[str, tuple[User, Runtime]]]:
    """root: this interpreter as it is; nobody: a reachable interpreter and a portable copy."""
    root = current_user()
    found: dict[str, tuple[User, Runtime]] = {
        "root": (root, Runtime(python=Path(sys.executable), portable=None))
    }
    folder: Path | None = None
    if root.is_root:
        python = python_for_everyone()
        if python is None:
            pytest.fail(
                "No Python interpreter of this version is reachable by an unprivileged user; "
                "install the system's python3 of the same version",
                pytrace=False,
            )
        folder = world_folder(prefix="eb-runtime-")
        runtime = Runtime(python=python, portable=build_portable_runtime(target=folder))
        found["nobody"] = (unprivileged_user(), runtime)
    try:
        yield found
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A folder every user can reach, removed afterwards (pytest's own tmp is 0700)."""
    folder = world_folder(prefix="eb-conformance-")
    try:
        yield folder
    finally:
        # EB_CONFORMANCE_KEEP=1 keeps the projects, run folders and agent homes to look at.
        if not os.environ.get("EB_CONFORMANCE_KEEP"):
            shutil.rmtree(folder, ignore_errors=True)
