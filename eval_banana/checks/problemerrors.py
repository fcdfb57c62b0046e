"""Problems as the one typed error that stands for them: the first, carrying all the others; and
whether such an error says only that the selection holds no check."""

from __future__ import annotations

from eval_banana.core.errors import DefinitionError, NoChecksError, Problem, problem_of
from eval_banana.models.stages import ProblemModel


def raise_problems(problems: list[ProblemModel], *, no_checks: bool) -> None:
    """Raise the first problem as a typed error, carrying all the others."""
    raise problems_error(problems, no_checks=no_checks)


def problems_error(problems: list[ProblemModel], *, no_checks: bool) -> DefinitionError:
    """The typed error that stands for `problems`: the first, carrying all the others.
    `no_checks`: they say only that nothing was found (the plan's own flag)."""
    error_type = NoChecksError if no_checks else DefinitionError
    first = problem_of(problems[0])
    return error_type(
        first.message,
        file=first.file,
        field_path=first.field_path,
        hint=first.hint,
        line=first.line,
        column=first.column,
        problems=tuple(_counted(problem) for problem in problems[1:]),
        field_errors=_field_errors(problems[0]),
    )


def _field_errors(problem: ProblemModel) -> tuple[Problem, ...]:
    """A check file's field errors, each located in the file."""
    return tuple(
        Problem(
            message=field.message,
            file=problem.file,
            field_path=field.field_path,
            hint=field.hint,
            line=field.line,
            column=field.column,
        )
        for field in problem.fields
    )


def _counted(problem: ProblemModel) -> Problem:
    """`problem` with the number of errors its message tells: each of a check file's field
    errors, as `eb validate --json` lists them one by one."""
    return problem_of(problem)._replace(errors=len(problem.fields) or 1)


def selected_nothing(error: DefinitionError) -> bool:
    """Whether a validation failure only says the selection holds no check (an empty project,
    a `-k`/`--tag` that matches nothing, a `--check-id` that names no check): such a run can
    start nothing, so it leaves no run folder behind."""
    if isinstance(error, NoChecksError):
        return True
    return error.field_path == "check_id" and all(
        problem.field_path == "check_id" for problem in error.problems
    )
