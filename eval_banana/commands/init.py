"""`eb init`: write .eval-banana/config.toml, the editor schema, a first passing check and a
small dataset family."""

from __future__ import annotations

import argparse
from pathlib import Path


def configure(*, parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force",
        action="store_true",
        help="Overwrite an existing config file (a check file is never overwritten).",
    )
    parser.add_argument(
        "--nested",
        action="store_true",
        help="Make a project here although a folder above is one already (that project's "
        "`eb run` discovers this one's checks too).",
    )
    parser.add_argument("--verbose", action="store_true", help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from eval_banana.commands.scaffold import CACHE_NOTE, run_init

    outcome = run_init(cwd=Path.cwd(), force=args.force, nested=args.nested)
    for path in outcome.written:
        print(f"Wrote {path}")
    for line in outcome.left:
        print(line)
    print(CACHE_NOTE)
    return 0
