"""The guard stage refuses a judge run whose agent executable is missing (issue 4)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eval_banana.core.errors import GuardError
from eval_banana.stages.guard import guard, raise_if_refused
from tests.builders import make_plan
from tests.harness.judge_rig import AGENTS_DIR, config_doc, judge_check


def test_missing_executable_stops_a_judge_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    config = config_doc(project_root=tmp_path, harness={"agent": "codex"})
    plan = make_plan(checks=[judge_check(id="j", project_root=tmp_path)])
    doc = guard(config=config, plan=plan, inputs={}, mode="run")
    assert doc.ok is False
    with pytest.raises(GuardError) as caught:
        raise_if_refused(doc)
    assert "'codex'" in caught.value.message and "not found on PATH" in caught.value.message
    # eb validate refuses what stops eb run; --allow-missing-agent makes it a warning.
    validated = guard(config=config, plan=plan, inputs={}, mode="validate")
    assert validated.ok is False
    assert [p.message for p in validated.problems] == [caught.value.message]
    lenient = guard(config=config, plan=plan, inputs={}, mode="validate", require_agent=False)
    assert lenient.ok is True
    assert any("not found on PATH" in warning.message for warning in lenient.warnings)


def test_found_executable_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{AGENTS_DIR}{os.pathsep}{tmp_path}")
    config = config_doc(project_root=tmp_path, harness={"agent": "pi"})
    plan = make_plan(checks=[judge_check(id="j", project_root=tmp_path)])
    doc = guard(config=config, plan=plan, inputs={}, mode="run")
    assert doc.ok is True
    assert doc.harness is not None and doc.harness.executable == str(AGENTS_DIR / "pi")


IMPOSTORS = AGENTS_DIR / "impostors"
SYSTEM_PATH = os.environ.get("PATH", "")


def test_the_other_grok_is_recognised_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The npm package @vibe-kit/grok-cli first on PATH (its recorded --version and --help).
    monkeypatch.setenv("PATH", os.pathsep.join((str(IMPOSTORS), str(AGENTS_DIR), SYSTEM_PATH)))
    config = config_doc(project_root=tmp_path, harness={"agent": "grok"})
    plan = make_plan(checks=[judge_check(id="j", project_root=tmp_path)])
    doc = guard(config=config, plan=plan, inputs={}, mode="run")
    assert doc.ok is False
    with pytest.raises(GuardError) as caught:
        raise_if_refused(doc)
    message = caught.value.message
    assert "the npm package @vibe-kit/grok-cli" in message and "'1.0.1'" in message
    assert str(IMPOSTORS / "grok") in message
    assert caught.value.hint is not None and "pip install grok-cli-bin" in caught.value.hint
    # eb validate says the same, as an error; as a warning with --allow-missing-agent.
    validated = guard(config=config, plan=plan, inputs={}, mode="validate")
    assert validated.ok is False
    assert [p.message for p in validated.problems] == [message]
    lenient = guard(config=config, plan=plan, inputs={}, mode="validate", require_agent=False)
    assert lenient.ok is True
    assert any("@vibe-kit/grok-cli" in warning.message for warning in lenient.warnings)


def test_xai_grok_passes_and_a_custom_table_for_the_other_grok_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = make_plan(checks=[judge_check(id="j", project_root=tmp_path)])
    monkeypatch.setenv("PATH", os.pathsep.join((str(AGENTS_DIR), SYSTEM_PATH)))
    config = config_doc(project_root=tmp_path, harness={"agent": "grok"})
    assert guard(config=config, plan=plan, inputs={}, mode="run").ok is True
    # Someone who drives the npm grok on purpose describes it; its flags are not xAI's.
    monkeypatch.setenv("PATH", os.pathsep.join((str(IMPOSTORS), str(AGENTS_DIR), SYSTEM_PATH)))
    custom = config_doc(
        project_root=tmp_path,
        harness={"agent": "grok"},
        agents={"grok": {"shared_flags": [], "prompt_flag": "--prompt"}},
    )
    assert guard(config=custom, plan=plan, inputs={}, mode="run").ok is True
