"""YAML datasets: read as a check file is (safe, no repeated key, bounded nesting and
aliases), and without YAML 1.1's silent readings of plain words and numbers.

PyYAML follows YAML 1.1, where `no` is the boolean false (a row for Norway, `country: NO`),
`010` the octal number 8 (a zero-padded id), `1:30` the number 90, `1_000` the number 1000,
`0b1010` the number 10, and `1e3`, `-.5` and `0o755` text (a float wants a dot and a signed
exponent there, and a leading digit after a sign). YAML 1.2, which editors and most other tools
follow, reads them otherwise (its core schema: true/false, decimal, 0o octal and 0x hex numbers,
floats). In a dataset that silently changes an id or an expected answer, so each is refused at
its line with the way to write what was meant. So is a plain `=` or `<<` where a value goes,
which YAML 1.1 reads as a key of its own (no constructor builds it) and YAML 1.2 as text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import yaml

from eval_banana.core.errors import DefinitionError
from eval_banana.core.jsonvalues import TinyNumber, too_long_number, underflows
from eval_banana.core.readback import MAX_DEPTH
from eval_banana.core.yamlerrors import describe_syntax_error
from eval_banana.core.yamlsafe import (
    OWN_KEY_TAGS,
    YAML12_EXPONENT_NUMBER,
    AmbiguousScalar,
    DuplicateKeyError,
    FastSafeLoader,
    NotYaml12Value,
    NumberTooLong,
    StrictLoader,
    Unbounded,
    Yaml12Core,
    construct_mapping_once_each,
    construct_whole_number,
    construct_yaml12_word,
    declares_yaml_12,
    own_key_word,
    refuse_unbounded,
)
from eval_banana.datasets.rows import (
    REPEATED_KEY_HINT,
    Row,
    dataset_problem,
    listed_rows,
    repeated_key_problem,
    too_deep,
)

_BOOLEAN_WORDS = frozenset({"true", "false"})
_OCTAL = re.compile(r"[-+]?0[0-7_]+")
# Whole numbers YAML 1.1 reads and YAML 1.2 reads as text: binary, and a hexadecimal number
# with a sign (1.2 writes hexadecimal without one).
_BINARY = re.compile(r"[-+]?0b[01_]+")
_SIGNED_HEX = re.compile(r"[-+]0x[0-9a-fA-F_]+")
# Numbers YAML 1.2 reads that YAML 1.1 reads as text, besides an exponent without a dot or a
# sign (YAML12_EXPONENT_NUMBER): a signed fraction without a leading digit, an octal number
# written 0o, and a zero-padded whole number holding an 8 or a 9 (no octal number to 1.1).
_SIGNED_FRACTION = re.compile(r"[-+]\.[0-9]+")
_OCTAL_0O = re.compile(r"0o[0-7]+")
_ZERO_PADDED_DECIMAL = re.compile(r"[-+]?0[0-9]*[89][0-9]*")


# The fix for any of them, beside the message that names the value and what it became.
AMBIGUOUS_HINT = (
    "YAML 1.1 reads some plain words and numbers as other values; quote a value to keep it as text"
)


class DatasetLoader(StrictLoader):
    """StrictLoader that finds YAML 1.1's ambiguous booleans and numbers: each is kept in
    `ambiguous` (the value built as YAML 1.1 reads it), so one reading tells every one."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.ambiguous: list[AmbiguousScalar] = []
        # Whether a mapping has a key that is not text (`{1: bad}`): only then are the rows
        # walked for it (JSON would turn it into text without a word).
        self.keys_not_text = False
        # Mappings that repeat a key, each built with its last value: the rows holding them
        # are each a problem, the other rows still read (as a .jsonl file's lines are).
        self.repeated: list[DuplicateKeyError] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        if not self.keys_not_text:
            self.keys_not_text = any(type(key) is not str for key in mapping)
        return mapping


def _mapping_noting_repeats(loader: DatasetLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    try:
        return construct_mapping_once_each(loader, node)
    except DuplicateKeyError as exc:
        loader.repeated.append(exc)
        return loader.construct_mapping(node)


def _refuse(
    *, node: yaml.ScalarNode, text: str, reading: str, fix: str | None = None
) -> AmbiguousScalar:
    quote = f"quote it ('{text}') to keep the text"
    return AmbiguousScalar(
        None,
        None,
        f"{text!r} reads as {reading} in YAML 1.1, which eb's YAML reader follows: "
        + (f"{fix}, or {quote}" if fix else quote),
        node.start_mark,
    )


def _boolean(loader: DatasetLoader, node: yaml.ScalarNode) -> bool:
    text = str(loader.construct_scalar(node))
    value = bool(loader.construct_yaml_bool(node))
    if text.lower() not in _BOOLEAN_WORDS:
        shown = str(value).lower()
        loader.ambiguous.append(
            _refuse(node=node, text=text, reading=f"the boolean {shown}", fix=f"write {shown}")
        )
    return value


def _integer(loader: DatasetLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    value = construct_whole_number(loader, node)
    if _OCTAL.fullmatch(text):
        loader.ambiguous.append(
            _refuse(
                node=node,
                text=text,
                reading=f"the octal number {value}",
                fix="write the number without its leading zeros",
            )
        )
    elif _BINARY.fullmatch(text) or _SIGNED_HEX.fullmatch(text):
        base = "binary" if "b" in text else "hexadecimal"
        loader.ambiguous.append(
            _refuse(
                node=node, text=text, reading=f"the {base} number {value}", fix=f"write {value}"
            )
        )
    else:
        _base_60_or_underscores(loader=loader, node=node, text=text, value=value)
    return value


def _real(loader: DatasetLoader, node: yaml.ScalarNode) -> Any:
    text = str(loader.construct_scalar(node))
    value = loader.construct_yaml_float(node)
    _base_60_or_underscores(loader=loader, node=node, text=text, value=value)
    if value == 0.0 and underflows(text):
        return TinyNumber(text)  # not zero, though it reads as 0: the row's expansion tells it
    return value


def _base_60_or_underscores(
    *, loader: DatasetLoader, node: yaml.ScalarNode, text: str, value: object
) -> None:
    """A number written as YAML 1.1 alone reads it: `1:30` (base 60), `1_000` (underscores)."""
    if ":" in text:
        loader.ambiguous.append(
            _refuse(node=node, text=text, reading=f"the base-60 number {value}")
        )
    elif "_" in text:
        loader.ambiguous.append(
            _refuse(node=node, text=text, reading=f"the number {value}", fix=f"write {value}")
        )


def _text(loader: DatasetLoader, node: yaml.ScalarNode) -> str:
    text = str(loader.construct_scalar(node))
    if node.style:  # quoted or a block: text everywhere (plain is None, or "" from libyaml)
        return text
    number = yaml12_number(text)
    if number is not None:
        loader.ambiguous.append(
            AmbiguousScalar(
                None,
                None,
                f"{text!r} reads as text in YAML 1.1, which eb's YAML reader follows, where YAML "
                f"1.2 reads {_yaml12_reading(text=text, number=number)}quote it ('{text}') to "
                "keep the text",
                node.start_mark,
            )
        )
    return text


def _yaml12_reading(*, text: str, number: int | float) -> str:
    """What YAML 1.2 reads the plain `text` as, and how to write that number for YAML 1.1,
    up to the quotes that keep the text."""
    if number == 0.0 and underflows(text):
        # `1e-400` is no number a program reads: 0.0 is not what was written.
        return "a number too close to zero to read (it would be 0): write 0 if zero is meant, or "
    if not math.isfinite(number):
        return "a number: "
    return f"a number: write {_as_yaml11_number(number)} for the number, or "


def yaml12_number(text: str) -> int | float | None:
    """The number YAML 1.2 reads the plain scalar `text` as, where YAML 1.1 reads text; else
    None."""
    if _OCTAL_0O.fullmatch(text):
        return int(text[2:], 8)
    if _ZERO_PADDED_DECIMAL.fullmatch(text):
        return int(text)
    if YAML12_EXPONENT_NUMBER.fullmatch(text) or _SIGNED_FRACTION.fullmatch(text):
        return float(text)
    return None


def _as_yaml11_number(number: int | float) -> str:
    return as_yaml11_float(number) if isinstance(number, float) else str(number)


def _own_key(loader: DatasetLoader, node: yaml.ScalarNode) -> str:
    """A plain `=` or `<<` where a value goes, told as a check file tells it; kept with the
    other ambiguous values, so one reading tells every one."""
    loader.ambiguous.append(own_key_word(loader=loader, node=node))
    return str(loader.construct_scalar(node))


def _pairs(loader: DatasetLoader, node: yaml.SequenceNode) -> Iterator[list[Any]]:
    """`!!omap` or `!!pairs`: built as PyYAML builds them (a list of tuples, which JSON would
    write as lists without a word), and the rows walked, so that the row holding them is told."""
    loader.keys_not_text = True
    if node.tag.endswith(":omap"):
        yield from loader.construct_yaml_omap(node)
    else:
        yield from loader.construct_yaml_pairs(node)


def as_yaml11_float(number: float) -> str:
    """`number` as YAML 1.1 reads a float: with a dot, and a sign on any exponent."""
    shown = repr(number)  # 1000.0, 0.001, 1e+300, 1e-05
    mantissa, marker, exponent = shown.partition("e")
    if marker and "." not in mantissa:
        return f"{mantissa}.0e{exponent}"
    return shown


DatasetLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_noting_repeats
)
DatasetLoader.add_constructor("tag:yaml.org,2002:str", _text)
DatasetLoader.add_constructor("tag:yaml.org,2002:bool", _boolean)
DatasetLoader.add_constructor("tag:yaml.org,2002:int", _integer)
DatasetLoader.add_constructor("tag:yaml.org,2002:float", _real)
for _tag in OWN_KEY_TAGS:
    DatasetLoader.add_constructor(_tag, _own_key)
DatasetLoader.add_constructor("tag:yaml.org,2002:omap", _pairs)
DatasetLoader.add_constructor("tag:yaml.org,2002:pairs", _pairs)


class Yaml12DatasetLoader(Yaml12Core, DatasetLoader):
    """DatasetLoader for a dataset that declares `%YAML 1.2`: read by YAML 1.2's core schema,
    as it asks (core/yamlsafe.py's Yaml12Core), it holds none of YAML 1.1's ambiguous values
    (`NO` is text, `0755` the number 755), so none is refused."""


def _plain_text(loader: Yaml12DatasetLoader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


Yaml12DatasetLoader.add_constructor("tag:yaml.org,2002:str", _plain_text)
Yaml12DatasetLoader.add_constructor("tag:yaml.org,2002:int", construct_whole_number)
Yaml12DatasetLoader.add_constructor("tag:yaml.org,2002:merge", construct_yaml12_word)


def dataset_loader(text: str) -> DatasetLoader:
    """The loader of the YAML dataset `text`: by YAML 1.2's core schema when it declares
    `%YAML 1.2`, else by YAML 1.1's rules, its ambiguous values kept to be told."""
    return (Yaml12DatasetLoader if declares_yaml_12(text) else DatasetLoader)(text)


def ambiguous_scalars_under(text: str, *, key: str) -> list[AmbiguousScalar]:
    """Every ambiguous scalar in the value of `key` of the YAML mapping `text` (a check file's
    own `cases:`, read as a dataset file is while the rest of the file is read as eval-banana
    reads it), in the order of the text; none when `text` declares `%YAML 1.2`, whose rules
    it is read by."""
    if declares_yaml_12(text):
        return []
    try:
        root = yaml.compose(text, Loader=FastSafeLoader)  # noqa: S506 - nodes only, nothing built
    except yaml.YAMLError:
        return []  # the check file's own reading tells it
    if not isinstance(root, yaml.MappingNode):
        return []
    found = [value for name, value in root.value if getattr(name, "value", None) == key]
    if not found:
        return []
    loader = DatasetLoader("")
    try:
        loader.construct_document(found[-1])
    except yaml.YAMLError:
        return []  # the check file's own reading tells it
    finally:
        loader.dispose()
    return loader.ambiguous


# Up to this many ambiguous values of one file are each an error at its line; beyond, they are
# one error with their count, the first and the last (a column of 10,000 `no` is one mistake).
AMBIGUOUS_LISTED = 3


def ambiguous_problems(
    *, found: list[AmbiguousScalar], file: str, at: Callable[[int | None], str], field_path: str
) -> list[DefinitionError]:
    """The errors for the ambiguous values `found` in `file`; `at` names a line of it as a
    message does (`Dataset data/rows.yaml line 3`, `fam.yaml cases (line 7)`)."""
    if len(found) <= AMBIGUOUS_LISTED:
        return [
            DefinitionError(
                f"{at(_line(value))}: {value.problem}",
                file=file,
                line=_line(value),
                field_path=field_path,
                hint=AMBIGUOUS_HINT,
            )
            for value in found
        ]
    first, last = found[0], found[-1]
    return [
        DefinitionError(
            f"{at(_line(first))}: {first.problem}; and {len(found) - 1:,} more plain values YAML "
            f"1.1 reads otherwise, the last at line {_line(last)}: {last.problem}",
            file=file,
            line=_line(first),
            field_path=field_path,
            hint=AMBIGUOUS_HINT,
        )
    ]


def _line(value: AmbiguousScalar) -> int | None:
    return value.problem_mark.line + 1 if value.problem_mark is not None else None


# What the aliases of a YAML dataset may add to the values its text writes out (a text without
# aliases never holds more values than characters): a shared rubric is fine, a bomb is not.
ALIASED_VALUES = 1_000_000


def yaml_rows(*, text: str, file: str, problems: list[DefinitionError]) -> list[Row]:
    """The rows of a .yaml or .yml dataset: one list of mappings, read by DatasetLoader and
    bounded as a check file is (nesting, aliases). Its ambiguous values go to `problems`, each
    one (the file then gives no rows), and so does each row that repeats a key (the other rows
    still read); any other problem is raised."""
    loader = dataset_loader(text)
    try:
        value = loader.get_single_data()
    except NumberTooLong as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark is not None else None
        raise dataset_problem(
            file=file,
            line=line,
            message=f"Dataset {file} {too_long_number(line=line)}",
            hint="quote it to keep it as text",
        ) from None
    except NotYaml12Value as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark is not None else None
        raise dataset_problem(
            file=file,
            line=line,
            message=f"Dataset {file} line {line}: {exc.problem}",
            hint="write the value as YAML 1.2 writes it, or quote it to keep it as text",
        ) from None
    except yaml.YAMLError as exc:
        documents = _document_count(text)
        if documents > 1:
            # Rows written as documents (`---` between them) instead of items of one list.
            raise dataset_problem(
                file=file,
                line=None,
                message=f"Dataset {file} holds {documents} YAML documents (separated by ---), "
                "not one list of cases",
                hint="write the rows as one list: start each with '- ' and delete the --- "
                "lines (or write one JSON object per line in a .jsonl file)",
            ) from None
        mark = getattr(exc, "problem_mark", None)
        what, hint = describe_syntax_error(exc=exc)
        raise dataset_problem(
            file=file,
            line=mark.line + 1 if mark is not None else None,
            message=f"Dataset {file} is not valid YAML: {what}",
            hint=hint,
        ) from None
    except RecursionError:  # the loader builds nested values recursively
        raise too_deep(file=file, line=None, what=f"Dataset {file}") from None
    finally:
        loader.dispose()
    try:
        refuse_unbounded(value=value, max_depth=MAX_DEPTH, max_values=len(text) + ALIASED_VALUES)
    except Unbounded as exc:
        if exc.too_deep:
            raise too_deep(file=file, line=None, what=f"Dataset {file}") from None
        raise dataset_problem(
            file=file,
            line=None,
            message=f"Dataset {file}: its YAML aliases (*name) {exc.what}",
            hint="write the values out, or use fewer, shallower aliases",
        ) from None
    if loader.ambiguous:
        problems.extend(
            ambiguous_problems(
                found=loader.ambiguous,
                file=file,
                at=lambda line: f"Dataset {file} line {line}",
                field_path="cases_from",
            )
        )
        return []
    rows = listed_rows(
        value=value, file=file, kind="YAML", string_keys=not loader.keys_not_text, text=text
    )
    if loader.repeated:
        return _rows_without_repeated_keys(
            rows=rows, repeated=loader.repeated, file=file, problems=problems
        )
    return rows


def _rows_without_repeated_keys(
    *,
    rows: list[Row],
    repeated: list[DuplicateKeyError],
    file: str,
    problems: list[DefinitionError],
) -> list[Row]:
    """`rows` but those holding a mapping that repeats a key: each is a problem, told at its
    first repeated key (a mapping an alias shares belongs to the row that writes it out)."""
    items = rows[0].item_lines if rows else None
    told: dict[int, DuplicateKeyError] = {}
    for exc in repeated:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else None
        index = items.item_at(line=line, column=mark.column) if items and mark and line else None
        if index is None:
            # No row found for it (the file's items unplaced): still told, at its line.
            problems.append(
                dataset_problem(
                    file=file,
                    line=line,
                    message=f"Dataset {file} line {line} has a row with a duplicate key "
                    f"'{exc.key}'",
                    hint=REPEATED_KEY_HINT,
                )
            )
            return []
        told.setdefault(index, exc)
    for index, exc in sorted(told.items()):
        line = exc.problem_mark.line + 1 if exc.problem_mark is not None else None
        problems.append(repeated_key_problem(row=rows[index - 1], key=str(exc.key), line=line))
    return [row for row in rows if row.item_index not in told]


def _document_count(text: str) -> int:
    """How many YAML documents `text` holds, when it is a valid stream of them (else 0);
    counted on the parser's events, nothing built."""
    try:
        return sum(
            isinstance(event, yaml.DocumentStartEvent) for event in yaml.parse(text, FastSafeLoader)
        )
    except yaml.YAMLError:
        return 0
