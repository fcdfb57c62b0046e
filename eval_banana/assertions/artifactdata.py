"""An artifact's text read into what its assertions grade: JSON data, every number as written,
no deeper than a fixed bound.

Python's readers take NaN and infinity (JSON's `NaN`, YAML's `.nan` and `.inf`), read a number
too large for a program (`1e400`) as infinity and one too close to zero (`1e-400`) as 0. Graded,
each gives an answer nobody wrote (`1e-400` equals 0), so the artifact is unusable, at the
value's path. The readers mark such a number as they build it, and only an artifact with one
is walked to find where it is. An artifact nests no deeper than what a user writes may
(`MAX_DEPTH`), whatever eb's stack would bear.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable
from typing import Any, cast

import yaml

from eval_banana.assertions.paths import Index, Key, Segment, describe_location
from eval_banana.core.jsonvalues import (
    HugeNumber,
    TinyNumber,
    lone_surrogate_in,
    once_each,
    too_long_json_number_place,
    too_long_number,
    underflows,
    unsayable,
)
from eval_banana.core.readback import MAX_DEPTH, json_depth_exceeds
from eval_banana.core.textfiles import unicode_said
from eval_banana.core.yamlerrors import describe_syntax_error
from eval_banana.core.yamlsafe import (
    NotYaml12Value,
    StrictLoader,
    Yaml12Core,
    construct_yaml12_bool,
    construct_yaml12_word,
    declares_yaml_12,
    may_be_unbounded,
    yaml_float,
)

_YAML_SUFFIXES = (".yaml", ".yml")
# The most of a YAML artifact eb parses. PyYAML builds a node and then a value for each
# scalar, list and mapping: a YAML artifact costs about 100 bytes of memory per byte of text,
# up to 250 (`- - - 0` lines), where JSON costs at most about 30. At this size its worst case
# (about 2 GiB) is the worst of a JSON artifact at the 64 MiB eb reads of one.
MAX_YAML_ARTIFACT_BYTES = 8 * 1024 * 1024
YAML_TOO_LARGE = (
    f"is larger than {MAX_YAML_ARTIFACT_BYTES:,} bytes (8 MiB), the most eb reads as YAML, "
    "which takes about 100 times its size in memory to read: have the program write the "
    "artifact as JSON, which eb reads up to 64 MiB"
)
# Said after the artifact's name.
TOO_DEEP = f"is nested deeper than {MAX_DEPTH} levels, the most eb reads in a JSON or YAML file"


class ArtifactUnusable(Exception):
    """Why an artifact cannot be graded, said after its name (`is empty`)."""


class NumberWatch:
    """json's `parse_float` and `parse_constant` for one artifact: a number that does not read
    as written is kept as what it is (a TinyNumber, a HugeNumber, NaN or an infinity), and
    `misread` says one was."""

    def __init__(self) -> None:
        self.misread = False

    def parse_float(self, text: str) -> float | TinyNumber | HugeNumber:
        value = float(text)
        # Only a zero or an infinity has its text looked at: other numbers cost nothing more.
        if value == 0.0 and underflows(text):
            self.misread = True
            return TinyNumber(text)
        if math.isinf(value):
            self.misread = True
            return HugeNumber(text)
        return value

    def parse_constant(self, name: str) -> float:
        # `NaN`, `Infinity` and `-Infinity`: no JSON, though Python's json reads them.
        self.misread = True
        return float(name)


class ArtifactYamlLoader(StrictLoader):
    """Safe loader reading YAML as JSON data: timestamps stay strings, repeated keys fail, and
    `misread` says a number was read that does not read as written (see NumberWatch)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.misread = False


def _timestamp_as_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


def _float_as_written(
    loader: ArtifactYamlLoader, node: yaml.ScalarNode
) -> float | TinyNumber | HugeNumber:
    value = yaml_float(loader=loader, node=node)
    if type(value) is not float or not math.isfinite(value):
        loader.misread = True
    return value


ArtifactYamlLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)
ArtifactYamlLoader.add_constructor("tag:yaml.org,2002:float", _float_as_written)


class NotJsonValue(yaml.constructor.ConstructorError):
    """A value whose YAML tag builds what JSON has not (`!!set`), at its place."""


# The tags whose values JSON has not, each with what it builds and how to write it instead.
# Graded, such a value met no operator's rules (a set is no array, pairs are no object).
_NOT_JSON_TAGS = {
    "set": ("a set", "write a list (- a), or a mapping without the tag"),
    "omap": ("ordered pairs", "write a mapping without the tag"),
    "pairs": ("pairs", "write a mapping, or a list of one-key mappings, without the tag"),
    "binary": ("binary data", "write the text without the tag, as base64 if it must be"),
}


def _refuse_not_json(loader: ArtifactYamlLoader, node: yaml.Node) -> None:
    tag = node.tag.rsplit(":", 1)[-1]
    what, fix = _NOT_JSON_TAGS[tag]
    raise NotJsonValue(
        None, None, f"{what} (a !!{tag} tag), which JSON has not: {fix}", node.start_mark
    )


for _tag in _NOT_JSON_TAGS:
    ArtifactYamlLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_not_json)


class Yaml12ArtifactLoader(Yaml12Core, ArtifactYamlLoader):
    """ArtifactYamlLoader for an artifact that declares `%YAML 1.2`, whose plain scalars are
    read by YAML 1.2's core schema, as it asks (core/yamlsafe.py's Yaml12Core)."""


Yaml12ArtifactLoader.add_constructor("tag:yaml.org,2002:bool", construct_yaml12_bool)
Yaml12ArtifactLoader.add_constructor("tag:yaml.org,2002:merge", construct_yaml12_word)


# Said after the artifact's name of YAML text that holds no data: as an empty file is, it is
# unusable (a control on it graded nothing), not a document whose top level is null.
NO_YAML_DATA = "is empty: it holds no YAML data, only comments or a document marker (---)"


def load_yaml(text: str) -> tuple[Any, bool]:
    """The YAML document `text` as an artifact, and whether it holds a number that does not
    read as written; ArtifactUnusable for a stream with no document (only comments) or whose
    document is empty (a `---` alone), which PyYAML reads as null. Read by YAML 1.1's rules,
    or by YAML 1.2's core schema when it declares `%YAML 1.2` (PyYAML would follow 1.1)."""
    loader = (Yaml12ArtifactLoader if declares_yaml_12(text) else ArtifactYamlLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None or _empty_document(node=node, text=text):
            raise ArtifactUnusable(NO_YAML_DATA)
        return loader.construct_document(node), loader.misread
    finally:
        loader.dispose()


def _empty_document(*, node: yaml.Node, text: str) -> bool:
    """Whether `node`, a document's top, is no value written: null read from nothing, where a
    `~`, a `null` or a tag asking for null (`--- !!null`) is a null written."""
    return (
        isinstance(node, yaml.ScalarNode)
        and node.tag == "tag:yaml.org,2002:null"
        and node.value == ""
        and not _tag_written(node=node, text=text)
    )


def _tag_written(*, node: yaml.ScalarNode, text: str) -> bool:
    """Whether the empty scalar `node` of `text` is written with a tag (`!!null`), which its
    marks span with any anchor; lines and columns, which both of PyYAML's parsers count in
    characters, find it."""
    start, end = node.start_mark, node.end_mark
    if (start.line, start.column) == (end.line, end.column):
        return False  # nothing written at all
    lines = text.splitlines()[start.line : end.line + 1]
    if not lines:
        return False
    lines[-1] = lines[-1][: end.column]  # first: on one line, the start's column then holds
    lines[0] = lines[0][start.column :]
    written = " ".join(lines)
    return any(part.startswith("!") for part in written.split())


def _misread(value: object) -> bool:
    kind = type(value)
    if kind is float:
        return not math.isfinite(cast(float, value))
    return kind is TinyNumber or kind is HugeNumber


def misread_number(document: Any) -> str | None:
    """Where `document` first holds a number that does not read as written, and what it is
    (`score holds NaN, which JSON cannot say`); None when it holds none. Each list and mapping
    is walked once, however many YAML aliases share it."""
    seen: set[int] = set()
    stack: list[tuple[object, tuple[Segment, ...]]] = [(document, ())]
    while stack:
        item, where = stack.pop()
        children: list[tuple[object, Segment]] = []
        if type(item) is dict:
            pairs = cast(dict[object, object], item)
            children = [(child, Key(str(key))) for key, child in pairs.items()]
        elif type(item) is list:
            children = [
                (child, Index(index)) for index, child in enumerate(cast(list[object], item))
            ]
        elif _misread(item):
            found = unsayable(item)
            if found is not None:
                return f"{describe_location(segments=where)} holds {found.what}, {found.why}"
            continue
        else:
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        # Reversed onto the stack, so the first value in the document is told first.
        stack.extend((child, (*where, segment)) for child, segment in reversed(children))
    return None


def yaml_too_deep(*, text: str, document: Any) -> bool:
    """Whether the YAML artifact `document`, loaded from `text`, nests lists and mappings
    deeper than MAX_DEPTH (the top one is level 1). A value that holds itself through an alias
    is measured once round (the walk of a path follows it as far as the path goes), and each
    list and mapping once, however many aliases share it: linear in what was built."""
    if not may_be_unbounded(text=text, max_depth=MAX_DEPTH, max_values=sys.maxsize):
        return False  # too few openers in the text to nest that deep
    depth_of: dict[int, int] = {}
    open_ids: set[int] = set()  # the lists and mappings on the way down to the current one
    stack: list[tuple[object, bool]] = [(document, False)]
    while stack:
        item, done = stack.pop()
        key = id(item)
        inner = _containers(item)
        if done:
            open_ids.discard(key)
            # A child still open is an alias back up the way: it adds no level.
            depth = 1 + max((depth_of.get(id(child), 0) for child in inner), default=0)
            if depth > MAX_DEPTH:
                return True
            depth_of[key] = depth
            continue
        if key in depth_of or key in open_ids:
            continue
        open_ids.add(key)
        stack.append((item, True))
        stack.extend((child, False) for child in inner)
    return False


def _containers(item: object) -> list[object]:
    """The lists and mappings directly inside `item` (a mapping's values: a key that is not
    text cannot be addressed by a path)."""
    kind = type(item)
    values: Iterable[object]
    if kind is dict:
        values = cast(dict[object, object], item).values()
    elif kind is list:
        values = cast(list[object], item)
    else:
        return []
    return [value for value in values if type(value) in (dict, list)]


def _first_line(*, text: str) -> str:
    return " ".join(str(text).split())[:300]


def _json_problem(*, text: str, exc: ValueError | RecursionError) -> str:
    """Why json did not read `text`, said after the artifact's name. A plain ValueError (not
    a syntax error, nor a repeated key) is int() refusing a whole number longer than Python
    reads: valid JSON, told at the number's place, as the YAML reader tells it."""
    if type(exc) is ValueError:
        place = too_long_json_number_place(text)
        if place is not None:
            line, column = place
            return f"is unusable: {too_long_number(line=line, column=column)}"
    return f"is not valid JSON: {_first_line(text=str(exc) or type(exc).__name__)}"


def _parse(*, data: bytes, text: str, suffix: str) -> tuple[Any, str]:
    """JSON when it parses as JSON; YAML for .yaml/.yml files; anything else is unusable.
    Either is read no deeper than MAX_DEPTH: JSON by a scan of `data` before parsing, YAML by
    a walk of what it built."""
    json_too_deep = json_depth_exceeds(data, limit=MAX_DEPTH)
    json_problem = TOO_DEEP
    if not json_too_deep:
        numbers = NumberWatch()
        try:
            document = json.loads(
                text,
                object_pairs_hook=once_each,
                parse_float=numbers.parse_float,
                parse_constant=numbers.parse_constant,
            )
        except (ValueError, RecursionError) as exc:
            json_problem = _json_problem(text=text, exc=exc)
        else:
            _refuse_lone_surrogates(text=text, document=document)
            if numbers.misread:
                _refuse_misread_numbers(document=document)
            return document, "json"
    if suffix not in _YAML_SUFFIXES:
        raise ArtifactUnusable(json_problem)
    if len(data) > MAX_YAML_ARTIFACT_BYTES:
        raise ArtifactUnusable(YAML_TOO_LARGE)
    try:
        document, misread = load_yaml(text)
    except RecursionError:  # the pure-Python loader builds nested values recursively
        raise ArtifactUnusable(TOO_DEEP) from None
    except (NotJsonValue, NotYaml12Value) as exc:
        # Valid YAML, but no value JSON has, or none YAML 1.2 reads: told at its line.
        raise ArtifactUnusable(f"is unusable: {describe_syntax_error(exc=exc)[0]}") from None
    except (yaml.YAMLError, ValueError) as exc:
        # PyYAML's own text places the problem in "<unicode string>": ours says line and column.
        what = describe_syntax_error(exc=exc)[0] if isinstance(exc, yaml.YAMLError) else str(exc)
        raise ArtifactUnusable(f"is not valid YAML: {_first_line(text=what)}") from None
    if yaml_too_deep(text=text, document=document):
        raise ArtifactUnusable(TOO_DEEP)
    if misread:
        _refuse_misread_numbers(document=document)
    return document, "yaml"


def _refuse_misread_numbers(*, document: Any) -> None:
    """NaN, an infinity, or a number too large or too close to zero to read: graded, it would
    give an answer nobody wrote (`1e-400` equals 0)."""
    found = misread_number(document)
    if found is not None:
        raise ArtifactUnusable(f"is unusable: {found}")


def _refuse_lone_surrogates(*, text: str, document: Any) -> None:
    """JSON can escape half a surrogate pair (`\\ud800`), which is no character: graded, it
    would be quoted in a reason no report can be written with."""
    found = lone_surrogate_in(text=text, document=document)
    if found is not None:
        where = f"at {found.field}, " if found.field else ""
        raise ArtifactUnusable(f"is not Unicode text: {where}{found.what}; {found.fix}")


def parse_artifact(*, data: bytes, text: str, suffix: str) -> tuple[Any, str]:
    """The artifact's document and its format ("json" or "yaml"), or ArtifactUnusable. A UTF-16
    or UTF-32 file without a byte order mark is told by its NUL bytes, as a dataset is: such
    text of ASCII letters is valid UTF-8, which neither JSON nor YAML reads, and its syntax
    error would say nothing of the encoding."""
    try:
        return _parse(data=data, text=text, suffix=suffix)
    except ArtifactUnusable:
        # Only an artifact that failed to parse pays for the look.
        said = unicode_said(data) if "\x00" in text else None
        if said is None:
            raise
        raise ArtifactUnusable(said) from None
