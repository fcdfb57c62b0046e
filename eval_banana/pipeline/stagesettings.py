"""The settings a stage rerun (`eb stage <stage>`) runs under: the run's own, from
stages/config.json, with the setting flags and EVAL_BANANA_* variables given now laid over the
settings that stage reads. A flag for a setting another stage reads is refused, naming that
stage, never ignored; so is a selection flag (`--tag`, `--check-dir`, ...) given to a stage
that selects no checks (docs/rerunning-stages.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from eval_banana.core.errors import UsageError
from eval_banana.models.config import Selection
from eval_banana.models.stages import ConfigDoc
from eval_banana.settings.table import SETTINGS, SETTINGS_BY_NAME
from eval_banana.stagefiles.layout import STAGE_NAMES
from eval_banana.stages.config import laid_over

_CONFIG = ("config",)

# Setting -> the stages whose rerun reads it, as the settings table declares them (the config
# stage reads every setting).
READ_BY: dict[str, tuple[str, ...]] = {spec.name: spec.read_by for spec in SETTINGS}

# Where the newest run folder is looked for: every stage takes it, none reads it.
FINDS_THE_RUN = "core.output_dir"


class SelectionFlag(NamedTuple):
    """A flag that selects checks: the `Selection` field it fills and the stages whose rerun
    read it (the config stage records every one). Not a setting (no TOML key, no variable), so
    the settings table does not hold it."""

    field: str
    flag: str
    read_by: tuple[str, ...]


_SELECTING = ("validate", "execute")

SELECTION_FLAGS: tuple[SelectionFlag, ...] = (
    # The folder walked for check files is the discover stage's; validate walks it again when
    # discover.json walked another, and execute picks the plan's checks below it.
    SelectionFlag("check_dir", "--check-dir", ("discover", *_SELECTING)),
    SelectionFlag("check_ids", "--check-id", _SELECTING),
    SelectionFlag("tags", "--tag", _SELECTING),
    SelectionFlag("keyword", "-k", _SELECTING),
    SelectionFlag("shard", "--shard", _SELECTING),
    SelectionFlag("subset", "--subset", _SELECTING),
    SelectionFlag("changed_since", "--changed-since", _SELECTING),
    SelectionFlag("last_failed", "--last-failed", _SELECTING),
    SelectionFlag("select", "--select", _SELECTING),
)


def stage_settings(
    *,
    stage: str,
    config: ConfigDoc,
    cli_values: Mapping[str, object],
    environ: Mapping[str, str],
    selection: Selection | None = None,
) -> ConfigDoc:
    """`config` as the rerun of `stage` reads it: a flag given now, else the run's own flag,
    else an EVAL_BANANA_* variable set now, else what config.json recorded, for each setting
    the stage reads. A flag for a setting, or a selection flag, that only other stages read is
    a usage error."""
    for name in cli_values:
        refuse_other_stage(stage=stage, name=name)
    if selection is not None:
        refuse_unread_selection(stage=stage, selection=selection)
    names = [name for name, stages in READ_BY.items() if stage in stages]
    return laid_over(config=config, names=names, cli_values=cli_values, environ=environ)


def refuse_other_stage(*, stage: str, name: str) -> None:
    """A usage error when the setting `name`, given as a flag, is not read by `stage`."""
    if stage == "config" or name == FINDS_THE_RUN:
        return
    readers = READ_BY.get(name, _CONFIG)
    if stage in readers:
        return
    flag = SETTINGS_BY_NAME[name].flag or name
    reader = readers[0]
    raise UsageError(
        f"{flag} is a setting of the {reader} stage: `eb stage {stage}` does not read it",
        hint=_where_it_applies(flag=flag, reader=reader, stage=stage),
    )


def refuse_unread_selection(*, stage: str, selection: Selection) -> None:
    """A usage error when `selection` (given as flags) sets one that `stage` does not read."""
    if stage == "config":
        return
    unset = Selection()
    for declared in SELECTION_FLAGS:
        given = getattr(selection, declared.field) != getattr(unset, declared.field)
        if given and stage not in declared.read_by:
            raise UsageError(
                f"{declared.flag} selects checks for the {_joined(words=declared.read_by)} stages: "
                f"`eb stage {stage}` does not read it",
                hint=_where_selection_applies(flag=declared.flag, readers=declared.read_by),
            )


def _where_selection_applies(*, flag: str, readers: tuple[str, ...]) -> str:
    commands = [f"`eb stage {reader} {flag} ...`" for reader in readers]
    return (
        f"pass it to {_joined(words=commands, last='or')}, then rerun the stages after that one "
        f"(or make a new run: `eb run {flag} ...`)"
    )


def _joined(*, words: Sequence[str], last: str = "and") -> str:
    """`a`, `a and b`, `a, b and c` (or `or` for `last`)."""
    if len(words) == 1:
        return words[0]
    return f"{', '.join(words[:-1])} {last} {words[-1]}"


def _where_it_applies(*, flag: str, reader: str, stage: str) -> str:
    if STAGE_NAMES.index(reader) > STAGE_NAMES.index(stage):
        return f"pass it to `eb stage {reader}` (or make a new run: `eb run {flag} ...`)"
    after = STAGE_NAMES[STAGE_NAMES.index(reader) + 1 : STAGE_NAMES.index(stage) + 1]
    return (
        f"`eb stage {stage}` works from what the {reader} stage recorded: rerun `eb stage "
        f"{reader} {flag} ...`, then `eb stage " + "`, `eb stage ".join(after) + "` "
        f"(or make a new run: `eb run {flag} ...`)"
    )


def stage_reading(*, name: str) -> str:
    """The first stage whose rerun reads the setting `name` (config for one only it reads)."""
    return READ_BY.get(name, _CONFIG)[0]
