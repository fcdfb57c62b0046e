"""`eb status`: each stage file of a run: ok, missing, invalid, failed or stale (like `make -n`)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from eval_banana.commands import common
from eval_banana.core.words import one_line

if TYPE_CHECKING:
    from eval_banana.pipeline.status import StageState


def configure(*, parser: argparse.ArgumentParser) -> None:
    common.add_run_dir(parser)
    common.add_common(parser, selection=False)


def run(args: argparse.Namespace) -> int:
    from eval_banana.pipeline.status import pinned_selection, run_status
    from eval_banana.pipeline.writers import writer_shown

    run_dir = common.resolve_run_dir(args)
    states = run_status(run_dir=run_dir)
    print(f"Run folder: {run_dir}")
    for state in states:
        relative = state.path.relative_to(run_dir)
        # A detail quotes the project's words (an `inputs:` pattern, a file name, a problem's
        # message): one line in the table, never a line of its own (a `::` workflow command).
        detail = f"  ({one_line(state.detail)})" if state.detail else ""
        print(f"{state.stage:<9} {str(relative):<22} {state.state}{detail}")
    pinned = pinned_selection(run_dir=run_dir)
    if pinned is not None:
        print(one_line(pinned))  # the revision is the user's words
    writer = writer_shown(run_dir=run_dir)
    if writer is not None:
        # Its missing stage files are still to come: `eb update` now would run its checks twice.
        print(
            f"This run is still in progress: {writer} is writing this folder. Wait for it to "
            f"end, then run {_in_run_dir('eb status', args=args)} again."
        )
    if all(state.state == "ok" for state in states):
        return 0
    if writer is not None:
        return 1
    if states[0].state in ("missing", "invalid"):
        # config.json is what every rebuild starts from (the request the run was made with).
        print(
            f"stages/config.json is {states[0].state}, so nothing here can be rebuilt: start "
            f"a new run with {_same_run('eb run', args=args)}"
        )
        return 1
    merge = _merge_to_run_again(run_dir=run_dir, states=states, args=args)
    if merge is not None:
        print(merge)
        return 1
    print(f"To rerun exactly what is not ok: {_in_run_dir('eb update', args=args)}")
    return 1


def _merge_to_run_again(
    *, run_dir: Path, states: list[StageState], args: argparse.Namespace
) -> str | None:
    """For a merged run whose merge was interrupted before it brought in every shard's files,
    the merge that completes it (`eb update` refuses the folder); else None."""
    from eval_banana.pipeline.interruptedmerge import interrupted_merge, merge_again

    if not any(state.stage == "execute" and state.state == "stale" for state in states):
        return None
    doc = interrupted_merge(run_dir=run_dir)
    if doc is None:
        return None
    command = _same_run(merge_again(doc=doc, run_dir=run_dir), args=args)
    return (
        "The merge that wrote this folder was interrupted before it brought in every shard's "
        "files, which only the shards hold: eb update cannot complete it. Merge the same "
        f"shards again: {command}"
    )


def _in_run_dir(command: str, *, args: argparse.Namespace) -> str:
    """`_same_run`, in the run folder status looked at when --run-dir named it."""
    command = _same_run(command, args=args)
    if args.run_dir:
        command += f" --run-dir {shlex.quote(args.run_dir)}"
    return command


def _same_run(command: str, *, args: argparse.Namespace) -> str:
    """`command` with the flags that made status find this project, so the hint runs as
    printed from the same folder."""
    if args.cwd != ".":
        command += f" --cwd {shlex.quote(args.cwd)}"
    if args.no_project_config:
        command += " --no-project-config"
    return command
