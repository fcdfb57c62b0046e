"""Every setting declared once: TOML key, type, default, env var, CLI flag and help.

`SETTINGS` drives the config stage (eval_banana/stages/config.py), the CLI flags
(`add_setting_arguments`) and the reference docs, so the three cannot drift apart.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from eval_banana.core.jsonvalues import underflows
from eval_banana.core.record import FieldSpec, Record
from eval_banana.core.words import given_value, unprintable
from eval_banana.models.config import (
    CacheSettings,
    CoreSettings,
    DiscoverySettings,
    ExecutionSettings,
    HarnessSettings,
    HistorySettings,
    Settings,
)
from eval_banana.projectstate.patterns import pattern_problem

SettingKind = Literal[
    "path",  # string; empty is refused from every source (but see empty_flag_is_root)
    "optional_path",  # string; empty (env or CLI) means unset
    "threshold",  # number in [0.0, 1.0], booleans and NaN refused
    "integer",  # any integer (booleans refused)
    "positive_integer",  # integer >= 1
    "non_negative_integer",  # integer >= 0, 0 meaning "no limit"
    "count",  # integer >= 0, 0 meaning "none"
    "non_negative_number",  # finite number >= 0, 0 meaning "no limit" (booleans refused)
    "optional_string",  # harness strings: empty means unset
    "folder_names",  # TOML list of folder names (no '/': names are compared, never paths)
    "name_list",  # variable names or prefixes: comma-separated in a flag and a variable alike
    "string_table",  # TOML table of string -> string
    "repeat_count",  # integer from 1 to 20 (samples of a check)
    "boolean",  # true / false; env 1/0/true/false/yes/no/on/off; the flag turns it on
    "choice",  # one of the spec's `choices`
    "glob_list",  # TOML list of project-relative glob patterns (the rules of a check's inputs)
    "agent_tables",  # [agents.<name>] tables, parsed by eval_banana.harness.templates
    "ignored",  # accepted in the file, never used
]


# Settings accepted so older configs keep loading, though they change nothing: `eb init` never
# writes them, so a new project holds no line that has no effect.
NO_EFFECT: frozenset[str] = frozenset({"core.llm_max_input_chars"})

_SECTION_MODELS: dict[str, type[Record]] = {
    "core": CoreSettings,
    "discovery": DiscoverySettings,
    "harness": HarnessSettings,
    "execution": ExecutionSettings,
    "cache": CacheSettings,
    "history": HistorySettings,
}

ENV_POLICIES: tuple[str, ...] = ("inherit", "allowlist")
# How a boolean may be written in an environment variable.
_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
_FALSE_WORDS = frozenset({"0", "false", "no", "off"})
ISOLATION_MODES: tuple[str, ...] = ("detect", "copy", "off")
CHECK_ISOLATION_MODES: tuple[str, ...] = ("off", "detect", "copy")
CACHE_MODES: tuple[str, ...] = ("off", "on", "read-only", "refresh")
HISTORY_MODES: tuple[str, ...] = ("on", "off")
REMOTE_MODES: tuple[str, ...] = ("read-write", "read-only", "off")
LAST_FAILED_NONE: tuple[str, ...] = ("all", "skip")
SCHEDULES: tuple[str, ...] = ("history", "plan")
SHARD_BALANCES: tuple[str, ...] = ("hash", "history")


class SettingValueError(ValueError):
    """A value is unusable; `reason` is the phrase that follows the setting's label."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SettingSpec(NamedTuple):
    """One setting: where it lives in TOML, how it is typed, and how env/CLI reach it."""

    name: str  # dotted: "core.pass_threshold"
    section: str  # TOML table: "core"
    key: str  # key inside the table: "pass_threshold" ("*" for [agents.<name>])
    kind: SettingKind
    env: str | None
    flag: str | None
    commands: tuple[str, ...]  # commands whose parser gets `flag`
    help: str
    metavar: str | None = None
    # The label used in file errors when eval-banana's exact text names it this way.
    toml_label: str | None = None
    choices: tuple[str, ...] = ()  # kind "choice": the values it takes, the default first
    # Kind "path": an empty flag names the project root (documented for --output-dir only);
    # for every other path an empty value is refused alike from the flag, variable and file.
    empty_flag_is_root: bool = False
    # The run's verdict depends on it, or report.json / score.json state it: every shard
    # `eb merge` joins must share it, or the merged run would pass by one shard's rules
    # (docs/scale-out.md, Settings). Budgets (timeouts, fuses) are each job's own.
    shapes_verdict: bool = False
    # The stages whose rerun (`eb stage <stage>`) reads it, flags and variables given then laid
    # over config.json (docs/rerunning-stages.md). The config stage reads every setting; one
    # read only while `eb run` makes its folders or selects its checks is config's alone.
    read_by: tuple[str, ...] = ("config",)
    # How the sources make the value: "highest" takes the highest one given (flag > variable >
    # file > default); "union" joins the names of every one (file, then variable, then flag), so
    # a flag or a variable adds to the project's list of secrets and never drops one of them.
    combine: Literal["highest", "union"] = "highest"

    @property
    def default(self) -> object:
        """The built-in default, read from the pydantic model (the single source)."""
        if self.section == "agents":
            return {}
        return _field(self.section, self.key).get_default(call_default_factory=True)

    @property
    def dest(self) -> str | None:
        """The argparse attribute name of the flag."""
        return self.flag.lstrip("-").replace("-", "_") if self.flag else None

    @property
    def label(self) -> str:
        return self.toml_label or self.name


class SettingFieldMissing(LookupError):
    """A setting of the table with no model field behind it: its help and default are the
    field's, so the table alone cannot declare it (docs/architecture.md, "A new setting")."""


def _field(section: str, key: str) -> FieldSpec:
    """The pydantic field a setting's help and default come from, or why there is none."""
    model = _SECTION_MODELS.get(section)
    if model is None:
        raise SettingFieldMissing(
            f"eval_banana/settings/table.py: the section [{section}] has no settings model; add"
            " one to eval_banana/models/config.py and to _SECTION_MODELS"
        )
    field = model.model_fields.get(key)
    if field is None:
        raise SettingFieldMissing(
            f"eval_banana/settings/table.py declares [{section}] {key}, but {model.__name__} in"
            f" eval_banana/models/config.py has no field `{key}`: add it there with its default"
            " and description (the setting's help)"
        )
    return field


def _help(section: str, key: str, extra: str = "") -> str:
    if section == "agents":
        text = Settings.model_fields["agents"].description or ""
    else:
        text = _field(section, key).description or ""
    return f"{text} {extra}".strip()


# The flag and the variable of a list of names read the same text: `--redact A,B` is
# `EVAL_BANANA_REDACT=A,B`, never one name "A,B" that matches nothing (docs/fail-closed.md).
_NAME_LIST_NOTE = "Comma-separated, in the flag (repeatable, each adding names) as in the env var."
# A "union" list: what the file, the variable and the flag name is masked alike.
_UNION_NOTE = (
    "The names of the file, the env var and the flag are all masked: either of the last two adds"
    " to the file's list, never replaces it (an empty env var adds none)."
)

_RUN = ("run",)
# guard.json records the harness it resolved, and execute runs the judges under that one.
_BY_GUARD = ("guard",)
_BY_EXECUTE = ("execute",)
_RUN_CALIBRATE = ("run", "calibrate")
_RUN_MERGE = ("run", "merge")  # where a run folder and its reports are written
_OUTPUT_COMMANDS = (*_RUN_MERGE, "calibrate")  # eb calibrate's evidence goes there too
_RUN_VALIDATE = ("run", "validate")
# The harness a judge runs under: eb calibrate must be able to measure it under the same.
_HARNESS_COMMANDS = ("run", "validate", "calibrate")

SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        name="core.output_dir",
        section="core",
        key="output_dir",
        kind="path",
        env="EVAL_BANANA_OUTPUT_DIR",
        flag="--output-dir",
        commands=_OUTPUT_COMMANDS,
        metavar="DIR",
        help=_help("core", "output_dir", "An empty --output-dir means the project root."),
        empty_flag_is_root=True,
    ),
    SettingSpec(
        name="core.pass_threshold",
        section="core",
        key="pass_threshold",
        kind="threshold",
        env="EVAL_BANANA_PASS_THRESHOLD",
        flag="--pass-threshold",
        commands=_RUN,
        metavar="RATIO",
        help=_help("core", "pass_threshold"),
        shapes_verdict=True,
        read_by=("score",),
    ),
    SettingSpec(
        name="core.llm_max_input_chars",
        section="core",
        key="llm_max_input_chars",
        kind="integer",
        env="EVAL_BANANA_LLM_MAX_INPUT_CHARS",
        flag=None,
        commands=(),
        help=_help("core", "llm_max_input_chars"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="core.max_parallel_checks",
        section="core",
        key="max_parallel_checks",
        kind="positive_integer",
        env="EVAL_BANANA_MAX_PARALLEL_CHECKS",
        flag="--max-parallel-checks",
        commands=_RUN_CALIBRATE,
        metavar="N",
        help=_help("core", "max_parallel_checks"),
        toml_label="[core] max_parallel_checks",
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="core.check_timeout_seconds",
        section="core",
        key="check_timeout_seconds",
        kind="non_negative_integer",
        env="EVAL_BANANA_CHECK_TIMEOUT_SECONDS",
        flag="--check-timeout-seconds",
        commands=_RUN,
        metavar="SECONDS",
        help=_help("core", "check_timeout_seconds"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="core.run_timeout_seconds",
        section="core",
        key="run_timeout_seconds",
        kind="non_negative_integer",
        env="EVAL_BANANA_RUN_TIMEOUT_SECONDS",
        flag="--run-timeout-seconds",
        commands=_RUN,
        metavar="SECONDS",
        help=_help("core", "run_timeout_seconds"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="core.junit_xml",
        section="core",
        key="junit_xml",
        kind="optional_path",
        env="EVAL_BANANA_JUNIT_XML",
        flag="--junit-xml",
        commands=_RUN_MERGE,
        metavar="PATH",
        help=_help("core", "junit_xml", "Relative paths are joined to the project root."),
        read_by=("report",),
    ),
    SettingSpec(
        name="core.maxfail",
        section="core",
        key="maxfail",
        kind="non_negative_integer",
        env="EVAL_BANANA_MAXFAIL",
        flag="--maxfail",
        commands=_RUN,
        metavar="N",
        help=_help("core", "maxfail", "-x is --maxfail 1."),
        shapes_verdict=True,
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="core.keep_runs",
        section="core",
        key="keep_runs",
        kind="non_negative_integer",
        env="EVAL_BANANA_KEEP_RUNS",
        flag="--keep-runs",
        commands=_RUN_MERGE,
        metavar="N",
        help=_help("core", "keep_runs"),
    ),
    SettingSpec(
        name="core.max_cases",
        section="core",
        key="max_cases",
        kind="positive_integer",
        env="EVAL_BANANA_MAX_CASES",
        flag=None,
        commands=(),
        help=_help("core", "max_cases"),
        read_by=("validate",),
    ),
    SettingSpec(
        name="core.repeats",
        section="core",
        key="repeats",
        kind="repeat_count",
        env="EVAL_BANANA_REPEATS",
        flag="--repeats",
        commands=_RUN_CALIBRATE,
        metavar="N",
        help=_help("core", "repeats"),
        shapes_verdict=True,
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="core.fail_on_flaky",
        section="core",
        key="fail_on_flaky",
        kind="boolean",
        env="EVAL_BANANA_FAIL_ON_FLAKY",
        flag="--fail-on-flaky",
        commands=_RUN,
        help=_help("core", "fail_on_flaky"),
        shapes_verdict=True,
        read_by=("score",),
    ),
    SettingSpec(
        name="core.last_failed_none",
        section="core",
        key="last_failed_none",
        kind="choice",
        choices=LAST_FAILED_NONE,
        env="EVAL_BANANA_LAST_FAILED_NONE",
        flag="--last-failed-none",
        commands=("run", "list"),
        metavar="{all,skip}",
        help=_help("core", "last_failed_none"),
        shapes_verdict=True,
    ),
    SettingSpec(
        name="core.schedule",
        section="core",
        key="schedule",
        kind="choice",
        choices=SCHEDULES,
        env="EVAL_BANANA_SCHEDULE",
        flag="--schedule",
        commands=_RUN,
        metavar="{history,plan}",
        help=_help("core", "schedule"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="core.shard_balance",
        section="core",
        key="shard_balance",
        kind="choice",
        choices=SHARD_BALANCES,
        env="EVAL_BANANA_SHARD_BALANCE",
        flag="--balance",
        commands=("run", "list"),
        metavar="{hash,history}",
        help=_help("core", "shard_balance"),
        read_by=("validate", "execute"),
    ),
    SettingSpec(
        name="discovery.exclude_dirs",
        section="discovery",
        key="exclude_dirs",
        kind="folder_names",
        env=None,
        flag=None,
        commands=(),
        help=_help("discovery", "exclude_dirs"),
        read_by=("discover",),
    ),
    SettingSpec(
        name="harness.agent",
        section="harness",
        key="agent",
        kind="optional_string",
        env="EVAL_BANANA_HARNESS_AGENT",
        flag="--harness-agent",
        commands=_HARNESS_COMMANDS,
        metavar="NAME",
        help=_help("harness", "agent", 'An empty value ("") means no agent.'),
        shapes_verdict=True,
        read_by=_BY_GUARD,
    ),
    SettingSpec(
        name="harness.model",
        section="harness",
        key="model",
        kind="optional_string",
        env="EVAL_BANANA_HARNESS_MODEL",
        flag="--harness-model",
        commands=_HARNESS_COMMANDS,
        metavar="MODEL",
        help=_help("harness", "model", 'An empty value ("") means the agent\'s default.'),
        shapes_verdict=True,
        read_by=_BY_GUARD,
    ),
    SettingSpec(
        name="harness.reasoning_effort",
        section="harness",
        key="reasoning_effort",
        kind="optional_string",
        env="EVAL_BANANA_HARNESS_REASONING_EFFORT",
        flag="--harness-reasoning-effort",
        commands=_HARNESS_COMMANDS,
        metavar="EFFORT",
        help=_help(
            "harness", "reasoning_effort", 'An empty value ("") means the agent\'s default.'
        ),
        shapes_verdict=True,
        read_by=_BY_GUARD,
    ),
    SettingSpec(
        name="harness.timeout_seconds",
        section="harness",
        key="timeout_seconds",
        kind="positive_integer",
        env="EVAL_BANANA_HARNESS_TIMEOUT_SECONDS",
        flag="--harness-timeout-seconds",
        commands=_RUN,
        metavar="SECONDS",
        help=_help("harness", "timeout_seconds"),
        toml_label="[harness] timeout_seconds",
        read_by=_BY_GUARD,
    ),
    SettingSpec(
        name="harness.token_fuse",
        section="harness",
        key="token_fuse",
        kind="non_negative_integer",
        env="EVAL_BANANA_HARNESS_TOKEN_FUSE",
        flag="--token-fuse",
        commands=_RUN_CALIBRATE,  # a calibration spends judge tokens and dollars as a run does
        metavar="TOKENS",
        help=_help("harness", "token_fuse"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="harness.isolation",
        section="harness",
        key="isolation",
        kind="choice",
        choices=ISOLATION_MODES,
        env="EVAL_BANANA_HARNESS_ISOLATION",
        flag="--isolation",
        commands=_RUN,
        metavar="{detect,copy,off}",
        help=_help("harness", "isolation"),
        shapes_verdict=True,
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="harness.isolation_ignore",
        section="harness",
        key="isolation_ignore",
        kind="glob_list",
        env=None,
        flag=None,
        commands=(),
        help=_help("harness", "isolation_ignore"),
        # A judge's write it excuses is an error without it: as the cache and `eb plan` count it.
        shapes_verdict=True,
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="harness.retries",
        section="harness",
        key="retries",
        kind="count",
        env="EVAL_BANANA_HARNESS_RETRIES",
        flag="--retries",
        commands=_RUN,
        metavar="N",
        help=_help("harness", "retries"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="harness.cost_fuse_usd",
        section="harness",
        key="cost_fuse_usd",
        kind="non_negative_number",
        env="EVAL_BANANA_HARNESS_COST_FUSE_USD",
        flag="--cost-fuse-usd",
        commands=_RUN_CALIBRATE,  # a calibration spends judge tokens and dollars as a run does
        metavar="DOLLARS",
        help=_help("harness", "cost_fuse_usd"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="harness.require_calibration",
        section="harness",
        key="require_calibration",
        kind="boolean",
        env="EVAL_BANANA_HARNESS_REQUIRE_CALIBRATION",
        flag="--require-calibration",
        commands=_RUN_VALIDATE,
        help=_help("harness", "require_calibration"),
        shapes_verdict=True,
        read_by=_BY_GUARD,
    ),
    SettingSpec(
        name="harness.min_agreement",
        section="harness",
        key="min_agreement",
        kind="threshold",
        env="EVAL_BANANA_HARNESS_MIN_AGREEMENT",
        flag="--min-agreement",
        commands=_RUN_VALIDATE,
        metavar="RATIO",
        help=_help("harness", "min_agreement"),
        shapes_verdict=True,
        read_by=_BY_GUARD,
    ),
    SettingSpec(
        name="harness.transcripts",
        section="harness",
        key="transcripts",
        kind="boolean",
        env="EVAL_BANANA_HARNESS_TRANSCRIPTS",
        flag=None,
        commands=(),
        help=_help("harness", "transcripts"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="harness.transcript_max_chars",
        section="harness",
        key="transcript_max_chars",
        kind="positive_integer",
        env="EVAL_BANANA_HARNESS_TRANSCRIPT_MAX_CHARS",
        flag=None,
        commands=(),
        help=_help("harness", "transcript_max_chars"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="harness.env",
        section="harness",
        key="env",
        kind="string_table",
        env=None,
        flag=None,
        commands=(),
        help=_help("harness", "env"),
        toml_label="[harness.env]",
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="harness.skills_dir",
        section="harness",
        key="skills_dir",
        kind="ignored",
        env=None,
        flag=None,
        commands=(),
        help=_help("harness", "skills_dir"),
    ),
    SettingSpec(
        name="execution.env",
        section="execution",
        key="env",
        kind="choice",
        choices=ENV_POLICIES,
        env="EVAL_BANANA_ENV_POLICY",
        flag="--env-policy",
        commands=_RUN,
        metavar="{inherit,allowlist}",
        help=_help("execution", "env"),
        shapes_verdict=True,
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="execution.env_allow",
        section="execution",
        key="env_allow",
        kind="name_list",
        env="EVAL_BANANA_ENV_ALLOW",
        flag="--env-allow",
        commands=_RUN,
        metavar="NAME",
        help=_help("execution", "env_allow", _NAME_LIST_NOTE),
        shapes_verdict=True,
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="execution.env_allow_prefixes",
        section="execution",
        key="env_allow_prefixes",
        kind="name_list",
        env="EVAL_BANANA_ENV_ALLOW_PREFIXES",
        flag="--env-allow-prefix",
        commands=_RUN,
        metavar="PREFIX",
        help=_help("execution", "env_allow_prefixes", _NAME_LIST_NOTE),
        shapes_verdict=True,
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="execution.isolation",
        section="execution",
        key="isolation",
        kind="choice",
        choices=CHECK_ISOLATION_MODES,
        env="EVAL_BANANA_EXECUTION_ISOLATION",
        flag="--execution-isolation",
        commands=_RUN,
        metavar="{off,detect,copy}",
        help=_help("execution", "isolation"),
        shapes_verdict=True,
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="execution.redact",
        section="execution",
        key="redact",
        kind="name_list",
        env="EVAL_BANANA_REDACT",
        flag="--redact",
        commands=_RUN,
        metavar="NAME",
        help=_help("execution", "redact", f"{_NAME_LIST_NOTE} {_UNION_NOTE}"),
        read_by=_BY_EXECUTE,
        combine="union",
    ),
    SettingSpec(
        name="cache.mode",
        section="cache",
        key="mode",
        kind="choice",
        choices=CACHE_MODES,
        env="EVAL_BANANA_CACHE_MODE",
        flag="--cache",
        commands=_RUN,
        metavar="{off,on,read-only,refresh}",
        help=_help("cache", "mode"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="cache.dir",
        section="cache",
        key="dir",
        kind="path",
        env="EVAL_BANANA_CACHE_DIR",
        flag="--cache-dir",
        commands=(*_RUN, "cache"),
        metavar="DIR",
        help=_help("cache", "dir"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="cache.max_mb",
        section="cache",
        key="max_mb",
        kind="positive_integer",
        env="EVAL_BANANA_CACHE_MAX_MB",
        flag=None,
        commands=(),
        help=_help("cache", "max_mb"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="cache.replay",
        section="cache",
        key="replay",
        kind="boolean",
        env="EVAL_BANANA_CACHE_REPLAY",
        flag=None,
        commands=(),
        help=_help("cache", "replay"),
    ),
    SettingSpec(
        name="history.mode",
        section="history",
        key="mode",
        kind="choice",
        choices=HISTORY_MODES,
        env="EVAL_BANANA_HISTORY_MODE",
        flag="--history",
        commands=_RUN_MERGE,
        metavar="{on,off}",
        help=_help("history", "mode"),
        read_by=("report",),
    ),
    SettingSpec(
        name="history.dir",
        section="history",
        key="dir",
        kind="path",
        env="EVAL_BANANA_HISTORY_DIR",
        flag="--history-dir",
        commands=(*_RUN_MERGE, "history", "cache"),
        metavar="DIR",
        help=_help("history", "dir"),
        read_by=("report",),
    ),
    SettingSpec(
        name="history.keep",
        section="history",
        key="keep",
        kind="positive_integer",
        env="EVAL_BANANA_HISTORY_KEEP",
        flag=None,
        commands=(),
        help=_help("history", "keep"),
        read_by=("report",),
    ),
    SettingSpec(
        name="cache.remote",
        section="cache",
        key="remote",
        kind="optional_string",
        env="EVAL_BANANA_CACHE_REMOTE",
        flag="--cache-remote",
        commands=(*_RUN, "cache"),
        metavar="URL",
        help=_help("cache", "remote"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="cache.remote_mode",
        section="cache",
        key="remote_mode",
        kind="choice",
        choices=REMOTE_MODES,
        env="EVAL_BANANA_CACHE_REMOTE_MODE",
        flag="--cache-remote-mode",
        commands=(*_RUN, "cache"),
        metavar="{read-write,read-only,off}",
        help=_help("cache", "remote_mode"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="cache.remote_endpoint",
        section="cache",
        key="remote_endpoint",
        kind="optional_string",
        env="EVAL_BANANA_CACHE_REMOTE_ENDPOINT",
        flag=None,
        commands=(),
        help=_help("cache", "remote_endpoint"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="cache.require_signature",
        section="cache",
        key="require_signature",
        kind="boolean",
        env="EVAL_BANANA_CACHE_REQUIRE_SIGNATURE",
        flag=None,
        commands=(),
        help=_help("cache", "require_signature"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="cache.remote_timeout_seconds",
        section="cache",
        key="remote_timeout_seconds",
        kind="positive_integer",
        env="EVAL_BANANA_CACHE_REMOTE_TIMEOUT_SECONDS",
        flag=None,
        commands=(),
        help=_help("cache", "remote_timeout_seconds"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="cache.remote_concurrency",
        section="cache",
        key="remote_concurrency",
        kind="positive_integer",
        env="EVAL_BANANA_CACHE_REMOTE_CONCURRENCY",
        flag=None,
        commands=(),
        help=_help("cache", "remote_concurrency"),
        read_by=_BY_EXECUTE,
    ),
    SettingSpec(
        name="agents",
        section="agents",
        key="*",
        kind="agent_tables",
        env=None,
        flag=None,
        commands=(),
        help=_help("agents", "*"),
    ),
)

SETTINGS_BY_NAME: dict[str, SettingSpec] = {spec.name: spec for spec in SETTINGS}
# The settings every shard of a merged run must share, in table order.
VERDICT_SETTINGS: tuple[SettingSpec, ...] = tuple(spec for spec in SETTINGS if spec.shapes_verdict)


def variable_of(name: str) -> str:
    """The environment variable of the setting `name` (one that has a variable)."""
    variable = SETTINGS_BY_NAME[name].env
    if variable is None:
        raise KeyError(f"the setting {name} has no environment variable")
    return variable


# The TOML tables the file may contain, and the keys each allows.
SECTIONS: tuple[str, ...] = (
    "core",
    "discovery",
    "harness",
    "execution",
    "cache",
    "history",
    "agents",
)
SECTION_KEYS: dict[str, tuple[str, ...]] = {
    section: tuple(spec.key for spec in SETTINGS if spec.section == section)
    for section in SECTIONS
    if section != "agents"
}
# Keys eval-banana accepted in [core] and ignored; we accept them with one warning.
LEGACY_CORE_KEYS: tuple[str, ...] = (
    "deterministic_timeout_seconds",
    "llm_timeout_seconds",
    "task_timeout_seconds",
)


# --- value checks shared by every source -------------------------------------------------------


def show(value: object) -> str:
    """A value as it would be written in TOML/JSON, for messages."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        return repr(value)


def _integer(value: object) -> int:
    # bool is an int subclass in Python; a TOML `true` is not a number.
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettingValueError("must be an integer")
    return value


def _parse_integer_text(text: str, reason: str) -> int:
    # int() semantics (whitespace, '+', '_' separators), as eval-banana reads integer variables
    # (docs/compatibility.md#configuration).
    try:
        return int(text)
    except ValueError:
        raise SettingValueError(reason) from None


def _number_text(text: str, reason: str) -> float:
    """float() of a variable's or a flag's text; SettingValueError with `reason` for text that
    is no number, and for a number too close to zero to read (`1e-400`), which float() takes
    as 0: a threshold or limit nobody wrote (0 is "no limit" for some)."""
    try:
        number = float(text)
    except ValueError:
        raise SettingValueError(reason) from None
    if number == 0.0 and underflows(text.strip()):
        raise SettingValueError(
            "must be 0 or a number a program reads (at least about 5e-324): read, it would be 0"
        )
    return number


def _check_threshold(number: float) -> float:
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise SettingValueError("must be between 0.0 and 1.0")
    return float(number)


def _names(items: list[object]) -> list[str]:
    for item in items:
        if not isinstance(item, str) or not item or "=" in item:
            raise SettingValueError("must be a list of non-empty names without '='")
    return [str(item) for item in items]


def _folder_name(entry: str) -> str:
    """One entry of a list of folder names, a trailing `/` dropped (`vendor/` names vendor);
    a path can never match, as only the names of the folders walked are compared."""
    name = entry[:-1] if entry.endswith("/") else entry
    if name in ("", ".", ".."):
        raise SettingValueError(f"entry {show(entry)} is no folder name")
    if "/" in name:
        leaf = next((part for part in reversed(name.split("/")) if part not in ("", ".")), "")
        instead = f"; write {show(leaf)} to leave out every folder of that name" if leaf else ""
        raise SettingValueError(
            f"entry {show(entry)} is a path, which never matches: only folder names are "
            f"compared{instead}"
        )
    return name


def _split_names(text: str) -> list[object]:
    """A variable's or a flag's list of names: comma-separated; blanks around items and empty
    items are dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]


def quoted_choices(choices: tuple[str, ...]) -> str:
    """`'a', 'b' or 'c'`: how messages name the values a choice takes."""
    quoted = [f"'{choice}'" for choice in choices]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


# The kinds whose text names something: a path, an agent, a model, a URL, a folder name, a
# pattern. A control character in one is never meant, and a line break, shown back in a message
# or a report line, would start a line of its own (which GitHub Actions runs as a `::` workflow
# command). `[harness.env]` values are set verbatim for the agent and may hold anything.
_NAMING_KINDS = frozenset(
    {"path", "optional_path", "optional_string", "folder_names", "name_list", "glob_list"}
)


def coerce_typed(*, spec: SettingSpec, value: object) -> object:
    """Check a typed value (from TOML or a Python caller); return it normalized."""
    checked = _coerce_typed(spec=spec, value=value)
    if spec.kind in _NAMING_KINDS:
        texts = checked if isinstance(checked, list) else [checked]
        for text in texts:
            found = unprintable(text) if isinstance(text, str) else None
            if found is not None:
                # Named in a message or a report, it would start a line of its own or fail to
                # be written (a path that is not UTF-8 comes only from the environment).
                raise SettingValueError(f"must not hold {found}")
    return checked


def _coerce_typed(*, spec: SettingSpec, value: object) -> object:
    kind = spec.kind
    if kind in ("path", "optional_path"):
        if not isinstance(value, str):
            raise SettingValueError("must be a string")
        return None if kind == "optional_path" and value == "" else value
    if kind == "optional_string":
        if not isinstance(value, str):
            raise SettingValueError("Expected a string value")
        return value or None
    if kind == "threshold":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SettingValueError("must be a number")
        return _check_threshold(float(value))
    if kind == "integer":
        return _integer(value)
    if kind == "positive_integer":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SettingValueError("must be a positive integer")
        return value
    if kind == "non_negative_integer":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SettingValueError("must be a non-negative integer (0 means no limit)")
        return value
    if kind == "count":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SettingValueError("must be a non-negative integer")
        return value
    if kind == "non_negative_number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SettingValueError("must be a non-negative number (0 means no limit)")
        number = float(value)
        if not math.isfinite(number) or number < 0:
            raise SettingValueError("must be a non-negative number (0 means no limit)")
        return number
    if kind == "folder_names":
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise SettingValueError("must be a list of strings")
        return [_folder_name(entry) for entry in value]
    if kind == "name_list":
        if not isinstance(value, list | tuple):
            raise SettingValueError("must be a list of non-empty names without '='")
        return _names(list(value))
    if kind == "string_table":
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise SettingValueError("must be a TOML table of string values")
        return dict(value)
    if kind == "glob_list":
        if not isinstance(value, list | tuple):
            raise SettingValueError("must be a list of glob patterns")
        for item in value:
            problem = pattern_problem(item)
            if problem is not None:
                raise SettingValueError(f"pattern {show(item)} {problem}")
        return list(value)
    if kind == "choice":
        if value not in spec.choices:
            raise SettingValueError(f"must be {quoted_choices(spec.choices)}")
        return value
    if kind == "repeat_count":
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 20:
            raise SettingValueError("must be an integer from 1 to 20")
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise SettingValueError("must be true or false")
        return value
    raise SettingValueError("cannot be set this way")


def coerce_text(*, spec: SettingSpec, text: str) -> object:
    """Parse a textual value (an env var, a CLI flag) and check it like a typed one."""
    kind = spec.kind
    if kind == "threshold":
        return _check_threshold(_number_text(text, "must be a number"))
    if kind == "integer":
        return _parse_integer_text(text, "must be an integer")
    if kind == "positive_integer":
        return coerce_typed(
            spec=spec, value=_parse_integer_text(text, "must be a positive integer")
        )
    if kind == "non_negative_integer":
        reason = "must be a non-negative integer (0 means no limit)"
        return coerce_typed(spec=spec, value=_parse_integer_text(text, reason))
    if kind == "count":
        return coerce_typed(
            spec=spec, value=_parse_integer_text(text, "must be a non-negative integer")
        )
    if kind == "non_negative_number":
        number = _number_text(text, "must be a non-negative number (0 means no limit)")
        return coerce_typed(spec=spec, value=number)
    if kind == "repeat_count":
        return coerce_typed(
            spec=spec, value=_parse_integer_text(text, "must be an integer from 1 to 20")
        )
    if kind == "boolean":
        word = text.strip().lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
        raise SettingValueError("must be true or false (1, 0, yes, no, on, off)")
    if kind == "name_list":
        return _names(_split_names(text))
    return coerce_typed(spec=spec, value=text)


# --- argparse ----------------------------------------------------------------------------------


def _argparse_type(spec: SettingSpec) -> Callable[[str], object]:
    def convert(text: str) -> object:
        try:
            return coerce_text(spec=spec, text=text)
        except SettingValueError as exc:
            raise argparse.ArgumentTypeError(f"{exc.reason}, got {given_value(text)}") from None

    convert.__name__ = spec.kind  # argparse names the type in some messages
    return convert


def _argparse_names(text: str) -> list[str]:
    """One `--redact`-style flag's names: comma-separated, as its variable reads them."""
    names = _split_names(text)
    reason = "must be non-empty names without '=', comma-separated"
    try:
        # The variable's empty text gives no names (it clears a list whose highest source
        # wins, and adds nothing to a "union" one); a flag given must add names.
        if not names:
            raise SettingValueError(reason)
        return _names(names)
    except SettingValueError:
        raise argparse.ArgumentTypeError(f"{reason}, got {text!r}") from None


def add_setting_arguments(*, parser: argparse.ArgumentParser, command: str) -> None:
    """Add the setting flags `command` accepts; an absent flag leaves no attribute behind."""
    for spec in SETTINGS:
        if spec.flag is None or command not in spec.commands:
            continue
        env_note = f" [env: {spec.env}]" if spec.env else ""
        common: dict[str, Any] = {
            "dest": spec.dest,
            "default": argparse.SUPPRESS,
            "help": f"{spec.help}{env_note}".replace("%", "%%"),
            "metavar": spec.metavar,
        }
        if spec.kind == "name_list":
            parser.add_argument(
                spec.flag,
                action="extend",
                type=_argparse_names,
                **common,
            )
        elif spec.kind == "choice":
            parser.add_argument(spec.flag, choices=spec.choices, **common)
        elif spec.kind in ("path", "optional_path", "optional_string"):
            parser.add_argument(spec.flag, **common)
        elif spec.kind == "boolean":
            # A switch: given, the setting is on; absent, the env var, file or default decide.
            del common["metavar"]
            parser.add_argument(spec.flag, action="store_const", const=True, **common)
        else:
            parser.add_argument(spec.flag, type=_argparse_type(spec), **common)


def cli_values_from_namespace(*, namespace: argparse.Namespace) -> dict[str, object]:
    """Dotted setting name -> value, for the setting flags given on the command line."""
    values: dict[str, object] = {}
    for spec in SETTINGS:
        if spec.dest is not None and hasattr(namespace, spec.dest):
            value = getattr(namespace, spec.dest)
            if value is not None:
                values[spec.name] = value
    return values
