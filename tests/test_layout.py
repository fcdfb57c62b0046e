"""The package's layout: imports go downward between packages, and no two modules import each other.

The layers are the ones docs/architecture.md draws. A unit is a package below `eval_banana/` or
a top-level module; a unit may import itself and any unit on a lower layer, never a sibling on its
own layer and never one above it.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "eval_banana"

# Bottom first. Units on one layer do not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("_version",),
    ("core",),
    ("assertions", "projectstate"),
    ("models",),
    ("settings",),
    ("datasets",),
    ("checks", "harness"),
    ("transcripts",),
    ("stagefiles", "runners"),
    ("sampling", "isolation", "history", "reporttext"),
    ("calibration", "remote"),
    ("cache", "incremental"),
    ("execution",),
    ("stages",),
    ("reporting", "diffing"),
    ("pipeline", "publish"),
    ("scaleout",),
    ("commands",),
    ("cli", "runner", "__init__"),
    ("tasks", "__main__"),
)
LAYER_OF: dict[str, int] = {unit: level for level, units in enumerate(LAYERS) for unit in units}
# Entry points: the only modules allowed at the top of eval_banana/ (beside the packages).
TOP_MODULES = {"__init__", "__main__", "_version", "cli", "tasks", "runner"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(path: Path, *, known: set[str]) -> Iterator[str]:
    """Every eval_banana module `path` imports, at any depth of its code (lazy imports count)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not node.module.startswith("eval_banana"):
                continue
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                yield submodule if submodule in known else node.module
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("eval_banana."))


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _edges() -> set[tuple[str, str]]:
    modules = _modules()
    known = set(modules)
    return {
        (module, imported)
        for module, path in modules.items()
        for imported in _imports(path, known=known)
        if imported != module
    }


def test_every_unit_has_a_layer() -> None:
    units = {_unit(module) for module in _modules()}
    assert sorted(units - set(LAYER_OF)) == [], "add the new package to LAYERS (and the docs' map)"


def test_imports_go_downward_between_packages() -> None:
    wrong = sorted(
        f"{module} imports {imported} ({_unit(module)} may not use {_unit(imported)})"
        for module, imported in _edges()
        if _unit(module) != _unit(imported) and LAYER_OF[_unit(imported)] >= LAYER_OF[_unit(module)]
    )
    assert wrong == []


def test_no_two_modules_import_each_other() -> None:
    edges = _edges()
    pairs = sorted({tuple(sorted(pair)) for pair in edges if (pair[1], pair[0]) in edges})
    assert pairs == []


def test_the_top_holds_entry_points_only() -> None:
    top = {path.stem for path in PACKAGE.glob("*.py")}
    assert top <= TOP_MODULES, f"move {sorted(top - TOP_MODULES)} into a package"
    assert len(top) <= 8


@pytest.mark.parametrize("unit", sorted({_unit(m) for m in _modules()} - TOP_MODULES))
def test_each_package_says_what_it_owns(unit: str) -> None:
    doc = ast.get_docstring(ast.parse((PACKAGE / unit / "__init__.py").read_text()))
    assert doc and len(doc.splitlines()) >= 2, f"eval_banana/{unit}/__init__.py needs its docstring"


@functools.cache
def _unit_imports() -> dict[str, set[str]]:
    """Each unit and the other units it imports (lazy imports inside functions count)."""
    uses: dict[str, set[str]] = {_unit(module): set() for module in _modules()}
    for module, imported in _edges():
        if _unit(module) != _unit(imported):
            uses[_unit(module)].add(_unit(imported))
    return uses


def _may_import(doc: str) -> set[str] | None:
    """The units a package docstring's one `May import: a, b and c.` paragraph lists."""
    found = re.search(r"^May import: ([^.]*)\.", doc, flags=re.MULTILINE)
    if found is None:
        return None
    return {name for name in re.split(r",\s*|\s+and\s+", " ".join(found.group(1).split()))}


@pytest.mark.parametrize("unit", sorted({_unit(m) for m in _modules()} - TOP_MODULES))
def test_each_package_lists_what_it_imports(unit: str) -> None:
    """The list in each package's docstring is the package's imports, no more and no fewer: the
    lists had drifted (runners importing settings, calibration never importing sampling)."""
    doc = ast.get_docstring(ast.parse((PACKAGE / unit / "__init__.py").read_text())) or ""
    declared = _may_import(doc)
    assert declared is not None, f"eval_banana/{unit}/__init__.py needs a 'May import: ...' line"
    actual = _unit_imports()[unit]
    assert sorted(actual - declared) == [], f"eval_banana/{unit}/__init__.py: add to 'May import:'"
    assert sorted(declared - actual) == [], f"eval_banana/{unit}/__init__.py: imports none of these"


def test_may_import_reads_a_list_over_lines() -> None:
    doc = "What it owns.\n\nMay import: runners, harness\nand models.\n\nMore. May import: x."
    assert _may_import(doc) == {"runners", "harness", "models"}
    assert _may_import("Imports nothing.") is None


def _page() -> str:
    return (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")


def test_every_arrow_of_the_picture_is_an_import() -> None:
    """An arrow between two units in architecture.md's picture stands for a real import (the
    picture drew pipeline --> diffing and cache --> calibration, which nothing imported)."""
    picture = _page().split("```mermaid")[1].split("```")[0]
    uses = _unit_imports()
    drawn = set()
    for line in picture.splitlines():
        if "-->" not in line:
            continue
        ends = [re.sub(r"\[.*?\]", "", end) for end in line.split("-->")]
        for left, right in zip(ends, ends[1:], strict=False):
            drawn |= {(a.strip(), b.strip()) for a in left.split("&") for b in right.split("&")}
    between_units = {(a, b) for a, b in drawn if a in uses and b in uses}
    assert len(between_units) > 20, "the picture's arrows were not read"
    assert sorted((a, b) for a, b in between_units if b not in uses[a]) == []


def test_the_layer_table_is_the_tests_layers() -> None:
    """docs/architecture.md's layer table says it drives this file: it is LAYERS, row by row."""
    rows = re.findall(r"^\| (\d+) \| (`.*`) \|$", _page(), flags=re.MULTILINE)
    table = [
        tuple(name.removesuffix(".py") for name in re.findall(r"`([^`]+)`", units))
        for _, units in rows
    ]
    assert [int(level) for level, _ in rows] == list(range(len(LAYERS)))
    assert table == [tuple(units) for units in LAYERS]


def test_the_rule_catches_an_upward_import(tmp_path: Path) -> None:
    """The walk sees a lazy import inside a function, as the layer test needs it to."""
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from eval_banana.pipeline.run import run_pipeline\n")
    imported = list(_imports(source, known={"eval_banana.pipeline.run"}))
    assert imported == ["eval_banana.pipeline.run"]
    assert LAYER_OF[_unit(imported[0])] > LAYER_OF["cache"]


def test_the_architecture_page_names_every_package() -> None:
    page = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    units = sorted({_unit(m) for m in _modules()} - TOP_MODULES)
    assert [unit for unit in units if f"`{unit}/`" not in page] == []
    assert all(f"`{unit}`" in page for unit in units), "the layer table lists every package"


def _always_false(node: ast.AST) -> bool:
    """A function of no arguments whose body only returns False (after any docstring)."""
    if not isinstance(node, ast.FunctionDef) or node.args.args or node.args.kwonlyargs:
        return False
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    return (
        len(body) == 1
        and isinstance(body[0], ast.Return)
        and isinstance(body[0].value, ast.Constant)
        and body[0].value.value is False
    )


def test_the_stop_that_never_asks_is_defined_once() -> None:
    """The default `stop` of a wait is `core.files.never_stop`, imported where it is used: a copy
    per module would be one more thing to keep alike."""
    found = [
        f"{module}.{node.name}"
        for module, path in _modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if _always_false(node)
    ]
    assert found == ["eval_banana.core.files.never_stop"], found
