"""One check through its runner: what it reached, its expectation judged. The one `try` of the
execute stage: anything a runner raises becomes that check's `error` result, except a write
fault or too many open files, which abort the run."""

from __future__ import annotations

from eval_banana.core.errors import ResourceFault, WriteFault
from eval_banana.core.log import Logger
from eval_banana.models.result import CheckResult
from eval_banana.runners import runner_for
from eval_banana.runners.base import RunContext
from eval_banana.runners.results import (
    error_result,
    exception_result,
    judge_expectation,
    utc_now,
)

logger = Logger("eval_banana.execution")


def run_one(*, ctx: RunContext) -> CheckResult:
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
        fault = ResourceFault.during(exc=exc, doing=f"running check {check.id}")
        if fault is not None:
            raise fault from None  # too many open files: eb's, never this check's
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
