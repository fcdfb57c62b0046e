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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import generate  # noqa: E402
from bench.generate import EXCLUDED, FULL, QUICK, Sizes  # noqa: E402

DOC = REPO / "docs" / "performance.md"
WORKLOADS: tuple[str, ...] = (*generate.BUILDERS, "W8")
TABLE_START = "<!-- bench-table:start -->"
TABLE_END = "<!-- bench-table:end -->"
# The scale-out rows are also copied into docs/scale-out.md.
SCALE_DOC = REPO / "docs" / "scale-out.md"
SCALE_KEYS = frozenset({"W7", "W8"})
FIGURES_START = "<!-- scale-out-figures:start -->"
FIGURES_END = "<!-- scale-out-figures:end -->"
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


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b")


@dataclass
class Case:
    """One row of the table: an eb command line, its floor and its targets."""

    key: str
    name: str
    eb_args: list[str]
    floor: list[str]
    floor_label: str
    target: float | None  # ratio of eb's median to the floor's; None: no ratio target
    expect_rc: int = 0
    memory_target_mb: float | None = None
    seconds_target: float | None = None  # an absolute bound on eb's median wall time
    warmup: bool = True  # one unmeasured run of each first (full mode)
    # A run folder whose report.html (written anew by this eb) is timed in Chromium instead of
    # an eb process.
    browser_page: Path | None = None
    browser_expect_rows: int | None = None
    floor_stdin: Path | None = None
    floor_cwd: Path | None = None  # default: a scratch folder
    floor_stdout_file: bool = False
    expect_stdout_lines: int | None = None
    runs: int = 5
    output_dir: bool = False  # eb run: give every run its own --output-dir, deleted afterwards


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


# Measuring ------------------------------------------------------------------------------------


def measure(
    *,
    argv: Sequence[str],
    cwd: Path,
    stdout_path: Path | None,
    stdin_path: Path | None,
    stderr_path: Path | None,
    timeout: float,
) -> tuple[float, int, int, bool]:
    """Wall seconds, exit code, wait4 ru_maxrss (KB) and whether the timeout killed it."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL  # noqa: SIM115
    stdout = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL  # noqa: SIM115
    stderr = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL  # noqa: SIM115
    killed = threading.Event()
    try:
        start = time.perf_counter()
        process = subprocess.Popen(
            list(argv), cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True
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
    )
    shutil.rmtree(out_dir, ignore_errors=True)
    rss = int(rss_file.read_text()) if rss_file.is_file() and rss_file.read_text() else None
    return Sample(seconds=seconds, rc=rc, rss_kb=rss, timed_out=timed_out)


def run_floor(*, case: Case, scratch: Path, timeout: float) -> Sample:
    seconds, rc, rss, timed_out = measure(
        argv=case.floor,
        cwd=case.floor_cwd or scratch,
        stdout_path=scratch / "floor.stdout" if case.floor_stdout_file else None,
        stdin_path=case.floor_stdin,
        stderr_path=scratch / "floor.stderr",
        timeout=timeout,
    )
    (scratch / "floor.stdout").unlink(missing_ok=True)
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
    if case.expect_stdout_lines is not None and not sample.timed_out:
        lines = len((scratch / "eb.stdout").read_text(errors="replace").splitlines())
        if lines != case.expect_stdout_lines:
            problems.append(f"eb printed {lines} lines, expected {case.expect_stdout_lines}")
    return problems


def bench_case(*, case: Case, runs: int, warmup: bool, timeout: float) -> Row:
    """Floor and eb alternately, so both see the same machine state."""
    if case.browser_page is not None:
        return bench_browser(case=case, runs=runs, warmup=warmup)
    warmup = warmup and case.warmup
    row = Row(case=case)
    scratch = Path(tempfile.mkdtemp(prefix=f"eb-bench-{case.key}-"))
    try:
        if warmup:
            run_floor(case=case, scratch=scratch, timeout=timeout)
            run_eb(case=case, scratch=scratch, index=0, timeout=timeout)
        for index in range(runs):
            floor = run_floor(case=case, scratch=scratch, timeout=timeout)
            if floor.rc != 0 or floor.timed_out:
                row.problems.append(f"floor exit {floor.rc}")
            row.floor.append(floor)
            sample = run_eb(case=case, scratch=scratch, index=index, timeout=timeout)
            row.eb.append(sample)
            for problem in _eb_problems(case=case, sample=sample, scratch=scratch):
                if problem not in row.problems:
                    row.problems.append(problem)
            if sample.timed_out:
                break  # one timeout says enough; do not spend runs * timeout on it
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return row


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
# Counted in the page, after the filter: the rows a reader sees.
VISIBLE_ROWS = (
    "return Array.from(document.querySelectorAll('tbody tr'))"
    ".filter(function (r) { return r.offsetParent !== null; }).length;"
)
FAILED_FILTER = '#status-filter button[data-g="failed"]'


def _static_table(*, rows: int, path: Path) -> Path:
    """The floor page: as many plain table rows, no script, no data blob."""
    body = "".join(
        f"<tr><td>check_{i:05d}</td><td>passed</td><td>deterministic</td><td>bench</td>"
        f"<td>5 ms</td></tr>"
        for i in range(rows)
    )
    path.write_text(
        f"<!DOCTYPE html><html><body><table><tbody>{body}</tbody></table></body></html>"
    )
    return path


def _open_and_filter(*, driver: object, page: Path, click: bool) -> tuple[float, int]:
    """Seconds from asking for the page to the filtered rows being counted, and that count."""
    from selenium.webdriver.common.by import By

    start = time.perf_counter()
    driver.get(page.as_uri())  # type: ignore[attr-defined]  # returns after the load event
    if click:
        driver.find_element(By.CSS_SELECTOR, FAILED_FILTER).click()  # type: ignore[attr-defined]
    shown = int(driver.execute_script(VISIBLE_ROWS))  # type: ignore[attr-defined]
    return time.perf_counter() - start, shown


def _current_page(*, run_dir: Path, scratch: Path) -> Path:
    """report.html of a cached run as this eb writes it (the cached copy may be older)."""
    from eval_banana.reporting.html import write_html

    report = json.loads((run_dir / "report.json").read_bytes())
    page = scratch / "report.html"
    write_html(report=report, run_dir=run_dir, path=page)
    return page


def bench_browser(*, case: Case, runs: int, warmup: bool) -> Row:
    """report.html opened and filtered to its failed checks, against a static table of as many
    rows, alternately in one headless Chromium (its start-up is not counted)."""
    row = Row(case=case)
    assert case.browser_page is not None
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        row.problems.append("selenium is not installed (pip install -e '.[dev]')")
        return row
    if not CHROMEDRIVER.exists() or shutil.which("chromium") is None:
        row.problems.append("chromium and chromedriver are needed (apt-get install chromium)")
        return row
    scratch = Path(tempfile.mkdtemp(prefix="eb-bench-browser-"))
    options = webdriver.ChromeOptions()
    for argument in (*CHROMIUM_FLAGS, f"--user-data-dir={scratch / 'profile'}"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        page = _current_page(run_dir=case.browser_page, scratch=scratch)
        rows = len(json.loads((case.browser_page / "report.json").read_bytes())["checks"])
        floor_page = _static_table(rows=rows, path=scratch / "floor.html")
        if warmup:
            _open_and_filter(driver=driver, page=floor_page, click=False)
            _open_and_filter(driver=driver, page=page, click=True)
        for _ in range(runs):
            seconds, _ = _open_and_filter(driver=driver, page=floor_page, click=False)
            row.floor.append(Sample(seconds=seconds, rc=0, rss_kb=None))
            seconds, shown = _open_and_filter(driver=driver, page=page, click=True)
            row.eb.append(Sample(seconds=seconds, rc=0, rss_kb=None))
            if shown != case.browser_expect_rows:
                problem = (
                    f"the failed filter showed {shown} rows, expected {case.browser_expect_rows}"
                )
                if problem not in row.problems:
                    row.problems.append(problem)
    finally:
        driver.quit()
        shutil.rmtree(scratch, ignore_errors=True)
    return row


# W7 floors: the same data read (and, for the merge, written) by plain json, in one process.
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


def split_note(*, sizes: Sizes) -> str:
    """The shard split of the W7 ids, and how often a split of as many random ids is as even."""
    import random
    import string

    from eval_banana.shard import split_counts

    ids = list(generate.w7_base_checks(sizes=sizes))
    total = sizes.w7_shards
    even = len(ids) / total
    counts = split_counts(check_ids=ids, total=total)
    worst = max(abs(count - even) for count in counts) / even
    rng = random.Random(17)
    trials = 200 if sizes is FULL else 20
    spreads = []
    for _ in range(trials):
        sample = ["".join(rng.choices(string.ascii_lowercase + "_", k=12)) for _ in ids]
        split = split_counts(check_ids=sample, total=total)
        spreads.append(max(abs(count - even) for count in split) / even)
    spreads.sort()
    within = sum(1 for spread in spreads if spread <= 0.05) / trials
    return (
        f"- W7 split: {len(ids)} ids into {total} shards: {min(counts)} to {max(counts)} per shard "
        f"(largest deviation {worst * 100:.2f}% of {even:g}; target ≤ 5%: "
        f"{'met' if worst <= 0.05 else 'NO'}). Over {trials} sets of {len(ids)} random ids the "
        f"largest deviation is at most 5% in {within * 100:.0f}% of them (median "
        f"{spreads[trials // 2] * 100:.2f}%, worst {spreads[-1] * 100:.2f}%)."
    )


# Cases ----------------------------------------------------------------------------------------


def cases_for(*, key: str, sizes: Sizes, runs: int | None) -> list[Case]:
    """The cases of one workload (generating it first if needed)."""
    # W8 times a one-machine run of W7's base project and the report.html it wrote.
    root = generate.workload(key="W7" if key == "W8" else key, sizes=sizes)
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
        runs_dir = root / "runs"
        shards = [str(path) for path in generate.w7_shard_dirs(root=root, sizes=sizes)]
        head = root / "project-head"
        return [
            Case(
                key="W7",
                name=f"eb merge, {sizes.w7_shards} shards of {sizes.w7_checks} checks",
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
            Case(
                key="W7",
                name=f"eb diff, two runs of {sizes.w7_checks} checks",
                eb_args=["diff", str(runs_dir / "base"), str(runs_dir / "merged")],
                floor=[py, "-c", DIFF_FLOOR, str(runs_dir / "base"), str(runs_dir / "merged")],
                floor_label="json load of both reports",
                target=None,
                seconds_target=1,
                expect_rc=1,
                runs=n(5),
            ),
        ]
    if key == "W8":
        w7 = root
        base_report = w7 / "runs" / "base" / "report.json"
        failed = sum(
            1
            for check in json.loads(base_report.read_text())["checks"]
            if check["status"] == "failed"
        )
        return [
            Case(
                key="W8",
                name=f"eb run, {sizes.w7_checks} trivial checks, parallel 4",
                eb_args=["run", "--cwd", str(w7 / "project-base"), "--max-parallel-checks", "4"],
                floor=["xargs", "-P", "4", "-n", "1", py],
                floor_label=f"{sizes.w7_checks} python launches, xargs -P 4",
                floor_stdin=w7 / "floor-list.txt",
                floor_cwd=w7,
                target=1.15,
                memory_target_mb=150,
                expect_rc=1 if failed else 0,
                output_dir=True,
                warmup=False,  # minutes per run at full size
                runs=n(1),
            ),
            Case(
                key="W8",
                name=f"report.html of {sizes.w7_checks} checks: open, filter to failed",
                eb_args=[],
                floor=[],
                floor_label="static HTML table of as many rows",
                target=None,
                seconds_target=2,
                browser_page=w7 / "runs" / "base",
                browser_expect_rows=failed,
                runs=n(5),
            ),
        ]
    raise KeyError(key)


def _largest_stream(sizes: Sizes) -> str:
    return f"stream {generate._human(max(sizes.w4_stream_bytes))}"


# Reporting ------------------------------------------------------------------------------------


def _median(samples: list[Sample]) -> float:
    return statistics.median(sample.seconds for sample in samples)


def _fmt_s(seconds: float) -> str:
    return f"{seconds:.3f}" if seconds < 10 else f"{seconds:.1f}"


def row_cells(row: Row) -> list[str]:
    """Key, case, eb median / min / max, eb peak RSS, floor, floor median, ratio, target, met."""
    case = row.case
    eb_times = [sample.seconds for sample in row.eb]
    rss = [sample.rss_kb for sample in row.eb if sample.rss_kb is not None]
    peak_mb = max(rss) / 1024 if rss else None
    ratio = _median(row.eb) / _median(row.floor)
    met = True
    targets = []
    if case.target is not None:
        targets.append(f"≤ {case.target:g}")
        met = ratio <= case.target
    if case.seconds_target is not None:
        targets.append(f"≤ {case.seconds_target:g} s")
        met = met and _median(row.eb) <= case.seconds_target
    if case.memory_target_mb is not None:
        targets.append(f"≤ {case.memory_target_mb:g} MB")
        met = met and peak_mb is not None and peak_mb <= case.memory_target_mb
    target = ", ".join(targets)
    verdict = "yes" if met and not row.problems else "NO"
    if row.problems:
        verdict += " (see notes)"
    return [
        case.key,
        case.name,
        str(len(row.eb)),
        _fmt_s(statistics.median(eb_times)),
        _fmt_s(min(eb_times)),
        _fmt_s(max(eb_times)),
        f"{peak_mb:.0f}" if peak_mb is not None else ("—" if case.browser_page else "?"),
        case.floor_label,
        _fmt_s(_median(row.floor)),
        f"{ratio:.2f}",
        target,
        verdict,
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
]


def render_table(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(row_cells(row)) + " |" for row in rows]
    return "\n".join(lines)


def render_notes(rows: list[Row], *, sizes: Sizes) -> str:
    """Problems that void a row, the W3 --check-id versus full-validation comparison, and the
    W7 shard split (a count, not a timing)."""
    notes = [
        f"- {row.case.key} {row.case.name}: {problem}" for row in rows for problem in row.problems
    ]
    w3 = {row.case.eb_args[0]: row for row in rows if row.case.key == "W3"}
    if "validate" in w3 and "run" in w3:
        selected = _median(w3["run"].eb)
        full = _median(w3["validate"].eb)
        notes.append(
            f"- W3: `eb run --check-id` (one check, run included) takes {selected / full:.2f} x "
            f"the time of `eb validate` of every file ({_fmt_s(selected)} s vs {_fmt_s(full)} s)."
        )
    if any(row.case.key == "W7" for row in rows):
        notes.append(split_note(sizes=sizes))
    return "\n".join(notes)


def machine_line(*, sizes: Sizes, runs: str) -> str:
    return (
        f"{time.strftime('%Y-%m-%d %H:%M')}, {platform.platform()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, sizes: {sizes.name}, runs: {runs}"
    )


def write_doc(*, path: Path, text: str, start: str = TABLE_START, end: str = TABLE_END) -> None:
    """Replace what lies between the markers of `path` (docs/performance.md) with `text`."""
    doc = path.read_text()
    if start not in doc or end not in doc:
        raise ValueError(f"{path} has no {start} ... {end} block to update")
    head, rest = doc.split(start, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{start}\n{text}\n{end}{tail}")


# Entry ----------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/run.py", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Tiny sizes, one run (CI smoke).")
    parser.add_argument("--only", default="", help="Comma-separated workload keys, e.g. W1,W4.")
    parser.add_argument("--runs", type=int, help="Runs per case (default: per workload).")
    parser.add_argument("--timeout", type=float, help="Seconds before a process is killed.")
    parser.add_argument(
        "--write-doc", action="store_true", help="Update the table in docs/performance.md."
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    keys = [key.strip().upper() for key in args.only.split(",") if key.strip()]
    keys = keys or list(WORKLOADS)
    unknown = [key for key in keys if key not in WORKLOADS]
    if unknown:
        print(f"unknown workload(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    timeout = args.timeout or (20.0 if args.quick else 600.0)
    # An installed eb runs from byte code (pip compiles on install); a source tree under
    # PYTHONDONTWRITEBYTECODE would recompile every edited module in every measured process.
    compileall.compile_dir(str(REPO / "eval_banana"), quiet=1)
    rows: list[Row] = []
    for key in keys:
        for case in cases_for(key=key, sizes=sizes, runs=args.runs):
            print(f"# {case.key} {case.name} ...", file=sys.stderr, flush=True)
            rows.append(
                bench_case(case=case, runs=case.runs, warmup=not args.quick, timeout=timeout)
            )
    runs = str(args.runs) if args.runs else ("1" if args.quick else "per workload, see doc")
    text = "\n".join(
        part
        for part in (
            machine_line(sizes=sizes, runs=runs),
            "",
            render_table(rows),
            "",
            render_notes(rows, sizes=sizes),
        )
        if part is not None
    ).rstrip()
    print(text)
    if args.write_doc:
        # A call of only the scale-out workloads leaves the main table of another call alone.
        if any(row.case.key not in SCALE_KEYS for row in rows):
            write_doc(path=DOC, text=text)
        scale_rows = [row for row in rows if row.case.key in SCALE_KEYS]
        if scale_rows:
            figures = "\n".join(
                (
                    machine_line(sizes=sizes, runs=runs),
                    "",
                    render_table(scale_rows),
                    "",
                    render_notes(scale_rows, sizes=sizes),
                )
            ).rstrip()
            for path in (SCALE_DOC, DOC):
                write_doc(path=path, text=figures, start=FIGURES_START, end=FIGURES_END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
