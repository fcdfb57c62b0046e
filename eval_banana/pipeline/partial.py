"""A rerun of part of a run's checks (`eb stage execute --check-id`, `eb update`): its fresh
results merged over the earlier execute stage, one result per planned check again."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from eval_banana.harness.usage import usage_tokens, usage_totals
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ExecuteDoc, PlanDoc, PlannedCheck
from eval_banana.runners.results import instant_error, judge_expectation, write_check_result
from eval_banana.stagefiles.verdictdigest import verdict_digest
from eval_banana.stagefiles.write import refuse_wrong_place, refusing_wrong_place
from eval_banana.stages.execute import execution_ms

# What to do about a folder in the place of a result file (or a file in the place of checks/),
# once it is removed: eb never removes what it did not make, and a rename cannot replace it.
RESULT_FILE_FIX = (
    "then run eb update: it writes the file again from the result stages/execute.json holds, "
    "running no check; eb never removes what it did not make"
)

# (check id, definition digest) -> the earlier result of that check under that definition.
Earlier = dict[tuple[str, str], CheckResult]


def _earlier(previous: ExecuteDoc | None) -> Earlier:
    """The earlier results by check and definition, read once: a rerun of one row of a
    10,000-case family keeps 9,999 of them, and a scan of the list for each would be
    quadratic. The first result of a check under a definition is the one kept."""
    found: Earlier = {}
    for result in previous.results if previous is not None else ():
        found.setdefault((result.check_id, result.check_definition_sha256), result)
    return found


def _kept_result(*, check: PlannedCheck, earlier: Earlier) -> CheckResult:
    """The earlier result of a check a selective rerun left out, if it is for this definition:
    naming the file the check lives in now, as a fresh run's would (a check file moved or
    renamed keeps its definition, and its verdict)."""
    kept = earlier.get((check.id, check.check_definition_sha256))
    if kept is not None:
        if kept.source_path != check.source_path:
            return kept.model_copy(update={"source_path": check.source_path})
        return kept
    return judge_expectation(
        result=instant_error(
            check=check,
            error_detail="Not run: outside the rerun's selection, and no earlier result "
            "for this definition",
            details={"not_run": True},
        )
    )


def _reported_tokens(results: list[CheckResult]) -> int | None:
    counted = [
        usage_tokens(result.details.get("usage"))
        for result in results
        if isinstance(result.details.get("usage"), dict)
    ]
    numbers = [tokens for tokens in counted if tokens is not None]
    return sum(numbers) if numbers else None


def _reported_cost_usd(results: list[CheckResult]) -> float | None:
    totals = usage_totals([result.details.get("usage") for result in results])
    return None if totals is None else totals["cost_usd"]


def merge_results(*, plan: PlanDoc, fresh: ExecuteDoc, previous: ExecuteDoc | None) -> ExecuteDoc:
    """A selective rerun's results over the earlier ones: one result per planned check again.

    Checks the rerun did not select keep their earlier result when it was for the same
    definition; otherwise they are recorded as not run, so the run cannot pass on them. The
    totals (tokens, cost) count every result kept, and a merged run stays merged from its
    shards: the results it keeps came from them (and lacks their files while it keeps one of
    a merge that was interrupted). The run keeps its first start (`_run_times`).
    """
    by_id = {result.check_id: result for result in fresh.results}
    earlier = _earlier(previous)
    results = [
        by_id.get(check.id) or _kept_result(check=check, earlier=earlier) for check in plan.checks
    ]
    return fresh.model_copy(
        update={
            "results": results,
            "not_run": [r.check_id for r in results if r.details.get("not_run") is True],
            "tokens_used": _reported_tokens(results),
            "cost_usd": _reported_cost_usd(results),
            "merged_from": previous.merged_from if previous is not None else fresh.merged_from,
            "merge_interrupted": _still_incomplete(
                plan=plan, fresh=by_id.keys(), previous=previous
            ),
            "input_digests": _merged_by_check(
                plan=plan,
                results=results,
                fresh=fresh.input_digests,
                kept=previous.input_digests if previous is not None else {},
            ),
            "artifact_ids": _merged_by_check(
                plan=plan,
                results=results,
                fresh=fresh.artifact_ids,
                kept=previous.artifact_ids if previous is not None else {},
            ),
            "tracked_input_digests": _merged_by_check(
                plan=plan,
                results=results,
                fresh=fresh.tracked_input_digests,
                kept=previous.tracked_input_digests if previous is not None else {},
            ),
            "result_file_digests": _kept_files(
                results=results, fresh=fresh, earlier=earlier, previous=previous
            ),
            "verdict_digests": _kept_verdicts(
                plan=plan, results=results, fresh=fresh, earlier=earlier, previous=previous
            ),
            **_merged_settings(plan=plan, results=results, fresh=fresh, previous=previous),
            **_run_times(fresh=fresh, previous=previous),
        }
    )


def _still_incomplete(
    *, plan: PlanDoc, fresh: Collection[str], previous: ExecuteDoc | None
) -> bool:
    """Whether a merged run whose merge was interrupted before it brought every shard's files
    in still lacks them: a check the rerun left out keeps its result, and its files are still
    only in its shard."""
    if previous is None or not previous.merge_interrupted:
        return False
    return any(check.id not in fresh for check in plan.checks)


def _run_times(*, fresh: ExecuteDoc, previous: ExecuteDoc | None) -> dict[str, object]:
    """The run's first start kept and the rerun's time added to its own: an updated run is the
    same run brought up to date, so `eb history`, `eb diff` and `eb status` still agree on
    where it stands among the others, and its duration is what its verdicts took to reach."""
    if previous is None:
        return {}  # nothing ran before: this rerun is the run's first execution
    return {
        "started_at": previous.started_at,
        "duration_ms": execution_ms(doc=previous) + execution_ms(doc=fresh),
        "updated_at": fresh.started_at,
    }


def _merged_by_check(
    *, plan: PlanDoc, results: list[CheckResult], fresh: dict[str, str], kept: dict[str, str]
) -> dict[str, str]:
    """A fresh result's input digest (or artifact id), else the one recorded with the kept
    result."""
    digests: dict[str, str] = {}
    for check, result in zip(plan.checks, results, strict=True):
        if check.id in fresh:
            digests[check.id] = fresh[check.id]
        elif check.id in kept and result.details.get("not_run") is not True:
            digests[check.id] = kept[check.id]
    return digests


def _merged_settings(
    *, plan: PlanDoc, results: list[CheckResult], fresh: ExecuteDoc, previous: ExecuteDoc | None
) -> dict[str, object]:
    """The settings each result was decided under (`verdict_settings`): the rerun's, else the
    ones recorded with the kept result; and the parts of each digest still named."""
    by_check = _merged_by_check(
        plan=plan,
        results=results,
        fresh=fresh.verdict_settings,
        kept=previous.verdict_settings if previous is not None else {},
    )
    known = {**(previous.verdict_setting_parts if previous is not None else {})}
    known.update(fresh.verdict_setting_parts)
    parts = {digest: known[digest] for digest in set(by_check.values()) if digest in known}
    return {"verdict_settings": by_check, "verdict_setting_parts": parts}


def _kept_files(
    *,
    results: list[CheckResult],
    fresh: ExecuteDoc,
    earlier: Earlier,
    previous: ExecuteDoc | None,
) -> dict[str, str]:
    """The digest of each result's checks/<stem>.json: the rerun's own, else the one recorded
    with a result kept as it was. A kept result that names its moved check file is written
    again (`rewrite_kept_results`); a placeholder for a check with no earlier result has no
    file."""
    recorded = previous.result_file_digests if previous is not None else {}
    digests: dict[str, str] = {}
    for result in results:
        check_id = result.check_id
        if check_id in fresh.result_file_digests:
            digests[check_id] = fresh.result_file_digests[check_id]
        elif (
            check_id in recorded
            and earlier.get((check_id, result.check_definition_sha256)) is result
        ):
            digests[check_id] = recorded[check_id]
    return digests


def _kept_verdicts(
    *,
    plan: PlanDoc,
    results: list[CheckResult],
    fresh: ExecuteDoc,
    earlier: Earlier,
    previous: ExecuteDoc | None,
) -> dict[str, str]:
    """The verdict digest of each result: the rerun's own, else the one recorded with a kept
    result (never taken again from it: a kept result edited by hand would be vouched for), or
    that of the placeholder made here for a check with no earlier result. A result kept from
    an execute.json written before eb recorded them has none."""
    recorded = previous.verdict_digests if previous is not None else {}
    digests: dict[str, str] = {}
    for check, result in zip(plan.checks, results, strict=True):
        if check.id in fresh.verdict_digests:
            digests[check.id] = fresh.verdict_digests[check.id]
        elif (check.id, check.check_definition_sha256) not in earlier:
            digests[check.id] = verdict_digest(result)
        elif check.id in recorded:
            digests[check.id] = recorded[check.id]
    return digests


def rewrite_kept_results(
    *,
    run_dir: Path,
    plan: PlanDoc,
    merged: ExecuteDoc,
    previous: ExecuteDoc | None,
    damaged: Collection[str] = (),
) -> ExecuteDoc:
    """`merged` with checks/<stem>.json written again for each kept result that now names
    another check file than it did (`_kept_result`: the evidence says what execute.json and
    the report say), and for those `damaged` names (check ids whose file is gone or was
    edited: written from the result execute.json keeps, no check run); their new digests
    recorded."""
    if previous is None:
        return merged
    before = {
        (result.check_id, result.check_definition_sha256): result.source_path
        for result in previous.results
    }
    digests = dict(merged.result_file_digests)
    for check, result in zip(plan.checks, merged.results, strict=True):
        was = before.get((result.check_id, result.check_definition_sha256))
        if was is None or (was == result.source_path and result.check_id not in damaged):
            continue
        path = run_dir / "checks" / f"{check.stem}.json"
        with refusing_wrong_place(path=path, stage="execute", fix=RESULT_FILE_FIX):
            digests[result.check_id] = write_check_result(
                checks_dir=run_dir / "checks", stem=check.stem, result=result
            )
    if digests == merged.result_file_digests:
        return merged
    return merged.model_copy(update={"result_file_digests": digests})


def refuse_taken_result_files(*, run_dir: Path, plan: PlanDoc, check_ids: Collection[str]) -> None:
    """Refuse, before a check runs, to write the result file of any of `check_ids` whose place a
    folder holds (or whose checks/ folder is a file): `eb status` saw it as a file that cannot
    be read, and neither rewriting it nor the check's own write could replace it."""
    for check in plan.checks:
        if check.id in check_ids:
            path = run_dir / "checks" / f"{check.stem}.json"
            refuse_wrong_place(path=path, stage="execute", fix=RESULT_FILE_FIX)
