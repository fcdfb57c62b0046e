"""Stage 5, execute: run the planned checks in parallel, results in plan order.

Also the one place where controls are judged and where the run fuses live.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.cache.storing import open_cache, store_all
from eval_banana.core import canonjson, log
from eval_banana.core.errors import WriteFault
from eval_banana.core.files import (
    OutputClearer,
    sha256_bytes,
    stage_json_bytes,
    write_model,
)
from eval_banana.core.log import Logger
from eval_banana.core.record import Record
from eval_banana.isolation.charges import settle_state
from eval_banana.models.repeats import rule_of, sample_count
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import (
    ConfigDoc,
    ExecuteDoc,
    GuardDoc,
    PlanDoc,
    PlannedCheck,
)
from eval_banana.runners import IN_PROCESS, orphans, runner_for
from eval_banana.runners.base import ProjectView, RunContext
from eval_banana.runners.faults import FaultLog, fault_result
from eval_banana.runners.fuses import RunFuses, unseen_usage_warnings
from eval_banana.runners.pool import (
    MaxfailGate,
    follow,
    notify,
    run_pool,
    stop_signal,
    unanswered,
)
from eval_banana.runners.redact import redact_check, run_redactor
from eval_banana.runners.results import (
    error_result,
    exception_result,
    held_back_result,
    iso,
    judge_expectation,
    not_run_result,
    stop_reason,
    utc_now,
    with_error_class,
    write_check_result,
)
from eval_banana.runners.retries import run_attempts
from eval_banana.sampling.aggregate import aggregate_samples, sample_record, sample_stem
from eval_banana.sampling.schedule import Gate, Item, plan_items, sample_sets_of
from eval_banana.settings.envpolicy import build_base_env
from eval_banana.settings.folders import cache_dir, history_dir, record_path
from eval_banana.settings.rundir import output_base
from eval_banana.stagefiles.layout import envelope, stage_path

if TYPE_CHECKING:
    from eval_banana.assertions.shared import SharedArtifacts
    from eval_banana.checks.inputs import CheckInputs
    from eval_banana.isolation.session import IsolationSession

logger = Logger("eval_banana.stages.execute")

StartCallback = Callable[[PlannedCheck], None]
ResultCallback = Callable[[PlannedCheck, CheckResult], None]


def document_digest(*, doc: Record) -> str:
    """`sha256:<hex>` of the exact bytes `write_model` writes for `doc` (the envelope's inputs)."""
    return sha256_bytes(data=stage_json_bytes(document=doc))


def _run_one(*, ctx: RunContext) -> CheckResult:
    """One check through its runner, its expectation judged; exceptions become errors."""
    return judge_expectation(result=_observe(ctx=ctx))


def _observe(*, ctx: RunContext) -> CheckResult:
    """What the check itself reached; any exception becomes that check's error result."""
    check = ctx.check
    started = utc_now()
    try:
        result = runner_for(check_type=check.type)(ctx)
    except WriteFault:
        raise  # infrastructure: the run is aborted, never this check's verdict
    except Exception as exc:  # noqa: BLE001 - one broken check never sinks the run
        logger.warning("Check %s raised %s", check.id, exc, exc_info=True)
        return exception_result(check=check, started=started, exc=exc)
    if (
        result.check_definition_sha256 != check.check_definition_sha256
        or result.check_id != check.id
    ):
        return error_result(
            check=check,
            started=started,
            error_detail=f"Runner returned the wrong definition hash for check '{check.id}'",
        )
    # The plan's expectation is the one that counts, whatever the runner copied.
    return result.model_copy(update={"expect": check.definition.get("expect") or "pass"})


def _start_ranks(
    *, config: ConfigDoc, checks: list[PlannedCheck], to_start: list[int], workers: int
) -> dict[int, int]:
    """Plan position (of those in `to_start`) -> its turn to start: longest expected first by
    the run history (`[core] schedule = history`), balanced over `workers`, else plan order.
    Only the start order changes: results, stage files and reports stay in plan order.

    Checks that all run in this process (assertions) keep plan order: one thread takes them one
    after another whatever their order, their times are milliseconds, and reading thirty
    records of 10,000 checks to order them cost such a run 0.8 s."""
    if (
        config.settings.core.schedule == "plan"
        or len(to_start) < 2
        or all(checks[position].type in IN_PROCESS for position in to_start)
    ):
        return {position: turn for turn, position in enumerate(to_start)}
    from eval_banana.history.recent import start_order

    starting = [checks[position] for position in to_start]
    order = start_order(
        folder=history_dir(config=config),
        ids=[check.id for check in starting],
        digests={check.id: check.check_definition_sha256 for check in starting},
        samples={
            check.id: sample_count(
                definition=check.definition, default=config.settings.core.repeats
            )
            for check in starting
        },
        workers=workers,
    )
    return {to_start[index]: turn for turn, index in enumerate(order)}


def _runs_beside(*, config: ConfigDoc, run_dir: Path) -> Path | None:
    """The output folder that holds this run folder beside earlier ones, where no other run
    deletes old runs while these checks execute (None with --flat-output: the run is the
    folder)."""
    base = output_base(config=config).resolve()
    return None if base == run_dir.resolve() else base


def _open_isolation(
    *, config: ConfigDoc, plan: PlanDoc, run_dir: Path, running: frozenset[str]
) -> IsolationSession:
    """The watch on eb's own state while checks run, with the judges' isolation (and checks',
    if asked) when some planned check has it; `running`: the stems of the checks to run."""
    from eval_banana.isolation.session import IsolationSession

    return IsolationSession.open(config=config, plan=plan, run_dir=run_dir, running=running)


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
    faults = faults if faults is not None else FaultLog()
    checks = plan.checks
    checks_dir = run_dir / "checks"
    checks_dir.mkdir(parents=True, exist_ok=True)
    base_env = build_base_env(settings=config.settings.execution, environ=environ)
    source = os.environ if environ is None else environ
    # One redactor for everything the run writes or prints, transcripts included.
    redactor = run_redactor(config=config, harness=guard.harness, environ=source)
    project_root = Path(config.project_root)
    results: list[CheckResult | None] = [None] * len(checks)
    not_run: list[bool] = [False] * len(checks)
    stop = stop_signal(cancel=cancel)
    halt = MaxfailGate(maxfail=config.settings.core.maxfail)
    retries = config.settings.harness.retries
    fuses = RunFuses(
        stop=stop,
        token_budget=config.settings.harness.token_fuse,
        run_timeout_s=float(config.settings.core.run_timeout_seconds),
        cost_budget_usd=config.settings.harness.cost_fuse_usd,
    )

    from eval_banana.checks.inputs import (
        artifact_ids,
        input_digests,
        run_inputs,
        shared_artifacts,
        unmatched_inputs,
    )

    check_inputs = run_inputs(config=config, checks=checks, given=check_inputs)
    # Taken before any check runs: the state each verdict is judged on (eb status compares it).
    inputs_now = input_digests(checks=checks, reader=check_inputs)
    # Taken before any check runs too, once for the keys and for execute.json.
    artifacts = artifact_ids(checks=checks, project_root=project_root)

    unmatched = unmatched_inputs(checks=checks, reader=check_inputs)
    cache = open_cache(
        config=config,
        plan=plan,
        guard=guard,
        run_dir=run_dir,
        environ=environ,
        check_inputs=check_inputs,
        artifacts=artifacts,
    )
    # Opened only when some check is left to run: a fully cached run starts no judge.
    isolation: IsolationSession | None = None
    # Evidence stem -> plan position of every check attempted; positions whose verdict the
    # cache stores once every check has ended.
    owners: dict[str, int] = {}
    to_store: list[int] = []
    # Set once the checks left to run are known (after the cache has answered the rest).
    shared: SharedArtifacts | None = None
    outputs: OutputClearer
    positions = {check.stem: position for position, check in enumerate(checks)}

    def attempt(check: PlannedCheck, *, stem: str) -> CheckResult:
        """One run of a check under the evidence stem `stem`: its retries, then masking."""
        # Runners open their output files for writing, which would write through a file the
        # cache restored into the cache's copy it is linked to: a fresh file each time.
        outputs.clear(stem=stem)
        ctx = RunContext(
            check=check,
            config=config,
            harness=guard.harness,
            run_dir=run_dir,
            project_root=project_root,
            base_env=base_env,
            cancel=stop,
            report_tokens=fuses.report_tokens,
            report_cost=fuses.report_cost,
            evidence_stem=None if stem == check.stem else stem,
            artifacts=shared,
            redactor=redactor,
        )

        def run_in(view: ProjectView | None) -> CheckResult:
            here = ctx if view is None else ctx.model_copy(update={"view": view})
            return run_attempts(
                ctx=here, run_once=_run_one, retries=retries, write_result=write_check_result
            )

        owners[stem] = positions[check.stem]
        if isolation is None:
            result = run_in(None)
        else:
            # Keyed by the evidence stem: each sample of a repeated check is its own run.
            result = isolation.run(check=check, key=stem, run_in=run_in)
        if redactor:
            result = redact_check(run_dir=run_dir, stem=stem, result=result, redactor=redactor)
        return result

    def unstarted(check: PlannedCheck) -> CheckResult | None:
        """The result of a check that must not start (a stop, or maxfail reached), else None."""
        if stop.is_set():
            # Once the run stops no new check starts.
            return judge_expectation(result=not_run_result(check=check, cancel=stop))
        if halt.reached:
            # maxfail: no new check starts either, but the run is not aborted.
            return judge_expectation(result=held_back_result(check=check, maxfail=halt.maxfail))
        return None

    def run_check(check: PlannedCheck) -> tuple[CheckResult, bool]:
        """One check's result, and whether it never started (a stop, or maxfail reached)."""
        held = unstarted(check)
        if held is not None:
            return held, True
        notify(on_start, check)
        result = attempt(check, stem=check.stem)
        halt.count(result=result)
        if cache is not None:
            # Stored after masking (so the cache never holds a secret either), and only once
            # every check has ended (so no check can write over it meanwhile).
            to_store.append(positions[check.stem])
        return result, False

    def finish(
        position: int, result: CheckResult, never_started: bool, *, written: bool = False
    ) -> None:
        check = checks[position]
        not_run[position] = never_started
        result = with_error_class(result=result, cancel=stop)
        if not written:
            try:
                write_check_result(checks_dir=checks_dir, stem=check.stem, result=result)
            except WriteFault as fault:
                faults.add(fault=fault, stop=stop)
                result = result if never_started else fault_result(check=check, fault=fault)
        results[position] = result
        if not never_started:
            notify(on_result, check, result)

    def task(position: int) -> None:
        follow(cancel=cancel, stop=stop)
        result, never_started = run_check(checks[position])
        finish(position, result, never_started)

    def faulted(position: int, work: Callable[[], object]) -> object:
        """`work()` for the check at `position`; a write fault in it stops the run and makes
        that check an `error` (what it decided cannot be trusted without its output)."""
        try:
            return work()
        except (WriteFault, OSError) as exc:
            # An OSError out of a check's task is evidence eb failed to write (masking a
            # secret in its output, say): a write fault like any other.
            fault = exc if isinstance(exc, WriteFault) else WriteFault.of(path=checks_dir, exc=exc)
            faults.add(fault=fault, stop=stop)
            if results[position] is None:
                results[position] = fault_result(check=checks[position], fault=fault)
                not_run[position] = False
            return True  # answered: the check has its result

    def reuse(item: Item) -> bool:
        """Answer an unsampled check with its stored verdict; whether the cache had one."""
        follow(cancel=cancel, stop=stop)
        if cache is None or item.sample is not None or stop.is_set():
            return False
        check = checks[item.position]
        hit = cache.lookup(check=check)
        if hit is None:
            return False
        notify(on_start, check)
        halt.count(result=hit.result)
        finish(item.position, hit.result, False, written=hit.result_file_placed)
        return True

    items = plan_items(checks=checks, default_repeats=config.settings.core.repeats)
    sample_sets = sample_sets_of(items=items)

    def sample_task(item: Item) -> None:
        """One sample of a sampled check; the last of its samples to end decides the check."""
        check = checks[item.position]
        assert item.sample is not None
        samples = sample_sets[item.position]
        follow(cancel=cancel, stop=stop)

        def decide() -> Gate:
            held = unstarted(check)
            if held is not None:
                return "stopped" if stop.is_set() else "held"
            notify(on_start, check)
            # A check run again in this run folder leaves no unsampled output behind.
            outputs.clear(stem=check.stem)
            return "run"

        gate = samples.open(decide=decide)
        stem = sample_stem(stem=check.stem, sample=item.sample)
        wrote = False
        if gate != "run" or stop.is_set():
            outcome = not_run_result(check=check, cancel=stop)
        else:
            outcome = attempt(check, stem=stem)
            write_check_result(checks_dir=checks_dir, stem=stem, result=outcome)
            wrote = True
        record = sample_record(
            sample=item.sample, result=outcome, checks_dir=checks_dir, stem=stem, wrote_result=wrote
        )
        done = samples.finish(sample=item.sample, result=outcome, record=record)
        if done is None:
            return
        outcomes, records = done
        if gate != "run" or all(one.details.get("not_run") is True for one in outcomes):
            held = unstarted(check)
            finish(item.position, held or judge_expectation(result=outcomes[0]), True)
            return
        result = judge_expectation(
            result=aggregate_samples(
                check=check,
                samples=outcomes,
                records=records,
                rule=rule_of(definition=check.definition),
            )
        )
        halt.count(result=result)
        finish(item.position, result, False)

    def item_task(index: int) -> None:
        item = items[index]
        if item.sample is None:
            faulted(item.position, lambda: task(item.position))
        else:
            faulted(item.position, lambda: sample_task(item))

    # Stored verdicts first, one after another on this thread: restoring one is a few small
    # file operations, and worker threads doing them at once only contend for the interpreter
    # lock (a cached run of 1,000 checks took a third longer on four threads than on one).
    # A forked child may answer the back half meanwhile (CacheSession.look_ahead).
    if cache is not None:
        cache.look_ahead(checks=checks)
    try:
        to_run = unanswered(
            count=len(items),
            answered=lambda index: bool(
                faulted(items[index].position, lambda: reuse(items[index]))
            ),
            stop=stop,
        )
    finally:
        if cache is not None:
            cache.settle(checks_dir=checks_dir)
    tampered = False
    if to_run:
        workers = min(config.settings.core.max_parallel_checks, len(to_run))
        to_start = sorted({items[index].position for index in to_run})
        # A check's samples stay next to each other: they share its turn. A lane plan counts
        # one worker per check, so checks with several samples get the plain longest-first turn.
        ranks = _start_ranks(
            config=config,
            checks=checks,
            to_start=to_start,
            workers=workers if len(to_start) == len(to_run) else 1,
        )
        to_run.sort(key=lambda index: (ranks[items[index].position], index))
        shared = shared_artifacts(
            project_root=project_root, checks=[checks[items[index].position] for index in to_run]
        )
        # Listed once the cache has placed every file it restores.
        outputs = OutputClearer(checks_dir=checks_dir)
        if cache is not None:
            cache.remember_state()  # what changes in the cache from here on, eb did not write
        # Other eb runs sharing the cache write nothing into it while these checks run.
        from eval_banana.isolation.state import checks_running

        stores = cache is not None and cache.writes
        with checks_running(
            cache=cache_dir(config=config),
            create=stores,
            runs=_runs_beside(config=config, run_dir=run_dir),
            record=record_path(config=config).parent,
        ):
            session = isolation = _open_isolation(
                config=config,
                plan=plan,
                run_dir=run_dir,
                running=frozenset(checks[position].stem for position in to_start),
            )
            # Orphaned daemons of a check become eb's children, so they can be ended with it.
            orphans.enable_subreaper()
            try:
                # A runner's warning quotes what an agent printed: masked like the files are.
                with fuses, log.masked(redactor.text):
                    # Taken in turn order, so checks start in that order.
                    run_pool(
                        count=len(to_run),
                        workers=workers,
                        task=lambda index: item_task(to_run[index]),
                        cancel=cancel,
                        stop=stop,
                        inline=lambda index: (
                            checks[items[to_run[index]].position].type in IN_PROCESS
                        ),
                    )
            finally:
                orphans.end_run()
                # The last look at eb's state, once no process a check started is left.
                state = session.finish()
                if cache is not None:
                    cache.checks_watched(writes_told=state.writes_told)
        tampered = settle_state(
            report=state,
            session=session,
            config=config,
            checks=checks,
            results=results,
            owners=owners,
            checks_dir=checks_dir,
        )
    follow(cancel=cancel, stop=stop)
    if cache is not None:
        # A run that aborted (an interrupt, a fuse, a file it could not write) keeps nothing:
        # a verdict whose output was cut short by a full disk must not be reused once there is
        # room again.
        aborted = stop.is_set()
        store_all(
            cache=cache,
            folder=cache_dir(config=config),
            ran=to_store,
            checks=checks,
            results=results,
            keep=not tampered and not aborted,
            checks_dir=checks_dir,
            faults=faults,
            stop=stop,
        )
        if stop.is_set():  # aborted before the verdicts were stored, or while storing them
            cache.finish(aborted=True)
    completed = utc_now()
    final = [result for result in results if result is not None]
    assert len(final) == len(checks)  # every task stored its result or raised above
    if inputs is None:
        inputs = {
            "config": document_digest(doc=config),
            "validate": document_digest(doc=plan),
            "guard": document_digest(doc=guard),
        }
    document = envelope(stage="execute", run_id=plan.run_id, inputs=inputs)
    document.update(
        started_at=iso(started),
        completed_at=iso(completed),
        results=final,
        aborted_by=stop_reason(cancel=stop) if stop.is_set() else None,
        not_run=[check.id for check, skipped in zip(checks, not_run, strict=True) if skipped],
        env_policy=config.settings.execution.env,
        tokens_used=fuses.tokens_used,
        cost_usd=fuses.cost_usd,
        # The plan's own (a --last-failed that selects every check, a file --check-id could
        # not read) reach the console and the report with the rest.
        warnings=list(plan.warnings)
        + unmatched
        + (unseen_usage_warnings(results=final) if config.settings.harness.token_fuse > 0 else [])
        + (cache.warnings if cache is not None else []),
        skipped=plan.skipped,
        halted_by="maxfail" if halt.held_back(results=final) else None,
        allow_empty=plan.allow_empty,
        family_gates=plan.family_gates,
        family_sizes=plan.family_sizes,
        input_digests=inputs_now,
        artifact_ids=artifacts,
        cache=cache.counts() if cache is not None else None,
    )
    return ExecuteDoc.model_validate(document)


def write_execute_stage(
    *, run_dir: Path, doc: ExecuteDoc, rendered: canonjson.Rendered | None = None
) -> str:
    """Write stages/execute.json; return the digest of its bytes (`rendered`: see canonjson)."""
    return write_model(
        path=stage_path(run_dir=run_dir, stage="execute"), model=doc, rendered=rendered
    )
