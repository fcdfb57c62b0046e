"""What a stage file's schema cannot say: its fields must agree with each other.

A hand-edited or damaged file can match its schema and still make no sense (a guard refusal
that names no problem, counts that disagree with their lists, a plan whose artifact stem is not
its check's). Such a file is refused when it is read, naming the field, instead of crashing the
stage that trusts it. A score's derived fields follow from its counts by the run verdict's own
rule (stagefiles/verdict.py); whether they are what its execute.json scores is asked where both
files are read (pipeline/agreeing.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from eval_banana.core.caseid import case_check_id
from eval_banana.core.stem import artifact_stem
from eval_banana.models.stages import ExecuteDoc, GuardDoc, PlanDoc
from eval_banana.stagefiles.verdict import Inconsistency, score_contradiction
from eval_banana.stagefiles.verdictdigest import verdict_digest


def _repeated(values: Iterable[str]) -> str | None:
    counts = Counter(values)
    return next((value for value, count in counts.items() if count > 1), None)


def _plan(doc: PlanDoc) -> Inconsistency | None:
    # Loaded here, once per plan: the check models and YAML cost start-up to commands that
    # never read a plan.
    from eval_banana.checks.definition import validate_mapping
    from eval_banana.checks.planneddigest import planned_definition_digest
    from eval_banana.core.errors import DefinitionError

    def definition_problem(
        *, definition: dict[str, Any], source: str, filled_case: bool
    ) -> str | None:
        """Why a planned definition is not one validate could have written, or None. A case's
        is its family's text filled with a row's, which may hold `{{` as literal text."""
        try:
            validate_mapping(document=definition, path=source, filled_case=filled_case)
        except DefinitionError as exc:
            return f"not a valid check definition: {exc.message.splitlines()[0]}"
        return None

    if not doc.ok and not doc.errors:
        return "$.errors", "the plan is refused (ok is false) but names no error"
    repeated = _repeated(check.id for check in doc.checks)
    if repeated is not None:
        return "$.checks", f"check id {repeated!r} is planned twice"
    whole = doc.selection.shard is None and doc.selection.select is None
    if whole and doc.selected_checks is not None and doc.selected_checks != len(doc.checks):
        # Without a shard or a selection file the plan holds every check it selected: one
        # dropped from `checks` would never run, and the run would pass without it.
        return "$.checks", (
            f"holds {len(doc.checks)} checks where selected_checks says the selection "
            f"holds {doc.selected_checks}"
        )
    for index, check in enumerate(doc.checks):
        where = f"$.checks[{index}]"
        if check.stem != artifact_stem(check_id=check.id):
            return f"{where}.stem", f"{check.stem!r} is not the artifact stem of {check.id!r}"
        # A dataset case's definition keeps its family's id; its own id names the case.
        own_id = check.id
        snapshot_stem = check.stem
        if check.family is not None or check.case_id is not None:
            if check.family is None or check.case_id is None:
                return f"{where}.family", "a case names both its family and its case id"
            if check.id != case_check_id(family=check.family, case_id=check.case_id):
                return f"{where}.id", f"{check.id!r} is not <family>[<case id>]"
            own_id = check.family
            snapshot_stem = artifact_stem(check_id=check.family)
        if check.definition.get("id") != own_id or check.definition.get("type") != check.type:
            return f"{where}.definition", "its id or type differs from the check's"
        if (
            check.definition_sha256 is not None
            and planned_definition_digest(definition=check.definition) != check.definition_sha256
        ):
            # Execute runs this definition: one edited after validate is not the check file's.
            return f"{where}.definition", (
                f"the definition of {check.id!r} is not the one validate planned from "
                f"{check.source_path} (its definition_sha256)"
            )
        problem = definition_problem(
            definition=check.definition,
            source=check.source_path,
            filled_case=check.family is not None,
        )
        if problem is not None:
            return f"{where}.definition", problem
        if check.snapshot is not None and check.snapshot != f"stages/snapshots/{snapshot_stem}.py":
            return f"{where}.snapshot", "must be stages/snapshots/<stem>.py inside the run folder"
    return None


def _guard(doc: GuardDoc) -> Inconsistency | None:
    if not doc.ok and not doc.problems:
        return "$.problems", "the guard refused the run (ok is false) but names no problem"
    if doc.ok and doc.problems:
        return "$.ok", "the guard lets the run start (ok is true) but lists problems"
    return None


def _not_a_moment(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return True
    return False


def _execute(doc: ExecuteDoc) -> Inconsistency | None:
    for name in ("started_at", "completed_at", "updated_at"):
        moment = getattr(doc, name)
        if moment is not None and _not_a_moment(moment):
            return f"$.{name}", "is not an ISO-8601 timestamp"
    for index, result in enumerate(doc.results):
        for name in ("started_at", "completed_at"):
            if _not_a_moment(getattr(result, name)):
                return f"$.results[{index}].{name}", "is not an ISO-8601 timestamp"
    repeated = _repeated(result.check_id for result in doc.results)
    if repeated is not None:
        return "$.results", f"check id {repeated!r} has two results"
    for index, result in enumerate(doc.results):
        if result.score != (1 if result.status == "passed" else 0):
            return f"$.results[{index}].score", f"score {result.score} with status {result.status}"
    not_run = [r.check_id for r in doc.results if r.details.get("not_run") is True]
    if sorted(doc.not_run) != sorted(not_run):
        return "$.not_run", "does not list exactly the results marked not run"
    return None


def results_against_plan(*, plan: PlanDoc, execute: ExecuteDoc) -> Inconsistency | None:
    """The first result of an execute.json that is not its plan's, read with the plan.json it
    was made from: a result of a check the plan does not hold, one judged on another
    definition than the planned one, or one out of plan order. A planned check with no result
    is not among them: the run is unfinished, not forged (`unresulted`)."""
    planned = {
        check.id: (position, check.check_definition_sha256)
        for position, check in enumerate(plan.checks)
    }
    last = -1
    for index, result in enumerate(execute.results):
        where = f"$.results[{index}]"
        found = planned.get(result.check_id)
        if found is None:
            return f"{where}.check_id", f"{result.check_id!r} is not a check of the plan"
        position, digest = found
        if result.check_definition_sha256 != digest:
            return f"{where}.check_definition_sha256", (
                f"the result of {result.check_id!r} was judged on another definition than "
                "the planned one"
            )
        if position < last:
            return f"{where}.check_id", (
                f"the result of {result.check_id!r} comes after that of a check planned later "
                "(results follow plan order)"
            )
        last = position
    return None


def edited_verdicts(execute: ExecuteDoc) -> dict[str, int]:
    """Check id -> the place in `execute.results` of each result whose verdict is no longer
    the one its `verdict_digests` entry was taken from (edited by hand after the result was
    made), in results order. A result with no entry (kept from an older execute.json) is not
    compared."""
    recorded = execute.verdict_digests
    if not recorded:
        return {}  # an execute.json written before eb recorded them
    return {
        result.check_id: index
        for index, result in enumerate(execute.results)
        if (digest := recorded.get(result.check_id)) is not None
        and verdict_digest(result) != digest
    }


def results_against_verdicts(execute: ExecuteDoc) -> Inconsistency | None:
    """The first result of an execute.json whose verdict is not the one the execute stage
    recorded for it (`edited_verdicts`)."""
    for check_id, index in edited_verdicts(execute).items():
        result = execute.results[index]
        return f"$.results[{index}]", (
            f"the verdict of {check_id!r} (status {result.status}, score {result.score}) is "
            "not the one the execute stage recorded for it in verdict_digests: the result was "
            f"edited after it was made, and checks/{artifact_stem(check_id=check_id)}.json "
            "holds the result as eb wrote it"
        )
    return None


def unresulted(*, plan: PlanDoc, execute: ExecuteDoc) -> list[str]:
    """The planned checks an execute.json holds no result of, in plan order."""
    recorded = {result.check_id for result in execute.results}
    return [check.id for check in plan.checks if check.id not in recorded]


CHECKS: dict[str, Callable[[Any], Inconsistency | None]] = {
    "validate": _plan,
    "guard": _guard,
    "execute": _execute,
    "score": score_contradiction,
}


def inconsistency(*, stage: str, doc: Any) -> Inconsistency | None:
    """The first field of a schema-valid stage document that contradicts the others, if any."""
    check = CHECKS.get(stage)
    return None if check is None else check(doc)
