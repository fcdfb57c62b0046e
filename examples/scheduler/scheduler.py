#!/usr/bin/env python3
"""A tiny scheduler that drives eb through its plan/select protocol (docs/scale-out.md).

1. `eb plan --shards N --balance history --format json` says what there is to run and deals it
   into N parts (by expected duration when eb has history, else by hash);
2. N workers run `eb run --select plan.json --shard K/N`, each exactly its part, each into its
   own run folder (here: N local processes; on a real engine, N pods or jobs);
3. `eb merge` gathers the parts into one run and gates on it: its exit code is the verdict.

Standard library only, no eb import: an engine talks to eb through its command line.

    python examples/scheduler/scheduler.py --project . --workers 3 --out /tmp/eb-scheduled
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path


def eb_command(text: str) -> list[str]:
    return shlex.split(text) if text else [sys.executable, "-m", "eval_banana"]


def _refusal(stdout: str) -> str:
    """The message of eb's JSON error document, with its hint, as lines for stderr."""
    try:
        error = json.loads(stdout)["error"]
    except (ValueError, KeyError, TypeError):
        return stdout
    hint = f"\nhint: {error['hint']}" if error.get("hint") else ""
    return f"{error['message']}{hint}\n"


def make_plan(*, eb: list[str], project: Path, workers: int, out: Path) -> Path:
    """Ask eb what it would run, dealt into `workers` parts; keep the plan beside the runs."""
    done = subprocess.run(
        [
            *eb,
            "plan",
            "--cwd",
            str(project),
            "--shards",
            str(workers),
            "--balance",
            "history",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        # Asked for JSON, eb gives its refusal as the JSON error document on stdout.
        sys.stderr.write(done.stderr + _refusal(done.stdout))
        raise SystemExit(done.returncode)  # a setup error: nothing was started
    plan = json.loads(done.stdout)
    for total in plan["shard_totals"]:
        expected = total["expected_seconds"]
        print(
            f"part {total['index']}/{workers}: {total['checks']} checks, expected "
            f"{'unknown' if expected is None else f'{expected:.1f}s'}"
        )
    path = out / "plan.json"
    path.write_text(done.stdout)
    return path


def run_parts(*, eb: list[str], project: Path, plan: Path, workers: int, out: Path) -> list[Path]:
    """Start every worker at once, then wait for all of them; a worker that could not start
    (exit 2) or was aborted (exit 3) stops the schedule, a failing check (exit 1) does not."""
    folders = [out / f"part-{index}" for index in range(1, workers + 1)]
    jobs = [
        subprocess.Popen(
            [
                *eb,
                "run",
                "--cwd",
                str(project),
                "--select",
                str(plan),
                "--shard",
                f"{index}/{workers}",
                "--output-dir",
                str(folder),
                "--flat-output",
            ],
            stdout=subprocess.DEVNULL,
        )
        for index, folder in enumerate(folders, start=1)
    ]
    codes = [job.wait() for job in jobs]
    for index, code in enumerate(codes, start=1):
        print(f"part {index}/{workers} finished with exit code {code}")
    broken = [code for code in codes if code not in (0, 1)]
    if broken:
        raise SystemExit(broken[0])
    return folders


def merge(*, eb: list[str], project: Path, folders: list[Path], out: Path) -> int:
    done = subprocess.run(
        [
            *eb,
            "merge",
            *map(str, folders),
            "--cwd",
            str(project),
            "--output-dir",
            str(out / "merged"),
            "--flat-output",
        ],
        check=False,
    )
    return done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", default=".", help="The project to run (default: .).")
    parser.add_argument("--workers", type=int, default=3, help="How many parts (default: 3).")
    parser.add_argument("--out", required=True, help="A new folder for the plan and the runs.")
    parser.add_argument(
        "--eb", default="", help="The eb command (default: this python -m eval_banana)."
    )
    args = parser.parse_args(argv)
    eb = eb_command(args.eb)
    project = Path(args.project).resolve()
    out = Path(args.out).resolve()
    try:
        out.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        # An earlier schedule's plan and parts would be mixed with this one's.
        sys.stderr.write(f"--out {out} already exists: give a new folder, or remove it\n")
        return 2
    except OSError as exc:
        sys.stderr.write(f"--out {out} cannot be made: {exc.strerror or exc}\n")
        return 2
    plan = make_plan(eb=eb, project=project, workers=args.workers, out=out)
    folders = run_parts(eb=eb, project=project, plan=plan, workers=args.workers, out=out)
    return merge(eb=eb, project=project, folders=folders, out=out)


if __name__ == "__main__":
    sys.exit(main())
