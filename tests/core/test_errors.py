"""How an error with several problems reads on the console."""

from __future__ import annotations

from eval_banana.core.errors import DefinitionError, Problem


def test_one_problem_keeps_its_hint_on_a_line_of_its_own() -> None:
    error = DefinitionError("a.yaml: bad", hint="fix a")
    assert error.render() == "a.yaml: bad\nhint: fix a"
    assert DefinitionError("a.yaml: bad").render() == "a.yaml: bad"


def test_each_of_several_problems_has_its_hint_under_it() -> None:
    error = DefinitionError(
        "a.yaml: bad",
        hint="fix a",
        problems=(Problem(message="b.yaml: worse", hint="fix b"), Problem(message="c.yaml: odd")),
    )
    # The first problem's hint is not left at the end, where it would read as the last one's.
    assert error.render().splitlines() == [
        "a.yaml: bad",
        "  hint: fix a",
        "b.yaml: worse",
        "  hint: fix b",
        "c.yaml: odd",
    ]
