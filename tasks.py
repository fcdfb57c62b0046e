"""Developer tasks for eval_banana itself: `invoke --list`."""

from __future__ import annotations

import sys

from invoke import Collection, Context, task

from eval_banana.tasks import collection as eval_collection
from eval_banana.tasks import run as eval_run

PY = sys.executable


@task(help={"k": "Only run tests matching this expression.", "quick": "Skip slow tests."})
def test(c: Context, k: str = "", quick: bool = False) -> None:
    """Run the test suite (the same command CI runs)."""
    args = ["-q"]
    if k:
        args += ["-k", repr(k)]
    if quick:
        args += ["-m", "'not slow'"]
    c.run(f"{PY} -m pytest {' '.join(args)}", pty=False)


@task
def lint(c: Context) -> None:
    """ruff: lint and formatting."""
    c.run(f"{PY} -m ruff check eval_banana tests tasks.py bench")
    c.run(f"{PY} -m ruff format --check eval_banana tests tasks.py bench")


@task
def typecheck(c: Context) -> None:
    """mypy --strict over the package."""
    c.run(f"{PY} -m mypy")


@task
def schemas(c: Context) -> None:
    """Regenerate schemas/ (and the copy shipped in the package) from the pydantic models."""
    c.run(f"{PY} -m eval_banana.schemas_cli")


@task
def docs(c: Context) -> None:
    """Regenerate docs/reference.md and the stage examples under docs/stages/."""
    c.run(f"{PY} -m eval_banana.docgen")


@task(pre=[lint, typecheck, test])
def check(c: Context) -> None:
    """Lint, type check and test: everything CI runs."""


@task(help={"args": "Extra arguments for eb run, as one string."})
def demo(c: Context, args: str = "") -> None:
    """Evaluate the bundled example project (examples/demo) through our own `invoke eval`."""
    eval_run(c, cwd="examples/demo", args=args)


@task(
    help={
        "only": "Comma-separated workload keys, e.g. W1,W4 (default: all).",
        "quick": "Tiny sizes and one run: the CI smoke mode (never fails on a missed target).",
    }
)
def bench(c: Context, only: str = "", quick: bool = False) -> None:
    """Benchmark whole eb processes against their physical floors (docs/performance.md)."""
    args: list[str] = []
    if only:
        args += ["--only", only]
    if quick:
        args.append("--quick")
    c.run(f"{PY} bench/run.py {' '.join(args)}", pty=False)


@task(help={"force": "Reinstall even when the pins have not changed."})
def agents(c: Context, force: bool = False) -> None:
    """Install the pinned real agent CLIs for tests/agents_real (idempotent; see its README)."""
    args = " --force" if force else ""
    c.run(f"{PY} tests/agents_real/install.py{args}", pty=False)


ns = Collection(test, lint, typecheck, schemas, docs, check, demo, bench, agents)
# Dogfooding: the same collection users add to their own tasks.py.
ns.add_collection(eval_collection)
