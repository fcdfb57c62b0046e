"""`eb diff BASE HEAD` and `eb run --baseline`: each category, the formats and the exit codes,
over real runs of a project that changes between them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from eval_banana.diffing.render import render_text
from eval_banana.models.diff import RunDiff
from tests.conftest import EbResult, check_yaml
from tests.processes import eb_interrupted, eb_process

FAIL = "raise SystemExit(1)"
BASE = {
    "kept_green": "pass",
    "regresses": "pass",
    "gets_fixed": FAIL,
    "stays_red": FAIL,
    "is_removed": "pass",
    "is_edited": "pass",
}
HEAD = {
    "kept_green": "pass",
    "regresses": FAIL,
    "gets_fixed": "pass",
    "stays_red": FAIL,
    "is_edited": "print('edited, still green')",
    "new_green": "pass",
    "new_red": FAIL,
}


def _write(root: Path, checks: dict[str, str]) -> None:
    folder = root / "eval_checks"
    for old in folder.glob("*.yaml") if folder.is_dir() else []:
        old.unlink()
    for check_id, script in checks.items():
        path = folder / f"{check_id}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(check_yaml(check_id, script=script))


@pytest.fixture
def runs(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> tuple[Path, Path, Path]:
    """(project, base run folder, head run folder)."""
    root = project({}, config='[core]\noutput_dir = "runs"\npass_threshold = 0.5\n')
    _write(root, BASE)
    assert (
        eb(
            "run", "--cwd", str(root), "--output-dir", str(tmp_path / "base"), "--flat-output"
        ).exit_code
        == 0
    )
    _write(root, HEAD)
    assert (
        eb(
            "run", "--cwd", str(root), "--output-dir", str(tmp_path / "head"), "--flat-output"
        ).exit_code
        == 0
    )  # 4/7 meet the 0.5 threshold
    return root, tmp_path / "base", tmp_path / "head"


def _run_dir_of(result: EbResult) -> Path:
    """The run folder `eb run` reported."""
    return Path(result.stdout.split("Report: ", 1)[1].splitlines()[0].split(" (HTML: ")[0]).parent


def _ids(entries: list[dict[str, Any]]) -> list[str]:
    return [entry["check_id"] for entry in entries]


def _json_diff(eb: Callable[..., EbResult], base: Path, head: Path, *extra: str) -> Any:
    result = eb("diff", str(base), str(head), "--json", *extra)
    document = json.loads(result.stdout)
    document["_exit"] = result.exit_code
    return document


def test_every_category(eb: Callable[..., EbResult], runs: tuple[Path, Path, Path]) -> None:
    _, base, head = runs
    diff = _json_diff(eb, base, head)
    assert diff["_exit"] == 1
    assert _ids(diff["regressions"]) == ["new_red", "regresses"]
    regressed = {e["check_id"]: e for e in diff["regressions"]}
    assert (regressed["regresses"]["base"], regressed["regresses"]["head"]) == ("passed", "failed")
    assert regressed["regresses"]["definition_changed"] is True
    assert regressed["regresses"]["summary"] == "exit code 1"
    assert (regressed["new_red"]["base"], regressed["new_red"]["head"]) == (None, "failed")
    assert _ids(diff["fixes"]) == ["gets_fixed"]
    assert _ids(diff["still_failing"]) == ["stays_red"]
    assert _ids(diff["new_checks"]) == ["new_green", "new_red"]
    assert _ids(diff["removed_checks"]) == ["is_removed"]
    assert diff["removed_checks"][0]["base"] == "passed"
    assert _ids(diff["changed_definitions"]) == ["gets_fixed", "is_edited", "regresses"]
    assert diff["unchanged_passing"] == 2  # kept_green, is_edited
    # Base 4 of 6 points, head 4 of 7.
    assert (diff["base"]["points_earned"], diff["head"]["points_earned"]) == (4, 4)
    assert diff["points_earned_delta"] == 0
    assert diff["base"]["pass_rate"] == round(4 / 6, 6)
    assert diff["pass_rate_delta"] == round(round(4 / 7, 6) - round(4 / 6, 6), 6)
    assert diff["regressed"] is True


def test_json_is_valid_against_the_published_schema(
    eb: Callable[..., EbResult], runs: tuple[Path, Path, Path]
) -> None:
    _, base, head = runs
    diff = _json_diff(eb, base, head)
    del diff["_exit"]
    schema = json.loads(eb("schema", "diff").stdout)
    jsonschema.validate(diff, schema)


def test_no_regression_exits_0_even_when_checks_still_fail(
    eb: Callable[..., EbResult], runs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    root, base, _ = runs
    fixed_only = dict(BASE, gets_fixed="pass")  # stays_red still fails: the suite is not green
    _write(root, fixed_only)
    later = tmp_path / "later"
    assert eb("run", "--cwd", str(root), "--output-dir", str(later), "--flat-output").exit_code == 0
    result = eb("diff", str(base), str(later))
    assert result.exit_code == 0, result.stdout
    assert "Fixes (1):\n  - gets_fixed: failed -> passed" in result.stdout
    assert "Still failing (1):\n  - stays_red: failed -> failed - exit code 1" in result.stdout
    assert result.stdout.endswith("Diff: no regressions\n")


def test_text_and_markdown(eb: Callable[..., EbResult], runs: tuple[Path, Path, Path]) -> None:
    _, base, head = runs
    text = eb("diff", str(base), str(head))
    assert text.exit_code == 1
    assert "Regressions (2):\n  - new_red: new, failed - exit code 1\n" in text.stdout
    # Its definition changed too: said where its verdict is, and only pointed to below.
    assert "  - regresses: passed -> failed, definition changed - exit code 1\n" in text.stdout
    assert (
        "Changed definitions (3):\n  - gets_fixed: failed -> passed (under Fixes above)\n"
        "  - is_edited: passed -> passed\n"
        "  - regresses: passed -> failed (under Regressions above)\n" in text.stdout
    )
    assert "  - new_red: new, failed (under Regressions above)\n" in text.stdout
    assert text.stdout.count("exit code 1") == 3  # new_red's, regresses' and stays_red's
    assert "Removed checks (1):\n  - is_removed: was passed\n" in text.stdout
    assert "Points earned: 4 -> 4 (+0)" in text.stdout
    assert "Pass rate: 0.666667 -> 0.571429 (-0.095238; 66.67% -> 57.14%)" in text.stdout
    md = eb("diff", str(base), str(head), "--format", "md")
    assert md.exit_code == 1
    assert md.stdout.startswith("### eval-banana diff: 2 regressions\n")
    assert "| Pass rate | 66.67% | 57.14% | -9.52 pp |" in md.stdout
    assert "#### Regressions (2)" in md.stdout
    assert "<details><summary>Fixes (1)</summary>" in md.stdout
    assert "| `regresses` | passed -> failed | changed | exit code 1 |" in md.stdout


def test_a_regressions_reason_is_one_safe_line_of_the_diff(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    # A script's message (or a judge's reason) with an escape sequence: printed as it came, it
    # could erase the diff's own words on a terminal or in a CI log.
    root = project({}, config='[core]\noutput_dir = "runs"\n')
    _write(root, {"turns": "pass"})
    eb("run", "--cwd", str(root), "--output-dir", str(tmp_path / "base"), "--flat-output")
    _write(root, {"turns": "raise SystemExit('\\x1b[2Kall good\\x07')"})
    eb("run", "--cwd", str(root), "--output-dir", str(tmp_path / "head"), "--flat-output")
    result = eb("diff", str(tmp_path / "base"), str(tmp_path / "head"))
    assert "turns: passed -> failed, definition changed - \\x1b[2Kall good\\x07" in result.stdout
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout


# A judge that passes while the file `green` exists, and otherwise gives a reason whose first
# line holds a vertical tab, a form feed and a file separator.
_ODD_BREAKS_JUDGE = """\
import json
from pathlib import Path
reason = "\\x00\\x01\\x08\\x0bRED \\x0cstill \\x1cred\\nsecond line"
verdict = {"score": 0, "reason": reason}
if Path("green").exists():
    verdict = {"score": 1, "reason": "fine"}
print(json.dumps(verdict))
"""


def _agent_config(*, name: str) -> str:
    """A config whose judges run the project's own `judge.py` as the agent `name`."""
    return (
        f'[harness]\nagent = "{name}"\n[agents.{name}]\ncommand = ["{sys.executable}", '
        '"judge.py"]\nprompt_flag = ""\nmodel_flag = ""\n'
    )


def _run_green_then_red(*, root: Path, tmp_path: Path) -> None:
    """The base run while the project's `green` file exists (it passes), then the head run
    without it (it fails), into tmp_path/base and tmp_path/head."""
    from tests.reporting.conftest import run_eb

    for side in ("base", "head"):
        done = run_eb(
            "run", "--cwd", str(root), "--cache", "off", "--flat-output",
            "--output-dir", str(tmp_path / side),
        )  # fmt: skip
        assert done.returncode == (0 if side == "base" else 1), done.stdout + done.stderr
        (root / "green").unlink(missing_ok=True)


def test_a_reasons_first_line_ends_only_at_a_line_break(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    # str.splitlines() also cut at \x0b, \x0c and \x1c to \x1e: the reason above was
    # summarised as `\x00\x01\x08`, the words after the vertical tab lost.
    from tests.reporting.conftest import run_eb

    root = project(
        {
            "judge.py": _ODD_BREAKS_JUDGE,
            "green": "",
            "eval_checks/j.yaml": "schema_version: 1\nid: j\ntype: harness_judge\n"
            "description: d\ninstructions: judge it\n",
        },
        config=_agent_config(name="odd"),
    )
    _run_green_then_red(root=root, tmp_path=tmp_path)
    done = run_eb("diff", str(tmp_path / "base"), str(tmp_path / "head"))
    assert done.returncode == 1, done.stdout + done.stderr
    shown = "  - j: passed -> failed - \\x00\\x01\\x08 RED still red"
    assert shown in done.stdout.splitlines(), done.stdout


def test_latest_is_the_newest_run_of_the_project(
    eb: Callable[..., EbResult], runs: tuple[Path, Path, Path]
) -> None:
    root, base, _ = runs
    assert eb("run", "--cwd", str(root)).exit_code == 0  # a run under runs/, the newest
    diff = _json_diff(eb, base, Path("latest"), "--cwd", str(root))
    (newest,) = (root / "runs").iterdir()
    assert diff["head"]["run_dir"] == str(newest)
    assert _ids(diff["regressions"]) == ["new_red", "regresses"]


def test_eb_diff_alone_compares_the_last_two_runs_of_the_project(
    eb: Callable[..., EbResult], project: Callable[..., Path]
) -> None:
    root = project({}, config='[core]\noutput_dir = "runs"\npass_threshold = 0.5\n')
    _write(root, BASE)
    none = eb("diff", "--cwd", str(root))
    assert none.exit_code == 2
    assert "'previous': no finished run found under runs" in none.stderr
    first = eb("run", "--cwd", str(root))
    assert first.exit_code == 0
    one = eb("diff", "--cwd", str(root))
    assert one.exit_code == 2
    assert "'previous': only one finished run found under runs" in one.stderr
    assert "Run `eb run` again to have two runs to compare" in one.stderr
    _write(root, HEAD)
    second = eb("run", "--cwd", str(root))
    assert second.exit_code == 0
    older, newer = (_run_dir_of(run) for run in (first, second))
    both = eb("diff", "--cwd", str(root), "--json")
    assert both.exit_code == 1
    document = json.loads(both.stdout)
    assert (document["base"]["run_dir"], document["head"]["run_dir"]) == (str(older), str(newer))
    assert _ids(document["regressions"]) == ["new_red", "regresses"]
    # BASE alone is judged against the newest run; 'previous' can be named too.
    named = _json_diff(eb, Path("previous"), Path("latest"), "--cwd", str(root))
    assert named["base"]["run_dir"] == str(older) and named["head"]["run_dir"] == str(newer)
    against = json.loads(eb("diff", str(older), "--cwd", str(root), "--json").stdout)
    assert against["head"]["run_dir"] == str(newer)


def test_latest_and_previous_are_finished_runs_only(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    # A run still going, then killed (SIGKILL: the OOM killer, a cancelled CI job), has no
    # report.json: `latest` and `previous` pass over it, while naming it is still an error.
    hold, started = tmp_path / "hold", tmp_path / "started"
    waiter = (
        "import time\nfrom pathlib import Path\n"
        f"if Path({str(hold)!r}).exists():\n"
        f"    Path({str(started)!r}).write_text('running')\n"
        f"    while Path({str(hold)!r}).exists():\n"
        "        time.sleep(0.02)\n"
    )
    root = project(
        {"eval_checks/waiter.yaml": check_yaml("waiter", script=waiter)},
        config='[core]\noutput_dir = "runs"\n\n[cache]\nmode = "off"\n',
    )
    assert eb_process(root, "run").returncode == 0
    (older,) = (root / "runs").iterdir()
    assert eb_process(root, "run").returncode == 0
    (newer,) = (run for run in (root / "runs").iterdir() if run != older)
    hold.write_text("")
    going = subprocess.Popen(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert started.exists()
        while_going = eb_process(root, "diff", "--json")
        assert while_going.returncode == 0, while_going.stderr
    finally:
        os.killpg(going.pid, signal.SIGKILL)  # eb and its check, as the OOM killer would
        going.wait(timeout=60)
        hold.unlink()
    (killed,) = (run for run in (root / "runs").iterdir() if run not in (older, newer))
    assert not (killed / "report.json").exists()
    for done in (while_going, eb_process(root, "diff", "previous", "latest", "--json")):
        document = json.loads(done.stdout)
        assert (document["base"]["run_dir"], document["head"]["run_dir"]) == (
            str(older),
            str(newer),
        )
    gated = eb_process(root, "run", "--baseline", "latest", "--json")
    assert gated.returncode == 0, gated.stderr
    written = json.loads((Path(json.loads(gated.stdout)["output_dir"]) / "diff.json").read_text())
    assert written["base"]["run_dir"] == str(newer)
    named = eb_process(root, "diff", str(killed), "latest")
    assert named.returncode == 2
    assert f"Not a run folder: {killed} has no report.json" in named.stderr
    assert "It is a run that has not finished" in named.stderr
    assert f"eb update --run-dir {killed}" in named.stderr


def test_a_not_run_check_is_a_regression(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    # No history: with one worker the head run starts a_slow first (plan order), whatever
    # the base run's durations say.
    root = project({}, config='[history]\nmode = "off"\n')
    # Slow only in the head run, which the run timeout stops; the base run passes at once.
    slow_now = tmp_path / "slow"
    _write(
        root,
        {
            "a_slow": f"import os, time\nif os.path.exists({str(slow_now)!r}):\n    time.sleep(3)",
            "b_quick": "pass",
        },
    )
    assert (
        eb(
            "run", "--cwd", str(root), "--output-dir", str(tmp_path / "base"), "--flat-output"
        ).exit_code
        == 0
    )
    slow_now.touch()
    stopped = eb(
        "run",
        "--cwd",
        str(root),
        "--output-dir",
        str(tmp_path / "head"),
        "--flat-output",
        "--max-parallel-checks",
        "1",
        "--run-timeout-seconds",
        "1",
    )
    assert stopped.exit_code == 3
    diff = _json_diff(eb, tmp_path / "base", tmp_path / "head")
    assert [(e["check_id"], e["head"]) for e in diff["regressions"]] == [
        ("a_slow", "stopped"),  # the run timeout ended it part-way
        ("b_quick", "not_run"),
    ]
    assert diff["_exit"] == 1


def test_a_folder_that_is_not_a_run_is_a_setup_error(
    eb: Callable[..., EbResult], runs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _, base, _ = runs
    result = eb("diff", str(base), str(tmp_path / "missing"))
    assert result.exit_code == 2 and "does not exist" in result.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = eb("diff", str(empty), str(base))
    assert result.exit_code == 2 and f"{empty} has no report.json" in result.stderr
    (empty / "report.json").write_text(json.dumps({"checks": [{"check_id": "x"}]}))
    result = eb("diff", str(empty), str(base))
    assert result.exit_code == 2
    assert "$.checks[0].status must be passed, failed or error" in result.stderr
    result = eb("diff", "latest", str(base), "--cwd", str(tmp_path / "empty"))
    assert result.exit_code == 2 and "no finished run found" in result.stderr


def test_run_with_a_baseline_prints_and_writes_the_diff_and_keeps_its_verdict(
    eb: Callable[..., EbResult], runs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    root, base, _ = runs
    run_dir = tmp_path / "gated"
    result = eb(
        "run",
        "--cwd",
        str(root),
        "--baseline",
        str(base),
        "--output-dir",
        str(run_dir),
        "--flat-output",
    )
    assert result.exit_code == 0  # the run meets its threshold; the regressions do not change it
    summary, _, diff_text = result.stdout.partition("Base: ")
    assert summary.startswith("Run ID: ") and "- regresses: failed" in summary
    assert "Regressions (2):" in diff_text and diff_text.endswith("Diff: 2 regressions\n")
    written = json.loads((run_dir / "diff.json").read_text())
    assert written["head"]["run_dir"] == str(run_dir)
    assert _ids(written["regressions"]) == ["new_red", "regresses"]
    quiet = eb("run", "--cwd", str(root), "--baseline", str(base), "--json")
    assert quiet.exit_code == 0
    report = json.loads(quiet.stdout)  # stdout stays one JSON object
    assert (Path(report["output_dir"]) / "diff.json").is_file()


def test_a_bad_baseline_stops_the_run_before_it_starts(
    eb: Callable[..., EbResult], runs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    root, _, _ = runs
    result = eb("run", "--cwd", str(root), "--baseline", str(tmp_path / "nope"))
    assert result.exit_code == 2 and "does not exist" in result.stderr
    assert not (root / "runs").exists()


# Does not compile: the check ends as an `error`, not a failure.
ERRORS = "def broken(:"


@pytest.fixture
def red_base(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> tuple[Path, Path]:
    """(project, base run folder) of a run with one check failing already and one passing."""
    root = project({}, config='[core]\noutput_dir = "runs"\npass_threshold = 0.5\n')
    _write(root, {"a_green": "pass", "b_stays_red": FAIL})
    base = tmp_path / "base"
    assert eb("run", "--cwd", str(root), "--output-dir", str(base), "--flat-output").exit_code == 0
    return root, base


# What makes a new check not pass without failing: an error, or never running at all (-x
# stopped launching after the check that was already red, one check at a time in plan order:
# by history, the new check, never timed, would start first).
NEVER_RAN_FLAGS = ("--maxfail", "1", "--max-parallel-checks", "1", "--schedule", "plan")
NEW_CHECKS = {
    "errors": ({"c_new": ERRORS}, (), "error"),
    "never ran": ({"c_new": "pass"}, NEVER_RAN_FLAGS, "not_run"),
}


@pytest.mark.parametrize("case", sorted(NEW_CHECKS))
def test_a_new_check_that_errors_or_never_ran_is_a_regression(
    eb: Callable[..., EbResult], red_base: tuple[Path, Path], tmp_path: Path, case: str
) -> None:
    root, base = red_base
    added, flags, outcome = NEW_CHECKS[case]
    _write(root, {"a_green": "pass", "b_stays_red": FAIL, **added})
    head = tmp_path / "head"
    ran = eb("run", "--cwd", str(root), "--output-dir", str(head), "--flat-output", *flags)
    assert ran.exit_code == 1, ran.stdout + ran.stderr  # an error, or a halted run, never passes
    diff = _json_diff(eb, base, head)
    # The one regression is the new check: nothing that passed before fails now.
    assert _ids(diff["regressions"]) == ["c_new"], diff
    assert (diff["regressions"][0]["base"], diff["regressions"][0]["head"]) == (None, outcome)
    assert diff["regressed"] is True and diff["_exit"] == 1
    text = eb("diff", str(base), str(head))
    assert text.exit_code == 1
    assert "Regressions (1):\n  - c_new: new, " in text.stdout


@pytest.mark.parametrize("case", sorted(NEW_CHECKS))
def test_run_with_a_baseline_counts_a_new_check_that_errors_or_never_ran_as_a_regression(
    eb: Callable[..., EbResult], red_base: tuple[Path, Path], tmp_path: Path, case: str
) -> None:
    root, base = red_base
    added, flags, outcome = NEW_CHECKS[case]
    _write(root, {"a_green": "pass", "b_stays_red": FAIL, **added})
    run_dir = tmp_path / "gated"
    result = eb(
        "run", "--cwd", str(root), "--baseline", str(base),
        "--output-dir", str(run_dir), "--flat-output", *flags,
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "Regressions (1):\n  - c_new: new, " in result.stdout
    assert result.stdout.endswith("Diff: 1 regression\n")
    written = json.loads((run_dir / "diff.json").read_text())
    assert _ids(written["regressions"]) == ["c_new"] and written["regressed"] is True
    assert written["regressions"][0]["head"] == outcome


# A judge agent whose answer a file beside the project decides: `pass`, `fail`, `429` (exits 1
# after the provider's rate limit, as a CLI reports it) or `prose` (an answer with no verdict).
JUDGE_AGENT = """\
import json, sys
from pathlib import Path
mode = (Path(sys.argv[0]).resolve().parent.parent / "mode.txt").read_text().split()
check = next(l.split("=", 1)[1] for l in sys.argv[-1].splitlines() if l.startswith("id="))
step = dict(item.split(":") for item in mode)[check]
if step == "429":
    print("Error: 429 Too Many Requests: rate limit reached", file=sys.stderr)
    sys.exit(1)
if step == "prose":
    print("I looked at it and it seems fine.")
else:
    print(json.dumps({"score": int(step == "pass"), "reason": step}))
"""


def _judge_project(project: Callable[..., Path]) -> Path:
    from tests.conftest import PYTHON

    config = (
        '[harness]\nagent = "stand_in"\n\n[agents.stand_in]\n'
        f'command = ["{PYTHON}", "agent.py"]\nmodel_flag = ""\n'
    )
    files = {"agent.py": JUDGE_AGENT}
    for check_id in ("rate_limited", "was_red", "answers_prose"):
        files[f"eval_checks/{check_id}.yaml"] = (
            f"schema_version: 1\nid: {check_id}\ntype: harness_judge\n"
            f"description: Judge {check_id}.\ninstructions: |\n  id={check_id}\n"
        )
    return project(files, config=config)


def test_an_infrastructure_error_is_could_not_judge_not_a_regression(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    root = _judge_project(project)
    mode = root.parent / "mode.txt"
    runs = {}
    printed = {}
    for name, text in (
        ("base", "rate_limited:pass was_red:fail answers_prose:pass"),
        ("head", "rate_limited:429 was_red:429 answers_prose:prose"),
    ):
        mode.write_text(text)
        out = tmp_path / name
        printed[name] = eb(
            "run", "--cwd", str(root), "--output-dir", str(out), "--flat-output"
        ).stdout
        runs[name] = out
    report = json.loads((runs["head"] / "report.json").read_text())
    assert report["error_classes"] == [
        {"error_class": "infrastructure", "count": 2, "causes": {"HTTP 429": 2}},
        {"error_class": "verdict", "count": 1, "causes": {"no valid verdict": 1}},
    ]
    diff = _json_diff(eb, runs["base"], runs["head"])
    # The judge that answered without a verdict is a regression; the rate-limited ones are not.
    assert _ids(diff["regressions"]) == ["answers_prose"]
    assert diff["regressions"][0]["error_class"] == "verdict"
    assert _ids(diff["could_not_judge"]) == ["rate_limited", "was_red"]
    assert {e["error_class"] for e in diff["could_not_judge"]} == {"infrastructure"}
    assert diff["still_failing"] == []
    assert diff["_exit"] == 1
    text = eb("diff", str(runs["base"]), str(runs["head"])).stdout
    assert "Could not judge (infrastructure errors, not regressions) (2):" in text
    md = eb("diff", str(runs["base"]), str(runs["head"]), "--format", "md").stdout
    assert "<summary>Could not judge (infrastructure errors, not regressions) (2)</summary>" in md
    schema = json.loads((Path(__file__).parents[2] / "schemas" / "diff.schema.json").read_text())
    jsonschema.validate({k: v for k, v in diff.items() if k != "_exit"}, schema)
    # The run's own summary and report.md count the errors by class.
    assert "3 errors: 2 infrastructure (HTTP 429), 1 verdict" in printed["head"]
    md_report = (runs["head"] / "report.md").read_text()
    assert "3 errors: 2 infrastructure (HTTP 429), 1 verdict" in md_report
    assert "- Error class: `infrastructure` (HTTP 429)" in md_report


# A judge agent the file `mode.txt` beside the project drives: `slow` (says it started, then
# waits to be stopped, as a judge waiting on its provider does), `fail`, or anything else: pass.
SLOW_AGENT = """\
import json, sys, time
from pathlib import Path
here = Path(sys.argv[0]).resolve().parent.parent
mode = (here / "mode.txt").read_text().strip()
if mode == "slow":
    (here / "started").write_text("")
    time.sleep(60)
print(json.dumps({"score": int(mode != "fail"), "reason": mode}))
"""
SLOW_JUDGES = ("j1", "j2", "j3", "j4")


def test_a_judge_an_interrupted_run_never_judged_is_a_regression_and_the_abort_is_told(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    """A cancelled CI job SIGTERMs the head run: its judges end as `infrastructure` errors
    (cause interrupted), never started or stopped. They were not judged because the run was
    cut short, not because a provider failed: each that passed in base is a regression, and
    every format says the head run was aborted. `eb diff` alone takes the aborted run for
    `latest` (naming it loudly) rather than passing over it to older runs."""
    from tests.conftest import PYTHON

    config = (
        '[core]\noutput_dir = "runs"\nmax_parallel_checks = 1\n\n[cache]\nmode = "off"\n\n'
        '[harness]\nagent = "stand_in"\n\n[agents.stand_in]\n'
        f'command = ["{PYTHON}", "agent.py"]\nmodel_flag = ""\n'
    )
    files = {"agent.py": SLOW_AGENT}
    for check_id in SLOW_JUDGES:
        files[f"eval_checks/{check_id}.yaml"] = (
            f"schema_version: 1\nid: {check_id}\ntype: harness_judge\ndescription: d\n"
            f"instructions: Judge {check_id}.\n"
        )
    root = project(files, config=config)
    mode = root.parent / "mode.txt"
    mode.write_text("pass")
    assert eb_process(root, "run").returncode == 0
    mode.write_text("slow")
    stopped = eb_interrupted(root, "run", started=root.parent / "started", signum=signal.SIGTERM)
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    base, head = sorted((root / "runs").iterdir())
    report = json.loads((head / "report.json").read_text())
    assert report["aborted_by"] == "interrupt" and report["points_earned"] == 0
    assert {c["details"]["error_class"] for c in report["checks"]} == {"infrastructure"}

    shown = eb_process(root, "diff", "--json")  # previous and latest: the aborted run is latest
    diff = json.loads(shown.stdout)
    assert (diff["base"]["run_dir"], diff["head"]["run_dir"]) == (str(base), str(head))
    assert sorted(_ids(diff["regressions"])) == list(SLOW_JUDGES)
    assert diff["could_not_judge"] == []
    assert (diff["head"]["aborted_by"], diff["head"]["unfinished_checks"]) == ("interrupt", 4)
    assert (diff["base"]["aborted_by"], diff["base"]["unfinished_checks"]) == (None, 0)
    assert diff["regressed"] is True and shown.returncode == 1
    jsonschema.validate(diff, json.loads(eb_process(root, "schema", "diff").stdout))
    text = eb_process(root, "diff")
    assert text.returncode == 1
    assert "0/4 points, 0.00%, not passed, ABORTED (interrupt: interrupted)" in text.stdout
    assert (
        "The head run was aborted (interrupt: interrupted): 4 of its 4 checks never started or "
        "stopped before a verdict; each that passed in base, or is new, is a regression."
    ) in text.stdout
    assert "Could not judge" not in text.stdout
    assert text.stdout.endswith("Diff: 4 regressions; head run aborted (interrupt)\n")
    markdown = eb_process(root, "diff", "--format", "md").stdout
    assert markdown.startswith("### eval-banana diff: 4 regressions; head run aborted (interrupt)")
    assert "| Aborted | no | **yes** (interrupt: interrupted) | |" in markdown
    assert "> **The head run was aborted (interrupt: interrupted)" in markdown

    # The aborted run as the base: what it never judged and head fails is a new failure
    # (nobody can say it passed before), not "still failing".
    mode.write_text("fail")
    assert eb_process(root, "run").returncode == 1
    after = eb_process(root, "diff", "--json")
    later = json.loads(after.stdout)
    assert later["base"]["run_dir"] == str(head) and later["base"]["aborted_by"] == "interrupt"
    assert sorted(_ids(later["regressions"])) == list(SLOW_JUDGES)
    assert later["still_failing"] == [] and after.returncode == 1
    told = eb_process(root, "diff").stdout
    assert "The base run was aborted (interrupt: interrupted)" in told
    assert told.endswith("Diff: 4 regressions; base run aborted (interrupt)\n")


def test_a_check_ctrl_c_stopped_part_way_reads_as_stopped_not_as_an_error(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    """Ctrl-C (SIGINT) while a check runs: report.json records it as an error `Stopped:
    interrupted` (details.stopped). The diff showed `passed -> error`, sending the reader to
    look for a defect in the check; it reads `passed -> stopped` in every format (`stopped` in
    the JSON), still a regression."""
    here = tmp_path / "drive"
    here.mkdir()
    slow = (
        "import pathlib, time\n"
        f"here = pathlib.Path({str(here)!r})\n"
        "if (here / 'mode.txt').read_text().strip() == 'slow':\n"
        "    (here / 'started').write_text('')\n"
        "    time.sleep(60)\n"
    )
    files = {"eval_checks/a_slow.yaml": check_yaml("a_slow", script=slow)}
    config = '[core]\noutput_dir = "runs"\nmax_parallel_checks = 1\n\n[cache]\nmode = "off"\n'
    root = project(files, config=config)
    (here / "mode.txt").write_text("pass")
    assert eb_process(root, "run").returncode == 0
    (here / "mode.txt").write_text("slow")
    stopped = eb_interrupted(root, "run", started=here / "started")  # SIGINT
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    base, head = sorted((root / "runs").iterdir())
    report = json.loads((head / "report.json").read_text())
    told = {c["check_id"]: (c["status"], c["error_detail"]) for c in report["checks"]}
    assert told["a_slow"] == ("error", "Stopped: interrupted")
    shown = eb_process(root, "diff", "--json")
    diff = json.loads(shown.stdout)
    regressions = {e["check_id"]: (e["base"], e["head"]) for e in diff["regressions"]}
    assert regressions == {"a_slow": ("passed", "stopped")}
    assert diff["head"]["unfinished_checks"] == 1 and shown.returncode == 1
    jsonschema.validate(diff, json.loads(eb_process(root, "schema", "diff").stdout))
    text = eb_process(root, "diff").stdout
    assert "  - a_slow: passed -> stopped - Stopped: interrupted\n" in text
    markdown = eb_process(root, "diff", "--format", "md").stdout
    assert "| `a_slow` | passed -> stopped |  | Stopped: interrupted |" in markdown


FAMILY = """schema_version: 1
id: fam
type: deterministic
description: "row {{ case.id }}"
min_pass_rate: 0.6
cases_from: rows.jsonl
script: |
  import json, sys
  ctx = json.loads(open(sys.argv[1]).read())
  sys.exit(0 if ctx["case"]["ok"] == "yes" else 1)
"""


def test_a_family_gate_that_breaks_is_a_regression_even_when_no_case_regressed(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    """Removing passing rows lowers a family's pass rate below its gate: no case regressed,
    but the run now fails for the family, and the diff says so (exit 1, in every format)."""
    root = project({"eval_checks/fam.yaml": FAMILY}, config="[core]\npass_threshold = 0.0\n")

    oks = {"r0": "yes", "r1": "yes", "r2": "yes", "r3": "no"}

    def run(ids: list[str], name: str) -> Path:
        rows = "".join(json.dumps({"id": row, "ok": oks[row]}) + "\n" for row in ids)
        (root / "rows.jsonl").write_text(rows)
        out = tmp_path / name
        eb("run", "--cwd", str(root), "--output-dir", str(out), "--flat-output")
        return out

    base = run(["r0", "r1", "r2", "r3"], "base")  # 3/4 = 75%: the gate holds
    head = run(["r2", "r3"], "head")  # two passing rows removed: 1/2 = 50%
    diff = _json_diff(eb, base, head)
    assert diff["regressions"] == [] and diff["_exit"] == 1 and diff["regressed"] is True
    (change,) = diff["families"]
    assert change["family"] == "fam" and change["gate_broke"] is True
    assert (change["base"]["passed"], change["base"]["cases"]) == (3, 4)
    assert (change["head"]["passed"], change["head"]["cases"], change["head"]["gate_held"]) == (
        1,
        2,
        False,
    )
    del diff["_exit"]
    jsonschema.validate(diff, json.loads(eb("schema", "diff").stdout))
    text = eb("diff", str(base), str(head))
    assert text.exit_code == 1
    assert (
        "  - fam: 3/4 (75.0%) -> 1/2 (50.0%); min_pass_rate 0.6 held -> NOT held (the run "
        "fails for it now)" in text.stdout
    )
    assert "Diff: 1 family gate broken" in text.stdout
    markdown = eb("diff", str(base), str(head), "--format", "md").stdout
    assert markdown.startswith("### eval-banana diff: 1 family gate broken")
    # Back above the gate: a change, not a regression.
    again = _json_diff(eb, head, base)
    assert again["_exit"] == 0 and again["families"][0]["gate_broke"] is False


def test_a_gate_edited_between_the_runs_is_shown_with_each_sides_value(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    """3 of 4 rows pass in both runs, gated at 0.6 in base and 0.8 in head: one value for
    both sides read `min_pass_rate 0.6 held -> NOT held` of one pass rate."""
    root = project({"eval_checks/fam.yaml": FAMILY}, config="[core]\npass_threshold = 0.0\n")
    oks = [("r0", "yes"), ("r1", "yes"), ("r2", "yes"), ("r3", "no")]
    (root / "rows.jsonl").write_text("".join(json.dumps({"id": i, "ok": o}) + "\n" for i, o in oks))

    def run(gate: str, name: str) -> Path:
        (root / "eval_checks" / "fam.yaml").write_text(FAMILY.replace("min_pass_rate: 0.6\n", gate))
        out = tmp_path / name
        eb("run", "--cwd", str(root), "--output-dir", str(out), "--flat-output")
        return out

    base, head = run("min_pass_rate: 0.6\n", "base"), run("min_pass_rate: 0.8\n", "head")
    said = "fam: 3/4 (75.0%) -> 3/4 (75.0%); min_pass_rate 0.6 held -> 0.8 NOT held (the run "
    text = eb("diff", str(base), str(head))
    assert text.exit_code == 1 and f"  - {said}fails for it now)" in text.stdout, text.stdout
    markdown = eb("diff", str(base), str(head), "--format", "md").stdout
    assert f"- {said}fails for it now)" in markdown, markdown
    # A gate added: the side without one says so, the other names its value.
    ungated = run("", "ungated")
    added = eb("diff", str(ungated), str(base)).stdout
    assert "fam: 3/4 (75.0%) -> 3/4 (75.0%); min_pass_rate none -> 0.6 held" in added, added


def test_a_head_that_ran_part_of_a_family_breaks_no_gate(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    """`eb run --last-failed` after a full run: the family's one failing case alone is 0%,
    under the gate, but that speaks of the part that ran, not of the family: no gate broke,
    and the family's sides say how much of it each run ran."""
    root = project({"eval_checks/fam.yaml": FAMILY}, config="[core]\npass_threshold = 0.0\n")
    rows = [("r0", "yes"), ("r1", "yes"), ("r2", "yes"), ("r3", "no")]
    (root / "rows.jsonl").write_text(
        "".join(json.dumps({"id": i, "ok": ok}) + "\n" for i, ok in rows)
    )
    base, head = tmp_path / "base", tmp_path / "head"
    flags = ("--cwd", str(root), "--flat-output", "--output-dir")
    assert eb("run", *flags, str(base)).exit_code == 0  # 3/4 = 75%: the gate holds
    assert eb("run", *flags, str(head), "--last-failed").exit_code == 1  # 0/1 over fam[r3]
    diff = _json_diff(eb, base, head)
    (change,) = diff["families"]
    assert change["gate_broke"] is False and diff["regressed"] is False
    assert (change["head"]["cases"], change["head"]["of_cases"]) == (1, 4)
    assert diff["_exit"] == 0
    text = eb("diff", str(base), str(head)).stdout
    assert "  - fam: 3/4 (75.0%) -> 0/1 (0.0%, 1 of its 4 cases); min_pass_rate 0.6" in text
    assert "Diff: no regressions" in text


def test_a_shard_family_gate_reads_as_judged_by_eb_merge(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    """A shard leaves its families' gates to `eb merge`: its side of a diff said `none`, so a
    whole run against it read `held -> none`, as if the gate had gone away."""
    root = project({"eval_checks/fam.yaml": FAMILY}, config="[core]\npass_threshold = 0.0\n")
    rows = [("r0", "yes"), ("r1", "yes"), ("r2", "yes"), ("r3", "no")]
    (root / "rows.jsonl").write_text(
        "".join(json.dumps({"id": i, "ok": ok}) + "\n" for i, ok in rows)
    )
    whole, shard = tmp_path / "whole", tmp_path / "shard"
    flags = ("--cwd", str(root), "--flat-output", "--output-dir")
    assert eb("run", *flags, str(whole)).exit_code == 0  # 3/4 = 75%: the gate holds
    eb("run", *flags, str(shard), "--shard", "1/2")
    text = eb("diff", str(whole), str(shard)).stdout
    (line,) = [line for line in text.splitlines() if line.startswith("  - fam: ")]
    assert line.endswith("; min_pass_rate 0.6 held -> judged by eb merge"), line
    back = eb("diff", str(shard), str(whole)).stdout
    assert "; min_pass_rate 0.6 judged by eb merge -> held" in back, back
    diff = _json_diff(eb, whole, shard)
    (change,) = diff["families"]
    assert (change["head"]["min_pass_rate"], change["head"]["gate_at_merge"]) == (None, 0.6)
    assert change["gate_broke"] is False


def test_a_narrowed_head_leaves_out_what_it_did_not_select_not_removed(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    """A pull request's run of part of the project (`-k`, `--changed-since`) diffed against a
    full run: the checks it did not select are "not selected", not removed, and a dataset family
    none of whose cases it ran is no family change; a check file deleted is still removed."""
    family = (
        "schema_version: 1\nid: rows\ntype: deterministic\n"
        'description: "row {{ case.id }}"\ncases: [{id: a}, {id: b}]\nscript: pass\n'
    )
    root = project({"eval_checks/rows.yaml": family}, config='[core]\noutput_dir = "runs"\n')
    _write(root, {"kept_green": "pass", "refund_one": "pass", "is_removed": "pass"})
    (root / "eval_checks/rows.yaml").write_text(family)
    base = tmp_path / "base"
    assert eb("run", "--cwd", str(root), "--output-dir", str(base), "--flat-output").exit_code == 0
    (root / "eval_checks/is_removed.yaml").unlink()
    head = tmp_path / "head"
    narrowed = ("--output-dir", str(head), "--flat-output", "-k", "refund")
    assert eb("run", "--cwd", str(root), *narrowed).exit_code == 0
    document = _json_diff(eb, base, head)
    assert document["_exit"] == 0
    assert document["head"]["selection"] == "-k 'refund'"
    assert document["base"]["selection"] is None
    assert _ids(document["removed_checks"]) == ["is_removed"]
    assert _ids(document["not_selected"]) == ["kept_green", "rows[a]", "rows[b]"]
    assert document["families"] == []
    text = eb("diff", str(base), str(head)).stdout
    assert "selected with -k 'refund'" in text and "Not selected in head (3):" in text
    # Thousands left out are a count after the first few, not thousands of lines.
    fields = {key: value for key, value in document.items() if key != "_exit"}
    many = RunDiff.model_validate(fields | {"not_selected": document["not_selected"] * 10})
    lines = render_text(many).splitlines()
    at = lines.index("Not selected in head (30):")
    assert lines[at + 21] == "  ... and 10 more (`eb diff --json` lists them)"
    markdown = eb("diff", str(base), str(head), "--format", "md").stdout
    assert "| Selection | every check | `-k 'refund'` | |" in markdown
    # `eb run --baseline` reads its own run's selection the same way.
    again = tmp_path / "again"
    flags = ("--output-dir", str(again), "--flat-output", "-k", "refund", "--baseline", str(base))
    assert eb("run", "--cwd", str(root), *flags).exit_code == 0
    written = json.loads((again / "diff.json").read_text())
    assert _ids(written["not_selected"]) == ["kept_green", "rows[a]", "rows[b]"]
    # The same head without its stage files (an eval-banana folder, say) says nothing of its
    # selection: every check it lacks is removed, as before.
    for name in ("config.json", "discover.json"):
        (head / "stages" / name).unlink()
    plain = _json_diff(eb, base, head)
    assert plain["not_selected"] == [] and len(plain["removed_checks"]) == 4


@pytest.mark.parametrize(
    "config", ['{"hello": 1}', '{"selection": null}', "[]", '{"selection": {"check_ids": 5}}']
)
def test_a_config_stage_of_another_shape_says_nothing_of_the_selection(
    project: Callable[..., Path], tmp_path: Path, config: str
) -> None:
    """A run folder whose stages/config.json is JSON of another shape (hand-edited, another
    tool's) is read as one whose stage file is unreadable: it says nothing of its selection,
    and `eb diff` compares its checks as before, never a traceback whose exit 1 reads as a
    regression."""
    root = project({}, config='[core]\noutput_dir = "runs"\n')
    _write(root, {"kept_green": "pass"})
    base, head = tmp_path / "base", tmp_path / "head"
    for folder in (base, head):
        made = eb_process(root, "run", "--output-dir", str(folder), "--flat-output")
        assert made.returncode == 0, made.stderr
    (head / "stages" / "config.json").write_text(config)
    diffed = eb_process(root, "diff", str(base), str(head), "--json")
    assert (diffed.returncode, diffed.stderr) == (0, "")
    document = json.loads(diffed.stdout)
    assert document["head"]["selection"] is None and document["not_selected"] == []
    assert document["removed_checks"] == [] and document["new_checks"] == []


def test_a_narrowed_base_left_out_what_head_has_not_new(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    """main's own run narrowed (`--changed-since`, `-k`) diffed with a full head: a check base
    did not select is "not selected in base", not new; one that fails in head is a regression
    all the same (nobody can say it passed before); a check file added since is new."""
    root = project({}, config='[core]\noutput_dir = "runs"\n')
    checks = {"refund_one": "pass", "kept_green": "pass", "kept_red": "raise SystemExit(1)"}
    _write(root, checks)
    base = tmp_path / "base"
    narrowed = ("--output-dir", str(base), "--flat-output", "-k", "refund")
    assert eb("run", "--cwd", str(root), *narrowed).exit_code == 0
    _write(root, checks | {"added": "pass"})
    head = tmp_path / "head"
    assert eb("run", "--cwd", str(root), "--output-dir", str(head), "--flat-output").exit_code == 1
    document = _json_diff(eb, base, head)
    assert document["base"]["selection"] == "-k 'refund'"
    assert _ids(document["new_checks"]) == ["added"]
    assert _ids(document["not_selected_in_base"]) == ["kept_green", "kept_red"]
    assert _ids(document["regressions"]) == ["kept_red"] and document["_exit"] == 1
    del document["_exit"]
    jsonschema.validate(document, json.loads(eb("schema", "diff").stdout))
    text = eb("diff", str(base), str(head)).stdout
    assert "Not selected in base (2):" in text
    assert "  - kept_red: not selected in base, failed" in text
    assert "  - added: new, passed" in text
    markdown = eb("diff", str(base), str(head), "--format", "md").stdout
    assert "| `kept_red` | not selected in base, failed |" in markdown


def test_a_case_skipped_on_one_side_is_skipped_not_removed_or_new(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    """A row given `skip:` is still in the project: the diff lists it as skipped now, with the
    reason, not as removed (its family gate may break, and is told), and a row no longer
    skipped is not new, though one that fails now is a regression (nobody can say it passed)."""
    root = project({"eval_checks/fam.yaml": FAMILY}, config="[core]\npass_threshold = 0.0\n")

    def run(name: str, rows: list[tuple[str, str, str | None]]) -> Path:
        lines = [
            json.dumps({"id": row, "ok": ok} | ({"skip": skip} if skip else {}))
            for row, ok, skip in rows
        ]
        (root / "rows.jsonl").write_text("\n".join(lines) + "\n")
        out = tmp_path / name
        eb("run", "--cwd", str(root), "--output-dir", str(out), "--flat-output")
        return out

    flaky = "flaky upstream"
    base = run(  # 3/3: the gate holds
        "base", [("r0", "yes", None), ("r1", "yes", None), ("r2", "yes", None), ("r3", "no", "x")]
    )
    head = run(  # 1/2: the gate breaks
        "head",
        [("r0", "yes", flaky), ("r1", "yes", flaky), ("r2", "yes", None), ("r3", "no", None)],
    )
    diff = _json_diff(eb, base, head)
    assert diff["removed_checks"] == [] and diff["new_checks"] == []
    assert _ids(diff["skipped_now"]) == ["fam[r0]", "fam[r1]"]
    skipped = diff["skipped_now"][0]
    assert (skipped["base"], skipped["head"], skipped["skip_reason"]) == ("passed", None, flaky)
    (unskipped,) = diff["no_longer_skipped"]
    assert (unskipped["check_id"], unskipped["base"], unskipped["head"]) == (
        "fam[r3]",
        None,
        "failed",
    )
    assert unskipped["skip_reason"] == "x"
    assert _ids(diff["regressions"]) == ["fam[r3]"] and diff["families"][0]["gate_broke"] is True
    assert diff["_exit"] == 1
    del diff["_exit"]
    jsonschema.validate(diff, json.loads(eb("schema", "diff").stdout))
    text = eb("diff", str(base), str(head)).stdout
    assert "Removed checks" not in text and "New checks" not in text
    assert "Regressions (1):\n  - fam[r3]: skipped (x) -> failed - exit code 1\n" in text
    assert (
        "Skipped now (2):\n  - fam[r0]: passed -> skipped (flaky upstream)\n"
        "  - fam[r1]: passed -> skipped (flaky upstream)\n"
        "No longer skipped (1):\n  - fam[r3]: skipped (x) -> failed (under Regressions above)\n"
    ) in text
    markdown = eb("diff", str(base), str(head), "--format", "md").stdout
    assert "<details><summary>Skipped now (2)</summary>" in markdown
    assert "| `fam[r0]` | passed -> skipped (flaky upstream) |  |  |" in markdown
    # The other way round: what head skipped is no longer skipped, and passes; r3 is skipped.
    back = _json_diff(eb, head, base)
    assert _ids(back["no_longer_skipped"]) == ["fam[r0]", "fam[r1]"]
    assert _ids(back["skipped_now"]) == ["fam[r3]"] and back["skipped_now"][0]["base"] == "failed"
    assert back["regressions"] == [] and back["removed_checks"] == [] and back["_exit"] == 0


# A judge agent whose samples answer in turn from the sequence a file beside the project gives
# its check (`j:0e0`: failed, an outage, failed; `v`: an answer without a verdict); each check
# keeps its own count, so the order in which checks run does not matter.
SAMPLED_AGENT = """\
import fcntl, json, sys
from pathlib import Path
here = Path(sys.argv[0]).resolve().parent.parent
check = next(l.split("=", 1)[1] for l in sys.argv[-1].splitlines() if l.startswith("id="))
steps = dict(item.split(":") for item in (here / "mode.txt").read_text().split())[check]
with open(here / f"count-{check}", "a+") as counter:
    fcntl.flock(counter, fcntl.LOCK_EX)
    counter.seek(0)
    seen = int(counter.read() or 0)
    counter.seek(0)
    counter.truncate()
    counter.write(str(seen + 1))
step = steps[seen % len(steps)]
if step == "e":
    print("upstream connection reset", file=sys.stderr)
    sys.exit(3)
if step == "v":
    print("I read it all and cannot say.")
    sys.exit(0)
print(json.dumps({"score": int(step), "reason": "judged"}))
"""

# check id -> (aggregate rule, its base samples in turn, its head samples, where eb diff files
# it); a `control_` check expects to fail.
SAMPLED = {
    "majority_two_failed": ("majority", "1", "0e0", "regressions"),
    "majority_split": ("majority", "1", "0e1", "could_not_judge"),
    "all_one_failed": ("all", "1", "1e0", "regressions"),
    "any_two_failed": ("any", "1", "0e0", "could_not_judge"),
    "majority_two_passed": ("majority", "0", "1e1", "fixes"),
    "any_one_passed": ("any", "0", "0e1", "fixes"),
    "all_two_passed": ("all", "0", "1e1", "could_not_judge"),
    "majority_passes_still": ("majority", "1", "1e1", None),
    "majority_passed_in_base": ("majority", "1e1", "0", "regressions"),
    "control_two_failed": ("majority", "1", "0e0", "fixes"),
}


def _sampled_project(
    project: Callable[..., Path], *, rules: dict[str, str], repeats: int = 3
) -> Path:
    """A project of sampled judges (check id -> aggregate rule) answered by SAMPLED_AGENT; a
    `control_` check expects to fail."""
    from tests.conftest import PYTHON

    config = (
        '[harness]\nagent = "stand_in"\n\n[agents.stand_in]\n'
        f'command = ["{PYTHON}", "agent.py"]\nmodel_flag = ""\n'
    )
    files = {"agent.py": SAMPLED_AGENT}
    for check_id, rule in rules.items():
        expect = "expect: fail\n" if check_id.startswith("control_") else ""
        files[f"eval_checks/{check_id}.yaml"] = (
            f"schema_version: 1\nid: {check_id}\ntype: harness_judge\ndescription: d\n"
            f"repeats: {repeats}\naggregate: {rule}\n{expect}instructions: |\n  id={check_id}\n"
        )
    return project(files, config=config)


def _sampled_run(root: Path, *args: str, steps: dict[str, str], run_dir: Path) -> int:
    """`eb run` into `run_dir`, each check's samples answering `steps[check]` in turn."""
    for counter in root.parent.glob("count-*"):
        counter.unlink()
    (root.parent / "mode.txt").write_text(" ".join(f"{c}:{seq}" for c, seq in steps.items()))
    return eb_process(root, "run", "--output-dir", str(run_dir), "--flat-output", *args).returncode


def test_a_sampled_judge_is_judged_by_the_samples_that_answered(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    root = _sampled_project(project, rules={c: rule for c, (rule, _, _, _) in SAMPLED.items()})
    for name, side in (("base", 1), ("head", 2)):
        steps = {check_id: seqs[side] for check_id, seqs in SAMPLED.items()}
        _sampled_run(root, steps=steps, run_dir=tmp_path / name)
    head = json.loads((tmp_path / "head" / "report.json").read_text())
    # The run itself still reports each check with an errored sample as an error.
    errored = {c for c, (_, _, seq, _) in SAMPLED.items() if "e" in seq}
    assert {check["check_id"] for check in head["checks"] if check["status"] == "error"} == errored
    shown = eb_process(root, "diff", str(tmp_path / "base"), str(tmp_path / "head"), "--json")
    diff = json.loads(shown.stdout)
    for category in ("fixes", "regressions", "could_not_judge", "still_failing"):
        expected = [c for c, (_, _, _, where) in SAMPLED.items() if where == category]
        assert sorted(_ids(diff[category])) == sorted(expected), category
    assert diff["unchanged_passing"] == 1
    assert shown.returncode == 1
    # The entry still shows the run's error: the diff files it, the run's verdict stands.
    text = eb_process(root, "diff", str(tmp_path / "base"), str(tmp_path / "head")).stdout
    assert "  - majority_two_passed: failed -> error - 1 of 3 samples errored" in text


def test_a_sample_without_a_verdict_is_never_outvoted_whichever_sample_crashed_first(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    # Three passes, a crashed sample (infrastructure) and one without a verdict, in both orders:
    # the verdict error is the check's class, so the passes never settle it.
    orders = {"crash_first": "111ev", "verdict_first": "111ve"}
    root = _sampled_project(project, rules=dict.fromkeys(orders, "majority"), repeats=5)
    _sampled_run(root, steps=dict.fromkeys(orders, "1"), run_dir=tmp_path / "base")
    head = tmp_path / "head"
    # One sample at a time: the samples end in the order the steps give.
    junit_xml = tmp_path / "junit.xml"
    options = ("--max-parallel-checks", "1", "--junit-xml", str(junit_xml))
    assert _sampled_run(root, *options, steps=orders, run_dir=head) == 1
    report = json.loads((head / "report.json").read_text())
    assert {c["check_id"]: c["details"]["error_class"] for c in report["checks"]} == dict.fromkeys(
        orders, "verdict"
    )
    assert [(e["error_class"], e["count"]) for e in report["error_classes"]] == [("verdict", 2)]
    assert junit_xml.read_text().count('type="verdict"') == 2
    shown = eb_process(root, "diff", str(tmp_path / "base"), str(head), "--json")
    diff = json.loads(shown.stdout)
    assert sorted(_ids(diff["regressions"])) == sorted(orders)
    assert diff["could_not_judge"] == [] and shown.returncode == 1


@pytest.mark.parametrize("fail_on_flaky", [True, False], ids=["fail_on_flaky", "flaky_allowed"])
def test_a_check_that_became_flaky_is_told_and_a_regression_when_the_head_run_fails_on_it(
    project: Callable[..., Path], tmp_path: Path, fail_on_flaky: bool
) -> None:
    """Base: 3 of 3 samples pass. Head: 2 of 3 (majority passes, flaky). Under
    --fail-on-flaky the head run fails for it (exit 1), so the diff must too; without it the
    run passes, and the diff still lists the check as become flaky (exit 0). A check that was
    flaky in base already did not become so, but base passed it, so under --fail-on-flaky it is
    a regression too."""
    rules = dict.fromkeys(("steady", "wobbles", "was_flaky"), "majority")
    root = _sampled_project(project, rules=rules)
    base, head = tmp_path / "base", tmp_path / "head"
    assert (
        _sampled_run(root, steps={"steady": "1", "wobbles": "1", "was_flaky": "110"}, run_dir=base)
        == 0
    )
    flags = ("--fail-on-flaky",) if fail_on_flaky else ()
    head_steps = {"steady": "1", "wobbles": "110", "was_flaky": "110"}
    assert _sampled_run(root, *flags, steps=head_steps, run_dir=head) == int(fail_on_flaky)
    shown = eb_process(root, "diff", str(base), str(head), "--json")
    diff = json.loads(shown.stdout)
    assert _ids(diff["became_flaky"]) == ["wobbles"]
    entry = diff["became_flaky"][0]
    assert (entry["base"], entry["head"], entry["base_flaky"], entry["head_flaky"]) == (
        "passed",
        "passed",
        False,
        True,
    )
    assert (diff["head"]["flaky_checks"], diff["head"]["fail_on_flaky"]) == (2, fail_on_flaky)
    assert diff["base"]["flaky_checks"] == 1
    assert _ids(diff["regressions"]) == (["was_flaky", "wobbles"] if fail_on_flaky else [])
    assert diff["unchanged_passing"] == (1 if fail_on_flaky else 3)
    assert shown.returncode == int(fail_on_flaky)
    jsonschema.validate(diff, json.loads(eb_process(root, "schema", "diff").stdout))
    text = eb_process(root, "diff", str(base), str(head)).stdout
    assert (
        "Became flaky (its samples disagree in head) (1):\n  - wobbles: passed -> passed (flaky)"
        in text
    )
    markdown = eb_process(root, "diff", str(base), str(head), "--format", "md").stdout
    assert "<summary>Became flaky (its samples disagree in head) (1)</summary>" in markdown
    if fail_on_flaky:
        assert "Regressions (2):\n  - was_flaky: passed (flaky) -> passed (flaky)" in text
        assert "  - wobbles: passed -> passed (flaky) - 2 of 3 samples" in text
        assert (
            "The head run fails on flaky checks (fail_on_flaky): 2 flaky checks the base run did "
            "not fail for are regressions." in text
        )
        assert text.endswith("Diff: 2 regressions, 1 check became flaky\n")
        assert markdown.startswith("### eval-banana diff: 2 regressions, 1 check became flaky")
        assert "| Flaky checks | 1 | 2 (fail the run) | +1 |" in markdown
    else:
        assert "Regressions" not in text
        assert text.endswith("Diff: no regressions, 1 check became flaky\n")
        assert "| Flaky checks | 1 | 2 | +1 |" in markdown


def test_a_flaky_check_fails_a_fail_on_flaky_head_and_is_a_regression_unless_base_failed_it(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    """Head ran with --fail-on-flaky and failed for each flaky check. One flaky as much in a
    base run without the flag passed there: a regression (it was "no regressions", exit 0).
    Against a base that ran with the flag too, or where the check failed, base failed for it:
    still failing, never a fix."""
    rules = dict.fromkeys(("flaky_both", "failed_then_flaky"), "majority")
    root = _sampled_project(project, rules=rules)
    runs = {name: tmp_path / name for name in ("allowed", "strict", "head")}
    steps = {"flaky_both": "110", "failed_then_flaky": "0"}
    assert _sampled_run(root, steps=steps, run_dir=runs["allowed"]) == 1
    assert _sampled_run(root, "--fail-on-flaky", steps=steps, run_dir=runs["strict"]) == 1
    head_steps = {"flaky_both": "110", "failed_then_flaky": "110"}
    assert _sampled_run(root, "--fail-on-flaky", steps=head_steps, run_dir=runs["head"]) == 1
    shown = eb_process(root, "diff", str(runs["allowed"]), str(runs["head"]), "--json")
    diff = json.loads(shown.stdout)
    assert _ids(diff["regressions"]) == ["flaky_both"]
    assert _ids(diff["still_failing"]) == ["failed_then_flaky"]
    assert diff["fixes"] == [] and shown.returncode == 1
    shown = eb_process(root, "diff", str(runs["strict"]), str(runs["head"]), "--json")
    diff = json.loads(shown.stdout)
    assert diff["regressions"] == [] and diff["fixes"] == []
    assert _ids(diff["still_failing"]) == ["failed_then_flaky", "flaky_both"]
    assert shown.returncode == 0


def test_a_check_flaky_in_base_and_steady_in_head_is_listed_as_no_longer_flaky(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    """Base: 2 of 3 samples pass (flaky). Head: 3 of 3 pass, or 0 of 3. Both steadied: listed
    under "No longer flaky" in every format (it had no category), never a regression by itself;
    the one that fails now is a regression as well. A check flaky in both runs is not listed."""
    names = ("steadies", "steadies_red", "still_flaky", "steady")
    root = _sampled_project(project, rules=dict.fromkeys(names, "majority"))
    base, head = tmp_path / "base", tmp_path / "head"
    base_steps = {"steadies": "110", "steadies_red": "110", "still_flaky": "110", "steady": "1"}
    assert _sampled_run(root, steps=base_steps, run_dir=base) == 0
    head_steps = {"steadies": "1", "steadies_red": "0", "still_flaky": "110", "steady": "1"}
    assert _sampled_run(root, steps=head_steps, run_dir=head) == 1
    shown = eb_process(root, "diff", str(base), str(head), "--json")
    diff = json.loads(shown.stdout)
    assert _ids(diff["no_longer_flaky"]) == ["steadies", "steadies_red"]
    entry = diff["no_longer_flaky"][0]
    assert (entry["base"], entry["head"], entry["base_flaky"], entry["head_flaky"]) == (
        "passed",
        "passed",
        True,
        False,
    )
    assert _ids(diff["regressions"]) == ["steadies_red"]
    assert diff["became_flaky"] == [] and diff["unchanged_passing"] == 3
    assert shown.returncode == 1
    jsonschema.validate(diff, json.loads(eb_process(root, "schema", "diff").stdout))
    text = eb_process(root, "diff", str(base), str(head)).stdout
    assert (
        "No longer flaky (its samples agree in head) (2):\n"
        "  - steadies: passed (flaky) -> passed - 3 of 3 samples passed" in text
    )
    assert "  - steadies_red: passed (flaky) -> failed (under Regressions above)" in text
    markdown = eb_process(root, "diff", str(base), str(head), "--format", "md").stdout
    assert "<summary>No longer flaky (its samples agree in head) (2)</summary>" in markdown
    assert "| `steadies` | passed (flaky) -> passed |" in markdown


def test_a_check_a_fail_on_flaky_base_failed_for_flakiness_is_a_fix_when_head_passes_it(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    """Base ran with --fail-on-flaky and failed for each flaky check (exit 1); head ran
    without it and passes them (exit 0). Base failed for them, head does not: fixes, as the
    mirror case (the flag only in head) is a regression. They read as unchanged passing."""
    names = ("steadies", "still_flaky", "steady")
    root = _sampled_project(project, rules=dict.fromkeys(names, "majority"))
    base, head = tmp_path / "base", tmp_path / "head"
    base_steps = {"steadies": "110", "still_flaky": "110", "steady": "1"}
    assert _sampled_run(root, "--fail-on-flaky", steps=base_steps, run_dir=base) == 1
    head_steps = {"steadies": "1", "still_flaky": "110", "steady": "1"}
    assert _sampled_run(root, steps=head_steps, run_dir=head) == 0
    shown = eb_process(root, "diff", str(base), str(head), "--json")
    diff = json.loads(shown.stdout)
    assert _ids(diff["fixes"]) == ["steadies", "still_flaky"]
    assert _ids(diff["no_longer_flaky"]) == ["steadies"]
    assert diff["regressions"] == [] and diff["still_failing"] == []
    assert diff["unchanged_passing"] == 1 and shown.returncode == 0
    jsonschema.validate(diff, json.loads(eb_process(root, "schema", "diff").stdout))
    text = eb_process(root, "diff", str(base), str(head)).stdout
    assert "Fixes (2):\n  - steadies: passed (flaky) -> passed - 3 of 3 samples" in text
    assert "  - still_flaky: passed (flaky) -> passed (flaky)" in text
    warning = (
        "The base run failed on flaky checks (fail_on_flaky): 2 flaky checks the head run does "
        "not fail for are fixes."
    )
    assert warning in text
    markdown = eb_process(root, "diff", str(base), str(head), "--format", "md").stdout
    assert f"> {warning}" in markdown
    assert "<summary>Fixes (2)</summary>" in markdown


def _old_report(run_id: str, statuses: dict[str, str], **totals: Any) -> dict[str, Any]:
    """A report.json as eval-banana 0.5.0 wrote it: its keys only, no stage files beside it."""
    checks = [
        {
            "check_id": check_id,
            "check_type": "deterministic",
            "status": status,
            "score": 1 if status == "passed" else 0,
            "check_definition_sha256": "sha256:" + "a" * 64,
            "reason": None,
            "details": {},
        }
        for check_id, status in statuses.items()
    ]
    earned = sum(check["score"] for check in checks)
    report = {
        "schema_version": 1,
        "run_id": run_id,
        "total_checks": len(checks),
        "passed_checks": earned,
        "failed_checks": len(checks) - earned,
        "errored_checks": 0,
        "points_earned": earned,
        "total_points": len(checks),
        "percentage": round(earned / len(checks) * 100, 1),
        "pass_threshold": 0.5,
        "meets_threshold": earned / len(checks) >= 0.5,
        "run_passed": earned / len(checks) >= 0.5,
        "checks": checks,
    }
    report.update(totals)
    return report


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        ({"points_earned": 2}, "$.points_earned is 2, but 1 of its checks passed"),
        ({"total_points": 1}, "$.total_points is 1, but the report lists 2 checks"),
        ({"run_passed": True, "meets_threshold": False}, "$.run_passed is true, but meets"),
    ],
    ids=["points", "total", "verdict"],
)
def test_a_report_whose_totals_contradict_its_checks_is_refused(
    tmp_path: Path, edit: dict[str, Any], where: str
) -> None:
    base, head = tmp_path / "base", tmp_path / "head"
    for folder in (base, head):
        folder.mkdir()
    statuses = {"a": "passed", "b": "failed"}
    (head / "report.json").write_text(json.dumps(_old_report("head", statuses)))
    # eval-banana 0.5.0's report, its totals in agreement: compared as before.
    (base / "report.json").write_text(json.dumps(_old_report("base", statuses)))
    assert eb_process(tmp_path, "diff", str(base), str(head)).returncode == 0

    (base / "report.json").write_text(
        json.dumps(_old_report("base", statuses, pass_threshold=1.0, **edit))
    )
    diffed = eb_process(tmp_path, "diff", str(base), str(head))
    assert diffed.returncode == 2, diffed.stdout + diffed.stderr
    assert f"{base / 'report.json'} contradicts its own checks: {where}" in diffed.stderr


def test_a_report_that_passes_over_an_errored_check_is_refused(tmp_path: Path) -> None:
    base, head = tmp_path / "base", tmp_path / "head"
    for folder in (base, head):
        folder.mkdir()
    statuses = {"a": "passed", "b": "passed", "c": "error"}
    (head / "report.json").write_text(json.dumps(_old_report("head", statuses)))
    forged = _old_report("base", statuses, run_passed=True, errored_checks=1, failed_checks=0)
    (base / "report.json").write_text(json.dumps(forged))
    diffed = eb_process(tmp_path, "diff", str(base), str(head))
    assert diffed.returncode == 2, diffed.stdout + diffed.stderr
    assert "$.run_passed is true, but check 'c' errored or never ran" in diffed.stderr


def test_a_report_edited_after_its_report_stage_is_refused_until_eb_update(
    runs: tuple[Path, Path, Path],
) -> None:
    root, base, head = runs
    # The regression hidden, totals and all: only stages/report.json's digest tells.
    path = head / "report.json"
    report = json.loads(path.read_text())
    for check in report["checks"]:
        if check["check_id"] == "regresses":
            check.update(status="passed", score=1, observed_status="passed")
    report.update(
        passed_checks=report["passed_checks"] + 1,
        failed_checks=report["failed_checks"] - 1,
        points_earned=report["points_earned"] + 1,
    )
    path.write_text(json.dumps(report, indent=2))

    diffed = eb_process(root, "diff", str(base), str(head))
    assert diffed.returncode == 2, diffed.stdout + diffed.stderr
    assert f"{path} was edited after the report stage wrote it" in diffed.stderr
    assert f"eb update --run-dir {head}" in diffed.stderr

    assert eb_process(root, "update", "--run-dir", str(head)).returncode == 0
    diffed = eb_process(root, "diff", str(base), str(head))
    assert diffed.returncode == 1 and "regresses" in diffed.stdout, diffed.stdout + diffed.stderr


# A judge that passes while the file `green` exists, and otherwise fails with a reason of one
# long line: Markdown markup over and over, or (for the check asking with ESCAPE-CASE) an ESC
# whose escape `\x1b` lies across the 300th character.
_LONG_REASON_JUDGE = """\
import json, sys
from pathlib import Path
if Path("green").exists():
    verdict = {"score": 1, "reason": "fine"}
elif "ESCAPE-CASE" in sys.argv[-1]:
    verdict = {"score": 0, "reason": "a" * 298 + "\\x1b[2J and the rest"}
else:
    verdict = {"score": 0, "reason": "the answer <b>is</b> wrong | see [doc](x) " * 120}
print(json.dumps(verdict))
"""


def test_a_markdown_diff_cuts_each_rows_note_to_fit_a_pull_request_comment(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    # 50 rows of a judge's one-line reason made a diff of 294,130 bytes, which GitHub refuses as
    # a comment (65,536 characters at most): the rows were capped, their notes were not.
    from tests.reporting.conftest import run_eb

    judge = "schema_version: 1\ntype: harness_judge\n"
    root = project(
        {
            "judge.py": _LONG_REASON_JUDGE,
            "green": "",
            "rows.jsonl": "".join(f'{{"id": "c{i:02d}"}}\n' for i in range(60)),
            "eval_checks/a_esc.yaml": judge
            + "id: a_esc\ndescription: d\ninstructions: ESCAPE-CASE\n",
            "eval_checks/fam.yaml": judge
            + "id: fam\ndescription: 'case {{ case.id }}'\ncases_from: rows.jsonl\n"
            + "instructions: judge it\n",
        },
        config=_agent_config(name="long"),
    )
    _run_green_then_red(root=root, tmp_path=tmp_path)
    md = run_eb("diff", "--format", "md", str(tmp_path / "base"), str(tmp_path / "head")).stdout
    assert "#### Regressions (61)" in md and "... and 11 more" in md
    assert len(md) < 40_000, len(md)
    rows = [line for line in md.splitlines() if line.startswith("| `")]
    assert len(rows) == 50
    assert rows[0] == "| `a_esc` | passed -> failed |  | " + "a" * 298 + "… |"
    one = "the answer \\<b\\>is\\</b\\> wrong \\| see \\[doc\\](x) "
    note = rows[1].split(" |  | ", 1)[1]
    assert note.startswith(one * 7) and note.endswith("… |"), note
    # 300 characters of the reason, each markup character behind its backslash.
    raw = one.replace("\\", "")
    assert note.replace("\\", "") == (raw * 8)[:300].rstrip() + "… |"
