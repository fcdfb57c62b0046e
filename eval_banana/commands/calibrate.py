"""`eb calibrate`: run each judge on its labelled cases and record how often it agreed."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import TYPE_CHECKING

from eval_banana.commands import common
from eval_banana.core.words import dollars_text

if TYPE_CHECKING:
    from pathlib import Path

    from eval_banana.models.calibration import CaseSample
    from eval_banana.models.stages import PlannedCheck
    from eval_banana.runners.fuses import RunFuses

DESCRIPTION = (
    "Run every calibration case of every selected harness_judge check, each in a disposable "
    "copy of the project (in a temporary folder) with the case's files laid over it; the "
    "project itself is never changed. Prints per judge the cases agreed, the true-pass and "
    "true-fail rates and each disagreement, and records the figures with the key they were "
    "measured under in .eval-banana/calibration.json ([harness] require_calibration reads it)."
)
EPILOG = """exit codes:
  0  every case of every selected judge agreed with its label
  1  some sample disagreed with its label (or errored)
  2  setup or usage error: bad flags, config or definitions, no judge with cases selected
  3  interrupted, or stopped by [harness] token_fuse or cost_fuse_usd (nothing recorded)
"""


def configure(*, parser: argparse.ArgumentParser) -> None:
    common.add_common(parser)
    common.add_setting_flags(parser, command="calibrate")


def usage_line(*, fuses: RunFuses) -> str | None:
    """The judges' reported usage, as a run states it; None when no judge reported any."""
    tokens, cost = fuses.tokens_used, fuses.cost_usd
    if tokens is None and cost is None:
        return None
    parts = [f"{tokens} tokens"] if tokens is not None else []
    parts += [dollars_text(cost)] if cost is not None else []
    return f"Judge usage: {', '.join(parts)}"


def fuse_text(*, fuses: RunFuses) -> str:
    """Which fuse tripped, with its budget."""
    if fuses.tripped == "token_fuse":
        return f"the token fuse tripped ([harness] token_fuse = {fuses.token_budget})"
    return f"the cost fuse tripped ([harness] cost_fuse_usd = {fuses.cost_budget_usd})"


def _refuse_inside_a_running_check(*, record: Path) -> None:
    """Refused before any judge runs: a calibration a check started (an `eb run`'s check runs
    `eb calibrate`) while checks execute in the project it records into. It could write its
    record only once no run's checks execute there (isolation/state.py `record_writes`), and
    the run whose check started it holds that turn until the check ends: each would wait for
    the other until the check's timeout. Writing it anyway would charge the check with it."""
    from eval_banana.core.errors import RunInUseError
    from eval_banana.isolation.state import checks_executing
    from eval_banana.runners.orphans import TOKEN_VAR

    if TOKEN_VAR not in os.environ or not checks_executing(record=record):
        return
    raise RunInUseError(
        "eb calibrate was started by a check of an eb run while eb checks execute in this "
        f"project ({TOKEN_VAR} is set): it writes the calibration record {record} only once "
        "no run's checks execute there, and the run whose check started it waits for that "
        "check to end",
        file=str(record),
        hint="run eb calibrate outside eb run's checks: before or after the run, or as a CI "
        "step of its own",
    )


def run(args: argparse.Namespace) -> int:
    from eval_banana.calibration.family import case_definitions, judges_of
    from eval_banana.calibration.run import calibrate, plan_runs
    from eval_banana.calibration.show import summary_lines
    from eval_banana.calibration.store import unwritable_record, write_record
    from eval_banana.calibration.watch import SampleWatch
    from eval_banana.core.errors import GuardError, RunAborted
    from eval_banana.core.version import tool_version
    from eval_banana.isolation.state import own_state_held, record_writes
    from eval_banana.pipeline.request import load_config, validated_plan
    from eval_banana.reporting.console import Console
    from eval_banana.runners.fuses import RunFuses
    from eval_banana.runners.results import StopSignal
    from eval_banana.settings.folders import record_path
    from eval_banana.settings.rundir import calibration_dir, new_run_id
    from eval_banana.stages import guard as guard_stage

    config = load_config(request=common.request(args), run_id=new_run_id())
    plan = validated_plan(config=config)
    # A dataset family is one judge, calibrated once under its own id.
    judges = judges_of(
        [check for check in plan.checks if check.type == "harness_judge"],
        family_calibration=plan.family_calibration,
    )
    with_cases = [check for check in judges if check.definition.get("calibration")]
    if not with_cases:
        raise GuardError(
            "No selected harness_judge check has calibration cases",
            hint="Add `calibration:` cases to a judge (see docs/judges.md), or select one with "
            "--check-id.",
        )
    record = record_path(config=config)
    unwritable = unwritable_record(path=record)
    if unwritable is not None:
        raise GuardError(
            f"The calibration record cannot be written: {unwritable}",
            file=str(record),
            hint="Remove or rename it; eb calibrate writes the record there.",
        )
    _refuse_inside_a_running_check(record=record)
    guarded = guard_stage.guard(config=config, plan=plan, inputs={}, mode="calibrate")
    guard_stage.raise_if_refused(guarded)
    assert guarded.harness is not None  # judges were planned and the guard let them through
    console = Console()
    console.warn_each(guarded.warnings)
    for check in judges:
        if check not in with_cases:
            console.warn(f"Judge check '{check.id}' has no calibration cases; not calibrated")

    run_dir = calibration_dir(config=config)
    # The judges' tokens and dollars count against the fuses, as in a run: a tripped fuse
    # stops the calibration (no new sample starts, running ones end) and records nothing.
    cancel = StopSignal()
    fuses = RunFuses(
        stop=cancel,
        token_budget=config.settings.harness.token_fuse,
        run_timeout_s=0.0,
        cost_budget_usd=config.settings.harness.cost_fuse_usd,
    )
    definitions = {
        check.id: rendered
        for check in with_cases
        if (rendered := case_definitions(check)) is not None
    }
    total = len(
        plan_runs(
            checks=with_cases,
            default_repeats=config.settings.core.repeats,
            definitions=definitions,
        )
    )
    done = [0]
    lock = threading.Lock()

    def progress(check: PlannedCheck, case: str, sample: CaseSample) -> None:
        with lock:
            done[0] += 1
            console.notice(
                f"[{done[0]}/{total}] {check.id}: case '{case}' sample {sample.sample}: "
                f"{sample.status}{'' if sample.agreed else ' (disagrees)'}"
            )

    # The project's file set (each case's copy), and eb's own files, watched as a run watches
    # them for judges; no other eb process writes eb's files meanwhile, as during a run's checks,
    # and another run's reports wait for the judges to end (reporting/projectturn.py).
    with own_state_held(config=config, run_dir=run_dir, create=False):
        watch = SampleWatch.open(config=config, run_dir=run_dir)
        try:
            with common.stop_on_signals(cancel):
                entries = calibrate(
                    config=config,
                    harness=guarded.harness,
                    checks=with_cases,
                    run_dir=run_dir,
                    watch=watch,
                    cancel=cancel,
                    environ=os.environ,
                    on_sample=progress,
                    definitions=definitions,
                    fuses=fuses,
                )
        finally:
            watch.close()
    usage = usage_line(fuses=fuses)
    if usage is not None:
        console.notice(usage)
    if fuses.tripped is not None:
        raise RunAborted(
            f"Calibration stopped: {fuse_text(fuses=fuses)}; nothing recorded. Evidence: {run_dir}"
        )
    if cancel.is_set():
        raise RunAborted(f"Calibration interrupted; nothing recorded. Evidence: {run_dir}")
    record.parent.mkdir(parents=True, exist_ok=True)

    # A run's checks executing in this project would take the record's replacement for theirs.
    def waits() -> None:
        console.notice(f"Waiting for another eb run's checks to end before writing {record}")

    with record_writes(record=record, waits=waits):
        # Over the record as no judge made it: a change while the samples ran is not kept.
        earlier = watch.trusted_record()
        write_record(path=record, measured=entries, earlier=earlier, tool_version=tool_version())
    # The run folder keeps what this calibration measured, beside its evidence.
    write_record(
        path=run_dir / "calibration.json",
        measured=entries,
        earlier=None,
        tool_version=tool_version(),
    )
    for line in summary_lines(entries=entries, record=str(record), run_dir=str(run_dir)):
        sys.stdout.write(line + "\n")
    return 0 if all(entry.cases_agreed == entry.cases for entry in entries) else 1
