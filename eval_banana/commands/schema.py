"""`eb schema NAME`: print one published JSON Schema."""

from __future__ import annotations

import argparse
import sys

from eval_banana.core.errors import UsageError


def configure(*, parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", help="Schema name; see --list.")
    parser.add_argument("--list", action="store_true", help="List the schema names.")


def run(args: argparse.Namespace) -> int:
    from eval_banana.publish.schemas import schema_names
    from eval_banana.stagefiles.schemafiles import packaged_schema

    names = schema_names()
    if args.list or not args.name:
        print("\n".join(names))
        return 0
    name = args.name if args.name in names else f"stages/{args.name}"
    if name not in names:
        raise UsageError(f"Unknown schema '{args.name}'. Known schemas: {', '.join(names)}")
    sys.stdout.write(packaged_schema(name))
    return 0
