"""Every YAML and TOML example in the Markdown docs must be real.

The test walks README.md, docs/ and skills/ (so files added later are picked up without
touching this file) and checks each fenced ```yaml / ```yml / ```toml block:

- YAML with a top-level `schema_version` is a check file: it must load through
  `eval_banana.checks.definition.load_definition` and validate against `schemas/check.schema.json`.
- Other YAML (CI workflows, pre-commit configs, fragments) must parse with `yaml.safe_load`.
- TOML whose top-level tables are all config sections is a `.eval-banana/config.toml`: it must
  resolve through the config stage, and a configured agent must exist.
- Other TOML (pyproject snippets, taplo configs) must parse with `tomllib`.

An example that is broken on purpose is marked by an HTML comment on one of the lines just
above its fence, `<!-- invalid-example -->`; such a block must then FAIL eval_banana's checks.
"""

from __future__ import annotations

import json
import re
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

from eval_banana.checks.definition import load_definition
from eval_banana.core.errors import EvalBananaError
from eval_banana.harness.resolve import resolve_harness
from eval_banana.models.config import Selection
from eval_banana.stages.config import resolve_config

ROOT = Path(__file__).resolve().parent.parent
DOC_ROOTS = ("docs", "skills")
INVALID_MARKER = "<!-- invalid-example -->"
# Top-level tables a config file may hold; a block using only these is treated as a config.
CONFIG_TABLES = frozenset({"core", "discovery", "harness", "execution", "cache", "agents", "llm"})
LANGUAGES = {"yaml": "yaml", "yml": "yaml", "toml": "toml"}

_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced example: where it is, its language, its text, and whether it is marked broken."""

    path: Path
    line: int
    language: str
    text: str
    invalid: bool

    @property
    def label(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"


def markdown_files(*, root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown file under docs/ and skills/, in code-point order."""
    files = [root / "README.md"] if (root / "README.md").is_file() else []
    for name in DOC_ROOTS:
        folder = root / name
        if folder.is_dir():
            files.extend(path for path in folder.rglob("*.md") if path.is_file())
    return sorted(set(files), key=lambda path: str(path))


def _marked_invalid(*, lines: list[str], index: int) -> bool:
    """True when the marker comment sits on one of the non-blank lines right above `index`."""
    seen = 0
    cursor = index - 1
    while cursor >= 0 and seen < 2:
        stripped = lines[cursor].strip()
        cursor -= 1
        if not stripped:
            continue
        seen += 1
        if stripped == INVALID_MARKER:
            return True
    return False


def extract_blocks(*, path: Path, text: str) -> list[Block]:
    """Every fenced yaml/yml/toml block of one Markdown text (indented fences included)."""
    lines = text.splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opened = _FENCE_OPEN.match(lines[index])
        if opened is None:
            index += 1
            continue
        fence, indent = opened["fence"], opened["indent"]
        info = opened["info"].strip().split()
        language = LANGUAGES.get(info[0].lower()) if info else None
        body: list[str] = []
        end = index + 1
        while end < len(lines):
            candidate = lines[end].strip()
            if candidate.startswith(fence[0] * len(fence)) and not candidate.strip(fence[0]):
                break
            # Lines of a fence inside a list item carry the item's indentation.
            line = lines[end]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            end += 1
        if language is not None:
            blocks.append(
                Block(
                    path=path,
                    line=index + 1,
                    language=language,
                    text=textwrap.dedent("\n".join(body)) + "\n",
                    invalid=_marked_invalid(lines=lines, index=index),
                )
            )
        index = end + 1
    return blocks


def all_blocks() -> list[Block]:
    found: list[Block] = []
    for path in markdown_files():
        found.extend(extract_blocks(path=path, text=path.read_text(encoding="utf-8")))
    return found


def _check_schema() -> Draft7Validator:
    schema = json.loads((ROOT / "schemas" / "check.schema.json").read_text(encoding="utf-8"))
    return Draft7Validator(schema)


def check_yaml(*, block: Block, tmp_path: Path) -> str:
    """Validate one YAML example; raise on any problem; return what kind of example it was."""
    document: Any = yaml.safe_load(block.text)
    if not (isinstance(document, dict) and "schema_version" in document):
        return "yaml"
    path = tmp_path / "eval_checks" / "example.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(block.text, encoding="utf-8")
    load_definition(data=block.text.encode("utf-8"), path=path)
    errors = sorted(_check_schema().iter_errors(document), key=lambda error: list(error.path))
    if errors:
        first = errors[0]
        where = "/".join(str(part) for part in first.path) or "$"
        raise AssertionError(f"check.schema.json rejects the example at {where}: {first.message}")
    return "check"


def _is_config(document: dict[str, Any]) -> bool:
    return bool(document) and all(key in CONFIG_TABLES for key in document)


def check_toml(*, block: Block, tmp_path: Path) -> str:
    """Validate one TOML example; raise on any problem; return what kind of example it was."""
    document = tomllib.loads(block.text)
    if not _is_config(document):
        return "toml"
    config_dir = tmp_path / ".eval-banana"
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.toml").write_text(block.text, encoding="utf-8")
    doc = resolve_config(
        cwd=tmp_path,
        cli_values={},
        environ={},
        no_project_config=False,
        selection=Selection(),
        run_id="t",
    )
    # A documented agent must exist: built-in or defined in the same example.
    resolve_harness(settings=doc.settings, project_root=Path.cwd())
    return "config"


def check_block(*, block: Block, tmp_path: Path) -> str:
    if block.language == "yaml":
        return check_yaml(block=block, tmp_path=tmp_path)
    return check_toml(block=block, tmp_path=tmp_path)


BLOCKS = all_blocks()

# What "the example is wrong" may look like: eb's own errors, parser errors, schema mismatches.
_EXPECTED_FAILURES = (
    EvalBananaError,
    yaml.YAMLError,
    tomllib.TOMLDecodeError,
    AssertionError,
)


@pytest.mark.parametrize("block", BLOCKS, ids=[block.label for block in BLOCKS])
def test_documented_example(block: Block, tmp_path: Path) -> None:
    if block.invalid:
        with pytest.raises(_EXPECTED_FAILURES):
            check_block(block=block, tmp_path=tmp_path)
        return
    try:
        check_block(block=block, tmp_path=tmp_path)
    except _EXPECTED_FAILURES as exc:
        text = exc.render() if isinstance(exc, EvalBananaError) else str(exc)
        pytest.fail(f"{block.label}: the {block.language} example is not valid:\n{text}")


def test_the_walk_finds_the_documents_we_own() -> None:
    labels = {block.path.relative_to(ROOT).as_posix() for block in BLOCKS}
    for owned in (
        "skills/eval-banana/SKILL.md",
        "skills/eval-banana/references/examples.md",
        "docs/first-project.md",
        "docs/judges.md",
        "docs/editors.md",
    ):
        assert owned in labels, f"no yaml/toml example found in {owned}"


def test_examples_of_every_kind_are_checked(tmp_path: Path) -> None:
    kinds = {
        check_block(block=block, tmp_path=tmp_path / str(index))
        for index, block in enumerate(BLOCKS)
        if not block.invalid
    }
    assert {"check", "config"} <= kinds


# --- the checker itself must catch broken examples --------------------------------------------

_SAMPLE = """\
Intro.

```yaml
schema_version: 1
id: good
type: deterministic
description: fine
script: "pass"
```

1. A list item with an indented fence:

   ```yml
   schema_version: 1
   id: indented
   type: deterministic
   description: fine
   script: "pass"
   ```

<!-- invalid-example -->
```yaml
schema_version: 1.0
id: float_version
type: deterministic
description: refused by eb, accepted by JSON Schema
script: "pass"
```

```toml
[core]
pass_threshold = 0.5
```

```python
not: [checked
```
"""


def test_extractor_finds_indented_fences_markers_and_skips_other_languages(
    tmp_path: Path,
) -> None:
    blocks = extract_blocks(path=ROOT / "sample.md", text=_SAMPLE)
    assert [(block.language, block.invalid) for block in blocks] == [
        ("yaml", False),
        ("yaml", False),
        ("yaml", True),
        ("toml", False),
    ]
    assert blocks[1].text.startswith("schema_version: 1\nid: indented\n")
    assert [
        check_block(block=block, tmp_path=tmp_path / str(i))
        for i, block in enumerate(blocks)
        if not block.invalid
    ] == ["check", "check", "config"]


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("yaml", "schema_version: 1\nid: x\ntype: deterministic\ndescription: d\n"),
        ("yaml", "schema_version: 1.0\nid: x\ntype: deterministic\ndescription: d\nscript: 'p'\n"),
        ("yaml", "schema_version: 1\nid: x\ntype: deterministic\ndescription: d\nscript: ''\n"),
        ("yaml", "schema_version: 1\nid: x\ntype: judge\ndescription: d\n"),
        ("yaml", "key: [unclosed\n"),
        ("toml", "[core]\npass_treshold = 0.5\n"),
        ("toml", "[core]\npass_threshold = 2\n"),
        ("toml", '[harness]\nagent = "nosuch"\n'),
        ("toml", "[core\n"),
    ],
)
def test_broken_examples_are_caught(language: str, text: str, tmp_path: Path) -> None:
    block = Block(path=ROOT / "x.md", line=1, language=language, text=text, invalid=False)
    with pytest.raises(_EXPECTED_FAILURES):
        check_block(block=block, tmp_path=tmp_path)


def test_non_config_documents_only_need_to_parse(tmp_path: Path) -> None:
    workflow = Block(
        path=ROOT / "x.md",
        line=1,
        language="yaml",
        text="on: push\njobs:\n  eval:\n    runs-on: ubuntu-latest\n",
        invalid=False,
    )
    pyproject = Block(
        path=ROOT / "x.md",
        line=1,
        language="toml",
        text='[project]\nname = "x"\n[tool.taplo]\n',
        invalid=False,
    )
    assert check_block(block=workflow, tmp_path=tmp_path) == "yaml"
    assert check_block(block=pyproject, tmp_path=tmp_path) == "toml"
