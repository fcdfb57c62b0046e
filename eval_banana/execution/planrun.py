"""One plan's checks as the execute stage runs them: stored verdicts reused first, one after
another on this thread; the rest in their turn on a pool of threads, under the watch on eb's
state and the judges' isolation; samples decided by their rule; maxfail and the fuses; then
the new verdicts stored. Results are kept by plan position, whatever order checks end in."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.cache.storing import open_cache, store_all
from eval_banana.cache.verdictsettings import verdict_settings
from eval_banana.core import log
from eval_banana.core.errors import WriteFault
from eval_banana.core.files import OutputClearer
from eval_banana.execution.onecheck import run_one
from eval_banana.execution.turns import start_ranks
from eval_banana.isolation.charges import settle_project, settle_state
from eval_banana.models.repeats import rule_of
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, GuardDoc, PlanDoc, PlannedCheck
from eval_banana.runners import IN_PROCESS, orphans
from eval_banana.runners.base import ProjectView, RunContext
from eval_banana.runners.faults import FaultLog, fault_result, task_fault
from eval_banana.runners.fuses import RunFuses
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
    held_back_result,
    judge_expectation,
    not_run_result,
    result_file_digest,
    with_error_class,
    write_check_result,
)
from eval_banana.runners.retries import run_attempts
from eval_banana.sampling.aggregate import aggregate_samples, sample_record, sample_stem
from eval_banana.sampling.schedule import Gate, Item, plan_items, sample_sets_of
from eval_banana.settings.envpolicy import build_base_env, inherited_env
from eval_banana.settings.folders import cache_dir
from eval_banana.stagefiles.write import making_folder

if TYPE_CHECKING:
    from eval_banana.assertions.shared import SharedArtifacts
    from eval_banana.checks.inputs import CheckInputs
    from eval_banana.isolation.session import IsolationSession, Looks

StartCallback = Callable[[PlannedCheck], None]
ResultCallback = Callable[[PlannedCheck, CheckResult], None]


class PlanRun:
    """The checks of one plan as they run. `check_inputs`: the reader of the checks' input
    states the verdict keys use (made here when not given); `faults`: where the run's write
    faults are logged (they stop the run, and each check whose output could not be kept is an
    `error`)."""

    # Listed once the cache has placed every file it restores (`run_rest`).
    outputs: OutputClearer

    def __init__(
        self,
        *,
        config: ConfigDoc,
        plan: PlanDoc,
        guard: GuardDoc,
        run_dir: Path,
        cancel: threading.Event,
        on_result: ResultCallback | None,
        on_start: StartCallback | None,
        environ: Mapping[str, str] | None,
        check_inputs: CheckInputs | None,
        faults: FaultLog,
    ) -> None:
        from eval_banana.checks.inputs import (
            artifact_ids,
            input_digests,
            run_inputs,
            tracked_input_digests,
            unmatched_inputs,
        )

        self.config, self.plan, self.guard, self.run_dir = config, plan, guard, run_dir
        self.cancel, self.on_result, self.on_start, self.faults = (
            cancel,
            on_result,
            on_start,
            faults,
        )
        self.checks = plan.checks
        self.checks_dir = run_dir / "checks"
        with making_folder(path=self.checks_dir, stage="execute"):
            self.checks_dir.mkdir(parents=True, exist_ok=True)
        self.base_env = build_base_env(settings=config.settings.execution, environ=environ)
        self.placeholder_env = inherited_env(environ=environ)
        # One redactor for everything the run writes or prints, transcripts included.
        self.redactor = run_redactor(
            config=config, harness=guard.harness, environ=os.environ if environ is None else environ
        )
        self.project_root = Path(config.project_root)
        self.results: list[CheckResult | None] = [None] * len(self.checks)
        # By plan position: the result eb last put in checks/<stem>.json, and the digest of
        # those bytes (`result_file_digests`).
        self.files: list[tuple[CheckResult, str] | None] = [None] * len(self.checks)
        self.not_run: list[bool] = [False] * len(self.checks)
        self.stop = stop_signal(cancel=cancel)
        self.halt = MaxfailGate(maxfail=config.settings.core.maxfail)
        self.fuses = RunFuses(
            stop=self.stop,
            token_budget=config.settings.harness.token_fuse,
            run_timeout_s=float(config.settings.core.run_timeout_seconds),
            cost_budget_usd=config.settings.harness.cost_fuse_usd,
        )
        self.check_inputs = run_inputs(config=config, checks=self.checks, given=check_inputs)
        # Taken before any check runs: the state each verdict is judged on (eb status compares
        # it), and the artifacts' ids, once for the keys and for execute.json.
        self.inputs_now = input_digests(checks=self.checks, reader=self.check_inputs)
        self.artifacts = artifact_ids(checks=self.checks, project_root=self.project_root)
        # What of them git tracks, which `eb merge` compares with its own checkout.
        self.tracked_now = tracked_input_digests(
            checks=self.checks,
            reader=self.check_inputs,
            artifacts=self.artifacts,
            project_root=self.project_root,
        )
        self.unmatched = unmatched_inputs(checks=self.checks, reader=self.check_inputs)
        # The settings each verdict is decided under, the agent's executable read before any
        # check runs (eb status compares them with those a rerun would use).
        self.settings_record = verdict_settings(
            checks=self.checks,
            settings=config.settings,
            harness=guard.harness,
            project_root=self.project_root,
        )
        self.cache = open_cache(
            config=config,
            plan=plan,
            guard=guard,
            run_dir=run_dir,
            environ=environ,
            check_inputs=self.check_inputs,
            artifacts=self.artifacts,
        )
        # Opened only when some check is left to run: a fully cached run starts no judge.
        self.isolation: IsolationSession | None = None
        # Evidence stem -> plan position of every check attempted; positions whose verdict the
        # cache stores once every check has ended.
        self.owners: dict[str, int] = {}
        self.to_store: list[int] = []
        # Set once the checks left to run are known (after the cache has answered the rest).
        self.shared: SharedArtifacts | None = None
        self.positions = {check.stem: position for position, check in enumerate(self.checks)}
        self.items = plan_items(checks=self.checks, default_repeats=config.settings.core.repeats)
        self.sample_sets = sample_sets_of(items=self.items)
        # A check changed eb's own state while checks ran, or the project changed under a
        # watched check: nothing of this run is stored.
        self.tampered = False
        self.project_changed = False

    # --- one check ---------------------------------------------------------------------------

    def _attempt(self, *, check: PlannedCheck, stem: str) -> CheckResult:
        """One run of a check under the evidence stem `stem`: its retries, then masking."""
        # Runners open their output files for writing, which would write through a file the
        # cache restored into the cache's copy it is linked to: a fresh file each time.
        self.outputs.clear(stem=stem)
        ctx = RunContext(
            check=check,
            config=self.config,
            harness=self.guard.harness,
            run_dir=self.run_dir,
            project_root=self.project_root,
            base_env=self.base_env,
            placeholder_env=self.placeholder_env,
            cancel=self.stop,
            report_tokens=self.fuses.report_tokens,
            report_cost=self.fuses.report_cost,
            evidence_stem=None if stem == check.stem else stem,
            artifacts=self.shared,
            redactor=self.redactor,
        )
        retries = self.config.settings.harness.retries

        def run_in(view: ProjectView | None) -> CheckResult:
            here = ctx if view is None else ctx.model_copy(update={"view": view})
            return run_attempts(
                ctx=here, run_once=run_one, retries=retries, write_result=write_check_result
            )

        self.owners[stem] = self.positions[check.stem]
        if self.isolation is None:
            result = run_in(None)
        else:
            # Keyed by the evidence stem: each sample of a repeated check is its own run.
            result = self.isolation.run(check=check, key=stem, run_in=run_in)
        if self.redactor:
            result = redact_check(
                run_dir=self.run_dir, stem=stem, result=result, redactor=self.redactor
            )
        return result

    def _unstarted(self, *, check: PlannedCheck) -> CheckResult | None:
        """The result of a check that must not start (a stop, or maxfail reached), else None."""
        if self.stop.is_set():
            # Once the run stops no new check starts.
            return judge_expectation(result=not_run_result(check=check, cancel=self.stop))
        if self.halt.reached:
            # maxfail: no new check starts either, but the run is not aborted.
            return judge_expectation(
                result=held_back_result(check=check, maxfail=self.halt.maxfail)
            )
        return None

    def _finish(
        self,
        *,
        position: int,
        result: CheckResult,
        never_started: bool,
        written: str | None = None,
    ) -> None:
        """Keep the result of the check at `position` (its file written, unless `written`
        holds the digest of the one the cache linked in its place)."""
        check = self.checks[position]
        self.not_run[position] = never_started
        result = with_error_class(result=result, cancel=self.stop)
        if written is None:
            try:
                written = write_check_result(
                    checks_dir=self.checks_dir, stem=check.stem, result=result
                )
            except WriteFault as fault:
                self.faults.add(fault=fault, stop=self.stop)
                result = result if never_started else fault_result(check=check, fault=fault)
        if written is not None:
            self.files[position] = (result, written)
        self.results[position] = result
        if not never_started:
            notify(self.on_result, check, result)

    def _run_check(self, *, position: int) -> None:
        """An unsampled check: held back, or run (and kept for the cache to store)."""
        follow(cancel=self.cancel, stop=self.stop)
        check = self.checks[position]
        held = self._unstarted(check=check)
        if held is not None:
            self._finish(position=position, result=held, never_started=True)
            return
        notify(self.on_start, check)
        result = self._attempt(check=check, stem=check.stem)
        self.halt.count(result=result)
        if self.cache is not None:
            # Stored after masking (so the cache never holds a secret either), and only once
            # every check has ended (so no check can write over it meanwhile).
            self.to_store.append(position)
        self._finish(position=position, result=result, never_started=False)

    def _run_sample(self, *, item: Item) -> None:
        """One sample of a sampled check; the last of its samples to end decides the check."""
        check = self.checks[item.position]
        assert item.sample is not None
        samples = self.sample_sets[item.position]
        follow(cancel=self.cancel, stop=self.stop)

        def decide() -> Gate:
            held = self._unstarted(check=check)
            if held is not None:
                return "stopped" if self.stop.is_set() else "held"
            notify(self.on_start, check)
            # A check run again in this run folder leaves no unsampled output behind.
            self.outputs.clear(stem=check.stem)
            return "run"

        gate = samples.open(decide=decide)
        stem = sample_stem(stem=check.stem, sample=item.sample)
        wrote = False
        # Each sample carries its own error class, so the check can take the one that matters.
        if gate != "run" or self.stop.is_set():
            outcome = with_error_class(
                result=not_run_result(check=check, cancel=self.stop), cancel=self.stop
            )
        else:
            outcome = with_error_class(
                result=self._attempt(check=check, stem=stem), cancel=self.stop
            )
            write_check_result(checks_dir=self.checks_dir, stem=stem, result=outcome)
            wrote = True
        record = sample_record(
            sample=item.sample,
            result=outcome,
            checks_dir=self.checks_dir,
            stem=stem,
            wrote_result=wrote,
        )
        done = samples.finish(sample=item.sample, result=outcome, record=record)
        if done is None:
            return
        outcomes, records = done
        if gate != "run" or all(one.details.get("not_run") is True for one in outcomes):
            held = self._unstarted(check=check)
            result = held or judge_expectation(result=outcomes[0])
            self._finish(position=item.position, result=result, never_started=True)
            return
        result = judge_expectation(
            result=aggregate_samples(
                check=check,
                samples=outcomes,
                records=records,
                rule=rule_of(definition=check.definition),
                cancel=self.stop,
            )
        )
        self.halt.count(result=result)
        self._finish(position=item.position, result=result, never_started=False)

    def _faulted(self, *, position: int, work: Callable[[], object]) -> object:
        """`work()` for the check at `position`; a write fault in it stops the run and makes
        that check an `error` (what it decided cannot be trusted without its output)."""
        try:
            return work()
        except (WriteFault, OSError) as exc:
            # An OSError out of a check's task is evidence eb failed to write (masking a
            # secret in its output, say): a write fault like any other. Too many open files
            # is a resource fault wherever it struck (a lazy import reads a file too).
            fault = (
                exc
                if isinstance(exc, WriteFault)
                else task_fault(
                    exc=exc,
                    folder=self.checks_dir,
                    doing=f"running check {self.checks[position].id}",
                )
            )
            self.faults.add(fault=fault, stop=self.stop)
            if self.results[position] is None:
                self.results[position] = fault_result(check=self.checks[position], fault=fault)
                self.not_run[position] = False
            return True  # answered: the check has its result

    def _run_item(self, index: int) -> None:
        item = self.items[index]
        if item.sample is None:
            self._faulted(
                position=item.position, work=lambda: self._run_check(position=item.position)
            )
        else:
            self._faulted(position=item.position, work=lambda: self._run_sample(item=item))

    def result_file_digests(self) -> dict[str, str]:
        """Check id -> the digest of checks/<stem>.json as the run leaves it, for every check
        with a result. Known from its writing; a result replaced since (charged with a change
        to eb's state, marked by the cache, a check eb could not write) is the text written
        last, or the one that belongs there: rendered again."""
        digests: dict[str, str] = {}
        for check, result, file in zip(self.checks, self.results, self.files, strict=True):
            if result is None:
                continue
            if file is not None and file[0] is result:
                digests[check.id] = file[1]
            else:
                digests[check.id] = result_file_digest(result=result)
        return digests

    # --- the stored verdicts, then the rest ----------------------------------------------------

    def _reuse(self, *, item: Item) -> bool:
        """Answer an unsampled check with its stored verdict; whether the cache had one."""
        follow(cancel=self.cancel, stop=self.stop)
        if self.cache is None or item.sample is not None or self.stop.is_set():
            return False
        check = self.checks[item.position]
        hit = self.cache.lookup(check=check)
        if hit is None:
            return False
        notify(self.on_start, check)
        self.halt.count(result=hit.result)
        self._finish(
            position=item.position,
            result=hit.result,
            never_started=False,
            written=hit.placed_result_sha256,
        )
        return True

    def reuse_stored(self) -> list[int]:
        """Answer what the cache can; the items left to run, by index."""
        # Stored verdicts first, one after another on this thread: restoring one is a few small
        # file operations, and worker threads doing them at once only contend for the
        # interpreter lock (a cached run of 1,000 checks took a third longer on four threads
        # than on one). A forked child may answer the back half meanwhile
        # (CacheSession.look_ahead).
        cache = self.cache
        if cache is not None:
            cache.look_ahead(checks=self.checks, stop=self.cancel)
        try:
            return unanswered(
                count=len(self.items),
                answered=lambda index: bool(
                    self._faulted(
                        position=self.items[index].position,
                        work=lambda: self._reuse(item=self.items[index]),
                    )
                ),
                stop=self.stop,
            )
        finally:
            if cache is not None:
                cache.settle(checks_dir=self.checks_dir)

    def run_rest(self, *, to_run: list[int]) -> None:
        """Run the items the cache did not answer, in their turn, on the pool; then settle
        what the watch on eb's state saw."""
        from eval_banana.checks.inputs import shared_artifacts
        from eval_banana.isolation.state import own_state_held

        config, checks, cache = self.config, self.checks, self.cache
        workers = min(config.settings.core.max_parallel_checks, len(to_run))
        to_start = sorted({self.items[index].position for index in to_run})
        # A check's samples stay next to each other: they share its turn. A lane plan counts
        # one worker per check, so checks with several samples get the plain longest-first turn.
        ranks = start_ranks(
            config=config,
            checks=checks,
            to_start=to_start,
            workers=workers if len(to_start) == len(to_run) else 1,
        )
        to_run.sort(key=lambda index: (ranks[self.items[index].position], index))
        self.shared = shared_artifacts(
            project_root=self.project_root,
            checks=[checks[self.items[index].position] for index in to_run],
        )
        self.outputs = OutputClearer(checks_dir=self.checks_dir)
        # A warning quotes what an agent printed or names a file a check named (after a
        # secret, or with a line break): masked like the files are, until the last looks at
        # eb's state and the project are settled.
        with log.masked(self.redactor.text):
            # Other eb runs sharing the cache write nothing into it while these checks run.
            with own_state_held(
                config=config, run_dir=self.run_dir, create=cache is not None and cache.writes
            ):
                if cache is not None:
                    # What changes in the cache from here on, eb did not write. Taken once the
                    # turn is ours: what another run stored while this one waited is that run's.
                    cache.remember_state()
                session = self.isolation = _open_isolation(
                    config=config,
                    plan=self.plan,
                    run_dir=self.run_dir,
                    running=frozenset(checks[position].stem for position in to_start),
                )
                # Orphaned daemons of a check become eb's children, to be ended with it.
                orphans.enable_subreaper()
                try:
                    with self.fuses:
                        # Taken in turn order, so checks start in that order.
                        run_pool(
                            count=len(to_run),
                            workers=workers,
                            task=lambda index: self._run_item(to_run[index]),
                            cancel=self.cancel,
                            stop=self.stop,
                            inline=lambda index: (
                                checks[self.items[to_run[index]].position].type in IN_PROCESS
                            ),
                        )
                finally:
                    orphans.end_run()
                    # The last looks at eb's state and the project, once no process a check
                    # started is left.
                    looks = session.finish()
                    if cache is not None:
                        cache.checks_watched(writes_told=looks.state.writes_told)
            self._settle(looks=looks, session=session)

    def _settle(self, *, looks: Looks, session: IsolationSession) -> None:
        """Charge the checks with what the last looks found, and note whether any verdict of
        this run may be stored."""
        self.tampered = settle_state(
            report=looks.state,
            session=session,
            config=self.config,
            checks=self.checks,
            results=self.results,
            owners=self.owners,
            checks_dir=self.checks_dir,
        )
        self.project_changed = settle_project(
            report=looks.project,
            config=self.config,
            checks=self.checks,
            results=self.results,
            owners=self.owners,
            checks_dir=self.checks_dir,
        )

    def store_verdicts(self) -> None:
        """Store the verdicts of the checks that ran, unless the run must keep nothing."""
        cache = self.cache
        if cache is None:
            return
        # A run that aborted (an interrupt, a fuse, a file it could not write) keeps nothing:
        # a verdict whose output was cut short by a full disk must not be reused once there is
        # room again.
        aborted = self.stop.is_set()
        store_all(
            cache=cache,
            folder=cache_dir(config=self.config),
            ran=self.to_store,
            checks=self.checks,
            results=self.results,
            keep=not self.tampered and not self.project_changed and not aborted,
            checks_dir=self.checks_dir,
            faults=self.faults,
            stop=self.stop,
            interrupt=self.cancel,
        )
        # A signal while they were stored or uploaded: the signal handler sets `cancel` alone.
        follow(cancel=self.cancel, stop=self.stop)
        if self.stop.is_set():  # aborted before the verdicts were stored, or while storing them
            cache.finish(aborted=True)


def _open_isolation(
    *, config: ConfigDoc, plan: PlanDoc, run_dir: Path, running: frozenset[str]
) -> IsolationSession:
    """The watch on eb's own state while checks run, with the judges' isolation (and checks',
    if asked) when some planned check has it; `running`: the stems of the checks to run."""
    from eval_banana.isolation.session import IsolationSession

    return IsolationSession.open(config=config, plan=plan, run_dir=run_dir, running=running)
