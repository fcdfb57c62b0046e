"""The line a setting stands on in a config file, found without a TOML parser's positions."""

from __future__ import annotations

from eval_banana.settings.tomllines import setting_line

CONFIG = """\
# settings of the team
[core]
pass_threshold = 0.9   # most checks must pass
  max_parallel_checks = 4

[agents."my agent"]
command = ["run-agent"]

[[servers]]
max_parallel_checks = 9

[harness]
agent = 'my agent'
"""


def test_headers_keys_and_quoted_table_names_are_found() -> None:
    found = {
        path: setting_line(text=CONFIG, field_path=path)
        for path in (
            "core",
            "core.pass_threshold",
            "core.max_parallel_checks",
            "agents.my agent",
            "agents.my agent.command",
            "harness.agent",
        )
    }
    assert found == {
        "core": 2,
        "core.pass_threshold": 3,
        "core.max_parallel_checks": 4,
        "agents.my agent": 6,
        "agents.my agent.command": 7,
        "harness.agent": 13,
    }


def test_a_key_of_another_table_or_an_array_of_tables_is_never_taken() -> None:
    assert setting_line(text=CONFIG, field_path="harness.max_parallel_checks") is None
    assert setting_line(text=CONFIG, field_path="cache.mode") is None
    assert setting_line(text=CONFIG, field_path="servers.max_parallel_checks") is None


def test_dotted_keys_stand_for_their_tables() -> None:
    text = 'core.max_parallel_checks = 2\n[cache]\nremote.url = "x"\n'
    assert setting_line(text=text, field_path="core") == 1
    assert setting_line(text=text, field_path="core.max_parallel_checks") == 1
    assert setting_line(text=text, field_path="cache.remote") == 3
