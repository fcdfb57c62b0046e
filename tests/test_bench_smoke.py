"""The benchmark suite's smoke mode: it must keep running (issue 7); its timings never gate CI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if (
    str(REPO) not in sys.path
):  # `bench/` is not installed; plain `pytest` may not put the repo first
    sys.path.insert(0, str(REPO))

from bench import generate  # noqa: E402
from bench.run import TABLE_END, TABLE_START, write_doc  # noqa: E402

WORKLOADS = ("W0", "W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9")
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


@pytest.mark.slow
def test_quick_mode_prints_a_row_with_numbers_for_every_workload() -> None:
    done = subprocess.run(
        [sys.executable, "bench/run.py", "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    header = next(line for line in done.stdout.splitlines() if line.startswith("| key"))
    names = [cell.strip() for cell in header.strip("|").split("|")]
    rows = _rows(done.stdout)
    assert {row[0] for row in rows} == set(WORKLOADS)
    for row in rows:
        assert len(row) == len(names), row
        cell = dict(zip(names, row, strict=True))
        for column in ("eb median s", "min", "max", "floor median s", "ratio", "eb peak RSS MB"):
            assert NUMBER.match(cell[column]), (column, row)
        assert float(cell["ratio"]) > 0
        # eb's own RSS: a Python process with pydantic loaded is tens of MB, never under 5.
        assert float(cell["eb peak RSS MB"]) > 5
        assert cell["met"].startswith(("yes", "NO"))


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
