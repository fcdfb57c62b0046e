"""Whether every shard `eb merge` joins judged with the same agent program.

`[harness] agent` names an agent; what it runs is its `[agents.<name>]` table (or the built-in
of that name), and `[harness.env]` sets variables for it. One worker's config file edited to
another command keeps the name: the settings check (shardset.py) sees nothing, and the merged
run, whose config is the first shard's, would pass on a verdict of a program it never names.
So the shards' agent tables and variables must agree, and so must the settings each recorded
its judges' verdicts under (execute.json's `verdict_setting_parts`), part by part, for judges
of one kind. Values are never shown: `[harness.env]` and a template's variables may hold keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from eval_banana.cache.verdictsettings import BUDGET_PARTS, PART_WORDS
from eval_banana.models.config import AgentTemplate, Settings
from eval_banana.scaleout.shardrun import ShardRun, refuse

# The parts that say which kind of check a recorded set of settings is for: checks of one kind
# (a judge of one model, one sample count; or a script) are decided under the same other parts
# in every shard of one run.
_KIND_PARTS: tuple[str, ...] = ("harness.agent", "model", "core.repeats")

_HINT = (
    "Give every shard job the same config file (the one of the commit `eb plan` or the matrix "
    "ran at), then rerun the shards and merge their folders: the parts must be judged by one "
    "agent program."
)


def _agent_table(settings: Settings) -> AgentTemplate | None:
    """The `[agents.<name>]` table of the agent `[harness] agent` names (None: the built-in)."""
    return settings.agents.get(settings.harness.agent or "")


def _fields_apart(mine: Mapping[str, object], theirs: Mapping[str, object]) -> str:
    """The keys whose values differ, as a message says them (`command differs`)."""
    keys = sorted(key for key in mine.keys() | theirs.keys() if mine.get(key) != theirs.get(key))
    return f"{', '.join(keys)} {'differs' if len(keys) == 1 else 'differ'}"


def check_same_agent(*, run: ShardRun, first: ShardRun) -> None:
    """Refuse shards whose config defines the agent they judge with otherwise (its table, or
    the variables `[harness.env]` sets for it); `harness.agent` itself is compared already."""
    name = run.config.settings.harness.agent or ""
    mine, theirs = _agent_table(run.config.settings), _agent_table(first.config.settings)
    if mine != theirs:
        if mine is None or theirs is None:
            which = run if mine is None else first
            apart = f"{which.label} has no [agents.{name}] table (the built-in agent)"
        else:
            apart = f"their [agents.{name}] {_fields_apart(mine.model_dump(), theirs.model_dump())}"
        raise refuse(
            f"{run.label} and {first.label} judged with other programs under the agent name "
            f"'{name}' ({apart})",
            run_dir=run.run_dir,
            hint=_HINT,
        )
    mine_env, theirs_env = run.config.settings.harness.env, first.config.settings.harness.env
    if mine_env != theirs_env:
        raise refuse(
            f"{run.label} and {first.label} set other variables for the agent: [harness.env] "
            f"{_fields_apart(mine_env, theirs_env)}",
            run_dir=run.run_dir,
            hint=_HINT,
        )


def check_same_judging(*, runs: Sequence[ShardRun]) -> None:
    """Refuse shards that recorded other settings for checks of one kind (execute.json's
    `verdict_setting_parts`: the agent's command line, variables, dialect, executable, the
    environment policy), and shards whose guard resolved another agent than another's. Each
    job's budgets (time limits) may differ."""
    seen: dict[tuple[str | None, ...], tuple[ShardRun, Mapping[str, str]]] = {}
    for run in runs:
        for parts in run.execute.verdict_setting_parts.values():
            kind = tuple(parts.get(name) for name in _KIND_PARTS)
            earlier = seen.setdefault(kind, (run, parts))
            other, recorded = earlier
            if other is run:
                continue
            apart = [
                name
                for name in sorted(parts.keys() | recorded.keys())
                if name not in BUDGET_PARTS and parts.get(name) != recorded.get(name)
            ]
            if apart:
                words = ", ".join(PART_WORDS.get(name, name) for name in apart)
                verb = "differs" if len(apart) == 1 else "differ"
                raise refuse(
                    f"{run.label} decided its checks under other settings than {other.label} "
                    f"did for checks of the same kind ({words} {verb})",
                    run_dir=run.run_dir,
                    hint=_HINT,
                )
    _check_same_guard(runs=runs)


def _check_same_guard(*, runs: Sequence[ShardRun]) -> None:
    """The merged guard.json names one shard's agent: every shard that ran judges must have
    resolved the same one (the executable's place and the time limit are each job's own)."""
    judging = [run for run in runs if run.guard.harness is not None]
    for run in judging[1:]:
        mine, theirs = run.guard.harness, judging[0].guard.harness
        assert mine is not None and theirs is not None
        fields = [
            name
            for name in ("agent", "template", "model", "reasoning_effort")
            if getattr(mine, name) != getattr(theirs, name)
        ]
        if fields:
            raise refuse(
                f"{run.label} ran its judges with another agent than {judging[0].label} (its "
                f"guard.json's {', '.join(fields)} {'differs' if len(fields) == 1 else 'differ'})",
                run_dir=run.run_dir,
                hint=_HINT,
            )
