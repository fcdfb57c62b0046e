"""A reused verdict says so everywhere: results, console, report.md, report.html, JUnit, scores."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.cache.rig import Project
from tests.forking import eb_script, events_of, run_script
from tests.gitrepo import commit_all, git


def test_every_report_marks_reused_verdicts(standard: Project) -> None:
    standard.run()
    junit = standard.root / "junit.xml"
    result = standard.eb("run", "--cwd", str(standard.root), "--junit-xml", str(junit))
    assert result.exit_code == 0
    assert "- j: passed (cached)" in result.stdout
    assert "[1/3]" in result.stderr and "(cached, " in result.stderr
    run_dir = Path(
        result.stdout.split("Report: ", 1)[1].splitlines()[0].split(" (HTML: ")[0]
    ).parent
    report = json.loads((run_dir / "report.json").read_text())
    assert report["cached_checks"] == 3
    assert json.loads((run_dir / "stages/score.json").read_text())["cached_checks"] == 3
    for check in report["checks"]:
        stored = json.loads(
            (run_dir / "checks" / f"{_stem(run_dir, check['check_id'])}.json").read_text()
        )
        assert stored["details"]["cache"]["hit"] is True
    assert "| `j` | `harness_judge` | `passed` (cached) |" in (run_dir / "report.md").read_text()
    html = (run_dir / "report.html").read_text()
    assert "passed (cached)" in html and "3 cached" in html
    properties = {
        (case.get("name"), prop.get("name")): prop.get("value")
        for case in ET.parse(junit).getroot().iter("testcase")
        for prop in case.iter("property")
    }
    assert properties[("j", "cached")] == "true"
    config = json.loads((run_dir / "stages/config.json").read_text())
    assert config["settings"]["cache"]["mode"] == "on"


def test_a_fully_cached_run_with_exitfirst_says_nothing_was_launched(standard: Project) -> None:
    standard.run()
    starts = standard.agent_starts()
    result = standard.eb("run", "--cwd", str(standard.root), "-x")
    assert result.exit_code == 0, result.stderr
    assert standard.agent_starts() == starts
    assert "Nothing was launched: every check's verdict came from the verdict cache" in (
        result.stderr
    )
    assert result.stdout.splitlines()[-1].startswith(
        "0 failed, 3 passed, 0 errored, 0 skipped, 0 not run in "
    )


def test_a_fresh_run_is_not_marked(standard: Project) -> None:
    result = standard.eb("run", "--cwd", str(standard.root))
    assert "(cached)" not in result.stdout + result.stderr
    assert "Nothing was launched" not in result.stderr
    run_dir = Path(
        result.stdout.split("Report: ", 1)[1].splitlines()[0].split(" (HTML: ")[0]
    ).parent
    assert "(cached)" not in (run_dir / "report.md").read_text()
    assert json.loads((run_dir / "report.json").read_text())["cached_checks"] == 0


def _stem(run_dir: Path, check_id: str) -> str:
    plan = json.loads((run_dir / "stages/plan.json").read_text())
    return str(next(c["stem"] for c in plan["checks"] if c["id"] == check_id))


def test_a_run_never_has_git_walk_the_run_folders_before_it(
    standard: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nobody need ignore eb's run folders, and they pile up: a cached run of a git project
    # took 0.3 s more once thirty runs of 1,000 checks lay there, git listing every file in them
    # as untracked for eb to drop. Counted by git's own trace2, over every git command eb ran.
    git(standard.root, "init", "-q")
    commit_all(standard.root)
    first = standard.eb("run", "--cwd", str(standard.root))
    runs = Path(first.stdout.split("Report: ", 1)[1].splitlines()[0].split(" (HTML: ")[0]).parents[
        1
    ]
    for index in range(600):
        old = runs / f"20260101_000000_{index // 100:08x}" / "checks" / f"c{index}.json"
        old.parent.mkdir(parents=True, exist_ok=True)
        old.write_text("{}\n")
    trace = standard.root.parent / "trace2.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    again = standard.eb("run", "--cwd", str(standard.root))
    assert again.exit_code == 0 and "(cached)" in again.stdout + again.stderr
    visited = [
        int(event["value"])
        for event in map(json.loads, trace.read_text().splitlines())
        if event.get("category") == "read_directory" and event.get("key") == "paths-visited"
    ]
    assert visited and sum(visited) < 100, visited  # the project's few files, not the 600


def test_cached_runs_and_incremental_listing_import_nothing_heavy(standard: Project) -> None:
    # The everyday path stays light with the cache on: pydantic, jsonschema, rich and logging
    # cost more start-up than a cached check (tests/core/test_record.py guards the plain commands).
    git(standard.root, "init", "-q")
    commit_all(standard.root)
    probe = (
        "import sys\n"
        "from eval_banana.cli import main\n"
        f"root = {str(standard.root)!r}\n"
        "codes = [main(['run', '--cwd', root]), main(['run', '--cwd', root]),\n"
        "         main(['list', '--cwd', root, '--changed-since', 'HEAD', '--inputs'])]\n"
        "heavy = ('pydantic', 'jsonschema', 'rich', 'logging', 'concurrent.futures')\n"
        "print('HEAVY', sorted(m for m in heavy if m in sys.modules), codes)\n"
        # Lighter, but paid by every replay for one call each: the history record's schema read
        # through importlib.resources, a path checked with html.escape, statistics for the
        # percentiles only `eb history` shows.
        "light = ('importlib.resources', 'html', 'statistics')\n"
        "print('UNNEEDED', sorted(m for m in light if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert "HEAVY [] [0, 0, 0]" in done.stdout, done.stdout + done.stderr
    assert "UNNEEDED []" in done.stdout, done.stdout
    assert done.stdout.count("(cached)") == 3


# `eb run` forking report.html from one check on (and no look-ahead), noting when it writes
# execute.json.
PAGE_FORKING_EB = eb_script(
    setup="""\
    import eval_banana.cache.lookahead as lookahead
    import eval_banana.reporting as reporting
    import eval_banana.stages.execute as execute_stage
    reporting.HTML_FORK_CHECKS = 1
    lookahead.LOOK_AHEAD_FORK_CHECKS = 10_000
    write_execute_stage = execute_stage.write_execute_stage
    def noted_write_execute_stage(**kwargs):
        note("execute.json")
        return write_execute_stage(**kwargs)
    execute_stage.write_execute_stage = noted_write_execute_stage
    """
)


def test_a_cached_run_renders_its_page_while_it_writes_its_stage_files(
    standard: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eval_banana.reporting.html import render_html

    # The page is compared with one rendered here from report.json alone: no run history marks
    # (their reading is tested in tests/reporting/test_history_pages.py).
    monkeypatch.setenv("EVAL_BANANA_HISTORY_MODE", "off")

    standard.run()  # every verdict stored: the next run starts no process, so it may fork
    events = tmp_path / "events"
    out = tmp_path / "out"
    done = run_script(
        script=PAGE_FORKING_EB,
        args=["run", "--cwd", str(standard.root), "--output-dir", str(out), "--flat-output"],
        events=events,
    )
    assert done.returncode == 0, done.stderr
    # The page was begun from the results, before execute.json was written.
    assert events_of(events) == ["fork", "execute.json"]
    report = json.loads((out / "report.json").read_text())
    assert report["cached_checks"] == 3
    # The page the child built its own report object for is the page of report.json.
    assert (out / "report.html").read_text() == render_html(report=report, run_dir=out)
