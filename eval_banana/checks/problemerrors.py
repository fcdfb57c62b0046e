"""Problems as the one typed error that stands for them: the first, carrying all the others; and
whether such an error says only that the selection holds no check."""

from __future__ import annotations

from eval_banana.core.errors import DefinitionError, NoChecksError, problem_of
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
        problems=tuple(problem_of(problem) for problem in problems[1:]),
    )


def selected_nothing(error: DefinitionError) -> bool:
    """Whether a validation failure only says the selection holds no check (an empty project,
    a `-k`/`--tag` that matches nothing, a `--check-id` that names no check): such a run can
    start nothing, so it leaves no run folder behind."""
    if isinstance(error, NoChecksError):
        return True
    return error.field_path == "check_id" and all(
        problem.field_path == "check_id" for problem in error.problems
    )
