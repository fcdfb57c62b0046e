"""What every check-type runner receives and returns."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from eval_banana.core.record import Field, Record
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ConfigDoc, PlannedCheck, ResolvedHarness

if TYPE_CHECKING:
    # Only assertions checks use it, and only their runner imports what it needs.
    from eval_banana.assertions.shared import SharedArtifacts
    from eval_banana.runners.redact import Redactor


class ProjectView(NamedTuple):
    """Where a check sees the project when it runs in a disposable copy (eval_banana.isolation)."""

    path: Path  # the project as the check sees it (its project_root)
    cwd: Path  # where its process starts
    wrap: Callable[[Sequence[str]], list[str]]  # the command line that runs argv there


class RunContext(Record):
    """Everything one check needs; runners never read stage files themselves."""

    check: PlannedCheck
    config: ConfigDoc
    harness: ResolvedHarness | None
    run_dir: Path
    project_root: Path
    # The environment children start from (after the env policy); runners add their own keys.
    base_env: Mapping[str, str]
    # eb's own environment but the names no child receives (envpolicy.inherited_env): what
    # `provider_env`'s `{env:NAME}` placeholders read, whatever the env policy.
    placeholder_env: Mapping[str, str]
    # Set when the run is stopping (interrupt, fuse): runners end their process group promptly.
    cancel: threading.Event = Field(default_factory=threading.Event)
    # Called with tokens a judge reported, for the token fuse.
    report_tokens: object | None = None
    # The file stem of this run's evidence under checks/ (default: the check's stem). Every
    # runner names its files through `evidence_path`, so one check can be run more than once
    # in a run (e.g. repeated samples) without one run overwriting another's files.
    evidence_stem: str | None = None
    # Called with the dollars a judge reported spending, for the cost fuse.
    report_cost: object | None = None
    # Set when the check runs in a disposable copy of the project instead of the project.
    view: ProjectView | None = None
    # The run's artifacts that several assertions checks grade, parsed once between them.
    artifacts: SharedArtifacts | None = None
    # The run's redactor (eval_banana.runners.redact.run_redactor), for what a runner masks while
    # the check runs; None: a runner that needs one builds it from the check's own environment.
    redactor: Redactor | None = None

    @property
    def seen_root(self) -> Path:
        """The project root as the check's process sees it (a copy's, when isolated)."""
        return self.view.path if self.view is not None else self.project_root

    @property
    def process_cwd(self) -> Path:
        return self.view.cwd if self.view is not None else self.project_root

    def command(self, argv: Sequence[str]) -> list[str]:
        """The command line that runs `argv` where the check sees the project."""
        return self.view.wrap(argv) if self.view is not None else list(argv)

    @property
    def checks_dir(self) -> Path:
        return self.run_dir / "checks"

    @property
    def stem(self) -> str:
        """The evidence stem in use: `evidence_stem`, else the check's own stem."""
        return self.evidence_stem or self.check.stem

    def evidence_name(self, suffix: str) -> str:
        """Run-relative name of one evidence file: `checks/<stem><suffix>`."""
        return f"checks/{self.stem}{suffix}"

    def evidence_path(self, suffix: str) -> Path:
        """Where one evidence file of this run goes: `<run dir>/checks/<stem><suffix>`."""
        return self.checks_dir / f"{self.stem}{suffix}"


class Runner(Protocol):
    def __call__(self, ctx: RunContext) -> CheckResult: ...
