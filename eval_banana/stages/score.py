"""Stage 6, score: totals, percentage, threshold and the run verdict."""

from __future__ import annotations

import json
from pathlib import Path

from eval_banana.harness.usage import usage_totals
from eval_banana.models.repeats import is_flaky
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, ExecuteDoc, ScoreDoc
from eval_banana.runners.results import error_class_counts
from eval_banana.stagefiles.layout import envelope
from eval_banana.stagefiles.verdict import (
    Inconsistency,
    family_scores,
    meets,
    percentage,
    run_passes,
)
from eval_banana.stagefiles.write import write_stage_model
from eval_banana.stages.execute import document_digest


def incremental_selection(*, config: ConfigDoc) -> bool:
    """Whether an incremental selection that can select nothing was asked for: --changed-since,
    or --last-failed with --last-failed-none skip. (By default --last-failed runs every selected
    check when none that can run failed, so a run of it without results is one whose every
    selected check is skipped, and such a run does not pass.)"""
    selection = config.selection
    return selection.changed_since is not None or (
        selection.last_failed and config.settings.core.last_failed_none == "skip"
    )


def is_cached(*, result: CheckResult) -> bool:
    """Whether a result was reused from the verdict cache."""
    cache = result.details.get("cache")
    return isinstance(cache, dict) and cache.get("hit") is True


def score(
    *, config: ConfigDoc, execute: ExecuteDoc, inputs: dict[str, str] | None = None
) -> ScoreDoc:
    """Pure: the score document of an execute document.

    Statuses are already judged against each check's expectation (in execute), so a
    point is a satisfied expectation: a control earns it only by really failing.
    """
    results = execute.results
    statuses = [result.status for result in results]
    earned = sum(result.score for result in results)
    total = len(results)
    threshold = config.settings.core.pass_threshold
    # An empty plan that may pass: a shard that received no check, or --changed-since /
    # --last-failed selecting nothing (nothing that could have broken was touched). Any other
    # empty selection never gets here (it is a setup error).
    nothing_selected = total == 0 and (
        execute.allow_empty is not None or incremental_selection(config=config)
    )
    met = meets(earned=earned, total=total, threshold=threshold) or nothing_selected
    errored = statuses.count("error")
    controls = [result for result in results if result.expect == "fail"]
    aborted = execute.aborted_by
    # A stopped run never passes, whatever its partial score says; nor does one that
    # stopped launching at maxfail (its unstarted checks are errors anyway).
    flaky = sum(1 for result in results if is_flaky(result.details))
    fail_on_flaky = config.settings.core.fail_on_flaky
    # --fail-on-flaky: a check whose samples disagreed is not a result to ship on.
    # A shard holds part of each family: its gate is judged where the shards are merged, or
    # a CI matrix job would fail for the share of the failures it happened to receive.
    in_shard = config.selection.shard is not None
    families = family_scores(
        results=results,
        gates={} if in_shard else execute.family_gates,
        gates_at_merge=execute.family_gates if in_shard else None,
        sizes=execute.family_sizes,
    )
    passed = run_passes(
        gates_held=all(family.gate_held for family in families),
        met=met,
        errored=errored,
        aborted=aborted is not None,
        halted=execute.halted_by is not None,
        flaky=flaky,
        fail_on_flaky=fail_on_flaky,
    )
    status = "aborted" if aborted is not None else ("passed" if passed else "failed")
    if inputs is None:
        inputs = {"config": document_digest(doc=config), "execute": document_digest(doc=execute)}
    document = envelope(stage="score", run_id=execute.run_id, inputs=inputs)
    document.update(
        total_checks=total,
        passed_checks=statuses.count("passed"),
        failed_checks=statuses.count("failed"),
        errored_checks=errored,
        points_earned=earned,
        total_points=total,
        percentage=percentage(earned=earned, total=total),
        pass_threshold=threshold,
        meets_threshold=met,
        run_passed=passed,
        not_run_checks=sum(1 for result in results if result.details.get("not_run") is True),
        aborted_by=aborted,
        status=status,
        # Points already count satisfied expectations; these say how many were controls.
        control_checks=len(controls),
        controls_met=sum(1 for result in controls if result.status == "passed"),
        # Skipped checks (`skip:` in their file) are outside every count above.
        skipped_checks=len(execute.skipped),
        halted_by=execute.halted_by,
        error_classes=[entry.model_dump(mode="json") for entry in error_class_counts(results)],
        judge_usage=usage_totals(
            [
                result.details.get("usage")
                for result in results
                if result.check_type == "harness_judge"
            ]
        ),
        cached_checks=sum(1 for result in results if is_cached(result=result)),
        flaky_checks=flaky,
        fail_on_flaky=fail_on_flaky,
        families=families,
    )
    return ScoreDoc.model_validate(document)


# The envelope says when, by what and from what a score was written, not what it says.
_NOT_DERIVED = frozenset(
    {"schema_uri", "schema_version", "stage", "tool_version", "run_id", "created_at", "inputs"}
)


def score_disagreement(
    *, config: ConfigDoc, execute: ExecuteDoc, scored: ScoreDoc
) -> Inconsistency | None:
    """The first field of `scored` that is not what this stage makes of `execute` (None: it
    is exactly that), under the threshold and --fail-on-flaky it records (`eb stage score`
    may have been given others than config.json's). Scoring again is the one rule: a score
    whose counts were edited to agree with a forged verdict still differs from its results."""
    core = config.settings.core.model_copy(
        update={"pass_threshold": scored.pass_threshold, "fail_on_flaky": scored.fail_on_flaky}
    )
    settings = config.settings.model_copy(update={"core": core})
    again = score(
        config=config.model_copy(update={"settings": settings}),
        execute=execute,
        inputs=scored.inputs,
    )
    stored = scored.model_dump()
    for name, value in again.model_dump().items():
        if name not in _NOT_DERIVED and stored.get(name) != value:
            if isinstance(value, list | dict):
                return f"$.{name}", "is not what stages/execute.json's results score"
            return f"$.{name}", (
                f"{json.dumps(stored.get(name), allow_nan=True)}, but stages/execute.json's "
                f"results score {json.dumps(value, allow_nan=True)}"
            )
    return None


def write_score_stage(*, run_dir: Path, doc: ScoreDoc) -> str:
    """Write stages/score.json; return the digest of its bytes."""
    return write_stage_model(run_dir=run_dir, stage="score", model=doc)
