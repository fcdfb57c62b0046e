"""A setting's help and default are its field's in models/config.py: the table alone cannot declare one.

docs/architecture.md said a new setting was "one line in settings/table.py"; with only that line,
`invoke docs` and every `eb` command died on a bare KeyError from the table's import.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eval_banana.settings import table
from eval_banana.settings.table import SettingFieldMissing, SettingSpec

ROOT = Path(__file__).resolve().parents[2]


def test_a_setting_without_its_field_names_the_model_to_add_it_to() -> None:
    with pytest.raises(SettingFieldMissing) as raised:
        table._help("history", "not_a_field")
    message = str(raised.value)
    assert "eval_banana/models/config.py" in message
    assert "HistorySettings" in message and "`not_a_field`" in message


def test_a_spec_default_without_its_field_names_the_model_too() -> None:
    spec = SettingSpec(
        name="history.not_a_field",
        section="history",
        key="not_a_field",
        kind="positive_integer",
        env=None,
        flag=None,
        commands=(),
        help="",
    )
    with pytest.raises(SettingFieldMissing, match="HistorySettings"):
        _ = spec.default


def test_a_section_without_a_model_is_named() -> None:
    with pytest.raises(SettingFieldMissing, match=r"\[nowhere\]"):
        table._help("nowhere", "key")


def test_the_architecture_page_names_every_file_a_new_setting_needs() -> None:
    """Each place the recipe names exists, and the tests it points to are there."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    recipe = page[page.index("**A new setting.**") : page.index("**A new agent template.**")]
    for place in (
        "models/config.py",
        "settings/table.py",
        "templates/config.toml",
        "cache/verdictsettings.py",
    ):
        assert f"`{place}`" in recipe and (ROOT / "eval_banana" / place).is_file(), place
    assert "`skills/eval-banana/references/configuration.md`" in recipe
    for command in ("invoke schemas", "invoke docs"):
        assert f"`{command}`" in recipe, command
    for test in re.findall(r"`(tests/[\w/]+\.py)", recipe):
        assert (ROOT / test).is_file(), test
