"""Where a check file writes a plain scalar YAML 1.1 reads as no text in an assertion's value
(`NO`, `01234`, `~`): read from the file's own text, so a reason can tell to quote exactly those
(eval_banana.checks.plainwords)."""

from __future__ import annotations

from typing import Any

from eval_banana.checks.definition import parse_yaml_mapping
from eval_banana.checks.plainwords import plain_words

HEAD = "schema_version: 1\nid: a\ntype: assertions\ndescription: d\nartifact: out/a.json\n"


def words_of(text: str) -> list[tuple[int, str, str]] | None:
    data = text.encode()
    definition: dict[str, Any] = parse_yaml_mapping(data=data, path="a.yaml")
    words = plain_words(data=data, definition=definition)
    return None if words is None else [(word.assertion, word.at, word.word) for word in words]


def test_each_plain_word_is_recorded_at_its_place_and_nothing_else() -> None:
    text = HEAD + (
        "assert:\n"
        "  - {path: a, op: equals, value: NO}\n"
        "  - {path: b, op: equals, value: false}\n"  # a boolean written as meant
        '  - {path: c, op: equals, value: "no"}\n'  # quoted: text already
        "  - {path: d, op: equals, value: {x.y: [1, Off], light: on, note: no way}}\n"
        "  - {path: e, op: contains, value: yes}\n"
        "  - {path: f, op: exists}\n"
    )
    assert words_of(text) == [
        (0, "", "NO"),
        (3, '["x.y"][1]', "Off"),
        (3, "light", "on"),
        (4, "", "yes"),
    ]


def test_a_file_without_such_a_word_or_another_check_records_none() -> None:
    assert words_of(HEAD + "assert:\n  - {path: a, op: equals, value: true}\n") == []
    # `no` in a description, but no boolean among the values: the file is not parsed again.
    text = HEAD.replace("description: d", "description: no") + (
        "assert:\n  - {path: a, op: equals, value: 1}\n"
    )
    assert words_of(text) == []
    deterministic = "schema_version: 1\nid: a\ntype: deterministic\ndescription: no\nscript: pass\n"
    assert plain_words(data=deterministic.encode(), definition={"type": "deterministic"}) is None


def test_an_aliased_word_is_recorded_where_each_use_puts_it() -> None:
    text = HEAD + (
        "flags: &flag off\n"
        "assert:\n"
        "  - {path: a, op: equals, value: *flag}\n"
        "  - {path: b, op: equals, value: [*flag, *flag]}\n"
    )
    assert words_of(text) == [(0, "", "off"), (1, "[0]", "off"), (1, "[1]", "off")]


def test_a_number_or_null_written_otherwise_than_json_is_recorded_as_written() -> None:
    text = HEAD + (
        "assert:\n"
        "  - {path: a, op: equals, value: 01234}\n"  # octal: 668
        "  - {path: b, op: equals, value: 668}\n"  # as JSON writes it: meant so
        "  - {path: c, op: equals, value: [0x1F, 1_000, 1:30, +1, -0, 1.50, 1.0e+3, 1.5, -3]}\n"
        "  - {path: d, op: equals, value: {t: ~, n: null, u: Null, e: , q: '~'}}\n"
        "  - path: e\n"
        "    op: equals\n"
        "    value:\n"  # left empty: null
        "  - {path: f, op: lengthAtLeast, value: 010}\n"  # told by no reason: not recorded
    )
    assert words_of(text) == [
        (0, "", "01234"),
        (2, "[0]", "0x1F"),
        (2, "[1]", "1_000"),
        (2, "[2]", "1:30"),
        (2, "[3]", "+1"),
        (2, "[4]", "-0"),
        (2, "[5]", "1.50"),
        (2, "[6]", "1.0e+3"),
        (3, "t", "~"),
        (3, "u", "Null"),
        (3, "e", ""),
        (4, "", ""),
    ]


def test_numbers_written_as_json_writes_them_record_nothing() -> None:
    # A date or a version elsewhere in the file makes it read again, and still records nothing.
    text = HEAD.replace("description: d", "description: since 2026-12-07, v1.2.3") + (
        "assert:\n"
        "  - {path: a, op: equals, value: [0, 12, -3, 1.5, 2.0, 12345678901234567890]}\n"
        "  - {path: b, op: lengthAtLeast, value: 2}\n"
        "  - {path: c, op: exists}\n"
    )
    assert words_of(text) == []
    assert words_of(HEAD + "assert:\n  - {path: a, op: equals, value: 2}\n") == []
