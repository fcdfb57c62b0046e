"""The history page (`eb history --html`) and report.html's history badges, as markup: real
record files, real `eb run`s of a project whose checks change verdict between runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EbResult, check_yaml
from tests.reporting.history_sample import HOSTILE_ID, write_sample_history

Eb = Callable[..., EbResult]


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in ("MODE", "DIR", "KEEP"):
        monkeypatch.delenv(f"EVAL_BANANA_HISTORY_{name}", raising=False)
    monkeypatch.delenv("EVAL_BANANA_CACHE_MODE", raising=False)


def sample_project(root: Path, *, runs: int = 9) -> list[str]:
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text("")
    return write_sample_history(folder=root / ".eval-banana" / "history", runs=runs)


def _page_data(text: str) -> dict[str, object]:
    found = re.search(r'<script type="application/json" id="eb-history">(.*?)</script>', text)
    assert found is not None
    data: dict[str, object] = json.loads(found.group(1))
    return data


def test_the_history_page_has_a_point_per_run_and_escapes_ids(tmp_path: Path, eb: Eb) -> None:
    root = tmp_path / "p"
    run_ids = sample_project(root)
    page = tmp_path / "out" / "history.html"
    page.parent.mkdir()
    done = eb("history", "--cwd", str(root), "--html", str(page))
    assert done.exit_code == 0, done.stderr
    assert f"Wrote {page}: 9 runs, 6 checks." in done.stdout
    text = page.read_text(encoding="utf-8")
    charts = re.findall(r'<svg viewBox[^>]*data-points="(\d+)">(.*?)</svg>', text, re.S)
    assert len(charts) == 3  # pass rate, duration, cost
    for points, body in charts:
        assert int(points) == body.count("<circle") == len(run_ids)
    # Ids and tags are user text: shown escaped, never as markup (also inside the data blob).
    assert "<script>alert(1)" not in text and "<b>odd</b>" not in text
    assert "x&lt;script&gt;alert(1)&lt;/script&gt;" in text
    data = _page_data(text)
    checks = {c["id"]: c for c in data["checks"]}  # type: ignore[attr-defined]
    assert HOSTILE_ID in checks
    assert checks["flipper"]["s"] == "pfpfpfpfp" and checks["flipper"]["k"] == 1
    assert checks["breaker"]["s"] == "ppppppfff" and checks["breaker"]["c"] == [6]
    assert "k" not in checks["steady"] and checks["refunds[late]"]["f"] == "refunds"
    assert [run["id"] for run in data["runs"]] == run_ids  # type: ignore[index]
    assert '<option value="refunds">refunds (2)</option>' in text
    assert "Flaky only (2)" in text  # flipper, and refunds[late] (passed, error, passed)


def test_a_chart_no_run_has_a_value_for_says_so(tmp_path: Path, eb: Eb) -> None:
    """Runs of deterministic checks report no cost: the cost chart says none was reported,
    rather than drawing an empty axis from $0 to $1."""
    root = tmp_path / "p"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text("")
    (root / "eval_checks").mkdir()
    (root / "eval_checks" / "ok.yaml").write_text(check_yaml("ok"))
    for _ in range(2):
        assert eb("run", "--cwd", str(root)).exit_code == 0
    page = tmp_path / "history.html"
    assert eb("history", "--cwd", str(root), "--html", str(page)).exit_code == 0
    text = page.read_text(encoding="utf-8")
    charts = re.findall(r'<svg viewBox[^>]*data-points="(\d+)">', text)
    assert charts == ["2", "2"]  # pass rate and duration, a point per run
    assert '<p class="none" data-points="0">No run in this window reported a cost.</p>' in text


def test_the_history_page_keeps_the_window_asked_for(tmp_path: Path, eb: Eb) -> None:
    root = tmp_path / "p"
    run_ids = sample_project(root)
    page = tmp_path / "history.html"
    assert eb("history", "--cwd", str(root), "--last", "4", "--html", str(page)).exit_code == 0
    data = _page_data(page.read_text(encoding="utf-8"))
    assert [run["id"] for run in data["runs"]] == run_ids[-4:]  # type: ignore[index]


@pytest.mark.parametrize("listing", ["--flaky", "--slowest", "--costliest"])
def test_a_text_listing_beside_the_page_is_refused(tmp_path: Path, eb: Eb, listing: str) -> None:
    # The page shows every check of the window (it has its own "Flaky only" filter): a list
    # flag beside it would be dropped without a word, or empty the page.
    root = tmp_path / "p"
    sample_project(root)
    page = tmp_path / "history.html"
    done = eb("history", "--cwd", str(root), listing, "--html", str(page))
    assert done.exit_code == 2, done.stdout + done.stderr
    assert f"{listing} and --html cannot be combined" in done.stderr
    assert "Flaky only" in done.stderr and not page.exists()


RUN_COUNTER = """\
from pathlib import Path
counter = Path({counter!r})
n = int(counter.read_text()) if counter.exists() else 0
{verdict}
"""


def _counting(check_id: str, *, counter: Path, verdict: str) -> str:
    """A check whose verdict depends on how many runs came before (a counter of its own
    outside the project, so its definition never changes)."""
    script = RUN_COUNTER.format(counter=str(counter), verdict=verdict)
    script += "counter.write_text(str(n + 1))\n" + f"raise SystemExit({verdict})\n"
    return check_yaml(check_id, script=textwrap.dedent(script).replace(f"{verdict}\n", "", 1))


def history_project(root: Path, *, counters: Path) -> Path:
    """flipper: pass, fail, pass, fail...; breaker: passes three runs then fails; mender: fails
    three runs then passes; steady: always passes."""
    counters.mkdir(parents=True, exist_ok=True)
    files = {
        "eval_checks/flipper.yaml": _counting(
            "flipper", counter=counters / "flipper", verdict="n % 2"
        ),
        "eval_checks/breaker.yaml": _counting(
            "breaker", counter=counters / "breaker", verdict="int(n >= 3)"
        ),
        "eval_checks/mender.yaml": _counting(
            "mender", counter=counters / "mender", verdict="int(n < 3)"
        ),
        "eval_checks/steady.yaml": check_yaml("steady"),
        ".eval-banana/config.toml": "",
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _latest_report(root: Path) -> str:
    pages = [run / "report.html" for run in (root / ".eval-banana" / "results").iterdir()]
    newest = max(pages, key=lambda page: page.stat().st_mtime_ns)
    return newest.read_text(encoding="utf-8")


def _row_of(text: str, check_id: str) -> str:
    found = re.search(
        rf'<tr class="r[^"]*"[^>]*><td><button[^>]*>{re.escape(check_id)}<.*?</tr>', text
    )
    assert found is not None, check_id
    return found.group(0)


def test_report_html_shows_sparklines_and_history_badges(tmp_path: Path, eb: Eb) -> None:
    root = history_project(tmp_path / "p", counters=tmp_path / "counters")
    for _ in range(4):
        eb("run", "--cwd", str(root))
    text = _latest_report(root)
    rows = {name: _row_of(text, name) for name in ("flipper", "breaker", "mender", "steady")}
    # This run is the fourth: each sparkline holds the three recorded runs and this one.
    assert 'data-n="4"' in rows["steady"] and "\u2713\u2713\u2713\u2713" in rows["steady"]
    assert "\u2713\u2717\u2713\u2717" in rows["flipper"]
    assert "new failure" in rows["breaker"] and "fixed" not in rows["breaker"]
    assert "fixed" in rows["mender"] and "new failure" not in rows["mender"]
    # flipper failed after a pass, but that is its flakiness, not a new failure.
    assert "flaky in history" in rows["flipper"] and "new failure" not in rows["flipper"]
    assert "hb-" not in rows["steady"]


def test_flaky_in_history_counts_the_run_being_reported(tmp_path: Path, eb: Eb) -> None:
    """Pass, fail, pass: two flips over the sparkline's runs, this one included (`eb history
    --flaky` lists the check), yet the third run's report.html said "fixed": the flips were
    counted over the earlier runs only."""
    root = history_project(tmp_path / "p", counters=tmp_path / "counters")
    for _ in range(3):
        eb("run", "--cwd", str(root))
    marks = _trend_block(_latest_report(root))
    assert marks["flipper"]["trend"] == "pfp"
    assert marks["flipper"]["badges"] == ["flaky in history"]
    flaky = eb("history", "--cwd", str(root), "--flaky").stdout
    assert "flipper" in flaky and "mender" not in flaky


def test_report_html_has_no_history_marks_when_history_is_off(tmp_path: Path, eb: Eb) -> None:
    root = history_project(tmp_path / "p", counters=tmp_path / "counters")
    for _ in range(3):
        eb("run", "--cwd", str(root))
    eb("run", "--cwd", str(root), "--history", "off")
    text = _latest_report(root)
    assert 'class="spark"' not in text and "new failure" not in text


def test_report_html_of_a_first_run_claims_nothing(tmp_path: Path, eb: Eb) -> None:
    root = history_project(tmp_path / "p", counters=tmp_path / "counters")
    eb("run", "--cwd", str(root))
    text = _latest_report(root)
    assert 'class="spark"' not in text and 'class="hb' not in text


def _trend_block(text: str) -> dict[str, dict[str, object]]:
    found = re.search(r'<script type="application/json" id="eb-trend">(.*?)</script>', text)
    assert found is not None
    return {str(item["id"]): item for item in json.loads(found.group(1))}


# `eb run` as its own process (one thread: the records may be read in a forked
# child), with every history worth a fork.
FORKING_EB = (
    "import sys\n"
    "from eval_banana.reporting import marks\n"
    "marks.MARKS_FORK_BYTES = 0\n"
    "from eval_banana.cli import main\n"
    "raise SystemExit(main(sys.argv[1:]))\n"
)


@pytest.mark.parametrize("forked", [True, False], ids=["read-in-a-forked-child", "in-place"])
def test_a_replayed_report_html_draws_the_history_as_of_the_replay(
    tmp_path: Path, eb: Eb, forked: bool
) -> None:
    root = history_project(tmp_path / "p", counters=tmp_path / "counters")
    (root / ".eval-banana" / "config.toml").write_text('[cache]\nmode = "on"\n')
    eb("run", "--cwd", str(root))
    eb("run", "--cwd", str(root))  # every verdict reused: kept as the replay
    kept = _trend_block(_latest_report(root))
    assert kept["flipper"]["trend"] == "pp" and "badges" not in kept["flipper"]
    # Two runs that execute their checks (the counters live outside the project, so the
    # kept replay still holds): flipper fails, then passes again.
    for _ in range(2):
        eb("run", "--cwd", str(root), "--cache", "off")
    if forked:
        command = [sys.executable, "-c", FORKING_EB, "run", "--cwd", str(root)]
        assert subprocess.run(command, capture_output=True, check=False).returncode == 1
    else:
        eb("run", "--cwd", str(root))
    records = sorted((root / ".eval-banana" / "history").glob("*.json"))
    assert json.loads(records[-1].read_text())["kind"] == "replay"
    text = _latest_report(root)
    marks = _trend_block(text)
    assert marks["flipper"]["trend"] == "ppfpp"
    assert marks["flipper"]["badges"] == ["flaky in history"]
    assert marks["steady"]["trend"] == "ppppp" and "badges" not in marks["steady"]
    flipper = _row_of(text, "flipper")
    assert 'data-n="5"' in flipper and "flaky in history" in flipper
    assert 'data-n="5"' in _row_of(text, "steady")


def _run_dirs(root: Path) -> list[Path]:
    runs = (root / ".eval-banana" / "results").iterdir()
    return sorted(runs, key=lambda run: (run / "report.html").stat().st_mtime_ns)


def test_eb_stage_report_draws_the_history_as_of_its_run(tmp_path: Path, eb: Eb) -> None:
    root = history_project(tmp_path / "p", counters=tmp_path / "counters")
    for _ in range(4):
        eb("run", "--cwd", str(root))
    _, second, _, fourth = _run_dirs(root)
    for run in (second, fourth):
        (run / "report.html").unlink()
        assert eb("stage", "report", "--run-dir", str(run)).exit_code in (0, 1)
    # The second run's page counts the one run recorded before it, not the two after it.
    older = _row_of((second / "report.html").read_text(encoding="utf-8"), "steady")
    assert 'data-n="2"' in older
    text = (fourth / "report.html").read_text(encoding="utf-8")
    assert 'data-n="4"' in _row_of(text, "steady")
    assert "new failure" in _row_of(text, "breaker")
    assert "flaky in history" in _row_of(text, "flipper")
    assert eb("stage", "report", "--run-dir", str(fourth), "--history", "off").exit_code == 1
    text = (fourth / "report.html").read_text(encoding="utf-8")
    assert 'class="spark"' not in text and 'class="hb' not in text


# A check that records, while the run goes on, a run of another process: a copy of the newest
# record under another run id, named to sort before the running run's own record.
RECORDS_MEANWHILE = """\
import json, pathlib
folder = pathlib.Path({folder!r})
newest = sorted(folder.glob("*.json"))[-1]
document = json.loads(newest.read_text())
stamp = newest.name.split("-")[0]
document["run_id"] = document["run_id"][:-1] + ("0" if document["run_id"][-1] != "0" else "1")
(folder / f"{{stamp}}-{{document['run_id']}}.json").write_text(json.dumps(document))
"""


def test_a_page_with_big_records_draws_the_history_as_of_the_runs_start(
    tmp_path: Path, eb: Eb
) -> None:
    # Records big enough (here: any, FORKING_EB) are read for report.html's marks in a forked
    # child while the checks run, not at the end: a run recorded meanwhile is not counted.
    root = history_project(tmp_path / "p", counters=tmp_path / "counters")
    for _ in range(3):
        eb("run", "--cwd", str(root))
    folder = root / ".eval-banana" / "history"
    script = RECORDS_MEANWHILE.format(folder=str(folder))
    (root / "eval_checks" / "meanwhile.yaml").write_text(check_yaml("meanwhile", script=script))
    command = [sys.executable, "-c", FORKING_EB, "run", "--cwd", str(root)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stderr  # breaker fails from its fourth run on
    assert len(list(folder.glob("*.json"))) == 5  # three runs, the one meanwhile, this one
    text = _latest_report(root)
    # steady: the three runs before this one and this one; the run recorded meanwhile is not
    # among them (read at the end, it would be: five bars).
    assert 'data-n="4"' in _row_of(text, "steady")
    assert "new failure" in _row_of(text, "breaker")
    assert _trend_block(text)["flipper"]["trend"] == "pfpf"
