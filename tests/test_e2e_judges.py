"""Every built-in agent template end to end: `eb run` as a real subprocess with stand-in agents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import STANDIN_AGENTS, judge_yaml

AGENTS = ("claude", "codex", "gemini", "grok", "openhands", "opencode", "pi")
# openhands with --override-with-envs needs its LLM settings in the environment, as the real CLI.
NEEDS = {"openhands": (("--harness-model", "openai/gpt-x"), {"LLM_API_KEY": "test-key"})}


def _project(root: Path, *, agent: str, extra_config: str = "") -> Path:
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(
        f'[core]\noutput_dir = "runs"\n\n[harness]\nagent = "{agent}"\ntimeout_seconds = 30\n'
        + extra_config
    )
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "good.yaml").write_text(
        judge_yaml("good", instructions="Is the sky blue?\nstandin: score=1 reason=looks_right")
    )
    (root / "eval_checks" / "bad.yaml").write_text(
        judge_yaml("bad", instructions="Is grass red?\nstandin: score=0 reason=it_is_green")
    )
    return root


def _eb(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = dict(os.environ)
    environ["PATH"] = f"{STANDIN_AGENTS}{os.pathsep}{environ['PATH']}"
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), *args],
        capture_output=True,
        text=True,
        env=environ,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def _report(root: Path) -> dict[str, object]:
    (run_dir,) = list((root / "runs").iterdir())
    report: dict[str, object] = json.loads((run_dir / "report.json").read_text())
    return report


@pytest.mark.slow
@pytest.mark.parametrize("agent", AGENTS)
def test_each_builtin_agent_gives_real_verdicts(tmp_path: Path, agent: str) -> None:
    root = _project(tmp_path / agent, agent=agent)
    record = tmp_path / "record.jsonl"
    args, env = NEEDS.get(agent, ((), {}))
    result = _eb(root, *args, env={"STANDIN_RECORD": str(record), **env})
    assert result.returncode == 1, result.stderr
    report = _report(root)
    checks = {c["check_id"]: c for c in report["checks"]}  # type: ignore[attr-defined]
    assert checks["good"]["status"] == "passed", checks["good"]
    assert checks["good"]["reason"] == "looks right"
    assert checks["bad"]["status"] == "failed" and checks["bad"]["reason"] == "it is green"
    assert checks["good"]["details"]["agent_type"] == agent
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(calls) == 2 and all(call["stdin_is_devnull"] for call in calls)
    assert all(call["cwd"] == str(root.resolve()) for call in calls)
    assert all(call["env"]["EVAL_BANANA_HARNESS_AGENT"] == agent for call in calls)
    (run_dir,) = list((root / "runs").iterdir())
    prompts = sorted((run_dir / "checks").glob("*.prompt.txt"))
    assert len(prompts) == 2
    assert "Check Description:" in prompts[0].read_text()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("agent", "broken"),
    [
        ("claude", '[agents.claude]\nshared_flags = ["-p", "--output-format", "stream-json"]\n'),
        ("codex", '[agents.codex]\ncommand = ["codex"]\n'),
        ("gemini", '[agents.gemini]\nprompt_flag = "--prompt-file"\n'),
        ("grok", '[agents.grok]\nshared_flags = ["--always-aprove"]\n'),
        ("openhands", '[agents.openhands]\nprompt_flag = ""\n'),
        ("opencode", '[agents.opencode]\ncommand = ["opencode"]\n'),
        ("pi", '[agents.pi]\ncommand = ["pi"]\n'),
    ],
)
def test_a_wrong_flag_makes_the_standin_fail_and_the_check_error(
    tmp_path: Path, agent: str, broken: str
) -> None:
    root = _project(tmp_path / agent, agent=agent, extra_config="\n" + broken)
    result = _eb(root)
    assert result.returncode == 1, result.stderr
    for check in _report(root)["checks"]:  # type: ignore[attr-defined]
        assert check["status"] == "error", (agent, check)
        assert check["score"] == 0


@pytest.mark.slow
def test_model_and_effort_reach_the_agent_through_its_channel(tmp_path: Path) -> None:
    root = _project(tmp_path / "claude", agent="claude")
    result = _eb(
        root,
        "--harness-model",
        "opus-x",
        "--harness-reasoning-effort",
        "high",
        env={"STANDIN_EXPECT_MODEL": "opus-x", "STANDIN_EXPECT_EFFORT": "high"},
    )
    assert result.returncode == 1, result.stderr
    checks = {c["check_id"]: c for c in _report(root)["checks"]}  # type: ignore[attr-defined]
    assert checks["good"]["status"] == "passed"
    assert checks["good"]["details"]["model"] == "opus-x"
    assert checks["good"]["details"]["reasoning_effort"] == "high"


@pytest.mark.slow
def test_missing_agent_executable_stops_before_anything_runs(tmp_path: Path) -> None:
    root = _project(
        tmp_path / "p",
        agent="claude",
        extra_config='\n[agents.claude]\ncommand = ["no-such-claude"]\n',
    )
    result = _eb(root)
    assert result.returncode == 2
    assert "no-such-claude" in result.stderr and "claude" in result.stderr
    (run_dir,) = list((root / "runs").iterdir())
    assert not (run_dir / "report.json").exists()
    guard = json.loads((run_dir / "stages" / "guard.json").read_text())
    assert guard["ok"] is False


@pytest.mark.slow
def test_a_broken_judge_never_looks_like_a_pass(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", agent="claude")
    checks = root / "eval_checks"
    (checks / "silent.yaml").write_text(
        judge_yaml("silent", instructions="Anything?\nstandin: mode=no_verdict")
    )
    (checks / "crashed.yaml").write_text(
        judge_yaml("crashed", instructions="Anything?\nstandin: mode=verdict_exit1 score=1")
    )
    (checks / "failed_result.yaml").write_text(
        judge_yaml("failed_result", instructions="Anything?\nstandin: mode=error_result score=1")
    )
    result = _eb(root)
    assert result.returncode == 1
    checks_by_id = {c["check_id"]: c for c in _report(root)["checks"]}  # type: ignore[attr-defined]
    assert checks_by_id["good"]["status"] == "passed"
    for check_id in ("silent", "crashed", "failed_result"):
        assert checks_by_id[check_id]["status"] == "error", checks_by_id[check_id]
        assert checks_by_id[check_id]["score"] == 0
    assert checks_by_id["silent"]["error_detail"] == (
        'Harness judge output did not contain a valid JSON verdict with "score": 0 or 1.'
    )
    assert checks_by_id["crashed"]["error_detail"] == "Harness judge agent exited with code 1"
    assert checks_by_id["crashed"]["exit_code"] == 1
