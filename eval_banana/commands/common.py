"""What several subcommands share: common flags, the run request, the run folder, signals."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from eval_banana.core.realpaths import real_path

if TYPE_CHECKING:
    from eval_banana.core.errors import Located
    from eval_banana.models.config import Selection
    from eval_banana.models.stages import ConfigDoc, DiscoverDoc
    from eval_banana.pipeline.request import RunRequest
    from eval_banana.reporting import ReportExtras

EXIT_HELP = """exit codes:
  0  the run passed (or the command succeeded)
  1  the run did not pass: the pass threshold was not met (at the default 1.0, a check
     failed), a check errored, --maxfail stopped it, a dataset family's min_pass_rate gate
     did not hold, or a check was flaky under --fail-on-flaky
  2  setup or usage error: bad flags, config or check definitions; nothing ran
  3  the run was aborted (interrupt or fuse); the report marks the checks that did not run
"""


def add_common(parser: argparse.ArgumentParser, *, selection: bool = True) -> None:
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
            "the project root, not the current directory; a folder outside the project root is "
            "walked with a warning).",
        )
        parser.add_argument(
            "--check-id",
            action="append",
            default=[],
            metavar="ID",
            help="Select the check with this id, or every id matching a shell-style glob "
            "('judge_*'); repeatable, any one matches. Other files are not validated.",
        )
        parser.add_argument(
            "--tag",
            action="append",
            default=[],
            metavar="EXPR",
            help="Keep checks whose tags match: a tag, or tags combined with and, or, not and "
            "parentheses ('judge and not slow'); repeatable, any one matches.",
        )
        parser.add_argument(
            "-k",
            "--keyword",
            metavar="EXPR",
            help="Keep checks whose id matches, as pytest -k: case-insensitive substrings "
            "combined with and, or, not and parentheses ('login and not slow').",
        )
        parser.add_argument(
            "--shard",
            metavar="K/N",
            help="Keep only shard K of N of the selected checks (by a stable hash of each id; "
            "see docs/scale-out.md). 'auto' reads the CI engine's job index and count (GitLab, "
            "Buildkite, CircleCI, Kubernetes Indexed Jobs, Azure Pipelines) or "
            "EVAL_BANANA_SHARD=K/N.",
        )
        parser.add_argument(
            "--subset",
            metavar="N|P%",
            help="Keep only N (or P percent, rounded up) of each dataset family's selected "
            "cases: the same ones every run, spread over the dataset by a hash of each case id, "
            "so a larger N keeps them and adds more (see docs/datasets.md). Checks that are no "
            "case are all kept.",
        )
        parser.add_argument(
            "--subset-seed",
            metavar="S",
            help="A whole number that draws another subset for --subset (default 0).",
        )


def add_incremental(parser: argparse.ArgumentParser) -> None:
    """--changed-since and --last-failed: select checks by what changed or what failed."""
    parser.add_argument(
        "--changed-since",
        metavar="REF",
        help="Only the checks whose definition, script, declared inputs or (assertions) "
        "artifact differ between the git revision REF and the work tree (committed, staged, "
        "unstaged and untracked changes count); a check without `inputs:` is always selected.",
    )
    parser.add_argument(
        "--last-failed",
        action="store_true",
        help="Only the checks that failed or errored the last time they ran (remembered in "
        ".eval-banana/lastfailed.json across partial runs); when none did, every check, or "
        "none with --last-failed-none skip.",
    )


def add_setting_flags(parser: argparse.ArgumentParser, *, command: str) -> None:
    from eval_banana.settings.table import add_setting_arguments

    add_setting_arguments(parser=parser, command=command)
    if command == "run":
        # pytest's -x: the same setting as --maxfail 1 (the later of the two flags wins).
        parser.add_argument(
            "-x",
            "--exitfirst",
            dest="maxfail",
            action="store_const",
            const=1,
            default=argparse.SUPPRESS,
            help="Stop launching checks after the first failed or errored one (--maxfail 1).",
        )


def add_format(
    parser: argparse.ArgumentParser, *, choices: tuple[str, ...], default: str, help: str
) -> None:
    """`--format`, and `--json` for `--format json`: `eb run`, `eb validate` and `eb merge` say
    `--json`, and a user who learned it there types it here too."""
    formats = parser.add_mutually_exclusive_group()
    formats.add_argument("--format", choices=choices, default=default, help=help)
    formats.add_argument(
        "--json", dest="format", action="store_const", const="json", help="Same as --format json."
    )


def add_run_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run-dir",
        help="The run folder (default: the newest run under the configured output folder).",
    )


def selection(args: argparse.Namespace) -> Selection:
    from eval_banana.models.config import Selection

    shard_text = getattr(args, "shard", None)
    shard = None
    if shard_text is not None:
        from eval_banana.checks.shard import parse_shard

        shard = parse_shard(text=shard_text, environ=os.environ)
    subset = None
    subset_text = getattr(args, "subset", None)
    seed_text = getattr(args, "subset_seed", None)
    if subset_text is not None or seed_text is not None:
        from eval_banana.checks.subset import parse_subset

        subset = parse_subset(text=subset_text, seed_text=seed_text)
    select = None
    select_text = getattr(args, "select", None)
    if select_text is not None:
        from eval_banana.scaleout.selectfile import read_select

        # The file decides how the run's part is dealt, whatever --balance says.
        select, shard = read_select(
            source=select_text,
            cwd=Path.cwd(),
            shard=shard,
            allow_stale_plan=bool(getattr(args, "allow_stale_plan", False)),
        )
    return Selection(
        select=select,
        check_ids=list(getattr(args, "check_id", []) or []),
        check_dir=getattr(args, "check_dir", None),
        tags=list(getattr(args, "tag", []) or []),
        keyword=getattr(args, "keyword", None),
        shard=shard,
        subset=subset,
        changed_since=getattr(args, "changed_since", None),
        last_failed=bool(getattr(args, "last_failed", False)),
    )


def selection_given(args: argparse.Namespace) -> bool:
    """Whether any selection flag was given (a stage rerun then replaces the recorded one)."""
    names = ("check_id", "check_dir", "tag", "keyword", "shard", "subset")
    return any(getattr(args, name, None) for name in names)


def cli_values(args: argparse.Namespace) -> dict[str, object]:
    from eval_banana.settings.table import cli_values_from_namespace

    return cli_values_from_namespace(namespace=args)


def settings_config(args: argparse.Namespace) -> ConfigDoc:
    """The resolved settings of the project at --cwd, for a command that runs no checks (eb
    history, eb cache): flags, environment and config.toml as `eb run` reads them."""
    from eval_banana.models.config import Selection
    from eval_banana.settings.rundir import new_run_id
    from eval_banana.stages.config import resolve_config

    return resolve_config(
        cwd=Path(args.cwd),
        cli_values=cli_values(args),
        environ=dict(os.environ),
        no_project_config=bool(getattr(args, "no_project_config", False)),
        selection=Selection(),
        run_id=new_run_id(),
    )


def request(
    args: argparse.Namespace,
    *,
    flat_output: bool = False,
    extras: ReportExtras | None = None,
    outputs: tuple[Path, ...] = (),
) -> RunRequest:
    from eval_banana.pipeline.request import RunRequest

    return RunRequest(
        cwd=Path(args.cwd),
        cli_values=cli_values(args),
        environ=dict(os.environ),
        no_project_config=bool(getattr(args, "no_project_config", False)),
        selection=selection(args),
        flat_output=flat_output,
        extras=extras,
        outputs=outputs,
        json_line=bool(getattr(args, "json", False)),
    )


def resolve_run_dir(args: argparse.Namespace) -> Path:
    """--run-dir, else the newest run under the configured output folder."""
    from eval_banana.core.errors import StageFileError
    from eval_banana.pipeline.request import load_config
    from eval_banana.settings.rundir import (
        new_run_id,
        newest_run_dir,
        not_a_run_folder,
        run_folder_hint,
    )

    if args.run_dir:
        given = real_path(args.run_dir)
        problem = not_a_run_folder(folder=given)
        if problem is not None:
            raise StageFileError(
                f"--run-dir {problem}",
                file=str(given),
                hint=run_folder_hint(
                    folder=given,
                    otherwise="Pass a folder `eb run` wrote, or leave out --run-dir for the "
                    "newest run under the configured output folder.",
                ),
            )
        return given
    config = load_config(request=request(args), run_id=new_run_id())
    newest = newest_run_dir(config=config)
    if newest is None:
        raise StageFileError(
            f"No run folder found under {config.settings.core.output_dir}",
            hint="Run `eb run` first, or pass --run-dir.",
        )
    return newest


def stopping_signals() -> tuple[signal.Signals, ...]:
    """SIGINT, SIGTERM and SIGHUP (a closed terminal or SSH session), unless SIGHUP is ignored
    (`nohup eb run`): a run started so goes on when its terminal closes."""
    hangup = getattr(signal, "SIGHUP", None)
    if hangup is None or signal.getsignal(hangup) is signal.SIG_IGN:
        return (signal.SIGINT, signal.SIGTERM)
    return (signal.SIGINT, signal.SIGTERM, hangup)


@contextmanager
def stop_on_signals(cancel: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM/SIGHUP stop the run gracefully: running checks end, the reports are
    written (nothing is installed off the main thread: `_handled_by`)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        cancel.set()

    with _handled_by(handler=handler):
        yield


@contextmanager
def signals_held_back(cancel: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM/SIGHUP while a finished run writes its last files (`--result-out`):
    noted as during the run (`cancel` set, so a report waiting for the project's turn is
    written at once rather than lost), then the first one raised again once they are written,
    to the handler in place before (eb's own: `Interrupted.`, exit 3). A block that failed
    ends with its own error."""
    noted: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        noted.append(signum)
        cancel.set()

    with _handled_by(handler=handler):
        yield
    if noted:
        signal.raise_signal(noted[0])


@contextmanager
def _handled_by(*, handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    """`handler` set for the stopping signals meanwhile. Off the main thread (a program running
    `main` on a thread of its own) nothing is installed: Python sets handlers on the main
    thread only and runs them there, so the signals stay the program's own."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in stopping_signals()}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def project_warnings(*, config: ConfigDoc, discovered: DiscoverDoc) -> list[str]:
    """`eb list` / `validate` / `run`: no project found above the folder, nested projects, and
    what the config stage found (a legacy key, a shared cache that is never asked)."""
    from eval_banana.stages.config import config_warning_lines

    return [
        *config_warning_lines(config=config),
        *place_warnings(config=config, discovered=discovered),
    ]


def place_warnings(*, config: ConfigDoc, discovered: DiscoverDoc) -> list[str]:
    """Where the project was found: no config file above the folder, a --check-dir outside
    it, projects nested in it."""
    from eval_banana.stages.config import outside_project_warning
    from eval_banana.stages.discover import check_dir_outside_warning, nested_projects_warning

    found = (
        outside_project_warning(config=config),
        check_dir_outside_warning(config=config),
        nested_projects_warning(config=config, discovered=discovered),
    )
    return [message for message in found if message is not None]


def annotate_problems(
    *, args: argparse.Namespace, problems: Sequence[Located], kind: str, warn: bool = False
) -> None:
    """`--annotations github`: the problems that stop the command (`warn`: what it warns of),
    as workflow commands on their files and lines (on stdout; on stderr with --json, whose
    stdout is one document)."""
    if getattr(args, "annotations", None) != "github" or not problems:
        return
    from eval_banana.reporting.github import problem_annotations, problem_title

    lines = problem_annotations(
        problems=problems,
        title=problem_title(kind=kind),
        project_root=str(_project_root(args)),
        level="warning" if warn else "error",
    )
    print("\n".join(lines), file=sys.stderr if getattr(args, "json", False) else sys.stdout)


def _project_root(args: argparse.Namespace) -> Path:
    """The project root the command worked in, which annotation paths are relative to (the
    command's own folder when the config cannot even be found)."""
    from eval_banana.core.errors import EvalBananaError
    from eval_banana.settings.configfile import project_root_of

    cwd = Path(getattr(args, "cwd", "."))
    ignore = bool(getattr(args, "no_project_config", False))
    try:
        return project_root_of(cwd=cwd, no_project_config=ignore)
    except (EvalBananaError, OSError):
        pass
    try:
        return cwd.absolute()
    except OSError:
        return cwd  # started in a folder deleted since: there is no absolute path to give
