"""Benchmark runner (issue 7): time whole `eb` processes against a floor measured in the same call.

    python bench/run.py [--quick] [--only W1,W4] [--runs N] [--write-doc]

Every case runs its floor command and `eb` alternately, several times (after one unmeasured warm-up
of each in full mode), and prints one markdown row: eb median / min / max wall time, eb's own peak
RSS, the floor's median, the ratio of the medians and the target. `--quick` uses tiny sizes, one
run and no warm-up, so CI can prove the suite still works; it never fails on a missed target (the
exit status is non-zero only when the bench itself breaks). Timings never gate CI.

Peak RSS is eb's own: `wait4` would report the largest of eb and its reaped children (Linux folds
descendants into `ru_maxrss`), so eb is started through a tiny `-c` prelude that records
`getrusage(RUSAGE_SELF)` at exit and then runs `eval_banana` exactly as `python -m` does.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import generate, schedule, split  # noqa: E402
from bench.generate import EXCLUDED, FULL, QUICK, Sizes  # noqa: E402

DOC = REPO / "docs" / "performance.md"
SCALE_DOC = REPO / "docs" / "scale-out.md"
SCHEDULE_DOC = REPO / "docs" / "scheduling.md"
TABLE_START = "<!-- bench-table:start -->"
TABLE_END = "<!-- bench-table:end -->"
PROMPT = "Read README.md and answer with a verdict."

# Runs eval_banana like `python -m eval_banana`, then writes its own peak RSS (KB) to argv[1].
EB_PRELUDE = """\
import atexit, sys
_rss_out = sys.argv.pop(1)
def _rss():
    import resource
    with open(_rss_out, "w") as handle:
        handle.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
atexit.register(_rss)
import runpy
runpy.run_module("eval_banana", run_name="__main__", alter_sys=True)
"""

# The same eb command line, run by the eval_banana of another tree (`--against REV`): the tree is
# the current folder, so `python -c` finds its package before the installed one.
AGAINST_PRELUDE = """\
import runpy
runpy.run_module("eval_banana", run_name="__main__", alter_sys=True)
"""

# W2 floor: a pruned walk that lists the check files, in one process.
WALK_FLOOR = """\
import os, sys
excluded = set(sys.argv[2].split(","))
found = []
for top, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = [d for d in dirs if d not in excluded]
    if "eval_checks" in top.split(os.sep):
        found += [os.path.join(top, f) for f in files if f.endswith((".yaml", ".yml"))]
found.sort()
sys.stdout.write("".join(p + "\\n" for p in found))
"""

# W3 floor: the same walk, then libyaml's CSafeLoader on every check file, in one process.
WALK_LOAD_FLOOR = """\
import os, sys, yaml
excluded = set(sys.argv[2].split(","))
docs = []
for top, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = [d for d in dirs if d not in excluded]
    if "eval_checks" in top.split(os.sep):
        for f in files:
            if f.endswith((".yaml", ".yml")):
                with open(os.path.join(top, f), "rb") as handle:
                    docs.append(yaml.load(handle, Loader=yaml.CSafeLoader))
print(len(docs))
"""


# W18 floor: the family's YAML with libyaml and its JSONL dataset with `json`, in one process.
DATASET_FLOOR = """\
import json, sys, yaml
with open(sys.argv[1], "rb") as handle:
    family = yaml.load(handle, Loader=yaml.CSafeLoader)
with open(sys.argv[2], encoding="utf-8") as handle:
    rows = [json.loads(line) for line in handle if line.strip()]
print(family["id"], len(rows))
"""


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b")


@dataclass(frozen=True)
class DocBlock:
    """A marked block of docs that `--write-doc` fills with the rows of some workloads."""

    name: str  # the markers are <!-- NAME:start --> and <!-- NAME:end -->
    keys: frozenset[str] | None  # None: every workload no other block claims
    paths: tuple[Path, ...]


# Each group of workloads has its own table, written by a call of its own (or a full call).
DOC_BLOCKS = (
    DocBlock(name="bench-table", keys=None, paths=(DOC,)),
    DocBlock(name="bench-table-incremental", keys=frozenset({"W7", "W8", "W9"}), paths=(DOC,)),
    DocBlock(name="scale-out-figures", keys=frozenset({"W10", "W11"}), paths=(DOC, SCALE_DOC)),
    DocBlock(name="bench-table-sampling", keys=frozenset({"W12"}), paths=(DOC,)),
    DocBlock(name="isolation-figures", keys=frozenset({"W13", "W14"}), paths=(DOC,)),
    DocBlock(name="bench-table-history", keys=frozenset({"W19", "W23"}), paths=(DOC,)),
    DocBlock(name="schedule-figures", keys=frozenset({"W15", "W16"}), paths=(DOC, SCHEDULE_DOC)),
    DocBlock(name="shared-cache-figures", keys=frozenset({"W17"}), paths=(DOC,)),
    DocBlock(name="bench-table-kept-runs", keys=frozenset({"W26"}), paths=(DOC,)),
    DocBlock(
        name="bench-table-datasets",
        keys=frozenset({"W18", "W20", "W21", "W22", "W24", "W25"}),
        paths=(DOC,),
    ),
)


@dataclass
class Case:
    """One row of the table: an eb command line, its floor and its targets.

    A row meets its target when every bound it sets holds: `target` (eb's median over the
    floor's), `target_over_s` (eb's median minus the floor's), `seconds_target` (eb's median)
    and `memory_target_mb` (eb's own peak RSS).
    """

    key: str
    name: str
    eb_args: list[str]
    floor: list[str]
    floor_label: str
    target: float | None  # ratio of eb's median to the floor's; None: no ratio bound
    expect_rc: int = 0
    # The floor's own exit code: 0, but for an A/B row (the other revision's eb, run as eb is).
    floor_rc: int = 0
    memory_target_mb: float | None = None
    # The target as seconds over the floor's median.
    target_over_s: float | None = None
    # An absolute bound on eb's median wall time.
    seconds_target: float | None = None
    warmup: bool = True  # one unmeasured run of each first (full mode)
    # A run folder whose report.html, written anew by this eb, is timed in Chromium instead of
    # an eb process (eb_args and floor unused; the floor is a static table of as many rows).
    browser_page: Path | None = None
    # A project whose `eb history --html` page is timed in Chromium (opened, filtered to flaky
    # checks) instead of an eb process; the floor is a static table of as many rows.
    history_page: Path | None = None
    history_last: int = 30
    browser_expect_rows: int | None = None
    floor_stdin: Path | None = None
    floor_cwd: Path | None = None  # default: a scratch folder
    floor_stdout_file: bool = False
    expect_stdout_lines: int | None = None
    runs: int = 5
    output_dir: bool = False  # eb run: give every run its own --output-dir, deleted afterwards
    # Run once before anything is measured (e.g. to fill the verdict cache); its exit must be 0.
    prepare: list[str] | None = None
    # Variables set for eb's measured runs (and the warm-up), beside the environment.
    eb_env: dict[str, str] | None = None
    # A file the case's agent appends one line to per start: measured runs must not grow it
    # (or, with `agent_starts_per_run`, each eb run must grow it by exactly that many lines).
    agent_log: Path | None = None
    agent_starts_per_run: int | None = None
    # Called with the run's index before every eb run (the warm-up is -1), outside the timing:
    # W22 edits one dataset row there.
    before_eb: Callable[[int], object] | None = None
    # Call `before_eb` again between the floor and eb: an A/B floor is eb too, and would
    # otherwise leave eb nothing of the edit to do (it stores the edited row's verdict).
    again_before_eb: bool = False
    # eb prints its report as JSON (`--json`): this many checks must have been reused.
    expect_cached: int | None = None
    # Also time writing this many small files atomically (a result file per check, as a run
    # that ran every check writes them), on the same file system in the same call: how much
    # of eb's time creating files would be; a cached run links its result files instead.
    file_probe: int | None = None
    # Also time a plain file copy of this project as a judge's disposable workspace (made,
    # compared, removed), in the same call: what `copy` costs where there is no overlay.
    copy_probe: Path | None = None


@dataclass
class Sample:
    seconds: float
    rc: int
    rss_kb: int | None
    timed_out: bool = False


@dataclass
class Row:
    case: Case
    eb: list[Sample] = field(default_factory=list)
    floor: list[Sample] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    probe_s: float | None = None
    copy_probe: tuple[float, int, str] | None = None  # seconds, files, method actually used
    # The 1-minute load average when the row started and ended: the machine is shared.
    load_start: float = 0.0
    load_end: float = 0.0
    # Lines for the notes under the table (what a row measured beside its timings).
    notes: list[str] = field(default_factory=list)


# Measuring ------------------------------------------------------------------------------------


def settle() -> None:
    """Write back what earlier samples left dirty, so no sample pays for another's files.

    Samples run back to back, and the ones that write (a run folder of thousands of files)
    would otherwise make the next sample, eb's or its floor's, wait on their write-back: a
    cached run of 1,000 checks measured a third slower, and one file took ten times as long
    to create, than on a file system with nothing pending (as a CI job starts).
    """
    os.sync()


def measure(
    *,
    argv: Sequence[str],
    cwd: Path,
    stdout_path: Path | None,
    stdin_path: Path | None,
    stderr_path: Path | None,
    timeout: float,
    env: dict[str, str] | None = None,
) -> tuple[float, int, int, bool]:
    """Wall seconds, exit code, wait4 ru_maxrss (KB) and whether the timeout killed it."""
    settle()
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL  # noqa: SIM115
    stdout = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL  # noqa: SIM115
    stderr = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL  # noqa: SIM115
    killed = threading.Event()
    try:
        start = time.perf_counter()
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            env=None if env is None else {**os.environ, **env},
        )

        def kill() -> None:
            killed.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        elapsed = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
    finally:
        for handle in (stdin, stdout, stderr):
            if not isinstance(handle, int):
                handle.close()
    return elapsed, process.returncode, usage.ru_maxrss, killed.is_set()


def _empty_caches(*projects: Path) -> None:
    """Remove the projects' verdict caches (their default folders), outside any timing."""
    for project in projects:
        shutil.rmtree(project / ".eval-banana" / "cache", ignore_errors=True)


def run_eb(*, case: Case, scratch: Path, index: int, timeout: float) -> Sample:
    """One eb process; its own peak RSS comes from the prelude's file."""
    rss_file = scratch / "eb.rss"
    rss_file.unlink(missing_ok=True)
    extra: list[str] = []
    out_dir = scratch / f"out-{index}"
    if case.output_dir:
        extra = ["--output-dir", str(out_dir)]
    argv = [sys.executable, "-c", EB_PRELUDE, str(rss_file), *case.eb_args, *extra]
    seconds, rc, _, timed_out = measure(
        argv=argv,
        cwd=REPO,
        stdout_path=scratch / "eb.stdout",
        stdin_path=None,
        stderr_path=scratch / "eb.stderr",
        timeout=timeout,
        env=case.eb_env,
    )
    shutil.rmtree(out_dir, ignore_errors=True)
    rss = int(rss_file.read_text()) if rss_file.is_file() and rss_file.read_text() else None
    return Sample(seconds=seconds, rc=rc, rss_kb=rss, timed_out=timed_out)


FLOOR_OUT = "floor-out"


def run_floor(*, case: Case, scratch: Path, timeout: float) -> Sample:
    # "{scratch}" in the floor's arguments: a folder deleted with the case's scratch space.
    seconds, rc, rss, timed_out = measure(
        argv=[arg.replace("{scratch}", str(scratch)) for arg in case.floor],
        cwd=case.floor_cwd or scratch,
        stdout_path=scratch / "floor.stdout" if case.floor_stdout_file else None,
        stdin_path=case.floor_stdin,
        stderr_path=scratch / "floor.stderr",
        timeout=timeout,
    )
    (scratch / "floor.stdout").unlink(missing_ok=True)
    # An eb floor's run folders (`--output-dir {scratch}/floor-out`) go after each run, as
    # eb's own do: each side then writes into a new folder beside the other's, and neither
    # pays for a folder the other left (on some disks a new folder's files cost ten times
    # more in one place than in another).
    shutil.rmtree(scratch / FLOOR_OUT, ignore_errors=True)
    return Sample(seconds=seconds, rc=rc, rss_kb=rss, timed_out=timed_out)


def _eb_problems(*, case: Case, sample: Sample, scratch: Path) -> list[str]:
    """What makes an eb sample not count: wrong exit code, timeout, wrong output."""
    problems: list[str] = []
    if sample.timed_out:
        problems.append("eb timed out")
    elif sample.rc != case.expect_rc:
        tail = (scratch / "eb.stderr").read_text(errors="replace").strip().splitlines()[-3:]
        problems.append(f"eb exit {sample.rc}, expected {case.expect_rc}: " + " | ".join(tail))
    stderr = (scratch / "eb.stderr").read_text(errors="replace")
    if "Traceback (most recent call last)" in stderr:
        raised = [line for line in stderr.splitlines() if _EXCEPTION_LINE.match(line)]
        problems.append("eb printed a traceback: " + (raised[-1] if raised else "?"))
    if case.expect_cached is not None and not sample.timed_out and sample.rc == case.expect_rc:
        try:
            cached = json.loads((scratch / "eb.stdout").read_bytes()).get("cached_checks")
        except ValueError:
            cached = None
        if cached != case.expect_cached:
            problems.append(f"eb reused {cached} verdicts, expected {case.expect_cached}")
    if case.expect_stdout_lines is not None and not sample.timed_out:
        lines = len((scratch / "eb.stdout").read_text(errors="replace").splitlines())
        if lines != case.expect_stdout_lines:
            problems.append(f"eb printed {lines} lines, expected {case.expect_stdout_lines}")
    return problems


def _w23_cases(*, root: Path, sizes: Sizes, n: Callable[[int], int]) -> list[Case]:
    """The history page over W19's folder: written for the default window (30 runs) and for
    every run, then opened and filtered in Chromium."""
    project = root / "project"
    folder = project / ".eval-banana" / "history"
    py = sys.executable
    cases = []
    for last in (30, sizes.w19_runs):
        size = f"{last} runs x {sizes.w19_checks} checks"
        cases.append(
            Case(
                key="W23",
                name=f"eb history --html, {size}: write",
                eb_args=[
                    "history",
                    "--cwd",
                    str(project),
                    "--last",
                    str(last),
                    "--html",
                    str(root / f"history-{last}.html"),
                ],
                floor=[py, "-c", HISTORY_ALL_FLOOR, str(folder), str(last)],
                floor_label=f"json.loads of the {last} newest records",
                target=None,
                seconds_target=2,
                runs=n(3),
            )
        )
        cases.append(
            Case(
                key="W23",
                name=f"history page, {size}: open, filter to flaky",
                eb_args=[],
                floor=[],
                floor_label="static HTML table of as many rows",
                target=None,
                seconds_target=2,
                history_page=project,
                history_last=last,
                runs=n(3),
            )
        )
    return cases


def bench_case(*, case: Case, runs: int, warmup: bool, timeout: float) -> Row:
    """Floor and eb alternately, so both see the same machine state."""
    if case.browser_page is not None:
        return bench_browser(case=case, runs=runs, warmup=warmup)
    if case.history_page is not None:
        return bench_history_browser(case=case, runs=runs, warmup=warmup)
    warmup = warmup and case.warmup
    row = Row(case=case, load_start=os.getloadavg()[0])
    scratch = Path(tempfile.mkdtemp(prefix=f"eb-bench-{case.key}-"))
    try:
        if case.prepare is not None:
            # "{scratch}" in the arguments: a folder deleted with the case's scratch space.
            argv = [arg.replace("{scratch}", str(scratch)) for arg in case.prepare]
            prepared = subprocess.run(
                [sys.executable, "-m", "eval_banana", *argv],
                cwd=REPO,
                capture_output=True,
                timeout=timeout,
            )
            if prepared.returncode != 0:
                tail = prepared.stderr.decode(errors="replace").strip().splitlines()[-3:]
                row.problems.append(f"prepare exit {prepared.returncode}: " + " | ".join(tail))
        if warmup:
            if case.before_eb is not None:
                case.before_eb(-1)
            run_floor(case=case, scratch=scratch, timeout=timeout)
            if case.before_eb is not None and case.again_before_eb:
                case.before_eb(-1)
            run_eb(case=case, scratch=scratch, index=0, timeout=timeout)
        starts = _lines(case.agent_log)
        for index in range(runs):
            if case.before_eb is not None:
                case.before_eb(index)
            floor = run_floor(case=case, scratch=scratch, timeout=timeout)
            if floor.rc != case.floor_rc or floor.timed_out:
                row.problems.append(f"floor exit {floor.rc}")
            row.floor.append(floor)
            if case.before_eb is not None and case.again_before_eb:
                case.before_eb(index)
            before = _lines(case.agent_log)
            sample = run_eb(case=case, scratch=scratch, index=index, timeout=timeout)
            row.eb.append(sample)
            expected = case.agent_starts_per_run
            started_now = _lines(case.agent_log) - before
            if expected is not None and started_now != expected:
                problem = f"eb started {started_now} agents in a run, expected {expected}"
                if problem not in row.problems:
                    row.problems.append(problem)
            for problem in _eb_problems(case=case, sample=sample, scratch=scratch):
                if problem not in row.problems:
                    row.problems.append(problem)
            if sample.timed_out:
                break  # one timeout says enough; do not spend runs * timeout on it
        if case.file_probe:
            row.probe_s = statistics.median(
                file_probe(folder=scratch / f"probe-{n}", count=case.file_probe) for n in range(3)
            )
        if case.copy_probe is not None:
            row.copy_probe = workspace_probe(project=case.copy_probe)
        started = _lines(case.agent_log) - starts
        if started and case.agent_starts_per_run is None:
            row.problems.append(f"an agent was started {started} times by the measured runs")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    row.load_end = os.getloadavg()[0]
    return row


def file_probe(*, folder: Path, count: int) -> float:
    """Seconds to write `count` small files through a temporary sibling and a rename."""
    folder.mkdir()
    data = b'{"check_id": "x", "status": "passed"}' * 20
    settle()
    start = time.perf_counter()
    for index in range(count):
        temp = folder / f".r{index}.tmp"
        with open(temp, "xb") as handle:
            handle.write(data)
        os.replace(temp, folder / f"r{index}.json")
    elapsed = time.perf_counter() - start
    shutil.rmtree(folder)
    return elapsed


def workspace_probe(*, project: Path) -> tuple[float, int, str]:
    """Seconds of one plain-copy workspace of `project` (its state read once, outside the
    timing), made, compared with the project and removed; the file count; the method. One
    run: at 60,000 files on a slow file system it takes minutes."""
    from eval_banana.isolation.workspace import make_workspace
    from eval_banana.projectstate.reading import read_project_state

    state = read_project_state(root=project, excluded_names=EXCLUDED)
    times = []
    method = "copy"
    for _ in range(1):
        start = time.perf_counter()
        workspace = make_workspace(root=Path(state.root), paths=state.paths, method="copy")
        method = workspace.method
        changes = workspace.changes()
        workspace.remove()
        times.append(time.perf_counter() - start)
        if changes:
            raise RuntimeError(f"a fresh copy differs from the project: {changes[:3]}")
    return statistics.median(times), len(state.paths), method


def _lines(path: Path | None) -> int:
    if path is None or not path.is_file():
        return 0
    return len(path.read_text().splitlines())


# report.html in headless Chromium ------------------------------------------------------------

CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,900",
)
# Resolves once the frame after the current one has begun: by then the page as it stands (laid
# out, filtered) has been painted, which is what a reader waits for.
NEXT_FRAME = (
    "var done = arguments[arguments.length - 1];"
    "requestAnimationFrame(function () { requestAnimationFrame(function () { done(); }); });"
)
# Counted after the clock stops (asking every row for its layout would itself force one): the
# check rows a reader sees.
VISIBLE_ROWS = (
    "return Array.from(document.querySelectorAll('tr.r'))"
    ".filter(function (r) { return r.offsetParent !== null; }).length;"
)
FAILED_FILTER = '#status-filter button[data-g="failed"]'


def static_table(*, rows: int, path: Path) -> Path:
    """The floor page: as many plain table rows, no style, no script, no data blob."""
    body = "".join(
        f"<tr><td>check_{i:05d}</td><td>passed</td><td>deterministic</td><td>bench</td>"
        f"<td>5 ms</td></tr>"
        for i in range(rows)
    )
    path.write_text(
        f"<!DOCTYPE html><html><body><table><tbody>{body}</tbody></table></body></html>"
    )
    return path


def open_and_filter(*, driver: Any, page: Path, click: str | None) -> tuple[float, int]:
    """Seconds from asking for the page to the painted frame after clicking the filter `click`
    (a CSS selector; None: no click), and how many check rows are then visible."""
    from selenium.webdriver.common.by import By

    start = time.perf_counter()
    driver.get(page.as_uri())  # returns after the load event
    if click is not None:
        driver.find_element(By.CSS_SELECTOR, click).click()
    driver.execute_async_script(NEXT_FRAME)
    elapsed = time.perf_counter() - start
    return elapsed, int(driver.execute_script(VISIBLE_ROWS))


def current_page(*, run_dir: Path, path: Path) -> Path:
    """report.html of a cached run as this eb writes it (the cached copy may be older)."""
    from eval_banana.reporting.html import write_html

    report = json.loads((run_dir / "report.json").read_bytes())
    write_html(report=report, run_dir=run_dir, path=path)
    return path


@contextlib.contextmanager
def chromium(*, profile: Path) -> Iterator[Any]:
    """One headless Chromium driven by chromedriver; RuntimeError says what is missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as missing:
        raise RuntimeError("selenium is not installed (pip install -e '.[dev]')") from missing
    if not CHROMEDRIVER.exists() or shutil.which("chromium") is None:
        raise RuntimeError("chromium and chromedriver are needed (apt-get install chromium)")
    options = webdriver.ChromeOptions()
    for argument in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_script_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()


def bench_browser(*, case: Case, runs: int, warmup: bool) -> Row:
    """report.html opened and filtered to its failed checks, against a static table of as many
    rows, alternately in one headless Chromium (its start-up is not counted)."""
    row = Row(case=case, load_start=os.getloadavg()[0])
    assert case.browser_page is not None
    scratch = Path(tempfile.mkdtemp(prefix="eb-bench-browser-"))
    try:
        with chromium(profile=scratch / "profile") as driver:
            page = current_page(run_dir=case.browser_page, path=scratch / "report.html")
            rows = len(json.loads((case.browser_page / "report.json").read_bytes())["checks"])
            floor_page = static_table(rows=rows, path=scratch / "floor.html")
            if warmup:
                open_and_filter(driver=driver, page=floor_page, click=None)
                open_and_filter(driver=driver, page=page, click=FAILED_FILTER)
            for _ in range(runs):
                seconds, _ = open_and_filter(driver=driver, page=floor_page, click=None)
                row.floor.append(Sample(seconds=seconds, rc=0, rss_kb=None))
                seconds, shown = open_and_filter(driver=driver, page=page, click=FAILED_FILTER)
                row.eb.append(Sample(seconds=seconds, rc=0, rss_kb=None))
                expected = case.browser_expect_rows
                problem = f"the failed filter showed {shown} rows, expected {expected}"
                if shown != expected and problem not in row.problems:
                    row.problems.append(problem)
    except RuntimeError as missing:
        row.problems.append(str(missing))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    row.load_end = os.getloadavg()[0]
    return row


FLAKY_FILTER = "#flaky-filter"
# The history page's rows its data marks flaky: what the flaky filter must leave shown.
FLAKY_ROWS = (
    "return JSON.parse(document.getElementById('eb-history').textContent)"
    ".checks.filter(function (c) { return c.k; }).length;"
)


def history_page(*, project: Path, last: int, path: Path) -> Path:
    """`eb history --html` of `project`'s history, as this eb writes it."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "eval_banana",
            "history",
            "--cwd",
            str(project),
            "--last",
            str(last),
            "--html",
            str(path),
        ],
        check=True,
        capture_output=True,
    )
    return path


def bench_history_browser(*, case: Case, runs: int, warmup: bool) -> Row:
    """The history page opened and filtered to its flaky checks, against a static table of
    as many rows, alternately in one headless Chromium (its start-up is not counted)."""
    from selenium.webdriver.common.by import By

    row = Row(case=case, load_start=os.getloadavg()[0])
    assert case.history_page is not None
    scratch = Path(tempfile.mkdtemp(prefix="eb-bench-history-"))
    try:
        page = history_page(
            project=case.history_page, last=case.history_last, path=scratch / "history.html"
        )
        with chromium(profile=scratch / "profile") as driver:
            driver.get(page.as_uri())
            rows = len(driver.find_elements(By.CSS_SELECTOR, "#checks tr.r"))
            floor_page = static_table(rows=rows, path=scratch / "floor.html")
            for turn in range(runs + (1 if warmup else 0)):
                floor_s, _ = open_and_filter(driver=driver, page=floor_page, click=None)
                seconds, shown = open_and_filter(driver=driver, page=page, click=FLAKY_FILTER)
                if warmup and turn == 0:
                    continue
                row.floor.append(Sample(seconds=floor_s, rc=0, rss_kb=None))
                row.eb.append(Sample(seconds=seconds, rc=0, rss_kb=None))
                expected = driver.execute_script(FLAKY_ROWS)
                problem = f"the flaky filter showed {shown} rows, expected {expected}"
                if shown != expected and problem not in row.problems:
                    row.problems.append(problem)
    except (RuntimeError, subprocess.CalledProcessError) as missing:
        row.problems.append(str(missing))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    row.load_end = os.getloadavg()[0]
    return row


# W23 floor: what the page over every record must read at least, each parsed by plain json.
HISTORY_ALL_FLOOR = """\
import json, os, sys
folder = sys.argv[1]
for name in sorted(os.listdir(folder))[-int(sys.argv[2]):]:
    with open(os.path.join(folder, name), "rb") as handle:
        json.loads(handle.read())
"""


# W19 floor: what `eb history` must read at least, the window's records parsed by plain json.
HISTORY_FLOOR = """\
import json, os, sys
folder = sys.argv[1]
for name in sorted(os.listdir(folder))[-30:]:
    with open(os.path.join(folder, name), "rb") as handle:
        json.loads(handle.read())
"""


# W10 floors: the same data read (and, for the merge, written) by plain json, in one process.
MERGE_FLOOR = """\
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
plans, results = [], []
for folder in sys.argv[2:]:
    plans += json.loads((Path(folder) / "stages" / "plan.json").read_bytes())["checks"]
    results += json.loads((Path(folder) / "stages" / "execute.json").read_bytes())["results"]
out.mkdir(parents=True, exist_ok=True)
(out / "plan.json").write_text(json.dumps({"checks": plans}, indent=2, sort_keys=True))
(out / "execute.json").write_text(json.dumps({"results": results}, indent=2, sort_keys=True))
"""
DIFF_FLOOR = """\
import json, sys
base, head = (json.loads(open(p + "/report.json", "rb").read()) for p in sys.argv[1:3])
ids = {c["check_id"]: c["status"] for c in base["checks"]}
print(sum(1 for c in head["checks"] if ids.get(c["check_id"], "passed") != c["status"]))
"""


# Cases ----------------------------------------------------------------------------------------


def cases_for(*, key: str, sizes: Sizes, runs: int | None) -> list[Case]:
    """The cases of one workload (generating it first if needed)."""
    root = generate.workload(key=key, sizes=sizes)
    py = sys.executable
    full = sizes is FULL

    def n(default: int) -> int:
        return runs if runs is not None else (default if full else 1)

    excluded = ",".join(EXCLUDED)
    if key == "W0":
        return [
            Case(
                key="W0",
                name="eb validate, 1 check",
                eb_args=["validate", "--cwd", str(root)],
                floor=[py, "-c", "pass"],
                floor_label="python -c pass",
                target=8,
                runs=n(15),
            )
        ]
    if key == "W1":
        project = root / "project"
        return [
            Case(
                key="W1",
                name=f"eb run, {sizes.w1_checks} trivial checks, parallel 4",
                eb_args=["run", "--cwd", str(project), "--max-parallel-checks", "4"],
                floor=["xargs", "-P", "4", "-n", "1", py],
                floor_label=f"{sizes.w1_checks} python launches, xargs -P 4",
                floor_stdin=root / "floor-list.txt",
                floor_cwd=root,
                target=1.15,
                output_dir=True,
                runs=n(5),
            )
        ]
    if key == "W2":
        project = root / "project"
        expected = int((root / "expected-checks.txt").read_text())
        floor = [py, "-c", WALK_FLOOR, str(project), excluded]
        label = f"os.walk, pruned ({sizes.w2_files} files)"
        return [
            Case(
                key="W2",
                name=f"eb list, {sizes.w2_files} files, {expected} checks",
                eb_args=["list", "--cwd", str(project)],
                floor=floor,
                floor_label=label,
                floor_stdout_file=True,
                target=2.5,
                expect_stdout_lines=expected,
                runs=n(5),
            ),
            Case(
                key="W2",
                name=f"eb validate, {sizes.w2_files} files, {expected} checks",
                eb_args=["validate", "--cwd", str(project)],
                floor=floor,
                floor_label=label,
                floor_stdout_file=True,
                target=2.5,
                runs=n(5),
            ),
        ]
    if key == "W3":
        project = root / "project"
        selected = (root / "selected-id.txt").read_text().strip()
        floor = [py, "-c", WALK_LOAD_FLOOR, str(project), excluded]
        label = f"walk + CSafeLoader x {sizes.w3_checks}"
        missing = [f"--check-id=gone_{index:05d}" for index in range(min(300, sizes.w3_checks))]
        return [
            Case(
                key="W3",
                name=f"eb validate, {sizes.w3_checks} check files",
                eb_args=["validate", "--cwd", str(project)],
                floor=floor,
                floor_label=label,
                target=1.5,
                runs=n(5),
            ),
            Case(
                key="W3",
                name=f"eb run --check-id, 1 of {sizes.w3_checks}",
                eb_args=["run", "--cwd", str(project), "--check-id", selected],
                floor=floor,
                floor_label=label,
                target=1.5,
                output_dir=True,
                runs=n(5),
            ),
            # Ids of another commit, none of them here: each is told (exit 2), and every file's
            # id is read once for all of them, not once per id (300 took 30 s).
            Case(
                key="W3",
                name=f"eb validate --check-id, {len(missing)} ids that name no check",
                eb_args=["validate", "--cwd", str(project), *missing],
                floor=[py, "-m", "eval_banana", "validate", "--cwd", str(project)],
                floor_label="eb validate, every file",
                floor_cwd=REPO,
                target=1.5,
                expect_rc=2,
                runs=n(5),
            ),
        ]
    if key == "W4":
        rows = []
        for name, command, _, expect_rc in generate.w4_cases(sizes=sizes):
            project = generate.w4_project(root=root, case=name)
            big = name == _largest_stream(sizes)
            rows.append(
                Case(
                    key="W4",
                    name=f"judge, {name}",
                    eb_args=["run", "--cwd", str(project)],
                    floor=["sh", "-c", '"$@" | wc -c', "sh", *command, PROMPT],
                    floor_label="agent \\| wc -c",
                    target=3,
                    expect_rc=expect_rc,
                    memory_target_mb=64 if big else None,
                    output_dir=True,
                    runs=n(3 if big else 5),
                )
            )
            if big:
                # Transcripts are on by default: the same judge with them off is the floor.
                off = ["env", "EVAL_BANANA_HARNESS_TRANSCRIPTS=0", py, "-m", "eval_banana"]
                rows.append(
                    Case(
                        key="W4",
                        name=f"judge, {name}, transcript recorded",
                        eb_args=["run", "--cwd", str(project)],
                        floor=[*off, "run", "--cwd", str(project), "--output-dir", "{scratch}/off"],
                        floor_label="the same eb run, [harness] transcripts = false",
                        floor_cwd=REPO,
                        target=1.2,
                        expect_rc=expect_rc,
                        memory_target_mb=64,
                        output_dir=True,
                        runs=n(5),
                    )
                )
        page = root / generate.W4_PAGE
        judges = generate.w4_page_judges(sizes=sizes)
        rows.append(
            Case(
                key="W4",
                name=f"report.html of {judges} judges with transcripts: open, filter to failed",
                eb_args=[],
                floor=[],
                floor_label="static HTML table of as many rows",
                target=None,
                seconds_target=2,
                browser_page=page,
                browser_expect_rows=sum(1 for index in range(judges) if index % 10 == 0),
                runs=n(5),
            )
        )
        return rows
    if key == "W5":
        project = root / "project"
        script = project / "eval_checks" / "loud.py"
        return [
            Case(
                key="W5",
                name=f"deterministic check printing {sizes.w5_bytes // generate.MB} MB",
                eb_args=["run", "--cwd", str(project)],
                floor=[py, str(script), "context.json"],
                floor_label="script > file",
                floor_stdout_file=True,
                target=1.5,
                memory_target_mb=64,
                output_dir=True,
                runs=n(3),
            )
        ]
    if key == "W6":
        project = root / "project"
        command = generate.w6_agent_command(sizes=sizes)
        prompts = root / "prompts.txt"
        return [
            Case(
                key="W6",
                name=f"{sizes.w6_judges} judges sleeping {sizes.w6_sleep} s, parallel {parallel}",
                eb_args=["run", "--cwd", str(project), "--max-parallel-checks", str(parallel)],
                floor=["xargs", "-P", str(parallel), "-n", "1", *command],
                floor_label=f"{sizes.w6_judges} agents, xargs -P {parallel}",
                floor_stdin=prompts,
                target=1.2,
                output_dir=True,
                runs=n(3),
            )
            for parallel in sizes.w6_parallel
        ]
    if key == "W7":
        project = root / "project"
        out = "{scratch}/prepare-out"
        cached = Case(
            key="W7",
            name=f"eb run, {sizes.w7_judges} judges, all cached",
            eb_args=["run", "--cwd", str(project), "--json"],
            floor=[py, "-m", "eval_banana", "validate", "--cwd", str(project)],
            floor_label="eb validate, same project",
            floor_cwd=REPO,
            target=1.5,
            output_dir=True,
            prepare=["run", "--cwd", str(project), "--output-dir", out],
            agent_log=generate.w7_agent_log(root=root),
            expect_cached=sizes.w7_judges,
            file_probe=sizes.w7_judges,
            runs=n(5),
        )
        # The same run with no replay kept or used: each verdict looked up one by one, as a
        # run does when some check must run (no bound of its own; it shows the path).
        looked_up = replace(
            cached,
            name=f"{cached.name}, [cache] replay = false",
            target=None,
            prepare=None,
            file_probe=None,
            eb_env={"EVAL_BANANA_CACHE_REPLAY": "false"},
        )
        return [cached, looked_up]
    if key in ("W8", "W9"):
        project = root / "project"
        checks = int((root / "expected-checks.txt").read_text())
        if key == "W8":
            out = "{scratch}/prepare-out"
            alone = generate.w8_keying_check(root=root)
            return [
                Case(
                    key="W8",
                    name=f"eb run --check-id, git tree of {sizes.w2_files} files, "
                    f"{sizes.w8_modified} modified: keying the whole tree, 1 check cached",
                    eb_args=["run", "--cwd", str(project), "--check-id", alone, "--json"],
                    floor=[
                        py,
                        "-m",
                        "eval_banana",
                        "validate",
                        "--cwd",
                        str(project),
                        "--check-id",
                        alone,
                    ],
                    floor_label="eb validate --check-id, same tree",
                    floor_cwd=REPO,
                    target=None,
                    target_over_s=0.5,
                    output_dir=True,
                    prepare=["run", "--cwd", str(project), "--output-dir", out],
                    expect_cached=1,
                    runs=n(5),
                ),
                Case(
                    key="W8",
                    name=f"eb run, git tree of {sizes.w2_files} files, "
                    f"{sizes.w8_modified} modified, {checks} checks cached",
                    eb_args=["run", "--cwd", str(project), "--json"],
                    floor=[py, "-m", "eval_banana", "validate", "--cwd", str(project)],
                    floor_label="eb validate, same tree",
                    floor_cwd=REPO,
                    target=None,
                    target_over_s=0.5,
                    output_dir=True,
                    prepare=["run", "--cwd", str(project), "--output-dir", out],
                    expect_cached=checks,
                    file_probe=checks,
                    runs=n(5),
                ),
            ]
        return [
            Case(
                key="W9",
                name=f"eb list --changed-since HEAD, git tree of {sizes.w2_files} files",
                eb_args=["list", "--cwd", str(project), "--changed-since", "HEAD"],
                floor=[py, "-m", "eval_banana", "list", "--cwd", str(project)],
                floor_label="eb list, same tree",
                floor_cwd=REPO,
                target=1.5,
                runs=n(5),
            )
        ]
    if key == "W10":
        runs_dir = root / "runs"
        shards = [str(path) for path in generate.w10_shard_dirs(root=root, sizes=sizes)]
        head = root / "project-head"
        return [
            Case(
                key="W10",
                name=f"eb merge, {sizes.w10_shards} shards of {sizes.w10_checks} checks",
                eb_args=["merge", *shards, "--cwd", str(head)],
                floor=[py, "-c", MERGE_FLOOR, str(root / "floor-out"), *shards],
                floor_label="json load + dump of the shards' plans and results",
                target=None,
                seconds_target=2,
                memory_target_mb=200,
                expect_rc=1,
                output_dir=True,
                runs=n(5),
            ),
            # `eb plan` validates as `eb validate` does and adds per check a cache status and
            # history's expectations, and a JSON document: no more than half again as long.
            Case(
                key="W10",
                name=f"eb plan --format json, {sizes.w10_checks} checks",
                eb_args=["plan", "--cwd", str(root / "project-base"), "--format", "json"],
                floor=[py, "-m", "eval_banana", "validate", "--cwd", str(root / "project-base")],
                floor_label="eb validate, same project",
                floor_cwd=REPO,
                target=1.5,
                runs=n(5),
            ),
            Case(
                key="W10",
                name=f"eb diff, two runs of {sizes.w10_checks} checks",
                eb_args=["diff", str(runs_dir / "base"), str(runs_dir / "merged")],
                floor=[py, "-c", DIFF_FLOOR, str(runs_dir / "base"), str(runs_dir / "merged")],
                floor_label="json load of both reports",
                target=None,
                seconds_target=1,
                expect_rc=1,
                runs=n(5),
            ),
        ]
    if key == "W11":
        base_run = root / "runs" / "base"
        statuses = [check["status"] for check in _report(base_run)["checks"]]
        failed = statuses.count("failed")
        return [
            Case(
                key="W11",
                name=f"eb run, {sizes.w10_checks} trivial checks, parallel 4",
                eb_args=["run", "--cwd", str(root / "project-base"), "--max-parallel-checks", "4"],
                floor=["xargs", "-P", "4", "-n", "1", py],
                floor_label=f"{sizes.w10_checks} python launches, xargs -P 4",
                floor_stdin=root / "floor-list.txt",
                floor_cwd=root,
                target=1.15,
                memory_target_mb=150,
                expect_rc=1 if failed else 0,
                output_dir=True,
                warmup=False,  # minutes per run at full size
                runs=n(1),
            ),
            Case(
                key="W11",
                name=f"report.html of {sizes.w10_checks} checks: open, filter to failed",
                eb_args=[],
                floor=[],
                floor_label="static HTML table of as many rows",
                target=None,
                seconds_target=2,
                browser_page=base_run,
                browser_expect_rows=failed,
                runs=n(5),
            ),
        ]
    if key == "W12":
        project = root / "project"
        parallel = sizes.w12_parallel
        processes = sizes.w12_judges * sizes.w12_repeats
        return [
            Case(
                key="W12",
                name=f"{sizes.w12_judges} judges x repeats {sizes.w12_repeats} sleeping "
                f"{sizes.w12_sleep} s, parallel {parallel}",
                eb_args=["run", "--cwd", str(project), "--max-parallel-checks", str(parallel)],
                floor=[
                    "xargs",
                    "-P",
                    str(parallel),
                    "-n",
                    "1",
                    *generate.w12_agent_command(sizes=sizes),
                ],
                floor_label=f"{processes} agents, xargs -P {parallel}",
                floor_stdin=root / "prompts.txt",
                target=1.2,
                output_dir=True,
                runs=n(3),
            )
        ]
    if key == "W19":
        project = root / "project"
        return [
            Case(
                key="W19",
                name=f"eb history, {sizes.w19_runs} runs x {sizes.w19_checks} checks",
                eb_args=["history", "--cwd", str(project)],
                floor=[py, "-c", HISTORY_FLOOR, str(project / ".eval-banana" / "history")],
                floor_label="json.loads of the 30 newest records",
                target=None,
                seconds_target=1,
                runs=n(5),
            )
        ]
    if key == "W23":
        return _w23_cases(root=root, sizes=sizes, n=n)
    if key == "W13":
        return _w13_cases(root=root, sizes=sizes, n=n)
    if key in ("W15", "W16"):
        return _schedule_cases(key=key, root=root, sizes=sizes, n=n)
    if key == "W18":
        project = root / "project"
        asked = [
            f"--check-id=qa_judge[{generate.w18_case_id(index)}]"
            for index in range(0, sizes.w18_cases, 10)
        ]
        return [
            Case(
                key="W18",
                name=f"eb validate, one family of {sizes.w18_cases} JSONL cases",
                eb_args=["validate", "--cwd", str(project)],
                floor=[
                    py,
                    "-c",
                    DATASET_FLOOR,
                    str(project / "eval_checks" / "qa_judge.yaml"),
                    str(project / "data" / "qa.jsonl"),
                ],
                floor_label="CSafeLoader + json, one family",
                target=1.5,
                runs=n(5),
            ),
            # Every tenth case asked for by id, as a script that reruns a list of cases does:
            # each value is looked up, not matched against every case (it was 7 s at 1,000).
            Case(
                key="W18",
                name=f"eb validate --check-id, {len(asked)} case ids of the same family",
                eb_args=["validate", "--cwd", str(project), *asked],
                floor=[py, "-m", "eval_banana", "validate", "--cwd", str(project)],
                floor_label="eb validate, the whole family",
                floor_cwd=REPO,
                target=1.5,
                runs=n(5),
            ),
        ]
    if key == "W20":
        return [
            Case(
                key="W20",
                name=f"eb run, one family of {sizes.w20_cases} trivial deterministic cases, "
                "parallel 4",
                eb_args=["run", "--cwd", str(root / "project"), "--max-parallel-checks", "4"],
                floor=["xargs", "-P", "4", "-n", "1", py],
                floor_label=f"{sizes.w20_cases} python launches, xargs -P 4",
                floor_stdin=root / "floor-list.txt",
                floor_cwd=root,
                target=1.15,
                memory_target_mb=150,
                output_dir=True,
                warmup=False,  # minutes per run at full size
                runs=n(1),
            )
        ]
    if key in ("W21", "W22"):
        return _w21_cases(key=key, root=root, sizes=sizes, n=n)
    if key == "W24":
        # Cache off: the artifact parsed once for every case; `--cache refresh`: also keyed,
        # and checked once more as each verdict is stored, once for all the cases.
        size = generate._human(sizes.w24_artifact_bytes)
        cases = []
        for cache, what in (("off", ""), ("refresh", ", every verdict stored")):
            run = ["run", "--cache", cache, "--max-parallel-checks", "4"]
            # Each pair stores into empty caches: a cache that grew run by run on one side
            # (its blobs differ by their times) made this case's ratio scatter.
            emptied = (
                (lambda _run: _empty_caches(root / "project", root / "floor-project"))
                if cache == "refresh"
                else None
            )
            cases.append(
                Case(
                    key="W24",
                    name=f"eb run, one assertions family of {sizes.w24_cases} cases grading one "
                    f"{size} artifact{what}",
                    eb_args=[*run, "--cwd", str(root / "project")],
                    floor=[
                        sys.executable,
                        "-m",
                        "eval_banana",
                        *run,
                        "--cwd",
                        str(root / "floor-project"),
                        "--output-dir",
                        f"{{scratch}}/{FLOOR_OUT}",
                    ],
                    floor_label="eb run, same family, an artifact of the prices alone",
                    floor_cwd=REPO,
                    target=1.25,
                    output_dir=True,
                    runs=n(5),
                    before_eb=emptied,
                )
            )
        return cases
    if key == "W25":
        # Assertions run in eb's process: more workers must not make them slower.
        project = str(root / "project")
        run = [sys.executable, "-m", "eval_banana", "run", "--cache", "off", "--cwd", project]
        return [
            Case(
                key="W25",
                name=f"eb run, one assertions family of {sizes.w25_cases} cases, cache off, "
                "max_parallel_checks 4",
                eb_args=[*run[3:], "--max-parallel-checks", "4"],
                floor=[
                    *run,
                    "--max-parallel-checks",
                    "1",
                    "--output-dir",
                    f"{{scratch}}/{FLOOR_OUT}",
                ],
                floor_label="the same run, max_parallel_checks 1",
                floor_cwd=REPO,
                target=1.1,
                memory_target_mb=150,
                output_dir=True,
                runs=n(5),
            )
        ]
    if key == "W26":
        # The kept runs' folders cost a cached run nothing, whether git ignores them or not.
        run = [sys.executable, "-m", "eval_banana", "run"]
        return [
            Case(
                key="W26",
                name=f"eb run of a git project, one family of {sizes.w26_cases} cases, all "
                f"cached, {sizes.w26_runs} run folders kept and not ignored",
                eb_args=["run", "--cwd", str(root / "unignored")],
                floor=[*run, "--cwd", str(root / "ignored")],
                floor_label="the same, its run folders ignored by .gitignore",
                floor_cwd=REPO,
                target=1.15,
                runs=n(5),
            )
        ]
    if key == "W14":
        return [
            Case(
                key="W14",
                name=f"judge, {name} output",
                eb_args=["run", "--cwd", str(root / generate._slug(name))],
                floor=["sh", "-c", '"$@" | wc -c', "sh", *command, PROMPT],
                floor_label="agent \\| wc -c",
                target=None,
                memory_target_mb=64,
                output_dir=True,
                warmup=False,
                runs=n(1 if "300 MB" in name else 3),
            )
            for name, _, command in generate.w14_cases(sizes=sizes)
        ]
    raise KeyError(key)


def _w13_cases(*, root: Path, sizes: Sizes, n: Callable[[int], int]) -> list[Case]:
    """`--isolation detect` and `copy` against `--isolation off` of the same judges, one at a
    time (so each judge's share adds up rather than hiding behind another's)."""
    project = root / "project"
    judges = sizes.w13_judges
    files = int((root / "tracked-files.txt").read_text())
    run = [sys.executable, "-m", "eval_banana", "run", "--cwd", str(project)]
    serial = ["--max-parallel-checks", "1"]
    floor = [*run, *serial, "--isolation", "off", "--output-dir", "{scratch}/floor-out"]
    label = "eb run --isolation off, same judges"
    return [
        Case(
            key="W13",
            name=f"eb run --isolation detect, {judges} judges, git tree of {files} files",
            eb_args=["run", "--cwd", str(project), *serial, "--isolation", "detect"],
            floor=floor,
            floor_label=label,
            floor_cwd=REPO,
            target=None,
            target_over_s=round(0.5 + 0.05 * judges, 3),
            output_dir=True,
            runs=n(5),
        ),
        Case(
            key="W13",
            name=f"eb run --isolation copy, {judges} judges, git tree of {files} files",
            eb_args=["run", "--cwd", str(project), *serial, "--isolation", "copy"],
            floor=floor,
            floor_label=label,
            floor_cwd=REPO,
            target=None,
            target_over_s=2.0 * judges,
            output_dir=True,
            copy_probe=project,
            runs=n(3),
        ),
    ]


def _schedule_cases(*, key: str, root: Path, sizes: Sizes, n: Callable[[int], int]) -> list[Case]:
    """W15: longest expected first against plan order, the same judges in the same call, held
    to the longest-processing-time bound; W16: the shard split `eb list` computes by history,
    timed against the hash split (how even each is goes in the notes)."""
    project = root / "project"
    eb = [sys.executable, "-m", "eval_banana"]
    mine = schedule.sizes_of(sizes)
    if key == "W15":
        parallel = ["--max-parallel-checks", str(mine.w15_parallel)]
        # The history is recorded by a plan-order run first; the measured runs add none.
        run = ["run", "--cwd", str(project), *parallel, "--history", "off"]
        return [
            Case(
                key="W15",
                name=f"{mine.w15_judges} judges of log-normal length, parallel "
                f"{mine.w15_parallel}, longest expected first",
                eb_args=run,
                floor=[*eb, *run, "--schedule", "plan", "--output-dir", "{scratch}/floor-out"],
                floor_label="eb run --schedule plan, same judges",
                floor_cwd=REPO,
                target=None,
                seconds_target=schedule.w15_target(root=root, sizes=sizes),
                prepare=[
                    "run",
                    "--cwd",
                    str(project),
                    *parallel,
                    "--schedule",
                    "plan",
                    "--output-dir",
                    "{scratch}/prepare",
                ],
                output_dir=True,
                runs=n(3),
            )
        ]
    listing = ["list", "--cwd", str(project), "--shard", f"1/{mine.w16_shards}"]
    return [
        Case(
            key="W16",
            name=f"{mine.w16_judges} judges into {mine.w16_shards} shards by "
            f"{mine.w16_runs} recorded runs (eb list --balance history)",
            eb_args=[*listing, "--balance", "history"],
            floor=[*eb, *listing, "--balance", "hash"],
            floor_label="eb list --balance hash",
            floor_cwd=REPO,
            target=None,
            runs=n(5),
        )
    ]


def _w21_cases(*, key: str, root: Path, sizes: Sizes, n: Callable[[int], int]) -> list[Case]:
    """W21: a judge family with every verdict cached; W22: the same after one row is edited
    before each run (exactly one agent must start). Both against `eb validate` of it."""
    project = root / "project"
    cases = sizes.w21_cases
    validate = [sys.executable, "-m", "eval_banana", "validate", "--cwd", str(project)]
    common = {
        "eb_args": ["run", "--cwd", str(project), "--json"],
        "floor": validate,
        "floor_label": "eb validate, same family",
        "floor_cwd": REPO,
        "output_dir": True,
        "prepare": ["run", "--cwd", str(project), "--output-dir", "{scratch}/prepare-out"],
        "agent_log": generate.w21_agent_log(root=root),
        "runs": n(5),
    }
    if key == "W21":
        return [
            Case(
                key="W21",
                name=f"eb run, one judge family of {cases} cases, all cached",
                target=1.5,
                expect_cached=cases,
                **common,  # type: ignore[arg-type]
            )
        ]
    return [
        Case(
            key="W22",
            name=f"eb run, one judge family of {cases} cases, one row edited",
            target=2,
            expect_cached=cases - 1,
            agent_starts_per_run=1,
            before_eb=lambda run: generate.edit_one_row(root=root, run=run),
            **common,  # type: ignore[arg-type]
        )
    ]


def w17_rows(*, sizes: Sizes, runs: int) -> list[Row]:
    """W17 (bench/shared_cache.py): judges cached only on S3 behind 20 ms per request, against
    the same run with a warm local tier; a remote that never answers, against no remote. Each
    measured alternately with its floor in this call, held to the issue's bounds."""
    from bench import shared_cache

    latency_ms = 20.0
    judges, slow = sizes.w17_judges, sizes.w17_slow_judges
    s3_case = Case(
        key="W17",
        name=f"eb run, {judges} judges cached on S3 only (moto, +{latency_ms:g} ms per "
        "request), empty local tier",
        eb_args=[],
        floor=[],
        floor_label="eb run, warm local tier, no remote",
        target=None,
        runs=runs,
    )
    slow_case = Case(
        key="W17",
        name=f"eb run, {slow} judges, a remote that never answers "
        f"(remote_timeout_seconds {shared_cache.TIMEOUT_S})",
        eb_args=[],
        floor=[],
        floor_label="eb run, no remote",
        target=None,
        target_over_s=float(shared_cache.TIMEOUT_S + 1),
        runs=runs,
    )
    with tempfile.TemporaryDirectory(prefix="eb-w17-") as scratch:
        s3_row = _w17_row(
            case=s3_case,
            measure=lambda: shared_cache.s3_measure(
                work=Path(scratch) / "s3", judges=judges, latency_ms=latency_ms, runs=runs
            ),
        )
        slow_row = _w17_row(
            case=slow_case,
            measure=lambda: shared_cache.slow_measure(
                work=Path(scratch) / "slow", judges=slow, runs=runs
            ),
        )
    if s3_row.eb and s3_row.floor:
        made = max(s3_row.notes_requests)
        floor = _median(s3_row.floor)
        bound = shared_cache.s3_bound(floor=floor, requests=made, latency_ms=latency_ms)
        # The bound's allowance over the floor is known only once the requests are counted.
        s3_row.case = replace(s3_case, target_over_s=round(bound - floor, 3))
        s3_row.notes.append(
            f"- W17 S3: {made} requests for {judges} cached judges ({made / judges:.2f} per "
            f"check; bound ≤ 2); allowance 1.25 × ({made} × {latency_ms:g} ms / "
            f"{shared_cache.CONCURRENCY}) = {bound - floor:.3f} s over the warm local run."
        )
        if s3_row.server_s:
            server = statistics.median(s3_row.server_s)
            serving = server - made * latency_ms / 1000 / shared_cache.CONCURRENCY
            over = _median(s3_row.eb) - floor
            s3_row.notes.append(
                f"- W17 S3 server floor: a bare boto3 client makes the same {made} GETs of stored "
                f"entries at concurrency {shared_cache.CONCURRENCY} through the same proxy in "
                f"{server:.3f} s (median), {serving:.3f} s of it moto's own serving, which the "
                f"bound above does not count. eb over its floor: {over:.3f} s."
            )
        if s3_row.minimal_s:
            minimal = statistics.median(s3_row.minimal_s)
            verdict = "over" if minimal > bound - floor else "within"
            s3_row.notes.append(
                f"- W17 S3 rig floor: a minimal client (GETs signed by hand over one kept-alive "
                f"connection per worker, no SDK) makes the same {made} GETs at concurrency "
                f"{shared_cache.CONCURRENCY} through the same proxy in {minimal:.3f} s (median), "
                f"{verdict} the allowance of {bound - floor:.3f} s by itself."
            )
        if made > 2 * judges:
            s3_row.problems.append(f"{made} requests for {judges} cached judges: more than 2 each")
    if slow_row.eb and slow_row.notes_requests:
        slow_row.notes.append(
            f"- W17 timeouts: {max(slow_row.notes_requests)} requests to the silent remote for "
            f"{slow} judges before the run stopped asking it."
        )
    return [s3_row, slow_row]


@dataclass
class _W17Row(Row):
    notes_requests: list[int] = field(default_factory=list)
    server_s: list[float] = field(default_factory=list)
    minimal_s: list[float] = field(default_factory=list)


def _w17_row(*, case: Case, measure: Callable[[], Any]) -> _W17Row:
    row = _W17Row(case=case, load_start=os.getloadavg()[0])
    try:
        measured = measure()
        floors, ebs, requests = measured.floors, measured.ebs, measured.requests
        rss_kb, server, minimal = measured.rss_kb, measured.server, measured.minimal
    except Exception as exc:  # the bench breaking (moto missing, a run failing) voids the row
        row.problems.append(f"not measured: {type(exc).__name__}: {str(exc)[-300:]}")
    else:
        row.floor = [Sample(seconds=value, rc=0, rss_kb=None) for value in floors]
        peaks = [*rss_kb, *([None] * len(ebs))][: len(ebs)]
        row.eb = [
            Sample(seconds=value, rc=0, rss_kb=peak) for value, peak in zip(ebs, peaks, strict=True)
        ]
        row.notes_requests = list(requests)
        row.server_s = list(server)
        row.minimal_s = list(minimal)
    row.load_end = os.getloadavg()[0]
    return row


def _report(run_dir: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((run_dir / "report.json").read_bytes())
    return report


def _largest_stream(sizes: Sizes) -> str:
    return f"stream {generate._human(max(sizes.w4_stream_bytes))}"


# Reporting ------------------------------------------------------------------------------------


def _median(samples: list[Sample]) -> float:
    return statistics.median(sample.seconds for sample in samples)


def _fmt_s(seconds: float) -> str:
    return f"{seconds:.3f}" if seconds < 10 else f"{seconds:.1f}"


def row_met(row: Row) -> bool:
    """Whether every bound the case sets holds (and the row has samples to judge)."""
    case = row.case
    if not row.eb or not row.floor:
        return False
    eb, floor = _median(row.eb), _median(row.floor)
    rss = [sample.rss_kb for sample in row.eb if sample.rss_kb is not None]
    bounds = [
        case.target is None or eb / floor <= case.target,
        case.target_over_s is None or eb - floor <= case.target_over_s,
        case.seconds_target is None or eb <= case.seconds_target,
        case.memory_target_mb is None or (bool(rss) and max(rss) / 1024 <= case.memory_target_mb),
    ]
    return all(bounds)


def target_text(case: Case) -> str:
    parts = []
    if case.target is not None:
        parts.append(f"≤ {case.target:g}")
    if case.target_over_s is not None:
        parts.append(f"≤ floor + {case.target_over_s:g} s")
    if case.seconds_target is not None:
        parts.append(f"≤ {case.seconds_target:g} s")
    if case.memory_target_mb is not None:
        parts.append(f"≤ {case.memory_target_mb:g} MB")
    return ", ".join(parts)


def row_cells(row: Row) -> list[str]:
    """The cells of HEADER for one row; "—" where there is nothing to show."""
    case = row.case
    eb_times = [sample.seconds for sample in row.eb]
    rss = [sample.rss_kb for sample in row.eb if sample.rss_kb is not None]
    if rss:
        peak = f"{max(rss) / 1024:.0f}"
    else:  # a page in Chromium has no eb process; a row without samples has nothing
        peak = "—" if case.browser_page or case.history_page or not row.eb else "?"
    timed = bool(row.eb) and bool(row.floor)
    verdict = "yes" if row_met(row) and not row.problems else "NO"
    if not target_text(case) and not row.problems:
        verdict = "—"  # a row shown for what it tells, with no bound of its own
    if row.problems:
        verdict += " (see notes)"
    return [
        case.key,
        case.name,
        str(len(row.eb)),
        _fmt_s(statistics.median(eb_times)) if eb_times else "—",
        _fmt_s(min(eb_times)) if eb_times else "—",
        _fmt_s(max(eb_times)) if eb_times else "—",
        peak,
        case.floor_label,
        _fmt_s(_median(row.floor)) if row.floor else "—",
        f"{_median(row.eb) / _median(row.floor):.2f}" if timed else "—",
        target_text(case),
        verdict,
        f"{row.load_start:.1f}→{row.load_end:.1f}",
    ]


HEADER = [
    "key",
    "case",
    "runs",
    "eb median s",
    "min",
    "max",
    "eb peak RSS MB",
    "floor",
    "floor median s",
    "ratio",
    "target",
    "met",
    "load",
]


def render_table(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(row_cells(row)) + " |" for row in rows]
    return "\n".join(lines)


def render_notes(rows: list[Row], *, sizes: Sizes) -> str:
    """Problems that void a row, the W3 --check-id versus full-validation comparison, and the
    W10 shard split (a count, not a timing)."""
    notes = [
        f"- {row.case.key} {row.case.name}: {problem}" for row in rows for problem in row.problems
    ]
    for row in rows:
        if row.probe_s is not None:
            over = _median(row.eb) - _median(row.floor)
            notes.append(
                f"- {row.case.key}: writing {row.case.file_probe} small files atomically (a "
                f"result file per check, as a run that ran them would) takes "
                f"{_fmt_s(row.probe_s)} s on this file system in this call; eb's time over its "
                f"floor is {_fmt_s(over)} s."
            )
    w3 = {row.case.eb_args[0]: row for row in rows if row.case.key == "W3"}
    if "validate" in w3 and "run" in w3:
        selected = _median(w3["run"].eb)
        full = _median(w3["validate"].eb)
        notes.append(
            f"- W3: `eb run --check-id` (one check, run included) takes {selected / full:.2f} x "
            f"the time of `eb validate` of every file ({_fmt_s(selected)} s vs {_fmt_s(full)} s)."
        )
    for row in rows:
        if row.copy_probe is not None:
            seconds, files, method = row.copy_probe
            notes.append(
                f"- {row.case.key}: a {method} workspace of the {files} files (what `copy` makes "
                "per judge where eb cannot mount an overlay: not root, or no overlayfs), made, "
                f"compared with the project and removed, takes {_fmt_s(seconds)} s in this call."
            )
    if any(row.case.key == "W10" for row in rows):
        notes += split.notes(sizes=sizes)
    for row in rows:
        if row.case.key == "W15" and row.eb and row.floor:
            notes += schedule.w15_notes(
                root=generate.workload(key="W15", sizes=sizes),
                sizes=sizes,
                eb_median=_median(row.eb),
                plan_median=_median(row.floor),
            )
    if any(row.case.key == "W16" for row in rows):
        notes += schedule.w16_notes(root=generate.workload(key="W16", sizes=sizes), sizes=sizes)
    notes += [line for row in rows for line in row.notes]
    return "\n".join(notes)


def machine_line(*, sizes: Sizes, runs: str, load_before: float) -> str:
    # The load average says how much else the (often shared) machine was doing meanwhile; the
    # `load` column gives it per row.
    return (
        f"{time.strftime('%Y-%m-%d %H:%M')}, {platform.platform()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, sizes: {sizes.name}, runs: {runs}, "
        f"load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after"
    )


def write_doc(*, path: Path, text: str, block: str = "bench-table") -> None:
    """Replace what lies between the `block` markers of `path` (docs/performance.md)."""
    start, end = f"<!-- {block}:start -->", f"<!-- {block}:end -->"
    doc = path.read_text()
    if start not in doc or end not in doc:
        raise ValueError(f"{path} has no {start} ... {end} block to update")
    head, rest = doc.split(start, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{start}\n{text}\n{end}{tail}")


# A/B against another revision ----------------------------------------------------------------


def checkout_of(*, rev: str) -> Path:
    """The package of git revision `rev`, extracted once under bench/.cache and byte-compiled."""
    sha = subprocess.run(
        ["git", "rev-parse", "--verify", f"{rev}^{{commit}}"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    tree = REPO / "bench" / ".cache" / f"against-{sha[:12]}"
    if not (tree / "eval_banana").is_dir():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", sha, "eval_banana"], cwd=REPO, check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    compileall.compile_dir(str(tree / "eval_banana"), quiet=1)
    return tree


def against_case(*, case: Case, tree: Path, rev: str) -> Case:
    """The same case with the other revision's eb as its floor: eb must be no slower than it."""
    return replace(
        case,
        name=f"{case.name} (A/B)",
        floor=[sys.executable, "-c", AGAINST_PRELUDE, *case.eb_args],
        floor_label=f"the same command, eb at {rev}",
        floor_cwd=tree,
        floor_stdin=None,
        floor_stdout_file=False,
        floor_rc=case.expect_rc,
        again_before_eb=case.before_eb is not None,
        target=1.05,
        target_over_s=None,
        seconds_target=None,
        memory_target_mb=None,
    )


# Entry ----------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/run.py", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Tiny sizes, one run (CI smoke).")
    parser.add_argument("--only", default="", help="Comma-separated workload keys, e.g. W1,W4.")
    parser.add_argument("--runs", type=int, help="Runs per case (default: per workload).")
    parser.add_argument("--timeout", type=float, help="Seconds before a process is killed.")
    parser.add_argument(
        "--against",
        metavar="REV",
        help="A/B: also time each case's eb command as the git revision REV's eb runs it "
        "(its row's floor), e.g. `--only W0 --against HEAD~1` before and after a refactor.",
    )
    parser.add_argument(
        "--write-doc",
        action="store_true",
        help="Update the tables in docs/ of the workload groups that ran (W0-W6, W7-W9, "
        "W10-W11, W12), each with its own rows only.",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    keys = [key.strip().upper() for key in args.only.split(",") if key.strip()]
    keys = keys or list(generate.KEYS)
    unknown = [key for key in keys if key not in generate.KEYS]
    if unknown:
        print(f"unknown workload(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    timeout = args.timeout or (20.0 if args.quick else 600.0)
    # An installed eb runs from byte code (pip compiles on install); a source tree under
    # PYTHONDONTWRITEBYTECODE would recompile every edited module in every measured process.
    compileall.compile_dir(str(REPO / "eval_banana"), quiet=1)
    load_before = os.getloadavg()[0]
    rows: list[Row] = []
    against = checkout_of(rev=args.against) if args.against else None
    for key in keys:
        if key == "W17":  # its servers live only as long as its own measuring
            print("# W17 the shared cache on S3 ...", file=sys.stderr, flush=True)
            rows += w17_rows(sizes=sizes, runs=args.runs or (3 if sizes is FULL else 1))
            continue
        cases = cases_for(key=key, sizes=sizes, runs=args.runs)
        if against is not None:
            cases += [against_case(case=case, tree=against, rev=args.against) for case in cases]
        for case in cases:
            print(f"# {case.key} {case.name} ...", file=sys.stderr, flush=True)
            rows.append(
                bench_case(case=case, runs=case.runs, warmup=not args.quick, timeout=timeout)
            )
    runs = str(args.runs) if args.runs else ("1" if args.quick else "per workload, see doc")
    text = render(rows=rows, sizes=sizes, runs=runs, load_before=load_before)
    print(text)
    if args.write_doc:
        for block, block_rows in rows_by_block(rows=rows):
            block_text = render(rows=block_rows, sizes=sizes, runs=runs, load_before=load_before)
            for path in block.paths:
                write_doc(path=path, text=block_text, block=block.name)
    return 0


def render(*, rows: list[Row], sizes: Sizes, runs: str, load_before: float) -> str:
    parts = (
        machine_line(sizes=sizes, runs=runs, load_before=load_before),
        "",
        render_table(rows),
        "",
        render_notes(rows, sizes=sizes),
    )
    return "\n".join(parts).rstrip()


def rows_by_block(*, rows: list[Row]) -> list[tuple[DocBlock, list[Row]]]:
    """Each doc block with the rows it holds, for the blocks this call has rows for."""
    claimed = frozenset().union(*(block.keys for block in DOC_BLOCKS if block.keys is not None))
    grouped = []
    for block in DOC_BLOCKS:
        mine = [
            row
            for row in rows
            if (
                row.case.key in block.keys
                if block.keys is not None
                else row.case.key not in claimed
            )
        ]
        if mine:
            grouped.append((block, mine))
    return grouped


if __name__ == "__main__":
    sys.exit(main())
