"""Time-aware scheduling end to end: the order `eb run` starts checks in, seen through the
times their own processes wrote, and shards split by the run history, merged or refused."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.history.balance import balance_shards, durations_digest
from tests.conftest import EbResult, check_yaml
from tests.history.synth import check, record, write

Eb = Callable[..., EbResult]
# Plan order is by file path: alpha, bravo, charlie, delta.
IDS = ("alpha", "bravo", "charlie", "delta")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "HISTORY_MODE",
        "HISTORY_DIR",
        "CACHE_MODE",
        "SCHEDULE",
        "SHARD_BALANCE",
        "MAX_PARALLEL_CHECKS",
    ):
        monkeypatch.delenv(f"EVAL_BANANA_{name}", raising=False)


def _stamp(log: Path, check_id: str) -> str:
    """A script that writes the moment its process started, in nanoseconds, under `log`."""
    return f"import time; open({str(log / check_id)!r}, 'w').write(str(time.time_ns()))"


def _project(root: Path, *, ids: tuple[str, ...] = IDS) -> tuple[Path, Path]:
    log = root.parent / f"{root.name}-starts"
    log.mkdir(parents=True)
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\nmax_parallel_checks = 1\n[cache]\nmode = "off"\n'
    )
    for check_id in ids:
        path = root / "eval_checks" / f"{check_id}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(check_yaml(check_id, script=_stamp(log, check_id)))
    return root, log


def _started(log: Path) -> list[str]:
    """Check ids in the order their processes started."""
    stamps = {path.name: int(path.read_text()) for path in log.iterdir()}
    for path in log.iterdir():
        path.unlink()
    return sorted(stamps, key=stamps.__getitem__)


def _report(run_dir: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((run_dir / "report.json").read_text())
    return document


def _digests(root: Path, eb: Eb) -> dict[str, str]:
    """The checks' current definition digests, from a run that records no history."""
    out = root.parent / "probe"
    done = eb("run", "--cwd", str(root), "--history", "off", "--output-dir", str(out))
    assert done.exit_code == 0, done.stderr
    (report,) = [_report(path) for path in out.iterdir()]
    return {one["check_id"]: one["check_definition_sha256"] for one in report["checks"]}


def _history(root: Path, *, seconds: dict[str, float], digests: dict[str, str]) -> None:
    """Three recorded runs in which each check took `seconds[id]`."""
    runs = []
    for index in range(3):
        checks = [
            check(check_id=check_id, duration_ms=int(took * 1000)).model_copy(
                update={"digest": digests[check_id]}
            )
            for check_id, took in seconds.items()
        ]
        runs.append(record(index=index, checks=checks))
    write(folder=root / ".eval-banana" / "history", records=runs)


def test_the_longest_expected_check_starts_first(tmp_path: Path, eb: Eb) -> None:
    root, log = _project(tmp_path / "p")
    digests = _digests(root, eb)
    _started(log)
    # delta has no history (unknown: first); then charlie 9 s, alpha 4 s, bravo 0.1 s.
    _history(root, seconds={"alpha": 4.0, "bravo": 0.1, "charlie": 9.0}, digests=digests)
    done = eb("run", "--cwd", str(root), "--history", "off")
    assert done.exit_code == 0, done.stderr
    assert _started(log) == ["delta", "charlie", "alpha", "bravo"]
    # The reports keep plan order.
    (run_dir,) = (root / "runs").iterdir()
    assert [one["check_id"] for one in _report(run_dir)["checks"]] == list(IDS)
    execute = json.loads((run_dir / "stages" / "execute.json").read_text())
    assert [one["check_id"] for one in execute["results"]] == list(IDS)


def test_schedule_plan_keeps_plan_order(tmp_path: Path, eb: Eb) -> None:
    root, log = _project(tmp_path / "p")
    digests = _digests(root, eb)
    _started(log)
    _history(
        root, seconds={"alpha": 0.1, "bravo": 0.2, "charlie": 9.0, "delta": 5}, digests=digests
    )
    done = eb("run", "--cwd", str(root), "--history", "off", "--schedule", "plan")
    assert done.exit_code == 0, done.stderr
    assert _started(log) == list(IDS)
    done = eb("run", "--cwd", str(root), "--history", "off")
    assert _started(log) == ["charlie", "delta", "bravo", "alpha"]


def test_assertions_checks_start_in_plan_order_without_reading_the_history(
    tmp_path: Path, eb: Eb
) -> None:
    # One thread takes assertions checks one after another whatever their order, so eb does
    # not read thirty records to order them: the history below would put charlie first.
    root = tmp_path / "p"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\nmax_parallel_checks = 4\n[cache]\nmode = "off"\n'
    )
    (root / "out").mkdir()
    (root / "out" / "answer.json").write_text('{"answer": 42}')
    for check_id in IDS:
        (root / "eval_checks").mkdir(exist_ok=True)
        (root / "eval_checks" / f"{check_id}.yaml").write_text(
            f"schema_version: 1\nid: {check_id}\ntype: assertions\ndescription: {check_id}\n"
            "artifact: out/answer.json\nassert:\n  - {path: answer, op: equals, value: 42}\n"
        )
    digests = _digests(root, eb)
    _history(
        root, seconds={"alpha": 0.1, "bravo": 0.2, "charlie": 9.0, "delta": 5}, digests=digests
    )
    done = eb("run", "--cwd", str(root), "--history", "off")
    assert done.exit_code == 0, done.stderr
    (run_dir,) = (root / "runs").iterdir()
    started = sorted((one["started_at"], one["check_id"]) for one in _report(run_dir)["checks"])
    assert [check_id for _, check_id in started] == list(IDS)


SHARD_IDS = tuple(f"judge_{index}" for index in range(8))
SECONDS = {check_id: float(index + 1) for index, check_id in enumerate(SHARD_IDS)}


def _shard(eb: Eb, root: Path, shard: str, out: Path, *flags: str) -> Path:
    done = eb(
        "run",
        "--cwd",
        str(root),
        "--shard",
        shard,
        "--balance",
        "history",
        "--output-dir",
        str(out),
        "--flat-output",
        *flags,
    )
    assert done.exit_code == 0, done.stderr
    return out


def test_shards_split_by_history_and_merge(tmp_path: Path, eb: Eb) -> None:
    root, _ = _project(tmp_path / "p", ids=SHARD_IDS)
    _history(root, seconds=SECONDS, digests=_digests(root, eb))
    first = _shard(eb, root, "1/2", tmp_path / "s1")
    # Shard 1 records its run (history is on): shard 2 must still split alike.
    second = _shard(eb, root, "2/2", tmp_path / "s2")

    split = balance_shards(ids=list(SHARD_IDS), expected=SECONDS, total=2)
    for index, run_dir in ((1, first), (2, second)):
        config = json.loads((run_dir / "stages" / "config.json").read_text())
        shard = config["selection"]["shard"]
        assert shard["balance"] == "history"
        assert shard["history_digest"] == durations_digest(durations=SECONDS)
        assert config["shard_durations"] == SECONDS
        held = [one["check_id"] for one in _report(run_dir)["checks"]]
        assert held == [check_id for check_id in SHARD_IDS if split[check_id] == index]
    # 8+1, 7+2, ...: each shard expects 18 s where the hash split gives uneven halves.
    assert sorted(sum(SECONDS[i] for i in SHARD_IDS if split[i] == k) for k in (1, 2)) == [18, 18]

    merged = tmp_path / "merged"
    done = eb(
        "merge",
        str(first),
        str(second),
        "--cwd",
        str(root),
        "--flat-output",
        "--output-dir",
        str(merged),
    )
    assert done.exit_code == 0, done.stderr
    assert _report(merged)["total_checks"] == len(SHARD_IDS)


def test_merge_refuses_shards_split_by_different_histories(tmp_path: Path, eb: Eb) -> None:
    root, _ = _project(tmp_path / "p", ids=SHARD_IDS)
    digests = _digests(root, eb)
    _history(root, seconds=SECONDS, digests=digests)
    first = _shard(eb, root, "1/2", tmp_path / "s1")
    # Another runner's history: other durations, so another split.
    other = tmp_path / "other"
    (other / ".eval-banana").mkdir(parents=True)
    _history(other, seconds={**SECONDS, "judge_0": 30.0}, digests=digests)
    history = str(other / ".eval-banana" / "history")
    second = _shard(eb, root, "2/2", tmp_path / "s2", "--history-dir", history)

    merged = tmp_path / "merged"
    done = eb(
        "merge",
        str(first),
        str(second),
        "--cwd",
        str(root),
        "--flat-output",
        "--output-dir",
        str(merged),
    )
    assert done.exit_code == 2, done.stdout + done.stderr
    assert "different run histories" in done.stderr
    assert str(first) in done.stderr and str(second) in done.stderr
    assert not merged.exists()


def test_merge_refuses_a_hash_shard_with_a_history_shard(tmp_path: Path, eb: Eb) -> None:
    root, _ = _project(tmp_path / "p", ids=SHARD_IDS)
    _history(root, seconds=SECONDS, digests=_digests(root, eb))
    first = _shard(eb, root, "1/2", tmp_path / "s1")
    second = _shard(eb, root, "2/2", tmp_path / "s2", "--balance", "hash")
    done = eb(
        "merge", str(first), str(second), "--cwd", str(root), "--output-dir", str(tmp_path / "m")
    )
    assert done.exit_code == 2
    assert "--balance history" in done.stderr and "--balance hash" in done.stderr


def test_eb_list_shows_the_split_eb_run_makes(tmp_path: Path, eb: Eb) -> None:
    root, _ = _project(tmp_path / "p", ids=SHARD_IDS)
    _history(root, seconds=SECONDS, digests=_digests(root, eb))
    split = balance_shards(ids=list(SHARD_IDS), expected=SECONDS, total=2)
    for index in (1, 2):
        done = eb("list", "--cwd", str(root), "--shard", f"{index}/2", "--balance", "history")
        assert done.exit_code == 0, done.stderr
        listed = [line.split("\t")[0] for line in done.stdout.splitlines()]
        assert listed == [check_id for check_id in SHARD_IDS if split[check_id] == index]
        by_hash = eb("list", "--cwd", str(root), "--shard", f"{index}/2")
        assert [line.split("\t")[0] for line in by_hash.stdout.splitlines()] != listed


def test_a_sampled_check_weighs_as_all_its_samples_in_the_split(tmp_path: Path, eb: Eb) -> None:
    # Six samples of `big` run side by side: its recorded duration is about one sample's, but a
    # shard's workers spend six. Each of the four others takes as long as one sample.
    root = tmp_path / "p"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\nmax_parallel_checks = 8\n[cache]\nmode = "off"\n'
    )
    sleep = "import time; time.sleep(0.3)"
    for check_id in ("a", "b", "c", "d"):
        (root / "eval_checks").mkdir(exist_ok=True)
        (root / "eval_checks" / f"{check_id}.yaml").write_text(check_yaml(check_id, script=sleep))
    (root / "eval_checks" / "big.yaml").write_text(check_yaml("big", script=sleep) + "repeats: 6\n")
    done = eb("run", "--cwd", str(root))  # recorded in the history
    assert done.exit_code == 0, done.stderr
    listed = {}
    for index in (1, 2):
        shard = eb("list", "--cwd", str(root), "--shard", f"{index}/2", "--balance", "history")
        assert shard.exit_code == 0, shard.stderr
        listed[index] = [line.split("\t")[0] for line in shard.stdout.splitlines()]
    # Six samples' work alone on one shard; the four single checks on the other.
    assert listed == {1: ["big"], 2: ["a", "b", "c", "d"]}


def test_eb_stage_validate_and_execute_split_by_history_as_eb_run(tmp_path: Path, eb: Eb) -> None:
    """A shard cut by `eb stage` in a run folder of the whole selection follows the recorded
    durations, as `eb run --shard K/N --balance history` does, and plan.json says so."""
    root, log = _project(tmp_path / "p", ids=SHARD_IDS)
    _history(root, seconds=SECONDS, digests=_digests(root, eb))
    full = tmp_path / "full"
    done = eb("run", "--cwd", str(root), "--history", "off", "--output-dir", str(full))
    assert done.exit_code == 0, done.stderr
    (run_dir,) = full.iterdir()
    _started(log)
    split = balance_shards(ids=list(SHARD_IDS), expected=SECONDS, total=2)

    def stage(name: str, *flags: str) -> EbResult:
        return eb("stage", name, "--cwd", str(root), "--run-dir", str(run_dir), *flags)

    done = stage("validate", "--shard", "1/2", "--balance", "history")
    assert done.exit_code == 0, done.stderr
    plan = json.loads((run_dir / "stages" / "plan.json").read_text())
    assert [one["id"] for one in plan["checks"]] == [i for i in SHARD_IDS if split[i] == 1]
    assert plan["selection"]["shard"]["balance"] == "history"
    assert plan["selection"]["shard"]["history_digest"] == durations_digest(durations=SECONDS)

    assert stage("validate").exit_code == 0  # the whole selection again
    done = stage("execute", "--shard", "2/2", "--balance", "history")
    assert done.exit_code == 0, done.stderr
    assert sorted(_started(log)) == [i for i in SHARD_IDS if split[i] == 2]
    # `eb stage config` with a shard records the split as `eb run` does.
    assert stage("config", "--shard", "1/2", "--balance", "history").exit_code == 0
    config = json.loads((run_dir / "stages" / "config.json").read_text())
    assert config["selection"]["shard"]["balance"] == "history"
    assert config["shard_durations"] == SECONDS


def test_parallel_runs_start_in_the_order_that_ends_the_workers_together(
    tmp_path: Path, eb: Eb
) -> None:
    # Recorded 7, 5, 5, 4 and 3 s on two workers: longest first ends at 13 s, the planned
    # order at 12 s (the bound). The checks sleep a tenth of their recorded time, so the starts
    # after the first two are far enough apart to order.
    seconds = {"a": 7.0, "b": 5.0, "c": 5.0, "d": 4.0, "e": 3.0}
    root, log = _project(tmp_path / "p", ids=tuple(seconds))
    for check_id, took in seconds.items():
        script = f"{_stamp(log, check_id)}; time.sleep({took / 10})"
        (root / "eval_checks" / f"{check_id}.yaml").write_text(check_yaml(check_id, script=script))
    digests = _digests(root, eb)
    _started(log)
    _history(root, seconds=seconds, digests=digests)
    done = eb("run", "--cwd", str(root), "--history", "off", "--max-parallel-checks", "2")
    assert done.exit_code == 0, done.stderr
    started = _started(log)
    # Lanes a+c and b+d+e, 12 s each; longest first would start c before d and end at 13 s.
    assert set(started[:2]) == {"a", "b"}
    assert started[2:] == ["d", "c", "e"]
