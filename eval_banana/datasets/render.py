"""`{{ case.<field> }}` placeholders, and nothing else: no loops, filters or code.

`{{{{` writes a literal `{{`. Any other `{{` is refused, so a typo never reaches a judge as
text; so is a Jinja/Nunjucks tag over the case (`{% if case.urgent %}`), which would otherwise
reach it as written. Both are the family's mistake, told once at its field, not once per
row. A missing field, or a value that is not text where text goes, is a definition error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from eval_banana.core.words import visible
from eval_banana.projectstate.patterns import escaped, pattern_problem

# What a placeholder's field may be: no space and no brace (`unplaceable` tells the rest).
_FIELD = r"[^\s{}]+"
# `{{{{`, a placeholder (group 1), a tag of another template language (group 2: `{% ... %}`,
# its inside read once, possessively, so no text makes the scan quadratic), or any other `{{`.
_TOKEN = re.compile(r"\{\{\{\{|\{\{\s*case\.(" + _FIELD + r")\s*\}\}|(\{%[^%]*+%\})|\{\{")
# A tag that reads the case (`{% if case.x %}`, `{%- for row in case["rows"] -%}`) is refused;
# one that names no case stays text: a prompt may well talk about Jinja itself (`{% raw %}`).
_READS_CASE = re.compile(r"\bcase\s*[.\[]")
_WHOLE = re.compile(r"\{\{\s*case\.(" + _FIELD + r")\s*\}\}")


class RenderProblem(Exception):
    """Why a text could not be rendered: `field` names the case field (or None), `kind` is
    `missing` (no such field), `not_text` (a value where text goes), `token` (a stray `{{`),
    `logic` (a tag over the case, `{% if case.x %}`), `input_pattern` (a value that makes no
    `inputs:` pattern) or `unfilled` (a placeholder in a field no row fills), so that the rows
    sharing one problem can be told as one. `place` is the check file's field whose text was
    being rendered (`description`, `assert.1.value`), set by the caller that knows it."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None,
        kind: str,
        value_kind: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.kind = kind
        # `not_text`: what the value is instead (`null`, `a list`), to word a summary of many
        # rows true of each; `hint`: the fix, for a problem that brings its own.
        self.value_kind = value_kind
        self.hint = hint
        self.place: str | None = None

    @property
    def told(self) -> str:
        """The message, after the check file's field that held the placeholder when known."""
        return f"{self.place}: {self.message}" if self.place else self.message


_KINDS: dict[type, str] = {
    dict: "a mapping",
    list: "a list",
    str: "text",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def json_kind(value: object) -> str:
    """What a dataset value is, in the words of JSON and YAML (not Python's type names)."""
    return _KINDS.get(type(value), type(value).__name__)


def has_placeholder(text: str) -> bool:
    """Whether `text` holds a `{{ case.<field> }}` placeholder."""
    return any(match.group(1) for match in _TOKEN.finditer(text))


def first_placeholder(text: str) -> str | None:
    """The first `{{ case.<field> }}` placeholder in `text` as written, else None."""
    for match in _TOKEN.finditer(text):
        if match.group(1):
            return match.group(0)
    return None


def placeholder_fields(text: str) -> list[str]:
    """The fields the `{{ case.<field> }}` placeholders of `text` name, in order."""
    return [match.group(1) for match in _TOKEN.finditer(text) if match.group(1)]


def strings_in(value: Any) -> Iterator[str]:
    """The strings of a text field or an expected value (lists and mappings walked, a
    mapping's keys as well as its values: a key is filled in too)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            for key, member in reversed(list(item.items())):
                stack.extend((member, key))


def _lookup(*, case: dict[str, Any], field: str) -> Any:
    if field not in case:
        raise RenderProblem(f"the case has no field '{field}'", field=field, kind="missing")
    return case[field]


def render_text(*, text: str, case: dict[str, Any], whole_numbers: bool = False) -> str:
    """`text` with each placeholder replaced by its case field, which must be text (or, with
    `whole_numbers`, a whole number: an assertion path's index, `items[{{ case.i }}]`)."""
    if "{{" not in text and "{%" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{{{":
            return "{{"
        tag = match.group(2)
        if tag is not None:
            if not _reads_case(tag):
                return tag
            raise _logic(tag=tag)
        field = match.group(1)
        if field is None:
            raise _stray(text=text, at=match.start(), case=case)
        value = _lookup(case=case, field=field)
        if whole_numbers and type(value) is int:
            return str(value)
        if not isinstance(value, str):
            raise RenderProblem(
                not_text_message(field=field, kinds=[json_kind(value)]),
                field=field,
                kind="not_text",
                value_kind=json_kind(value),
            )
        return value

    return _TOKEN.sub(replace, text)


def not_text_message(*, field: str, kinds: list[str]) -> str:
    """That a field's values are not text where text goes, named by what they are (one kind,
    or those of many rows: `null, a list or a boolean`)."""
    named = kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + f" or {kinds[-1]}"
    return f"field '{field}' is {named}, not text, where text goes"


def render_pattern(*, text: str, case: dict[str, Any]) -> str:
    """An `inputs:` pattern with each placeholder filled by its case field as a file's path
    (`prompts/{{ case.file }}`). A row's value is data, never glob syntax: each `*`, `?` and
    `[` in it is matched as written (`rows[1].txt` names that file, not `rows1.txt`). A filled
    pattern that is no pattern (`..` in it, a backslash, nothing left) or that a value turns
    into an exclusion (`!` first) is the row's problem."""
    render_text(text=text, case=case)  # a missing field or a value that is not text
    fields: list[str] = []

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{{{":
            return "{{"
        field = match.group(1)
        if field is None:  # a tag that reads no case: text
            return token
        fields.append(field)
        return escaped(case[field])

    filled = _TOKEN.sub(replace, text)
    if not fields:
        return filled
    culprit = next((field for field in fields if _no_path(case[field])), fields[0])
    why: str | None = "would be an exclusion ('!' first), not the files the case reads"
    if not filled.startswith("!") or text.startswith("!"):
        why = pattern_problem(filled)
    if why is None:
        return filled
    raise RenderProblem(
        f"field '{culprit}' is {_quoted(case[culprit])}: filled in, the pattern "
        f"{_quoted(filled)} {why}",
        field=culprit,
        kind="input_pattern",
    )


def _no_path(value: str) -> bool:
    """Whether a row's value could not name a file below the project root on its own."""
    return (
        not value.strip()
        or "\\" in value
        or "\x00" in value
        or value.startswith(("/", "!"))
        or ".." in value.split("/")
    )


# What a path reads as syntax in a key: `.` separates keys, `[` and `]` enclose an index.
_PATH_SYNTAX = re.compile(r"[.\[\]]")


def render_path(*, text: str, case: dict[str, Any]) -> str:
    """An assertion's `path` with each placeholder filled by its case field as one key
    (`prices.{{ case.sku }}`) or, right after a `[`, one index (`items[{{ case.i }}]`).

    A row's value is data, never path syntax (as a field's text is never a template): a key
    holding `.`, `[` or `]`, or an index that is not a whole number, would otherwise address
    another place in the artifact (`v1.2` the key `2` under `v1`), so it is the row's problem.
    """
    rendered = render_text(text=text, case=case, whole_numbers=True)
    if "{{" not in text:
        return rendered
    for match in _TOKEN.finditer(text):
        field = match.group(1)
        if field is not None:
            in_index = text.endswith("[", 0, match.start())
            _refuse_path_syntax(field=field, value=case[field], in_index=in_index)
    return rendered


def _refuse_path_syntax(*, field: str, value: object, in_index: bool) -> None:
    """Raise the problem of a row's value that a path would read as syntax."""
    if in_index:
        if type(value) is int or (
            isinstance(value, str) and value and all("0" <= char <= "9" for char in value)
        ):
            return
        raise RenderProblem(
            f"field '{field}' is {_quoted(value)}, not a whole number, where the path takes "
            "an index",
            field=field,
            kind="path_index",
        )
    if isinstance(value, str) and _PATH_SYNTAX.search(value):
        raise RenderProblem(
            f"field '{field}' is {_quoted(value)}, which a path cannot name as one key: "
            "'.' separates keys and '[' ']' enclose an index, so it would address another "
            "place in the artifact",
            field=field,
            kind="path_syntax",
        )


def _quoted(value: object) -> str:
    """A row's value in a message: text quoted (shortened), anything else by its kind."""
    if not isinstance(value, str):
        return json_kind(value)
    shown = value if len(value) <= _QUOTED else value[: _QUOTED - 1] + "…"
    return repr(visible(shown))


# How far a stray `{{` is quoted, up to its `}}`: a placeholder, not the text after it.
_QUOTED = 60
# What other template languages write inside `{{ }}` (promptfoo's Nunjucks `{{ question }}`,
# Jinja's filters): the name a case field would have, and what follows it.
_NAMED = re.compile(
    r"(?P<case>(?i:case)\s*(?:\.|\[\s*['\"]))?"  # `case.` or `case['`, in any letter case
    r"\s*(?P<field>[A-Za-z_][\w.-]*)\s*(?:['\"]\s*\])?"  # a field's name, and `']`
    r"\s*(?P<filter>\|.*)?"  # a filter
)


def _stray(*, text: str, at: int, case: dict[str, Any]) -> RenderProblem:
    """The problem of a `{{` that starts no placeholder: what was written, and the
    placeholder it most likely meant."""
    end = text.find("}}", at + 2, at + _QUOTED)
    if end >= 0:
        written = text[at : end + 2]
        inner = written[2:-2]
    else:  # not closed (`{{ case.name }`): quoted to the end of its line
        line_end = text.find("\n", at)
        written = text[at : min(at + _QUOTED, line_end if line_end >= 0 else len(text))].rstrip()
        inner = written[2:].rstrip("}")
    # Whitespace control (`{{- name -}}`, Jinja and Nunjucks) trims text, not the name.
    meant = _meant(inner=inner.strip().removeprefix("-").removesuffix("-").strip(), case=case)
    return RenderProblem(
        f"{visible(written)!r} is no {{{{ case.<field> }}}} placeholder"
        + (f": {meant}" if meant else "")
        + " (no filters, loops or code; write {{{{ for a literal {{)",
        field=None,
        kind="token",
    )


def unfixable_in(text: str, *, case: dict[str, Any]) -> RenderProblem | None:
    """The problem of the first token in `text` that no row can fix, or None: a tag over the
    case, or a `{{` that starts no placeholder (`case`: a row, for the placeholder meant)."""
    if "{{" not in text and "{%" not in text:
        return None
    for match in _TOKEN.finditer(text):
        tag = match.group(2)
        if tag is not None:
            if _reads_case(tag):
                return _logic(tag=tag)
        elif match.group(1) is None and match.group(0) != "{{{{":
            return _stray(text=text, at=match.start(), case=case)
    return None


def _reads_case(tag: str) -> bool:
    """Whether a `{% ... %}` tag reads the case (refused), rather than being text."""
    return _READS_CASE.search(tag) is not None


def _logic(*, tag: str) -> RenderProblem:
    """The problem of a loop or condition over the case: eb runs no template code, and left
    as text the tag would reach the judge (or the assertion) as written."""
    quoted = tag if len(tag) <= _QUOTED else tag[: _QUOTED - 1] + "…"
    return RenderProblem(
        f"{visible(quoted)!r} is template logic, which eb does not run: give each row the "
        "text it needs in a field and write {{ case.<field> }} (a field's text is never read "
        "as a template)",
        field=None,
        kind="logic",
    )


_PLACEABLE = re.compile(_FIELD)


def unplaceable(field: str) -> str | None:
    """For a field no placeholder can name (it holds a space or a brace: a CSV column
    `first name`), the fix: rename it in the dataset; None for a field a placeholder names."""
    if _PLACEABLE.fullmatch(field):
        return None
    name = re.sub(r"[\s{}]+", "_", field.strip()).strip("_") or "field"
    what = "a space" if re.search(r"\s", field) else "a brace"
    return (
        f"a placeholder cannot name the field {visible(field)!r}, which holds {what}: rename "
        f"it in the dataset, for example to {name}"
    )


def _meant(*, inner: str, case: dict[str, Any]) -> str | None:
    """`write {{ case.question }}` for what names a field the way another template language
    does (`question`, `CASE.question`, `case['question']`, `case.question | upper`)."""
    if inner.lower() == "case":
        return "a placeholder names one field of the case, {{ case.<field> }}"
    spaced = inner[5:].strip() if inner[:5].lower() == "case." else ""
    unnamed = unplaceable(spaced) if spaced in case else None
    if unnamed is not None:
        return unnamed  # `{{ case.first name }}` over a column `first name`
    named = _NAMED.fullmatch(inner)
    if named is None:
        return None
    field = named.group("field")
    if named.group("case") is None and field not in case:
        return None  # a bare name that is no field of this case: not a placeholder meant
    filtered = " without the filter" if named.group("filter") else ""
    return f"write {{{{ case.{field} }}}}{filtered}"


class Template:
    """A text prepared once for many cases: its literal runs and the fields between them.

    Rendering a case joins them instead of running the placeholder pattern again (a family of
    10,000 cases renders each text field 10,000 times). A case it cannot fill (a missing
    field, a value that is not text) goes through `render_text`, which says why.
    """

    __slots__ = ("fields", "literals", "text")

    def __init__(self, *, text: str, literals: list[str], fields: list[str]) -> None:
        self.text = text
        self.literals = literals  # one more than fields
        self.fields = fields

    def render(self, case: dict[str, Any]) -> str:
        literals = self.literals
        if not self.fields:
            return literals[0]
        out = [literals[0]]
        for position, field in enumerate(self.fields, start=1):
            value = case.get(field)
            if type(value) is not str:
                return render_text(text=self.text, case=case)  # raises the field's problem
            out.append(value)
            out.append(literals[position])
        return "".join(out)


def compile_text(text: str) -> Template | None:
    """`text` prepared for `Template.render`, or None when some `{{` starts no placeholder
    (every case then gets `render_text`'s error)."""
    literals = [""]
    fields: list[str] = []
    position = 0
    for match in _TOKEN.finditer(text):
        literals[-1] += text[position : match.start()]
        position = match.end()
        tag = match.group(2)
        if match.group(0) == "{{{{":
            literals[-1] += "{{"
        elif tag is not None and not _reads_case(tag):
            literals[-1] += tag
        elif match.group(1) is None:  # a stray `{{` or a tag over the case: render_text says
            return None
        else:
            fields.append(match.group(1))
            literals.append("")
    literals[-1] += text[position:]
    return Template(text=text, literals=literals, fields=fields)


def whole_placeholder_field(value: Any) -> str | None:
    """The field a value that is exactly one `{{ case.<field> }}` placeholder names, else None
    (render_value gives it the field's own JSON value)."""
    if not isinstance(value, str):
        return None
    whole = _WHOLE.fullmatch(value)
    return whole.group(1) if whole is not None else None


def render_value(*, value: Any, case: dict[str, Any]) -> Any:
    """An expected value: a string that is exactly one placeholder takes the field's JSON value
    (a number stays a number); other strings are rendered as text; lists and mappings deeply.

    Exactly, byte for byte: text around the placeholder (`"{{ case.name }}  "`, or the final
    newline a YAML block `|` adds) is part of the expected value, as in a single check."""
    if isinstance(value, str):
        whole = _WHOLE.fullmatch(value)
        if whole is not None:
            return _lookup(case=case, field=whole.group(1))
        return render_text(text=value, case=case)
    if isinstance(value, list):
        return [render_value(value=item, case=case) for item in value]
    if isinstance(value, dict):
        return _render_mapping(value=value, case=case)
    return value


def _render_mapping(*, value: dict[Any, Any], case: dict[str, Any]) -> dict[Any, Any]:
    """A mapping value with its keys filled as text (`{"{{ case.k }}": 1}` is `{"apple": 1}`),
    not left as written, and its values as values. Two keys that fill to one would keep only
    the last, silently: that is a problem."""
    rendered: dict[Any, Any] = {}
    for key, item in value.items():
        filled = render_text(text=key, case=case) if isinstance(key, str) else key
        if filled in rendered:
            raise RenderProblem(
                f"two keys of a mapping value are both {_quoted(filled)} once filled in, and "
                "a mapping holds each key once",
                field=None,
                kind="key_clash",
            )
        rendered[filled] = render_value(value=item, case=case)
    return rendered


# Operators whose value is a number: a whole placeholder there stands for one.
_NUMBER_OPERATORS = frozenset({"lengthAtLeast", "lengthAtMost"})


def placeholder_stand_ins(assertions: object) -> list[dict[str, Any]] | None:
    """A family's assertions as its own definition is checked, before any row fills them: a
    placeholder in a `path` stands as `0` (a key or an index: `items[{{ case.i }}]`), and a
    whole-placeholder `value` of an operator that takes a number as 0. Each case is checked
    again once its row filled them in. None when nothing stands in (the definition is checked
    as written)."""
    if not isinstance(assertions, list):
        return None
    changed = False
    checked: list[dict[str, Any]] = []
    for assertion in assertions:
        if not isinstance(assertion, dict):
            return None
        item = dict(assertion)
        path = item.get("path")
        if isinstance(path, str) and has_placeholder(path):
            item["path"] = _WHOLE.sub("0", path)
            changed = True
        value = item.get("value")
        if (
            item.get("op") in _NUMBER_OPERATORS
            and isinstance(value, str)
            and _WHOLE.fullmatch(value)
        ):
            item["value"] = 0
            changed = True
        checked.append(item)
    return checked if changed else None
