"""What a run was asked to do, and the config stage resolved from it (light to import)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from eval_banana.models.config import SELECT_STDIN, Selection
from eval_banana.models.stages import ConfigDoc
from eval_banana.stages.config import resolve_config

if TYPE_CHECKING:
    from eval_banana.models.stages import PlanDoc
    from eval_banana.reporting import ReportExtras


class RunRequest(NamedTuple):
    """What `eb run` (or `invoke eval`) was asked to do."""

    cwd: Path
    cli_values: Mapping[str, object]
    environ: Mapping[str, str]
    no_project_config: bool
    selection: Selection
    flat_output: bool = False
    extras: ReportExtras | None = None  # report.html, JUnit, GitHub output (eval_banana.reporting)
    outputs: tuple[Path, ...] = ()  # files written beside the run folder: --result-out
    json_line: bool = False  # the report is printed as one JSON line (`eb run --json`)


def load_config(*, request: RunRequest, run_id: str) -> ConfigDoc:
    """The config stage for this request (--changed-since pinned to the commit its revision
    names now; --last-failed resolved against the earlier runs; --balance history, against the
    run history)."""
    config = resolve_config(
        cwd=request.cwd,
        cli_values=request.cli_values,
        environ=request.environ,
        no_project_config=request.no_project_config,
        selection=request.selection,
        run_id=run_id,
    )
    if config.selection.changed_since is not None:
        from eval_banana.incremental.changed import pin_changed_since

        config = pin_changed_since(config=config)
    if config.selection.last_failed:
        from eval_banana.incremental.lastfailed import resolve_last_failed

        config = resolve_last_failed(config=config)
    if config.selection.shard is not None and config.settings.core.shard_balance == "history":
        from eval_banana.history.balance import resolve_balance

        config = resolve_balance(config=config)
    return config.model_copy(update={"outputs": _outputs(config=config, request=request)})


def validated_plan(*, config: ConfigDoc) -> PlanDoc:
    """The discover and validate stages as `eb run` runs them, in memory (no run folder): the
    plan, or their refusal raised the same way (a command that only needs to know the checks)."""
    from eval_banana.stages.discover import discover
    from eval_banana.stages.validate import validate

    contents: dict[str, bytes] = {}
    discovered = discover(config=config, inputs={}, contents=contents)
    outcome = validate(config=config, discovered=discovered, inputs={}, contents=contents)
    outcome.raise_if_failed()
    return outcome.plan


def _outputs(*, config: ConfigDoc, request: RunRequest) -> list[str]:
    """The files this run writes outside its run folder, and the `--select` file it read,
    absolute: they are eb's own, and a later run must not see them as a change of the project."""
    from eval_banana.settings.folders import STEP_SUMMARY_ENV, junit_file

    junit = config.settings.core.junit_xml
    found = [junit_file(setting=junit, project_root=Path(config.project_root))] if junit else []
    found += request.outputs
    select = config.selection.select
    if select is not None and select.file != SELECT_STDIN:
        # `eb plan`'s document, saved into the checkout: `eb plan` left it out of the project
        # (its own stdout), so the run does too, or every check keyed on the whole project
        # would miss the verdicts the plan called hits. Read relative to where eb started.
        found.append(Path(select.file))
    summary = request.environ.get(STEP_SUMMARY_ENV)
    if summary:
        found.append(Path(summary))
    return sorted({str(path.absolute()) for path in found})
