"""Where a setting's value came from, in the words of a message about it.

config.json records each value's source. A message that tells how to change a value names
that place: the flag, the EVAL_BANANA_* variable, or the config file and its line; never the
file when a variable or a flag set the value (the file may already say what the fix asks for).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from eval_banana.models.config import SettingSource
from eval_banana.models.stages import ConfigDoc
from eval_banana.settings.table import SETTINGS_BY_NAME, SettingSpec, show
from eval_banana.settings.tomllines import setting_line


class SettingOrigin(NamedTuple):
    """One setting's source, and the config file in use (with the key's line in it)."""

    spec: SettingSpec
    source: SettingSource
    config_file: str | None
    line: int | None  # of the key in config_file, when the file set the value

    @property
    def file(self) -> str | None:
        """The config file when the value came from it: a problem's `file`."""
        return self.config_file if self.source == "project" else None

    @property
    def _key(self) -> str:
        return f"[{self.spec.section}] {self.spec.key}"

    def given(self, value: object) -> str:
        """The value as its source wrote it: `--cache off`, `EVAL_BANANA_CACHE_MODE=off`,
        `[cache] mode = "off" in <file>`, `[cache] mode = "off" (the default)`."""
        if self.source == "cli" and self.spec.flag:
            return f"{self.spec.flag} {_as_text(value)}"
        if self.source == "env" and self.spec.env:
            return f"{self.spec.env}={_as_text(value)}"
        if self.source == "project" and self.config_file:
            at = f" (line {self.line})" if self.line is not None else ""
            return f"{self._key} = {show(value)} in {self.config_file}{at}"
        return f"{self._key} = {show(value)} (the default)"

    def to_set(self, value: object) -> str:
        """How to make the setting `value` where it was set: `pass --cache on`, `set
        EVAL_BANANA_CACHE_MODE=on`, `set [cache] mode = "on" in <file>`."""
        if self.source == "cli" and self.spec.flag:
            return f"pass {self.spec.flag} {_as_text(value)}"
        if self.source == "env" and self.spec.env:
            return f"set {self.spec.env}={_as_text(value)}"
        return f"set {self._key} = {show(value)} in {self.config_file or 'the config file'}"

    @property
    def named(self) -> str:
        """The place itself: `--min-agreement`, `EVAL_BANANA_HARNESS_MIN_AGREEMENT`,
        `[harness] min_agreement in <file>`, `[harness] min_agreement in the config file`."""
        if self.source == "cli" and self.spec.flag:
            return self.spec.flag
        if self.source == "env" and self.spec.env:
            return self.spec.env
        return f"{self._key} in {self.config_file or 'the config file'}"


def _as_text(value: object) -> str:
    """A value as a flag or a variable is written: no quotes, `0.6` for a float 0.6."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def setting_origin(
    *,
    name: str,
    sources: Mapping[str, SettingSource],
    config_file: str | None,
    text: str | None = None,
) -> SettingOrigin:
    """Where the setting `name` came from; `text` (the config file's) gives the key's line."""
    spec = SETTINGS_BY_NAME[name]
    source = sources.get(name, "default")
    line = None
    if source == "project" and text is not None:
        line = setting_line(text=text, field_path=name)
    return SettingOrigin(spec=spec, source=source, config_file=config_file, line=line)


def origin_in(*, config: ConfigDoc, name: str) -> SettingOrigin:
    """`setting_origin` for a config stage document, the line read from its config file."""
    text = None
    if config.config_file and config.sources.get(name) == "project":
        try:
            text = Path(config.config_file).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = None  # moved since the config stage read it: the message goes without a line
    return setting_origin(
        name=name, sources=config.sources, config_file=config.config_file, text=text
    )
