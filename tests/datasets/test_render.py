"""`{{ case.<field> }}` and nothing else."""

from __future__ import annotations

import pytest

from eval_banana.datasets.familytext import fenced
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


_OTHERWISE = " (no filters, loops or code; write {{{{ for a literal {{)"


@pytest.mark.parametrize(
    ("text", "told"),
    [
        # promptfoo's Nunjucks and Jinja write the field's name alone, in any letter case, with
        # brackets or a filter: the placeholder meant is named.
        (
            "Hi {{ name }}!",
            "'{{ name }}' is no {{ case.<field> }} placeholder: write {{ case.name }}",
        ),
        (
            "{{ CASE.name }}",
            "'{{ CASE.name }}' is no {{ case.<field> }} placeholder: write {{ case.name }}",
        ),
        (
            "{{ case['name'] }}",
            "\"{{ case['name'] }}\" is no {{ case.<field> }} placeholder: write {{ case.name }}",
        ),
        (
            "{{ case.name | upper }}",
            "'{{ case.name | upper }}' is no {{ case.<field> }} "
            "placeholder: write {{ case.name }} without the filter",
        ),
        (
            "{{ case }}",
            "'{{ case }}' is no {{ case.<field> }} placeholder: a placeholder names "
            "one field of the case, {{ case.<field> }}",
        ),
        (
            "x {{ case.name }\nnext",
            "'{{ case.name }' is no {{ case.<field> }} placeholder: write {{ case.name }}",
        ),
        (
            "{{- case.name -}}",
            "'{{- case.name -}}' is no {{ case.<field> }} placeholder: write {{ case.name }}",
        ),
        ("{{-name}}", "'{{-name}}' is no {{ case.<field> }} placeholder: write {{ case.name }}"),
        # Nothing a case field is named: no guess.
        ("{{ 5 + 3 }}", "'{{ 5 + 3 }}' is no {{ case.<field> }} placeholder"),
        ("{{ question }}", "'{{ question }}' is no {{ case.<field> }} placeholder"),
        ("{{", "'{{' is no {{ case.<field> }} placeholder"),
    ],
)
def test_a_stray_template_says_what_was_written_and_the_placeholder_meant(
    text: str, told: str
) -> None:
    # It said "'{{' starts no {{ case.<field> }} placeholder" whatever was written.
    with pytest.raises(RenderProblem) as raised:
        render_text(text=text, case=CASE)
    assert raised.value.kind == "token" and raised.value.field is None
    assert raised.value.message == told + _OTHERWISE


def test_a_whole_placeholder_value_keeps_its_json_type() -> None:
    assert render_value(value="{{ case.n }}", case=CASE) == 3
    assert render_value(value=["{{ case.tags }}", "is {{ case.name }}"], case=CASE) == [
        ["x"],
        "is Ada",
    ]


def test_the_case_block_fence_outgrows_backticks_in_the_row() -> None:
    block = fenced(case_id="a", row={"text": "```code```"})
    assert block.startswith("Case a:\n````json\n") and block.endswith("\n````")


def test_a_judge_case_s_block_is_the_fenced_row_with_or_without_backticks() -> None:
    """The family's kept encoder writes each case's block as `fenced` does."""
    from eval_banana.datasets.familytext import FamilyRenderer

    definition = {"id": "f", "type": "harness_judge", "description": "d", "instructions": "Judge."}
    renderer = FamilyRenderer(definition=definition, sample={})
    rows = [{"id": "a", "text": "é"}, {"text": "`x` and ```code```"}, {"n": [1.5, None, True]}]
    for row in rows:
        rendered = renderer.render(case_id="c", row=row)
        assert rendered["instructions"] == "Judge.\n\n" + fenced(case_id="c", row=row)
    block = fenced(case_id="a", row={"text": "é"})
    assert block == 'Case a:\n```json\n{"text": "é"}\n```'


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


_LOGIC = (
    " is template logic, which eb does not run: give each row the text it needs in a field and "
    "write {{ case.<field> }} (a field's text is never read as a template)"
)


@pytest.mark.parametrize(
    "tag",
    [
        "{% if case.name %}",
        "{%- for tag in case['tags'] -%}",
        "{% set who = case.name %}",
        "{%if case .name%}",
    ],
)
def test_a_tag_over_the_case_is_refused_where_it_would_reach_the_judge_as_written(
    tag: str,
) -> None:
    # Nunjucks and Jinja users write conditions and loops; they went to the judge as text.
    from eval_banana.datasets.render import compile_text

    for text in (f"Hi {tag}x{{% endif %}}", f"{{{{ case.name }}}} {tag}"):
        with pytest.raises(RenderProblem) as raised:
            render_text(text=text, case=CASE)
        assert raised.value.kind == "logic" and raised.value.field is None
        assert raised.value.message == repr(tag) + _LOGIC
        assert compile_text(text) is None  # each case gets render_text's error


@pytest.mark.parametrize(
    "text",
    ["Keep {% raw %} blocks.", "{% if user %}{{ case.name }}{% endif %}", "100 {%", "50%} {%x%}"],
)
def test_a_tag_that_reads_no_case_stays_text(text: str) -> None:
    # A prompt may talk about templates itself; only a tag over the case is refused.
    from eval_banana.datasets.render import compile_text

    expected = text.replace("{{ case.name }}", "Ada")
    assert render_text(text=text, case=CASE) == expected
    prepared = compile_text(text)
    assert prepared is not None and prepared.render(CASE) == expected
