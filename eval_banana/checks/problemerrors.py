"""Problems as the one typed error that stands for them: the first, carrying all the others."""

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
