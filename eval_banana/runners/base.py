"""What every check-type runner receives and returns."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from eval_banana.models.record import Field, Record
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, PlannedCheck, ResolvedHarness


class RunContext(Record):
    """Everything one check needs; runners never read stage files themselves."""

    check: PlannedCheck
    config: ConfigDoc
    harness: ResolvedHarness | None
    run_dir: Path
    project_root: Path
    # The environment children start from (after the env policy); runners add their own keys.
    base_env: Mapping[str, str]
    # Set when the run is stopping (interrupt, fuse): runners end their process group promptly.
    cancel: threading.Event = Field(default_factory=threading.Event)
    # Called with tokens a judge reported, for the token fuse.
    report_tokens: object | None = None
    # Called with the dollars a judge reported spending, for the cost fuse.
    report_cost: object | None = None

    @property
    def checks_dir(self) -> Path:
        return self.run_dir / "checks"


class Runner(Protocol):
    def __call__(self, ctx: RunContext) -> CheckResult: ...
