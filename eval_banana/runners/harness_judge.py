"""Harness judge checks: ask an agent CLI for a `{"score": 0|1, "reason": ...}` verdict.

What we keep from eval-banana and what we change: docs/compatibility.md#judges-and-agent-templates.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from eval_banana.core.errors import WriteFault
from eval_banana.core.files import write_text_atomic
from eval_banana.core.jsonvalues import lone_surrogates_replaced
from eval_banana.core.log import Logger
from eval_banana.core.masking import Masker
from eval_banana.harness.cause import agent_error
from eval_banana.harness.command import (
    build_argv,
    build_env,
    display_argv,
    prompt_argument_problem,
)
from eval_banana.harness.effort import effort_outcome
from eval_banana.harness.errorclass import (
    ErrorCause,
    answered_cause,
    classify_judge_error,
    launch_cause,
)
from eval_banana.harness.prompt import PROMPT_VERSION, judge_prompt
from eval_banana.harness.resolve import effective_model, injection_problem
from eval_banana.harness.structured import (
    SCHEMA_FILE_NAME,
    honoured,
    requests_schema,
    schema_text,
)
from eval_banana.harness.usage import read_usage, usage_cost, usage_tokens
from eval_banana.harness.verdict import Extraction, extract_verdict
from eval_banana.models.result import NOT_STARTED, STOPPED, CheckResult, Status
from eval_banana.models.stages import ResolvedHarness
from eval_banana.runners.base import RunContext
from eval_banana.runners.judgetrace import trace_judge
from eval_banana.runners.process import ProcessOutcome, run_process
from eval_banana.runners.redact import run_redactor
from eval_banana.runners.results import (
    build_result,
    error_result,
    stop_error_cause,
    stopped_detail,
    utc_now,
)
from eval_banana.runners.tails import stream_tails
from eval_banana.transcripts import TRANSCRIPT_SUFFIX, TranscriptBuilder, write_transcript

logger = Logger("eval_banana.runners.harness_judge")

NO_VERDICT = 'Harness judge output did not contain a valid JSON verdict with "score": 0 or 1.'
NO_AGENT = "Harness judge requires config.harness_agent to be set"


def _details(
    *,
    harness: ResolvedHarness,
    model: str | None,
    effort: str | None,
) -> dict[str, Any]:
    """eval-banana's five keys in its order, then ours (prompt version, dialect, command, ...)."""
    return {
        "model": model,
        "agent_type": harness.agent,
        "reasoning_effort": effort,
        "timeout_seconds": harness.timeout_seconds,
        "raw_response_path": None,
        # checks/<stem>.transcript.jsonl when [harness] transcripts is on and the agent printed.
        "transcript_path": None,
        "prompt_version": PROMPT_VERSION,
        "output_dialect": harness.template.output_dialect,
        "effective_command": None,
        "usage": None,
        "verdict_problem": None,
        # Set when the agent process itself failed (eval_banana.runners.retries may rerun those).
        "agent_failure": None,
        "effort": None,
        # Whether the verdict's JSON Schema went to the CLI, and whether its answer held to it.
        "structured_output": {
            "requested": requests_schema(template=harness.template),
            "honoured": None,
        },
    }


def _classed(*, details: dict[str, Any], found: ErrorCause) -> dict[str, Any]:
    """`details.error_class` and `details.error_cause`: why this judge ended in `error`; for the
    infrastructure's errors `details.error_transient`: whether the cause may pass (a retry)."""
    details["error_class"] = found.error_class
    details["error_cause"] = found.cause
    if found.error_class == "infrastructure":
        details["error_transient"] = found.transient
    if not found.started:
        details[NOT_STARTED] = True
    return details


# A setup problem (no agent, a model the template cannot take, a prompt too large): nobody
# judged, and the same run would fail the same way (never retried: no agent_failure).
_SETUP = ErrorCause("infrastructure", "agent setup", transient=False, started=False)


def _report_usage(*, ctx: RunContext, usage: dict[str, Any] | None) -> None:
    """Hand the judge's tokens and cost to the run's fuses."""
    tokens = usage_tokens(usage)
    callback = ctx.report_tokens
    if tokens is not None and callable(callback):
        report: Callable[[int], object] = callback
        report(tokens)
    cost = usage_cost(usage)
    cost_callback = ctx.report_cost
    if cost is not None and callable(cost_callback):
        report_cost: Callable[[float], object] = cost_callback
        report_cost(cost)


def _note_effort(*, ctx: RunContext, details: dict[str, Any], outcome: ProcessOutcome) -> None:
    """`details.effort`; a warning when the agent says it did not use the effort it was given."""
    harness = ctx.harness
    if harness is None:
        return
    effort = effort_outcome(
        template=harness.template,
        requested=details["reasoning_effort"],
        stderr_path=outcome.stderr_path,
    )
    details["effort"] = effort
    if effort is not None and effort["status"] in ("replaced", "rejected"):
        logger.warning(
            "Harness judge check %s: the agent did not use reasoning effort %r: %s",
            ctx.check.id,
            effort["requested"],
            effort["agent_said"],
        )


def _no_verdict(found: Extraction) -> str:
    """eval-banana's text, then what was wrong when the judge's last verdict was malformed (its
    answer was there, so "no verdict" alone would send people looking for none)."""
    problem = found.problem
    if not found.malformed or not problem:
        return NO_VERDICT
    return f"{NO_VERDICT} {problem[0].upper()}{problem[1:]}."


def _with_cause(*, detail: str, cause: str | None) -> str:
    """eval-banana's text, then what the agent itself said went wrong (when it said)."""
    return detail if cause is None else f"{detail} The agent reported: {cause}"


def _masker(*, ctx: RunContext, env: dict[str, str]) -> Masker:
    """The run's redactor, else one of the judge's own environment: every text eb cuts from
    the agent's output is masked before the cut, so a cut never leaves part of a secret (the
    whole files and the result are masked again afterwards, eval_banana.runners.redact)."""
    if ctx.redactor is not None:
        return ctx.redactor
    return run_redactor(config=ctx.config, harness=ctx.harness, environ=env)


def _transcript_builder(
    *, ctx: RunContext, details: dict[str, Any], masker: Masker
) -> TranscriptBuilder | None:
    """What reads the agent's output into transcript events while it runs (transcripts on)."""
    settings = ctx.config.settings
    if not settings.harness.transcripts:
        return None
    return TranscriptBuilder(
        dialect=str(details["output_dialect"]),
        max_chars=settings.harness.transcript_max_chars,
        masker=masker,
    )


def _transcript(
    *,
    ctx: RunContext,
    outcome: ProcessOutcome,
    details: dict[str, Any],
    builder: TranscriptBuilder | None,
) -> None:
    """Write checks/<stem>.transcript.jsonl from what the agent printed (when it printed)."""
    target = ctx.evidence_path(TRANSCRIPT_SUFFIX)
    target.unlink(missing_ok=True)  # a file from an earlier attempt or a merged run folder
    if builder is None:
        return
    if outcome.stdout_path is None and outcome.stderr_path is None:
        return
    try:
        write_transcript(events=builder.events(), target=target)
    except OSError as exc:
        raise WriteFault.of(path=target, exc=exc) from None
    details["transcript_path"] = ctx.evidence_name(TRANSCRIPT_SUFFIX)


def _judged(
    *,
    ctx: RunContext,
    started: datetime,
    outcome: ProcessOutcome,
    details: dict[str, Any],
    builder: TranscriptBuilder | None,
    masker: Masker,
) -> CheckResult:
    """The outcome for a process that ran: stop, timeout, exit code and verdict."""
    stdout, stderr = stream_tails(outcome=outcome, masker=masker, evidence_name=ctx.evidence_name)
    if outcome.stdout_path is not None:
        details["raw_response_path"] = ctx.evidence_name(".stdout.txt")
    _transcript(ctx=ctx, outcome=outcome, details=details, builder=builder)
    common: dict[str, Any] = {
        "check": ctx.check,
        "started": started,
        "stdout": stdout,
        "stderr": stderr,
        "details": details,
    }
    if outcome.cancelled:
        _classed(details=details, found=stop_error_cause(cancel=ctx.cancel))
        details[STOPPED] = True
        return error_result(error_detail=stopped_detail(cancel=ctx.cancel), **common)
    dialect = str(details["output_dialect"])
    found: Extraction = extract_verdict(dialect=dialect, stdout_path=outcome.stdout_path)
    # The judge gave its answer (a verdict, or a malformed one): whatever failed after it, the
    # error is never retried (eval_banana.harness.errorclass).
    answered = found.verdict is not None or found.malformed
    if found.verdict is not None and (outcome.timed_out or outcome.exit_code != 0):
        # What it answered before it failed: the error stands, and no retry replaces it.
        details["printed_verdict"] = found.verdict._asdict()
    if outcome.timed_out:
        limit = details["timeout_seconds"]
        details["agent_failure"] = "timeout"
        timeout = ErrorCause("infrastructure", "timeout")
        _classed(details=details, found=answered_cause(timeout) if answered else timeout)
        return error_result(
            error_detail=f"Harness judge subprocess timed out after {limit} seconds", **common
        )
    usage = read_usage(
        dialect=dialect, usage_event=found.usage_event, stderr_path=outcome.stderr_path
    )
    details["usage"] = usage
    details["verdict_problem"] = found.problem
    structured = details.get("structured_output")
    if isinstance(structured, dict) and structured.get("requested"):
        structured["honoured"] = honoured(
            dialect=dialect, result_event=found.usage_event, stdout_path=outcome.stdout_path
        )
    _note_effort(ctx=ctx, details=details, outcome=outcome)
    _report_usage(ctx=ctx, usage=usage)
    code = outcome.exit_code
    verdict = found.verdict
    cause = None
    if verdict is None:
        cause = agent_error(
            dialect=dialect,
            event=found.usage_event,
            stderr_path=outcome.stderr_path,
            exited_nonzero=code != 0,
            error_event=found.error_event,
            stdout_path=outcome.stdout_path,
            masker=masker,
        )
    if code != 0 or verdict is None:
        found_cause = classify_judge_error(
            exit_code=code,
            answered=answered,
            event=found.usage_event,
            error_event=found.error_event,
            stderr_path=outcome.stderr_path,
        )
        _classed(details=details, found=found_cause)
    if code != 0:
        if verdict is None:
            detail = _with_cause(
                detail=f"Agent exited with code {code}: {_no_verdict(found)}", cause=cause
            )
            logger.warning("Harness judge check %s failed: %s", ctx.check.id, detail)
        else:
            detail = f"Harness judge agent exited with code {code}"
        details["agent_failure"] = "exit_code"
        return error_result(error_detail=detail, exit_code=code, **common)
    if verdict is None:
        detail = _with_cause(detail=_no_verdict(found), cause=cause)
        logger.warning("Harness judge check %s failed: %s", ctx.check.id, detail)
        details["agent_failure"] = "no_verdict"
        return error_result(error_detail=detail, exit_code=0, **common)
    status: Status = "passed" if verdict.score == 1 else "failed"
    return build_result(status=status, reason=verdict.reason, exit_code=0, **common)


def _launch_error(
    *, ctx: RunContext, started: datetime, exc: BaseException, details: dict[str, Any]
) -> CheckResult:
    """The agent could not be started."""
    detail = f"{type(exc).__name__}: {exc}"
    logger.warning("Harness judge check %s failed: %s", ctx.check.id, detail)
    _classed(details=details, found=launch_cause(exc))
    return error_result(check=ctx.check, started=started, error_detail=detail, details=details)


def _write_prompt(*, path: Path, prompt: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # may be hard-linked from another run folder (eb merge)
    path.write_bytes(prompt.encode("utf-8"))  # UTF-8, exactly the prompt, no trailing newline


def _schema_file(*, ctx: RunContext) -> Path:
    """The run folder's verdict schema file (the same bytes for every judge: written whole by
    whichever judge comes first, rewritten atomically by the others). It stays out of the
    project, so judge isolation never sees it."""
    path = ctx.run_dir / SCHEMA_FILE_NAME
    text = schema_text()
    try:
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            write_text_atomic(path=path, text=text)
    except OSError as exc:
        raise WriteFault.of(path=path, exc=exc) from None  # infrastructure: run aborts
    return path


def run_harness_judge(ctx: RunContext) -> CheckResult:
    """Run one judge check to a result; every failure is an `error` result, never an exception
    (but a file eb cannot write, which aborts the run: WriteFault)."""
    started = utc_now()
    harness = ctx.harness
    if harness is None:
        # Unreachable through the CLI (the guard refuses first).
        timeout = ctx.config.settings.harness.timeout_seconds
        return error_result(
            check=ctx.check,
            started=started,
            error_detail=NO_AGENT,
            details=_classed(details={"timeout_seconds": timeout}, found=_SETUP),
        )
    definition = ctx.check.definition
    template = harness.template
    model = effective_model(harness=harness, check_model=definition.get("model"))
    effort = harness.reasoning_effort
    problem = injection_problem(template=template, agent=harness.agent, model=model, effort=effort)
    if problem is not None:
        # A model or effort the agent cannot receive: nothing is written or launched, and the
        # effective fields are null.
        details = _classed(details=_details(harness=harness, model=None, effort=None), found=_SETUP)
        return error_result(check=ctx.check, started=started, error_detail=problem, details=details)
    details = _details(harness=harness, model=model, effort=effort)
    prompt = judge_prompt(check=ctx.check)
    prompt_path = ctx.evidence_path(".prompt.txt")
    try:
        _write_prompt(path=prompt_path, prompt=prompt)
    except OSError as exc:
        raise WriteFault.of(path=prompt_path, exc=exc) from None  # infrastructure: run aborts
    schema_path = _schema_file(ctx=ctx) if requests_schema(template=template) else None
    argv = build_argv(
        template=template, prompt=prompt, model=model, effort=effort, schema_path=schema_path
    )
    details["effective_command"] = display_argv(argv=argv, prompt=prompt, schema_path=schema_path)
    unsendable = prompt_argument_problem(prompt=prompt)
    if unsendable is not None:
        _classed(details=details, found=_SETUP)
        return error_result(
            check=ctx.check, started=started, error_detail=unsendable, details=details
        )
    env = build_env(
        template=template,
        base_env=ctx.base_env,
        placeholder_env=ctx.placeholder_env,
        harness_env=ctx.config.settings.harness.env,
        model=model,
        project_root=ctx.seen_root,
        agent=harness.agent,
    )
    masker = _masker(ctx=ctx, env=dict(env))
    builder = _transcript_builder(ctx=ctx, details=details, masker=masker)
    try:
        outcome = run_process(
            argv=ctx.command(argv),
            cwd=ctx.process_cwd,
            env=env,
            stdout_path=ctx.evidence_path(".stdout.txt"),
            stderr_path=ctx.evidence_path(".stderr.txt"),
            timeout_s=float(harness.timeout_seconds),
            cancel=ctx.cancel,
            follow=builder,
        )
    except OSError as exc:
        return _launch_error(ctx=ctx, started=started, exc=exc, details=details)
    result = _words_only(
        _judged(
            ctx=ctx,
            started=started,
            outcome=outcome,
            details=details,
            builder=builder,
            masker=masker,
        )
    )
    trace_judge(ctx=ctx, argv=details["effective_command"], outcome=outcome, result=result)
    return result


def _words_only(result: CheckResult) -> CheckResult:
    """`result` with each lone surrogate in its texts as U+FFFD. An agent's JSON can escape half
    a surrogate pair (`\\ud83d`: text cut inside an emoji, as JavaScript's slice cuts it) in a
    reason, an error, a model name; no UTF-8 file can hold one, so the first report written
    with it failed the whole run."""
    dumped = result.model_dump()
    cleaned = lone_surrogates_replaced(dumped)
    return result if cleaned == dumped else CheckResult.model_validate(cleaned)
