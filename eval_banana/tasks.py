"""The Invoke collection users add to their own tasks.py.

A repository with no tasks of its own needs one line in tasks.py:

    from eval_banana.tasks import ns

A repository with its own namespace adds the `eval` collection to it:

    from eval_banana.tasks import collection as eval_collection
    ns.add_collection(eval_collection)

Either way: `invoke eval` runs the whole pipeline, `invoke eval.<stage>` reruns one stage,
`invoke eval.update` reruns exactly what is stale.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from invoke.collection import Collection
from invoke.context import Context
from invoke.exceptions import Exit
from invoke.tasks import task

from eval_banana.stagefiles.layout import STAGE_NAMES

_RUN_HELP = {
    "cwd": "Where the search for .eval-banana/config.toml starts (default: .).",
    "check_dir": "Only collect checks below this folder.",
    "check_id": "Select checks by id or shell-style glob, e.g. 'judge_*' (repeatable).",
    "tag": "Keep checks whose tags match: a tag or an expression such as "
    "'judge and not slow' (repeatable; any one matches).",
    "keyword": "Keep checks whose id matches, as pytest -k: 'login and not slow'.",
    "maxfail": "Stop launching checks after this many failed or errored ones.",
    "exitfirst": "Stop launching checks after the first failed or errored one (-x).",
    "retries": "Extra attempts for a judge whose agent process failed.",
    "output_dir": "Where run folders go.",
    "flat_output": "Write the run straight into --output-dir (absent or empty).",
    "pass_threshold": "Pass ratio the run needs (0.0-1.0).",
    "harness_agent": "Agent CLI for harness_judge checks.",
    "max_parallel_checks": "Checks run at the same time (assertions checks one at a time).",
    "no_project_config": "Ignore .eval-banana/config.toml.",
    "args": "Any other `eb run` flags, as one string.",
}


def _eb(argv: list[str]) -> None:
    """Run `eb` in this process; a non-zero verdict becomes Invoke's exit code."""
    from eval_banana.cli import main

    code = main(argv)
    if code:
        raise Exit(code=code)


def _split_args(args: str) -> list[str]:
    """`--args` split as a shell splits it. One it cannot split (an unbalanced quote) is a usage
    error, exit 2 as eb's own are, in one line naming the value: never a traceback, whose exit
    1 reads as a failed run."""
    try:
        return shlex.split(args)
    except ValueError as exc:
        raise Exit(
            message=f"error: --args {args!r} cannot be split into flags: {exc} "
            "(close each quote; quote a value with spaces whole)",
            code=2,
        ) from None


def _flags(**options: object) -> list[str]:
    """`eb` flags for the options given; an option not given is None (its default).

    An empty value is passed on: `--harness-agent ""` means "no agent", as with `eb run`.
    """
    argv: list[str] = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, list | tuple):
            for item in value:
                argv += [flag, str(item)]
        else:
            argv += [flag, str(value)]
    return argv


@task(
    default=True,
    help=_RUN_HELP,
    iterable=["check_id", "tag"],
)
def run(
    c: Context,
    cwd: str = ".",
    check_dir: str | None = None,
    check_id: Iterable[str] | None = None,
    tag: Iterable[str] | None = None,
    output_dir: str | None = None,
    flat_output: bool = False,
    pass_threshold: str | None = None,
    harness_agent: str | None = None,
    max_parallel_checks: str | None = None,
    no_project_config: bool = False,
    args: str = "",
    # Added later: after `args`, so the short flags Invoke derived for the others stay put.
    keyword: str | None = None,
    exitfirst: bool = False,
    maxfail: str | None = None,
    retries: str | None = None,
) -> None:
    """Run the whole pipeline, the same as `eb run` (all seven stages)."""
    options = dict(locals())
    options.pop("c")
    extra = _split_args(str(options.pop("args")))
    _eb(["run", *_flags(**options), *extra])


# An `--args` example each stage takes: a setting flag applies only to the stage that reads it.
_STAGE_ARGS = {
    "config": "--pass-threshold 0.5",
    "discover": "--verbose",
    "validate": "--check-id login",
    "guard": "--harness-agent codex",
    "execute": "--check-id login --check-timeout-seconds 60",
    "score": "--pass-threshold 0.5",
    "report": "--junit-xml junit.xml",
}


def _stage_task(stage: str, summary: str) -> object:
    @task(
        name=stage,
        help={
            "run_dir": "The run folder (default: the newest run under the output folder).",
            "cwd": "Where the search for .eval-banana/config.toml starts (default: .).",
            "args": f"Other `eb stage {stage}` flags, as one string (e.g. '{_STAGE_ARGS[stage]}').",
        },
    )
    def stage_task(c: Context, run_dir: str | None = None, cwd: str = ".", args: str = "") -> None:
        _eb(["stage", stage, *_flags(run_dir=run_dir, cwd=cwd), *_split_args(args)])

    stage_task.__doc__ = summary
    stage_task.body.__doc__ = summary
    return stage_task


_STAGE_SUMMARIES = {
    "config": "Rerun the config stage: resolve settings again into stages/config.json.",
    "discover": "Rerun the discover stage: find check files again into stages/discover.json.",
    "validate": "Rerun the validate stage: load and select checks into stages/plan.json.",
    "guard": "Rerun the guard stage: check the harness can serve the judges (stages/guard.json).",
    "execute": "Rerun the execute stage: run the planned checks into stages/execute.json.",
    "score": "Rerun the score stage from stages/execute.json (never runs a check).",
    "report": "Rerun the report stage: rewrite report.json/report.md (never runs a check).",
}


@task(help={"run_dir": "The run folder (default: the newest run).", "cwd": "Project folder."})
def status(c: Context, run_dir: str | None = None, cwd: str = ".") -> None:
    """Show each stage file of a run: ok, missing, invalid or stale."""
    _eb(["status", *_flags(run_dir=run_dir, cwd=cwd)])


@task(
    help={
        "stage": "The last stage to bring up to date (default: report).",
        "run_dir": "The run folder (default: the newest run).",
        "cwd": "Project folder.",
        "args": "Other `eb update` flags, as one string (e.g. '--verbose'); it takes no "
        "setting flags (the run keeps its own: to rerun a stage with other settings, use "
        "`invoke eval.<stage> --args ...`).",
    }
)
def update(
    c: Context, stage: str | None = None, run_dir: str | None = None, cwd: str = ".", args: str = ""
) -> None:
    """Rerun exactly the stale stages of a run (only the changed checks), like `eb update`."""
    _eb(
        [
            "update",
            *([stage] if stage is not None else []),
            *_flags(run_dir=run_dir, cwd=cwd),
            *_split_args(args),
        ]
    )


collection = Collection("eval", run, status, update)
for _stage in STAGE_NAMES:
    collection.add_task(_stage_task(_stage, _STAGE_SUMMARIES[_stage]))  # type: ignore[arg-type]

ns = Collection()
ns.add_collection(collection)
