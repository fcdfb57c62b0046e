"""The agent's environment: layering order, placeholders and what cannot be overridden."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from eval_banana.harness import command
from eval_banana.harness.command import build_env
from eval_banana.harness.templates import BUILTIN_TEMPLATES
from eval_banana.models.config import AgentTemplate

ROOT = Path("/proj")


def test_layering_order_and_protected_values() -> None:
    template = AgentTemplate(
        command=["a"],
        model_env_vars=["MODEL_A", "MODEL_B"],
        provider_env={"P1": "{env:SECRET}-x", "CI": "from-provider", "P2": "keep"},
        fixed_env={"FIXED": "yes"},
    )
    env = build_env(
        template=template,
        base_env={"SECRET": "s3", "CI": "0", "HOME": "/h", "MODEL_A": "old"},
        placeholder_env={"SECRET": "s3"},
        harness_env={
            "P2": "from-harness-env",
            "RAW": "{env:SECRET}",
            "MODEL_A": "harness-tries",
            "EVAL_BANANA_HARNESS_AGENT": "spoof",
            "FIXED": "no",
        },
        model="m-1",
        project_root=ROOT,
        agent="mine",
    )
    assert env["HOME"] == "/h"  # step 1: the base environment
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env["CI"] == "from-provider"  # step 3 over step 2
    assert env["P1"] == "s3-x"  # placeholder read from eb's environment
    assert env["P2"] == "from-harness-env"  # step 4 over step 3
    assert env["RAW"] == "{env:SECRET}"  # [harness.env] is verbatim
    assert env["FIXED"] == "no"  # [harness.env] may undo a template's fixed value
    assert env["MODEL_A"] == env["MODEL_B"] == "m-1"  # step 5 beats [harness.env]
    assert env["EVAL_BANANA_PROJECT_ROOT"] == str(ROOT)
    assert env["EVAL_BANANA_HARNESS_AGENT"] == "mine"  # step 6 cannot be overridden


def test_a_placeholder_reads_ebs_environment_not_what_the_policy_let_through() -> None:
    # Under an allowlist, base_env lacks MY_SECRET; the agent still gets the value it is given.
    env = build_env(
        template=AgentTemplate(command=["a"], provider_env={"MY_AGENT_KEY": "{env:MY_SECRET}"}),
        base_env={"PATH": "/bin"},
        placeholder_env={"PATH": "/bin", "MY_SECRET": "sk-live-0123456789"},
        harness_env={},
        model=None,
        project_root=ROOT,
        agent="a",
    )
    assert env["MY_AGENT_KEY"] == "sk-live-0123456789"
    assert "MY_SECRET" not in env


def test_harness_env_can_override_ci() -> None:
    env = build_env(
        template=AgentTemplate(command=["a"]),
        base_env={},
        placeholder_env={},
        harness_env={"CI": "false"},
        model=None,
        project_root=ROOT,
        agent="a",
    )
    assert env["CI"] == "false"


def test_no_model_means_model_vars_untouched() -> None:
    env = build_env(
        template=BUILTIN_TEMPLATES["claude"],
        base_env={"ANTHROPIC_MODEL": "user-choice"},
        placeholder_env={},
        harness_env={},
        model=None,
        project_root=ROOT,
        agent="claude",
    )
    assert env["ANTHROPIC_MODEL"] == "user-choice"
    assert "ANTHROPIC_DEFAULT_OPUS_MODEL" not in env


def test_gemini_trusts_the_workspace() -> None:
    env = build_env(
        template=BUILTIN_TEMPLATES["gemini"],
        base_env={},
        placeholder_env={},
        harness_env={},
        model=None,
        project_root=ROOT,
        agent="gemini",
    )
    assert env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"


def test_missing_placeholder_is_empty_and_warned_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(command, "_warned_missing", set())
    template = AgentTemplate(
        command=["a"], provider_env={"K1": "<{env:NOPE_UNSET}>", "K2": "{env:NOPE_UNSET}{env:bad-}"}
    )
    with caplog.at_level(logging.WARNING, logger="eval_banana.runners.harness_judge"):
        for _ in range(2):
            env = build_env(
                template=template,
                base_env={},
                placeholder_env={},
                harness_env={},
                model=None,
                project_root=ROOT,
                agent="a",
            )
    assert env["K1"] == "<>"
    assert env["K2"] == "{env:bad-}"  # not a valid NAME: left alone
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [
        "Harness provider env placeholder referenced missing environment variable NOPE_UNSET"
    ]
