"""The benchmark suite's smoke mode: it must keep running (issue 7); its timings never gate CI."""

from __future__ import annotations

import itertools
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if (
    str(REPO) not in sys.path
):  # `bench/` is not installed; plain `pytest` may not put the repo first
    sys.path.insert(0, str(REPO))

from bench import generate, split  # noqa: E402
from bench.run import (  # noqa: E402
    DOC,
    SCALE_DOC,
    SCHEDULE_DOC,
    TABLE_END,
    TABLE_START,
    Case,
    Row,
    Sample,
    row_cells,
    row_met,
    rows_by_block,
    write_doc,
)

WORKLOADS = generate.KEYS
HAVE_CHROMIUM = Path("/usr/bin/chromedriver").exists() and shutil.which("chromium") is not None
NUMBER = re.compile(r"^\d+(\.\d+)?$")


def _rows(stdout: str) -> list[list[str]]:
    """Table rows (header and separator excluded) as lists of cells."""
    rows = []
    for line in stdout.splitlines():
        if not line.startswith("| W"):
            continue
        # `\|` inside a cell is an escaped pipe, not a cell border.
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        rows.append(cells)
    return rows


@pytest.mark.bench
@pytest.mark.slow
def test_quick_mode_prints_a_row_with_numbers_for_every_workload() -> None:
    done = subprocess.run(
        [sys.executable, "bench/run.py", "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=420,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    header = next(line for line in done.stdout.splitlines() if line.startswith("| key"))
    names = [cell.strip() for cell in header.strip("|").split("|")]
    rows = _rows(done.stdout)
    assert {"W0", "W11", "W13", "W14"} <= set(WORKLOADS)
    assert {row[0] for row in rows} == set(WORKLOADS)
    for row in rows:
        assert len(row) == len(names), row
        cell = dict(zip(names, row, strict=True))
        # "—": a row shown for what it tells, with no bound of its own.
        assert cell["met"].startswith(("yes", "NO")) or (cell["met"] == "—" and not cell["target"])
        assert re.fullmatch(r"\d+\.\d→\d+\.\d", cell["load"]), row
        page = cell["floor"].startswith("static HTML")
        if page and not HAVE_CHROMIUM:
            assert "chromium and chromedriver are needed" in done.stdout
            continue
        for column in ("eb median s", "min", "max", "floor median s", "ratio"):
            assert NUMBER.match(cell[column]), (column, row)
        assert float(cell["ratio"]) > 0
        if page:
            assert cell["eb peak RSS MB"] == "—"  # a page in Chromium, not an eb process
            continue
        # eb's own RSS: a Python process is tens of MB, never under 5.
        assert float(cell["eb peak RSS MB"]) > 5
    # The merge and the diff ran on real shard runs; the failed filter showed the failed rows
    # (a wrong count would be a note voiding the row).
    assert "the failed filter showed" not in done.stdout
    assert "eb exit" not in done.stdout
    assert "- W10 split: 40 ids into 4 shards" in done.stdout
    # Isolation: detect and copy against off; the plain copy of the tree timed beside them.
    isolation = [row[1] for row in rows if row[0] == "W13"]
    assert [name.split(",")[0] for name in isolation] == [
        "eb run --isolation detect",
        "eb run --isolation copy",
    ]
    assert "- W13: a copy workspace of the" in done.stdout
    # Memory: one row per verdict dialect, each met (≤ 64 MB) with the judge passing.
    memory = [row for row in rows if row[0] == "W14"]
    assert len(memory) == len(generate.DIALECTS)
    assert all(row[-2] == "yes" for row in memory), memory


@pytest.mark.parametrize("dialect", generate.DIALECTS)
def test_the_dialect_stand_in_prints_a_passing_verdict_eb_finds(
    dialect: str, tmp_path: Path
) -> None:
    from eval_banana.harness.templates import OUTPUT_DIALECTS
    from eval_banana.harness.verdict import extract_verdict

    assert set(generate.DIALECTS) == set(OUTPUT_DIALECTS)  # W14 covers every dialect eb reads
    out = tmp_path / "stdout.txt"
    with out.open("wb") as handle:
        subprocess.run(
            [sys.executable, str(generate.DIALECT_AGENT), f"--dialect={dialect}", "--bytes=200000"],
            stdout=handle,
            check=True,
            timeout=60,
        )
    assert out.stat().st_size > 200_000
    found = extract_verdict(dialect=dialect, stdout_path=out)
    assert found.problem is None and found.verdict is not None
    assert found.verdict.score == 1


def test_only_runs_the_named_workload() -> None:
    done = subprocess.run(
        [sys.executable, "bench/run.py", "--quick", "--only", "w0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert [row[0] for row in _rows(done.stdout)] == ["W0"]


def test_w12_sampled_judges_row_runs_and_reports_a_ratio() -> None:
    # Judges x repeats agent processes, against as many through xargs: the row must stay
    # measurable (its samples really run, every run passes) whatever the timings say.
    done = subprocess.run(
        [sys.executable, "bench/run.py", "--quick", "--only", "W12"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = _rows(done.stdout)
    assert row[0] == "W12"
    sizes = generate.QUICK
    assert f"{sizes.w12_judges * sizes.w12_repeats} agents, xargs -P" in row[7]
    assert NUMBER.match(row[3]) and NUMBER.match(row[8]) and NUMBER.match(row[9])
    assert "eb exit" not in done.stdout
    project = generate.workload(key="W12", sizes=sizes) / "project"
    checks = sorted((project / "eval_checks").glob("*.yaml"))
    assert len(checks) == sizes.w12_judges
    assert all(f"repeats: {sizes.w12_repeats}" in path.read_text() for path in checks)


@pytest.mark.bench
def test_w17_shared_cache_rows_run_at_quick_size_with_their_bounds() -> None:
    # moto's S3 server behind the latency proxy, and a remote that never answers: both rows
    # must be measured (every cached judge a remote hit, the breaker stopping the asking) and
    # held to the issue's bounds, whatever this loaded machine makes of the timings.
    done = subprocess.run(
        [sys.executable, "bench/run.py", "--quick", "--only", "W17"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    s3, slow = _rows(done.stdout)
    assert [s3[0], slow[0]] == ["W17", "W17"]
    sizes = generate.QUICK
    assert f"{sizes.w17_judges} judges cached on S3 only" in s3[1]
    assert f"{sizes.w17_slow_judges} judges, a remote that never answers" in slow[1]
    for row in (s3, slow):
        assert NUMBER.match(row[3]) and NUMBER.match(row[8]), row
        assert float(row[6]) > 5, row  # eb's own peak RSS, as every other row shows it
        assert row[10].startswith("≤ floor + "), row
        assert "see notes" not in row[11], done.stdout
    assert slow[10] == "≤ floor + 3 s"
    requests = f"{sizes.w17_judges} requests for {sizes.w17_judges} cached judges (1.00 per check"
    assert requests in done.stdout
    assert "- W17 timeouts:" in done.stdout
    # The rig's own floor: the same GETs by a minimal client signing them by hand (moto
    # answers them, so the signing is right), set against the allowance.
    rig = re.search(
        r"- W17 S3 rig floor: .* in (\d+\.\d+) s \(median\), (over|within) the", done.stdout
    )
    assert rig is not None and float(rig.group(1)) > 0, done.stdout


@pytest.mark.bench
def test_dataset_rows_run_at_quick_size_and_w22_starts_one_agent_per_run() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "bench/run.py",
            "--quick",
            "--only",
            "W18,W20,W21,W22,W24",
            "--runs",
            "2",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {row[0]: row for row in _rows(done.stdout)}
    assert set(rows) == {"W18", "W20", "W21", "W22", "W24"}
    for row in rows.values():
        assert row[2] == "2", row  # two measured runs each
        assert NUMBER.match(row[9]), row  # a ratio: eb and its floor both ran
        assert float(row[6]) > 5, row  # eb's own peak RSS
    assert "(see notes)" not in done.stdout, done.stdout
    # W21 reused every verdict and W22 all but the edited one, with exactly one agent start
    # per run: a wrong count would be a note voiding the row.
    assert rows["W20"][10] == "≤ 1.15, ≤ 150 MB"
    assert rows["W21"][10] == "≤ 1.5" and rows["W22"][10] == "≤ 2"
    # W24's floor is eb too: the same family over an artifact of the prices alone.
    assert rows["W24"][10] == "≤ 1.25" and "KB artifact" in rows["W24"][1]


def test_an_agent_start_count_other_than_expected_voids_the_row(tmp_path: Path) -> None:
    from bench.run import bench_case

    log = tmp_path / "starts.log"
    starter = f"open({str(log)!r}, 'a').write('started\\n')"
    case = Case(
        key="W22",
        name="two starts where one is expected",
        eb_args=["--version"],
        floor=[sys.executable, "-c", f"{starter}; {starter}"],
        floor_label="python",
        target=None,
        agent_log=log,
        agent_starts_per_run=1,
        before_eb=lambda run: (tmp_path / f"edited-{run}").write_text("x"),
        runs=2,
    )
    row = bench_case(case=case, runs=2, warmup=False, timeout=60)
    # The floor's starts fall outside eb's runs; eb itself starts none.
    assert row.problems == ["eb started 0 agents in a run, expected 1"]
    assert sorted(path.name for path in tmp_path.glob("edited-*")) == ["edited-0", "edited-1"]


def test_unknown_workload_is_a_usage_error() -> None:
    done = subprocess.run(
        [sys.executable, "bench/run.py", "--only", "W99"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "W99" in done.stderr


def _row(key: str, **targets: float) -> Row:
    """A row of one 1.5 s eb sample (150 MB) against one 1.0 s floor sample."""
    bounds: dict[str, float | None] = {"target": None, **targets}
    case = Case(key=key, name="n", eb_args=[], floor=[], floor_label="f", **bounds)  # type: ignore[arg-type]
    return Row(
        case=case,
        eb=[Sample(seconds=1.5, rc=0, rss_kb=150 * 1024)],
        floor=[Sample(seconds=1.0, rc=0, rss_kb=None)],
    )


def test_every_bound_a_case_sets_must_hold() -> None:
    assert row_met(_row("W1", target=1.5))
    assert not row_met(_row("W1", target=1.4))
    assert row_met(_row("W8", target_over_s=0.5))
    assert not row_met(_row("W8", target_over_s=0.4))
    assert row_met(_row("W10", seconds_target=2, memory_target_mb=200))
    assert not row_met(_row("W10", seconds_target=2, memory_target_mb=100))
    assert not row_met(_row("W10", seconds_target=1, memory_target_mb=200))
    assert row_cells(_row("W10", seconds_target=2, memory_target_mb=200))[10] == "≤ 2 s, ≤ 200 MB"


def test_a_row_without_samples_is_not_met_and_prints_dashes() -> None:
    case = Case(
        key="W11", name="page", eb_args=[], floor=[], floor_label="f", target=None, seconds_target=2
    )
    row = Row(case=case, problems=["chromium and chromedriver are needed"])
    cells = row_cells(row)
    assert not row_met(row)
    assert cells[3] == cells[8] == cells[9] == "—"
    assert cells[11] == "NO (see notes)"


def test_each_doc_block_gets_the_rows_of_its_workloads_only() -> None:
    rows = [
        _row(key, target=2)
        for key in (
            "W0",
            "W7",
            "W9",
            "W10",
            "W11",
            "W12",
            "W13",
            "W14",
            "W15",
            "W16",
            "W17",
            "W19",
            "W20",
            "W23",
            "W24",
            "W99",
        )
    ]
    blocks = {
        block.name: ([row.case.key for row in mine], block.paths)
        for block, mine in rows_by_block(rows=rows)
    }
    assert blocks == {
        "bench-table": (["W0", "W99"], (DOC,)),  # a workload no block claims: the main table
        "bench-table-incremental": (["W7", "W9"], (DOC,)),
        "scale-out-figures": (["W10", "W11"], (DOC, SCALE_DOC)),
        "isolation-figures": (["W13", "W14"], (DOC,)),
        "bench-table-sampling": (["W12"], (DOC,)),
        "schedule-figures": (["W15", "W16"], (DOC, SCHEDULE_DOC)),
        "bench-table-history": (["W19", "W23"], (DOC,)),
        "shared-cache-figures": (["W17"], (DOC,)),
        "bench-table-datasets": (["W20", "W24"], (DOC,)),
    }
    assert [block.name for block, _ in rows_by_block(rows=rows[3:5])] == ["scale-out-figures"]
    for name in (
        "bench-table",
        "bench-table-incremental",
        "scale-out-figures",
        "bench-table-sampling",
        "isolation-figures",
        "schedule-figures",
        "bench-table-history",
        "shared-cache-figures",
        "bench-table-datasets",
    ):
        assert f"<!-- {name}:start -->" in DOC.read_text()
    assert "<!-- scale-out-figures:start -->" in SCALE_DOC.read_text()
    assert "<!-- schedule-figures:start -->" in SCHEDULE_DOC.read_text()


def test_the_w15_durations_are_the_workload_the_issue_names() -> None:
    from bench import schedule

    drawn = schedule.draws(count=64, seed=schedule.SEED)
    assert drawn == schedule.draws(count=64, seed=schedule.SEED)  # drawn once: a fixed seed
    assert 0.45 <= statistics.median(drawn) <= 0.55 and 3.5 <= max(drawn) <= 4.5
    assert schedule.lpt_bound(durations=[4.0, 1.0, 1.0], parallel=2) == 4.0
    assert schedule.lpt_bound(durations=[1.0] * 16, parallel=8) == 2.0


def test_the_exact_split_chance_matches_counting_every_assignment() -> None:
    # 9 ids over 3 shards, within a third of an even 3 (2 to 4 each): count all 3^9 outcomes.
    inside = sum(
        1
        for outcome in itertools.product(range(3), repeat=9)
        if all(2 <= outcome.count(shard) <= 4 for shard in range(3))
    )
    assert split.exact_within(checks=9, shards=3, tolerance=1 / 3) == pytest.approx(
        inside / 3**9, rel=1e-9
    )


def test_every_studied_assignment_is_stable_and_in_range() -> None:
    ids = [f"id_{index}" for index in range(300)]
    for name, assign in split.ASSIGNMENTS.items():
        alone = {check_id: assign(check_id, 8) for check_id in ids}
        assert all(0 <= shard < 8 for shard in alone.values()), name
        # A function of the id alone: the same answer in any company, in any order.
        assert {check_id: assign(check_id, 8) for check_id in reversed(ids)} == alone, name
    # eb's own assignment is the one in the table's first row.
    first = next(iter(split.ASSIGNMENTS.values()))
    assert [first(i, 8) + 1 for i in ids] == [split.shard_of(check_id=i, total=8) for i in ids]


def test_jump_hash_moves_only_the_keys_of_the_new_bucket() -> None:
    keys = [split._sha256_key(f"id_{index}") for index in range(2000)]
    before = [split.jump_bucket(key=key, buckets=8) for key in keys]
    after = [split.jump_bucket(key=key, buckets=9) for key in keys]
    moved = [(old, new) for old, new in zip(before, after, strict=True) if old != new]
    assert all(new == 8 for _, new in moved)
    assert 0.06 < len(moved) / len(keys) < 0.17  # about 1/9


def test_write_doc_replaces_only_the_marked_block(tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    doc.write_text(f"intro\n{TABLE_START}\nold table\n{TABLE_END}\noutro\n")
    write_doc(path=doc, text="| new |")
    assert doc.read_text() == f"intro\n{TABLE_START}\n| new |\n{TABLE_END}\noutro\n"


def test_generated_workloads_are_deterministic_and_cached() -> None:
    first = generate.workload(key="W3", sizes=generate.QUICK)
    marker = (first / generate.MARKER).stat().st_mtime_ns
    files = sorted(path.relative_to(first) for path in first.rglob("*.yaml"))
    again = generate.workload(key="W3", sizes=generate.QUICK)
    assert again == first
    assert (again / generate.MARKER).stat().st_mtime_ns == marker  # reused, not rebuilt
    assert len(files) == generate.QUICK.w3_checks
