"""Stage 5, execute: run the planned checks in parallel, results in plan order.

Also the one place where controls are judged and where the run fuses live.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.core import canonjson, log
from eval_banana.core.errors import WriteFault
from eval_banana.core.files import (
    remove_check_outputs,
    sha256_bytes,
    stage_json_bytes,
    write_model,
    write_text_atomic,
)
from eval_banana.core.log import Logger
from eval_banana.core.record import Record
from eval_banana.harness.usage import usage_tokens, usage_totals
from eval_banana.models.repeats import rule_of
from eval_banana.models.result import CheckResult, result_json_text
from eval_banana.models.stages import (
    ConfigDoc,
    ExecuteDoc,
    GuardDoc,
    PlanDoc,
    PlannedCheck,
    ProblemModel,
)
from eval_banana.runners import orphans, runner_for
from eval_banana.runners.base import ProjectView, RunContext
from eval_banana.runners.faults import FaultLog, fault_result
from eval_banana.runners.fuses import RunFuses
from eval_banana.runners.redact import redact_check, redactor_for
from eval_banana.runners.results import (
    StopSignal,
    error_result,
    exception_result,
    held_back_result,
    iso,
    judge_expectation,
    not_run_result,
    stop_reason,
    utc_now,
    with_error_class,
)
from eval_banana.runners.retries import run_attempts
from eval_banana.sampling.aggregate import aggregate_samples, sample_record, sample_stem
from eval_banana.sampling.schedule import Gate, Item, plan_items, sample_sets_of
from eval_banana.settings.envpolicy import build_base_env
from eval_banana.settings.folders import cache_dir, history_dir
from eval_banana.stagefiles.layout import envelope, stage_path

if TYPE_CHECKING:
    from eval_banana.assertions.shared import SharedArtifacts
    from eval_banana.cache.session import CacheSession
    from eval_banana.checks.inputs import CheckInputs
    from eval_banana.isolation.session import IsolationSession
    from eval_banana.isolation.state import StateReport

logger = Logger("eval_banana.stages.execute")

StartCallback = Callable[[PlannedCheck], None]
ResultCallback = Callable[[PlannedCheck, CheckResult], None]

_WAIT_SLICE_S = 0.2  # the main thread wakes this often, so signal handlers run promptly


def document_digest(*, doc: Record) -> str:
    """`sha256:<hex>` of the exact bytes `write_model` writes for `doc` (the envelope's inputs)."""
    return sha256_bytes(data=stage_json_bytes(document=doc))


def write_check_result(*, checks_dir: Path, stem: str, result: CheckResult) -> Path:
    """Write checks/<stem>.json atomically (as soon as the check finishes)."""
    path = checks_dir / f"{stem}.json"
    write_text_atomic(path=path, text=result_json_text(result=result))
    return path


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


class _MaxfailGate:
    """Counts failed and errored checks; once `maxfail` (> 0) is reached no check starts."""

    def __init__(self, *, maxfail: int) -> None:
        self.maxfail = maxfail
        self._failures = 0
        self._lock = threading.Lock()
        self.reached = False

    def count(self, *, result: CheckResult) -> None:
        if self.maxfail <= 0 or result.status == "passed":
            return
        with self._lock:
            self._failures += 1
            if self._failures >= self.maxfail:
                self.reached = True

    @staticmethod
    def held_back(*, results: list[CheckResult]) -> bool:
        """Whether any check was left unstarted because maxfail was reached."""
        return any(result.details.get("not_run_reason") == "maxfail" for result in results)


def _notify(callback: Callable[..., None] | None, *args: object) -> None:
    """Progress callbacks are display only: a failing one is logged, never fatal to the run."""
    if callback is None:
        return
    try:
        callback(*args)
    except Exception:  # noqa: BLE001
        logger.warning("Progress callback failed", exc_info=True)


def _stop_signal(*, cancel: threading.Event) -> StopSignal:
    """The signal runners watch: `cancel` itself, or a StopSignal that follows a plain Event."""
    if isinstance(cancel, StopSignal):
        return cancel
    stop = StopSignal()
    _follow(cancel=cancel, stop=stop)
    return stop


def _follow(*, cancel: threading.Event, stop: StopSignal) -> None:
    # A plain Event (e.g. set by a signal handler) can only mean an interrupt.
    if cancel.is_set() and not stop.is_set():
        stop.stop(reason="interrupt")


def _run_pool(
    *,
    count: int,
    workers: int,
    task: Callable[[int], None],
    cancel: threading.Event,
    stop: StopSignal,
) -> None:
    """Run task(0..count-1) on `workers` threads, started in order; return when all are done.

    A few threads over a shared counter instead of concurrent.futures, which would also import
    `logging` on every start-up. The main thread waits in short slices, so signal handlers run
    promptly, and a KeyboardInterrupt while waiting stops the run instead of escaping. The first
    exception a task raised (failing to write evidence) is re-raised once every thread is done.
    """
    positions = iter(range(count))
    take = threading.Lock()
    failures: list[BaseException] = []

    def work() -> None:
        while True:
            with take:
                position = next(positions, None)
            if position is None:
                return
            try:
                task(position)
            except BaseException as exc:  # noqa: BLE001 - surfaced by the main thread below
                failures.append(exc)

    threads = [threading.Thread(target=work, name=f"eb-check-{n}") for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():
            try:
                thread.join(_WAIT_SLICE_S)
            except KeyboardInterrupt:
                stop.stop(reason="interrupt")
            _follow(cancel=cancel, stop=stop)
    if failures:
        raise failures[0]


def _unanswered(*, count: int, answered: Callable[[int], bool], stop: StopSignal) -> list[int]:
    """The positions 0..count-1 that `answered` did not answer, in order.

    An interrupt while answering stops the run as one while checks run does; the positions not
    yet tried are left for the pool, which records them as not run.
    """
    left: list[int] = []
    for index in range(count):
        try:
            if answered(index):
                continue
        except KeyboardInterrupt:
            stop.stop(reason="interrupt")
        left.append(index)
    return left


def unseen_usage_warnings(*, results: list[CheckResult]) -> list[ProblemModel]:
    """Judges whose agent ran but reported no token usage, which the token fuse cannot see."""
    warnings = []
    for result in results:
        details = result.details
        if result.check_type != "harness_judge" or details.get("raw_response_path") is None:
            continue  # no agent process ran for this check
        if (details.get("cache") or {}).get("hit"):
            continue  # a reused verdict: no agent ran in this run
        if details.get("usage") is None:
            warnings.append(
                ProblemModel(
                    message=f"Judge check '{result.check_id}' reported no token usage; "
                    "the token fuse could not count it",
                    file=result.source_path,
                    hint="Use an agent whose output reports usage (claude, gemini, codex), "
                    "or rely on [core] run_timeout_seconds as the budget.",
                )
            )
    return warnings


def _open_cache(
    *,
    config: ConfigDoc,
    plan: PlanDoc,
    guard: GuardDoc,
    run_dir: Path,
    environ: Mapping[str, str] | None,
    check_inputs: CheckInputs | None,
    artifacts: Mapping[str, str],
) -> CacheSession | None:
    """The verdict cache for this run, when `[cache] mode` is not off and there are checks."""
    if config.settings.cache.mode == "off" or not plan.checks:
        return None
    from eval_banana.cache.session import CacheSession

    return CacheSession(
        config=config,
        plan=plan,
        harness=guard.harness,
        run_dir=run_dir,
        environ=os.environ if environ is None else environ,
        inputs=check_inputs,
        artifacts=artifacts,
    )


def _input_reader(
    *, config: ConfigDoc, checks: list[PlannedCheck], given: CheckInputs | None
) -> CheckInputs | None:
    """The one reader of input states for this run: the caller's, else one over the checks
    the cache keys (every check) or, with the cache off, only those that declare `inputs:`."""
    if given is not None:
        return given
    from eval_banana.checks.inputs import CheckInputs, declared_inputs

    caching = config.settings.cache.mode != "off"
    definitions = [
        check.definition
        for check in checks
        if caching or declared_inputs(check.definition) is not None
    ]
    return CheckInputs(config=config, definitions=definitions) if definitions else None


def _shared_artifacts(*, project_root: Path, checks: list[PlannedCheck]) -> SharedArtifacts | None:
    """The run's assertions artifacts, each parsed once however many of `checks` grade it;
    None when no assertions check is to run (their module is then never imported)."""
    if not any(check.type == "assertions" for check in checks):
        return None
    from eval_banana.assertions.shared import SharedArtifacts
    from eval_banana.checks.inputs import artifact_of

    return SharedArtifacts(
        project_root=project_root,
        readers=(artifact_of(check) for check in checks if check.type == "assertions"),
    )


def _input_digests(*, checks: list[PlannedCheck], reader: CheckInputs | None) -> dict[str, str]:
    """Check id -> digest of what its `inputs:` match now; empty when the state is unreadable
    (eb status then cannot see input changes, as for a check without `inputs:`)."""
    from eval_banana.checks.inputs import declared_inputs
    from eval_banana.core.errors import ProjectStateError
    from eval_banana.projectstate.git import NotARepository

    digests: dict[str, str] = {}
    if reader is None:
        return digests
    try:
        for check in checks:
            declared = declared_inputs(check.definition)
            if declared is not None:
                # A case's family files are in its definition digest, as in its cache key:
                # editing one row leaves the other cases' inputs as they were.
                digests[check.id] = reader.digest(
                    inputs=declared, excluding=tuple(check.family_files or ())
                )
    except (ProjectStateError, NotARepository, OSError):
        logger.warning("Could not read the checks' input files", exc_info=True)
        return {}
    return digests


def _start_ranks(
    *, config: ConfigDoc, checks: list[PlannedCheck], to_start: list[int], workers: int
) -> dict[int, int]:
    """Plan position (of those in `to_start`) -> its turn to start: longest expected first by
    the run history (`[core] schedule = history`), balanced over `workers`, else plan order.
    Only the start order changes: results, stage files and reports stay in plan order."""
    if config.settings.core.schedule == "plan" or len(to_start) < 2:
        return {position: turn for turn, position in enumerate(to_start)}
    from eval_banana.history.recent import start_order

    starting = [checks[position] for position in to_start]
    order = start_order(
        folder=history_dir(config=config),
        ids=[check.id for check in starting],
        digests={check.id: check.check_definition_sha256 for check in starting},
        workers=workers,
    )
    return {to_start[index]: turn for turn, index in enumerate(order)}


def _open_isolation(*, config: ConfigDoc, plan: PlanDoc, run_dir: Path) -> IsolationSession:
    """The watch on eb's own state while checks run, with the judges' isolation (and checks',
    if asked) when some planned check has it."""
    from eval_banana.isolation.session import IsolationSession

    return IsolationSession.open(config=config, plan=plan, run_dir=run_dir)


def _settle_state(
    *,
    report: StateReport,
    session: IsolationSession,
    config: ConfigDoc,
    checks: list[PlannedCheck],
    results: list[CheckResult | None],
    owners: Mapping[str, int],
    checks_dir: Path,
) -> bool:
    """After the checks: charge what the looks while they ran could not, and remove whatever
    changed in the cache; whether eb's state changed at all (then no verdict is stored)."""
    if not report.changed:
        return False
    _charge_state_changes(
        report=report,
        config=config,
        checks=checks,
        results=results,
        owners=owners,
        checks_dir=checks_dir,
    )
    removed = session.state.drop_cache_changes()
    logger.warning(
        "eb's own files changed while checks ran (%s); no verdict of this run is stored, "
        "and %d changed files in the cache were removed",
        ", ".join(report.changed[:5]),
        len(removed),
    )
    return True


def _charge_state_changes(
    *,
    report: StateReport,
    config: ConfigDoc,
    checks: list[PlannedCheck],
    results: list[CheckResult | None],
    owners: Mapping[str, int],
    checks_dir: Path,
) -> None:
    """Make the checks charged after they ran with a change to eb's state an `error`: those
    that started before a change seen while no check ran, and every check that ran when the
    change came before any (what a look at a check's start or end could not charge)."""
    from eval_banana.isolation.modes import check_mode
    from eval_banana.isolation.session import with_state_change

    charges: dict[int, list[tuple[list[str], str]]] = {}
    for key, paths in report.late.items():
        when = "after this check started, while no check was running"
        charges.setdefault(owners[key], []).append((paths, when))
    if report.unattributed:
        # Assertions checks run in eb's own process: none of them started a process to blame.
        ran = {p for p in owners.values() if checks[p].type != "assertions"}
        for position in sorted(ran):
            when = "during this run before any check started"
            charges.setdefault(position, []).append((report.unattributed, when))
    for position, found in charges.items():
        result = results[position]
        if result is None:
            continue
        check = checks[position]
        for paths, when in found:
            result = with_state_change(
                result=result,
                check=check,
                mode=check_mode(config=config, check=check),
                paths=paths,
                when=when,
            )
        results[position] = result
        write_check_result(checks_dir=checks_dir, stem=check.stem, result=result)


def _store_all(
    *,
    cache: CacheSession,
    folder: Path,
    ran: list[int],
    checks: list[PlannedCheck],
    results: list[CheckResult | None],
    keep: bool,
    checks_dir: Path,
    faults: FaultLog,
    stop: StopSignal,
) -> None:
    """Store the verdicts of the checks that ran and keep the cache within its size, when no
    other run's checks are executing with the same cache (its watch would blame them)."""
    if not ran:
        return  # nothing ran: nothing to store, and nothing stored to evict for
    from eval_banana.isolation.state import cache_writes

    # A read-only cache stores nothing, and needs no turn at the lock to store it.
    turn = cache_writes(cache=folder) if cache.writes else contextlib.nullcontext(False)
    with turn as ours:
        if cache.writes and not ours:
            logger.warning(
                "Another eb run is executing checks with this cache: the verdicts of this run "
                "are not stored"
            )
        _store_verdicts(
            cache=cache,
            ran=ran,
            checks=checks,
            results=results,
            keep=ours and keep,
            checks_dir=checks_dir,
            faults=faults,
            stop=stop,
        )
        if ours and not stop.is_set():
            cache.finish()


def _store_verdicts(
    *,
    cache: CacheSession,
    ran: list[int],
    checks: list[PlannedCheck],
    results: list[CheckResult | None],
    keep: bool,
    checks_dir: Path,
    faults: FaultLog,
    stop: StopSignal,
) -> None:
    """Store the verdicts of the checks that ran (`keep` False: none, eb's state was
    written meanwhile), once every check has ended: while checks run eb writes nothing of its
    own state, so a change seen there is never its own. A cache that cannot be written aborts
    the run: the check whose verdict failed to store is an error, and nothing more is stored."""
    for position in sorted(ran):
        result = results[position]
        if result is None:
            continue
        check = checks[position]
        try:
            stored = cache.record(check=check, result=result, store=keep and not stop.is_set())
        except WriteFault as fault:
            faults.add(fault=fault, stop=stop)
            stored = fault_result(check=check, fault=fault)
        if stored is not result:
            results[position] = stored
            try:
                write_check_result(checks_dir=checks_dir, stem=check.stem, result=stored)
            except WriteFault as fault:
                faults.add(fault=fault, stop=stop)


def _clear_outputs(*, checks_dir: Path, stem: str) -> None:
    """Remove a check's output files from an earlier execution in this run folder.

    Runners open them for writing, which would write through a restored file into the verdict
    cache it is linked to; a fresh file each time keeps the cache's copy intact.
    """
    remove_check_outputs(checks_dir=checks_dir, stem=stem)


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
    redactor = redactor_for(
        environ=source,
        names=config.settings.execution.redact,
        extra_env=config.settings.harness.env,
        remotes=(config.settings.cache.remote,),
    )
    project_root = Path(config.project_root)
    results: list[CheckResult | None] = [None] * len(checks)
    not_run: list[bool] = [False] * len(checks)
    stop = _stop_signal(cancel=cancel)
    halt = _MaxfailGate(maxfail=config.settings.core.maxfail)
    retries = config.settings.harness.retries
    fuses = RunFuses(
        stop=stop,
        token_budget=config.settings.harness.token_fuse,
        run_timeout_s=float(config.settings.core.run_timeout_seconds),
        cost_budget_usd=config.settings.harness.cost_fuse_usd,
    )

    check_inputs = _input_reader(config=config, checks=checks, given=check_inputs)
    # Taken before any check runs: the state each verdict is judged on (eb status compares it).
    input_digests = _input_digests(checks=checks, reader=check_inputs)
    from eval_banana.checks.inputs import artifact_ids, unmatched_inputs

    # Taken before any check runs too, once for the keys and for execute.json.
    artifacts = artifact_ids(checks=checks, project_root=project_root)

    unmatched = unmatched_inputs(checks=checks, reader=check_inputs)
    cache = _open_cache(
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
    shared_artifacts: SharedArtifacts | None = None
    positions = {check.stem: position for position, check in enumerate(checks)}

    def attempt(check: PlannedCheck, *, stem: str) -> CheckResult:
        """One run of a check under the evidence stem `stem`: its retries, then masking."""
        _clear_outputs(checks_dir=checks_dir, stem=stem)
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
            artifacts=shared_artifacts,
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
        _notify(on_start, check)
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
            _notify(on_result, check, result)

    def task(position: int) -> None:
        _follow(cancel=cancel, stop=stop)
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
        _follow(cancel=cancel, stop=stop)
        if cache is None or item.sample is not None or stop.is_set():
            return False
        check = checks[item.position]
        hit = cache.lookup(check=check)
        if hit is None:
            return False
        _notify(on_start, check)
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
        _follow(cancel=cancel, stop=stop)

        def decide() -> Gate:
            held = unstarted(check)
            if held is not None:
                return "stopped" if stop.is_set() else "held"
            _notify(on_start, check)
            # A check run again in this run folder leaves no unsampled output behind.
            _clear_outputs(checks_dir=checks_dir, stem=check.stem)
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
        to_run = _unanswered(
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
        shared_artifacts = _shared_artifacts(
            project_root=project_root, checks=[checks[items[index].position] for index in to_run]
        )
        if cache is not None:
            cache.remember_state()  # what changes in the cache from here on, eb did not write
        # Other eb runs sharing the cache write nothing into it while these checks run.
        from eval_banana.isolation.state import checks_running

        stores = cache is not None and cache.writes
        with checks_running(cache=cache_dir(config=config), create=stores):
            session = isolation = _open_isolation(config=config, plan=plan, run_dir=run_dir)
            # Orphaned daemons of a check become eb's children, so they can be ended with it.
            orphans.enable_subreaper()
            try:
                # A runner's warning quotes what an agent printed: masked like the files are.
                with fuses, log.masked(redactor.text):
                    # Taken in turn order, so checks start in that order.
                    _run_pool(
                        count=len(to_run),
                        workers=workers,
                        task=lambda index: item_task(to_run[index]),
                        cancel=cancel,
                        stop=stop,
                    )
            finally:
                orphans.end_run()
                # The last look at eb's state, once no process a check started is left.
                state = session.finish()
        tampered = _settle_state(
            report=state,
            session=session,
            config=config,
            checks=checks,
            results=results,
            owners=owners,
            checks_dir=checks_dir,
        )
    _follow(cancel=cancel, stop=stop)
    if cache is not None:
        # A run that aborted (an interrupt, a fuse, a file it could not write) keeps nothing:
        # a verdict whose output was cut short by a full disk must not be reused once there is
        # room again.
        aborted = stop.is_set()
        _store_all(
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
        warnings=unmatched
        + (unseen_usage_warnings(results=final) if config.settings.harness.token_fuse > 0 else [])
        + (cache.warnings if cache is not None else []),
        skipped=plan.skipped,
        halted_by="maxfail" if halt.held_back(results=final) else None,
        allow_empty=plan.allow_empty,
        family_gates=plan.family_gates,
        family_sizes=plan.family_sizes,
        input_digests=input_digests,
        artifact_ids=artifacts,
        cache=cache.counts() if cache is not None else None,
    )
    return ExecuteDoc.model_validate(document)


def _kept_result(*, check: PlannedCheck, previous: ExecuteDoc | None) -> CheckResult:
    """The earlier result of a check a selective rerun left out, if it is for this definition."""
    if previous is not None:
        for result in previous.results:
            if (
                result.check_id == check.id
                and result.check_definition_sha256 == check.check_definition_sha256
            ):
                return result
    moment = utc_now()
    return judge_expectation(
        result=error_result(
            check=check,
            started=moment,
            completed=moment,
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
    shards: the results it keeps came from them.
    """
    by_id = {result.check_id: result for result in fresh.results}
    results = [
        by_id.get(check.id) or _kept_result(check=check, previous=previous) for check in plan.checks
    ]
    return fresh.model_copy(
        update={
            "results": results,
            "not_run": [r.check_id for r in results if r.details.get("not_run") is True],
            "tokens_used": _reported_tokens(results),
            "cost_usd": _reported_cost_usd(results),
            "merged_from": previous.merged_from if previous is not None else fresh.merged_from,
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
        }
    )


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


def write_execute_stage(
    *, run_dir: Path, doc: ExecuteDoc, rendered: canonjson.Rendered | None = None
) -> str:
    """Write stages/execute.json; return the digest of its bytes (`rendered`: see canonjson)."""
    return write_model(
        path=stage_path(run_dir=run_dir, stage="execute"), model=doc, rendered=rendered
    )
