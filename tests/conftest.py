"""Shared fixtures: small projects on disk and an in-process `eb`."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
STANDIN_AGENTS = REPO / "tests" / "agents"
AGENTS_REAL = REPO / "tests" / "agents_real"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The real-agent conformance suite runs only when asked for by path (it needs the CLIs
    `invoke agents` installs, and minutes): `python -m pytest tests/agents_real`."""
    if collection_path != AGENTS_REAL:
        return None
    asked = [Path(str(arg).split("::")[0]).resolve() for arg in config.args]
    wanted = any(path == AGENTS_REAL or AGENTS_REAL in path.parents for path in asked)
    return None if wanted else True


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Property-based tests (hypothesis) sweep generated inputs: they belong to the
    `exhaustive` suite, which `.ci/run` runs after the README's command (docs/testing.md).
    Marked before `-m` chooses, so the README's command leaves them out."""
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.exhaustive)


@dataclass
class EbResult:
    exit_code: int
    stdout: str
    stderr: str


def eb_in_process(*args: str) -> EbResult:
    """`eb` in-process through the real CLI boundary, its streams captured as by the `eb`
    fixture: for a fixture that outlives one test (a module's), which cannot take `capsys`."""
    from eval_banana.cli import main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    texts = []
    for stream in (out, err):
        stream.flush()
        texts.append(stream.buffer.getvalue().decode("utf-8"))  # type: ignore[attr-defined]
    return EbResult(exit_code=code, stdout=texts[0], stderr=texts[1])


@pytest.fixture
def eb(capsys: pytest.CaptureFixture[str]) -> Callable[..., EbResult]:
    """Run `eb` in-process through the real CLI boundary."""
    from eval_banana.cli import main

    def run(*args: str) -> EbResult:
        code = main(list(args))
        captured = capsys.readouterr()
        return EbResult(exit_code=code, stdout=captured.out, stderr=captured.err)

    return run


@pytest.fixture
def project(tmp_path: Path) -> Callable[..., Path]:
    """Write files (path -> text) under a fresh project root with a config file."""
    root = tmp_path / "proj"

    def make(files: dict[str, str], *, config: str | None = "") -> Path:
        if config is not None:
            (root / ".eval-banana").mkdir(parents=True, exist_ok=True)
            (root / ".eval-banana" / "config.toml").write_text(textwrap.dedent(config))
        for relative, text in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
        root.mkdir(parents=True, exist_ok=True)
        return root

    return make


def check_yaml(check_id: str, *, script: str = "pass", tags: list[str] | None = None) -> str:
    """A valid inline deterministic check."""
    lines = [
        "schema_version: 1",
        f"id: {check_id}",
        "type: deterministic",
        f"description: Check {check_id}.",
        f"script: {script!r}"
        if "\n" not in script
        else "script: |\n" + textwrap.indent(script, "  "),
    ]
    if tags:
        lines.append(f"tags: [{', '.join(tags)}]")
    return "\n".join(lines) + "\n"


def judge_yaml(check_id: str, *, instructions: str = "Score 1.", model: str | None = None) -> str:
    lines = [
        "schema_version: 1",
        f"id: {check_id}",
        "type: harness_judge",
        f"description: Judge {check_id}.",
        f"instructions: {json.dumps(instructions)}",
    ]
    if model:
        lines.append(f"model: {model}")
    return "\n".join(lines) + "\n"


PYTHON = sys.executable
