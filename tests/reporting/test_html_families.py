"""report.html over a run with dataset families: a families table whose rows open into their
cases, failures first, with each family's pass rate, counts and gate.

The markup test runs anywhere; test_html_families_browser.py drives the page in a real headless
Chromium.
"""

from __future__ import annotations

import json
import re

import pytest

from eval_banana.reporting.html import render_html
from tests.reporting.conftest import Run, finish, run_eb, write_project

FAMILY = """\
schema_version: 1
id: {id}
type: deterministic
description: "case {{{{ case.id }}}}"
tags: [{tag}]
{extra}
cases:
{cases}
script: |
  import json, sys
  ctx = json.load(open(sys.argv[1]))
  if ctx["case"]["ok"] != "yes":
      print("case " + ctx["case_id"] + " said no")
      sys.exit(1)
"""

QA_CASES = [("q1", "yes"), ("q2", "no"), ("q3", "yes"), ("q4", "yes"), ("q5", "no"), ("q6", "yes")]


def _cases(rows: list[tuple[str, str]]) -> str:
    return "\n".join(f"  - {{id: {case}, ok: '{ok}'}}" for case, ok in rows)


CHECKS = {
    "eval_checks/plain.yaml": """\
schema_version: 1
id: plain_ok
type: deterministic
description: A plain check.
script: print("ok")
""",
    "eval_checks/qa.yaml": FAMILY.format(
        id="qa", tag="qa", extra="min_pass_rate: 0.9", cases=_cases(QA_CASES)
    ),
    "eval_checks/tone.yaml": FAMILY.format(
        id="tone", tag="tone", extra="", cases=_cases([("t1", "yes"), ("t2", "yes")])
    ),
}


@pytest.fixture(scope="module")
def family_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    project = write_project(tmp_path_factory.mktemp("families") / "proj", checks=CHECKS)
    completed = run_eb("run", "--cwd", str(project))
    assert completed.returncode == 1, completed.stderr  # qa at 4/6 is below its 0.9 gate
    return finish(project, completed)


def test_a_row_per_family_with_rate_counts_and_gate(family_run: Run, finished_run: Run) -> None:
    text = render_html(report=family_run.report, run_dir=family_run.run_dir)
    rows = re.findall(r'<tr class="fam ([^"]+)" data-f="\d+">(.*?)</tr>', text)
    cells = [(css, re.findall(r"<td[^>]*>(?:<[^>]+>)*([^<]+)", row)) for css, row in rows]
    assert cells == [
        (
            "gate-broken",
            ["qa", "66.7%", "6", "4", "2", "0", "NOT held (min_pass_rate 0.9): the run fails"],
        ),
        ("gate-none", ["tone", "100.0%", "2", "2", "0", "0", "no gate"]),
    ]
    # The page data names each family's cases in page order, failures first; only the cases
    # that did not pass carry their row's reason (a passed case's is in the checks' data).
    found = re.search(r'<script type="application/json" id="eb-families">(.*?)</script>', text)
    assert found is not None
    families = json.loads(found.group(1))
    assert [family["id"] for family in families] == ["qa", "tone"]
    assert families[0]["why"] == {"0": "exit code 1", "1": "exit code 1"}
    assert families[1]["why"] == {} and len(families[1]["members"]) == 2
    # The verdict names the family whose own gate failed the run.
    assert "the gate of family qa did not hold</small>" in text
    # A run without families keeps its page as it was: no table, no data, no script.
    plain = render_html(report=finished_run.report, run_dir=finished_run.run_dir)
    assert 'id="families"' not in plain and "eb-families" not in plain


def test_a_gate_that_fails_a_run_whose_threshold_is_met_is_the_only_reason_told(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """qa at 4/6 misses its 0.9 gate while 9 of 11 checks meet a 0.5 threshold and nothing
    errored: the verdict said "a check failed or errored", which failed nothing here."""
    project = write_project(tmp_path_factory.mktemp("gate-only") / "proj", checks=CHECKS)
    completed = run_eb("run", "--cwd", str(project), "--pass-threshold", "0.5")
    assert completed.returncode == 1, completed.stderr
    run = finish(project, completed)
    assert run.report["meets_threshold"] is True and run.report["errored_checks"] == 0
    page = (run.run_dir / "report.html").read_text()
    assert "<small>the gate of family qa did not hold</small>" in page
