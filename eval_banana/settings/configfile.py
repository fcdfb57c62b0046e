"""The project's config file: `.eval-banana/config.toml` found at or above a folder, read as
UTF-8 TOML whose numbers a program can read, and its tables and keys checked (legacy sections
refused, unknown keys told with a did-you-mean, legacy keys warned about)."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eval_banana.core.errors import ConfigError
from eval_banana.core.jsonvalues import (
    TOO_SMALL,
    TinyNumber,
    json_float,
    longer_than_written,
    too_long_number,
    too_long_number_line,
)
from eval_banana.core.readback import read_regular
from eval_banana.core.realpaths import real_path
from eval_banana.core.textfiles import unicode_said
from eval_banana.core.words import unprintable, visible
from eval_banana.models.stages import ProblemModel
from eval_banana.settings.table import (
    LEGACY_CORE_KEYS,
    SECTION_KEYS,
    SECTIONS,
    SETTINGS,
)

CONFIG_DIR = ".eval-banana"
CONFIG_NAME = "config.toml"


def refuse_unprintable_root(*, root: Path) -> None:
    """Every result and report names paths under the project root, as UTF-8 text: a root
    whose name holds a byte that is not UTF-8 (or a control character) is refused before eb
    writes anything there (`eb init`) or runs a check, where it failed the first report eb
    wrote (and a line break would start a line of its own in a CI log)."""
    found = unprintable(str(root))
    if found is not None:
        raise ConfigError(
            f"The project folder {visible(str(root))} has {found} in its path (shown as \\xNN), "
            "which eb cannot write into its reports",
            hint="rename the folder (or the one above it that has it), or move the project",
        )


_LLM_MESSAGE = (
    "Legacy [llm] section was removed from {path}. Delete the [llm] section and configure "
    "harness agents under [harness] and [agents.*] instead."
)
_SKIP_MESSAGE = (
    "[harness] skip was removed; delete the key from your config. harness is skipped "
    "automatically when [harness] agent is unset."
)


def project_root_of(*, cwd: Path, no_project_config: bool) -> Path:
    """The project root a command started at `cwd` works in: the folder holding the nearest
    `.eval-banana/config.toml`, else `cwd` itself (resolved)."""
    found = None if no_project_config else find_config_file(start=cwd)
    return found.parent.parent if found is not None else real_path(cwd)


def find_config_file(*, start: Path) -> Path | None:
    """The nearest `.eval-banana/config.toml` regular file at or above `start`."""
    here = real_path(start)
    for directory in (here, *here.parents):
        candidate = directory / CONFIG_DIR / CONFIG_NAME
        try:
            if candidate.is_file():
                return candidate
            if candidate.exists() and not candidate.is_dir():
                # A FIFO, socket or device by that name: skipping it would run with another
                # configuration than the one the user meant, and reading a FIFO would hang.
                raise ConfigError(
                    f"Cannot read {candidate}: not a regular file",
                    file=str(candidate),
                    hint="replace it with a TOML file, or pass --no-project-config",
                )
        except PermissionError:
            # The folder exists but cannot be searched: silently skipping it would run with
            # another configuration than the one the user wrote.
            raise ConfigError(
                f"Cannot read {candidate}: permission denied",
                file=str(candidate),
                hint="fix the permissions, or pass --no-project-config",
            ) from None
    return None


def read_config_bytes(*, path: Path) -> bytes:
    try:
        return read_regular(path)
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror or exc}", file=str(path)) from None


def _not_utf8(*, path: Path, said: str) -> ConfigError:
    return ConfigError(
        f"Invalid TOML in {path}: {said}",
        file=str(path),
        hint="save the file as UTF-8 (in PowerShell: Set-Content -Encoding utf8)",
    )


def load_toml(*, path: Path, data: bytes) -> dict[str, Any]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        said = unicode_said(data)
        raise _not_utf8(
            path=path,
            said=f"the file {said}"
            if said is not None
            else f"not valid UTF-8 ({exc.reason} at byte {exc.start})",
        ) from None
    # The byte order mark Windows tools put first in UTF-8 (Notepad before 2019, Windows
    # PowerShell's `Out-File -Encoding utf8`): tomllib reads it as an invalid statement.
    text = text.removeprefix("\ufeff")
    tiny: list[str] = []
    try:
        table = tomllib.loads(text, parse_float=_float_reader(tiny=tiny))
    except tomllib.TOMLDecodeError as exc:
        # UTF-16 or UTF-32 of ASCII letters is valid UTF-8, NUL bytes between the letters,
        # which TOML refuses.
        said = unicode_said(data) if "\x00" in text else None
        if said is not None:
            raise _not_utf8(path=path, said=f"the file {said}") from None
        raise ConfigError(f"Invalid TOML in {path}: {exc}", file=str(path)) from None
    except ValueError:
        # Not a TOMLDecodeError: int() refused a whole number longer than Python reads.
        line = too_long_number_line(text)
        raise ConfigError(
            f"Invalid TOML in {path}: {too_long_number(line=line)}",
            file=str(path),
            hint="no setting takes such a number; write a smaller one",
            line=line,
        ) from None
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively.
        raise ConfigError(
            f"Invalid TOML in {path}: arrays or tables are nested too deeply to read",
            file=str(path),
            hint="no setting takes nested lists; remove the nesting",
        ) from None
    if tiny:
        raise _too_small(table=table, path=path, text=text, number=tiny[0])
    if "0x" in text or "0o" in text or "0b" in text:
        _refuse_unwritable_whole_number(table=table, path=path, text=text)
    return table


def _refuse_unwritable_whole_number(*, table: dict[str, Any], path: Path, text: str) -> None:
    """A hexadecimal, octal or binary whole number with more decimal digits than Python
    writes reads at any length, and failed with a traceback where a run wrote it: it is
    told at its setting, as a long decimal one is."""
    from eval_banana.settings.tomllines import setting_line

    where = _first_path(value=table, found=_unwritable_whole_number)
    if where is None:
        return
    dotted = ".".join(where)
    line = setting_line(text=text, field_path=dotted)
    raise ConfigError(
        f"Invalid TOML in {path}: {dotted} holds {too_long_number(line=None)}",
        file=str(path),
        field_path=dotted,
        hint="no setting takes such a number; write a smaller one",
        line=line,
    )


def _unwritable_whole_number(value: object) -> bool:
    return type(value) is int and longer_than_written(value)


def _float_reader(*, tiny: list[str]) -> Callable[[str], float | TinyNumber]:
    """tomllib's `parse_float`: a float that reads as 0.0 though it is not zero (`1e-400`) is
    kept as a TinyNumber and its text added to `tiny`; only a zero has its text looked at."""

    def read(text: str) -> float | TinyNumber:
        number = json_float(text)
        if type(number) is TinyNumber:
            tiny.append(text)
        return number

    return read


def _too_small(*, table: dict[str, Any], path: Path, text: str, number: str) -> ConfigError:
    """The error for the first setting that holds a number too close to zero to read, `number`:
    taken as 0, a threshold or a limit would be one nobody wrote (0 is "no limit" for some)."""
    from eval_banana.settings.tomllines import setting_line

    where = _first_path(value=table, found=lambda item: type(item) is TinyNumber)
    dotted = ".".join(where) if where else None
    return ConfigError(
        f"Invalid TOML in {path}: {dotted or 'a value'} holds the number {number}, {TOO_SMALL}",
        file=str(path),
        field_path=dotted,
        hint="write 0 if zero is meant, or a number a program reads (at least about 5e-324)",
        line=setting_line(text=text, field_path=dotted) if dotted else None,
    )


def _first_path(*, value: object, found: Callable[[object], bool]) -> tuple[str, ...] | None:
    """The keys (and list indexes) that lead to the first item of loaded TOML `value` that
    is `found`."""
    items: list[tuple[str, object]] = []
    if isinstance(value, dict):
        items = [(str(key), item) for key, item in value.items()]
    elif isinstance(value, list):
        items = [(str(index), item) for index, item in enumerate(value)]
    for key, item in items:
        if found(item):
            return (key,)
        inner = _first_path(value=item, found=found)
        if inner is not None:
            return (key, *inner)
    return None


# --- structure: legacy sections, unknown keys, tables ------------------------------------------


def _suggest(*, key: str, section: str | None) -> str | None:
    """A "did you mean" target for an unknown key (dotted), or None."""
    from eval_banana.core.suggest import closest

    if section is None:
        # A setting written outside its table (`pass_threshold = 1` at top level).
        for name, keys in SECTION_KEYS.items():
            if key in keys:
                return f"{name}.{key}"
        dotted = [spec.name for spec in SETTINGS if spec.section != "agents"]
        return closest(key, [*SECTIONS, *dotted])
    # A setting written under the wrong table (`[core] exclude_dirs`): the one table that has
    # it is surely what was meant, more than a near spelling of another key of this one. A key
    # of two other tables (`[core] mode`) names neither.
    elsewhere = [name for name, keys in SECTION_KEYS.items() if name != section and key in keys]
    if len(elsewhere) == 1:
        return f"{elsewhere[0]}.{key}"
    match = closest(key, SECTION_KEYS[section])
    return f"{section}.{match}" if match else None


def _unknown_keys_error(*, section: str | None, keys: list[str], path: Path) -> ConfigError:
    # A quoted TOML key may hold a line break: shown as `\x0a`, it never starts a line of the
    # error (in a GitHub Actions log, a workflow command).
    keys = [visible(key) for key in keys]
    dotted = [f"{section}.{key}" if section else key for key in keys]
    hints = []
    for key, name in zip(keys, dotted, strict=True):
        target = _suggest(key=key, section=section)
        if target:
            hints.append(f"{name}: did you mean {target}?")
    if not hints:
        allowed = SECTION_KEYS[section] if section else SECTIONS
        where = f"[{section}]" if section else "the top level"
        hints.append(f"known keys in {where}: {', '.join(allowed)}")
    plural = "s" if len(keys) > 1 else ""
    if section == "harness":
        # eval-banana's wording is kept (docs/compatibility.md#configuration); the dotted keys
        # and the file are added to it.
        message = (
            f"[harness] contains unknown keys: {', '.join(keys)} ({', '.join(dotted)} in {path})"
        )
    else:
        message = f"Unknown key{plural} {', '.join(dotted)} in {path}"
    return ConfigError(message, file=str(path), field_path=dotted[0], hint="; ".join(hints))


def check_structure(*, table: dict[str, Any], path: Path) -> list[ProblemModel]:
    """Reject legacy, unknown and mistyped tables and keys; return the warnings."""
    if "llm" in table:  # before every other check, as eval-banana does
        raise ConfigError(_LLM_MESSAGE.format(path=path), file=str(path), field_path="llm")
    unknown = sorted(key for key in table if key not in SECTIONS)
    if unknown:
        raise _unknown_keys_error(section=None, keys=unknown, path=path)
    warnings: list[ProblemModel] = []
    for section in SECTIONS:
        if section == "agents" or section not in table:
            continue  # [agents] is checked by eval_banana.harness.templates
        body = table[section]
        if not isinstance(body, dict):
            raise ConfigError(
                f"[{section}] must be a TOML table (in {path})",
                file=str(path),
                field_path=section,
                hint=f"write the settings under a [{section}] header",
            )
        if section == "harness" and "skip" in body:
            raise ConfigError(_SKIP_MESSAGE, file=str(path), field_path="harness.skip")
        legacy = sorted(k for k in body if section == "core" and k in LEGACY_CORE_KEYS)
        bad = sorted(k for k in body if k not in SECTION_KEYS[section] and k not in legacy)
        if bad:
            raise _unknown_keys_error(section=section, keys=bad, path=path)
        if legacy:
            names = ", ".join(f"core.{k}" for k in legacy)
            warnings.append(
                ProblemModel(
                    message=f"Ignored legacy {'key' if len(legacy) == 1 else 'keys'} {names} in "
                    f"{path}: {'it has' if len(legacy) == 1 else 'they have'} no effect",
                    file=str(path),
                    field_path=f"core.{legacy[0]}",
                    hint=f"delete {'it' if len(legacy) == 1 else 'them'}; deterministic checks "
                    "are limited by "
                    "core.check_timeout_seconds, judges by harness.timeout_seconds",
                )
            )
    return warnings
