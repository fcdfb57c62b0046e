"""YAML syntax errors in our words: where, what, and the usual cause in a hand-written file.

PyYAML's own text names the parsed string `"<unicode string>"`, not the file, and its problem
phrases ("found unhashable key") rarely say what to change. Check files and YAML datasets are
both told this way.
"""

from __future__ import annotations

import json
import re

import yaml

# What usually causes each of PyYAML's syntax problems in a hand-written file.
_SYNTAX_HINTS: tuple[tuple[str, str], ...] = (
    (
        "mapping values are not allowed",
        "a line is indented more than the key above it, or a value that holds ': ' needs "
        'quotes (description: "Checks: all of them")',
    ),
    (
        "cannot start any token",
        "YAML indents with spaces, never tabs; a value that starts with @, ` or % needs quotes",
    ),
    (
        "found unexpected end of stream",
        "a quote, [ or { opened above is never closed; close it or quote the whole value",
    ),
    (
        "did not find expected ',' or ']'",
        "a [ list is not closed, or a value that starts with [ needs quotes",
    ),
    (
        "did not find expected ',' or '}'",
        "a { mapping is not closed, or a value that starts with { needs quotes",
    ),
    (
        "did not find expected key",
        "keys of one mapping must line up at the same indentation",
    ),
    (
        "did not find expected '-' indicator",
        "items of one list must line up, each starting with '- '",
    ),
    ("tab character", "YAML indents with spaces, never tabs: replace the tab"),
    ("found undefined alias", "a value that starts with * needs quotes"),
)
_DEFAULT_SYNTAX_HINT = (
    "indent with spaces, line up the keys of one mapping, and quote values that hold ': ' or "
    "' #', or that start with [, {, *, &, !, %, @ or a quote"
)


def _at(mark: object) -> str:
    line, column = getattr(mark, "line", None), getattr(mark, "column", None)
    if line is None or column is None:
        return ""
    return f"line {line + 1}, column {column + 1}"


# A plain value that opens with `{{`: YAML reads the braces as a mapping inside a mapping.
# A comment after it (` # ...`) is left out of the quoted fix.
_UNQUOTED_PLACEHOLDER = re.compile(r"^(\s*(?:-\s+)?[\w.-]+:\s+|\s*-\s+)(\{\{.*?)(?:\s+#.*)?\s*$")
# The same value in a flow mapping (`- {path: total, op: equals, value: {{ case.x }}}`, the
# one-line form of an assertion): up to the `,` or `}` that ends it.
_FLOW_PLACEHOLDER = re.compile(r"([{,]\s*[\w.-]+:\s+)(\{\{[^{}]*\}\}[^,{}\[\]]*?)(\s*)(?=[,}\]]|$)")


def describe_syntax_error(*, exc: yaml.YAMLError, source: str | None = None) -> tuple[str, str]:
    """(what is wrong, with where, and a hint) for a YAML syntax error, in our words: PyYAML's
    own text names the parsed string `"<unicode string>"`, not the file. `source`: the file's
    text, to word the fix for the line the error is on."""
    problem = str(getattr(exc, "problem", None) or "the file is not valid YAML")
    where = _at(getattr(exc, "problem_mark", None))
    text = f"{where}: {problem}" if where else problem
    context = getattr(exc, "context", None)
    if context:
        opened = _at(getattr(exc, "context_mark", None))
        text += f" ({context}{' at ' + opened if opened else ''})"
    hint = _placeholder_hint(exc=exc, source=source) or next(
        (h for key, h in _SYNTAX_HINTS if key in problem), _DEFAULT_SYNTAX_HINT
    )
    return text, hint


def _placeholder_hint(*, exc: yaml.YAMLError, source: str | None) -> str | None:
    """The fix for a value written as `key: {{ case.x }}` on the error's line or the line that
    opened its context: quote it. PyYAML's own words ("found unhashable key", "did not find
    expected key") point nowhere near that."""
    if source is None:
        return None
    lines = source.splitlines()
    for mark in (getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)):
        index = getattr(mark, "line", None)
        if index is None or not 0 <= index < len(lines):
            continue
        written = _block_quoted(line=lines[index]) or _flow_quoted(line=lines[index])
        if written is None:
            continue
        return (
            f"a value that starts with {{{{ must be quoted, or YAML reads the braces as a "
            f"mapping: write {written}"
        )
    return None


def _block_quoted(*, line: str) -> str | None:
    """`key: value` of `line` with its placeholder value quoted, or None when it has none."""
    found = _UNQUOTED_PLACEHOLDER.match(line)
    if found is None:
        return None
    quoted = json.dumps(found.group(2), ensure_ascii=False, allow_nan=False)
    return f"{found.group(1).strip()} {quoted}"


def _flow_quoted(*, line: str) -> str | None:
    """`line` as it should read with every placeholder value of its flow mappings quoted, or
    None when it has none."""
    if "{{" not in line:
        return None
    quoted, count = _FLOW_PLACEHOLDER.subn(
        lambda found: (
            found.group(1)
            + json.dumps(found.group(2), ensure_ascii=False, allow_nan=False)
            + found.group(3)
        ),
        line,
    )
    return quoted.strip() if count else None
