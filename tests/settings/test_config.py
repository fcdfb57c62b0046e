"""Config stage: file lookup, layering, sources, every error text, and the setting flags."""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

from eval_banana.core.errors import ConfigError
from eval_banana.core.files import sha256_file
from eval_banana.models.config import (
    DEFAULT_EXCLUDE_DIRS,
    CacheSettings,
    CoreSettings,
    DiscoverySettings,
    ExecutionSettings,
    HarnessSettings,
    Selection,
)
from eval_banana.models.stages import ConfigDoc
from eval_banana.settings.configfile import find_config_file
from eval_banana.settings.table import (
    SETTINGS,
    SETTINGS_BY_NAME,
    add_setting_arguments,
    cli_values_from_namespace,
)
from eval_banana.stagefiles.read import read_stage
from eval_banana.stages.config import resolve_config, write_config_stage
from tests.conftest import EbResult
from tests.processes import REPO, eb_process

# --- helpers -----------------------------------------------------------------------------------


def write_config(root: Path, text: str) -> Path:
    path = root / ".eval-banana" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def resolve(
    cwd: Path,
    *,
    cli: dict[str, object] | None = None,
    env: dict[str, str] | None = None,
    no_project_config: bool = False,
    selection: Selection | None = None,
) -> ConfigDoc:
    return resolve_config(
        cwd=cwd,
        cli_values=cli or {},
        environ=env or {},
        no_project_config=no_project_config,
        selection=selection or Selection(),
        run_id="run-1",
    )


def parser_for(command: str) -> argparse.ArgumentParser:
    # exit_on_error=False: a bad flag value raises ArgumentError instead of exiting.
    parser = argparse.ArgumentParser(prog="eb", exit_on_error=False)
    add_setting_arguments(parser=parser, command=command)
    return parser


def cli_from_argv(argv: list[str], command: str = "run") -> dict[str, object]:
    return cli_values_from_namespace(namespace=parser_for(command).parse_args(argv))


def config_error(cwd: Path, **kwargs: object) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        resolve(cwd, **kwargs)  # type: ignore[arg-type]
    assert info.value.exit_code == 2
    return info.value


def setting(doc: ConfigDoc, name: str) -> object:
    section, key = name.split(".")
    return getattr(getattr(doc.settings, section), key)


# --- precedence for each setting -----------------------------------------------------------------

# name, TOML literal, value from the file, env text, value from env, CLI argv (or a Python
# value when the setting has no flag), value from the CLI.
PRECEDENCE = [
    (
        "core.output_dir",
        '"file-out"',
        "file-out",
        "env-out",
        "env-out",
        ["--output-dir", "cli-out"],
        "cli-out",
    ),
    ("core.pass_threshold", "0.5", 0.5, "0.25", 0.25, ["--pass-threshold", "0.75"], 0.75),
    ("core.llm_max_input_chars", "10", 10, "20", 20, 30, 30),
    ("core.max_parallel_checks", "2", 2, "3", 3, ["--max-parallel-checks", "5"], 5),
    ("core.check_timeout_seconds", "10", 10, "0", 0, ["--check-timeout-seconds", "30"], 30),
    ("core.run_timeout_seconds", "60", 60, "120", 120, ["--run-timeout-seconds", "7"], 7),
    ("core.maxfail", "3", 3, "2", 2, ["--maxfail", "5"], 5),
    ("core.keep_runs", "3", 3, "2", 2, ["--keep-runs", "5"], 5),
    (
        "core.junit_xml",
        '"file.xml"',
        "file.xml",
        "env.xml",
        "env.xml",
        ["--junit-xml", "cli.xml"],
        "cli.xml",
    ),
    ("discovery.exclude_dirs", '["a"]', ["a"], None, None, ["b"], ["b"]),
    (
        "harness.agent",
        '"codex"',
        "codex",
        "claude",
        "claude",
        ["--harness-agent", "gemini"],
        "gemini",
    ),
    (
        "harness.model",
        '"m-file"',
        "m-file",
        "m-env",
        "m-env",
        ["--harness-model", "m-cli"],
        "m-cli",
    ),
    (
        "harness.reasoning_effort",
        '"low"',
        "low",
        "medium",
        "medium",
        ["--harness-reasoning-effort", "high"],
        "high",
    ),
    ("harness.timeout_seconds", "10", 10, "20", 20, ["--harness-timeout-seconds", "30"], 30),
    ("harness.token_fuse", "100", 100, "200", 200, ["--token-fuse", "300"], 300),
    ("harness.retries", "2", 2, "1", 1, ["--retries", "3"], 3),
    ("harness.cost_fuse_usd", "2", 2.0, "0.5", 0.5, ["--cost-fuse-usd", "1.25"], 1.25),
    ("harness.env", '{ A = "1" }', {"A": "1"}, None, None, {"B": "2"}, {"B": "2"}),
    (
        "execution.env",
        '"allowlist"',
        "allowlist",
        "inherit",
        "inherit",
        ["--env-policy", "allowlist"],
        "allowlist",
    ),
    (
        "execution.env_allow",
        '["A"]',
        ["A"],
        " B , C,",
        ["B", "C"],
        ["--env-allow", "D", "--env-allow", "E"],
        ["D", "E"],
    ),
    (
        "execution.env_allow_prefixes",
        '["P_"]',
        ["P_"],
        "Q_",
        ["Q_"],
        ["--env-allow-prefix", "R_"],
        ["R_"],
    ),
    (
        "execution.redact",
        '["MY_DSN"]',
        ["MY_DSN"],
        "A_*, B",
        ["MY_DSN", "A_*", "B"],  # a "union" setting: each source adds its names
        ["--redact", "C, D_*", "--redact", "E"],
        ["MY_DSN", "A_*", "B", "C", "D_*", "E"],
    ),
    ("cache.mode", '"on"', "on", "read-only", "read-only", ["--cache", "refresh"], "refresh"),
    ("harness.isolation", '"copy"', "copy", "off", "off", ["--isolation", "detect"], "detect"),
    ("harness.isolation_ignore", '["a/**"]', ["a/**"], None, None, ["b/**"], ["b/**"]),
    (
        "execution.isolation",
        '"detect"',
        "detect",
        "copy",
        "copy",
        ["--execution-isolation", "off"],
        "off",
    ),
    ("cache.dir", '"c1"', "c1", "c2", "c2", ["--cache-dir", "c3"], "c3"),
    ("cache.max_mb", "10", 10, "20", 20, 30, 30),
    ("cache.replay", "false", False, "1", True, False, False),
    ("history.mode", '"off"', "off", "on", "on", ["--history", "off"], "off"),
    ("history.dir", '"h1"', "h1", "h2", "h2", ["--history-dir", "h3"], "h3"),
    ("history.keep", "10", 10, "20", 20, 30, 30),
    (
        "cache.remote",
        '"/mnt/shared/eb"',
        "/mnt/shared/eb",
        "s3://bucket/eb",
        "s3://bucket/eb",
        ["--cache-remote", "https://cache.example/eb"],
        "https://cache.example/eb",
    ),
    (
        "cache.remote_mode",
        '"read-only"',
        "read-only",
        "off",
        "off",
        ["--cache-remote-mode", "read-write"],
        "read-write",
    ),
    (
        "cache.remote_endpoint",
        '"http://a:9000"',
        "http://a:9000",
        "http://b",
        "http://b",
        "http://c",
        "http://c",
    ),
    ("cache.require_signature", "true", True, "no", False, True, True),
    ("cache.remote_timeout_seconds", "3", 3, "4", 4, 5, 5),
    ("cache.remote_concurrency", "2", 2, "16", 16, 4, 4),
    ("core.repeats", "3", 3, "4", 4, ["--repeats", "5"], 5),
    ("core.max_cases", "10", 10, "20", 20, 30, 30),
    ("core.fail_on_flaky", "true", True, "1", True, ["--fail-on-flaky"], True),
    (
        "core.last_failed_none",
        '"skip"',
        "skip",
        "all",
        "all",
        ["--last-failed-none", "skip"],
        "skip",
    ),
    ("core.schedule", '"plan"', "plan", "history", "history", ["--schedule", "plan"], "plan"),
    (
        "core.shard_balance",
        '"history"',
        "history",
        "hash",
        "hash",
        ["--balance", "history"],
        "history",
    ),
    ("harness.require_calibration", "true", True, "yes", True, ["--require-calibration"], True),
    ("harness.min_agreement", "0.5", 0.5, "0.75", 0.75, ["--min-agreement", "0.9"], 0.9),
    ("harness.transcripts", "false", False, "1", True, False, False),
    ("harness.transcript_max_chars", "10", 10, "20", 20, 30, 30),
]


def test_precedence_table_covers_every_setting() -> None:
    covered = {row[0] for row in PRECEDENCE}
    expected = {s.name for s in SETTINGS if s.kind not in ("ignored", "agent_tables")}
    assert covered == expected


@pytest.mark.parametrize("row", PRECEDENCE, ids=[row[0] for row in PRECEDENCE])
def test_precedence_cli_over_env_over_project_over_default(tmp_path: Path, row: tuple) -> None:  # type: ignore[type-arg]
    name, literal, file_value, env_text, env_value, cli_input, cli_value = row
    spec = SETTINGS_BY_NAME[name]
    section, key = name.split(".")

    default_doc = resolve(tmp_path)
    assert setting(default_doc, name) == spec.default
    assert default_doc.sources[name] == "default"

    if key == "env" and section == "harness":
        write_config(tmp_path, f"[harness]\nenv = {literal}\n")
    else:
        write_config(tmp_path, f"[{section}]\n{key} = {literal}\n")
    file_doc = resolve(tmp_path)
    assert setting(file_doc, name) == file_value
    assert file_value != spec.default
    assert file_doc.sources[name] == "project"

    env = {spec.env: env_text} if spec.env else {}
    if spec.env:
        env_doc = resolve(tmp_path, env=env)
        assert setting(env_doc, name) == env_value
        assert env_doc.sources[name] == "env"

    if isinstance(cli_input, list) and spec.flag:
        cli = cli_from_argv(cli_input)
    else:
        cli = {name: cli_input}
    cli_doc = resolve(tmp_path, env=env, cli=cli)
    assert setting(cli_doc, name) == cli_value
    assert cli_doc.sources[name] == "cli"
    # Other settings keep their own source.
    other = "core.output_dir" if name != "core.output_dir" else "core.pass_threshold"
    assert cli_doc.sources[other] == "default"


def test_every_model_field_is_declared_once() -> None:
    models: dict[str, type[BaseModel]] = {
        "core": CoreSettings,
        "discovery": DiscoverySettings,
        "harness": HarnessSettings,
        "execution": ExecutionSettings,
        "cache": CacheSettings,
    }
    declared = {s.name for s in SETTINGS}
    for section, model in models.items():
        for key in model.model_fields:
            assert f"{section}.{key}" in declared
    assert len(declared) == len(SETTINGS)


def test_defaults_come_from_the_models(tmp_path: Path) -> None:
    doc = resolve(tmp_path)
    assert doc.settings.core.pass_threshold == 1.0
    assert doc.settings.core.check_timeout_seconds == 900  # our default limit; eval-banana had none
    assert doc.settings.core.run_timeout_seconds == 0
    assert doc.settings.core.max_parallel_checks == 4
    assert doc.settings.harness.timeout_seconds == 300
    assert doc.settings.harness.agent is None
    assert doc.settings.discovery.exclude_dirs == list(DEFAULT_EXCLUDE_DIRS)
    assert doc.settings.execution.env == "inherit"
    assert doc.settings.agents == {}
    assert set(doc.sources.values()) == {"default"}


def test_exclude_dirs_replaces_the_default_list(tmp_path: Path) -> None:
    write_config(tmp_path, '[discovery]\nexclude_dirs = ["only"]\n')
    assert resolve(tmp_path).settings.discovery.exclude_dirs == ["only"]  # not merged


# --- file lookup and project root -----------------------------------------------------------------


def test_upward_walk_finds_the_nearest_file(tmp_path: Path) -> None:
    outer = write_config(tmp_path, "[core]\nmax_parallel_checks = 2\n")
    inner = write_config(tmp_path / "a", "[core]\nmax_parallel_checks = 3\n")
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    assert find_config_file(start=deep) == inner
    doc = resolve(deep)
    assert doc.config_file == str(inner)
    assert doc.project_root == str(tmp_path / "a")  # the file's grandparent
    assert doc.settings.core.max_parallel_checks == 3
    assert find_config_file(start=tmp_path) == outer


def test_directory_named_config_toml_is_skipped(tmp_path: Path) -> None:
    outer = write_config(tmp_path, "[core]\nmax_parallel_checks = 2\n")
    (tmp_path / "a" / ".eval-banana" / "config.toml").mkdir(parents=True)
    assert find_config_file(start=tmp_path / "a") == outer
    assert resolve(tmp_path / "a").project_root == str(tmp_path)


def test_no_file_means_cwd_is_the_project_root(tmp_path: Path) -> None:
    start = tmp_path / "x"
    start.mkdir()
    assert find_config_file(start=start) is None
    doc = resolve(start)
    assert doc.config_file is None
    assert doc.project_root == str(start.resolve())


def test_no_project_config_reads_no_file(tmp_path: Path) -> None:
    write_config(tmp_path, "this is [ not toml\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    doc = resolve(sub, no_project_config=True, env={"EVAL_BANANA_MAX_PARALLEL_CHECKS": "7"})
    assert doc.config_file is None
    assert doc.no_project_config is True
    assert doc.project_root == str(sub.resolve())  # not the folder holding the file
    assert doc.settings.core.max_parallel_checks == 7
    assert doc.sources["core.max_parallel_checks"] == "env"


def test_relative_cwd_is_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(tmp_path, "")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    doc = resolve(Path("sub"))
    assert doc.project_root == str(tmp_path.resolve())


def test_cwd_must_be_a_directory(tmp_path: Path) -> None:
    error = config_error(tmp_path / "missing")
    assert "--cwd is not a directory" in error.message


# --- the document --------------------------------------------------------------------------------


def test_envelope_and_selection(tmp_path: Path) -> None:
    selection = Selection(check_ids=["a", "b_*"], check_dir="checks", tags=["t"], keyword="x")
    doc = resolve(tmp_path, selection=selection)
    dumped = doc.model_dump(mode="json", by_alias=True)
    assert dumped["$schema"] == "https://eval-banana.dev/schemas/stages/config.schema.json"
    assert dumped["stage"] == "config"
    assert dumped["schema_version"] == 1
    assert dumped["inputs"] == {}
    assert dumped["run_id"] == "run-1"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", dumped["created_at"])
    assert dumped["selection"] == {
        "check_ids": ["a", "b_*"],
        "check_dir": "checks",
        "tags": ["t"],
        "keyword": "x",
        "shard": None,
        "subset": None,
        "changed_since": None,
        "changed_since_commit": None,
        "last_failed": False,
        "last_failed_run_id": None,
        "last_failed_ids": None,
        "select": None,
    }
    assert dumped["settings"]["cache"] == {
        "mode": "off",
        "dir": ".eval-banana/cache",
        "max_mb": 256,
        "replay": True,
        "remote": None,
        "remote_mode": "read-write",
        "remote_endpoint": None,
        "require_signature": False,
        "remote_timeout_seconds": 10,
        "remote_concurrency": 8,
    }


def test_write_config_stage_round_trips(tmp_path: Path) -> None:
    write_config(tmp_path, '[core]\npass_threshold = 0.5\n[harness]\nagent = "claude"\n')
    doc = resolve(tmp_path, env={"EVAL_BANANA_HARNESS_MODEL": "m"})
    run_dir = tmp_path / "run"
    digest = write_config_stage(run_dir=run_dir, doc=doc)
    path = run_dir / "stages" / "config.json"
    assert digest == sha256_file(path=path)
    again = read_stage(run_dir=run_dir, stage="config")
    assert again == doc
    assert json.loads(path.read_text())["sources"]["harness.model"] == "env"


def test_no_value_of_other_variables_reaches_the_document(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        '[harness]\nagent = "custom"\n[harness.env]\nTOKEN = "{env:MY_SECRET}"\n'
        '[agents.custom]\ncommand = ["x"]\nprovider_env = { K = "{env:MY_SECRET}" }\n',
    )
    doc = resolve(tmp_path, env={"MY_SECRET": "hunter2-value", "EVAL_BANANA_MODEL_X": "zz"})
    digest_dir = tmp_path / "run"
    write_config_stage(run_dir=digest_dir, doc=doc)
    text = (digest_dir / "stages" / "config.json").read_text()
    assert "hunter2-value" not in text
    assert "{env:MY_SECRET}" in text  # recorded as written
    assert doc.settings.agents["custom"].provider_env == {"K": "{env:MY_SECRET}"}


def test_agents_tables_are_parsed_and_checked(tmp_path: Path) -> None:
    write_config(tmp_path, "[agents.claude]\nshared_flags = []\n")
    doc = resolve(tmp_path)
    assert doc.settings.agents["claude"].shared_flags == []
    assert doc.settings.agents["claude"].command == ["claude"]  # merged over the built-in
    assert doc.sources["agents"] == "project"
    write_config(tmp_path, "[agents.mine]\nshared_flags = []\n")
    error = config_error(tmp_path)
    assert "[agents.mine] command is required for custom agents" in error.message


# --- errors: TOML and legacy sections ------------------------------------------------------------


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[core\n")
    error = config_error(tmp_path)
    assert error.message.startswith(f"Invalid TOML in {path}: ")
    assert error.file == str(path)


def test_a_config_saved_by_windows_tools_is_read(tmp_path: Path) -> None:
    # A byte order mark first (Notepad before 2019, Windows PowerShell's Out-File) and CRLF
    # line ends: tomllib read the mark as "Invalid statement (at line 1, column 1)".
    path = write_config(tmp_path, "")
    path.write_bytes(b"\xef\xbb\xbf[core]\r\npass_threshold = 0.5\r\nmaxfail = 3\r\n")
    doc = resolve(tmp_path)
    assert (doc.settings.core.pass_threshold, doc.settings.core.maxfail) == (0.5, 3)
    assert doc.sources["core.pass_threshold"] == "project"


def test_a_utf16_config_is_told_as_utf16(tmp_path: Path) -> None:
    path = write_config(tmp_path, "")
    path.write_bytes("[core]\nmaxfail = 3\n".encode("utf-16"))
    error = config_error(tmp_path)
    assert error.message == (
        f"Invalid TOML in {path}: the file is UTF-16 text, not UTF-8 (it starts with a UTF-16 "
        "byte order mark)"
    )
    assert error.hint is not None and error.hint.startswith("save the file as UTF-8")


@pytest.mark.parametrize(
    ("encoding", "said"),
    [
        ("utf-32", "is UTF-32 text, not UTF-8 (it starts with a UTF-32 byte order mark)"),
        ("utf-32-le", "is UTF-32 text, not UTF-8 (two of every four bytes are NUL, as UTF-32"),
        ("utf-16-le", "is UTF-16 text without a byte order mark, not UTF-8 (every other byte"),
    ],
)
def test_a_utf32_or_unmarked_utf16_config_is_told_as_such(
    tmp_path: Path, encoding: str, said: str
) -> None:
    # One rule for every file eb reads as text: the config's was UTF-16's mark alone, so a
    # UTF-32 file (whose mark starts with UTF-16's) was called UTF-16.
    path = write_config(tmp_path, "")
    path.write_bytes("[core]\nmaxfail = 3\n".encode(encoding))
    error = config_error(tmp_path)
    assert error.message.startswith(f"Invalid TOML in {path}: the file {said}")
    assert error.hint is not None and error.hint.startswith("save the file as UTF-8")


def test_non_utf8_file_is_invalid_toml(tmp_path: Path) -> None:
    path = write_config(tmp_path, "")
    path.write_bytes(b'[core]\noutput_dir = "\xff"\n')
    assert config_error(tmp_path).message.startswith(f"Invalid TOML in {path}: ")


def test_legacy_llm_section_comes_first(tmp_path: Path) -> None:
    path = write_config(
        tmp_path, '[llm]\nmodel = "x"\n[core]\npass_threshold = 9\n[bogus]\na = 1\n'
    )
    error = config_error(tmp_path)
    assert error.message == (
        f"Legacy [llm] section was removed from {path}. Delete the [llm] section and configure "
        "harness agents under [harness] and [agents.*] instead."
    )


def test_harness_skip_is_refused(tmp_path: Path) -> None:
    write_config(tmp_path, "[harness]\nskip = true\nbogus = 1\n")
    error = config_error(tmp_path)
    assert error.message == (
        "[harness] skip was removed; delete the key from your config. harness is skipped "
        "automatically when [harness] agent is unset."
    )


def test_harness_must_be_a_table(tmp_path: Path) -> None:
    path = write_config(tmp_path, "harness = 5\n")
    error = config_error(tmp_path)
    assert error.message.startswith("[harness] must be a TOML table")
    assert str(path) in error.message


def test_core_must_be_a_table(tmp_path: Path) -> None:
    path = write_config(tmp_path, 'core = "x"\n')
    error = config_error(tmp_path)
    assert error.message == f"[core] must be a TOML table (in {path})"


def test_harness_unknown_keys_sorted_with_dotted_names(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[harness]\nmodle = 1\nagnet = 2\n")
    error = config_error(tmp_path)
    assert error.message.startswith("[harness] contains unknown keys: agnet, modle")
    assert "harness.agnet" in error.message and "harness.modle" in error.message
    assert str(path) in error.message
    assert error.hint is not None
    assert "harness.agnet: did you mean harness.agent?" in error.hint
    assert "harness.modle: did you mean harness.model?" in error.hint


def test_skills_dir_is_accepted_and_ignored(tmp_path: Path) -> None:
    write_config(tmp_path, '[harness]\nskills_dir = ["anything", 1]\n')
    doc = resolve(tmp_path)
    assert doc.settings.harness.skills_dir is None
    assert "harness.skills_dir" not in doc.sources


@pytest.mark.parametrize(
    ("text", "dotted", "suggestion"),
    [
        ("[core]\npass_treshold = 0.5\n", "core.pass_treshold", "core.pass_threshold"),
        ('[discovery]\nexclude_dir = ["a"]\n', "discovery.exclude_dir", "discovery.exclude_dirs"),
        ('[execution]\nenv_alow = ["A"]\n', "execution.env_alow", "execution.env_allow"),
        ('[dicovery]\nexclude_dirs = ["a"]\n', "dicovery", "discovery"),
        ("pass_threshold = 0.5\n", "pass_threshold", "core.pass_threshold"),
        # A setting written under the wrong table: the one table that has the key.
        ('[core]\nexclude_dirs = ["generated"]\n', "core.exclude_dirs", "discovery.exclude_dirs"),
        ('[core]\nagent = "claude"\n', "core.agent", "harness.agent"),
        ("[cache]\nkeep = 10\n", "cache.keep", "history.keep"),
        ('[history]\nremote = "/shared"\n', "history.remote", "cache.remote"),
    ],
)
def test_unknown_keys_name_the_key_file_and_a_hint(
    tmp_path: Path, text: str, dotted: str, suggestion: str
) -> None:
    path = write_config(tmp_path, text)
    error = config_error(tmp_path)
    assert error.message == f"Unknown key {dotted} in {path}"
    assert error.file == str(path)
    assert error.field_path == dotted
    assert error.hint == f"{dotted}: did you mean {suggestion}?"


def test_a_key_of_another_table_is_suggested_under_harness_too(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[harness]\nmax_parallel_checks = 2\n")
    error = config_error(tmp_path)
    assert error.message == (
        "[harness] contains unknown keys: max_parallel_checks "
        f"(harness.max_parallel_checks in {path})"
    )
    assert error.hint == "harness.max_parallel_checks: did you mean core.max_parallel_checks?"


def test_a_key_of_two_other_tables_is_suggested_from_neither(tmp_path: Path) -> None:
    # `mode` is [cache]'s and [history]'s: which one was meant is not known.
    write_config(tmp_path, "[core]\nmode = 1\n")
    error = config_error(tmp_path)
    assert error.hint is not None
    assert "cache.mode" not in error.hint and "history.mode" not in error.hint


def test_unknown_key_without_a_close_match_lists_the_known_keys(tmp_path: Path) -> None:
    write_config(tmp_path, "[core]\nzzzz = 1\nqqqq = 2\n")
    error = config_error(tmp_path)
    assert "Unknown keys core.qqqq, core.zzzz in" in error.message
    assert error.hint is not None and "pass_threshold" in error.hint


def test_legacy_core_keys_are_accepted_with_one_warning(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        "[core]\ndeterministic_timeout_seconds = 1\nllm_timeout_seconds = 2\n"
        "task_timeout_seconds = 3\nmax_parallel_checks = 2\n",
    )
    doc = resolve(tmp_path)
    assert doc.settings.core.max_parallel_checks == 2
    assert len(doc.warnings) == 1
    warning = doc.warnings[0]
    for key in ("deterministic_timeout_seconds", "llm_timeout_seconds", "task_timeout_seconds"):
        assert f"core.{key}" in warning.message
    assert warning.file == str(path)
    assert resolve(tmp_path, no_project_config=True).warnings == []


def test_a_setting_the_file_gets_wrong_is_told_at_its_line(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    """The TOML reader keeps no positions: the line is found in the file, for `--json` and the
    annotations on a pull request (a bad value, an unknown key, a table that is no table, a
    warning), and a setting not written in the file gets none."""
    write_config(tmp_path, '# team\n\n[core]\npass_threshold = 1\nmax_parallel_checks = "x"\n')
    assert config_error(tmp_path).line == 5
    write_config(tmp_path, '[harness]\nagent = "x"\n\n[core]\nmax_paralel_checks = 2\n')
    assert config_error(tmp_path).line == 5
    write_config(tmp_path, '[cache]\nmode = "on"\ncore = 1\n[agents.mine]\nmodel_flag = ""\n')
    assert config_error(tmp_path).line == 3
    write_config(tmp_path, "harness = 5\n")
    assert config_error(tmp_path).line == 1
    write_config(tmp_path, "[core]\nmax_parallel_checks = 2\nllm_timeout_seconds = 3\n")
    (warning,) = resolve(tmp_path).warnings
    assert (warning.field_path, warning.line) == ("core.llm_timeout_seconds", 3)
    write_config(tmp_path, "core.pass_threshold = 2\n")  # a dotted key at the top level
    assert config_error(tmp_path).line == 1
    # A value from a flag is no line of the file, even where the file sets the same key.
    write_config(tmp_path, "[core]\nmax_parallel_checks = 2\n")
    assert config_error(tmp_path, cli={"core.max_parallel_checks": 0}).line is None
    write_config(tmp_path, '[core]\n\nmax_parallel_checks = "x"\n')
    validated = eb("validate", "--cwd", str(tmp_path), "--json")
    (error,) = json.loads(validated.stdout)["errors"]
    assert (error["field_path"], error["line"]) == ("core.max_parallel_checks", 3)


def test_a_shared_cache_named_while_the_cache_is_off_is_a_warning(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    """The remote would never be asked: the warning names where it was set and the fix, and
    `eb run` and `eb validate` show it (config.json's warnings reach the console)."""
    write_config(tmp_path, '[cache]\nremote = "s3://team/cache"\n')
    (warning,) = resolve(tmp_path).warnings
    assert warning.message == (
        "The shared cache s3://team/cache ([cache] remote) is not used: the verdict cache is "
        'off ([cache] mode = "off" (the default))'
    )
    config_file = str(tmp_path / ".eval-banana" / "config.toml")
    assert warning.hint == (
        f'set [cache] mode = "on" in {config_file} (or pass --cache on) to use it'
    )
    from_flag = resolve(
        tmp_path, cli={"cache.remote": "/shared"}, env={"EVAL_BANANA_CACHE_MODE": "off"}
    )
    assert "/shared (--cache-remote)" in from_flag.warnings[0].message
    assert from_flag.warnings[0].message.endswith("(EVAL_BANANA_CACHE_MODE=off)")
    assert from_flag.warnings[0].hint == (
        "set EVAL_BANANA_CACHE_MODE=on (or pass --cache on) to use it"
    )
    assert from_flag.warnings[0].file is None  # the variable turned it off, not the file
    # Not said when the cache is on, or the remote is switched off.
    assert resolve(tmp_path, cli={"cache.mode": "on"}).warnings == []
    assert resolve(tmp_path, cli={"cache.remote_mode": "off"}).warnings == []
    (tmp_path / "eval_checks").mkdir()
    (tmp_path / "eval_checks" / "ok.yaml").write_text(
        "schema_version: 1\nid: ok\ntype: deterministic\ndescription: d\nscript: pass\n"
    )
    for command in ("run", "validate", "list"):
        done = eb(command, "--cwd", str(tmp_path))
        assert done.exit_code == 0, done.stderr
        assert "warning: The shared cache s3://team/cache ([cache] remote) is not used" in (
            done.stderr
        ), command


def test_the_unused_shared_cache_warning_names_where_the_cache_was_turned_off(
    tmp_path: Path,
) -> None:
    """The fix is made where the value came from: the file says "on" while a variable or a
    flag turned the cache off, so "set it in the config file" would change nothing."""
    write_config(tmp_path, '[cache]\nremote = "/shared"\nmode = "on"\n')
    config_file = str(tmp_path / ".eval-banana" / "config.toml")
    (by_variable,) = resolve(tmp_path, env={"EVAL_BANANA_CACHE_MODE": "off"}).warnings
    assert by_variable.message.endswith("the verdict cache is off (EVAL_BANANA_CACHE_MODE=off)")
    assert by_variable.hint == "set EVAL_BANANA_CACHE_MODE=on (or pass --cache on) to use it"
    assert (by_variable.file, by_variable.line) == (None, None)
    (by_flag,) = resolve(tmp_path, cli={"cache.mode": "off"}).warnings
    assert by_flag.message.endswith("the verdict cache is off (--cache off)")
    assert by_flag.hint == "pass --cache on to use it"
    write_config(tmp_path, '[cache]\nremote = "/shared"\n\nmode = "off"\n')
    (in_file,) = resolve(tmp_path).warnings
    assert in_file.message.endswith(
        f'the verdict cache is off ([cache] mode = "off" in {config_file})'
    )
    assert (
        in_file.hint == f'set [cache] mode = "on" in {config_file} (or pass --cache on) to use it'
    )
    assert (in_file.file, in_file.field_path, in_file.line) == (config_file, "cache.mode", 4)


# --- errors: wrong types in the file ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[core]\noutput_dir = 5\n", "core.output_dir must be a string, got 5"),
        ("[core]\njunit_xml = true\n", "core.junit_xml must be a string, got true"),
        (
            '[core]\nllm_max_input_chars = "5"\n',
            'core.llm_max_input_chars must be an integer, got "5"',
        ),
        (
            "[core]\nllm_max_input_chars = 1.5\n",
            "core.llm_max_input_chars must be an integer, got 1.5",
        ),
        (
            "[core]\nmax_parallel_checks = 0\n",
            "[core] max_parallel_checks must be a positive integer, got 0",
        ),
        (
            "[core]\nmax_parallel_checks = true\n",
            "[core] max_parallel_checks must be a positive integer, got true",
        ),
        (
            "[core]\nmax_parallel_checks = 2.0\n",
            "[core] max_parallel_checks must be a positive integer, got 2.0",
        ),
        (
            "[harness]\ntimeout_seconds = -1\n",
            "[harness] timeout_seconds must be a positive integer, got -1",
        ),
        (
            '[harness]\ntimeout_seconds = "30"\n',
            '[harness] timeout_seconds must be a positive integer, got "30"',
        ),
        (
            "[core]\ncheck_timeout_seconds = -1\n",
            "core.check_timeout_seconds must be a non-negative integer",
        ),
        (
            "[core]\nrun_timeout_seconds = 1.5\n",
            "core.run_timeout_seconds must be a non-negative integer",
        ),
        ("[harness]\ntoken_fuse = -5\n", "harness.token_fuse must be a non-negative integer"),
        ("[harness]\nretries = -1\n", "harness.retries must be a non-negative integer, got -1"),
        ("[harness]\nretries = true\n", "harness.retries must be a non-negative integer"),
        ("[core]\nmaxfail = 1.5\n", "core.maxfail must be a non-negative integer"),
        (
            "[harness]\ncost_fuse_usd = -0.5\n",
            "harness.cost_fuse_usd must be a non-negative number (0 means no limit)",
        ),
        (
            "[harness]\ncost_fuse_usd = true\n",
            "harness.cost_fuse_usd must be a non-negative number (0 means no limit)",
        ),
        ("[harness]\nagent = 5\n", "harness.agent: Expected a string value"),
        ("[harness]\nmodel = true\n", "harness.model: Expected a string value"),
        ("[harness]\nreasoning_effort = []\n", "harness.reasoning_effort: Expected a string value"),
        ("[harness]\nenv = 5\n", "[harness.env] must be a TOML table of string values"),
        ("[harness.env]\nA = 1\n", "[harness.env] must be a TOML table of string values"),
        (
            '[discovery]\nexclude_dirs = "build"\n',
            'discovery.exclude_dirs must be a list of strings, got "build"',
        ),
        ("[discovery]\nexclude_dirs = [1]\n", "discovery.exclude_dirs must be a list of strings"),
        (
            '[execution]\nenv = "none"\n',
            "execution.env must be 'inherit' or 'allowlist', got \"none\"",
        ),
        (
            '[execution]\nenv_allow = ["A=B"]\n',
            "execution.env_allow must be a list of non-empty names",
        ),
        (
            '[execution]\nenv_allow_prefixes = "P_"\n',
            "execution.env_allow_prefixes must be a list of",
        ),
    ],
)
def test_wrong_types_name_the_key_and_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = write_config(tmp_path, text)
    error = config_error(tmp_path)
    assert error.message.startswith(message)
    assert error.message.endswith(f"(in {path})")
    assert error.file == str(path)


def test_file_is_checked_even_when_a_flag_overrides_it(tmp_path: Path) -> None:
    write_config(tmp_path, '[core]\nmax_parallel_checks = "4"\n')
    error = config_error(tmp_path, cli={"core.max_parallel_checks": 2})
    assert "[core] max_parallel_checks must be a positive integer" in error.message


# --- pass_threshold from every source -----------------------------------------------------------


@pytest.mark.parametrize(
    ("literal", "reason"),
    [
        ('"0.5"', "must be a number"),
        ("true", "must be a number"),
        ("[0.5]", "must be a number"),
        ("1.5", "must be between 0.0 and 1.0"),
        ("2", "must be between 0.0 and 1.0"),
        ("-0.1", "must be between 0.0 and 1.0"),
        ("nan", "must be between 0.0 and 1.0"),
        ("inf", "must be between 0.0 and 1.0"),
    ],
)
def test_threshold_from_the_file(tmp_path: Path, literal: str, reason: str) -> None:
    write_config(tmp_path, f"[core]\npass_threshold = {literal}\n")
    assert config_error(tmp_path).message.startswith(f"core.pass_threshold {reason}")


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("abc", "must be a number"),
        ("", "must be a number"),
        ("true", "must be a number"),
        ("nan", "must be between 0.0 and 1.0"),
        ("inf", "must be between 0.0 and 1.0"),
        ("1.01", "must be between 0.0 and 1.0"),
        ("-1", "must be between 0.0 and 1.0"),
    ],
)
def test_threshold_from_env(tmp_path: Path, raw: str, reason: str) -> None:
    error = config_error(tmp_path, env={"EVAL_BANANA_PASS_THRESHOLD": raw})
    assert error.message.startswith(f"EVAL_BANANA_PASS_THRESHOLD {reason}")
    assert "could not convert" not in error.message


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("abc", "must be a number"),
        ("nan", "must be between 0.0 and 1.0"),
        ("1.5", "must be between 0.0 and 1.0"),
        ("-0.5", "must be between 0.0 and 1.0"),
    ],
)
def test_threshold_from_the_cli(tmp_path: Path, raw: str, reason: str) -> None:
    with pytest.raises(argparse.ArgumentError) as info:
        parser_for("run").parse_args([f"--pass-threshold={raw}"])
    assert str(info.value).startswith(f"argument --pass-threshold: {reason}")
    # A Python caller bypassing argparse gets the same rule.
    error = config_error(tmp_path, cli={"core.pass_threshold": raw})
    assert error.message.startswith(f"--pass-threshold {reason}")


def test_a_setting_too_close_to_zero_to_read_is_refused_at_its_line(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    """TOML and float() read `1e-400` as 0.0, which nobody wrote: a pass threshold of 0, or a
    cost fuse of 0 (no limit). The file, a variable and a flag each refuse it; a zero written
    with an exponent is zero."""
    write_config(tmp_path, "# costs\n[harness]\ncost_fuse_usd = 1e-400\n")
    error = config_error(tmp_path)
    assert (error.field_path, error.line) == ("harness.cost_fuse_usd", 3)
    assert error.message == (
        f"Invalid TOML in {tmp_path / '.eval-banana' / 'config.toml'}: harness.cost_fuse_usd "
        "holds the number 1e-400, below the smallest number a program reads from JSON (about "
        "5e-324): read, it would be 0"
    )
    assert (
        error.hint
        == "write 0 if zero is meant, or a number a program reads (at least about 5e-324)"
    )
    write_config(tmp_path, "[core]\npass_threshold = 1.0e-400\n")
    validated = eb("validate", "--cwd", str(tmp_path), "--json")
    assert validated.exit_code == 2
    (entry,) = json.loads(validated.stdout)["errors"]
    assert (entry["field_path"], entry["line"]) == ("core.pass_threshold", 2)

    write_config(tmp_path, "[core]\npass_threshold = 0.0e-5\n")
    assert resolve(tmp_path).settings.core.pass_threshold == 0.0
    told = "must be 0 or a number a program reads (at least about 5e-324): read, it would be 0"
    env = config_error(tmp_path, env={"EVAL_BANANA_PASS_THRESHOLD": " 1e-400 "})
    assert env.message.startswith(f"EVAL_BANANA_PASS_THRESHOLD {told}, got")
    with pytest.raises(argparse.ArgumentError) as info:
        parser_for("run").parse_args(["--cost-fuse-usd=1e-400"])
    assert str(info.value).startswith(f"argument --cost-fuse-usd: {told}")
    assert (
        resolve(tmp_path, env={"EVAL_BANANA_PASS_THRESHOLD": "0e-9"}).settings.core.pass_threshold
        == 0.0
    )


def test_threshold_python_values_are_checked(tmp_path: Path) -> None:
    assert "must be a number" in config_error(tmp_path, cli={"core.pass_threshold": True}).message
    assert "between" in config_error(tmp_path, cli={"core.pass_threshold": 2.0}).message


@pytest.mark.parametrize(
    ("literal", "env", "value"), [("0", " 1e-1 ", 0.1), ("1", "1", 1.0), ("0.0", "0", 0.0)]
)
def test_threshold_bounds_are_inclusive(
    tmp_path: Path, literal: str, env: str, value: float
) -> None:
    write_config(tmp_path, f"[core]\npass_threshold = {literal}\n")
    assert resolve(tmp_path).settings.core.pass_threshold == float(literal)
    doc = resolve(tmp_path, env={"EVAL_BANANA_PASS_THRESHOLD": env})
    assert doc.settings.core.pass_threshold == value
    assert cli_from_argv(["--pass-threshold", literal]) == {"core.pass_threshold": float(literal)}


# --- environment variables ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("var", "raw", "message"),
    [
        (
            "EVAL_BANANA_LLM_MAX_INPUT_CHARS",
            "many",
            "EVAL_BANANA_LLM_MAX_INPUT_CHARS must be an integer",
        ),
        (
            "EVAL_BANANA_MAX_PARALLEL_CHECKS",
            "0",
            "EVAL_BANANA_MAX_PARALLEL_CHECKS must be a positive integer",
        ),
        (
            "EVAL_BANANA_MAX_PARALLEL_CHECKS",
            "2.5",
            "EVAL_BANANA_MAX_PARALLEL_CHECKS must be a positive integer",
        ),
        (
            "EVAL_BANANA_MAX_PARALLEL_CHECKS",
            "",
            "EVAL_BANANA_MAX_PARALLEL_CHECKS must be a positive integer",
        ),
        (
            "EVAL_BANANA_HARNESS_TIMEOUT_SECONDS",
            "abc",
            "EVAL_BANANA_HARNESS_TIMEOUT_SECONDS must be a positive integer",
        ),
        (
            "EVAL_BANANA_HARNESS_TIMEOUT_SECONDS",
            "-3",
            "EVAL_BANANA_HARNESS_TIMEOUT_SECONDS must be a positive integer",
        ),
        (
            "EVAL_BANANA_CHECK_TIMEOUT_SECONDS",
            "-1",
            "EVAL_BANANA_CHECK_TIMEOUT_SECONDS must be a non-negative integer",
        ),
        (
            "EVAL_BANANA_RUN_TIMEOUT_SECONDS",
            "soon",
            "EVAL_BANANA_RUN_TIMEOUT_SECONDS must be a non-negative integer",
        ),
        (
            "EVAL_BANANA_HARNESS_TOKEN_FUSE",
            "1k",
            "EVAL_BANANA_HARNESS_TOKEN_FUSE must be a non-negative integer",
        ),
        (
            "EVAL_BANANA_HARNESS_RETRIES",
            "-2",
            "EVAL_BANANA_HARNESS_RETRIES must be a non-negative integer",
        ),
        ("EVAL_BANANA_MAXFAIL", "one", "EVAL_BANANA_MAXFAIL must be a non-negative integer"),
        (
            "EVAL_BANANA_ENV_POLICY",
            "all",
            "EVAL_BANANA_ENV_POLICY must be 'inherit' or 'allowlist'",
        ),
        (
            "EVAL_BANANA_ENV_ALLOW",
            "A,B=1",
            "EVAL_BANANA_ENV_ALLOW must be a list of non-empty names",
        ),
        ("EVAL_BANANA_OUTPUT_DIR", "", "EVAL_BANANA_OUTPUT_DIR must not be empty"),
    ],
)
def test_env_errors_name_the_variable(tmp_path: Path, var: str, raw: str, message: str) -> None:
    error = config_error(tmp_path, env={var: raw})
    assert error.message.startswith(message)
    assert "invalid literal" not in error.message


def test_a_long_bad_env_value_is_cut_in_the_message(tmp_path: Path) -> None:
    error = config_error(tmp_path, env={"EVAL_BANANA_MAX_CASES": "9" * 5000})
    assert error.message.startswith("EVAL_BANANA_MAX_CASES must be a positive integer, got '999")
    assert len(error.message) < 200


def test_positive_integer_env_uses_int_syntax(tmp_path: Path) -> None:
    doc = resolve(tmp_path, env={"EVAL_BANANA_MAX_PARALLEL_CHECKS": " +1_0 "})
    assert doc.settings.core.max_parallel_checks == 10


def test_env_is_not_parsed_when_the_flag_is_given(tmp_path: Path) -> None:
    env = {
        "EVAL_BANANA_PASS_THRESHOLD": "garbage",
        "EVAL_BANANA_MAX_PARALLEL_CHECKS": "garbage",
        "EVAL_BANANA_HARNESS_TIMEOUT_SECONDS": "0",
        "EVAL_BANANA_OUTPUT_DIR": "",
        "EVAL_BANANA_ENV_POLICY": "bogus",
    }
    cli = cli_from_argv(
        [
            "--pass-threshold",
            "0.5",
            "--max-parallel-checks",
            "2",
            "--harness-timeout-seconds",
            "9",
            "--output-dir",
            "out",
            "--env-policy",
            "allowlist",
        ]
    )
    doc = resolve(tmp_path, env=env, cli=cli)  # the flag wins; the variable is not read
    assert doc.settings.core.pass_threshold == 0.5
    assert doc.settings.harness.timeout_seconds == 9
    assert doc.settings.execution.env == "allowlist"


def test_empty_harness_env_values_clear_the_file(tmp_path: Path) -> None:
    write_config(tmp_path, '[harness]\nagent = "codex"\nmodel = "m"\nreasoning_effort = "high"\n')
    env = {
        "EVAL_BANANA_HARNESS_AGENT": "",
        "EVAL_BANANA_HARNESS_MODEL": "",
        "EVAL_BANANA_HARNESS_REASONING_EFFORT": "",
    }
    doc = resolve(tmp_path, env=env)
    assert doc.settings.harness.agent is None
    assert doc.settings.harness.model is None
    assert doc.settings.harness.reasoning_effort is None
    assert doc.sources["harness.agent"] == "env"


def test_env_strings_are_used_verbatim(tmp_path: Path) -> None:
    doc = resolve(tmp_path, env={"EVAL_BANANA_HARNESS_MODEL": " m "})
    assert doc.settings.harness.model == " m "


def test_empty_junit_env_means_unset(tmp_path: Path) -> None:
    write_config(tmp_path, '[core]\njunit_xml = "j.xml"\n')
    assert resolve(tmp_path, env={"EVAL_BANANA_JUNIT_XML": ""}).settings.core.junit_xml is None


def test_empty_env_allow_clears_the_list(tmp_path: Path) -> None:
    write_config(tmp_path, '[execution]\nenv_allow = ["A"]\n')
    doc = resolve(tmp_path, env={"EVAL_BANANA_ENV_ALLOW": ""})
    assert doc.settings.execution.env_allow == []


def test_other_eval_banana_variables_are_ignored(tmp_path: Path) -> None:
    env = {"EVAL_BANANA_SKIP_HARNESS": "1", "EVAL_BANANA_PASS_TRESHOLD": "x"}
    doc = resolve(tmp_path, env=env)
    assert set(doc.sources.values()) == {"default"}


# --- CLI flags -----------------------------------------------------------------------------------


def test_empty_cli_strings_are_set(tmp_path: Path) -> None:
    write_config(tmp_path, '[harness]\nagent = "codex"\n')
    cli = cli_from_argv(["--harness-agent", "", "--output-dir", ""])
    doc = resolve(tmp_path, cli=cli)
    assert doc.settings.harness.agent is None  # an empty flag clears it
    assert doc.sources["harness.agent"] == "cli"
    assert doc.settings.core.output_dir == ""


@pytest.mark.parametrize(
    ("flag", "name"), [("--cache-dir", "cache.dir"), ("--history-dir", "history.dir")]
)
def test_an_empty_folder_flag_is_refused_like_the_file_and_the_variable(
    tmp_path: Path, flag: str, name: str
) -> None:
    error = config_error(tmp_path, cli=cli_from_argv([flag, ""]))
    assert error.message == f'{flag} must not be empty or blank, got ""'
    assert error.field_path == name
    assert [spec.name for spec in SETTINGS if spec.empty_flag_is_root] == ["core.output_dir"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--max-parallel-checks", "0"],
            "argument --max-parallel-checks: must be a positive integer",
        ),
        (
            ["--harness-timeout-seconds", "x"],
            "argument --harness-timeout-seconds: must be a positive",
        ),
        (
            ["--check-timeout-seconds", "-1"],
            "argument --check-timeout-seconds: must be a non-negative",
        ),
        (["--token-fuse", "1.5"], "argument --token-fuse: must be a non-negative integer"),
        (["--retries", "-1"], "argument --retries: must be a non-negative integer, got '-1'"),
        (["--maxfail", "x"], "argument --maxfail: must be a non-negative integer"),
        (["--env-policy", "open"], "argument --env-policy: invalid choice"),
        (["--env-allow", "A=B"], "argument --env-allow: must be non-empty names without '='"),
        (["--redact", "A, ,B=1"], "argument --redact: must be non-empty names without '='"),
        (["--env-allow-prefix", ""], "argument --env-allow-prefix: must be non-empty names"),
        (["--env-allow-prefix", ","], "argument --env-allow-prefix: must be non-empty names"),
    ],
)
def test_bad_flag_values_are_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(argparse.ArgumentError) as info:
        parser_for("run").parse_args(argv)
    assert str(info.value).startswith(message)


def test_flags_per_command() -> None:
    def flags(command: str) -> set[str]:
        parser = parser_for(command)
        return {opt for action in parser._actions for opt in action.option_strings} - {
            "-h",
            "--help",
        }

    run = flags("run")
    assert run == {s.flag for s in SETTINGS if s.flag}
    assert "--harness-agent" in flags("validate")
    assert "--pass-threshold" not in flags("validate")
    assert "--env-policy" not in flags("validate")
    # They shape what --last-failed and --shard list.
    assert flags("list") == {"--last-failed-none", "--balance"}


def test_absent_flags_give_no_values() -> None:
    namespace = parser_for("run").parse_args([])
    assert cli_values_from_namespace(namespace=namespace) == {}
    assert not hasattr(namespace, "output_dir")


def test_repeatable_flags_collect_in_order() -> None:
    cli = cli_from_argv(["--env-allow", "B", "--env-allow", "A", "--env-allow-prefix", "P_"])
    assert cli == {"execution.env_allow": ["B", "A"], "execution.env_allow_prefixes": ["P_"]}


def test_unknown_cli_setting_is_refused(tmp_path: Path) -> None:
    assert "core.nope" in config_error(tmp_path, cli={"core.nope": 1}).message


def test_an_s3_endpoint_that_is_no_http_url_is_a_setting_error_where_it_is_used(
    tmp_path: Path,
) -> None:
    """`EVAL_BANANA_CACHE_REMOTE_ENDPOINT=minio.internal:9000` was taken as it was, and boto3
    refused it with a traceback when the run opened the shared cache."""
    root = tmp_path / "project"
    (root / "eval_checks").mkdir(parents=True)
    (root / "eval_checks" / "ok.yaml").write_text(
        "schema_version: 1\nid: ok\ntype: deterministic\ndescription: d\nscript: pass\n"
    )
    config = root / ".eval-banana" / "config.toml"
    config.parent.mkdir()
    config.write_text('[cache]\nmode = "on"\n')
    base = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("EVAL_BANANA_", "AWS_"))},
        "PYTHONPATH": str(REPO),
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "y",
        "AWS_REGION": "us-east-1",
        "EVAL_BANANA_CACHE_REMOTE": "s3://ci/eb",
    }
    told = "must be an http:// or https:// URL with a host, got"
    bad = {**base, "EVAL_BANANA_CACHE_REMOTE_ENDPOINT": "minio.internal:9000"}
    done = eb_process(root, "run", env=bad)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[0] == (
        f"EVAL_BANANA_CACHE_REMOTE_ENDPOINT {told} 'minio.internal:9000'"
    )
    assert "https://minio.internal:9000" in done.stderr.splitlines()[1]  # the fix
    assert "Traceback" not in done.stderr
    assert not (root / ".eval-banana" / "results").exists()  # nothing ran
    # `eb cache push` opens the shared cache with the verdict cache off too.
    pushed = eb_process(root, "cache", "push", env={**bad, "EVAL_BANANA_CACHE_MODE": "off"})
    assert pushed.returncode == 2 and pushed.stderr.startswith(
        f"EVAL_BANANA_CACHE_REMOTE_ENDPOINT {told}"
    ), pushed.stderr
    # In the config file: the key, the file and its line.
    config.write_text('[cache]\nmode = "on"\nremote_endpoint = "ftp://minio"\n')
    validated = eb_process(root, "validate", "--json", env=base)
    assert validated.returncode == 2
    (error,) = json.loads(validated.stdout)["errors"]
    assert error["message"] == f'cache.remote_endpoint {told} "ftp://minio" (in {config})'
    assert (error["file"], error["field_path"], error["line"]) == (
        str(config),
        "cache.remote_endpoint",
        3,
    )
    # Where no s3:// remote asks for it, the endpoint matters to nothing.
    for unused in (
        {**base, "EVAL_BANANA_CACHE_REMOTE": str(tmp_path / "shared")},  # a folder remote
        {**base, "EVAL_BANANA_CACHE_MODE": "off"},  # the cache is off
        {**base, "EVAL_BANANA_CACHE_REMOTE_MODE": "off"},
    ):
        assert eb_process(root, "validate", env=unused).returncode == 0
    config.write_text('[cache]\nmode = "on"\nremote_endpoint = "https://minio.internal:9000"\n')
    assert eb_process(root, "validate", env=base).returncode == 0


def test_an_s3_endpoint_with_a_query_is_a_setting_error_that_masks_it(tmp_path: Path) -> None:
    """A presigned endpoint (`?X-Amz-Signature=...`) was taken, and boto3 refused every request
    of the run ("URLs with queries are not supported") until eb stopped asking."""
    root = tmp_path / "project"
    (root / "eval_checks").mkdir(parents=True)
    (root / "eval_checks" / "ok.yaml").write_text(
        "schema_version: 1\nid: ok\ntype: deterministic\ndescription: d\nscript: pass\n"
    )
    config = root / ".eval-banana" / "config.toml"
    config.parent.mkdir()
    config.write_text('[cache]\nmode = "on"\n')
    secret = "sig-" + "4" * 24
    endpoint = f"http://minio.internal:9000/?X-Amz-Signature={secret}"
    environ = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("EVAL_BANANA_", "AWS_"))},
        "PYTHONPATH": str(REPO),
        "EVAL_BANANA_CACHE_REMOTE": "s3://ci/eb",
        "EVAL_BANANA_CACHE_REMOTE_ENDPOINT": endpoint,
    }
    told = "must have no query string (?...): boto3 sends no request to such an endpoint, got"
    done = eb_process(root, "run", env=environ)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[0] == (
        f"EVAL_BANANA_CACHE_REMOTE_ENDPOINT {told} 'http://minio.internal:9000/?***'"
    )
    assert "without its query" in done.stderr and secret not in done.stdout + done.stderr
    assert not (root / ".eval-banana" / "results").exists()  # nothing ran
    del environ["EVAL_BANANA_CACHE_REMOTE_ENDPOINT"]
    config.write_text(f'[cache]\nmode = "on"\nremote_endpoint = "{endpoint}"\n')
    validated = eb_process(root, "validate", "--json", env=environ)
    assert validated.returncode == 2 and secret not in validated.stdout + validated.stderr
    (error,) = json.loads(validated.stdout)["errors"]
    assert error["message"].startswith(f"cache.remote_endpoint {told}")
    assert (error["file"], error["field_path"], error["line"]) == (
        str(config),
        "cache.remote_endpoint",
        3,
    )


@pytest.mark.parametrize(
    ("entry", "instead"), [("vendor/lib", "lib"), ("./vendor", "vendor"), ("a//b/", "b")]
)
def test_an_exclude_dirs_entry_that_is_a_path_is_refused(
    tmp_path: Path, eb: Callable[..., EbResult], entry: str, instead: str
) -> None:
    # Only folder names are compared: a path never matched, and the folder's checks still ran.
    (tmp_path / "vendor" / "lib" / "eval_checks").mkdir(parents=True)
    (tmp_path / "vendor" / "lib" / "eval_checks" / "c.yaml").write_text(
        "schema_version: 1\ntype: deterministic\nid: vendored\ndescription: x\nscript: print(1)\n"
    )
    config = write_config(tmp_path, f'[discovery]\nexclude_dirs = ["{entry}"]\n')
    result = eb("validate", "--cwd", str(tmp_path), "--json")
    assert result.exit_code == 2
    (error,) = json.loads(result.stdout)["errors"]
    assert error["message"].startswith(
        f'discovery.exclude_dirs entry "{entry}" is a path, which never matches: only folder '
        f'names are compared; write "{instead}" to leave out every folder of that name'
    ), error
    assert (error["file"], error["field_path"], error["line"]) == (
        str(config),
        "discovery.exclude_dirs",
        2,
    )


def test_an_exclude_dirs_entry_with_a_trailing_slash_names_the_folder(
    tmp_path: Path, eb: Callable[..., EbResult]
) -> None:
    (tmp_path / "vendor" / "eval_checks").mkdir(parents=True)
    (tmp_path / "vendor" / "eval_checks" / "c.yaml").write_text(
        "schema_version: 1\ntype: deterministic\nid: vendored\ndescription: x\nscript: print(1)\n"
    )
    (tmp_path / "eval_checks").mkdir()
    (tmp_path / "eval_checks" / "c.yaml").write_text(
        "schema_version: 1\ntype: deterministic\nid: mine\ndescription: x\nscript: print(1)\n"
    )
    write_config(tmp_path, '[discovery]\nexclude_dirs = ["vendor/", ".eval-banana"]\n')
    doc = resolve(tmp_path)
    assert doc.settings.discovery.exclude_dirs == ["vendor", ".eval-banana"]
    listed = eb("list", "--cwd", str(tmp_path))
    assert "mine" in listed.stdout and "vendored" not in listed.stdout, listed.stdout
    assert eb("validate", "--cwd", str(tmp_path)).exit_code == 0


@pytest.mark.parametrize("entry", ["", ".", "..", "/"])
def test_an_exclude_dirs_entry_that_names_no_folder_is_refused(tmp_path: Path, entry: str) -> None:
    write_config(tmp_path, f'[discovery]\nexclude_dirs = ["{entry}"]\n')
    with pytest.raises(ConfigError, match=re.escape(f'entry "{entry}" is no folder name')):
        resolve(tmp_path)
