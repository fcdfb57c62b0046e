"""`eb schema NAME`: print one published JSON Schema."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from eval_banana.core.errors import UsageError
from eval_banana.datasets.rowschema import NAMED_SCHEMAS, ONE_SCHEMA, SCHEMA_LISTS


def configure(*, parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", help="Schema name; see --list.")
    parser.add_argument("--list", action="store_true", help="List the schema names.")
    parser.add_argument(
        "--case-schema",
        metavar="CHECK_FILE",
        help="Print the JSON Schema of one dataset row of this family's check file (its "
        "`case_schema:`).",
    )
    parser.add_argument(
        "--as-list",
        action="store_true",
        help="With --case-schema: the schema of a whole .json or .yaml dataset file (a list of "
        "such rows), for an editor to validate that file with.",
    )


def run(args: argparse.Namespace) -> int:
    from eval_banana.publish.schemas import schema_names
    from eval_banana.stagefiles.schemafiles import packaged_schema

    if args.as_list and not args.case_schema:
        raise UsageError(
            "--as-list needs --case-schema CHECK_FILE", hint="eb schema --case-schema F --as-list"
        )
    if args.case_schema:
        sys.stdout.write(_case_schema(path=args.case_schema, as_list=args.as_list))
        return 0
    names = schema_names()
    if args.list or not args.name:
        print("\n".join(names))
        return 0
    name = args.name if args.name in names else f"stages/{args.name}"
    if name not in names:
        raise UsageError(
            f"Unknown schema '{args.name}'. Known schemas: {', '.join(names)}",
            hint="the schema of a dataset family's rows is printed from its check file: "
            f"eb schema --case-schema {_check_file_for(args.name)}",
        )
    sys.stdout.write(packaged_schema(name))
    return 0


def _check_file_for(name: str) -> str:
    """What `--case-schema` takes for `name`: the name itself when it is a check file, else a
    check file named after it (a family's id usually names its file)."""
    if name.endswith((".yaml", ".yml")):
        return name
    return f"eval_checks/{name}.yaml"


def _case_schema(*, path: str, as_list: bool) -> str:
    """A family's `case_schema:` as a JSON Schema document (draft 2020-12, the only one eb takes);
    `as_list`: the schema of a list of such rows, a .json or .yaml dataset file."""
    import json

    from eval_banana.checks.definition import load_definition
    from eval_banana.core.errors import DefinitionError
    from eval_banana.core.readback import read_regular
    from eval_banana.datasets.rowschema import refuse_other_dialect

    try:
        data = read_regular(path)
    except OSError as exc:
        raise UsageError(
            f"Cannot read check file {path}: {exc.strerror or exc}",
            hint="pass the family's check file, a path such as eval_checks/qa.yaml (`eb list` "
            "names each family's file)",
        ) from None
    definition = load_definition(data=data, path=path)
    schema = definition.get("case_schema")
    if schema is None:
        raise DefinitionError(
            f"{path} declares no case_schema",
            file=path,
            field_path="case_schema",
            hint="add `case_schema:` (a JSON Schema for one dataset row) to the family",
        )
    # eb checks rows by draft 2020-12 alone: a schema naming another is refused, as eb
    # validate refuses it, not printed for an editor to read by other rules.
    refuse_other_dialect(schema=schema, check_file=path)
    document = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **_with_case_fields(schema=schema),
    }
    if as_list:
        document = _listed(row=document)
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _with_case_fields(*, schema: dict[str, Any]) -> dict[str, Any]:
    """The family's row schema with eb's own rules for a row's `id`, `tags` and `skip` added
    (what `eb validate` refuses a row for, whatever the family's schema says), so that an
    editor accepts no row eb would not. They sit in the root's `allOf`, beside the family's
    own parts, whose references keep pointing where they did."""
    from eval_banana.models.checkbase import CASE_ITEM_SCHEMA  # pydantic: only when asked

    rules: dict[str, Any] = dict(CASE_ITEM_SCHEMA)
    if "unevaluatedProperties" in schema:
        rules = _without_annotations(rules=rules)
    existing = schema.get("allOf", [])
    if not isinstance(existing, list):
        return schema  # no schema: eb validate says so at case_schema.allOf
    return {**schema, "allOf": [*existing, rules]}


def _without_annotations(*, rules: dict[str, Any]) -> dict[str, Any]:
    """eb's case field rules said so that they evaluate no property: beside the family's own
    `unevaluatedProperties`, the `properties` of the rules would otherwise let an `id`, `tags`
    or `skip` the family's schema forbids through. Each is a value the row must not hold."""
    broken = [
        {"required": [name], "properties": {name: {"not": rule}}}
        for name, rule in rules["properties"].items()
    ]
    return {"type": "object", "not": {"anyOf": broken}}


def _listed(*, row: dict[str, object]) -> dict[str, object]:
    """A schema of a list of `row`s: the row whole under `items`, its references to places of
    its own (`#`, `#/properties/answer`, `#/$defs/name`) pointed at it there, so that each item
    is validated as `eb validate` validates a row."""
    items = dict(row)
    dialect = items.pop("$schema")
    return {"$schema": dialect, "type": "array", "items": _placed_under_items(items)}


# Keywords whose value is a schema, a list of schemas, or a mapping of names to schemas
# (draft 2020-12's, and the older spellings a case_schema may carry).
def _placed_under_items(schema: object) -> object:
    """`schema` (a row schema or a part of it) with each reference to a place of the row's own
    (`#`, `#/...`) pointed under `/items`. A part with an `$id` is a resource of its own, where
    its references point already: left as it is (the row itself, when it has one)."""
    if not isinstance(schema, dict) or "$id" in schema:
        return schema
    placed: dict[str, object] = {}
    for key, value in schema.items():
        if key in ("$ref", "$dynamicRef") and isinstance(value, str) and _own_place(value):
            placed[key] = "#/items" + value[1:]
        elif key in NAMED_SCHEMAS and isinstance(value, dict):
            placed[key] = {name: _placed_under_items(part) for name, part in value.items()}
        elif key in SCHEMA_LISTS and isinstance(value, list):
            placed[key] = [_placed_under_items(part) for part in value]
        elif key in ONE_SCHEMA:
            placed[key] = _placed_under_items(value)
        else:
            placed[key] = value  # a value, not a schema (enum, const, default, examples)
    return placed


def _own_place(reference: str) -> bool:
    """Whether `reference` names a place of the schema it is in by a JSON pointer (an anchor,
    `#name`, names its place wherever that is)."""
    return reference == "#" or reference.startswith("#/")
