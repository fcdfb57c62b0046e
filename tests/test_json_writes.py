"""Every JSON text eb makes says whether it may hold NaN.

Python's json writes NaN and Infinity unless told not to, and no other JSON reader takes them (a
browser's JSON.parse throws, a strict parser refuses the file): a transcript once carried an
agent's `"cost_usd": NaN` into its .jsonl file and into report.html. So each `json.dumps`,
`json.dump` and `json.JSONEncoder` in the package names `allow_nan`: False for what reaches a
file, standard output, a digest or a key; True only for a message that quotes what someone wrote.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "eval_banana"
_MAKERS = frozenset({"dumps", "dump", "JSONEncoder"})


def _json_calls(tree: ast.AST) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in _MAKERS
            and isinstance(func.value, ast.Name)
            and func.value.id == "json"
        ):
            yield node


def test_every_json_call_names_allow_nan() -> None:
    unnamed: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "json":
                names = {alias.name for alias in node.names} & _MAKERS
                assert not names, f"{path}:{node.lineno}: import json and call json.{names.pop()}"
        for call in _json_calls(tree):
            if not any(keyword.arg == "allow_nan" for keyword in call.keywords):
                unnamed.append(f"{path.relative_to(PACKAGE.parent)}:{call.lineno}")
    assert not unnamed, "json calls that do not name allow_nan (False for what eb writes): " + (
        ", ".join(unnamed)
    )
