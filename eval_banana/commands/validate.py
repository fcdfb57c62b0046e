"""`eb validate`: green only when `eb run` could start."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from eval_banana.commands import common
from eval_banana.core.realpaths import real_path
from eval_banana.core.words import warning_text

if TYPE_CHECKING:
    from pathlib import Path

    from eval_banana.core.errors import DefinitionError, EvalBananaError, Problem
    from eval_banana.models.stages import ConfigDoc, FieldProblem, PlanDoc, ProblemModel


def configure(*, parser: argparse.ArgumentParser) -> None:
    common.add_common(parser)
    common.add_setting_flags(parser, command="validate")
    parser.add_argument(
        "--allow-empty", action="store_true", help="Succeed even when no check is found."
    )
    parser.add_argument(
        "--allow-missing-agent",
        action="store_true",
        help="Only warn when the judges' agent CLI is not on PATH (or is another program), for "
        "a machine that validates but never runs judges, such as a pre-commit hook; `eb run` "
        "stops for it.",
    )
    parser.add_argument(
        "--run-dir", help="Also write the config, discover, validate and guard stage files here."
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="Print one JSON object: ok, checks, errors and warnings (each with file, "
        "field_path, line, column, message and hint).",
    )
    parser.add_argument(
        "--annotations",
        choices=["github"],
        help="Print one GitHub Actions ::error annotation per problem and ::warning per "
        "warning (the first ten of each), on its file and line (on stdout; on stderr with "
        "--json).",
    )
    parser.add_argument("files", nargs="*", help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from eval_banana.checks.problemerrors import problems_error, raise_problems
    from eval_banana.models.stages import ProblemModel
    from eval_banana.pipeline.request import load_config
    from eval_banana.settings.rundir import new_run_id
    from eval_banana.stages import discover as discover_stage
    from eval_banana.stages import guard as guard_stage
    from eval_banana.stages import validate as validate_stage
    from eval_banana.stages.config import config_warning_lines, write_config_stage

    config = load_config(request=common.request(args), run_id=new_run_id())
    run_dir = real_path(args.run_dir) if args.run_dir else None
    digests: dict[str, str] = {}
    if run_dir is not None:
        _make_stages_folder(run_dir=run_dir, given=args.run_dir)
        digests["config"] = write_config_stage(run_dir=run_dir, doc=config)
    contents: dict[str, bytes] = {}
    discovered = discover_stage.discover(config=config, inputs=dict(digests), contents=contents)
    if run_dir is not None:
        digests["discover"] = discover_stage.write_discover_stage(run_dir=run_dir, doc=discovered)
    outcome = validate_stage.validate(
        config=config, discovered=discovered, inputs=dict(digests), contents=contents
    )
    if run_dir is not None:
        digests["validate"] = validate_stage.write_validate_stage(run_dir=run_dir, outcome=outcome)
    plan = outcome.plan
    problems = list(plan.errors)
    if args.allow_empty and plan.no_checks:
        problems = []
    # The config file's warnings as the console says them (message and fix in one line); the
    # annotations take them as they are, on their file and line.
    shown_config = [ProblemModel(message=line) for line in config_warning_lines(config=config)]
    guarded_warnings: list[ProblemModel] = []
    rest = [
        *(
            ProblemModel(message=message)
            for message in common.place_warnings(config=config, discovered=discovered)
        ),
        *plan.warnings,
    ]
    # A plan whose only errors are missing scripts still has its checks: guard them too, so one
    # `eb validate` reports every problem at once.
    if plan.checks:
        guarded = guard_stage.guard(
            config=config,
            plan=plan,
            inputs={k: v for k, v in digests.items() if k in ("config", "validate")},
            mode="validate",
            require_agent=not args.allow_missing_agent,
        )
        if run_dir is not None:
            guard_stage.write_guard_stage(run_dir=run_dir, doc=guarded)
        problems.extend(guarded.problems)
        guarded_warnings = list(guarded.warnings)
        rest.extend(_unmatched_inputs(config=config, plan=plan))
    warnings = [*guarded_warnings, *shown_config, *rest]
    common.annotate_problems(
        args=args, problems=[*guarded_warnings, *config.warnings, *rest], kind="warning", warn=True
    )
    if args.json:
        error = problems_error(problems, no_checks=plan.no_checks) if problems else None
        if error is not None:  # without --json, the error raised below is annotated where caught
            common.annotate_problems(args=args, problems=problems, kind=error.kind)
        return _print_json(
            checks=len(plan.checks), problems=problems, warnings=warnings, error=error
        )
    # Each with its fix, as `eb run` and `eb list` say it; written here, without the console's
    # imports (some 10 ms), since a family without calibration cases warns on every validate.
    for warning in warnings:
        sys.stderr.write(warning_text(message=warning.message, hint=warning.hint))
    if problems:
        raise_problems(problems, no_checks=plan.no_checks)
    skipped = len(plan.skipped)
    if skipped:
        # Skipped checks were validated too; say how many of them will not run.
        total = len(plan.checks) + skipped
        print(f"Validated {total} checks successfully ({skipped} skipped).")
    else:
        print(f"Validated {len(plan.checks)} checks successfully.")
    return 0


def _make_stages_folder(*, run_dir: Path, given: str) -> None:
    """The folder `--run-dir` names, with its stages/ folder; a file, or a path that cannot
    hold one, is a usage error naming it (before any stage runs)."""
    from eval_banana.core.errors import UsageError
    from eval_banana.core.realpaths import path_trouble

    try:
        (run_dir / "stages").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"--run-dir {given}: cannot make {run_dir / 'stages'}: {path_trouble(exc)}",
            file=str(run_dir),
            hint="Give --run-dir a folder eb can write: a new one, or an earlier run's.",
        ) from None


def _unmatched_inputs(*, config: ConfigDoc, plan: PlanDoc) -> list[ProblemModel]:
    """The `inputs:` patterns that match no file now, as `eb run` warns of them: found here,
    before any verdict is keyed on nothing."""
    if not any(check.definition.get("inputs") for check in plan.checks):
        return []  # no pattern to match: the project's state is not read at all
    from eval_banana.checks.inputs import declared_reader, unmatched_inputs

    reader = declared_reader(config=config, checks=plan.checks)
    return unmatched_inputs(checks=plan.checks, reader=reader)


# --- --json ------------------------------------------------------------------------------------


def _entry(
    *, kind: str, located: Problem | ProblemModel | FieldProblem, file: str | None
) -> dict[str, Any]:
    """The `--json` error object (kind, message, file, field_path, hint) plus its position."""
    return {
        "kind": kind,
        "message": located.message,
        "file": file,
        "field_path": located.field_path,
        "hint": located.hint,
        "line": located.line,
        "column": located.column,
    }


def _entries(problem: ProblemModel, *, kind: str) -> list[dict[str, Any]]:
    # A check file with several field errors is one problem in the text output, and one entry
    # per field error here, each with its own line and fix.
    if problem.fields:
        return [_entry(kind=kind, located=field, file=problem.file) for field in problem.fields]
    return [_entry(kind=kind, located=problem, file=problem.file)]


def _document(
    *,
    checks: int,
    errors: list[dict[str, Any]],
    warnings: list[dict[str, Any]],
    error: EvalBananaError | None,
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "ok": error is None,
        "checks": checks,
        "errors": errors,
        "warnings": warnings,
        "exit_code": 0 if error is None else error.exit_code,
    }
    if error is not None:
        document["error"] = error.as_json()  # what `eb run --json` prints for the same failure
    return document


def _print_json(
    *,
    checks: int,
    problems: list[ProblemModel],
    warnings: list[ProblemModel],
    error: DefinitionError | None,
) -> int:
    """The one JSON object of `eb validate --json`; `error`: the one `problems` stand for."""
    kind = error.kind if error is not None else "definition_error"
    document = _document(
        checks=0 if problems else checks,
        errors=[entry for problem in problems for entry in _entries(problem, kind=kind)],
        warnings=[entry for warning in warnings for entry in _entries(warning, kind="warning")],
        error=error,
    )
    print(json.dumps(document, ensure_ascii=False, allow_nan=False))
    return int(document["exit_code"])


def json_error(exc: EvalBananaError) -> dict[str, Any]:
    """`eb validate --json` for a failure raised before any check was validated (bad config)."""
    from eval_banana.core.errors import problem_of

    errors = [
        _entry(kind=exc.kind, located=problem, file=problem.file)
        for problem in (problem_of(exc), *exc.problems)
    ]
    return _document(checks=0, errors=errors, warnings=[], error=exc)
