"""Stage 4, guard: stop before anything runs when the harness cannot serve the judges."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from eval_banana.core.errors import ConfigError, GuardError, Problem
from eval_banana.harness.identify import WRONG_GROK_HINT, wrong_program_message
from eval_banana.harness.resolve import (
    injection_problem,
    missing_executable_hint,
    missing_executable_message,
    resolve_harness,
)
from eval_banana.models.stages import ConfigDoc, GuardDoc, PlanDoc, ProblemModel, ResolvedHarness
from eval_banana.settings.origin import origin_in
from eval_banana.stagefiles.layout import envelope
from eval_banana.stagefiles.write import write_stage_model

# `calibrate` guards `eb calibrate`: as `run`, without the calibration gate it would measure for.
GuardMode = Literal["run", "validate", "calibrate"]

_NO_HARNESS = (
    "harness_judge check requires a harness but none is configured (first offender: {path}). "
    "Fix: {fix}."
)
_CONFIGURE_AGENT = (
    "set [harness] agent in .eval-banana/config.toml or pass --harness-agent on the command line"
)


def _no_harness_fix(*, config: ConfigDoc) -> str:
    """How to name an agent: where the empty one was given (a variable or a flag set empty
    clears the file's agent, so the file is not what to change), else the file or the flag."""
    origin = origin_in(config=config, name="harness.agent")
    if origin.source == "env":
        return (
            f"{origin.named} is set but empty, which means no agent: set it to an agent's name, "
            "or unset it to use [harness] agent from the config file"
        )
    if origin.source == "cli":
        return f"{origin.named} was given empty, which means no agent: pass an agent's name"
    return _CONFIGURE_AGENT


def _problem(
    message: str, *, hint: str | None = None, field_path: str | None = None
) -> ProblemModel:
    return ProblemModel(message=message, hint=hint, field_path=field_path)


def _judges(plan: PlanDoc) -> list[str]:
    return [check.id for check in plan.checks if check.type == "harness_judge"]


def _resolve(*, config: ConfigDoc) -> tuple[ResolvedHarness | None, list[ProblemModel]]:
    try:
        return resolve_harness(settings=config.settings, project_root=Path(config.project_root)), []
    except ConfigError as exc:
        # The agent named no template: say where it was named (the variable, the flag, or
        # the file and its line), which the fix changes.
        origin = origin_in(config=config, name="harness.agent")
        given = origin.given(config.settings.harness.agent)
        hint = f"{given} names it; {exc.hint}" if exc.hint else given
        problem = ProblemModel(
            message=exc.message,
            hint=hint,
            file=origin.file,
            field_path="harness.agent",
            line=origin.line,
        )
        return None, [problem]


def _injection_problems(*, plan: PlanDoc, harness: ResolvedHarness) -> list[ProblemModel]:
    problems = []
    # The answer depends on the model alone, and thousands of judges (a family's cases) share
    # a handful of models.
    answers: dict[str | None, str | None] = {}
    for check in plan.checks:
        if check.type != "harness_judge":
            continue
        model = check.definition.get("model") or harness.model
        named = model if isinstance(model, str) else None
        if named in answers:
            text = answers[named]
        else:
            text = answers[named] = injection_problem(
                template=harness.template,
                agent=harness.agent,
                model=named,
                effort=harness.reasoning_effort,
            )
        if text:
            problems.append(
                ProblemModel(message=text, file=check.source_path, field_path="harness")
            )
    return problems


def _case_file_problems(*, config: ConfigDoc, plan: PlanDoc) -> list[ProblemModel]:
    """Calibration cases whose files cannot be laid over this project (a folder at the path,
    a file or symlink on its way): `eb calibrate` would record them as the judge's errors."""
    from eval_banana.calibration.cases import case_file_problem

    root = Path(config.project_root)
    problems = []
    for check in plan.checks:
        cases = check.definition.get("calibration") if check.type == "harness_judge" else None
        if not cases or not isinstance(cases, list):  # most judges: a family's cases have none
            continue
        for position, case in enumerate(cases):
            files = case.get("files") if isinstance(case, dict) else None
            for relative in files if isinstance(files, dict) else {}:
                problem = case_file_problem(root=root, relative=relative)
                if problem is None:
                    continue
                where = f"calibration.{position}.files"
                problems.append(
                    ProblemModel(
                        message=f"{check.source_path}: {where}: calibration case "
                        f"'{case.get('name')}': {problem}",
                        file=check.source_path,
                        field_path=where,
                        hint="Name a file: a file inside the folder (docs/index.md), or each "
                        "of its files with null to delete them.",
                    )
                )
    return problems


def _gate_consulted(*, config: ConfigDoc, mode: GuardMode) -> bool:
    """Whether the calibration gate reads the record for this guard: `eb run` with the gate
    on, and `eb validate` always (it reports what the gate would refuse)."""
    required = config.settings.harness.require_calibration
    if mode == "calibrate":
        return False
    return required or mode == "validate"


def _calibration_gate(
    *, config: ConfigDoc, plan: PlanDoc, harness: ResolvedHarness, mode: GuardMode
) -> tuple[list[ProblemModel], list[ProblemModel]]:
    """(problems, warnings) of [harness] require_calibration for the planned judges.

    On, every judge must pass it (refused by eb run, errors in eb validate). Off, eb validate
    warns about the same judges (no cases, no record, a stale or inconsistent one, too little
    agreement), so turning the gate on never comes as a surprise; eb run says nothing.
    """
    if not _gate_consulted(config=config, mode=mode):
        return [], []
    required = config.settings.harness.require_calibration
    from eval_banana.calibration.gate import calibration_problems

    found = calibration_problems(config=config, plan=plan, harness=harness)
    return (found, []) if required else ([], _grouped(found))


# Warnings named one by one before the rest are counted in one line: a suite of a thousand
# uncalibrated judges gets a screenful, not a thousand lines (with the gate on, every
# refusal is named).
SHOWN_GATE_WARNINGS = 20


def _grouped(warnings: list[ProblemModel]) -> list[ProblemModel]:
    if len(warnings) <= SHOWN_GATE_WARNINGS:
        return warnings
    rest = len(warnings) - SHOWN_GATE_WARNINGS
    summary = ProblemModel(
        message=f"...and {rest:,} more judge checks the calibration gate would refuse",
        field_path="calibration",
        hint="`eb validate --require-calibration` names every one of them.",
    )
    return [*warnings[:SHOWN_GATE_WARNINGS], summary]


def _gate_source(*, config: ConfigDoc) -> dict[str, str | float | None]:
    """The record the gate read and its digest then, so `eb status` sees a recalibration."""
    from eval_banana.core.files import sha256_file
    from eval_banana.settings.folders import record_path

    path = record_path(config=config)
    digest = sha256_file(path=path) if path.is_file() else None
    return {
        "calibration_file": str(path),
        "calibration_file_sha256": digest,
        "min_agreement": config.settings.harness.min_agreement,
    }


def guard(
    *,
    config: ConfigDoc,
    plan: PlanDoc,
    inputs: dict[str, str],
    mode: GuardMode = "run",
    require_agent: bool = True,
) -> GuardDoc:
    """Decide whether the selected checks can run; never raises (see raise_if_refused).

    An agent CLI that is not on PATH (or is another program) stops `eb run`, so `eb validate`
    refuses it too; `require_agent=False` makes it a warning there, for machines that validate
    but never run judges (the pre-commit hook).
    """
    judges = _judges(plan)
    problems: list[ProblemModel] = []
    warnings: list[ProblemModel] = []
    harness: ResolvedHarness | None = None
    gate_source: dict[str, str | float | None] = {}
    agent = config.settings.harness.agent
    if judges and not agent:
        offender = min(check.source_path for check in plan.checks if check.type == "harness_judge")
        message = _NO_HARNESS.format(path=offender, fix=_no_harness_fix(config=config))
        problems.append(_problem(message, field_path="harness.agent"))
    elif agent and (judges or mode == "validate"):
        harness, problems = _resolve(config=config)
        if harness is not None:
            injection = _injection_problems(plan=plan, harness=harness)
            # eb validate refuses what eb run would turn into N identical errors;
            # eb run keeps them as per-check results, listed here up front. eb calibrate
            # refuses them too: samples that never reach the agent measure nothing, and would
            # replace the judge's record with errors.
            (warnings if mode == "run" else problems).extend(injection)
            strict = require_agent or mode != "validate"
            missing_text = missing_executable_message(
                harness=harness, project_root=Path(config.project_root)
            )
            if missing_text and judges:
                missing = _problem(
                    missing_text,
                    hint=missing_executable_hint(harness=harness),
                    field_path="harness.agent",
                )
                (problems if strict else warnings).append(missing)
            wrong_text = None if missing_text else wrong_program_message(harness=harness)
            if wrong_text and (judges or mode == "validate"):
                wrong = _problem(wrong_text, hint=WRONG_GROK_HINT, field_path="harness.agent")
                (problems if strict and judges else warnings).append(wrong)
            if judges:
                gate_problems, gate_warnings = _calibration_gate(
                    config=config, plan=plan, harness=harness, mode=mode
                )
                problems.extend(gate_problems)
                warnings.extend(gate_warnings)
                if _gate_consulted(config=config, mode=mode):
                    gate_source = _gate_source(config=config)
    if judges and mode != "run":
        # A case that cannot be laid over the project is the definition's fault, not the
        # judge's: refused before anything runs, never recorded as a disagreement.
        problems.extend(_case_file_problems(config=config, plan=plan))
    return GuardDoc.model_validate(
        {
            **envelope(stage="guard", run_id=config.run_id, inputs=inputs),
            "ok": not problems,
            "judge_checks": judges,
            "harness": harness,
            "problems": problems,
            "warnings": warnings,
            **gate_source,
        }
    )


def raise_if_refused(doc: GuardDoc) -> None:
    if doc.ok:
        return
    if not doc.problems:  # only a damaged guard.json says no without a reason
        raise GuardError("The guard refused the run without naming a problem")
    first = doc.problems[0]
    # Every refusal is named (each judge the calibration gate refused, with its reason).
    rest = tuple(
        Problem(message=p.message, file=p.file, field_path=p.field_path, hint=p.hint)
        for p in doc.problems[1:]
    )
    raise GuardError(
        first.message, file=first.file, field_path=first.field_path, hint=first.hint, problems=rest
    )


def raise_if_gate_refuses_repeats(
    *, config: ConfigDoc, plan: PlanDoc, guarded: GuardDoc, gated_repeats: int
) -> None:
    """Apply the calibration gate again when a rerun of execute (`eb stage execute --repeats
    N`) decides the judges from other samples than the guard gated them for: the gate's
    verdict depends on the run's repeats (whole verdicts of N, agreement by verdicts of N), so
    one the guard passed under `gated_repeats` says nothing of N. The guard's harness and
    record stand; only a guard that consulted the gate (it was on) is applied again."""
    if guarded.calibration_file is None or guarded.harness is None:
        return
    if config.settings.core.repeats == gated_repeats:
        return
    found = gate_refusals(config=config, plan=plan, guarded=guarded)
    raise_if_refused(guarded.model_copy(update={"ok": not found, "problems": found}))


def gate_refusals(*, config: ConfigDoc, plan: PlanDoc, guarded: GuardDoc) -> list[ProblemModel]:
    """The calibration gate's refusals of the planned judges under the harness and the
    min_agreement `guarded` records (a guard rerun's --min-agreement is the guard's, not
    config.json's); none when it records no harness."""
    if guarded.harness is None:
        return []
    from eval_banana.calibration.gate import calibration_problems

    if guarded.min_agreement is not None:
        harness_settings = config.settings.harness.model_copy(
            update={"min_agreement": guarded.min_agreement}
        )
        settings = config.settings.model_copy(update={"harness": harness_settings})
        config = config.model_copy(update={"settings": settings})
    return calibration_problems(config=config, plan=plan, harness=guarded.harness)


def write_guard_stage(*, run_dir: Path, doc: GuardDoc) -> str:
    return write_stage_model(run_dir=run_dir, stage="guard", model=doc)
