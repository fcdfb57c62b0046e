"""Generated docs match the code: the reference tables and the real stage examples."""

from __future__ import annotations

import pytest

from eval_banana.publish.docs import REPO, reference_markdown, stage_examples, yaml_type


def test_reference_matches_the_models() -> None:
    committed = (REPO / "docs" / "reference.md").read_text()
    assert committed == reference_markdown(), "docs/reference.md drifted: run `invoke docs`"


@pytest.mark.slow
def test_stage_examples_match_what_eb_run_writes() -> None:
    for stage, text in stage_examples().items():
        committed = (REPO / "docs" / "stages" / f"{stage}.example.json").read_text()
        assert committed == text, f"docs/stages/{stage}.example.json drifted: run `invoke docs`"


def test_reference_shows_yaml_types_not_python_types() -> None:
    text = (REPO / "docs" / "reference.md").read_text()
    checks = text[text.index("## Check files") : text.index("## Stage files")]
    for python_spelling in (
        "Literal[",
        "str |",
        "| None",
        "list[",
        "`int`",
        "`str`",
        "Assertion |",
    ):
        assert python_spelling not in checks, python_spelling
    for row in (
        "| `type` | `deterministic` | yes |",
        "| `schema_version` | the integer `1` | yes |",
        "| `id` | string | yes |",
        "| `tags` | list of strings | no (default `[]`) |",
        "| `expect` | one of `pass`, `fail` | no (default `pass`) |",
        "| `script` | string | no |",
        "| `assert` | list of assertions (see below), at least 1 | yes |",
        "| `lengthAtLeast` | integer ≥ 0 or a `{{ case.<field> }}` placeholder (in a dataset family) |",
        "| `equals` | any JSON value |",
        "| `exists` | (none) |",
    ):
        assert row in checks, row


@pytest.mark.parametrize(
    ("schema", "shown"),
    [
        ({"type": "boolean"}, "true or false"),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "integer"),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "string or integer"),
        ({"type": "array", "items": {"type": "integer"}}, "list of integers"),
        ({"type": "object"}, "mapping"),
        ({"enum": [1, 2]}, "one of `1`, `2`"),
    ],
)
def test_yaml_type_names(schema: dict[str, object], shown: str) -> None:
    assert yaml_type(schema) == shown


def test_the_skill_names_every_setting() -> None:
    """The skill's settings table (what a coding agent reads to configure eb) lists every
    setting of the settings table, with its variable and flag: a new setting is not forgotten."""
    from eval_banana.settings.table import SETTINGS

    table = (REPO / "skills/eval-banana/references/configuration.md").read_text(encoding="utf-8")
    rows = {line.split(" | ")[0].strip("| `"): line for line in table.splitlines()}
    missing = []
    for spec in SETTINGS:
        if spec.kind in ("ignored", "agent_tables"):
            continue
        row = rows.get(f"[{spec.section}] {spec.key}") or rows.get(f"[{spec.section}.{spec.key}]")
        if (
            row is None
            or (spec.env and spec.env not in row)
            or (spec.flag and spec.flag not in row)
        ):
            missing.append(spec.name)
    assert missing == []
