"""Check-type runners: `RUNNERS[check.type](ctx) -> CheckResult`, and what every runner shares:
building results, the subprocess a check runs in, retries of failed agent processes, run-level
fuses, the redaction of secrets, and the pool of threads the execute stage runs checks on.

May import: transcripts, harness, settings, models, assertions and core.
"""

from __future__ import annotations

import importlib

from eval_banana.models.result import CheckResult
from eval_banana.runners.base import RunContext, Runner


class LazyRunner:
    """A runner named by import path, imported on first call (keeps optional parts lazy)."""

    def __init__(self, *, module: str, function: str) -> None:
        self.module = module
        self.function = function
        self._runner: Runner | None = None

    def __call__(self, ctx: RunContext) -> CheckResult:
        if self._runner is None:
            self._runner = getattr(importlib.import_module(self.module), self.function)
        return self._runner(ctx)

    def __repr__(self) -> str:
        return f"LazyRunner({self.module}.{self.function})"


RUNNERS: dict[str, Runner] = {
    "deterministic": LazyRunner(
        module="eval_banana.runners.deterministic", function="run_deterministic"
    ),
    "harness_judge": LazyRunner(
        module="eval_banana.runners.harness_judge", function="run_harness_judge"
    ),
    "assertions": LazyRunner(module="eval_banana.runners.assertions", function="run_assertions"),
}

# The check types whose runner works in this process (no child process to wait on).
IN_PROCESS = frozenset({"assertions"})


def runner_for(*, check_type: str) -> Runner:
    """The runner of a check type; an unknown type is an internal error (validate stops it)."""
    try:
        return RUNNERS[check_type]
    except KeyError:
        raise LookupError(f"No runner for check type '{check_type}'") from None
