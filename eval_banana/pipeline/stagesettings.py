"""The settings a stage rerun (`eb stage <stage>`) runs under: the run's own, from
stages/config.json, with the setting flags and EVAL_BANANA_* variables given now laid over the
settings that stage reads. A flag for a setting another stage reads is refused, naming that
stage, never ignored (docs/rerunning-stages.md)."""

from __future__ import annotations

from collections.abc import Mapping

from eval_banana.core.errors import UsageError
from eval_banana.models.stages import ConfigDoc
from eval_banana.settings.table import SETTINGS_BY_NAME
from eval_banana.stagefiles.layout import STAGE_NAMES
from eval_banana.stages.config import laid_over

_EXECUTE = ("execute",)
_GUARD = ("guard",)
# Read while `eb run` makes or prunes its folders, or while the config stage selects checks:
# only a rerun of config takes them again.
_CONFIG = ("config",)

READ_BY: dict[str, tuple[str, ...]] = {
    "core.pass_threshold": ("score",),
    "core.llm_max_input_chars": _EXECUTE,
    "core.max_parallel_checks": _EXECUTE,
    "core.check_timeout_seconds": _EXECUTE,
    "core.run_timeout_seconds": _EXECUTE,
    "core.junit_xml": ("report",),
    "core.maxfail": _EXECUTE,
    "core.keep_runs": _CONFIG,
    "core.max_cases": ("validate",),
    "core.repeats": _EXECUTE,
    "core.fail_on_flaky": ("score",),
    "core.last_failed_none": _CONFIG,
    "core.schedule": _EXECUTE,
    "core.shard_balance": ("validate", "execute"),
    "discovery.exclude_dirs": ("discover",),
    # guard.json records the harness it resolved, and execute runs the judges under that one.
    "harness.agent": _GUARD,
    "harness.model": _GUARD,
    "harness.reasoning_effort": _GUARD,
    "harness.timeout_seconds": _GUARD,
    "harness.require_calibration": _GUARD,
    "harness.min_agreement": _GUARD,
    "harness.token_fuse": _EXECUTE,
    "harness.isolation": _EXECUTE,
    "harness.isolation_ignore": _EXECUTE,
    "harness.retries": _EXECUTE,
    "harness.cost_fuse_usd": _EXECUTE,
    "harness.transcripts": _EXECUTE,
    "harness.transcript_max_chars": _EXECUTE,
    "harness.env": _EXECUTE,
    "execution.env": _EXECUTE,
    "execution.env_allow": _EXECUTE,
    "execution.env_allow_prefixes": _EXECUTE,
    "execution.isolation": _EXECUTE,
    "execution.redact": _EXECUTE,
    "cache.mode": _EXECUTE,
    "cache.dir": _EXECUTE,
    "cache.max_mb": _EXECUTE,
    "cache.replay": _CONFIG,
    "cache.remote": _EXECUTE,
    "cache.remote_mode": _EXECUTE,
    "cache.remote_endpoint": _EXECUTE,
    "cache.require_signature": _EXECUTE,
    "cache.remote_timeout_seconds": _EXECUTE,
    "cache.remote_concurrency": _EXECUTE,
    "history.mode": ("report",),
    "history.dir": ("report",),
    "history.keep": ("report",),
}
"""Setting -> the stages whose rerun reads it (the config stage reads every setting)."""

# Where the newest run folder is looked for: every stage takes it, none reads it.
FINDS_THE_RUN = "core.output_dir"


def stage_settings(
    *, stage: str, config: ConfigDoc, cli_values: Mapping[str, object], environ: Mapping[str, str]
) -> ConfigDoc:
    """`config` as the rerun of `stage` reads it: a flag given now, else the run's own flag,
    else an EVAL_BANANA_* variable set now, else what config.json recorded, for each setting
    the stage reads. A flag for a setting only another stage reads is a usage error."""
    for name in cli_values:
        refuse_other_stage(stage=stage, name=name)
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
