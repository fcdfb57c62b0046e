"""Helpers for the harness judge tests: stand-in agents, hand-built contexts and checks."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval_banana.core.stem import artifact_stem
from eval_banana.harness.resolve import resolve_harness
from eval_banana.harness.templates import parse_agent_tables
from eval_banana.models.check import HarnessJudgeCheck
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, PlannedCheck
from eval_banana.runners.base import RunContext
from eval_banana.runners.harness_judge import run_harness_judge
from eval_banana.stagefiles.layout import envelope

AGENTS_DIR = Path(__file__).resolve().parents[1] / "agents"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
AGENT_NAMES = ("claude", "codex", "gemini", "grok", "openhands", "opencode", "pi")


def judge_check(
    *,
    id: str,
    project_root: Path,
    instructions: str = "Decide whether the README documents the install command.",
    description: str = "The README explains how to install the tool.",
    model: str | None = None,
) -> PlannedCheck:
    """A planned harness_judge check, as the validate stage would normalize it."""
    definition = HarnessJudgeCheck(
        schema_version=1,
        id=id,
        type="harness_judge",
        description=description,
        instructions=instructions,
        model=model,
    ).model_dump(mode="json")
    return PlannedCheck(
        id=id,
        type="harness_judge",
        description=description,
        source_path=str(project_root / "eval_checks" / f"{id}.yaml"),
        stem=artifact_stem(check_id=id),
        check_definition_sha256="sha256:" + "ab" * 32,
        definition=definition,
    )


def config_doc(
    *,
    project_root: Path,
    harness: dict[str, Any],
    agents: dict[str, Any] | None = None,
    core: dict[str, Any] | None = None,
) -> ConfigDoc:
    """A config stage document with `[harness]`/`[core]` values and raw `[agents]` tables."""
    templates = parse_agent_tables(raw=agents or {}, config_path="config.toml")
    return ConfigDoc.model_validate(
        {
            **envelope(stage="config", run_id="20261130_002431_b31f0879", inputs={}),
            "project_root": str(project_root),
            "config_file": None,
            "settings": {"harness": harness, "agents": templates, "core": core or {}},
            "sources": {},
        }
    )


@dataclass
class Rig:
    """Runs judge checks in a fresh project with the stand-ins first on PATH."""

    root: Path
    run_dir: Path
    record: Path
    env: dict[str, str] = field(default_factory=dict)
    tokens: list[int] = field(default_factory=list)

    def context(
        self,
        *,
        agent: str | None,
        check: PlannedCheck | None = None,
        harness: dict[str, Any] | None = None,
        agents: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        cancel: threading.Event | None = None,
    ) -> RunContext:
        settings = {"agent": agent, "timeout_seconds": 20, **(harness or {})}
        config = config_doc(project_root=self.root, harness=settings, agents=agents)
        base_env = {**os.environ, "STANDIN_RECORD": str(self.record), **self.env, **(env or {})}
        return RunContext(
            check=check or judge_check(id="judge", project_root=self.root),
            config=config,
            harness=resolve_harness(
                settings=config.settings, project_root=Path(config.project_root)
            ),
            run_dir=self.run_dir,
            project_root=self.root,
            base_env=base_env,
            placeholder_env=base_env,
            cancel=cancel or threading.Event(),
            report_tokens=self.tokens.append,
        )

    def run(self, *, agent: str | None, **kwargs: Any) -> CheckResult:
        return run_harness_judge(self.context(agent=agent, **kwargs))

    def received(self) -> list[dict[str, Any]]:
        """What the stand-ins were launched with, one entry per launch."""
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]
