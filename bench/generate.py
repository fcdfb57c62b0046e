"""Workload generator for the benchmark suite: deterministic projects, cached in a temp folder.

Each workload lives in `<tmp>/eval-banana-bench/<key>-<size>/`; a `.bench-complete` marker holds a
fingerprint of everything that shaped it, so a cached tree is reused only when it would be rebuilt
byte for byte the same. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from eval_banana.checks.shard import shard_of
from eval_banana.core.stem import artifact_stem

GENERATOR_VERSION = "8"
BENCH_DIR = Path(__file__).resolve().parent
AGENTS_DIR = BENCH_DIR / "agents"
STREAM_AGENT = AGENTS_DIR / "stream_agent.py"
PROSE_AGENT = AGENTS_DIR / "prose_agent.py"
COUNT_AGENT = AGENTS_DIR / "count_agent.py"
DIALECT_AGENT = AGENTS_DIR / "dialect_agent.py"
# The verdict dialects eb reads (eval_banana/harness/templates.py OUTPUT_DIALECTS), for W14.
DIALECTS = ("text", "codex", "claude", "gemini", "openhands")
MARKER = ".bench-complete"
EXCLUDED = ("node_modules", ".venv", ".git", "dist", "build", "__pycache__")
MB = 1024 * 1024
KB = 1024


@dataclass(frozen=True)
class Sizes:
    """Every size knob of the suite; `FULL` is the issue's workload, `QUICK` the CI smoke."""

    name: str
    w1_checks: int
    w2_files: int
    w2_folders: int
    w2_check_dirs: int
    w2_checks: int
    w3_checks: int
    w4_stream_bytes: tuple[int, ...]
    w4_error_bytes: int
    w4_prose_bytes: tuple[int, ...]
    w5_bytes: int
    w6_judges: int
    w6_sleep: float
    w6_parallel: tuple[int, ...]
    w7_judges: int
    w8_modified: int
    w10_checks: int
    w10_shards: int
    w12_judges: int
    w12_repeats: int
    w12_sleep: float
    w12_parallel: int
    w13_judges: int
    w14_bytes: tuple[int, ...]
    w19_runs: int
    w19_checks: int
    w18_cases: int
    w20_cases: int
    w21_cases: int
    w24_cases: int
    w24_artifact_bytes: int
    w25_cases: int
    w26_cases: int
    w26_runs: int
    w17_judges: int = 1_000  # W17: judges cached on S3 only
    w17_slow_judges: int = 100  # W17: judges against a remote that never answers


FULL = Sizes(
    name="full",
    w1_checks=200,
    w2_files=60_000,
    w2_folders=3_000,
    w2_check_dirs=50,
    w2_checks=500,
    w3_checks=2_000,
    w4_stream_bytes=(1 * MB, 10 * MB, 50 * MB),
    w4_error_bytes=10 * MB,
    w4_prose_bytes=(32 * KB, 128 * KB),
    w5_bytes=300 * MB,
    w6_judges=16,
    w6_sleep=0.5,
    w6_parallel=(1, 4, 16),
    w7_judges=1_000,
    w8_modified=10,
    w10_checks=10_000,
    w10_shards=8,
    w12_judges=16,
    w12_repeats=5,
    w12_sleep=0.5,
    w12_parallel=16,
    w13_judges=16,
    w14_bytes=(50 * MB, 300 * MB),
    w19_runs=500,
    w19_checks=1_000,
    w18_cases=10_000,
    w20_cases=10_000,
    w21_cases=1_000,
    w24_cases=1_000,
    w24_artifact_bytes=5 * MB,
    w25_cases=10_000,
    w26_cases=500,
    w26_runs=30,
)

QUICK = Sizes(
    name="quick",
    w1_checks=12,
    w2_files=600,
    w2_folders=60,
    w2_check_dirs=5,
    w2_checks=20,
    w3_checks=40,
    w4_stream_bytes=(64 * KB, 1 * MB),
    w4_error_bytes=256 * KB,
    w4_prose_bytes=(32 * KB,),
    w5_bytes=4 * MB,
    w6_judges=4,
    w6_sleep=0.1,
    w6_parallel=(1, 4),
    w7_judges=20,
    w8_modified=10,
    w10_checks=40,
    w10_shards=4,
    w12_judges=4,
    w12_repeats=2,
    w12_sleep=0.1,
    w12_parallel=4,
    w13_judges=2,
    w14_bytes=(256 * KB,),
    w19_runs=20,
    w19_checks=50,
    w18_cases=200,
    w17_judges=20,
    w17_slow_judges=10,
    w20_cases=40,
    w21_cases=20,
    w24_cases=40,
    w24_artifact_bytes=256 * KB,
    w25_cases=40,
    w26_cases=20,
    w26_runs=3,
)


def cache_root() -> Path:
    """`$TMPDIR/eval-banana-bench` (or the platform temp folder)."""
    return Path(tempfile.gettempdir()) / "eval-banana-bench"


def _fingerprint(*, key: str, sizes: Sizes) -> str:
    agents = b"".join(path.read_bytes() for path in sorted(AGENTS_DIR.glob("*.py")))
    known = asdict(sizes)
    run_workload = key in RUN_WORKLOADS
    payload = json.dumps(
        {
            "version": GENERATOR_VERSION,
            "key": key,
            # W10 takes many minutes to build and uses no agent: only its own sizes shape it,
            # so a new workload's knob or agent script does not rebuild it.
            "sizes": {k: v for k, v in known.items() if k.startswith("w10_")}
            if run_workload
            else known,
            "python": sys.executable,
            "agents_dir": str(AGENTS_DIR),
            "agents": None if run_workload else hashlib.sha256(agents).hexdigest(),
            # W10 holds run folders eb wrote, W7 the verdict cache its runs fill: a change of
            # their formats must rebuild them.
            "formats": _formats_digest() if key in FORMAT_WORKLOADS else None,
            # W10's shard folders hold the checks eb's split gave each: a new split rebuilds.
            "split": _split_digest(sizes=sizes) if run_workload else None,
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def _split_digest(*, sizes: Sizes) -> str:
    ids = [*w10_base_checks(sizes=sizes), *w10_head_checks(sizes=sizes)]
    shards = bytes(shard_of(check_id=check_id, total=sizes.w10_shards) for check_id in ids)
    return hashlib.sha256(shards).hexdigest()


def _formats_digest() -> str:
    schemas = sorted((BENCH_DIR.parent / "eval_banana" / "schemas").rglob("*.json"))
    return hashlib.sha256(b"".join(path.read_bytes() for path in schemas)).hexdigest()


def cached(*, key: str, sizes: Sizes, build: Callable[[Path], None]) -> Path:
    """The folder for `key` at `sizes`, built by `build(folder)` unless a matching cache exists."""
    folder = cache_root() / f"{key}-{sizes.name}"
    stamp = _fingerprint(key=key, sizes=sizes)
    marker = folder / MARKER
    if marker.is_file() and marker.read_text() == stamp:
        return folder
    partial = folder.with_name(folder.name + ".partial")
    for stale in (partial, folder):
        if stale.exists():
            shutil.rmtree(stale)
    # Run folders record absolute paths (W10): those are built where they stay, the marker last.
    target = folder if key in RUN_WORKLOADS else partial
    target.mkdir(parents=True)
    build(target)
    (target / MARKER).write_text(stamp)
    if target is partial:
        partial.rename(folder)
    return folder


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


def write_config(
    *,
    project: Path,
    agent_command: list[str] | None = None,
    dialect: str = "",
    cache: bool = False,
) -> None:
    """`.eval-banana/config.toml`; with `agent_command`, a custom agent named `benchagent`."""
    lines = [
        "[core]",
        "max_parallel_checks = 4",
        "check_timeout_seconds = 900",
        "",
        "[discovery]",
        f"exclude_dirs = {_toml_list(list(EXCLUDED))}",
    ]
    if cache:
        lines += ["", "[cache]", 'mode = "on"', "max_mb = 1024"]
    if agent_command is not None:
        lines += [
            "",
            "[harness]",
            'agent = "benchagent"',
            "timeout_seconds = 900",
            "",
            "[agents.benchagent]",
            f"command = {_toml_list(agent_command)}",
            'model_flag = ""',
        ]
        if dialect:
            lines.append(f'output_dialect = "{dialect}"')
    _write(project / ".eval-banana" / "config.toml", "\n".join(lines) + "\n")
    _write(project / "README.md", "# Bench project\n\nGenerated by bench/generate.py.\n")


def deterministic_yaml(*, check_id: str, script: str = "", script_path: str = "") -> str:
    """A deterministic check file with either an inline script or a script_path."""
    head = (
        "schema_version: 1\n"
        f"id: {check_id}\n"
        "type: deterministic\n"
        f"description: Bench check {check_id} verifies a generated fact.\n"
        "tags: [bench, generated]\n"
    )
    if script_path:
        return head + f"script_path: {script_path}\n"
    body = "".join(f"  {line}\n" for line in script.splitlines())
    return head + "script: |\n" + body


def judge_yaml(*, check_id: str) -> str:
    """A harness_judge check file."""
    return (
        "schema_version: 1\n"
        f"id: {check_id}\n"
        "type: harness_judge\n"
        f"description: Bench judge {check_id} reads the project.\n"
        "instructions: |\n"
        "  Read README.md and decide whether it says what the project is.\n"
        '  Answer with {"score": 1, "reason": "..."} or {"score": 0, "reason": "..."}.\n'
    )


# W0 ------------------------------------------------------------------------------------------


def build_w0(project: Path) -> None:
    write_config(project=project)
    _write(
        project / "eval_checks" / "one.yaml",
        deterministic_yaml(check_id="one", script="import sys\nsys.exit(0)"),
    )


# W1 ------------------------------------------------------------------------------------------

TRIVIAL_SCRIPT = "import sys\nsys.exit(0)\n"


def build_w1(*, sizes: Sizes) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        project = root / "project"
        write_config(project=project)
        scripts = root / "floor-scripts"
        scripts.mkdir()
        listing = []
        for index in range(sizes.w1_checks):
            check_id = f"trivial_{index:04d}"
            _write(
                project / "eval_checks" / f"{check_id}.yaml",
                deterministic_yaml(check_id=check_id, script=TRIVIAL_SCRIPT),
            )
            script = scripts / f"{check_id}.py"
            script.write_text(TRIVIAL_SCRIPT)
            listing.append(script.relative_to(root).as_posix())  # the floor runs in root
        (root / "floor-list.txt").write_text("\n".join(listing) + "\n")

    return build


# W2 ------------------------------------------------------------------------------------------


def build_w2(*, sizes: Sizes) -> Callable[[Path], None]:
    """A monorepo: folders at several depths, excluded trees, check folders, decoy checks."""

    def build(root: Path) -> None:
        rng = random.Random(2)
        project = root / "project"
        write_config(project=project)
        folders: list[Path] = [project]
        excluded_folders: list[Path] = []  # the pruned tops
        excluded_all: list[Path] = []  # the pruned tops and the folders below them
        decoys = max(10, sizes.w2_check_dirs)
        budget = sizes.w2_folders - sizes.w2_check_dirs - decoys
        # Grow a tree: each new folder hangs below a random earlier one (depth varies naturally).
        while len(folders) + len(excluded_all) < budget:
            parent = rng.choice(folders)
            if rng.random() < 0.15:
                target = parent / EXCLUDED[len(excluded_folders) % len(EXCLUDED)]
                if target in excluded_folders:
                    continue
                excluded_folders.append(target)
                excluded_all.append(target)
                # Excluded folders get their own subfolders, so pruning saves real work.
                excluded_all += [target / f"lib{sub}" for sub in range(rng.randint(0, 3))]
                continue
            folders.append(parent / f"d{len(folders):04d}")
        check_parents = rng.sample(folders[1:], sizes.w2_check_dirs)
        check_dirs = [parent / "eval_checks" for parent in check_parents]
        for folder in folders + excluded_all + check_dirs:
            folder.mkdir(parents=True, exist_ok=True)
        per_dir = sizes.w2_checks // sizes.w2_check_dirs
        written = 0
        for dir_index, folder in enumerate(check_dirs):
            for index in range(per_dir):
                check_id = f"mono_{dir_index:03d}_{index:03d}"
                text = deterministic_yaml(check_id=check_id, script=TRIVIAL_SCRIPT)
                (folder / f"{check_id}.yaml").write_text(text)
                written += 1
        # Decoys: valid-looking checks (some with clashing ids) that discovery must never see.
        for index, base in enumerate(excluded_folders[:decoys]):
            decoy = base / "eval_checks" / f"decoy_{index:03d}.yaml"
            _write(decoy, deterministic_yaml(check_id="mono_000_000", script="raise SystemExit(1)"))
            written += 1
        every = folders + excluded_all
        filler = "x = 1\n" * 8
        while written < sizes.w2_files:
            folder = every[written % len(every)]
            suffix = (".py", ".js", ".json", ".md", ".txt", ".yaml")[written % 6]
            (folder / f"f{written:06d}{suffix}").write_text(filler)
            written += 1
        (root / "expected-checks.txt").write_text(f"{per_dir * sizes.w2_check_dirs}\n")

    return build


# W3 ------------------------------------------------------------------------------------------

W3_SCRIPT = """\
import json
import sys
from pathlib import Path

context = json.loads(Path(sys.argv[1]).read_text())
root = Path(context["project_root"])
readme = root / "README.md"
if not readme.is_file():
    sys.exit("README.md is missing")
words = readme.read_text().split()
if len(words) < 3:
    sys.exit("README.md is too short: " + str(len(words)) + " words")
print("README has", len(words), "words")
"""


def build_w3(*, sizes: Sizes) -> Callable[[Path], None]:
    """Many check files of a realistic size, 100 to a folder."""

    def build(root: Path) -> None:
        project = root / "project"
        write_config(project=project)
        for index in range(sizes.w3_checks):
            folder = project / "services" / f"svc{index // 100:02d}" / "eval_checks"
            check_id = f"check_{index:05d}"
            _write(
                folder / f"{check_id}.yaml", deterministic_yaml(check_id=check_id, script=W3_SCRIPT)
            )
        (root / "selected-id.txt").write_text(f"check_{sizes.w3_checks // 2:05d}\n")

    return build


# W4 ------------------------------------------------------------------------------------------


def w4_cases(*, sizes: Sizes) -> list[tuple[str, list[str], str, int]]:
    """(case name, agent command, dialect, expected eb exit code) for every W4 case."""
    python = sys.executable
    cases: list[tuple[str, list[str], str, int]] = []
    for size in sizes.w4_stream_bytes:
        command = [python, str(STREAM_AGENT), f"--bytes={size}", "--end=success"]
        cases.append((f"stream {_human(size)}", command, "claude", 0))
    error = [python, str(STREAM_AGENT), f"--bytes={sizes.w4_error_bytes}", "--end=error"]
    cases.append((f"stream {_human(sizes.w4_error_bytes)} error", error, "claude", 1))
    for size in sizes.w4_prose_bytes:
        command = [python, str(PROSE_AGENT), f"--bytes={size}"]
        cases.append((f"prose {_human(size)}", command, "text", 1))
    return cases


def _slug(name: str) -> str:
    return name.replace(" ", "-")


def build_w4(*, sizes: Sizes) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        for name, command, dialect, _ in w4_cases(sizes=sizes):
            project = root / _slug(name)
            write_config(project=project, agent_command=command, dialect=dialect)
            _write(project / "eval_checks" / "judge.yaml", judge_yaml(check_id="judge"))
        build_w4_page(root=root, judges=w4_page_judges(sizes=sizes))

    return build


def w4_project(*, root: Path, case: str) -> Path:
    return root / _slug(case)


# The page row of W4: a finished run of this many judges, each with a transcript.
W4_PAGE = "report-judges"


def w4_page_judges(*, sizes: Sizes) -> int:
    return 1000 if sizes.name == "full" else 40


def _judge_transcript(index: int) -> list[dict[str, object]]:
    """A judge's transcript as one reads a project: tool calls, their results, the answer."""
    events: list[dict[str, object]] = [
        {"kind": "message", "role": "user", "text": "You are acting as an evaluation judge. " * 12}
    ]
    for step in range(4):
        call_id = f"toolu_{index}_{step}"
        events += [
            {"kind": "message", "role": "assistant", "text": f"Step {step}: reading the sources."},
            {
                "kind": "tool_call",
                "tool": "Read" if step % 2 else "Grep",
                "call_id": call_id,
                "arguments": json.dumps({"file_path": f"src/module_{step}.py", "limit": 200}),
            },
            {
                "kind": "tool_result",
                "tool": "Read" if step % 2 else "Grep",
                "call_id": call_id,
                "text": "def handler(event):\n    return {'ok': True}\n" * 12,
            },
        ]
    score = 0 if index % 10 == 0 else 1
    verdict = json.dumps({"score": score, "reason": f"Judge {index} read the sources."})
    events += [
        {"kind": "answer", "text": verdict},
        {"kind": "usage", "usage": {"input_tokens": 1200, "output_tokens": 80}},
    ]
    return events


def build_w4_page(*, root: Path, judges: int) -> None:
    """A run folder as `eb run` leaves it (report.json and each judge's transcript), written
    directly: what is measured is the page, not a thousand agent processes."""
    run = root / W4_PAGE
    checks = []
    for index in range(judges):
        check_id = f"judge_{index:04d}"
        stem = artifact_stem(check_id=check_id)
        transcript = f"checks/{stem}.transcript.jsonl"
        lines = "".join(json.dumps(event) + "\n" for event in _judge_transcript(index))
        _write(run / transcript, lines)
        failed = index % 10 == 0
        checks.append(
            {
                "check_id": check_id,
                "check_type": "harness_judge",
                "status": "failed" if failed else "passed",
                "score": 0 if failed else 1,
                "reason": f"Judge {index} read the sources.",
                "duration_ms": 1500,
                "tags": ["judge"],
                "details": {"transcript_path": transcript, "output_dialect": "claude"},
            }
        )
    report = {"run_id": "bench", "checks": checks, "pass_threshold": 1.0, "run_passed": False}
    _write(run / "report.json", json.dumps(report))


# W5 ------------------------------------------------------------------------------------------


def w5_script(*, total: int) -> str:
    """A script that prints `total` bytes of text lines in 1 MB writes."""
    return (
        "import sys\n"
        "line = b'0123456789abcdef' * 63 + b'the end of a line\\n'\n"
        "block = line * (1048576 // len(line))\n"
        f"left = {total}\n"
        "write = sys.stdout.buffer.write\n"
        "while left > 0:\n"
        "    piece = block[:left]\n"
        "    write(piece)\n"
        "    left -= len(piece)\n"
    )


def build_w5(*, sizes: Sizes) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        project = root / "project"
        write_config(project=project)
        folder = project / "eval_checks"
        _write(folder / "loud.py", w5_script(total=sizes.w5_bytes))
        _write(folder / "loud.yaml", deterministic_yaml(check_id="loud", script_path="loud.py"))

    return build


# W6 ------------------------------------------------------------------------------------------


def w6_agent_command(*, sizes: Sizes) -> list[str]:
    return [sys.executable, str(STREAM_AGENT), f"--sleep={sizes.w6_sleep}", "--end=success"]


def build_w6(*, sizes: Sizes) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        project = root / "project"
        write_config(project=project, agent_command=w6_agent_command(sizes=sizes), dialect="claude")
        for index in range(sizes.w6_judges):
            check_id = f"sleepy_{index:02d}"
            _write(project / "eval_checks" / f"{check_id}.yaml", judge_yaml(check_id=check_id))
        (root / "prompts.txt").write_text("prompt\n" * sizes.w6_judges)

    return build


# W12 -----------------------------------------------------------------------------------------


def w12_agent_command(*, sizes: Sizes) -> list[str]:
    return [sys.executable, str(STREAM_AGENT), f"--sleep={sizes.w12_sleep}", "--end=success"]


def build_w12(*, sizes: Sizes) -> Callable[[Path], None]:
    """Judges sampled `repeats` times each: as many agent processes as judges x repeats."""

    def build(root: Path) -> None:
        project = root / "project"
        write_config(
            project=project, agent_command=w12_agent_command(sizes=sizes), dialect="claude"
        )
        for index in range(sizes.w12_judges):
            check_id = f"sampled_{index:02d}"
            text = judge_yaml(check_id=check_id) + f"repeats: {sizes.w12_repeats}\n"
            _write(project / "eval_checks" / f"{check_id}.yaml", text)
        (root / "prompts.txt").write_text("prompt\n" * (sizes.w12_judges * sizes.w12_repeats))

    return build


# W19 -----------------------------------------------------------------------------------------


def _w19_check(*, index: int, run: int, rng: random.Random) -> dict[str, object]:
    """One check of one run record: most pass, one in 20 flips, one in 50 fails from run 450
    on (so `eb history` looks back past its window for those), a few judges report a cost."""
    failing = index % 50 == 7 and run >= 450
    flipping = index % 20 == 3
    passed = not failing and (rng.random() < 0.5 if flipping else rng.random() < 0.98)
    entry: dict[str, object] = {
        "id": f"check_{index:04d}",
        "type": "harness_judge" if index % 10 == 0 else "deterministic",
        "status": "passed" if passed else "failed",
        "digest": f"sha256:{index:064x}",
        "duration_ms": int(rng.lognormvariate(6, 1)),
    }
    if index % 10 == 0:
        entry["cost_usd"] = round(rng.random() / 100, 6)
    if index % 4 == 0:
        entry["tags"] = ["judge" if index % 10 == 0 else "script"]
    return entry


def build_w19(*, sizes: Sizes) -> Callable[[Path], None]:
    """A history folder of `w19_runs` run records of `w19_checks` checks each, as eb writes
    them (one line of JSON, defaults left out), for `eb history`."""

    def build(root: Path) -> None:
        project = root / "project"
        write_config(project=project)
        folder = project / ".eval-banana" / "history"
        folder.mkdir(parents=True)
        rng = random.Random(17)
        for run in range(sizes.w19_runs):
            moment = f"2026-01-{1 + run // 100:02d}T{(run % 100) // 4:02d}:{run % 60:02d}:00"
            run_id = f"2026{1 + run // 100:04d}_{run:06d}_{run:08x}"
            checks = [
                _w19_check(index=index, run=run, rng=rng) for index in range(sizes.w19_checks)
            ]
            passed = sum(check["status"] == "passed" for check in checks)
            record = {
                "$schema": "https://eval-banana.dev/schemas/history-record.schema.json",
                "schema_version": 1,
                "tool_version": "0.0.0",
                "run_id": run_id,
                "kind": "run",
                "started_at": f"{moment}.000000+00:00",
                "finished_at": f"{moment}.900000+00:00",
                "duration_ms": 900,
                "git": {"commit": f"{run:040x}", "dirty": False},
                "passed": passed == len(checks),
                "exit_code": 0 if passed == len(checks) else 1,
                "percentage": 100.0 * passed / len(checks),
                "totals": {
                    "checks": len(checks),
                    "passed": passed,
                    "failed": len(checks) - passed,
                    "errored": 0,
                },
                "checks": checks,
            }
            name = f"{re.sub('[^0-9]', '', record['started_at'][:26])}-{run_id}.json"
            (folder / name).write_text(json.dumps(record, separators=(",", ":")) + "\n")

    return build


def _git_ready_w2_checks(*, project: Path) -> list[Path]:
    """Ignore the W2 tree's excluded folders in git; its real check files, in path order."""
    ignored = [f"{name}/" for name in EXCLUDED if name != ".git"] + [".eval-banana/"]
    (project / ".gitignore").write_text("\n".join(ignored) + "\n")
    return sorted(
        path
        for path in project.rglob("*.yaml")
        if path.parent.name == "eval_checks"
        and not any(part in EXCLUDED for part in path.relative_to(project).parts)
    )


# W7 ------------------------------------------------------------------------------------------


def w7_agent_log(*, root: Path) -> Path:
    return root / "agent-starts.log"


def build_w7(*, sizes: Sizes) -> Callable[[Path], None]:
    """Judges whose verdicts the bench stores once, then reuses: no agent may start again."""

    def build(root: Path) -> None:
        project = root / "project"
        # `root` is the `.partial` folder until the build completes: log where it will be.
        final = root.with_name(root.name.removesuffix(".partial"))
        command = [sys.executable, str(COUNT_AGENT), f"--log={w7_agent_log(root=final)}"]
        write_config(project=project, agent_command=command, dialect="text", cache=True)
        for index in range(sizes.w7_judges):
            check_id = f"judge_{index:04d}"
            folder = project / "services" / f"svc{index // 100:02d}" / "eval_checks"
            _write(folder / f"{check_id}.yaml", judge_yaml(check_id=check_id))

    return build


# W8 / W9 -------------------------------------------------------------------------------------

GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
GIT += ["-c", "commit.gpgsign=false", "-c", "core.autocrlf=false"]


def _git(project: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=project, check=True, capture_output=True)


def build_w8(*, sizes: Sizes) -> Callable[[Path], None]:
    """The W2 tree as a git repository: half its checks declare `inputs:` (their own folder),
    everything committed, then `w8_modified` tracked files edited and left unstaged."""

    def build(root: Path) -> None:
        build_w2(sizes=sizes)(root)
        project = root / "project"
        write_config(project=project, cache=True)
        checks = _git_ready_w2_checks(project=project)
        for position, check in enumerate(checks):
            if position % 2 == 0:
                folder = check.parent.parent.relative_to(project).as_posix()
                check.write_text(check.read_text() + f'inputs: ["{folder}/*.py"]\n')
        _git(project, "init", "-q")
        _git(project, "add", "-A")
        _git(project, "commit", "-q", "-m", "W8 tree")
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", "*.txt"],
            cwd=project,
            check=True,
            capture_output=True,
        ).stdout.split(b"\0")
        tracked = sorted(item.decode() for item in listed if item)
        for relative in random.Random(8).sample(tracked, sizes.w8_modified):
            with (project / relative).open("a") as handle:
                handle.write("edited after the commit\n")
        (root / "expected-checks.txt").write_text(f"{len(checks)}\n")
        (root / "keying-check.txt").write_text(f"{w8_check_id(path=checks[1])}\n")

    return build


def w8_check_id(*, path: Path) -> str:
    """The id in a generated check file (its `id:` line)."""
    line = next(line for line in path.read_text().splitlines() if line.startswith("id: "))
    return line[len("id: ") :].strip()


def w8_keying_check(*, root: Path) -> str:
    """A W8 check without `inputs:`, so running it alone keys the whole tree."""
    recorded = root / "keying-check.txt"
    if not recorded.is_file():  # a tree generated before this file was written
        checks = sorted(
            path
            for path in (root / "project").rglob("*.yaml")
            if path.parent.name == "eval_checks"
            and not any(part in EXCLUDED for part in path.relative_to(root / "project").parts)
        )
        recorded.write_text(f"{w8_check_id(path=checks[1])}\n")
    return recorded.read_text().strip()


# W10 / W11 -----------------------------------------------------------------------------------

# W10's runs are made by eb itself (minutes at full size), so only a format change or a new
# generator rebuilds them.
RUN_WORKLOADS = frozenset({"W10"})
# W16 holds history records the generator wrote: a change of their format rebuilds it.
FORMAT_WORKLOADS = RUN_WORKLOADS | {"W7", "W16", "W21"}
FAILING_EVERY = 100  # base: check_00099, check_00199, ... fail
REMOVED_EVERY = 200  # head: check_00007, check_00207, ... are gone
NEW_CHECKS_PER_10K = 50
FAILING_SCRIPT = "import sys\nsys.exit('planted failure')\n"


def w10_base_checks(*, sizes: Sizes) -> dict[str, str]:
    """Check id -> script of the base project: trivial checks, one in a hundred failing."""
    return {
        f"check_{index:05d}": FAILING_SCRIPT
        if index % FAILING_EVERY == FAILING_EVERY - 1
        else TRIVIAL_SCRIPT
        for index in range(sizes.w10_checks)
    }


def w10_head_checks(*, sizes: Sizes) -> dict[str, str]:
    """The head project: some checks removed, some added, some regressed or fixed or edited."""
    checks = w10_base_checks(sizes=sizes)
    for index in range(7, sizes.w10_checks, REMOVED_EVERY):
        del checks[f"check_{index:05d}"]
    for index in range(13, sizes.w10_checks, REMOVED_EVERY):  # regressions
        checks[f"check_{index:05d}"] = FAILING_SCRIPT
    for index in range(FAILING_EVERY - 1, sizes.w10_checks, 2 * FAILING_EVERY):  # fixes
        checks[f"check_{index:05d}"] = TRIVIAL_SCRIPT
    for index in range(29, sizes.w10_checks, REMOVED_EVERY):  # edited, still passing
        checks[f"check_{index:05d}"] = "import sys\nsys.exit(0)  # edited\n"
    added = max(2, sizes.w10_checks * NEW_CHECKS_PER_10K // 10_000)
    for index in range(added):
        checks[f"new_{index:03d}"] = FAILING_SCRIPT if index % 10 == 0 else TRIVIAL_SCRIPT
    return checks


def _w10_project(*, project: Path, checks: dict[str, str]) -> None:
    """The checks in folders of a hundred (`check_01234` in part012/, new ones in part_new/)."""
    write_config(project=project)
    for check_id, script in checks.items():
        number = check_id.removeprefix("check_")
        part = f"part{int(number) // 100:03d}" if number.isdigit() else "part_new"
        path = project / "eval_checks" / part / f"{check_id}.yaml"
        _write(path, deterministic_yaml(check_id=check_id, script=script))


def _eb(*args: str) -> int:
    """A real eb process (quiet); the generator needs its exit code only."""
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=BENCH_DIR.parent,
        check=False,
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"eb {' '.join(args)} exited {done.returncode}: {done.stderr[-800:]!r}")
    return done.returncode


def build_w10(*, sizes: Sizes) -> Callable[[Path], None]:
    """Two projects, a one-machine run of the base, N shard runs of the head and their merge.

    W11 runs the base project on one machine again, and opens the base run's report.html.
    """

    def build(root: Path) -> None:
        base, head, runs = root / "project-base", root / "project-head", root / "runs"
        _w10_project(project=base, checks=w10_base_checks(sizes=sizes))
        _w10_project(project=head, checks=w10_head_checks(sizes=sizes))
        scripts = root / "floor-scripts"
        scripts.mkdir()
        listing = []
        # The floor of a one-machine run: as many interpreters, each running a trivial script.
        for check_id in w10_base_checks(sizes=sizes):
            (scripts / f"{check_id}.py").write_text(TRIVIAL_SCRIPT)
            listing.append(f"floor-scripts/{check_id}.py")
        (root / "floor-list.txt").write_text("\n".join(listing) + "\n")
        flat = ["--max-parallel-checks", "4", "--flat-output"]
        _eb("run", "--cwd", str(base), "--output-dir", str(runs / "base"), *flat)
        shard_dirs = [str(path) for path in w10_shard_dirs(root=root, sizes=sizes)]
        for index, shard_dir in enumerate(shard_dirs, start=1):
            shard = f"{index}/{sizes.w10_shards}"
            _eb("run", "--cwd", str(head), "--shard", shard, "--output-dir", shard_dir, *flat)
        merged = ["--cwd", str(head), "--output-dir", str(runs / "merged"), "--flat-output"]
        _eb("merge", *shard_dirs, *merged)

    return build


def w10_shard_dirs(*, root: Path, sizes: Sizes) -> list[Path]:
    return [root / "runs" / f"shard-{index}" for index in range(1, sizes.w10_shards + 1)]


# W13 ------------------------------------------------------------------------------------------


def build_w13(*, sizes: Sizes) -> Callable[[Path], None]:
    """The W2 tree as a git repository whose checks are `w13_judges` trivial judges (a stand-in
    agent answering at once); the other check files stay as plain data files, so the tree keeps
    its 60,000 files. Isolation (off, detect, copy) is chosen per run by `--isolation`."""

    def build(root: Path) -> None:
        build_w2(sizes=sizes)(root)
        project = root / "project"
        command = [sys.executable, str(STREAM_AGENT), "--end=success"]
        write_config(project=project, agent_command=command, dialect="claude")
        checks = _git_ready_w2_checks(project=project)
        for position, check in enumerate(checks):
            if position < sizes.w13_judges:
                check.write_text(judge_yaml(check_id=f"judge_{position:03d}"))
            else:
                check.rename(check.with_suffix(".txt"))
        _git(project, "init", "-q")
        _git(project, "add", "-A")
        _git(project, "commit", "-q", "-m", "W13 tree")
        tracked = subprocess.run(
            ["git", "ls-files", "-z"], cwd=project, check=True, capture_output=True
        ).stdout.count(b"\0")
        (root / "tracked-files.txt").write_text(f"{tracked}\n")

    return build


# W14 ------------------------------------------------------------------------------------------


def w14_cases(*, sizes: Sizes) -> list[tuple[str, str, list[str]]]:
    """(case name, dialect, agent command) for every dialect and output size."""
    return [
        (
            f"{_human(size)} of {dialect}",
            dialect,
            [sys.executable, str(DIALECT_AGENT), f"--dialect={dialect}", f"--bytes={size}"],
        )
        for size in sizes.w14_bytes
        for dialect in DIALECTS
    ]


def build_w14(*, sizes: Sizes) -> Callable[[Path], None]:
    """One project per dialect and size: one judge whose agent prints that much, then passes."""

    def build(root: Path) -> None:
        for name, dialect, command in w14_cases(sizes=sizes):
            project = root / _slug(name)
            write_config(project=project, agent_command=command, dialect=dialect)
            _write(project / "eval_checks" / "judge.yaml", judge_yaml(check_id="judge"))

    return build


# W18 ------------------------------------------------------------------------------------------

W18_FAMILY = """\
schema_version: 1
id: qa_judge
type: harness_judge
description: "answer to {{ case.question }}"
cases_from: data/qa.jsonl
instructions: |
  Read the support bot's answer below and decide whether it answers the customer's question
  correctly and politely. Score 1 when it does, 0 when it does not.
"""


def w18_case_id(index: int) -> str:
    """The id of W18's row `index`."""
    return f"q{index:05d}"


def build_w18(*, sizes: Sizes) -> Callable[[Path], None]:
    """One judge family over a JSONL dataset of `w18_cases` rows."""

    def build(root: Path) -> None:
        project = root / "project"
        write_config(project=project, agent_command=[sys.executable, "-c", "pass"])
        _write(project / "eval_checks" / "qa_judge.yaml", W18_FAMILY)
        rows = (
            json.dumps(
                {
                    "id": w18_case_id(index),
                    "question": f"Can I return item {index} after {index % 60} days?",
                    "answer": f"Yes, item {index} can be returned within 60 days.",
                }
            )
            + "\n"
            for index in range(sizes.w18_cases)
        )
        _write(project / "data" / "qa.jsonl", "".join(rows))

    return build


# W20 -----------------------------------------------------------------------------------------

W20_FAMILY = """\
schema_version: 1
id: trivial
type: deterministic
description: "trivial case {{ case.id }}"
cases_from: data/cases.jsonl
script: |
  import sys
  sys.exit(0)
"""


def build_w20(*, sizes: Sizes) -> Callable[[Path], None]:
    """One deterministic family of `w20_cases` trivial cases; the floor launches as many
    interpreters on the same trivial script."""

    def build(root: Path) -> None:
        project = root / "project"
        write_config(project=project)
        _write(project / "eval_checks" / "trivial.yaml", W20_FAMILY)
        rows = (
            json.dumps({"id": f"c{index:05d}", "n": index}) + "\n"
            for index in range(sizes.w20_cases)
        )
        _write(project / "data" / "cases.jsonl", "".join(rows))
        _write(root / "floor-scripts" / "trivial.py", TRIVIAL_SCRIPT)
        (root / "floor-list.txt").write_text("floor-scripts/trivial.py\n" * sizes.w20_cases)

    return build


# W21 / W22 -----------------------------------------------------------------------------------

W21_FAMILY = W18_FAMILY


def w21_agent_log(*, root: Path) -> Path:
    return root / "agent-starts.log"


def w21_dataset(*, root: Path) -> Path:
    return root / "project" / "data" / "qa.jsonl"


def _w21_row(*, index: int, answer: str = "") -> str:
    return json.dumps(
        {
            "id": f"q{index:05d}",
            "question": f"Can I return item {index} after {index % 60} days?",
            "answer": answer or f"Yes, item {index} can be returned within 60 days.",
        }
    )


def build_w21(*, sizes: Sizes) -> Callable[[Path], None]:
    """A judge family of `w21_cases` rows whose verdicts the bench stores once (W21 reuses all
    of them; W22 edits one row before each run, so exactly one agent must start)."""

    def build(root: Path) -> None:
        project = root / "project"
        final = root.with_name(root.name.removesuffix(".partial"))
        command = [sys.executable, str(COUNT_AGENT), f"--log={w21_agent_log(root=final)}"]
        write_config(project=project, agent_command=command, dialect="text", cache=True)
        _write(project / "eval_checks" / "qa_judge.yaml", W21_FAMILY)
        rows = "".join(_w21_row(index=index) + "\n" for index in range(sizes.w21_cases))
        _write(w21_dataset(root=root), rows)

    return build


def edit_one_row(*, root: Path, run: int) -> str:
    """Give one row of W21's dataset an answer it never had (outside any timing): its case,
    and no other, has no stored verdict. Returns the edited case's id."""
    dataset = w21_dataset(root=root)
    lines = dataset.read_text().splitlines()
    index = (run * 37 + 11) % len(lines)
    answer = f"Edited answer {time.time_ns()} for item {index}."
    lines[index] = _w21_row(index=index, answer=answer)
    dataset.write_text("\n".join(lines) + "\n")
    return f"q{index:05d}"


# W24 -----------------------------------------------------------------------------------------

W24_FAMILY = """\
schema_version: 1
id: prices
type: assertions
description: "the price of {{ case.sku }}"
cases_from: data/prices.jsonl
artifact: out/prices.json
assert:
  - path: "prices.{{ case.sku }}"
    op: equals
    value: "{{ case.price }}"
"""


def _w24_project(*, project: Path, cases: int, padding: int) -> None:
    write_config(project=project)
    _write(project / "eval_checks" / "prices.yaml", W24_FAMILY)
    rows = "".join(
        json.dumps({"id": f"p{index:05d}", "sku": f"sku{index}", "price": index / 4}) + "\n"
        for index in range(cases)
    )
    _write(project / "data" / "prices.jsonl", rows)
    prices = {f"sku{index}": index / 4 for index in range(cases)}
    # The rest of the model's output (its reasoning, say), which no assertion reads.
    notes = ["a note the grader never reads " * 2] * (padding // 64)
    _write(project / "out" / "prices.json", json.dumps({"prices": prices, "notes": notes}))


def build_w24(*, sizes: Sizes) -> Callable[[Path], None]:
    """An assertions family whose `w24_cases` cases all grade one artifact of about
    `w24_artifact_bytes`; the floor project is the same family over the prices alone."""

    def build(root: Path) -> None:
        _w24_project(
            project=root / "project", cases=sizes.w24_cases, padding=sizes.w24_artifact_bytes
        )
        _w24_project(project=root / "floor-project", cases=sizes.w24_cases, padding=0)

    return build


def build_w25(*, sizes: Sizes) -> Callable[[Path], None]:
    """W24's family with `w25_cases` cases over the prices alone: checks that run in eb's
    own process, measured on four workers against one."""

    def build(root: Path) -> None:
        _w24_project(project=root / "project", cases=sizes.w25_cases, padding=0)

    return build


def build_w26(*, sizes: Sizes) -> Callable[[Path], None]:
    """Two git repositories of one deterministic family of `w26_cases` trivial cases, each
    after `w26_runs` cached runs whose folders stay in the project: `unignored` never told git
    to ignore them (a hand-written config has no .gitignore), `ignored` did, as `eb init`
    does. A cached run reads the project's state from git in both."""

    def build(root: Path) -> None:
        for name in ("unignored", "ignored"):
            project = root / name
            write_config(project=project, cache=True)
            _write(project / "eval_checks" / "trivial.yaml", W20_FAMILY)
            rows = "".join(
                json.dumps({"id": f"c{index:04d}", "n": index}) + "\n"
                for index in range(sizes.w26_cases)
            )
            _write(project / "data" / "cases.jsonl", rows)
            if name == "ignored":
                _write(project / ".gitignore", ".eval-banana/\n")
            _git(project, "init", "-q")
            _git(project, "add", "-A")
            _git(project, "commit", "-q", "-m", f"W26 {name}")
            for _ in range(sizes.w26_runs):
                subprocess.run(
                    [sys.executable, "-m", "eval_banana", "run", "--cwd", str(project)],
                    check=True,
                    capture_output=True,
                )

    return build


def _human(size: int) -> str:
    if size >= MB and size % MB == 0:
        return f"{size // MB} MB"
    return f"{size // KB} KB"


def _schedule() -> Any:
    """bench/schedule.py, which imports this module: loaded when its workloads are built."""
    from bench import schedule

    return schedule


BUILDERS: dict[str, Callable[[Sizes], Callable[[Path], None]]] = {
    "W0": lambda sizes: build_w0,
    "W1": lambda sizes: build_w1(sizes=sizes),
    "W2": lambda sizes: build_w2(sizes=sizes),
    "W3": lambda sizes: build_w3(sizes=sizes),
    "W4": lambda sizes: build_w4(sizes=sizes),
    "W5": lambda sizes: build_w5(sizes=sizes),
    "W6": lambda sizes: build_w6(sizes=sizes),
    "W7": lambda sizes: build_w7(sizes=sizes),
    "W8": lambda sizes: build_w8(sizes=sizes),
    "W10": lambda sizes: build_w10(sizes=sizes),
    "W12": lambda sizes: build_w12(sizes=sizes),
    "W13": lambda sizes: build_w13(sizes=sizes),
    "W14": lambda sizes: build_w14(sizes=sizes),
    "W15": lambda sizes: _schedule().build_w15(sizes=sizes),
    "W16": lambda sizes: _schedule().build_w16(sizes=sizes),
    # W17 builds its projects in its own scratch space, beside the servers it starts.
    "W17": lambda sizes: lambda folder: None,
    "W18": lambda sizes: build_w18(sizes=sizes),
    "W19": lambda sizes: build_w19(sizes=sizes),
    "W20": lambda sizes: build_w20(sizes=sizes),
    "W21": lambda sizes: build_w21(sizes=sizes),
    # The history page (`eb history --html`) over the same history folder as W19.
    "W23": lambda sizes: build_w19(sizes=sizes),
    "W24": lambda sizes: build_w24(sizes=sizes),
    "W25": lambda sizes: build_w25(sizes=sizes),
    "W26": lambda sizes: build_w26(sizes=sizes),
}
# Workloads measured on another's tree: W9 (--changed-since) runs on W8's repository, W11 (one
# machine, report.html) on W10's projects and runs, W22 (one edited row) on W21's family.
ALIASES: dict[str, str] = {"W9": "W8", "W11": "W10", "W22": "W21"}
# In workload order (W10 after W9, W11 between W10 and W13), as the table lists them.
KEYS: tuple[str, ...] = tuple(sorted((*BUILDERS, *ALIASES), key=lambda key: int(key[1:])))


def workload(*, key: str, sizes: Sizes) -> Path:
    """Generate (or reuse) workload `key` (W0..W12) and return its folder."""
    key = ALIASES.get(key, key)
    return cached(key=key, sizes=sizes, build=BUILDERS[key](sizes))


def main() -> int:
    """`python bench/generate.py [--quick] [W0 W1 ...]`: build workloads, print their folders."""
    args = sys.argv[1:]
    sizes = QUICK if "--quick" in args else FULL
    keys = [arg for arg in args if not arg.startswith("--")] or list(BUILDERS)
    keys = list(dict.fromkeys(ALIASES.get(key, key) for key in keys))
    for key in keys:
        print(f"{key}\t{workload(key=key, sizes=sizes)}")
    return 0


if __name__ == "__main__":
    os.umask(0o022)
    sys.exit(main())
