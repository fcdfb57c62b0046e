"""Time-aware scheduling workloads (docs/scheduling.md): W15 and W16.

W15: judges whose stand-in agents sleep for durations drawn once (a fixed seed) from a
log-normal distribution, run at parallel P with their history recorded: `eb run` (longest
expected first) against `eb run --schedule plan` in the same call, and its wall time against
the longest-processing-time bound max(longest, sum / P).

W16: a thousand such judges, with thirty recorded runs of them, split into 8 shards by
`eb list --shard K/8 --balance history` (the same split `eb run` makes, without running a
judge), against the id hash: the slowest shard's summed duration over the mean shard's.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bench.generate import AGENTS_DIR, Sizes, write_config

if TYPE_CHECKING:
    from eval_banana.history.record import HistoryRecord

SLEEP_AGENT = AGENTS_DIR / "sleep_agent.sh"
MEDIAN_S = 0.5
# With 64 draws from this spread the longest is about 4 s, as the workload asks.
SIGMA = 0.87
SEED = 105  # 64 draws: median 0.50 s, longest 3.9 s, sum 44 s
TARGET = 1.05
DURATIONS_FILE = "durations.json"


@dataclass(frozen=True)
class ScheduleSizes:
    w15_judges: int
    w15_parallel: int
    w15_scale: float  # every drawn duration times this (quick mode: a tenth)
    w16_judges: int
    w16_shards: int
    w16_runs: int  # recorded runs of the judges in the history


FULL = ScheduleSizes(
    w15_judges=64, w15_parallel=8, w15_scale=1.0, w16_judges=1000, w16_shards=8, w16_runs=30
)
QUICK = ScheduleSizes(
    w15_judges=8, w15_parallel=4, w15_scale=0.1, w16_judges=40, w16_shards=4, w16_runs=3
)


def sizes_of(sizes: Sizes) -> ScheduleSizes:
    return FULL if sizes.name == "full" else QUICK


def draws(*, count: int, seed: int, scale: float = 1.0) -> list[float]:
    """`count` durations in seconds (ms precision) from the log-normal of median MEDIAN_S."""
    rng = random.Random(seed)
    return [round(scale * rng.lognormvariate(math.log(MEDIAN_S), SIGMA), 3) for _ in range(count)]


def lpt_bound(*, durations: Sequence[float], parallel: int) -> float:
    """No schedule of these jobs on `parallel` workers ends sooner than this."""
    return max(max(durations), sum(durations) / parallel)


def _judge_yaml(*, check_id: str, seconds: float) -> str:
    return (
        "schema_version: 1\n"
        f"id: {check_id}\n"
        "type: harness_judge\n"
        f"description: Bench judge {check_id} takes its time.\n"
        "instructions: |\n"
        f"  Read README.md and decide whether it says what the project is. sleep={seconds}\n"
        '  Answer with {"score": 1, "reason": "..."} or {"score": 0, "reason": "..."}.\n'
    )


def _project(*, project: Path, durations: dict[str, float]) -> None:
    write_config(project=project, agent_command=["sh", str(SLEEP_AGENT)], dialect="text")
    (project / "README.md").write_text("A bench project.\n")
    for check_id, seconds in durations.items():
        path = project / "eval_checks" / f"{check_id}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_judge_yaml(check_id=check_id, seconds=seconds))
    (project.parent / DURATIONS_FILE).write_text(json.dumps(durations, indent=1) + "\n")


# W15 -----------------------------------------------------------------------------------------


def w15_durations(*, sizes: Sizes) -> dict[str, float]:
    mine = sizes_of(sizes)
    seconds = draws(count=mine.w15_judges, seed=SEED, scale=mine.w15_scale)
    return {f"judge_{index:02d}": value for index, value in enumerate(seconds)}


def build_w15(*, sizes: Sizes) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        _project(project=root / "project", durations=w15_durations(sizes=sizes))

    return build


def w15_notes(*, root: Path, sizes: Sizes, eb_median: float, plan_median: float) -> list[str]:
    """The bound the W15 row is held to, from the drawn durations and from the recorded ones."""
    from eval_banana.history.recent import latest_seconds, recent_timings

    mine = sizes_of(sizes)
    drawn = list(json.loads((root / DURATIONS_FILE).read_text()).values())
    bound = lpt_bound(durations=drawn, parallel=mine.w15_parallel)
    folder = root / "project" / ".eval-banana" / "history"
    recorded = list(latest_seconds(runs=recent_timings(folder=folder)).values())
    seen = (
        f"; from the durations the history recorded (agent start-up included) it is "
        f"{lpt_bound(durations=recorded, parallel=mine.w15_parallel):.3f} s"
        if recorded
        else ""
    )
    return [
        *_w15_span(root=root, bound=bound, parallel=mine.w15_parallel),
        f"- W15: {len(drawn)} judges sleeping {min(drawn):.3f} to {max(drawn):.3f} s (median "
        f"{sorted(drawn)[len(drawn) // 2]:.3f} s, sum {sum(drawn):.1f} s) at parallel "
        f"{mine.w15_parallel}: the longest-processing-time bound max(longest, sum / "
        f"{mine.w15_parallel}) is {bound:.3f} s{seen}. Longest expected first took "
        f"{eb_median:.3f} s ({eb_median / bound:.3f} x the bound; target <= {TARGET}: "
        f"{'met' if eb_median <= TARGET * bound else 'NOT met'}), plan order "
        f"{plan_median:.3f} s ({plan_median / bound:.3f} x).",
    ]


def _w15_span(*, root: Path, bound: float, parallel: int) -> list[str]:
    """One more run, longest expected first, taken apart: from eb's start to its first judge,
    the judges' own span (first start to last end, what the order decides), and from the last
    judge to eb's exit (the reports)."""
    import tempfile
    import time
    from datetime import datetime

    with tempfile.TemporaryDirectory(prefix="eb-w15-") as scratch:
        command = [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root / "project")]
        command += ["--max-parallel-checks", str(parallel), "--history", "off"]
        started = time.time()
        subprocess.run([*command, "--output-dir", scratch], capture_output=True, check=False)
        ended = time.time()
        found = sorted(Path(scratch).glob("*/stages/execute.json"))
        if not found:
            return ["- W15 span: the extra run left no execute.json"]
        results = json.loads(found[0].read_text())["results"]
    starts = [datetime.fromisoformat(item["started_at"]).timestamp() for item in results]
    ends = [datetime.fromisoformat(item["completed_at"]).timestamp() for item in results]
    span = max(ends) - min(starts)
    return [
        f"- W15 span: one more run, longest expected first, took {ended - started:.3f} s in all: "
        f"{min(starts) - started:.3f} s from eb's start to its first judge (interpreter, "
        f"imports, discovery, validation, the history read), {span:.3f} s from the first "
        f"judge's start to the last one's end ({span / bound:.3f} x the bound; that span is "
        f"what the start order decides), and {ended - max(ends):.3f} s from the last judge's "
        "end to eb's exit (the stage files and reports)."
    ]


def w15_target(*, root: Path, sizes: Sizes) -> float:
    """The W15 row's bound on eb's wall time: TARGET x the bound of the drawn durations.

    Not rounded: the row and its note compare eb's median with the same number (rounded to the
    millisecond, a median of 5.8321 s once read as over a bound of 5.83222 s)."""
    drawn = list(json.loads((root / DURATIONS_FILE).read_text()).values())
    return TARGET * lpt_bound(durations=drawn, parallel=sizes_of(sizes).w15_parallel)


# W16 -----------------------------------------------------------------------------------------


def w16_durations(*, sizes: Sizes) -> dict[str, float]:
    mine = sizes_of(sizes)
    seconds = draws(count=mine.w16_judges, seed=SEED + 1)
    return {f"judge_{index:04d}": value for index, value in enumerate(seconds)}


def _record(*, index: int, durations: dict[str, float], rng: random.Random) -> HistoryRecord:
    """Recorded run `index`: every judge passed, in its duration give or take a tenth."""
    from eval_banana.history.record import HistoryRecord

    checks = [
        {
            "id": check_id,
            "type": "harness_judge",
            "status": "passed",
            "digest": "sha256:" + "0" * 64,
            "duration_ms": int(1000 * seconds * rng.lognormvariate(0.0, 0.1)),
        }
        for check_id, seconds in durations.items()
    ]
    moment = f"2026-01-01T00:{index // 60:02d}:{index % 60:02d}.000000+00:00"
    return HistoryRecord.model_validate(
        {
            "tool_version": "0.0.0",
            "run_id": f"20260101_00{index // 60:02d}{index % 60:02d}_{index:08x}",
            "kind": "run",
            "started_at": moment,
            "finished_at": moment,
            "duration_ms": 1000,
            "passed": True,
            "exit_code": 0,
            "percentage": 100.0,
            "totals": {"checks": len(checks), "passed": len(checks), "failed": 0, "errored": 0},
            "checks": checks,
        }
    )


def build_w16(*, sizes: Sizes) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        from eval_banana.history.store import write_record

        durations = w16_durations(sizes=sizes)
        project = root / "project"
        _project(project=project, durations=durations)
        rng = random.Random(SEED + 2)
        folder = project / ".eval-banana" / "history"
        for index in range(sizes_of(sizes).w16_runs):
            record = _record(index=index, durations=durations, rng=rng)
            write_record(folder=folder, record=record)

    return build


def listed(*, project: Path, shard: str, balance: str) -> list[str]:
    """The ids `eb list --shard` gives a shard (the split `eb run` would run)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "eval_banana",
            "list",
            "--cwd",
            str(project),
            "--shard",
            shard,
            "--balance",
            balance,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return [line.split("\t", 1)[0] for line in done.stdout.splitlines() if line.strip()]


def shard_ratio(*, project: Path, total: int, balance: str, durations: dict[str, float]) -> float:
    """The slowest shard's summed duration over the mean shard's."""
    loads = [
        sum(
            durations[check_id]
            for check_id in listed(project=project, shard=f"{k}/{total}", balance=balance)
        )
        for k in range(1, total + 1)
    ]
    return max(loads) / (sum(loads) / total)


def w16_notes(*, root: Path, sizes: Sizes) -> list[str]:
    """How even the history split is, against the hash split, by the judges' true durations."""
    mine = sizes_of(sizes)
    durations = json.loads((root / DURATIONS_FILE).read_text())
    project = root / "project"
    total = mine.w16_shards
    balanced = shard_ratio(project=project, total=total, balance="history", durations=durations)
    hashed = shard_ratio(project=project, total=total, balance="hash", durations=durations)
    return [
        f"- W16: {len(durations)} judges ({sum(durations.values()):.0f} s in all) with "
        f"{mine.w16_runs} recorded runs, split into {total} shards: by history the slowest "
        f"shard takes {balanced:.3f} x the mean shard (target <= {TARGET}: "
        f"{'met' if balanced <= TARGET else 'NOT met'}); by the id hash {hashed:.3f} x."
    ]
