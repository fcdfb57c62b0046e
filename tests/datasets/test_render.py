"""`{{ case.<field> }}` and nothing else."""

from __future__ import annotations

import pytest

from eval_banana.datasets.expand import fenced
from eval_banana.datasets.render import RenderProblem, render_text, render_value

CASE = {"name": "Ada", "n": 3, "tags": ["x"]}


def test_placeholders_are_filled_and_four_braces_are_two() -> None:
    assert render_text(text="hi {{ case.name }}, {{case.name}}!", case=CASE) == "hi Ada, Ada!"
    assert render_text(text="{{{{ case.name }}", case=CASE) == "{{ case.name }}"


@pytest.mark.parametrize(
    ("text", "field"),
    [("{{ case.missing }}", "missing"), ("{{ case.n }}", "n"), ("{{ name }}", None)],
)
def test_missing_fields_non_text_and_other_templates_are_refused(
    text: str, field: str | None
) -> None:
    with pytest.raises(RenderProblem) as raised:
        render_text(text=text, case=CASE)
    assert raised.value.field == field


def test_a_whole_placeholder_value_keeps_its_json_type() -> None:
    assert render_value(value="{{ case.n }}", case=CASE) == 3
    assert render_value(value=["{{ case.tags }}", "is {{ case.name }}"], case=CASE) == [
        ["x"],
        "is Ada",
    ]


def test_the_case_block_fence_outgrows_backticks_in_the_row() -> None:
    block = fenced(case_id="a", row={"text": "```code```"})
    assert block.startswith("Case a:\n````json\n") and block.endswith("\n````")


@pytest.mark.parametrize(
    "text",
    [
        "no placeholder",
        "answer to {{ case.question }}",
        "{{case.a}}{{ case.b }} and {{{{ literal }} then {{ case.a }}",
        "{{{{",
        "",
        "{{ case.a }}",
    ],
)
def test_a_prepared_text_renders_as_render_text_does(text: str) -> None:
    from eval_banana.datasets.render import compile_text

    prepared = compile_text(text)
    assert prepared is not None
    for case in ({"a": "x", "b": "y", "question": "q?"}, {"a": "", "b": "{{ case.a }}"}):
        if "question" in text and "question" not in case:
            continue
        assert prepared.render(case) == render_text(text=text, case=case)


def test_a_prepared_text_says_why_a_case_cannot_fill_it() -> None:
    from eval_banana.datasets.render import compile_text

    prepared = compile_text("about {{ case.n }}")
    assert prepared is not None
    with pytest.raises(RenderProblem) as missing:
        prepared.render({})
    assert missing.value.field == "n" and "no field 'n'" in missing.value.message
    with pytest.raises(RenderProblem) as number:
        prepared.render({"n": 3})
    assert "is a number, not text" in number.value.message
    # A stray `{{` cannot be prepared: each case then gets render_text's own error.
    assert compile_text("a {{ b") is None
