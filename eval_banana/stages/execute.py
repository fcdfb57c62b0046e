"""Stage 5, execute: run the planned checks in parallel, results in plan order (B-95..B-98, D-4).

Also the one place where controls are judged (D-11) and where the run fuses live (D-5).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.artifacts import (
    sha256_bytes,
    stage_json_bytes,
    write_model,
    write_text_atomic,
)
from eval_banana.envpolicy import build_base_env
from eval_banana.fuses import RunFuses
from eval_banana.log import Logger
from eval_banana.models.record import Record
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import (
    ConfigDoc,
    ExecuteDoc,
    GuardDoc,
    PlanDoc,
    PlannedCheck,
    ProblemModel,
)
from eval_banana.results import (
    StopSignal,
    error_result,
    exception_result,
    iso,
    judge_expectation,
    not_run_result,
    stop_reason,
    utc_now,
)
from eval_banana.runners import runner_for
from eval_banana.runners.base import RunContext
from eval_banana.stages import stage_path
from eval_banana.stages.common import envelope

if TYPE_CHECKING:
    from eval_banana.cache.session import CacheSession

logger = Logger("eval_banana.stages.execute")

StartCallback = Callable[[PlannedCheck], None]
ResultCallback = Callable[[PlannedCheck, CheckResult], None]

_WAIT_SLICE_S = 0.2  # the main thread wakes this often, so signal handlers run promptly


def document_digest(*, doc: Record) -> str:
    """`sha256:<hex>` of the exact bytes `write_model` writes for `doc` (the envelope's inputs)."""
    return sha256_bytes(data=stage_json_bytes(document=doc.model_dump(mode="json", by_alias=True)))


def result_json_text(*, result: CheckResult) -> str:
    """One check result as in report.json and checks/<stem>.json: indent 2, UTF-8, no newline."""
    return json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False)


def write_check_result(*, checks_dir: Path, stem: str, result: CheckResult) -> Path:
    """Write checks/<stem>.json atomically (B-150 [improve]: as soon as the check finishes)."""
    path = checks_dir / f"{stem}.json"
    write_text_atomic(path=path, text=result_json_text(result=result))
    return path


def _run_one(*, ctx: RunContext) -> CheckResult:
    """One check through its runner, its expectation judged (D-11); exceptions become errors."""
    return judge_expectation(result=_observe(ctx=ctx))


def _observe(*, ctx: RunContext) -> CheckResult:
    """What the check itself reached; any exception becomes that check's error result (B-97)."""
    check = ctx.check
    started = utc_now()
    try:
        result = runner_for(check_type=check.type)(ctx)
    except Exception as exc:  # noqa: BLE001 - B-97: one broken check never sinks the run
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


def unseen_usage_warnings(*, results: list[CheckResult]) -> list[ProblemModel]:
    """D-5: judges whose agent ran but reported no token usage, which the token fuse cannot see."""
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
    )


def _clear_outputs(*, checks_dir: Path, stem: str) -> None:
    """Remove a check's output files from an earlier execution in this run folder.

    Runners open them for writing, which would write through a restored file into the verdict
    cache it is linked to; a fresh file each time keeps the cache's copy intact.
    """
    for name in ("stdout.txt", "stderr.txt", "prompt.txt"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(checks_dir / f"{stem}.{name}")


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
) -> ExecuteDoc:
    """Run the plan's checks on min(max_parallel_checks, n) threads; results by plan position.

    `inputs` are the digests of the upstream stage files (computed from the documents when
    not given); `environ` is the process environment the env policy filters (default os.environ).
    """
    started = utc_now()
    checks = plan.checks
    checks_dir = run_dir / "checks"
    checks_dir.mkdir(parents=True, exist_ok=True)
    base_env = build_base_env(settings=config.settings.execution, environ=environ)
    project_root = Path(config.project_root)
    results: list[CheckResult | None] = [None] * len(checks)
    not_run: list[bool] = [False] * len(checks)
    stop = _stop_signal(cancel=cancel)
    fuses = RunFuses(
        stop=stop,
        token_budget=config.settings.harness.token_fuse,
        run_timeout_s=float(config.settings.core.run_timeout_seconds),
    )

    cache = _open_cache(config=config, plan=plan, guard=guard, run_dir=run_dir, environ=environ)

    def task(position: int) -> None:
        check = checks[position]
        _follow(cancel=cancel, stop=stop)
        # A stored verdict answers the check, on the same threads as the checks that run:
        # restoring a verdict is file work, and several proceed at once.
        hit = cache.lookup(check=check) if cache is not None and not stop.is_set() else None
        if hit is not None:
            _notify(on_start, check)
            write_check_result(checks_dir=checks_dir, stem=check.stem, result=hit)
            results[position] = hit
            _notify(on_result, check, hit)
            return
        if stop.is_set():
            # D-4: once the run stops no new check starts.
            result = judge_expectation(result=not_run_result(check=check, cancel=stop))
            not_run[position] = True
        else:
            _notify(on_start, check)
            _clear_outputs(checks_dir=checks_dir, stem=check.stem)
            ctx = RunContext(
                check=check,
                config=config,
                harness=guard.harness,
                run_dir=run_dir,
                project_root=project_root,
                base_env=base_env,
                cancel=stop,
                report_tokens=fuses.report_tokens,
            )
            result = _run_one(ctx=ctx)
            if cache is not None:
                result = cache.record(check=check, result=result)
        write_check_result(checks_dir=checks_dir, stem=check.stem, result=result)
        results[position] = result
        if not not_run[position]:
            _notify(on_result, check, result)

    if checks:
        workers = min(config.settings.core.max_parallel_checks, len(checks))
        with fuses:
            # Taken in plan order, so checks also start in plan order (B-91).
            _run_pool(count=len(checks), workers=workers, task=task, cancel=cancel, stop=stop)
    _follow(cancel=cancel, stop=stop)
    if cache is not None:
        cache.finish()
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
        warnings=(
            unseen_usage_warnings(results=final) if config.settings.harness.token_fuse > 0 else []
        )
        + (cache.warnings if cache is not None else []),
    )
    return ExecuteDoc.model_validate(document)


def write_execute_stage(*, run_dir: Path, doc: ExecuteDoc) -> str:
    """Write stages/execute.json; return the digest of its bytes."""
    return write_model(path=stage_path(run_dir=run_dir, stage="execute"), model=doc)
