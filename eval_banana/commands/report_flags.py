"""`eb run`'s report flags, kept apart so building the parser imports no report writer."""

from __future__ import annotations

import argparse

FORMATS: tuple[str, ...] = ("md", "json")


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """The run subcommand's report flags."""
    parser.add_argument(
        "--no-html", action="store_true", help="Do not write report.html into the run folder."
    )
    parser.add_argument(
        "--annotations",
        choices=["github"],
        help="Print a GitHub Actions ::error annotation per failed or errored check (the "
        "first ten, and a ::notice counting the others), or per problem that stops the run "
        "before it starts (the first ten, on their files and lines), and a ::warning per "
        "warning of the run (the first ten); on stdout, on stderr with --json.",
    )
    parser.add_argument(
        "--result-out",
        metavar="PATH",
        help="Also write a result document (status, git commit, checks) here, also when the run "
        "fails to start. Relative to the current directory. A symbolic link is followed, as a "
        "shell's > follows it (/dev/stdout prints it).",
    )
    parser.add_argument(
        "--result-format",
        choices=list(FORMATS),
        default="md",
        help="Result document format: md (fenced JSON + report.md, default) or json.",
    )
    parser.add_argument(
        "--provenance-attempt",
        metavar="ID",
        help="Recorded as provenance.attempt in the result document.",
    )
    parser.add_argument(
        "--provenance-field",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Recorded verbatim in the result document's provenance (repeatable).",
    )
