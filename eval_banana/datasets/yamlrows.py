"""How a YAML dataset file is read: as a check file is (safe, no repeated key), and without
YAML 1.1's silent readings of plain words and numbers.

PyYAML follows YAML 1.1, where `no` is the boolean false (a row for Norway, `country: NO`),
`010` the octal number 8 (a zero-padded id), `1:30` the number 90 and `1_000` the number 1000.
YAML 1.2, which editors and most other tools follow, reads them otherwise. In a dataset that
silently changes an id or an expected answer, so each is refused at its line with the way to
write what was meant.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from eval_banana.core.yamlsafe import StrictLoader

_BOOLEAN_WORDS = frozenset({"true", "false"})
_OCTAL = re.compile(r"[-+]?0[0-7_]+")


class AmbiguousScalar(yaml.constructor.ConstructorError):
    """A plain scalar YAML 1.1 reads as something YAML 1.2 would not."""


class DatasetLoader(StrictLoader):
    """StrictLoader that refuses YAML 1.1's ambiguous booleans and numbers (AmbiguousScalar)."""


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


def _boolean(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> bool:
    text = str(loader.construct_scalar(node))
    value = bool(loader.construct_yaml_bool(node))
    if text.lower() not in _BOOLEAN_WORDS:
        shown = str(value).lower()
        raise _refuse(node=node, text=text, reading=f"the boolean {shown}", fix=f"write {shown}")
    return value


def _integer(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    value = int(loader.construct_yaml_int(node))
    if _OCTAL.fullmatch(text):
        raise _refuse(
            node=node,
            text=text,
            reading=f"the octal number {value}",
            fix="write the number without its leading zeros",
        )
    if ":" in text:
        raise _refuse(node=node, text=text, reading=f"the base-60 number {value}")
    if "_" in text:
        raise _refuse(node=node, text=text, reading=f"the number {value}", fix=f"write {value}")
    return value


def _real(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    text = str(loader.construct_scalar(node))
    value = loader.construct_yaml_float(node)
    if ":" in text:
        raise _refuse(node=node, text=text, reading=f"the base-60 number {value}")
    if "_" in text:
        raise _refuse(node=node, text=text, reading=f"the number {value}", fix=f"write {value}")
    return value


DatasetLoader.add_constructor("tag:yaml.org,2002:bool", _boolean)
DatasetLoader.add_constructor("tag:yaml.org,2002:int", _integer)
DatasetLoader.add_constructor("tag:yaml.org,2002:float", _real)


def ambiguous_scalar_under(text: str, *, key: str) -> AmbiguousScalar | None:
    """The first ambiguous scalar in the value of `key` of the YAML mapping `text` (a check
    file's own `cases:`, read as a dataset file is while the rest of the file is read as
    eval-banana reads it), or None."""
    loader_type: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        root = yaml.compose(text, Loader=loader_type)  # noqa: S506 - nodes only, nothing built
    except yaml.YAMLError:
        return None  # the check file's own reading tells it
    if not isinstance(root, yaml.MappingNode):
        return None
    found = [value for name, value in root.value if getattr(name, "value", None) == key]
    if not found:
        return None
    loader = DatasetLoader("")
    try:
        loader.construct_document(found[-1])
    except AmbiguousScalar as exc:
        return exc
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    return None
