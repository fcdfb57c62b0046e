"""Built-in templates, `[agents.<name>]` merging and errors, effective values, argv and prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval_banana.core.errors import ConfigError
from eval_banana.harness.command import build_argv, display_argv, prompt_argument_problem
from eval_banana.harness.prompt import FORMAT_LINE, PROMPT_VERSION, build_prompt
from eval_banana.harness.resolve import (
    effective_model,
    injection_problem,
    missing_executable_message,
    resolve_harness,
)
from eval_banana.harness.templates import (
    BUILTIN_TEMPLATES,
    parse_agent_tables,
    resolve_template,
)
from eval_banana.models.config import AgentTemplate, HarnessSettings, Settings

P = "P"

# eval-banana's command lines, with opencode run and pi's --model/--thinking corrected, and the
# verdict schema for the CLIs that take one (filled per run; the placeholders as written).
PLAIN_ARGV = {
    "codex": "codex exec --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check "
    "--output-schema {verdict_schema_path} --model gpt-5.6-sol -c model_reasoning_effort=high P",
    "gemini": "gemini --approval-mode yolo --output-format stream-json -p P",
    "claude": "claude -p --dangerously-skip-permissions --output-format stream-json --verbose "
    "--json-schema {verdict_schema} P",
    "grok": "grok --always-approve --no-auto-update --model grok-4.5 --reasoning-effort high -p P",
    "openhands": "openhands --headless --json --override-with-envs -t P",
    "opencode": "opencode run P",
    "pi": "pi --print --no-session P",
}
WITH_MODEL_AND_EFFORT = {
    "codex": "codex exec --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check "
    "--output-schema {verdict_schema_path} --model M -c model_reasoning_effort=E P",
    "claude": "claude -p --dangerously-skip-permissions --output-format stream-json --verbose "
    "--json-schema {verdict_schema} --model M --effort E P",
    "grok": "grok --always-approve --no-auto-update --model M --reasoning-effort E -p P",
    "opencode": "opencode run --model M --variant E P",
    "pi": "pi --print --no-session --model M --thinking E P",
}


def _argv(agent: str, *, model: str | None = None, effort: str | None = None) -> str:
    template = BUILTIN_TEMPLATES[agent]
    chosen_model = model or template.default_model
    chosen_effort = effort or template.reasoning_effort
    argv = build_argv(template=template, prompt=P, model=chosen_model, effort=chosen_effort)
    return " ".join(argv)


@pytest.mark.parametrize("agent", sorted(PLAIN_ARGV))
def test_builtin_argv_with_nothing_selected(agent: str) -> None:
    assert _argv(agent) == PLAIN_ARGV[agent]


@pytest.mark.parametrize("agent", sorted(WITH_MODEL_AND_EFFORT))
def test_builtin_argv_with_model_and_effort(agent: str) -> None:
    assert _argv(agent, model="M", effort="E") == WITH_MODEL_AND_EFFORT[agent]


def test_model_only_agents_keep_their_argv() -> None:
    assert _argv("gemini", model="M") == (
        "gemini --approval-mode yolo --output-format stream-json --model M -p P"
    )
    # openhands takes the model through LLM_MODEL only.
    assert _argv("openhands", model="M") == PLAIN_ARGV["openhands"]


def test_seven_builtins_with_dialects_and_fixed_env() -> None:
    assert sorted(BUILTIN_TEMPLATES) == sorted(PLAIN_ARGV)
    dialects = {name: t.output_dialect for name, t in BUILTIN_TEMPLATES.items()}
    assert dialects == {
        "codex": "codex",
        "gemini": "gemini",
        "claude": "claude",
        "grok": "text",
        "openhands": "openhands",
        "opencode": "text",
        "pi": "text",
    }
    assert BUILTIN_TEMPLATES["gemini"].fixed_env == {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
    assert BUILTIN_TEMPLATES["claude"].model_env_vars == [
        "ANTHROPIC_MODEL",
        "ANTHROPIC_DEFAULT_SONNET_MODEL",
        "ANTHROPIC_DEFAULT_OPUS_MODEL",
    ]
    assert BUILTIN_TEMPLATES["openhands"].model_env_vars == ["LLM_MODEL"]
    assert all(
        t.prompt_position == "tail" and not t.provider_env for t in BUILTIN_TEMPLATES.values()
    )


def test_after_command_prompt_position_and_prompt_flag() -> None:
    template = AgentTemplate(
        command=["agent", "go"],
        shared_flags=["--x"],
        prompt_flag="--ask",
        prompt_position="after_command",
        reasoning_effort_flag=["--think={effort}", "{effort}"],
    )
    argv = build_argv(template=template, prompt=P, model="M", effort="E")
    assert argv == ["agent", "go", "--ask", P, "--x", "--model", "M", "--think=E", "E"]
    assert display_argv(argv=argv, prompt=P) == [
        "agent", "go", "--ask", "{prompt}", "--x", "--model", "M", "--think=E", "E",
    ]  # fmt: skip


# --- [agents.<name>] tables -------------------------------------------------------------------


def test_override_replaces_only_written_fields() -> None:
    merged = parse_agent_tables(
        raw={
            "codex": {
                "shared_flags": [],
                "default_model": "",
                "reasoning_effort": "low",
                "provider_env": {"OPENAI_BASE_URL": "{env:BASE}"},
            }
        },
        config_path="c.toml",
    )["codex"]
    builtin = BUILTIN_TEMPLATES["codex"]
    assert merged.command == builtin.command
    assert merged.shared_flags == []  # an empty list clears
    assert merged.default_model is None  # "" clears to none
    assert merged.reasoning_effort == "low"
    assert merged.reasoning_effort_flag == builtin.reasoning_effort_flag
    assert merged.provider_env == {"OPENAI_BASE_URL": "{env:BASE}"}
    assert merged.output_dialect == "codex"
    # The built-in itself is untouched.
    assert BUILTIN_TEMPLATES["codex"].default_model == "gpt-5.6-sol"


def test_new_agent_starts_from_the_blank_template() -> None:
    merged = parse_agent_tables(raw={"mine": {"command": ["my-agent"]}}, config_path="c")["mine"]
    assert merged == AgentTemplate(command=["my-agent"])
    # The blank model_flag is --model, so a selected model reaches a custom agent.
    assert merged.model_flag == "--model"
    assert build_argv(template=merged, prompt=P, model="M", effort=None) == [
        "my-agent", "--model", "M", P,
    ]  # fmt: skip
    opted_out = parse_agent_tables(
        raw={"mine": {"command": ["my-agent"], "model_flag": ""}}, config_path="c"
    )["mine"]
    assert opted_out.model_flag is None


def test_fixed_env_can_be_replaced() -> None:
    merged = parse_agent_tables(raw={"gemini": {"fixed_env": {}}}, config_path="c")["gemini"]
    assert merged.fixed_env == {}
    with pytest.raises(ConfigError, match=r"^\[agents.gemini.fixed_env\] must be a TOML table"):
        parse_agent_tables(raw={"gemini": {"fixed_env": {"A": 1}}}, config_path="c")
    with pytest.raises(ConfigError, match="output_dialect must be one of"):
        parse_agent_tables(raw={"gemini": {"output_dialect": "xml"}}, config_path="c")


def test_custom_agent_may_choose_a_dialect() -> None:
    merged = parse_agent_tables(
        raw={"wrapped": {"command": ["wrap-claude"], "output_dialect": "claude"}},
        config_path="c",
    )
    assert merged["wrapped"].output_dialect == "claude"


def test_resolve_template_prefers_tables_then_builtins() -> None:
    custom = parse_agent_tables(raw={"claude": {"command": ["claude2"]}}, config_path="c")
    assert resolve_template(name="claude", custom=custom).command == ["claude2"]
    assert resolve_template(name="pi", custom=custom).command == ["pi", "--print", "--no-session"]
    with pytest.raises(ConfigError) as caught:
        resolve_template(name="nosuch", custom=custom)
    assert caught.value.message == "Unknown harness agent: nosuch"


B38_CASES = [
    ("not-a-table", "[agents] must be a TOML table", "agents"),
    ({"x": "str"}, "[agents] entries must be TOML tables", "agents.x"),
    (
        {"x": {"command": ["a"], "zeta": 1, "alpha": 2}},
        "[agents.x] contains unknown keys: alpha, zeta",
        "agents.x.alpha",
    ),
    ({"x": {"command": "a"}}, "[agents.x] command must be a list of strings", "agents.x.command"),
    (
        {"x": {"command": ["a"], "shared_flags": [1]}},
        "[agents.x] shared_flags must be a list of strings",
        "agents.x.shared_flags",
    ),
    (
        {"x": {"command": ["a"], "model_env_vars": "M"}},
        "[agents.x] model_env_vars must be a list of strings",
        "agents.x.model_env_vars",
    ),
    (
        {"x": {"command": ["a"], "reasoning_effort_flag": [True]}},
        "[agents.x] reasoning_effort_flag must be a list of strings",
        "agents.x.reasoning_effort_flag",
    ),
    (
        {"x": {"command": ["a"], "prompt_position": 3}},
        "[agents.x] prompt_position must be a string",
        "agents.x.prompt_position",
    ),
    (
        {"x": {"command": ["a"], "prompt_position": "head"}},
        "[agents.x] prompt_position must be 'tail' or 'after_command'",
        "agents.x.prompt_position",
    ),
    (
        {"x": {"command": ["a"], "prompt_flag": 1}},
        "[agents.x] Expected a string value",
        "agents.x.prompt_flag",
    ),
    (
        {"x": {"command": ["a"], "model_flag": ["--m"]}},
        "[agents.x] Expected a string value",
        "agents.x.model_flag",
    ),
    (
        {"x": {"command": ["a"], "default_model": 5}},
        "[agents.x] Expected a string value",
        "agents.x.default_model",
    ),
    (
        {"x": {"command": ["a"], "reasoning_effort": False}},
        "[agents.x] Expected a string value",
        "agents.x.reasoning_effort",
    ),
    (
        {"x": {"command": ["a"], "provider_env": {"K": 1}}},
        "[agents.x.provider_env] must be a TOML table of strings",
        "agents.x.provider_env",
    ),
    (
        {"x": {"command": ["a"], "provider_env": ["K"]}},
        "[agents.x.provider_env] must be a TOML table of strings",
        "agents.x.provider_env",
    ),
    (
        {"x": {"shared_flags": []}},
        "[agents.x] command is required for custom agents",
        "agents.x.command",
    ),
    ({"x": {"command": []}}, "[agents.x] command must not be empty", "agents.x.command"),
    (
        {"claude": {"command": []}},
        "[agents.claude] command must not be empty",
        "agents.claude.command",
    ),
]


@pytest.mark.parametrize(("raw", "message", "field_path"), B38_CASES)
def test_agent_table_errors(raw: object, message: str, field_path: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_agent_tables(raw=raw, config_path="/p/.eval-banana/config.toml")
    assert caught.value.message == message
    assert caught.value.field_path == field_path
    assert caught.value.file == "/p/.eval-banana/config.toml"
    assert caught.value.exit_code == 2


def test_errors_are_checked_in_eval_banana_order() -> None:
    # Unknown keys come before type errors, list fields before prompt_position before strings.
    with pytest.raises(ConfigError, match="unknown keys: bogus"):
        parse_agent_tables(raw={"x": {"bogus": 1, "command": 5}}, config_path="c")
    with pytest.raises(ConfigError, match="command must be a list"):
        parse_agent_tables(raw={"x": {"command": 5, "prompt_position": 1}}, config_path="c")
    with pytest.raises(ConfigError, match="prompt_position must be a string"):
        parse_agent_tables(raw={"x": {"prompt_position": 1, "model_flag": 1}}, config_path="c")
    with pytest.raises(ConfigError, match="Expected a string value"):
        parse_agent_tables(raw={"x": {"model_flag": 1, "provider_env": 1}}, config_path="c")
    with pytest.raises(ConfigError, match=r"provider_env\] must be"):
        parse_agent_tables(raw={"x": {"provider_env": 1}}, config_path="c")


def test_unselected_tables_are_still_validated() -> None:
    # A broken table for an agent nobody selected is still an error.
    with pytest.raises(ConfigError, match=r"\[agents.unused\] command is required"):
        parse_agent_tables(raw={"claude": {}, "unused": {}}, config_path="c")


# --- effective values and the "cannot inject" error ---------------------------------------------


def _settings(**harness: object) -> Settings:
    return Settings(harness=HarnessSettings.model_validate(harness))


def test_resolve_harness_effective_values(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert resolve_harness(project_root=tmp_path, settings=_settings()) is None
    codex = resolve_harness(
        project_root=tmp_path, settings=_settings(agent="codex", timeout_seconds=42)
    )
    assert codex is not None
    assert (codex.model, codex.reasoning_effort, codex.timeout_seconds) == (
        "gpt-5.6-sol", "high", 42,
    )  # fmt: skip
    assert codex.executable is None
    assert missing_executable_message(harness=codex, project_root=tmp_path) == (
        "Harness agent 'codex' needs the command 'codex', which was not found on PATH"
    )
    chosen = resolve_harness(
        project_root=tmp_path, settings=_settings(agent="codex", model="m", reasoning_effort="low")
    )
    assert chosen is not None and (chosen.model, chosen.reasoning_effort) == ("m", "low")
    fake = tmp_path / "codex"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    found = resolve_harness(project_root=tmp_path, settings=_settings(agent="codex"))
    assert found is not None and found.executable == str(fake)
    assert missing_executable_message(harness=found, project_root=tmp_path) is None
    with pytest.raises(ConfigError, match="^Unknown harness agent: nope$"):
        resolve_harness(project_root=tmp_path, settings=_settings(agent="nope"))


def test_check_model_overrides_harness_model() -> None:
    harness = resolve_harness(
        project_root=Path.cwd(), settings=_settings(agent="grok", model="g-1")
    )
    assert harness is not None
    assert effective_model(harness=harness, check_model="g-2") == "g-2"
    assert effective_model(harness=harness, check_model="  ") == "g-1"
    assert effective_model(harness=harness, check_model=None) == "g-1"


def test_injection_problem_texts() -> None:
    gemini = BUILTIN_TEMPLATES["gemini"]
    assert injection_problem(template=gemini, agent="gemini", model="m", effort=None) is None
    assert injection_problem(template=gemini, agent="gemini", model=None, effort="high") == (
        "Harness judge agent template 'gemini' cannot inject the selected reasoning effort "
        "'high' (configure reasoning_effort_flag with an {effort} placeholder)"
    )
    blank = AgentTemplate(command=["x"], model_flag=None)
    assert injection_problem(template=blank, agent="x", model="it's", effort="e") == (
        "Harness judge agent template 'x' cannot inject the selected model \"it's\" "
        "(configure model_flag or model_env_vars) and reasoning effort 'e' (configure "
        "reasoning_effort_flag with an {effort} placeholder)"
    )
    blank_vars = AgentTemplate(command=["x"], model_flag=None, model_env_vars=[" "])
    assert "model 'm'" in str(
        injection_problem(template=blank_vars, agent="x", model="m", effort=None)
    )
    no_placeholder = AgentTemplate(command=["x"], reasoning_effort_flag=["--effort", "high"])
    assert injection_problem(template=no_placeholder, agent="x", model=None, effort="low")


def test_template_default_effort_counts() -> None:
    # Clearing codex's effort flag without clearing its default effort breaks every judge.
    custom = parse_agent_tables(raw={"codex": {"reasoning_effort_flag": []}}, config_path="c")
    harness = resolve_harness(
        settings=Settings(harness=HarnessSettings(agent="codex"), agents=custom),
        project_root=Path.cwd(),
    )
    assert harness is not None and harness.reasoning_effort == "high"
    assert injection_problem(
        template=harness.template, agent="codex", model=harness.model, effort="high"
    ) == (
        "Harness judge agent template 'codex' cannot inject the selected reasoning effort "
        "'high' (configure reasoning_effort_flag with an {effort} placeholder)"
    )


# --- prompt ------------------------------------------------------------------------------------


def test_prompt_structure() -> None:
    prompt = build_prompt(description="  Desc here. ", instructions="\n Do the thing.\n\n")
    lines = prompt.split("\n")
    assert FORMAT_LINE == '{"score": 0 or 1, "reason": "<one or two sentences>"}'
    assert lines[1:] == [
        FORMAT_LINE, "", "Check Description:", "Desc here.", "", "Instructions:", "Do the thing.",
    ]  # fmt: skip
    assert "evaluation judge" in lines[0] and "read the following files" not in lines[0]
    assert prompt.endswith("Do the thing.")
    assert PROMPT_VERSION


def test_prompt_size_limit() -> None:
    assert prompt_argument_problem(prompt="x" * 1000) is None
    big = "é" * 70_000  # 140,000 bytes in UTF-8
    assert prompt_argument_problem(prompt=big) == (
        "Harness judge prompt is 140000 bytes, above the per-argument limit of the operating system"
    )


def test_the_agents_page_shows_each_built_in_command_line_as_eb_runs_it() -> None:
    # The table of built-in agents is what users copy into wrappers and match in --verbose logs.
    page = (Path(__file__).resolve().parents[2] / "docs" / "agents.md").read_text("utf-8")
    table = page.split("## The built-in agents", 1)[1].split("\n## ", 1)[0]
    shown = {
        cells[1].strip("` "): cells[2].strip().strip("`")
        for line in table.splitlines()
        if line.startswith("| `") and len(cells := line.split("|")) > 3
    }
    for name, argv in PLAIN_ARGV.items():
        documented = argv.replace("{verdict_schema_path}", "F").replace("{verdict_schema}", "S")
        assert shown[name] == documented, name
