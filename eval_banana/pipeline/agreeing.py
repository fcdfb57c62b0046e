"""Stage files read together must agree, as each must with itself (stagefiles/agreement.py).

config.json's settings must be what its `sources` say they came from (the defaults, the project
file). guard.json's harness must be its agent's template in the config.json it was made from.
execute.json must hold the results of the plan.json it was made from: one per planned check, in
plan order, each judged on the planned definition (a planned check with no result yet is an
unfinished run, which `eb status` shows stale and `eb update` runs), each result still with the
verdict its `verdict_digests` entry was taken from when it was made (checks/<stem>.json holds
the result the check reached; execute.json's is what is scored). score.json must be what the
score stage makes of the execute.json it was made from. A file that disagrees with the upstream
file it records was edited by hand or damaged: `eb status` shows it `invalid`, `eb update` makes
it again, and `eb stage score` / `eb stage report` refuse to state a verdict over it. Asked only
of a file whose recorded inputs are the upstream files in the folder now: one made from other
versions is stale, which is another matter.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from eval_banana.core.errors import StageFileError
from eval_banana.core.words import first_and_count
from eval_banana.models.stages import ConfigDoc, ExecuteDoc, GuardDoc, PlanDoc, ScoreDoc
from eval_banana.stagefiles.agreement import (
    results_against_plan,
    results_against_verdicts,
    unresulted,
)
from eval_banana.stagefiles.layout import STAGE_NAMES, stage_path
from eval_banana.stagefiles.read import read_stage
from eval_banana.stagefiles.verdict import Inconsistency


def _settings_against_sources(*, run_dir: Path, doc: ConfigDoc) -> Inconsistency | None:
    """Each setting config.json says came from the defaults must be its default, and each it
    says came from the project file must be what that file sets, resolved again in memory (the
    file is small): the later stages run by the recorded value. Only a file with the bytes the
    config stage read is compared (an edited one makes the stage stale, told by `eb status`);
    values from a flag or a variable cannot be looked at again."""
    from eval_banana.stages.config import settings_against_sources

    return settings_against_sources(config=doc)


def _harness_against_config(*, run_dir: Path, doc: GuardDoc) -> Inconsistency | None:
    """The agent template guard.json records must be its agent's in config.json (the
    `[agents.<name>]` table, else the built-in): execute runs the recorded one. Compared by
    guard.json's own agent, which `eb stage guard --harness-agent` may have changed."""
    from eval_banana.core.errors import ConfigError
    from eval_banana.harness.templates import resolve_template

    if doc.harness is None:
        return None
    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    agent = doc.harness.agent
    try:
        template = resolve_template(name=agent, custom=config.settings.agents)
    except ConfigError:
        return "$.harness.agent", f"{agent!r} is no agent of stages/config.json or a built-in"
    if template != doc.harness.template:
        return "$.harness.template", (
            f"is not the template of agent {agent!r} (its [agents.{agent}] table in "
            "stages/config.json, else the built-in one)"
        )
    return None


def _results_against_plan(*, run_dir: Path, doc: ExecuteDoc) -> Inconsistency | None:
    plan: PlanDoc = read_stage(run_dir=run_dir, stage="validate")
    return results_against_plan(plan=plan, execute=doc)


def _results_against_verdicts(*, run_dir: Path, doc: ExecuteDoc) -> Inconsistency | None:
    """Each result must still have the verdict digest taken when it was made: execute.json
    alone is read, never the checks/<stem>.json files."""
    return results_against_verdicts(doc)


def _score_against_results(*, run_dir: Path, doc: ScoreDoc) -> Inconsistency | None:
    from eval_banana.stages.score import score_disagreement

    config: ConfigDoc = read_stage(run_dir=run_dir, stage="config")
    executed: ExecuteDoc = read_stage(run_dir=run_dir, stage="execute")
    return score_disagreement(config=config, execute=executed, scored=doc)


class _Agreement(NamedTuple):
    upstream: str | None  # the stage whose file the fields are compared with (None: its sources)
    compare: Callable[..., Inconsistency | None]
    remake: str  # how to make the file again


# Per stage, in the order they are asked; the first that finds a problem says it.
_AGREEMENTS: dict[str, tuple[_Agreement, ...]] = {
    "config": (
        _Agreement(
            upstream=None,
            compare=_settings_against_sources,
            remake="eb update resolves the run's settings again (or rerun the config stage: "
            "eb stage config)",
        ),
    ),
    "guard": (
        _Agreement(
            upstream="config",
            compare=_harness_against_config,
            remake="eb update guards the run again from stages/config.json (or rerun the "
            "guard stage: eb stage guard)",
        ),
    ),
    "execute": (
        _Agreement(
            upstream="validate",
            compare=_results_against_plan,
            remake="eb update runs again each check whose result is not the plan's and drops "
            "results of checks the plan does not hold, keeping every other result (or rerun "
            "the execute stage: eb stage execute)",
        ),
        _Agreement(
            upstream=None,
            compare=_results_against_verdicts,
            remake="eb update runs again each check whose verdict was edited, keeping every "
            "other result (or rerun the execute stage: eb stage execute)",
        ),
    ),
    "score": (
        _Agreement(
            upstream="execute",
            compare=_score_against_results,
            remake="eb update scores the run again from its results (or rerun the score "
            "stage: eb stage score)",
        ),
    ),
}


def disagreement(*, run_dir: Path, stage: str, doc: Any) -> StageFileError | None:
    """Why the stage file `doc` (read from `run_dir`) disagrees with the upstream file it was
    made from, or with its own records, as an error to raise or show; None when it agrees,
    when nothing is compared for its stage, or when the upstream file cannot be read (its own
    row says why)."""
    for agreement in _AGREEMENTS.get(stage, ()):
        problem = _disagreement(run_dir=run_dir, stage=stage, doc=doc, agreement=agreement)
        if problem is not None:
            return problem
    return None


def _disagreement(
    *, run_dir: Path, stage: str, doc: Any, agreement: _Agreement
) -> StageFileError | None:
    upstream, compare, remake = agreement
    try:
        found = compare(run_dir=run_dir, doc=doc)
    except StageFileError:
        return None
    if found is None:
        return None
    where, problem = found
    path = stage_path(run_dir=run_dir, stage=stage)
    against = (
        "is invalid"  # against its own records, said in the problem
        if upstream is None
        else f"disagrees with {stage_path(run_dir=run_dir, stage=upstream).relative_to(run_dir)}"
    )
    return StageFileError(
        f"Stage file {path} {against} at {where}: {problem}",
        file=str(path),
        field_path=where,
        hint=f"The file was edited by hand or damaged; {remake}.",
    )


def refuse_disagreement(*, run_dir: Path, through: str) -> None:
    """Refuse a verdict over stage files up to `through` that disagree with the files they
    were made from (call after `refuse_stale_chain`, which makes sure they were)."""
    for stage in STAGE_NAMES[: STAGE_NAMES.index(through) + 1]:
        if stage in _AGREEMENTS:
            problem = disagreement(
                run_dir=run_dir, stage=stage, doc=read_stage(run_dir=run_dir, stage=stage)
            )
            if problem is not None:
                raise problem
    if STAGE_NAMES.index(through) >= STAGE_NAMES.index("execute"):
        _refuse_unresulted(run_dir=run_dir)


def _refuse_unresulted(*, run_dir: Path) -> None:
    """A verdict over a run whose execute.json lacks a planned check's result would be one
    the run never reached: the check has to run first."""
    plan: PlanDoc = read_stage(run_dir=run_dir, stage="validate")
    executed: ExecuteDoc = read_stage(run_dir=run_dir, stage="execute")
    missing = unresulted(plan=plan, execute=executed)
    if missing:
        path = stage_path(run_dir=run_dir, stage="execute")
        raise StageFileError(
            f"Stage file {path} holds no result for planned "
            f"{'check' if len(missing) == 1 else 'checks'} "
            f"{first_and_count([repr(check_id) for check_id in missing], shown=3)} "
            "of stages/plan.json",
            file=str(path),
            field_path="$.results",
            hint="Run eb update: it runs the checks with no result (eb status shows execute "
            "stale for them) and keeps every other result.",
        )
