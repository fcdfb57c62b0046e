"""Run history end to end: the records `eb run`, `eb merge` and a replayed run leave, and
what `eb history` makes of them, on real projects, real git repositories and real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from eval_banana.core.ownmark import MARK_FILE
from eval_banana.stagefiles.schemafiles import packaged_schema
from tests.conftest import EbResult, check_yaml
from tests.gitrepo import commit_all, git, init_repo
from tests.history import synth
from tests.processes import eb_interrupted

Eb = Callable[..., EbResult]


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in ("MODE", "DIR", "KEEP"):
        monkeypatch.delenv(f"EVAL_BANANA_HISTORY_{name}", raising=False)
    monkeypatch.delenv("EVAL_BANANA_CACHE_MODE", raising=False)


def _records(folder: Path) -> list[dict[str, Any]]:
    """Every record file's document, by name (oldest first), each valid against the schema."""
    schema = json.loads(packaged_schema("history-record"))
    found = []
    for path in sorted(folder.glob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.validate(document, schema)
        found.append(document)
    return found


def _project(root: Path, files: dict[str, str], *, config: str = "") -> Path:
    for relative, text in {".eval-banana/config.toml": config, **files}.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _checks(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {check["id"]: check for check in record["checks"]}


def test_a_run_leaves_one_valid_record(tmp_path: Path, eb: Eb) -> None:
    root = _project(
        tmp_path / "p",
        {
            "eval_checks/ok.yaml": check_yaml("ok", tags=["fast"]),
            "eval_checks/bad.yaml": check_yaml("bad", script="raise SystemExit(1)"),
        },
    )
    done = eb("run", "--cwd", str(root))
    assert done.exit_code == 1

    (record,) = _records(root / ".eval-banana" / "history")
    report = json.loads(next((root / ".eval-banana" / "results").glob("*/report.json")).read_text())
    assert record["run_id"] == report["run_id"] and record["kind"] == "run"
    assert (record["passed"], record["exit_code"], record["git"]) == (False, 1, None)
    assert record["totals"]["checks"] == 2 and record["totals"]["failed"] == 1
    checks = _checks(record)
    assert checks["ok"]["status"] == "passed" and checks["ok"]["tags"] == ["fast"]
    assert checks["bad"]["status"] == "failed"
    for result in report["checks"]:
        entry = checks[result["check_id"]]
        assert entry["digest"] == result["check_definition_sha256"]
        assert entry["duration_ms"] == result["duration_ms"]


def test_history_off_writes_nothing_and_keep_prunes_the_oldest(tmp_path: Path, eb: Eb) -> None:
    root = _project(tmp_path / "p", {"eval_checks/ok.yaml": check_yaml("ok")})
    assert eb("run", "--cwd", str(root), "--history", "off").exit_code == 0
    assert not (root / ".eval-banana" / "history").exists()
    ids = []
    for _ in range(3):
        done = eb("run", "--cwd", str(root), "--json")
        ids.append(json.loads(done.stdout)["run_id"])
    (root / ".eval-banana" / "config.toml").write_text("[history]\nkeep = 2\n")
    done = eb("run", "--cwd", str(root), "--json")
    ids.append(json.loads(done.stdout)["run_id"])
    assert [r["run_id"] for r in _records(root / ".eval-banana" / "history")] == ids[-2:]


def test_keep_prunes_only_records_in_a_folder_that_holds_project_files(
    tmp_path: Path, eb: Eb
) -> None:
    config = '[history]\ndir = "docs"\nkeep = 2\n'
    checks = {f"eval_checks/{name}.yaml": check_yaml(name) for name in ("a", "b")}
    root = _project(tmp_path / "p", checks, config=config)
    project_files = {"000_index.json": '{"title": "index"}', "api.json": '{"title": "api"}'}
    (root / "docs").mkdir()
    for name, text in project_files.items():
        (root / "docs" / name).write_text(text)
    for _ in range(3):
        # Two at a time: the start order reads the history before the run.
        done = eb("run", "--cwd", str(root), "--max-parallel-checks", "2")
        assert done.exit_code == 0 and "warning" not in done.stderr, done.stderr

    for name, text in project_files.items():
        assert (root / "docs" / name).read_text() == text
    assert len(list((root / "docs").glob("*-*.json"))) == 2
    shown = eb("history", "--cwd", str(root))
    assert "Runs (2 of 2 recorded" in shown.stdout and shown.stderr == ""


def test_a_damaged_record_is_told_in_words(tmp_path: Path, eb: Eb) -> None:
    checks = {f"eval_checks/{name}.yaml": check_yaml(name) for name in ("a", "b")}
    root = _project(tmp_path / "p", checks)
    folder = root / ".eval-banana" / "history"
    folder.mkdir(parents=True)
    (folder / "20990101000000000000-damaged.json").write_text('{"title": "x"}')

    done = eb("run", "--cwd", str(root), "--max-parallel-checks", "2")

    assert done.exit_code == 0
    assert "20990101000000000000-damaged.json" in done.stderr and "it has no checks" in done.stderr
    assert "KeyError" not in done.stderr


def test_an_aborted_run_is_recorded_with_its_exit_code(tmp_path: Path, eb: Eb) -> None:
    root = _project(
        tmp_path / "p",
        {"eval_checks/stuck.yaml": check_yaml("stuck", script="import time\ntime.sleep(30)\n")},
    )
    done = eb("run", "--cwd", str(root), "--run-timeout-seconds", "1")
    assert done.exit_code == 3, done.stderr
    (record,) = _records(root / ".eval-banana" / "history")
    assert (record["exit_code"], record["aborted_by"], record["passed"]) == (
        3,
        "run_timeout",
        False,
    )


def test_an_interrupted_run_reads_as_aborted_not_as_a_run_at_0_percent(
    tmp_path: Path, eb: Eb
) -> None:
    """Ctrl-C during the checks: the run's row says it was aborted, and its checks that had no
    outcome are left out of its pass rate as they are of each check's (none ran: no rate)."""
    started = tmp_path / "started"  # outside the project: its checks' inputs stay the same
    stuck = f"import time\nopen({str(started)!r}, 'w').close()\ntime.sleep(60)"
    root = _project(
        tmp_path / "p",
        {
            "eval_checks/a.yaml": check_yaml("a", script=stuck),
            "eval_checks/b.yaml": check_yaml("b"),
        },
        config="[core]\nmax_parallel_checks = 1\n",
    )
    started.write_text("")  # the first run is not interrupted
    stuck_first = (root / "eval_checks/a.yaml").read_text()
    (root / "eval_checks/a.yaml").write_text(check_yaml("a"))
    assert eb("run", "--cwd", str(root)).exit_code == 0
    (root / "eval_checks/a.yaml").write_text(stuck_first)
    started.unlink()
    aborted = eb_interrupted(root, "run", "--cwd", str(root), started=started)
    assert aborted.returncode == 3, aborted.stderr

    shown = json.loads(eb("history", "--cwd", str(root), "--json").stdout)
    jsonschema.validate(shown, json.loads(packaged_schema("history")))
    first, second = shown["runs"]
    assert (first["pass_rate"], second["pass_rate"]) == (1.0, None)
    assert (first["aborted_by"], first["not_run"]) == (None, 0)
    # a was stopped part-way (an error to the run), b never started: the run's own `1 not run`.
    assert (second["aborted_by"], second["not_run"], second["stopped"]) == ("interrupt", 1, 1)
    text = eb("history", "--cwd", str(root)).stdout
    row = next(line for line in text.splitlines() if line.startswith(second["run_id"]))
    assert row.split()[3:6] == ["ABORTED", "0/0", "-"], row
    assert row.endswith("aborted (interrupt): 1 of 2 checks not run, 1 stopped"), row
    page = tmp_path / "history.html"
    assert eb("history", "--cwd", str(root), "--html", str(page)).exit_code == 0
    html = page.read_text()
    # No point on the pass-rate chart for it; its points elsewhere, and its strips, say why.
    assert 'aria-label="Pass rate, one point per run" data-points="1"' in html
    assert "aborted (interrupt): 1 of 2 checks not run, 1 stopped</title>" in html
    assert '"s":"pn"' in html


def test_the_pass_rate_chart_is_drawn_against_100_percent(tmp_path: Path, eb: Eb) -> None:
    # Drawn against its own highest value, a suite steady at 50 % sat at the chart's top,
    # labelled 50 %, where a glance reads "all passed".
    root = _project(
        tmp_path / "p",
        {
            "eval_checks/ok.yaml": check_yaml("ok"),
            "eval_checks/bad.yaml": check_yaml("bad", script="raise SystemExit(1)"),
        },
    )
    for _ in range(2):
        assert eb("run", "--cwd", str(root), "--cache", "off").exit_code == 1
    page = tmp_path / "history.html"
    assert eb("history", "--cwd", str(root), "--html", str(page)).exit_code == 0
    html = page.read_text()
    chart = html[html.index('aria-label="Pass rate, one point per run"') :]
    chart = chart[: chart.index("</svg>")]
    assert '<text x="2" y="14">100%</text>' in chart, chart
    heights = {part.split('"')[0] for part in chart.split(' cy="')[1:]}
    assert len(heights) == 1 and float(heights.pop()) > 8.0 + 1, chart


def test_a_record_that_cannot_be_written_is_a_warning_and_the_run_stands(
    tmp_path: Path, eb: Eb
) -> None:
    root = _project(
        tmp_path / "p",
        {"eval_checks/ok.yaml": check_yaml("ok"), "blocked": "a file where the folder goes\n"},
        config='[history]\ndir = "blocked/history"\n',
    )
    done = eb("run", "--cwd", str(root))
    assert done.exit_code == 0, done.stderr
    assert "could not record this run in the history folder" in done.stderr
    assert "blocked/history" in done.stderr
    # Its cause, in words, of the folder: not an errno and a temporary file's name.
    folder = root / "blocked" / "history"
    said = next(line for line in done.stderr.splitlines() if "could not record" in line)
    assert said.endswith(f"{folder}: Cannot write {folder}: Not a directory"), said


def test_a_merge_leaves_a_record_naming_its_shards(tmp_path: Path, eb: Eb) -> None:
    root = _project(
        tmp_path / "p", {f"eval_checks/c{i}.yaml": check_yaml(f"c{i}") for i in range(6)}
    )
    shard_ids, run_dirs = [], []
    for k in (1, 2):
        out = tmp_path / f"shard{k}"
        done = eb(
            "run", "--cwd", str(root), "--shard", f"{k}/2", "--output-dir", str(out),
            "--flat-output", "--json",
        )  # fmt: skip
        assert done.exit_code == 0, done.stderr
        shard_ids.append(json.loads(done.stdout)["run_id"])
        run_dirs.append(str(out))
    merged = eb("merge", *run_dirs, "--cwd", str(root), "--output-dir", str(tmp_path / "m"))
    assert merged.exit_code == 0, merged.stderr

    records = _records(root / ".eval-banana" / "history")
    assert sorted(r["kind"] for r in records) == ["merge", "run", "run"]
    (merge,) = [r for r in records if r["kind"] == "merge"]
    assert sorted(merge["merged_from"]) == sorted(shard_ids)
    assert set(_checks(merge)) == {f"c{i}" for i in range(6)}
    # eb history counts each check once: in the merged run, not again in its shards.
    view = json.loads(eb("history", "--cwd", str(root), "--format", "json").stdout)
    assert [run["kind"] for run in view["runs"]] == ["merge"]
    assert {row["strip"] for row in view["checks"]} == {"✓"}


def test_a_merge_keeps_its_own_history_settings_not_the_shards(tmp_path: Path, eb: Eb) -> None:
    """History is the merging machine's: `eb merge --history off` writes no record and draws no
    history marks, although the shards ran with history on."""
    root = _project(
        tmp_path / "p", {f"eval_checks/c{i}.yaml": check_yaml(f"c{i}") for i in range(4)}
    )
    run_dirs = []
    for k in (1, 2):
        out = tmp_path / f"shard{k}"
        done = eb(
            "run", "--cwd", str(root), "--shard", f"{k}/2", "--output-dir", str(out),
            "--flat-output",
        )  # fmt: skip
        assert done.exit_code == 0, done.stderr
        run_dirs.append(str(out))
    before = _records(root / ".eval-banana" / "history")
    out = tmp_path / "m"
    merged = eb(
        "merge", *run_dirs, "--cwd", str(root), "--output-dir", str(out), "--history", "off"
    )
    assert merged.exit_code == 0, merged.stderr
    assert _records(root / ".eval-banana" / "history") == before
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    assert 'class="spark"' not in (run_dir / "report.html").read_text()
    config = json.loads((run_dir / "stages" / "config.json").read_text())
    assert config["settings"]["history"]["mode"] == "off"


SLOW = "import time\ntime.sleep(0.3)\n"


def test_reused_and_replayed_verdicts_record_their_original_duration(
    tmp_path: Path, eb: Eb
) -> None:
    root = _project(
        tmp_path / "p",
        {"eval_checks/slow.yaml": check_yaml("slow", script=SLOW)},
        config='[cache]\nmode = "on"\n',
    )
    for _ in range(3):
        assert eb("run", "--cwd", str(root)).exit_code == 0

    first, cached, replayed = _records(root / ".eval-banana" / "history")
    assert [first["kind"], cached["kind"], replayed["kind"]] == ["run", "run", "replay"]
    assert replayed["replayed_from"] == cached["run_id"]
    original = _checks(first)["slow"]["duration_ms"]
    assert original >= 300
    for later in (cached, replayed):
        check = _checks(later)["slow"]
        assert check["cached"] is True
        assert check["duration_ms"] == original
    # The replayed run itself took far less than the check's recorded time.
    assert replayed["duration_ms"] < original


def test_early_errors_are_marked_and_timeouts_are_not(tmp_path: Path, eb: Eb) -> None:
    root = _project(
        tmp_path / "p",
        {
            # A script that cannot be compiled never starts: its error time says nothing.
            "eval_checks/broken.yaml": check_yaml("broken", script="def (:\n"),
            "eval_checks/stuck.yaml": check_yaml("stuck", script="import time\ntime.sleep(30)\n"),
        },
        config="[core]\ncheck_timeout_seconds = 1\n",
    )
    done = eb("run", "--cwd", str(root))
    assert done.exit_code == 1, done.stderr
    (record,) = _records(root / ".eval-banana" / "history")
    checks = _checks(record)
    assert checks["broken"]["status"] == "error" and checks["broken"]["early_error"] is True
    # A timeout took at least its limit: a true lower bound of the check's time, kept.
    assert (
        checks["stuck"]["status"] == "error" and checks["stuck"].get("early_error", False) is False
    )
    assert checks["stuck"]["duration_ms"] >= 1000


# A stand-in judge that alternates by a counter outside the project: a verdict of 1 on its
# odd calls, prose without a verdict (a `verdict` error: it ran to its end) on its even ones,
# and prose on every call from the fifth.
WAVERING_AGENT = textwrap.dedent(
    """\
    import json, sys
    from pathlib import Path
    counter = Path(sys.argv[1])
    call = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(call))
    if call % 2 == 1 and call < 5:
        print(json.dumps({"score": 1, "reason": "fine"}))
    else:
        print("I cannot decide.")
    """
)


def test_a_judge_that_keeps_answering_without_a_verdict_is_no_early_error(
    tmp_path: Path, eb: Eb
) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(WAVERING_AGENT)
    config = textwrap.dedent(
        f"""\
        [harness]
        agent = "wavering"
        isolation = "off"

        [agents.wavering]
        command = [{json.dumps(sys.executable)}, {json.dumps(str(agent))}, \
        {json.dumps(str(tmp_path / "calls.txt"))}]
        model_flag = ""
        """
    )
    judge = "schema_version: 1\nid: tone\ntype: harness_judge\ndescription: Tone.\n"
    root = _project(
        tmp_path / "p",
        {"eval_checks/tone.yaml": judge + "instructions: Judge the tone.\n"},
        config=config,
    )
    for expected in (0, 1, 0, 1, 1):  # pass, error, pass, error, error
        done = eb("run", "--cwd", str(root))
        assert done.exit_code == expected, done.stdout + done.stderr
    records = _records(root / ".eval-banana" / "history")
    tone = [_checks(record)["tone"] for record in records]
    assert [check["status"] for check in tone] == ["passed", "error"] * 2 + ["error"]
    assert not any(check.get("early_error", False) for check in tone)

    view = json.loads(eb("history", "--cwd", str(root), "--format", "json").stdout)
    (row,) = view["checks"]
    assert (row["strip"], row["flips"]) == ("✓E✓EE", 3)
    assert row["failing_since"]["run_id"] == records[3]["run_id"]
    assert row["last_passed"]["run_id"] == records[2]["run_id"]
    assert row["median_ms"] is not None
    flaky = json.loads(eb("history", "--cwd", str(root), "--flaky", "--format", "json").stdout)
    assert [row["id"] for row in flaky["checks"]] == ["tone"]
    # report.html of the last run: it errored in the run before too, so it is no new failure.
    latest = root / ".eval-banana" / "results" / records[-1]["run_id"]
    page = (latest / "report.html").read_text()
    assert '"badges":["flaky in history"]' in page


def test_an_agent_that_cannot_start_is_an_early_error(tmp_path: Path, eb: Eb) -> None:
    # The file is there (the guard accepts it) but cannot be executed.
    broken = tmp_path / "broken-agent"
    broken.write_text("#!/no/such/interpreter\n")
    broken.chmod(0o755)
    config = textwrap.dedent(
        f"""\
        [harness]
        agent = "gone"
        isolation = "off"

        [agents.gone]
        command = [{json.dumps(str(broken))}]
        model_flag = ""
        """
    )
    judge = "schema_version: 1\nid: tone\ntype: harness_judge\ndescription: Tone.\n"
    root = _project(
        tmp_path / "p",
        {"eval_checks/tone.yaml": judge + "instructions: Judge the tone.\n"},
        config=config,
    )
    done = eb("run", "--cwd", str(root))
    (record,) = _records(root / ".eval-banana" / "history")
    assert _checks(record)["tone"]["status"] == "error", done.stdout + done.stderr
    assert _checks(record)["tone"]["early_error"] is True


def test_a_check_the_run_stopped_part_way_is_an_early_error(tmp_path: Path, eb: Eb) -> None:
    root = _project(
        tmp_path / "p",
        {"eval_checks/stuck.yaml": check_yaml("stuck", script="import time\ntime.sleep(30)\n")},
    )
    done = eb("run", "--cwd", str(root), "--run-timeout-seconds", "1")
    assert done.exit_code == 3, done.stdout + done.stderr
    (record,) = _records(root / ".eval-banana" / "history")
    assert _checks(record)["stuck"]["early_error"] is True


@pytest.mark.concurrent
def test_concurrent_runs_each_leave_an_intact_record(tmp_path: Path) -> None:
    root = _project(
        tmp_path / "p",
        {f"eval_checks/c{i}.yaml": check_yaml(f"c{i}", script=SLOW) for i in range(3)},
    )
    environ = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    started = [
        subprocess.Popen(
            [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=environ,
        )
        for _ in range(4)
    ]
    run_ids = set()
    for process in started:
        out, err = process.communicate(timeout=240)
        assert process.returncode == 0, err
        run_ids.add(json.loads(out)["run_id"])

    records = _records(root / ".eval-banana" / "history")
    assert {r["run_id"] for r in records} == run_ids and len(run_ids) == 4
    assert all(len(r["checks"]) == 3 for r in records)
    # No temporary file is left behind; eb's mark is the one hidden file.
    hidden = [p.name for p in (root / ".eval-banana" / "history").iterdir() if p.name[0] == "."]
    assert hidden == [MARK_FILE]


def test_the_history_folder_is_no_input_and_no_part_of_a_cache_key(tmp_path: Path, eb: Eb) -> None:
    # A check without `inputs:` is keyed on every project file: a run record landing in the
    # project would make each run miss the cache of the one before.
    root = _project(
        tmp_path / "p",
        {"eval_checks/whole.yaml": check_yaml("whole")},
        config='[cache]\nmode = "on"\nreplay = false\n\n[history]\ndir = "ci-history"\n',
    )
    reports = [json.loads(eb("run", "--cwd", str(root), "--json").stdout) for _ in range(3)]
    hits = [report["checks"][0]["details"]["cache"]["hit"] for report in reports]
    assert hits == [False, True, True]
    assert len(_records(root / "ci-history")) == 3


def _flipping_project(root: Path, *, counter: Path, description: str = "Flips.") -> None:
    # The script passes on even runs and fails on odd ones: the counter lives outside the
    # project, so the check's definition and inputs never change between runs.
    script = textwrap.dedent(
        f"""\
        from pathlib import Path
        counter = Path({str(counter)!r})
        n = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(n + 1))
        raise SystemExit(n % 2)
        """
    )
    text = check_yaml("flipper", script=script).replace("Check flipper.", description)
    _project(
        root, {"eval_checks/flipper.yaml": text, "eval_checks/steady.yaml": check_yaml("steady")}
    )


def test_flaky_finds_a_check_that_flips_and_ignores_flips_across_a_definition_change(
    tmp_path: Path, eb: Eb
) -> None:
    root, counter = tmp_path / "p", tmp_path / "counter.txt"
    _flipping_project(root, counter=counter)
    for _ in range(3):  # pass, fail, pass: two flips on one definition
        eb("run", "--cwd", str(root))
    flaky = json.loads(eb("history", "--cwd", str(root), "--flaky", "--format", "json").stdout)
    assert [row["id"] for row in flaky["checks"]] == ["flipper"]
    assert flaky["checks"][0]["strip"] == "✓✗✓"
    assert flaky["checks"][0]["flips"] == 2

    # Each edit of the definition changes its digest: fail, then pass, on two new definitions.
    fresh = tmp_path / "q"
    counter.write_text("1")
    for description in ("First.", "Second.", "Third."):
        _flipping_project(fresh, counter=counter, description=description)
        eb("run", "--cwd", str(fresh))
    view = json.loads(eb("history", "--cwd", str(fresh), "--format", "json").stdout)
    row = next(row for row in view["checks"] if row["id"] == "flipper")
    assert (row["strip"], row["flips"], row["definitions"]) == ("✗✓✗", 0, 3)
    flaky = json.loads(eb("history", "--cwd", str(fresh), "--flaky", "--format", "json").stdout)
    assert flaky["checks"] == []
    assert "none" in eb("history", "--cwd", str(fresh), "--flaky").stdout


VALUE_CHECK = textwrap.dedent(
    """\
    from pathlib import Path
    raise SystemExit(0 if Path("value.txt").read_text().strip() == "good" else 1)
    """
)


def _run_id(eb: Eb, root: Path, expect: int) -> str:
    done = eb("run", "--cwd", str(root), "--json")
    assert done.exit_code == expect, done.stderr
    return str(json.loads(done.stdout)["run_id"])


def test_failing_since_names_the_run_and_commit_it_started_failing_in(
    tmp_path: Path, eb: Eb
) -> None:
    root = init_repo(
        tmp_path / "repo",
        {
            ".gitignore": ".eval-banana/results/\n.eval-banana/history/\n",
            ".eval-banana/config.toml": "",
            "eval_checks/value.yaml": check_yaml("value", script=VALUE_CHECK),
            "eval_checks/other.yaml": check_yaml("other"),
            "value.txt": "good\n",
        },
    )
    first_commit = git(root, "rev-parse", "HEAD").strip()
    passed_run = _run_id(eb, root, 0)
    time.sleep(1.1)  # commit times have whole seconds: the next commit is after that run
    (root / "value.txt").write_text("bad\n")
    broke = commit_all(root, "break it")
    broken_run = _run_id(eb, root, 1)
    (root / "README").write_text("unrelated\n")
    commit_all(root, "unrelated")
    _run_id(eb, root, 1)
    (root / "README").write_text("uncommitted\n")
    _run_id(eb, root, 1)

    records = _records(root / ".eval-banana" / "history")
    assert [r["git"]["commit"] for r in records[:2]] == [first_commit, broke]
    assert [r["git"]["dirty"] for r in records] == [False, False, False, True]

    view = json.loads(eb("history", "--cwd", str(root), "--format", "json").stdout)
    row = next(row for row in view["checks"] if row["id"] == "value")
    assert row["strip"] == "✓✗✗✗"
    assert row["failing_since"]["run_id"] == broken_run
    assert row["failing_since"]["commit"] == broke
    assert row["last_passed"]["run_id"] == passed_run
    other = next(row for row in view["checks"] if row["id"] == "other")
    assert other["failing_since"] is None

    text = eb("history", "--cwd", str(root)).stdout
    assert f"failed since run {broken_run} (commit {broke[:7]})" in text
    assert f"last passed in run {passed_run} (commit {first_commit[:7]})" in text

    # --since a revision: the runs started at or after its commit time.
    since = json.loads(
        eb("history", "--cwd", str(root), "--since", broke, "--format", "json").stdout
    )
    assert [run["run_id"] for run in since["runs"]][0] == broken_run
    assert len(since["runs"]) == 3
    unknown = eb("history", "--cwd", str(root), "--since", "no-such-branch")
    assert unknown.exit_code == 2 and "no-such-branch" in unknown.stderr


def _trend_items(run_dir: Path) -> dict[str, dict[str, Any]]:
    """report.html's `eb-trend` block of the run in `run_dir`: each row's marks, by check id."""
    html = (run_dir / "report.html").read_text()
    start = html.index('id="eb-trend">') + len('id="eb-trend">')
    items = json.loads(html[start : html.index("</script>", start)])
    return {item["id"]: item for item in items}


def test_a_merged_runs_marks_do_not_count_its_own_shards_as_earlier_runs(
    tmp_path: Path, eb: Eb
) -> None:
    """A merge starts when its first shard did, so that shard's record sorts just before the
    merge's: read as an earlier run, it hid a new failure of its checks in the merged page."""
    root = _project(
        tmp_path / "p",
        {
            "value.txt": "good\n",
            **{f"eval_checks/c{i}.yaml": check_yaml(f"c{i}", script=VALUE_CHECK) for i in range(6)},
        },
    )
    assert eb("run", "--cwd", str(root), "--cache", "off").exit_code == 0
    (root / "value.txt").write_text("bad\n")
    run_dirs = []
    for k in (1, 2):
        out = tmp_path / f"shard{k}"
        done = eb(
            "run", "--cwd", str(root), "--cache", "off", "--shard", f"{k}/2",
            "--output-dir", str(out), "--flat-output",
        )  # fmt: skip
        assert done.exit_code == 1, done.stderr
        run_dirs.append(out)
    merged = eb(
        "merge", *map(str, run_dirs), "--cwd", str(root), "--output-dir", str(tmp_path / "m")
    )
    assert merged.exit_code == 1, merged.stderr

    (run_dir,) = [p for p in (tmp_path / "m").iterdir() if p.is_dir()]
    items = _trend_items(run_dir)
    assert set(items) == {f"c{i}" for i in range(6)}
    for item in items.values():  # the run before the merge, then the merge
        assert (item["trend"], item.get("badges")) == ("pf", ["new failure"]), item


def test_a_check_edited_and_reverted_does_not_flip_across_the_edits(tmp_path: Path, eb: Eb) -> None:
    """Every change of verdict comes with an edit (A, B, back to A, B, A): no flip, though
    definition A passes, fails, then passes again across the edits between them."""
    root, counter = tmp_path / "p", tmp_path / "counter.txt"
    for description, outcome in (("A.", 0), ("B.", 1), ("A.", 1), ("B.", 0), ("A.", 0)):
        _flipping_project(root, counter=counter, description=description)
        counter.write_text(str(outcome))  # 0: the check passes, 1: it fails
        assert eb("run", "--cwd", str(root)).exit_code == outcome
    view = json.loads(eb("history", "--cwd", str(root), "--format", "json").stdout)
    row = next(row for row in view["checks"] if row["id"] == "flipper")
    assert (row["strip"], row["flips"], row["definitions"]) == ("✓✗✗✓✓", 0, 2)
    flaky = json.loads(eb("history", "--cwd", str(root), "--flaky", "--format", "json").stdout)
    assert flaky["checks"] == []

    # report.html counts them as eb history does: no "flaky in history" badge on definition A.
    counter.write_text("0")
    run_id = _run_id(eb, root, 0)
    items = _trend_items(root / ".eval-banana" / "results" / run_id)
    assert (items["flipper"]["trend"], items["flipper"].get("badges")) == ("pffppp", None)


def _notes(eb: Eb, root: Path, *window: str) -> dict[str, tuple[str | None, str | None]]:
    """Each check's (failing since, last passed) run ids in `eb history` over `window`."""
    view = json.loads(eb("history", "--cwd", str(root), *window, "--format", "json").stdout)
    return {
        row["id"]: tuple((row[key] or {}).get("run_id") for key in ("failing_since", "last_passed"))
        for row in view["checks"]
    }


def test_every_window_names_the_merged_run_not_its_shards(tmp_path: Path, eb: Eb) -> None:
    """A merge older than the window, and its shards, were both read for the "since" notes:
    the shard sorted nearest the window was named, so the notes changed with the window."""
    root = _project(
        tmp_path / "p",
        {
            "value.txt": "good\n",
            **{f"eval_checks/c{i}.yaml": check_yaml(f"c{i}", script=VALUE_CHECK) for i in range(6)},
        },
    )
    first = _run_id(eb, root, 0)
    shard_ids, run_dirs = [], []
    for k, value in ((1, "bad"), (2, "good")):  # shard 1's checks fail, shard 2's pass
        (root / "value.txt").write_text(value + "\n")
        out = tmp_path / f"shard{k}"
        done = eb(
            "run", "--cwd", str(root), "--shard", f"{k}/2", "--output-dir", str(out),
            "--flat-output", "--json",
        )  # fmt: skip
        shard_ids.append(json.loads(done.stdout)["run_id"])
        run_dirs.append(str(out))
    merged = eb("merge", *run_dirs, "--cwd", str(root), "--output-dir", str(tmp_path / "m"))
    assert merged.exit_code == 1, merged.stderr
    (merge_id,) = [r["run_id"] for r in _records(root / ".eval-banana/history") if r["merged_from"]]
    (root / "value.txt").write_text("bad\n")
    latest = _run_id(eb, root, 1)

    shard_one = json.loads((Path(run_dirs[0]) / "report.json").read_text())["checks"]
    in_shard_one = {check["check_id"] for check in shard_one}
    assert 0 < len(in_shard_one) < 6
    expected = {
        f"c{i}": (merge_id, first) if f"c{i}" in in_shard_one else (latest, merge_id)
        for i in range(6)
    }
    for window in ((), ("--last", "1"), ("--last", "2")):
        assert _notes(eb, root, *window) == expected, (window, shard_ids)


def test_a_shard_run_at_the_windows_edge_keeps_the_runs_read_past_it_for_the_notes(
    tmp_path: Path, eb: Eb
) -> None:
    """`--last 1` over a shard run no merge names read one run past it, looking for its
    merge, and dropped it: the note skipped the pass in that run ("never passed")."""
    root = _project(
        tmp_path / "p",
        {
            "value.txt": "bad\n",
            **{f"eval_checks/{i}.yaml": check_yaml(i, script=VALUE_CHECK) for i in "xyzw"},
        },
    )
    _run_id(eb, root, 1)
    (root / "value.txt").write_text("good\n")
    passed = _run_id(eb, root, 0)
    (root / "value.txt").write_text("bad\n")
    plans = [eb("plan", "--cwd", str(root), "--shard", f"{k}/2", "--json") for k in (1, 2)]
    holding_x = next(
        k
        for k, plan in zip((1, 2), plans, strict=True)
        if "x" in [c["id"] for c in json.loads(plan.stdout)["checks"]]
    )
    done = eb("run", "--cwd", str(root), "--shard", f"{holding_x}/2", "--json")
    assert done.exit_code == 1, done.stderr
    shard = json.loads(done.stdout)["run_id"]
    for window in ((), ("--last", "1"), ("--last", "2")):
        assert _notes(eb, root, *window)["x"] == (shard, passed), window


def test_a_window_since_a_moment_between_two_shards_of_a_merged_run_shows_neither(
    tmp_path: Path, eb: Eb
) -> None:
    """A merged run starts when its first shard did: `--since` a moment between its shards'
    starts left the merge out and showed its later shard as a run of its own."""
    root = _project(
        tmp_path / "p", {f"eval_checks/{i}.yaml": check_yaml(i) for i in ("x", "y", "z", "w")}
    )
    run_dirs = []
    for k in (1, 2):
        out = tmp_path / f"shard{k}"
        done = eb(
            "run", "--cwd", str(root), "--shard", f"{k}/2", "--output-dir", str(out),
            "--flat-output",
        )  # fmt: skip
        assert done.exit_code == 0, done.stderr
        run_dirs.append(str(out))
    merged = eb("merge", *run_dirs, "--cwd", str(root), "--output-dir", str(tmp_path / "m"))
    assert merged.exit_code == 0, merged.stderr
    records = _records(root / ".eval-banana" / "history")
    (merge,) = [r for r in records if r["merged_from"]]
    first, second = sorted(
        (r for r in records if not r["merged_from"]), key=lambda r: r["started_at"]
    )
    assert merge["started_at"] == first["started_at"] < second["started_at"]

    def shown(since: str) -> list[str]:
        done = eb("history", "--cwd", str(root), "--since", since, "--json")
        assert done.exit_code == 0, done.stderr
        view = json.loads(done.stdout)
        return [run["run_id"] for run in view["runs"]]

    assert shown(second["started_at"]) == []
    assert shown(first["started_at"]) == [merge["run_id"]]


def test_each_output_format(tmp_path: Path, eb: Eb) -> None:
    root = _project(
        tmp_path / "p",
        {
            "eval_checks/ok.yaml": check_yaml("ok", tags=["fast"]),
            "eval_checks/bad.yaml": check_yaml("bad", script="raise SystemExit(1)"),
        },
    )
    for _ in range(2):
        eb("run", "--cwd", str(root))

    empty = _project(tmp_path / "empty", {"eval_checks/ok.yaml": check_yaml("ok")})
    nothing = eb("history", "--cwd", str(empty))
    assert nothing.exit_code == 0 and "No run recorded in" in nothing.stdout

    text = eb("history", "--cwd", str(root))
    assert text.exit_code == 0
    assert "Runs (2 of 2 recorded, oldest first):" in text.stdout
    assert "✓✓" in text.stdout and "✗✗" in text.stdout
    markdown = eb("history", "--cwd", str(root), "--format", "md").stdout
    assert markdown.startswith("# Run history\n")
    assert "| check | outcomes | rate | flips | median | p90 | cost | note |" in markdown
    assert "| `bad` | `✗✗` | 0% |" in markdown
    document = json.loads(eb("history", "--cwd", str(root), "--format", "json").stdout)
    jsonschema.validate(document, json.loads(packaged_schema("history")))
    assert [row["id"] for row in document["checks"]] == ["bad", "ok"]
    tagged = json.loads(
        eb("history", "--cwd", str(root), "--tag", "fast", "--format", "json").stdout
    )
    assert [row["id"] for row in tagged["checks"]] == ["ok"]
    # `--json`, as eb run and eb validate spell it, is `--format json`.
    keyword = json.loads(eb("history", "--cwd", str(root), "-k", "ba", "--json").stdout)
    assert [row["id"] for row in keyword["checks"]] == ["bad"]
    last = json.loads(eb("history", "--cwd", str(root), "--last", "1", "--format", "json").stdout)
    assert len(last["runs"]) == 1 and last["checks"][0]["strip"] == "✗"
    slowest = eb("history", "--cwd", str(root), "--slowest").stdout
    assert "Slowest checks (2):" in slowest


def test_small_costs_never_read_as_free_and_add_up_to_the_run(tmp_path: Path, eb: Eb) -> None:
    """Two judges that cost $0.00004 and $0.00003 read `$0.0000` beside their run's `$0.0001`:
    a paid check looked free, and the checks did not add up to the run."""
    root = _project(tmp_path / "p", {})
    checks = [
        synth.check(check_id="judge_a", cost_usd=0.00004),
        synth.check(check_id="judge_b", cost_usd=0.00003),
        synth.check(check_id="script"),
    ]
    run = synth.record(index=1, checks=checks).model_copy(update={"cost_usd": 0.00007})
    synth.write(folder=root / ".eval-banana" / "history", records=[run])

    text = eb("history", "--cwd", str(root)).stdout
    cost, at = {}, 0
    for words in map(str.split, text.splitlines()):
        if "cost" in words:  # a table's head: where its cost column is
            at = words.index("cost")
        elif len(words) > at > 0:
            cost[words[0]] = words[at]
    assert cost[run.run_id] == "$0.000070"
    assert (cost["judge_a"], cost["judge_b"], cost["script"]) == ("$0.000040", "$0.000030", "-")
    markdown = eb("history", "--cwd", str(root), "--format", "md").stdout
    assert "| $0.000040 |" in markdown and "$0.0000 " not in markdown
    page = tmp_path / "history.html"
    assert eb("history", "--cwd", str(root), "--html", str(page)).exit_code == 0
    assert "): $0.000070</title>" in page.read_text()  # the cost chart's point


def test_import_copies_other_runners_records_and_skips_duplicates(tmp_path: Path, eb: Eb) -> None:
    mine = _project(tmp_path / "mine", {"eval_checks/ok.yaml": check_yaml("ok")})
    other = _project(tmp_path / "other", {"eval_checks/ok.yaml": check_yaml("ok")})
    eb("run", "--cwd", str(mine))
    for _ in range(2):
        eb("run", "--cwd", str(other))
    artifact = other / ".eval-banana" / "history"
    (artifact / "junk.json").write_text("{}")

    done = eb("history", "--cwd", str(mine), "import", str(artifact))
    assert done.exit_code == 0, done.stderr
    assert "Imported 2 run records" in done.stdout and "1 refused" in done.stdout
    assert "junk.json" in done.stderr
    again = eb("history", "--cwd", str(mine), "import", str(artifact))
    assert "Imported 0 run records" in again.stdout and "2 already there" in again.stdout
    assert len(_records(mine / ".eval-banana" / "history")) == 3
    missing = eb("history", "--cwd", str(mine), "import", str(tmp_path / "nowhere"))
    assert missing.exit_code == 2 and "nowhere" in missing.stderr


def test_import_keeps_the_folder_within_history_keep(tmp_path: Path, eb: Eb) -> None:
    """`eb history import` of six records into a folder with `[history] keep = 2` left six:
    a gather job that only imports grew its folder without bound."""
    mine = _project(tmp_path / "mine", {"eval_checks/ok.yaml": check_yaml("ok")})
    other = _project(tmp_path / "other", {"eval_checks/ok.yaml": check_yaml("ok")})
    for _ in range(4):
        eb("run", "--cwd", str(other))
    artifact = other / ".eval-banana" / "history"
    newest = [record["run_id"] for record in _records(artifact)[-2:]]
    (mine / ".eval-banana" / "config.toml").write_text("[history]\nkeep = 2\n")

    done = eb("history", "--cwd", str(mine), "import", str(artifact))
    assert done.exit_code == 0, done.stderr
    assert "Imported 4 run records" in done.stdout
    assert "Removed the 2 oldest records past [history] keep = 2." in done.stdout
    kept = _records(mine / ".eval-banana" / "history")
    assert [record["run_id"] for record in kept] == newest


def test_import_replaces_a_record_an_update_rewrote_on_its_runner(tmp_path: Path, eb: Eb) -> None:
    """A runner's run imported, then brought up to date by `eb update` there (a failing check
    fixed), imported again: the gathered history kept the old record, FAILED, as "already
    there", since import knew runs by id only."""
    mine = _project(tmp_path / "mine", {"eval_checks/ok.yaml": check_yaml("ok")})
    other = _project(
        tmp_path / "other",
        {
            "eval_checks/ok.yaml": check_yaml("ok"),
            "eval_checks/mend.yaml": check_yaml("mend", script="raise SystemExit(1)\n"),
        },
    )
    first = eb("run", "--cwd", str(other), "--json")
    run_id = json.loads(first.stdout)["run_id"]
    artifact = other / ".eval-banana" / "history"
    assert eb("history", "--cwd", str(mine), "import", str(artifact)).exit_code == 0
    (other / "eval_checks/mend.yaml").write_text(check_yaml("mend"))
    run_dir = other / ".eval-banana" / "results" / run_id
    updated = eb("update", "--run-dir", str(run_dir), "--cwd", str(other))
    assert updated.exit_code == 0, updated.stdout + updated.stderr

    done = eb("history", "--cwd", str(mine), "import", str(artifact))
    assert done.exit_code == 0, done.stderr
    assert "1 updated, 0 already there" in done.stdout
    (record,) = _records(mine / ".eval-banana" / "history")
    assert (record["run_id"], record["passed"]) == (run_id, True)
    again = eb("history", "--cwd", str(mine), "import", str(artifact))
    assert "0 updated, 1 already there" in again.stdout
    assert _records(mine / ".eval-banana" / "history") == [record]


def _foreign_record(project: Path, folder: Path, name: str, **fields: str) -> Path:
    """A copy of `project`'s newest record in `folder`, as another runner's with `fields`."""
    newest = sorted((project / ".eval-banana" / "history").glob("*.json"))[-1]
    document = {**json.loads(newest.read_text()), **fields}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(document))
    return folder / name


def test_a_record_whose_times_are_no_iso_times_is_refused_and_skipped_when_read(
    tmp_path: Path, eb: Eb
) -> None:
    mine = _project(tmp_path / "mine", {"eval_checks/ok.yaml": check_yaml("ok")})
    eb("run", "--cwd", str(mine))
    history = mine / ".eval-banana" / "history"
    local = {"run_id": "other_runner_1", "started_at": "06/12/2026 10:00"}
    artifact = _foreign_record(mine, tmp_path / "artifact", "20261206100000-other.json", **local)

    done = eb("history", "--cwd", str(mine), "import", str(artifact.parent))

    assert done.exit_code == 0 and "Imported 0 run records" in done.stdout
    assert "1 refused" in done.stdout and str(artifact) in done.stderr
    assert "started_at '06/12/2026 10:00' is not an ISO-8601 time" in done.stderr
    assert len(list(history.glob("*.json"))) == 1
    # One an earlier eb imported, in the folder already (named to be read first).
    _foreign_record(mine, history, "29990101000000000000-old_import.json", **local)
    shown = eb("history", "--cwd", str(mine), "--since", "2000-01-01", "--format", "json")
    assert shown.exit_code == 0 and len(json.loads(shown.stdout)["runs"]) == 1
    assert "old_import.json" in shown.stderr and "not an ISO-8601 time" in shown.stderr


def test_a_record_whose_time_leaves_the_calendar_in_utc_is_refused_and_the_import_goes_on(
    tmp_path: Path, eb: Eb
) -> None:
    """`0001-01-01T00:00:00+05:00` is an ISO time five hours before the first moment Python
    holds: converting it to UTC crashed `eb history import` halfway through a folder."""
    mine = _project(tmp_path / "mine", {"eval_checks/ok.yaml": check_yaml("ok")})
    eb("run", "--cwd", str(mine))
    history = mine / ".eval-banana" / "history"
    artifact = tmp_path / "artifact"
    for name, run_id, field, at in (
        ("a.json", "other_1", "started_at", "2026-12-01T10:00:00+00:00"),
        ("b.json", "other_2", "started_at", "0001-01-01T00:00:00+05:00"),
        ("c.json", "other_3", "finished_at", "9999-12-31T23:00:00-05:00"),
        ("d.json", "other_4", "started_at", "2026-12-01T11:00:00+00:00"),
    ):
        _foreign_record(mine, artifact, name, run_id=run_id, **{field: at})

    done = eb("history", "--cwd", str(mine), "import", str(artifact))

    assert done.exit_code == 0, done.stderr
    assert "Imported 2 run records" in done.stdout and "2 refused" in done.stdout
    assert str(artifact / "b.json") in done.stderr and str(artifact / "c.json") in done.stderr
    assert "started_at '0001-01-01T00:00:00+05:00' lies outside years 1 to 9999" in done.stderr
    assert "finished_at '9999-12-31T23:00:00-05:00' lies outside" in done.stderr
    names = {path.name.partition("-")[2] for path in history.glob("*.json")}
    assert {"other_1.json", "other_4.json"} <= names and len(names) == 3
    # One an earlier eb left in the folder is skipped when read, as a damaged record is.
    late = {"started_at": "9999-12-31T23:00:00-05:00"}
    _foreign_record(mine, history, "99991231230000000000-old_import.json", **late)
    shown = eb("history", "--cwd", str(mine), "--since", "2000-01-01", "--format", "json")
    assert shown.exit_code == 0, shown.stderr
    assert len(json.loads(shown.stdout)["runs"]) == 3
    assert "old_import.json" in shown.stderr and "lies outside years 1 to 9999" in shown.stderr


def test_another_runners_words_in_an_imported_record_never_start_a_line_of_eb_history(
    tmp_path: Path,
) -> None:
    # A record from another runner's artifacts is anyone's JSON: its run id and a refused
    # one's bad time were printed as written, so a line break in them began a line of
    # `eb history`'s output, which GitHub Actions runs as a `::` workflow command.
    from tests.reporting.conftest import run_eb

    mine = _project(tmp_path / "mine", {"eval_checks/ok.yaml": check_yaml("ok")})
    assert run_eb("run", "--cwd", str(mine)).returncode == 0
    artifact = tmp_path / "artifact"
    _foreign_record(mine, artifact, "29990101000000-a.json", run_id="x\n::error::forged")
    _foreign_record(mine, artifact, "29990101000001-b.json", started_at="y\n::error::forged")
    done = run_eb("history", "--cwd", str(mine), "import", str(artifact))
    assert done.returncode == 0, done.stderr
    assert "Imported 1 run record" in done.stdout, done.stdout
    assert "started_at 'y\\n::error::forged'" in done.stderr, done.stderr
    printed = done.stdout + done.stderr
    for form in ("text", "md"):
        shown = run_eb("history", "--cwd", str(mine), "--since", "2000-01-01", "--format", form)
        assert shown.returncode == 0, shown.stderr
        assert "x\\x0a::error::forged" in shown.stdout, shown.stdout
        printed += shown.stdout + shown.stderr
    # Not even as a Markdown table row's continuation: `::error` leads no line.
    assert not [line for line in printed.splitlines() if line.lstrip("| ").startswith("::")], (
        printed
    )


def test_a_record_whose_totals_its_checks_refute_is_refused_and_the_import_goes_on(
    tmp_path: Path, eb: Eb
) -> None:
    """A record whose totals say 3 passed of its 2 checks was imported, and `eb history` then
    showed the run as `3/2 150%`. It is refused with a warning naming the file and the field,
    as a record whose time is no ISO time is, and the import goes on with the next file."""
    mine = _project(
        tmp_path / "mine",
        {
            "eval_checks/ok.yaml": check_yaml("ok"),
            "eval_checks/bad.yaml": check_yaml("bad", script="raise SystemExit(1)"),
        },
    )
    eb("run", "--cwd", str(mine))
    newest = sorted((mine / ".eval-banana" / "history").glob("*.json"))[-1]
    document = json.loads(newest.read_text())
    assert document["totals"]["checks"] == 2 and document["totals"]["passed"] == 1
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    for name, run_id, totals in (
        ("a.json", "other_1", {"passed": 3}),
        ("b.json", "other_2", {"checks": 5}),
        ("c.json", "other_3", {"failed": 0, "errored": 1}),
        ("d.json", "other_4", {}),
    ):
        changed = {**document, "run_id": run_id, "totals": {**document["totals"], **totals}}
        (artifact / name).write_text(json.dumps(changed))

    done = eb("history", "--cwd", str(mine), "import", str(artifact))

    assert done.exit_code == 0, done.stderr
    assert "Imported 1 run record" in done.stdout and "3 refused" in done.stdout
    warned = {line.partition(": it ")[0]: line for line in done.stderr.splitlines()}
    assert (
        "its totals.passed is 3, but 1 of its 2 checks have the status 'passed'"
        in (warned[f"warning: skipped {artifact / 'a.json'}"])
    )
    assert (
        "its totals.checks is 5, but it lists 2 checks"
        in (warned[f"warning: skipped {artifact / 'b.json'}"])
    )
    assert (
        "its totals.failed is 0, but 1 of its 2 checks have the status 'failed'"
        in (warned[f"warning: skipped {artifact / 'c.json'}"])
    )
    assert "write the counts its checks add up to" in done.stderr
    shown = json.loads(eb("history", "--cwd", str(mine), "--json").stdout)
    assert [run["run_id"] for run in shown["runs"]][-1] == "other_4"
    assert {(run["passed_checks"], run["checks"]) for run in shown["runs"]} == {(1, 2)}


def test_an_imported_record_with_a_zone_offset_is_ordered_by_its_utc_start(
    tmp_path: Path, eb: Eb
) -> None:
    mine = _project(tmp_path / "mine", {"eval_checks/ok.yaml": check_yaml("ok")})
    own = [_run_id(eb, mine, 0) for _ in range(2)]
    first = _records(mine / ".eval-banana" / "history")[0]["started_at"]
    # Started an hour before our first run, written in Tokyo time (its digits read later).
    tokyo = timezone(timedelta(hours=9))
    started = (datetime.fromisoformat(first) - timedelta(hours=1)).astimezone(tokyo)
    times = {"started_at": started.isoformat(), "finished_at": started.isoformat()}
    artifact = tmp_path / "artifact"
    _foreign_record(mine, artifact, "rec.json", run_id="tokyo_runner_1", **times)

    done = eb("history", "--cwd", str(mine), "import", str(artifact))
    assert "Imported 1 run record" in done.stdout

    records = _records(mine / ".eval-banana" / "history")
    assert [r["run_id"] for r in records] == ["tokyo_runner_1", *own]
    assert records[0]["started_at"] == started.astimezone(UTC).isoformat(timespec="microseconds")
    shown = eb("history", "--cwd", str(mine), "--since", first, "--format", "json")
    assert [run["run_id"] for run in json.loads(shown.stdout)["runs"]] == own


def test_import_of_a_folder_whose_records_are_in_subfolders_names_them(
    tmp_path: Path, eb: Eb
) -> None:
    mine = _project(tmp_path / "mine", {"eval_checks/ok.yaml": check_yaml("ok")})
    failing = check_yaml("bad", script="raise SystemExit(1)")  # leaves lastfailed.json
    other = _project(
        tmp_path / "other",
        {"eval_checks/ok.yaml": check_yaml("ok"), "eval_checks/bad.yaml": failing},
    )
    eb("run", "--cwd", str(other))
    assert (other / ".eval-banana" / "lastfailed.json").is_file()
    artifacts = tmp_path / "artifacts"
    for job in ("history-linux", "history-macos"):
        _foreign_record(other, artifacts / job, f"20260101000000000000-{job}.json", run_id=job)
    (artifacts / "empty").mkdir()

    done = eb("history", "--cwd", str(mine), "import", str(artifacts))

    assert done.exit_code == 2 and done.stdout == ""
    assert "holds no run record itself" in done.stderr
    assert str(artifacts / "history-linux") in done.stderr
    assert str(artifacts / "history-macos") in done.stderr and "empty" not in done.stderr
    assert not (mine / ".eval-banana" / "history").exists()
    root = eb("history", "--cwd", str(mine), "import", str(other))
    assert root.exit_code == 2 and str(other / ".eval-banana" / "history") in root.stderr
    # JSON files that are no records count for none: they were read as the folder's records,
    # each refused, and the import exited 0 having copied nothing.
    (other / "package.json").write_text('{"name": "other"}')
    for given in (other, other / ".eval-banana"):
        again = eb("history", "--cwd", str(mine), "import", str(given))
        assert again.exit_code == 2, (given, again.stdout, again.stderr)
        assert str(other / ".eval-banana" / "history") in again.stderr
    assert not (mine / ".eval-banana" / "history").exists()
    empty = eb("history", "--cwd", str(mine), "import", str(artifacts / "empty"))
    assert empty.exit_code == 0 and "holds no run record" in empty.stderr


FAMILY_OF_FOUR = """\
schema_version: 1
id: fam
type: deterministic
description: "row {{ case.id }}"
cases_from: rows.jsonl
script: |
  import json, sys
  ctx = json.loads(open(sys.argv[1]).read())
  sys.exit(0 if ctx["case"]["ok"] == "yes" else 1)
"""


def test_a_family_is_one_row_over_the_runs_and_a_partial_run_is_told_apart(
    tmp_path: Path, eb: Eb
) -> None:
    """A family's pass rate run by run, as one row: a run of all of it in eight heights, a run
    of part of it (--last-failed) marked ◦ rather than read as a dip to 0%."""
    root = _project(tmp_path / "proj", {"eval_checks/fam.yaml": FAMILY_OF_FOUR})

    def rows(*oks: str) -> None:
        lines = [json.dumps({"id": f"r{n}", "ok": ok}) for n, ok in enumerate(oks)]
        (root / "rows.jsonl").write_text("\n".join(lines) + "\n")

    rows("yes", "yes", "yes", "yes")
    assert eb("run", "--cwd", str(root)).exit_code == 0
    rows("yes", "yes", "yes", "no")
    assert eb("run", "--cwd", str(root)).exit_code == 1
    assert eb("run", "--cwd", str(root), "--last-failed").exit_code == 1
    shown = json.loads(eb("history", "--cwd", str(root), "--json").stdout)
    jsonschema.validate(shown, json.loads(packaged_schema("history")))
    (family,) = shown["families"]
    assert (family["id"], family["cases"], family["strip"]) == ("fam", 4, "█▅◦")
    assert family["runs"] == [
        {"cases": 4, "passed": 4},
        {"cases": 4, "passed": 3},
        {"cases": 1, "passed": 0},
    ]
    assert (family["latest_rate"], family["lowest_rate"]) == (0.75, 0.75)
    text = eb("history", "--cwd", str(root)).stdout
    assert "Dataset families (1; ▁ to █ the pass rate of a run of every case" in text
    assert any(line.split() == ["fam", "4", "█▅◦", "75%", "75%"] for line in text.splitlines())
    markdown = eb("history", "--cwd", str(root), "--format", "md").stdout
    assert "| fam | 4 | █▅◦ | 75% | 75% |" in markdown
    page = tmp_path / "history.html"
    assert eb("history", "--cwd", str(root), "--html", str(page)).exit_code == 0
    html = page.read_text()
    assert '<table id="families">' in html and '<td class="marks">█▅◦</td>' in html
    # The record of the --last-failed run says it took 1 of the family's 4 cases.
    newest = max(_records(root / ".eval-banana" / "history"), key=lambda r: r["finished_at"])
    assert newest["partial_families"] == {"fam": 4}
    # A filter that keeps no case of it leaves the family out; the flaky listing has none.
    assert (
        json.loads(eb("history", "--cwd", str(root), "-k", "nothing", "--json").stdout)["families"]
        == []
    )


def test_checks_a_stopped_run_did_not_run_are_no_runs_of_them(tmp_path: Path, eb: Eb) -> None:
    """A run that stopped (here its run timeout, a fuse; an interrupt alike) ended one check
    and never started the rest: none of them has an outcome in it, so `eb history` draws the
    run as not run for each, leaves it out of their pass rates, and the family's row too;
    report.html's sparklines leave it out."""
    pause = tmp_path / "pause"  # outside the project: how long a_slow sleeps
    slow = f"import time\ntime.sleep(float(open({str(pause)!r}).read() or 0))"
    root = _project(
        tmp_path / "proj",
        {
            "eval_checks/a_slow.yaml": check_yaml("a_slow", script=slow),
            "eval_checks/fam.yaml": FAMILY_OF_FOUR,
            "rows.jsonl": "".join(f'{{"id": "r{n}", "ok": "yes"}}\n' for n in range(4)),
        },
        config="[core]\nmax_parallel_checks = 1\n",
    )
    pause.write_text("0.5")  # the longest check, so the next run starts it first
    assert eb("run", "--cwd", str(root)).exit_code == 0
    pause.write_text("30")
    stopped = eb("run", "--cwd", str(root), "--run-timeout-seconds", "1")
    assert stopped.exit_code == 3, stopped.stderr
    assert "4 checks did not run" in stopped.stderr
    pause.write_text("")
    last = _run_id(eb, root, 0)
    shown = json.loads(eb("history", "--cwd", str(root), "--json").stdout)
    jsonschema.validate(shown, json.loads(packaged_schema("history")))
    rows = {row["id"]: row for row in shown["checks"]}
    for check_id in ("a_slow", "fam[r0]"):
        row = rows[check_id]
        assert (row["strip"], row["runs"], row["pass_rate"]) == ("✓·✓", 2, 1.0), row
    (family,) = shown["families"]
    assert (family["strip"], family["runs"][1]) == ("█·█", None)
    text = eb("history", "--cwd", str(root)).stdout
    assert any(line.split()[:3] == ["a_slow", "✓·✓", "100%"] for line in text.splitlines())
    # report.html's sparkline draws no mark for it either (it drew an error, `E`).
    items = _trend_items(root / ".eval-banana" / "results" / last)
    for check_id in ("a_slow", "fam[r0]"):
        assert items[check_id]["trend"] == "pp", items[check_id]


@pytest.mark.parametrize(
    ("value", "told"),
    [
        ("0", "argument --last: '0' must be 1 or more"),
        ("ten", "argument --last: 'ten' is not a whole number"),
        ("9" * 5000, "argument --last: '9999999999999999999999999999999999999999'..."),
    ],
)
def test_a_bad_window_is_told_in_one_short_line(
    tmp_path: Path, eb: Eb, value: str, told: str
) -> None:
    result = eb("history", "--last", value, "--cwd", str(tmp_path))
    assert result.exit_code == 2
    first = result.stderr.splitlines()[0]
    assert first.startswith(told) and len(first) < 200, first


def test_a_window_of_subset_runs_alone_is_not_read_as_the_whole_family(
    tmp_path: Path, eb: Eb
) -> None:
    """Runs of `--subset 2` each hold the same 2 of the family's 4 cases: the most cases a run
    held is not the family's size, so the row says 4 and marks each run as part of it, and
    no rate stands for the family until a run of all of it."""
    root = _project(tmp_path / "proj", {"eval_checks/fam.yaml": FAMILY_OF_FOUR})
    lines = [json.dumps({"id": f"r{n}", "ok": "yes"}) for n in range(4)]
    (root / "rows.jsonl").write_text("\n".join(lines) + "\n")
    for _ in range(2):
        assert eb("run", "--cwd", str(root), "--subset", "2", "--cache", "off").exit_code == 0
    (family,) = json.loads(eb("history", "--cwd", str(root), "--json").stdout)["families"]
    assert (family["cases"], family["strip"], family["latest_rate"]) == (4, "◦◦", None)
    assert eb("run", "--cwd", str(root), "--cache", "off").exit_code == 0
    (family,) = json.loads(eb("history", "--cwd", str(root), "--json").stdout)["families"]
    assert (family["cases"], family["strip"], family["latest_rate"]) == (4, "◦◦█", 1.0)
    # A view of some checks only is judged on what it keeps, as before.
    (kept,) = json.loads(eb("history", "--cwd", str(root), "-k", "fam", "--json").stdout)[
        "families"
    ]
    assert kept["strip"] == "◦◦█"


def _write_family(root: Path, *oks: str | None) -> None:
    """The family's rows.jsonl: a row per item of `oks`, "yes" or "no", or None: a skipped row."""
    rows = [
        {"id": f"r{n}", "ok": "yes"} | ({"skip": "flaky upstream"} if ok is None else {"ok": ok})
        for n, ok in enumerate(oks)
    ]
    (root / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def _family_of(eb: Eb, root: Path, *options: str) -> tuple[int, str, float | None, float | None]:
    """`eb history --json`'s one family row: its cases, strip, latest and lowest rates."""
    shown = json.loads(eb("history", "--cwd", str(root), "--json", *options).stdout)
    (family,) = shown["families"]
    return family["cases"], family["strip"], family["latest_rate"], family["lowest_rate"]


def test_a_family_run_whole_at_fewer_cases_is_read_at_its_own_size(tmp_path: Path, eb: Eb) -> None:
    """Rows removed, or a row skipped, leave a smaller family run whole: its record says so (no
    partial family), so its rate is the latest one and its size the family's, not a part of the
    largest run the window holds."""
    root = _project(tmp_path / "proj", {"eval_checks/fam.yaml": FAMILY_OF_FOUR})
    _write_family(root, "yes", "yes", "yes", "yes")
    assert eb("run", "--cwd", str(root)).exit_code == 0
    _write_family(root, "yes", "no")
    for _ in range(2):
        assert eb("run", "--cwd", str(root)).exit_code == 1
    assert _family_of(eb, root) == (2, "█▃▃", 0.5, 0.5)
    text = eb("history", "--cwd", str(root)).stdout
    assert any(line.split() == ["fam", "2", "█▃▃", "50%", "50%"] for line in text.splitlines())
    page = tmp_path / "history.html"
    assert eb("history", "--cwd", str(root), "--html", str(page)).exit_code == 0
    assert '<td class="marks">█▃▃</td>' in page.read_text()
    # One row of three skipped: the two cases left are the whole family.
    _write_family(root, "yes", None, "yes")
    assert eb("run", "--cwd", str(root)).exit_code == 0
    assert _family_of(eb, root) == (2, "█▃▃█", 1.0, 0.5)


def test_a_filter_on_the_family_still_reads_subset_runs_as_part_of_it(
    tmp_path: Path, eb: Eb
) -> None:
    """`--check-id fam` and `'fam[*]'` pick the family's rows; they do not turn `--subset` runs
    into whole runs of the few cases each held."""
    root = _project(tmp_path / "proj", {"eval_checks/fam.yaml": FAMILY_OF_FOUR})
    _write_family(root, "yes", "yes", "yes", "yes")
    for seed in ("1", "2"):
        done = eb("run", "--cwd", str(root), "--subset", "2", "--subset-seed", seed)
        assert done.exit_code == 0
    for chosen in ((), ("--check-id", "fam"), ("--check-id", "fam[*]"), ("-k", "fam")):
        assert _family_of(eb, root, *chosen) == (4, "◦◦", None, None), chosen


def test_records_written_before_partial_families_are_judged_by_the_most_cases(
    tmp_path: Path, eb: Eb
) -> None:
    """A record without `partial_families` cannot say whether its run was whole: it is still
    read, and a run that held fewer cases than the most a run held is read as part."""
    root = _project(tmp_path / "proj", {"eval_checks/fam.yaml": FAMILY_OF_FOUR})
    _write_family(root, "yes", "yes", "yes", "yes")
    assert eb("run", "--cwd", str(root), "--subset", "2").exit_code == 0
    assert eb("run", "--cwd", str(root)).exit_code == 0
    for path in (root / ".eval-banana" / "history").glob("*.json"):
        document = json.loads(path.read_text())
        del document["partial_families"]
        path.write_text(json.dumps(document))
    shown = eb("history", "--cwd", str(root), "--json")
    assert shown.stderr == ""
    (family,) = json.loads(shown.stdout)["families"]
    assert (family["cases"], family["strip"], family["latest_rate"]) == (4, "◦█", 1.0)


def test_a_stopped_runs_not_run_count_is_the_one_its_console_said(tmp_path: Path, eb: Eb) -> None:
    """A run timeout ended a_slow part-way (an error to the run) and never started b and c;
    a skipped check and one `-k` left out are neither. The console closed on `2 not run`, and
    `eb history` said `3 of 3 checks not run`: it counted the stopped check among them."""
    root = _project(
        tmp_path / "proj",
        {
            "eval_checks/a_slow.yaml": check_yaml("a_slow", script="import time\ntime.sleep(30)"),
            "eval_checks/b.yaml": check_yaml("b"),
            "eval_checks/c.yaml": check_yaml("c"),
            "eval_checks/d_skipped.yaml": check_yaml("d_skipped") + "skip: not today\n",
            "eval_checks/left_out.yaml": check_yaml("left_out"),
        },
        config="[core]\nmax_parallel_checks = 1\n",
    )
    stopped = eb("run", "--cwd", str(root), "-k", "not left_out", "--run-timeout-seconds", "1")
    assert stopped.exit_code == 3, stopped.stderr
    closing = stopped.stdout.strip().splitlines()[-1]
    assert closing.startswith("0 failed, 0 passed, 1 errored, 1 skipped, 2 not run"), closing
    shown = json.loads(eb("history", "--cwd", str(root), "--json").stdout)
    jsonschema.validate(shown, json.loads(packaged_schema("history")))
    (run,) = shown["runs"]
    assert (run["checks"], run["not_run"], run["stopped"], run["pass_rate"]) == (3, 2, 1, None)
    text = eb("history", "--cwd", str(root)).stdout
    (row,) = [line for line in text.splitlines() if line.startswith(run["run_id"])]
    assert row.split()[4] == "0/0", row  # out of the checks that ran to an outcome: none
    assert row.endswith("aborted (run_timeout): 2 of 3 checks not run, 1 stopped"), row


# Two samples, `aggregate: any`: the sample that creates the `flip` file fails, the other
# passes, so the check passes with samples that disagreed (flaky) the first time it runs.
FLAKY_ONCE = textwrap.dedent(
    """\
    schema_version: 1
    id: sampled
    type: deterministic
    description: Sampled.
    repeats: 2
    aggregate: any
    script: |
      import os, sys
      try:
          os.close(os.open({flip!r}, os.O_CREAT | os.O_EXCL))
      except FileExistsError:
          sys.exit(0)
      sys.exit("the first sample fails")
    """
)

# Three cases, one failing, under a gate of 100%: the run's threshold of 60% is met, its gate not.
GATED_FAMILY = textwrap.dedent(
    """\
    schema_version: 1
    id: fam
    type: deterministic
    description: Family.
    min_pass_rate: 1.0
    cases:
      - id: c1
      - id: c2
      - id: c3
    script: |
      import json, sys
      sys.exit(json.load(open(sys.argv[1]))["case_id"] == "c3")
    """
)


def _run_rows(text: str) -> dict[str, str]:
    """The runs table of `eb history`'s text: run id -> its row."""
    return {line.split()[0]: line for line in text.splitlines() if line[:1].isdigit()}


def _run_with(eb: Eb, root: Path, *options: str, expect: int) -> str:
    done = eb("run", "--cwd", str(root), "--json", *options)
    assert done.exit_code == expect, done.stderr
    return str(json.loads(done.stdout)["run_id"])


def test_a_run_that_failed_with_every_check_passing_says_it_failed_and_why(
    tmp_path: Path, eb: Eb
) -> None:
    """A flaky check under --fail-on-flaky fails the run (exit 1) though every check passed:
    its row says FAILED and why, in text and Markdown, as a passing run's says passed; and
    `--flaky` lists the check whose samples disagreed, saying so."""
    root = _project(
        tmp_path / "p",
        {
            "eval_checks/sampled.yaml": FLAKY_ONCE.format(flip=str(tmp_path / "flip")),
            "eval_checks/ok.yaml": check_yaml("ok"),
        },
    )
    failed = _run_with(eb, root, "--fail-on-flaky", expect=1)
    passed = _run_with(eb, root, "--fail-on-flaky", expect=0)  # the samples agree now

    rows = _run_rows(eb("history", "--cwd", str(root)).stdout)
    assert rows[failed].split()[3:6] == ["FAILED", "2/2", "100%"]
    assert rows[failed].endswith("1 check was flaky (--fail-on-flaky)")
    assert rows[passed].split()[3:6] == ["passed", "2/2", "100%"]
    markdown = eb("history", "--cwd", str(root), "--format", "md").stdout
    assert "| verdict |" in markdown
    assert "| FAILED | 2/2 | 100% |" in markdown
    assert "| 1 check was flaky (--fail-on-flaky) |" in markdown
    view = json.loads(eb("history", "--cwd", str(root), "--json").stdout)
    assert [run["failed_because"] for run in view["runs"]] == [
        ["1 check was flaky (--fail-on-flaky)"],
        [],
    ]

    flaky = eb("history", "--cwd", str(root), "--flaky").stdout
    assert "Flaky checks (1):" in flaky
    (line,) = [line for line in flaky.splitlines() if line.startswith("sampled")]
    assert "✓✓" in line and line.endswith("samples disagreed in 1 run")


def test_a_run_that_failed_its_family_gate_says_so(tmp_path: Path, eb: Eb) -> None:
    """The threshold is met (2 of 3 at 60%), the family's gate of 100% is not: the row says
    FAILED and names the gate."""
    root = _project(
        tmp_path / "p",
        {"eval_checks/fam.yaml": GATED_FAMILY},
        config="[core]\npass_threshold = 0.6\n",
    )
    failed = _run_with(eb, root, expect=1)
    rows = _run_rows(eb("history", "--cwd", str(root)).stdout)
    assert rows[failed].split()[3:5] == ["FAILED", "2/3"]
    assert rows[failed].endswith("the gate of family fam did not hold")


def test_a_check_whose_definition_changed_is_marked_where_it_changed(
    tmp_path: Path, eb: Eb
) -> None:
    """Passing twice, then edited into one that fails: the strip marks the edit and the note
    says the failures began with the new definition, not as a regression of the same check."""
    root = _project(tmp_path / "p", {"eval_checks/ok.yaml": check_yaml("ok")})
    _run_id(eb, root, 0)
    last_pass = _run_id(eb, root, 0)
    (root / "eval_checks" / "ok.yaml").write_text(check_yaml("ok", script="raise SystemExit(1)"))
    edited = _run_id(eb, root, 1)
    _run_id(eb, root, 1)

    text = eb("history", "--cwd", str(root)).stdout
    (line,) = [line for line in text.splitlines() if line.startswith("ok ")]
    assert "✓✓|✗✗" in line
    assert line.endswith(
        f"definition changed in run {edited}; failed since then, "
        f"last passed in run {last_pass} on its earlier definition"
    )
    markdown = eb("history", "--cwd", str(root), "--format", "md").stdout
    assert "| `ok` | `✓✓\\|✗✗` | 50% |" in markdown
    assert f"definition changed in run {edited}; failed since then" in markdown
    view = json.loads(eb("history", "--cwd", str(root), "--json").stdout)
    assert [ref["run_id"] for ref in view["checks"][0]["definition_changes"]] == [edited]

    # Edited again, and passing: the strip marks both edits, the note names the latest.
    (root / "eval_checks" / "ok.yaml").write_text(check_yaml("ok", script="pass  # back"))
    again = _run_id(eb, root, 0)
    text = eb("history", "--cwd", str(root)).stdout
    (line,) = [line for line in text.splitlines() if line.startswith("ok ")]
    assert "✓✓|✗✗|✓" in line and line.endswith(f"definition changed in run {again}")


def _hourly_runs(*, count: int, cost_of: Callable[[int], float | None]) -> list[Any]:
    """`count` synthetic runs, one an hour from 2026-01-01 00:00 UTC, run `n` costing
    `cost_of(n)` (None: it reported no cost)."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    runs = []
    for n in range(count):
        at = (start + timedelta(hours=n)).isoformat(timespec="microseconds")
        cost = cost_of(n)
        check = synth.check(check_id="judge", cost_usd=cost)
        runs.append(
            synth.record(index=1, checks=[check]).model_copy(
                update={
                    "run_id": f"run_{n:04d}",
                    "started_at": at,
                    "finished_at": at,
                    "cost_usd": cost,
                }
            )
        )
    return runs


def test_since_alone_shows_every_run_since_then_and_what_they_cost(tmp_path: Path, eb: Eb) -> None:
    """1,000 runs recorded, 100 of them since the date: `--since` alone showed the last 30 of
    them under "Runs (30 of 1000 recorded", the default `--last 30` applied without a word.
    The window is every run since the date, and the text and Markdown say what its runs cost
    together, leaving out (and counting) the runs that reported no cost."""
    root = _project(tmp_path / "p", {})
    runs = _hourly_runs(count=1000, cost_of=lambda n: None if n % 10 == 0 else 0.01)
    synth.write(folder=root / ".eval-banana" / "history", records=runs)
    since = runs[900].started_at

    view = json.loads(eb("history", "--cwd", str(root), "--since", since, "--json").stdout)
    assert [run["run_id"] for run in view["runs"]] == [run.run_id for run in runs[900:]]
    text = eb("history", "--cwd", str(root), "--since", since).stdout
    assert "Runs (100 of 1000 recorded, oldest first):" in text
    total = "Total cost of the 100 runs shown: $0.9000; 10 runs reported no cost (left out)."
    assert total in text.splitlines()
    markdown = eb("history", "--cwd", str(root), "--since", since, "--format", "md").stdout
    assert "## Runs (100 of 1000 recorded, oldest first)" in markdown
    assert total in markdown.splitlines()
    # --last still limits, with --since or alone (30 by default).
    both = eb("history", "--cwd", str(root), "--since", since, "--last", "5", "--json").stdout
    assert [run["run_id"] for run in json.loads(both)["runs"]] == [r.run_id for r in runs[995:]]
    plain = eb("history", "--cwd", str(root)).stdout
    assert "Runs (30 of 1000 recorded, oldest first):" in plain
    assert "Total cost of the 30 runs shown: $0.2700; 3 runs reported no cost (left out)." in plain
    free = _project(tmp_path / "free", {})
    synth.write(
        folder=free / ".eval-banana" / "history",
        records=_hourly_runs(count=2, cost_of=lambda n: None),
    )
    assert (
        "Total cost of the 2 runs shown: no cost reported."
        in eb("history", "--cwd", str(free)).stdout
    )


def test_the_json_and_the_page_say_what_the_window_cost_as_the_text_does(
    tmp_path: Path, eb: Eb
) -> None:
    """The text and Markdown ended with the window's total cost; `--format json` and `--html`
    had only each run's, for the reader to add up (and to miss the runs without one)."""
    root = _project(tmp_path / "p", {})
    runs = _hourly_runs(count=40, cost_of=lambda n: None if n % 10 == 0 else 0.01)
    synth.write(folder=root / ".eval-banana" / "history", records=runs)
    view = json.loads(eb("history", "--cwd", str(root), "--format", "json").stdout)
    jsonschema.validate(view, json.loads(packaged_schema("history")))
    assert (view["cost_usd"], view["runs_without_cost"]) == (pytest.approx(0.27), 3), view
    text = eb("history", "--cwd", str(root)).stdout
    assert "Total cost of the 30 runs shown: $0.2700; 3 runs reported no cost (left out)." in text
    page = tmp_path / "history.html"
    assert eb("history", "--cwd", str(root), "--html", str(page)).exit_code == 0
    assert (
        "<dt>Total cost</dt><dd>$0.2700; 3 runs reported no cost (left out)</dd>"
        in page.read_text()
    )
    free = _project(tmp_path / "free", {})
    synth.write(
        folder=free / ".eval-banana" / "history",
        records=_hourly_runs(count=2, cost_of=lambda n: None),
    )
    none = json.loads(eb("history", "--cwd", str(free), "--json").stdout)
    assert (none["cost_usd"], none["runs_without_cost"]) == (None, 2), none
    assert eb("history", "--cwd", str(free), "--html", str(page)).exit_code == 0
    assert "<dt>Total cost</dt><dd>no cost reported</dd>" in page.read_text()
