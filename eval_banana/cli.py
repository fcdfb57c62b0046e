"""The `eb` command line: argparse over the stage functions.

This is the one place where exceptions become messages and exit codes:
0 passed / ok, 1 the run did not pass, 2 setup or usage error, 3 aborted (D-3).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from eval_banana.errors import EvalBananaError, UsageError
from eval_banana.version import tool_version

if TYPE_CHECKING:
    from eval_banana.models.config import Selection
    from eval_banana.reporting import ReportExtras
    from eval_banana.request import RunRequest

EXIT_HELP = """exit codes:
  0  the run passed (or the command succeeded)
  1  the run did not pass (a check failed or errored, or the threshold was not met)
  2  setup or usage error: bad flags, config or check definitions; nothing ran
  3  the run was aborted (interrupt or fuse); the report marks the checks that did not run
"""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so usage errors go through one boundary."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message}\nTry '{self.prog} --help' for help.")


def _add_common(parser: argparse.ArgumentParser, *, selection: bool = True) -> None:
    parser.add_argument(
        "--cwd",
        default=".",
        help="Where the upward search for .eval-banana/config.toml starts (default: .). "
        "The process working directory is not changed.",
    )
    parser.add_argument("--verbose", action="store_true", help="Log debug details to stderr.")
    parser.add_argument(
        "--no-project-config",
        action="store_true",
        help="Ignore .eval-banana/config.toml; use env vars, flags and defaults only.",
    )
    if selection:
        parser.add_argument(
            "--check-dir",
            help="Only collect checks below this folder (relative paths are resolved against "
            "the project root, not the current directory).",
        )
        parser.add_argument(
            "--check-id",
            action="append",
            default=[],
            help="Select the check with this id (repeatable). Other files are not validated.",
        )
        parser.add_argument(
            "--tag",
            action="append",
            default=[],
            help="Keep checks that have this tag (repeatable; any tag matches).",
        )


def _setting_flags(parser: argparse.ArgumentParser, *, command: str) -> None:
    from eval_banana.settings import add_setting_arguments

    add_setting_arguments(parser=parser, command=command)


STAGE_CHOICES = ("config", "discover", "validate", "guard", "execute", "score", "report")


def _add_run_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run-dir",
        help="The run folder (default: the newest run under the configured output folder).",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="eb",
        description="eval_banana: run YAML-defined evaluation checks as a CI gate.",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"eval_banana {tool_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    init = commands.add_parser("init", help="Write .eval-banana/config.toml and an example check.")
    init.add_argument("--force", action="store_true", help="Overwrite an existing config file.")
    init.add_argument("--verbose", action="store_true", help=argparse.SUPPRESS)

    run = commands.add_parser(
        "run",
        help="Run the checks and write the reports.",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_common(run)
    _setting_flags(run, command="run")
    run.add_argument(
        "--flat-output",
        action="store_true",
        help="Write the run straight into --output-dir (must be absent or empty).",
    )
    run.add_argument(
        "--json", action="store_true", help="Print the report (or the error) as one JSON object."
    )
    from eval_banana.reporting.flags import add_report_arguments

    add_report_arguments(run)

    listing = commands.add_parser(
        "list", help="List the discovered checks (id, type, description, path)."
    )
    _add_common(listing)
    _setting_flags(listing, command="list")

    validate = commands.add_parser(
        "validate", help="Validate every check definition without running anything."
    )
    _add_common(validate)
    _setting_flags(validate, command="validate")
    validate.add_argument(
        "--allow-empty", action="store_true", help="Succeed even when no check is found."
    )
    validate.add_argument(
        "--run-dir", help="Also write the config, discover, validate and guard stage files here."
    )
    validate.add_argument("files", nargs="*", help=argparse.SUPPRESS)

    stage = commands.add_parser(
        "stage",
        help="Rerun one stage from the files in a run folder.",
        description="Rerun one stage from the stage files in --run-dir and rewrite its output. "
        "`eb stage report` never executes a check.",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    stage.add_argument("name", choices=STAGE_CHOICES, help="The stage to rerun.")
    _add_run_dir(stage)
    _add_common(stage)
    _setting_flags(stage, command="run")

    status = commands.add_parser(
        "status", help="Show each stage file: ok, missing, invalid or stale."
    )
    _add_run_dir(status)
    _add_common(status, selection=False)

    schema = commands.add_parser(
        "schema", help="Print a published JSON Schema (check, config, report, stages/<stage>...)."
    )
    schema.add_argument("name", nargs="?", help="Schema name; see --list.")
    schema.add_argument("--list", action="store_true", help="List the schema names.")
    return parser


def _selection(args: argparse.Namespace) -> Selection:
    from eval_banana.models.config import Selection

    return Selection(
        check_ids=list(getattr(args, "check_id", []) or []),
        check_dir=getattr(args, "check_dir", None),
        tags=list(getattr(args, "tag", []) or []),
    )


def _cli_values(args: argparse.Namespace) -> dict[str, object]:
    from eval_banana.settings import cli_values_from_namespace

    return cli_values_from_namespace(namespace=args)


def _request(
    args: argparse.Namespace, *, flat_output: bool = False, extras: ReportExtras | None = None
) -> RunRequest:
    from eval_banana.request import RunRequest

    return RunRequest(
        cwd=Path(args.cwd),
        cli_values=_cli_values(args),
        environ=dict(os.environ),
        no_project_config=bool(getattr(args, "no_project_config", False)),
        selection=_selection(args),
        flat_output=flat_output,
        extras=extras,
    )


@contextmanager
def _stop_on_signals(cancel: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM stop the run gracefully; a second SIGINT is not needed to get a report."""

    def handler(signum: int, frame: FrameType | None) -> None:
        cancel.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def cmd_run(args: argparse.Namespace) -> int:
    from eval_banana.console import Console
    from eval_banana.pipeline import run_pipeline

    if args.flat_output and "core.output_dir" not in _cli_values(args):
        raise UsageError("--flat-output requires an explicit --output-dir")
    from eval_banana.reporting.runcli import prepare_report_options, stamp_result
    from eval_banana.request import load_config
    from eval_banana.rundir import new_run_id

    extras, result_out = prepare_report_options(args=args, environ=os.environ)
    request = _request(args, flat_output=args.flat_output, extras=extras)
    stamp = partial(
        stamp_result,
        result_out=result_out,
        extras=extras,
        cli_values=request.cli_values,
        load_config=lambda: load_config(request=request, run_id=new_run_id()),
    )
    cancel = threading.Event()
    console = Console(quiet=args.json)
    try:
        with _stop_on_signals(cancel):
            outcome = run_pipeline(request=request, cancel=cancel, console=console)
    except BaseException as exc:
        stamp(error=exc)  # --result-out is written for every failure after option parsing
        raise
    stamp(error=None)
    if args.json:
        print(json.dumps(outcome.report, ensure_ascii=False))
    return outcome.exit_code


def _planned(args: argparse.Namespace, *, mode: str) -> tuple[object, object, object]:
    """config -> discover -> validate (-> guard) in memory, for list and validate."""
    from eval_banana.request import load_config
    from eval_banana.rundir import new_run_id
    from eval_banana.stages.discover import discover
    from eval_banana.stages.validate import validate

    config = load_config(request=_request(args), run_id=new_run_id())
    contents: dict[str, bytes] = {}
    discovered = discover(config=config, inputs={}, contents=contents)
    outcome = validate(config=config, discovered=discovered, inputs={}, contents=contents)
    return config, discovered, outcome


def cmd_list(args: argparse.Namespace) -> int:
    _, _, outcome = _planned(args, mode="list")
    plan = outcome.plan  # type: ignore[attr-defined]
    if not plan.ok and not (len(plan.errors) == 1 and plan.errors[0].message == "No checks found"):
        outcome.raise_if_failed()  # type: ignore[attr-defined]
    for check in plan.checks:
        print(f"{check.id}\t{check.type}\t{check.description}\t{check.source_path}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from eval_banana.validate_command import run_validate

    return run_validate(args=args, request=_request(args))


def cmd_init(args: argparse.Namespace) -> int:
    from eval_banana.init import run_init

    for path in run_init(cwd=Path.cwd(), force=args.force):
        print(f"Wrote {path}")
    return 0


def _resolve_run_dir(args: argparse.Namespace) -> Path:
    from eval_banana.errors import StageFileError
    from eval_banana.request import load_config
    from eval_banana.rundir import new_run_id, newest_run_dir

    if args.run_dir:
        return Path(args.run_dir).resolve()
    config = load_config(request=_request(args), run_id=new_run_id())
    newest = newest_run_dir(config=config)
    if newest is None:
        raise StageFileError(
            f"No run folder found under {config.settings.core.output_dir}",
            hint="Run `eb run` first, or pass --run-dir.",
        )
    return newest


def cmd_stage(args: argparse.Namespace) -> int:
    from eval_banana.console import Console
    from eval_banana.rerun import RERUNS, StageRequest

    given = _selection(args)
    cancel = threading.Event()
    request = StageRequest(
        run_dir=_resolve_run_dir(args),
        cli_values=_cli_values(args),
        environ=dict(os.environ),
        selection=given if any((args.check_id, args.check_dir, args.tag)) else None,
        no_project_config=args.no_project_config,
        console=Console(),
        cancel=cancel,
    )
    with _stop_on_signals(cancel):
        return RERUNS[args.name](request)


def cmd_status(args: argparse.Namespace) -> int:
    from eval_banana.status import run_status

    run_dir = _resolve_run_dir(args)
    states = run_status(run_dir=run_dir)
    print(f"Run folder: {run_dir}")
    for state in states:
        relative = state.path.relative_to(run_dir)
        detail = f"  ({state.detail})" if state.detail else ""
        print(f"{state.stage:<9} {str(relative):<22} {state.state}{detail}")
    return 0 if all(state.state == "ok" for state in states) else 1


def cmd_schema(args: argparse.Namespace) -> int:
    from eval_banana.schemas import packaged_schema, schema_names

    names = schema_names()
    if args.list or not args.name:
        print("\n".join(names))
        return 0
    name = args.name if args.name in names else f"stages/{args.name}"
    if name not in names:
        raise UsageError(f"Unknown schema '{args.name}'. Known schemas: {', '.join(names)}")
    sys.stdout.write(packaged_schema(name))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "schema": cmd_schema,
    "stage": cmd_stage,
    "status": cmd_status,
    "init": cmd_init,
    "run": cmd_run,
    "list": cmd_list,
    "validate": cmd_validate,
}


def _report_error(exc: EvalBananaError, *, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"error": exc.as_json(), "exit_code": exc.exit_code}))
    else:
        print(exc.render(), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `eb` and `eval-banana`; returns the process exit code."""
    parser = build_parser()
    # Known before parsing, so a bad flag next to --json still gets a JSON error (D-17).
    as_json = "--json" in (argv if argv is not None else sys.argv[1:])
    try:
        args = parser.parse_args(argv)
        as_json = bool(getattr(args, "json", False))
        logging.basicConfig(
            level=logging.DEBUG if getattr(args, "verbose", False) else logging.WARNING,
            format="%(name)s: %(message)s",
        )
        return COMMANDS[args.command](args)
    except EvalBananaError as exc:
        if as_json or not _verbose(argv):
            _report_error(exc, as_json=as_json)
            return exc.exit_code
        raise
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 3
    except BrokenPipeError:
        # The reports are already on disk; a closed stdout must not turn into a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _verbose(argv: Sequence[str] | None) -> bool:
    return "--verbose" in (argv if argv is not None else sys.argv[1:])


def entry() -> None:
    sys.exit(main())
