"""Stage 5, execute: run the planned checks in parallel, results in plan order, into
execute.json (how a plan's checks run, stored verdicts first: execution.planrun).

Controls are judged and the run fuses live in the run of the checks (execution/).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.core import canonjson
from eval_banana.core.files import sha256_bytes, stage_json_bytes
from eval_banana.core.record import Record
from eval_banana.execution.planrun import PlanRun, ResultCallback, StartCallback
from eval_banana.models.stages import ConfigDoc, ExecuteDoc, GuardDoc, PlanDoc
from eval_banana.runners.faults import FaultLog
from eval_banana.runners.fuses import unseen_usage_warnings
from eval_banana.runners.pool import follow
from eval_banana.runners.results import elapsed_ms, iso, stop_reason, utc_now
from eval_banana.stagefiles.layout import envelope
from eval_banana.stagefiles.verdictdigest import verdict_digests
from eval_banana.stagefiles.write import write_stage_model

if TYPE_CHECKING:
    from eval_banana.checks.inputs import CheckInputs

__all__ = [
    "ResultCallback",
    "StartCallback",
    "document_digest",
    "execute",
    "execution_ms",
    "write_execute_stage",
]


def document_digest(*, doc: Record) -> str:
    """`sha256:<hex>` of the exact bytes `write_model` writes for `doc` (the envelope's inputs)."""
    return sha256_bytes(data=stage_json_bytes(document=doc))


def execute(
    *,
    config: ConfigDoc,
    plan: PlanDoc,
    guard: GuardDoc,
    run_dir: Path,
    cancel: threading.Event,
    on_result: ResultCallback | None = None,
    on_start: StartCallback | None = None,
    inputs: dict[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    check_inputs: CheckInputs | None = None,
    faults: FaultLog | None = None,
) -> ExecuteDoc:
    """Run the plan's checks on min(max_parallel_checks, n) threads; results by plan position.

    `inputs` are the digests of the upstream stage files (computed from the documents when
    not given); `environ` is the process environment the env policy filters (default os.environ);
    `check_inputs`, the reader of the checks' input states the verdict keys use (made here when
    not given); `faults`, where the run's write faults are logged (they stop the run, and its
    checks' output could not be kept: each such check is an `error`).
    """
    started = utc_now()
    run = PlanRun(
        config=config,
        plan=plan,
        guard=guard,
        run_dir=run_dir,
        cancel=cancel,
        on_result=on_result,
        on_start=on_start,
        environ=environ,
        check_inputs=check_inputs,
        faults=faults if faults is not None else FaultLog(),
    )
    to_run = run.reuse_stored()
    if to_run:
        run.run_rest(to_run=to_run)
    follow(cancel=cancel, stop=run.stop)
    run.store_verdicts()
    # An interrupt once every check had ended (while the verdicts were stored or uploaded)
    # stops the run too: the results stand as they are, and the run does not pass.
    follow(cancel=cancel, stop=run.stop)
    completed = utc_now()
    if inputs is None:
        inputs = {
            "config": document_digest(doc=config),
            "validate": document_digest(doc=plan),
            "guard": document_digest(doc=guard),
        }
    return _execute_doc(run=run, inputs=inputs, started=started, completed=completed)


def _execute_doc(
    *, run: PlanRun, inputs: dict[str, str], started: datetime, completed: datetime
) -> ExecuteDoc:
    """execute.json's document for a run whose checks have all ended."""
    config, plan, stop, cache = run.config, run.plan, run.stop, run.cache
    final = [result for result in run.results if result is not None]
    assert len(final) == len(run.checks)  # every task stored its result or raised
    document = envelope(stage="execute", run_id=plan.run_id, inputs=inputs)
    document.update(
        started_at=iso(started),
        completed_at=iso(completed),
        results=final,
        aborted_by=stop_reason(cancel=stop) if stop.is_set() else None,
        not_run=[
            check.id for check, skipped in zip(run.checks, run.not_run, strict=True) if skipped
        ],
        # What the checks ran under, flags given to `eb stage execute` included: the report
        # states these, not config.json's.
        env_policy=config.settings.execution.env,
        env_allow=config.settings.execution.env_allow,
        env_allow_prefixes=config.settings.execution.env_allow_prefixes,
        tokens_used=run.fuses.tokens_used,
        cost_usd=run.fuses.cost_usd,
        # The plan's own (a --last-failed that selects every check, a file --check-id could
        # not read) reach the console and the report with the rest.
        warnings=list(plan.warnings)
        + run.unmatched
        + unseen_usage_warnings(
            results=final,
            token_fuse=config.settings.harness.token_fuse > 0,
            cost_fuse=config.settings.harness.cost_fuse_usd > 0,
        )
        + (cache.warnings if cache is not None else []),
        skipped=plan.skipped,
        halted_by="maxfail" if run.halt.held_back(results=final) else None,
        maxfail=run.halt.maxfail,
        allow_empty=plan.allow_empty,
        family_gates=plan.family_gates,
        family_sizes=plan.family_sizes,
        input_digests=run.inputs_now,
        tracked_input_digests=run.tracked_now,
        result_file_digests=run.result_file_digests(),
        verdict_digests=verdict_digests(final),
        artifact_ids=run.artifacts,
        verdict_settings=run.settings_record.by_check,
        verdict_setting_parts=run.settings_record.parts,
        cache=cache.counts() if cache is not None else None,
    )
    return ExecuteDoc.model_validate(document)


def execution_ms(*, doc: ExecuteDoc) -> int:
    """How long the checks of `doc` ran: the sum it keeps over merged reruns, else its span."""
    if doc.duration_ms is not None:
        return doc.duration_ms
    return elapsed_ms(
        started=datetime.fromisoformat(doc.started_at),
        completed=datetime.fromisoformat(doc.completed_at),
    )


def write_execute_stage(
    *, run_dir: Path, doc: ExecuteDoc, rendered: canonjson.Rendered | None = None
) -> str:
    """Write stages/execute.json; return the digest of its bytes (`rendered`: see canonjson)."""
    return write_stage_model(run_dir=run_dir, stage="execute", model=doc, rendered=rendered)
