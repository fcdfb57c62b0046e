"""Reading one dataset file: what a file that is not a list of cases is told."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_banana.core.errors import DefinitionError
from eval_banana.datasets.reading import read_rows


@pytest.mark.parametrize(
    ("name", "text", "hint"),
    [
        (
            "export.json",
            '{"examples": [{"q": "a"}, {"q": "b"}], "version": 2}',
            "its key 'examples' holds a list of 2: make that list the whole file (or write one "
            "case per line in a .jsonl file)",
        ),
        ("rows.yaml", "cases:\n  - {q: a}\n", "its key 'cases' holds a list of 1: make"),
        ("one.json", '{"q": "a"}', "write the cases as a list of mappings"),
        # Cases keyed by their ids, as a lookup table is written.
        (
            "keyed.yaml",
            "a1: {q: a}\nb2: {q: b}\nc3: {q: c}\nd4: {q: d}\n",
            "its keys ('a1', 'b2', 'c3', ...) each hold a case: write the cases as a list, each "
            "key moved into its case as the field id",
        ),
        ("keyed.json", '{"a1": {"q": "a"}}', "its keys ('a1') each hold a case"),
    ],
)
def test_a_mapping_instead_of_a_list_says_where_the_rows_are(
    tmp_path: Path, name: str, text: str, hint: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DefinitionError) as raised:
        read_rows(path=path, file=name, problems=[])
    assert "list of cases, not a mapping" in raised.value.message
    assert raised.value.hint is not None and raised.value.hint.startswith(hint)


@pytest.mark.parametrize(
    ("text", "told"),
    [
        (
            '{"q": "a"}\n// a note\n',
            ("line 2 is a comment, which JSON does not have", "remove the line"),
        ),
        (
            '{"q": "a"},\n{"q": "b"}\n',
            ("line 1 ends with a comma after its object", "not separated by commas"),
        ),
        (
            '{"q": "a"}\n{"q": "b"\n',
            ("line 2 is not JSON: Expecting ',' delimiter at column 10", "one JSON object"),
        ),
        (
            '{"q": "a"}\n{"q": "an open string}\n',
            ("line 2 is not JSON: Unterminated string starting at column 7", "one JSON object"),
        ),
    ],
)
def test_a_jsonl_line_that_is_not_json_says_what_it_looks_like(
    tmp_path: Path, text: str, told: tuple[str, str]
) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(text)
    problems: list[DefinitionError] = []
    rows = read_rows(path=path, file="rows.jsonl", problems=problems)
    assert len(rows) == 1  # the other line is read, and its problem told with the rest
    (problem,) = problems
    assert problem.message == f"Dataset rows.jsonl {told[0]}"
    assert problem.hint is not None and told[1] in problem.hint


def test_pretty_printed_json_saved_as_jsonl_is_one_error_not_one_per_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('[\n  {\n    "q": "a"\n  },\n  {\n    "q": "b"\n  }\n]\n')
    problems: list[DefinitionError] = []
    assert read_rows(path=path, file="rows.jsonl", problems=problems) == []
    (problem,) = problems
    assert problem.message.startswith(
        "Dataset rows.jsonl holds JSON written over several lines (its first line is '[')"
    )
    assert problem.line == 1 and problem.hint is not None and "jq -c" in problem.hint


def test_a_jsonl_line_ends_at_a_newline_only(tmp_path: Path) -> None:
    """A JSON string may hold U+2028, U+2029 and U+0085 as they are (text pasted from a web
    page, or decoded from Windows-1252): they end no line of a .jsonl file, nor shift the
    line numbers after them; CRLF line ends are read as LF ones."""
    texts = ["a\u2028b", "c\u2029d", "e\u0085f"]
    lines = [
        json.dumps({"id": str(n), "text": text}, ensure_ascii=False) for n, text in enumerate(texts)
    ]
    path = tmp_path / "rows.jsonl"
    path.write_bytes(("\r\n".join(lines) + "\r\n\r\n" + '{"id": "3", "text": "g"}').encode())
    problems: list[DefinitionError] = []
    rows = read_rows(path=path, file="rows.jsonl", problems=problems)
    assert problems == []
    assert [row.value["text"] for row in rows] == [*texts, "g"]
    assert [row.line for row in rows] == [1, 2, 3, 5]


# Lines of a .jsonl file: JSON values, with spaces, a comma or more after them, and scraps.
_JSONL_LINE = st.one_of(
    st.builds(
        lambda value, before, after: before + json.dumps(value) + after,
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.sampled_from("abc"), inner, max_size=3)
            ),
            max_leaves=6,
        ),
        st.sampled_from(["", " ", "\t"]),
        st.sampled_from(["", " ", ",", " x", "1"]),
    ),
    st.text(alphabet=' {}[]":,019eE.-+nulNaIfity\\', max_size=10),
    st.sampled_from(['{"a": 1, "a": 2}', '{"a": 1e-400}', '{"n": ' + "9" * 5000 + "}"]),
)


@settings(max_examples=300)
@given(lines=st.lists(_JSONL_LINE, max_size=6))
def test_each_jsonl_row_is_what_decoding_its_line_alone_gives(lines: list[str]) -> None:
    """A line read by the decoder's scanner alone (one value, nothing around it) gives the row
    decoding the whole line gives; every other line is decoded whole, as before."""
    from eval_banana.datasets.jsonlrows import _jsonl
    from eval_banana.datasets.rows import decode_json

    def shown(value: object) -> str:  # NaN and a tiny number, each equal to itself
        return json.dumps(value, default=lambda tiny: ["tiny", tiny.text])

    expected: list[tuple[int, str]] = []
    failing = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            expected.append((number, shown(decode_json(line))))
        except ValueError:
            failing += 1
    problems: list[DefinitionError] = []
    rows = _jsonl(lines=iter(lines), file="rows.jsonl", problems=problems, limit=None)
    assert [(row.line, shown(row.value)) for row in rows] == expected
    first = next((line.strip() for line in lines if line.strip()), "")
    assert len(problems) == (min(failing, 1) if first in ("{", "[") else failing)


def test_a_jsonl_file_read_in_blocks_gives_the_same_rows_and_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A .jsonl file is read a block at a time: lines across blocks, a line longer than a
    block, a character of several bytes at a block's end, a BOM and CRLF ends read as one
    whole-file read does; a bad byte in a later block is told at its line and byte."""
    from eval_banana.datasets import jsonlrows as module

    texts = ["short", "é" * 40, "x", "mid€dle"]
    lines = [json.dumps({"id": str(n), "t": t}, ensure_ascii=False) for n, t in enumerate(texts)]
    data = ("\ufeff" + "\r\n".join(lines[:2]) + "\r\n\r\n" + "\n".join(lines[2:])).encode()
    path = tmp_path / "rows.jsonl"
    path.write_bytes(data)
    expected: list[tuple[str, int | None]] = [
        (t, n) for t, n in zip(texts, [1, 2, 4, 5], strict=True)
    ]
    for block in (7, 16, 1 << 20):
        monkeypatch.setattr(module, "_BLOCK", block)
        problems: list[DefinitionError] = []
        rows = read_rows(path=path, file="rows.jsonl", problems=problems)
        assert problems == [] and [(r.value["t"], r.line) for r in rows] == expected, block
    path.write_bytes(b'{"id": "a"}\n{"id": "b", "t": "caf\xe9"}\n')
    for block in (5, 1 << 20):
        monkeypatch.setattr(module, "_BLOCK", block)
        with pytest.raises(DefinitionError) as raised:
            read_rows(path=path, file="rows.jsonl", problems=[])
        assert (
            raised.value.message == "Dataset rows.jsonl is not UTF-8 text (line 2, byte 33: 0xE9)"
        )


@pytest.mark.parametrize("name", ["rows.jsonl", "rows.csv"])
def test_a_fifo_in_a_datasets_place_is_refused_without_blocking(tmp_path: Path, name: str) -> None:
    # A FIFO put where a dataset was found (after discovery looked) would block the read
    # forever with no writer: it is opened without blocking and refused as no regular file.
    # In a child with a timeout, so a read that blocks fails the test instead of hanging it.
    import os
    import subprocess
    import sys

    path = tmp_path / name
    os.mkfifo(path)
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from eval_banana.core.errors import DefinitionError\n"
        "from eval_banana.datasets.reading import read_rows\n"
        "try:\n"
        f"    read_rows(path=Path(sys.argv[1]), file={name!r}, problems=[])\n"
        "except DefinitionError as exc:\n"
        "    print(exc.message)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert f"Cannot read dataset {name}: " in done.stdout, done.stdout + done.stderr
    assert "not a regular file (a FIFO)" in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("text", "last"),
    [
        # Quotes that close: doubled inside a cell, a cell over several lines at the end, a
        # quote inside an unquoted cell (text, as the csv module reads it), CRLF line ends.
        ('id,x\na,"say ""hi"""\n', 'say "hi"'),
        ('id,x\na,b\nc,"two\nlines"', "two\nlines"),
        ('id,x\na,he said "hi\n', 'he said "hi'),
        ('id,x\r\na,"x"\r\nb,""\r\n', ""),
    ],
)
def test_a_csv_whose_quotes_close_is_read_whole(tmp_path: Path, text: str, last: str) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(text)
    problems: list[DefinitionError] = []
    rows = read_rows(path=path, file="rows.csv", problems=problems)
    assert problems == []
    assert isinstance(rows[-1].value, dict) and rows[-1].value["x"] == last


def test_every_bad_quote_of_a_csv_is_told_at_its_row_and_the_others_are_read(
    tmp_path: Path,
) -> None:
    # Read leniently, row a's cell ran on to row c's quote and took rows b and c with it (it
    # still had the header's two cells), "5" screen" lost a quote, and e's took the rest.
    path = tmp_path / "rows.csv"
    path.write_text('id,x\na,"open\nb,2\nc,"3"\nd,4\nk,"5" screen"\ne,"6\nf,7\n')
    problems: list[DefinitionError] = []
    rows = read_rows(path=path, file="rows.csv", problems=problems)
    assert [row.value for row in rows] == [{"id": "d", "x": "4"}]
    assert [(problem.line, problem.message) for problem in problems] == [
        (
            2,
            "Dataset rows.csv row at line 2 has text after the closing quote of a quoted cell: "
            "line 4 is 'c,\"3\"'",
        ),
        (
            6,
            "Dataset rows.csv row at line 6 has text after the closing quote of a quoted cell: "
            '\'k,"5" screen"\'',
        ),
        (
            7,
            "Dataset rows.csv row at line 7 opens a quoted cell that is never closed: the 2 "
            "lines from there to the end of the file would be read as that one cell",
        ),
    ]


@pytest.mark.parametrize(
    ("text", "line", "cell"),
    [
        # Written by hand with a space after each comma: the quote was text, so the comma in
        # "yes, sir" split the row into three cells (told as a row of the wrong length, with
        # the hint to quote the cell the user had quoted).
        ('id,answer\na, "yes, sir"\nb,no\n', 2, "' \"yes'"),
        ('id,answer\na,yes\nb,\t"no"\n', 3, "'\\x09\"no\"'"),
        ('id, "answer"\na,yes\n', 1, "' \"answer\"'"),
    ],
)
def test_a_space_before_a_cell_s_quote_is_told(
    tmp_path: Path, text: str, line: int, cell: str
) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(text)
    problems: list[DefinitionError] = []
    try:
        read_rows(path=path, file="rows.csv", problems=problems)
    except DefinitionError as exc:  # the header: the file cannot be read at all
        problems.append(exc)
    (problem,) = problems
    assert problem.line == line
    assert f"has a space before a quote meant to open a cell ({cell})" in problem.message
    assert problem.hint == "remove the space after the comma: a quoted cell starts with its quote"


def test_a_space_before_text_is_kept_and_a_quote_inside_a_cell_is_text(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text('id,answer\na, yes\nb,he said "hi"\n')
    rows = read_rows(path=path, file="rows.csv", problems=[])
    assert [row.value for row in rows] == [
        {"id": "a", "answer": " yes"},
        {"id": "b", "answer": 'he said "hi"'},
    ]


@pytest.mark.parametrize("text", ["1e3", "2.5E-4", "-1.0e3", ".5e2", "1e300", "1e-05", "7e22"])
def test_the_number_a_yaml_1_2_exponent_means_is_offered_as_yaml_1_1_reads_it(text: str) -> None:
    """The fix eb offers for `1e3` must itself be read as that number, not as text again."""
    import yaml

    from eval_banana.datasets.yamlrows import as_yaml11_float

    offered = as_yaml11_float(float(text))
    assert yaml.safe_load(offered) == float(text), offered


@pytest.mark.parametrize(
    ("plain", "told", "offered", "meant"),
    [
        # Text to YAML 1.1, a number to YAML 1.2.
        ("-.5", "reads as text in YAML 1.1", "-0.5", -0.5),
        ("+.25", "reads as text in YAML 1.1", "0.25", 0.25),
        ("0o755", "reads as text in YAML 1.1", "493", 493),
        ("089", "reads as text in YAML 1.1", "89", 89),
        ("-0099", "reads as text in YAML 1.1", "-99", -99),
        # A number to YAML 1.1, text to YAML 1.2.
        ("0b1010", "reads as the binary number 10", "10", 10),
        ("-0b11", "reads as the binary number -3", "-3", -3),
        ("+0x1F", "reads as the hexadecimal number 31", "31", 31),
        ("-0x1f", "reads as the hexadecimal number -31", "-31", -31),
        # Keys of YAML 1.1's own, which no constructor builds, where a value goes.
        ("=", "reads as YAML 1.1's default-value key", None, None),
        ("<<", "reads as YAML 1.1's merge key", None, None),
    ],
)
def test_a_plain_value_yaml_1_1_and_1_2_read_differently_is_told_with_the_fix(
    tmp_path: Path, plain: str, told: str, offered: str | None, meant: object
) -> None:
    """Each form is told at its line with what to write for the number YAML 1.2 means, or to
    quote it; the number offered reads as that number to eb's YAML reader itself."""
    import yaml

    path = tmp_path / "rows.yaml"
    path.write_text(f"- {{id: a, v: '{plain}'}}\n- {{id: b, v: {plain}}}\n")
    problems: list[DefinitionError] = []
    assert read_rows(path=path, file="rows.yaml", problems=problems) == []
    (problem,) = problems
    assert problem.line == 2
    assert problem.message.startswith(f"Dataset rows.yaml line 2: '{plain}' {told}"), problem
    fix = (
        f"write {offered} for the number, or " if "as text in" in told else f"write {offered}, or "
    )
    quote = f"quote it ('{plain}') to keep the text"
    assert problem.message.endswith((fix if offered else "") + quote), problem.message
    if offered is not None:
        assert yaml.safe_load(offered) == meant


@pytest.mark.parametrize("plain", ["0x1F", ".5", "-0", "+12", "1.", "0o8", "0b2", "x=y", "0"])
def test_a_plain_value_yaml_1_1_and_1_2_read_alike_is_read(tmp_path: Path, plain: str) -> None:
    import yaml

    path = tmp_path / "rows.yaml"
    path.write_text(f"- {{id: a, v: {plain}}}\n- {{<<: {{w: 1}}, id: b}}\n")
    problems: list[DefinitionError] = []
    rows = read_rows(path=path, file="rows.yaml", problems=problems)
    assert problems == []
    assert [row.value for row in rows] == [
        {"id": "a", "v": yaml.safe_load(plain)},
        {"w": 1, "id": "b"},
    ]
