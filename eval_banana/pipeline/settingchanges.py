"""Whether a recorded result was decided under the settings a rerun would use: its agent, the
agent's command line, variables, executable, model, effort and timeout, a script's timeout,
the samples and the env policy (`cache/verdictsettings.py`, as execute.json records them), and the
isolation it was judged under (its own `details.isolation`). Part of the execute stage's
staleness, for `eb status` and `eb update` (which judges again the checks it names): a pass
judged by another agent, or under a longer time limit, is not the verdict a fresh run gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from eval_banana.cache.verdictsettings import BUDGET_PARTS, changed_parts, verdict_settings
from eval_banana.core.errors import EvalBananaError, GuardError, StageFileError
from eval_banana.core.words import and_list
from eval_banana.isolation.modes import (
    WATCHED_MODES,
    check_mode,
    ignore_list,
    judged_as_strictly,
    mode_setting,
    setting_name,
)
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import (
    ConfigDoc,
    ExecuteDoc,
    GuardDoc,
    PlanDoc,
    PlannedCheck,
    ResolvedHarness,
)
from eval_banana.stagefiles.read import read_stage


class SettingsNow(NamedTuple):
    """What a rerun of the execute stage runs the checks under: config.json's settings and
    the harness guard.json resolved (each as `eb update` would rebuild them first)."""

    config: ConfigDoc
    harness: ResolvedHarness | None


def settings_in_folder(*, config: ConfigDoc, guard: GuardDoc) -> SettingsNow:
    """The settings the run folder's config.json and guard.json hold (`eb update` compares
    after it has rebuilt them)."""
    return SettingsNow(config=config, harness=guard.harness)


def settings_to_come(*, run_dir: Path, config: ConfigDoc) -> SettingsNow | None:
    """What `eb update` would run the checks under, for `eb status`: once the config file
    changed, the configuration resolved again in memory (as the config stage will resolve it,
    under the flags the run was made with and the variables set now) and its agent found
    again; once the agent's command is found elsewhere, config.json's settings and the agent
    found again; else config.json's settings and guard.json's harness. None when they cannot be
    told now (guard.json unreadable, the configuration no longer resolves): the stages before
    execute say why."""
    try:
        guard: GuardDoc = read_stage(run_dir=run_dir, stage="guard")
    except StageFileError:
        return None
    import os

    from eval_banana.harness.resolve import resolve_harness
    from eval_banana.pipeline.rerun import resolved_again

    now = config
    try:
        if _config_file_changed(config=config):
            now = resolved_again(previous=config, run_dir=run_dir, environ=os.environ)
        elif executable_moved(doc=guard, run_dir=run_dir) is None:
            return settings_in_folder(config=config, guard=guard)
        # The guard is resolved again: its agent found where it is found now.
        harness = resolve_harness(settings=now.settings, project_root=Path(now.project_root))
    except EvalBananaError:
        return None
    return SettingsNow(config=now, harness=harness)


def executable_moved(*, doc: GuardDoc, run_dir: Path) -> str | None:
    """The agent's command found elsewhere now than the guard found it, where the verdict key
    tells them apart (a project file on either side, or found now where it was not), which
    the judges would run: the guard is resolved again. Another place outside the project is
    the same agent to the verdict key (a merge machine's PATH is not its shards'); not found
    now is said by `eb update` when a judge must run again (`refuse_missing_agent`)."""
    from eval_banana.cache.verdictsettings import agent_executable
    from eval_banana.core.words import visible
    from eval_banana.harness.resolve import executable_now

    harness = doc.harness
    if harness is None or not doc.judge_checks or not harness.template.command:
        return None
    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    root = Path(config.project_root)
    now = executable_now(harness=harness, project_root=root)
    if now is None or now == harness.executable:
        return None
    moved = harness.model_copy(update={"executable": now})
    if harness.executable is not None and not any(
        agent_executable(harness=found, project_root=root).in_project for found in (harness, moved)
    ):
        return None
    command = visible(harness.template.command[0])
    was = visible(harness.executable or "not found")
    return f"the agent's command {command} is found at {visible(now)} now, not {was}"


def refuse_missing_agent(*, doc: GuardDoc, checks: list[PlannedCheck], project_root: Path) -> None:
    """Raise the guard's refusal when one of `checks` (to run again) is a judge and the
    agent's command is not found now: the results kept need no agent, a judge run does."""
    from eval_banana.harness.resolve import (
        executable_now,
        missing_executable_hint,
        missing_executable_message,
    )

    harness = doc.harness
    if harness is None or not any(check.type == "harness_judge" for check in checks):
        return
    if executable_now(harness=harness, project_root=project_root) is not None:
        return
    missing = harness.model_copy(update={"executable": None})
    message = missing_executable_message(harness=missing, project_root=project_root)
    if message is not None:
        raise GuardError(
            message, field_path="harness.agent", hint=missing_executable_hint(harness=missing)
        )


def _config_file_changed(*, config: ConfigDoc) -> bool:
    """Whether the config file config.json was resolved from has other bytes now, or is gone
    (its config stage is stale, and `eb update` resolves the configuration again)."""
    from eval_banana.core.files import sha256_file

    if config.config_file is None or config.config_file_sha256 is None:
        return False
    path = Path(config.config_file)
    return not path.is_file() or sha256_file(path=path) != config.config_file_sha256


def setting_changes(*, plan: PlanDoc, executed: ExecuteDoc, now: SettingsNow) -> dict[str, str]:
    """Planned check id -> which setting its result was decided under differs from `now`'s
    (`[harness] agent changed`), in plan order; the checks without a result are left out (they
    have their own reason)."""
    results = {result.check_id: result for result in executed.results}
    checks = [check for check in plan.checks if check.id in results]
    record = verdict_settings(
        checks=checks,
        settings=now.config.settings,
        harness=now.harness,
        project_root=Path(now.config.project_root),
    )
    budgets = _shard_budgets(executed=executed)
    changes: dict[str, str] = {}
    for check in checks:
        result = results[check.id]
        recorded = executed.verdict_settings.get(check.id)
        current = record.by_check[check.id]
        if recorded is None:
            # Written by an eb that did not record them: only what the result itself says.
            named = _differences_told_by_result(check=check, result=result, now=now)
        elif recorded == current:
            named = []
        elif recorded not in executed.verdict_setting_parts:
            named = ["the settings it was decided under"]
        else:
            parts = changed_parts(
                recorded=executed.verdict_setting_parts[recorded], now=record.parts[current]
            )
            parts = [
                part
                for part in parts
                if record.parts[current].get(part) not in budgets.get(part, set())
                # An agent not found now changed nothing a result was judged under: the
                # guard refuses `eb update` when a judge must run again without it.
                and not (part == "agent.executable" and not record.executable.where)
            ]
            named = [record.named(part) for part in parts]
        isolation = _isolation_change(check=check, result=result, config=now.config)
        if isolation is not None:
            named.append(isolation)
        if named:
            changes[check.id] = f"{and_list(named)} changed"
    return changes


def _shard_budgets(*, executed: ExecuteDoc) -> dict[str, set[str]]:
    """Of a merged run: budget part -> the digests of every value its shards recorded. Each
    shard chose its own time limits (docs/scale-out.md) and config.json holds one shard's, so a
    result's limit is stale only when the limit now is none any shard ran under (a limit the
    configuration changed since). Of any other run: none, each part compared as it is."""
    if not executed.merged_from:
        return {}
    budgets: dict[str, set[str]] = {}
    for parts in executed.verdict_setting_parts.values():
        for part in BUDGET_PARTS:
            if part in parts:
                budgets.setdefault(part, set()).add(parts[part])
    return budgets


def _differences_told_by_result(
    *, check: PlannedCheck, result: CheckResult, now: SettingsNow
) -> list[str]:
    """The settings a result from an eb that recorded none provably ran under otherwise, by
    what its `details` say (a judge's agent, model, effort, dialect and timeout; a script's
    timeout). What it does not say is taken as unchanged; a result the verdict cache reused
    says what the run that judged it ran under, so it may be judged once more."""
    details = result.details
    expected: dict[str, object]
    if check.type == "deterministic":
        expected = {"timeout_seconds": now.config.settings.core.check_timeout_seconds}
        words = {"timeout_seconds": "[core] check_timeout_seconds"}
    elif check.type == "harness_judge":
        expected, words = _judge_details(check=check, harness=now.harness)
    else:
        return []
    return [
        words[name]
        for name, value in expected.items()
        if name in details and details[name] != value
    ]


def _judge_details(
    *, check: PlannedCheck, harness: ResolvedHarness | None
) -> tuple[dict[str, object], dict[str, str]]:
    """What a judge's result records of its harness, as `harness` would record it now."""
    from eval_banana.harness.resolve import effective_model

    words = {
        "agent_type": "[harness] agent",
        "model": "the model",
        "reasoning_effort": "the reasoning effort",
        "output_dialect": "the agent's output_dialect",
        "timeout_seconds": "[harness] timeout_seconds",
    }
    if harness is None:
        return {"agent_type": None}, words
    expected: dict[str, object] = {
        "agent_type": harness.agent,
        "model": effective_model(harness=harness, check_model=check.definition.get("model")),
        "reasoning_effort": harness.reasoning_effort,
        "output_dialect": harness.template.output_dialect,
        "timeout_seconds": harness.timeout_seconds,
    }
    return expected, words


def _isolation_change(*, check: PlannedCheck, result: CheckResult, config: ConfigDoc) -> str | None:
    """Why a result's isolation is not one the check takes now, as the verdict cache decides
    (isolation/modes.py): judged unwatched, or ignoring a pattern `[harness] isolation_ignore`
    no longer lists, for a check watched now; or an isolation error of a watched run, for a
    check no longer watched."""
    wanted = check_mode(config=config, check=check)
    record = result.details.get("isolation")
    watched = isinstance(record, dict) and record.get("mode") in WATCHED_MODES
    setting = setting_name(mode_setting(check.type))
    if wanted == "off":
        if watched and result.details.get("error_class") == "isolation":
            return f'{setting} ("off" now; its result is an isolation error of a watched run)'
        return None
    if judged_as_strictly(record=record, wanted=wanted, ignore=ignore_list(config=config)):
        return None
    if not watched:
        return f'{setting} ("{wanted}" now; it was judged unwatched)'
    return "[harness] isolation_ignore (a pattern it was judged under is gone)"
