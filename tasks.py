"""Developer tasks for eval_banana itself: `invoke --list`."""

from __future__ import annotations

import re
import shutil
import sys
from collections import Counter
from pathlib import Path

from invoke import Collection, Context, Exit, task

from eval_banana.tasks import collection as eval_collection
from eval_banana.tasks import run as eval_run

PY = sys.executable


@task(
    help={
        "k": "Only run tests matching this expression.",
        "quick": "Skip slow tests.",
        "browser": "Run the browser suite instead (needs chromium and chromium-driver).",
    }
)
def test(c: Context, k: str = "", quick: bool = False, browser: bool = False) -> None:
    """Run the default test suite (the README's command, CI's first); --browser: the browser one."""
    args = ["-q"]
    if k:
        args += ["-k", repr(k)]
    if browser:
        args += ["-m", "browser"]
    elif quick:
        # A -m given here replaces pyproject's, so the suites it leaves out are left out again.
        left_out = (
            "not slow and not browser and not bench and not exhaustive and not integrations"
            " and not remote and not concurrent"
        )
        args += ["-m", repr(left_out)]
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
    c.run(f"{PY} -m eval_banana.publish")


@task
def docs(c: Context) -> None:
    """Regenerate docs/reference.md and the stage examples under docs/stages/."""
    c.run(f"{PY} -m eval_banana.publish.docs")


@task(pre=[lint, typecheck, test])
def check(c: Context) -> None:
    """Lint, type check and the default suite: what to run before a commit, not all of CI.

    .ci/run also runs the bench, exhaustive, integrations, concurrent, remote and browser suites,
    the real agents (tests/agents_real) and the built wheel (docs/testing.md).
    """


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


# Mutation testing (docs/testing.md#mutation-testing): mutmut's statuses that mean "caught".
CAUGHT = frozenset({"killed", "timeout", "caught by type check", "segfault"})
NOT_RUN = frozenset({"not checked", "skipped", "check was interrupted by user"})
MUTANTS_DOC = Path("docs/testing.md")
# An equivalent mutant is listed in MUTANTS_DOC as "- `<mutant name>`: <reason>".
_EQUIVALENT_LINE = re.compile(r"^- `([^`]+__mutmut_\d+)`", re.MULTILINE)
_RESULT_LINE = re.compile(r"^\s*(\S+__mutmut_\d+): (.+)$", re.MULTILINE)


def _mutant_statuses(c: Context) -> dict[str, str]:
    """Every mutant mutmut knows of, with its status (`mutmut results --all`)."""
    listing = c.run(f"{PY} -m mutmut results --all true", hide=True, pty=False).stdout
    return dict(_RESULT_LINE.findall(listing))


def _module_of(mutant: str) -> str:
    # `eval_banana.harness.scan.x_classify__mutmut_7` -> `eval_banana.harness.scan` (any module)
    return mutant.rsplit(".", 1)[0]


def _print_kill_rates(statuses: dict[str, str]) -> None:
    tried = {name: status for name, status in statuses.items() if status not in NOT_RUN}
    by_module: dict[str, Counter[bool]] = {}
    for name, status in tried.items():
        by_module.setdefault(_module_of(name), Counter())[status in CAUGHT] += 1
    for module, counts in sorted(by_module.items()):
        total = counts[True] + counts[False]
        print(f"{module}: {counts[True]}/{total} caught ({100 * counts[True] / total:.1f}%)")
    caught = sum(1 for status in tried.values() if status in CAUGHT)
    rate = 100 * caught / len(tried) if tried else 0.0
    print(f"Kill rate: {caught}/{len(tried)} mutants caught ({rate:.1f}%)")
    if len(tried) < len(statuses):
        print(f"Not tested (yet): {len(statuses) - len(tried)} mutants")


@task(
    help={
        "workers": "Mutants tested at the same time (default 2; the machine may be shared).",
        "keep": "Reuse the results in mutants/ instead of starting clean.",
        "only": "Test only the mutants matching this mutmut pattern, "
        "e.g. 'eval_banana.runners.fuses*'.",
    }
)
def mutants(c: Context, workers: int = 2, keep: bool = False, only: str = "") -> None:
    """Mutation-test the modules that decide verdicts; fail on a survivor not listed as equivalent.

    The modules and the tests mutmut may use are configured in pyproject.toml ([tool.mutmut]).
    """
    if not keep:
        shutil.rmtree("mutants", ignore_errors=True)
    pattern = f" {only!r}" if only else ""
    c.run(f"nice -n 10 {PY} -m mutmut run --max-children {workers}{pattern}", pty=False)
    statuses = _mutant_statuses(c)
    _print_kill_rates(statuses)
    equivalent = set(_EQUIVALENT_LINE.findall(MUTANTS_DOC.read_text(encoding="utf-8")))
    survivors = {name for name, status in statuses.items() if status not in CAUGHT | NOT_RUN}
    unlisted = sorted(survivors - equivalent)
    # A listed mutant that is now caught (or gone) means the list in the doc is out of date.
    stale = sorted(name for name in equivalent if statuses.get(name, "gone") in CAUGHT | {"gone"})
    print(f"Survivors: {len(survivors)}, {len(survivors & equivalent)} listed as equivalent")
    for name in unlisted:
        print(f"  not killed and not listed as equivalent: {name} ({statuses[name]})")
    for name in stale:
        print(f"  listed as equivalent but {statuses.get(name, 'gone')}: {name}")
    if unlisted or stale:
        hint = f"{PY} -m mutmut show <name>"
        raise Exit(f"Kill each survivor with a test or list it in {MUTANTS_DOC} (see: {hint})")


@task(help={"force": "Reinstall even when the pins have not changed."})
def agents(c: Context, force: bool = False) -> None:
    """Install the pinned real agent CLIs for tests/agents_real (idempotent; see its README)."""
    args = " --force" if force else ""
    c.run(f"{PY} tests/agents_real/install.py{args}", pty=False)


ns = Collection(test, lint, typecheck, schemas, docs, check, demo, bench, mutants, agents)
# Dogfooding: the same collection users add to their own tasks.py.
ns.add_collection(eval_collection)
