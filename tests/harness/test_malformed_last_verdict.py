"""`eb run` with a custom agent whose last verdict eb refuses but eval-banana would have read.

eb reads verdicts more strictly than eval-banana (`score` the JSON integer 0 or 1, no key
twice, `reason` a string or null). A refused object that ends the answer must not let an
earlier draft, or a criterion nested inside it, stand in as the verdict: eval-banana would have
read the judge's final 0, and eb would pass. The agent is a real process (`[agents.said]`) that
prints what the judge's instructions tell it to, as a JSON string on a `say=` line.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PYTHON, EbResult

Project = Callable[..., Path]
Eb = Callable[..., EbResult]

AGENT = textwrap.dedent(
    """\
    import json, sys
    line = next(l for l in sys.argv[-1].splitlines() if l.strip().startswith("say="))
    sys.stdout.write(json.loads(line.strip()[len("say="):]))
    """
)
CONFIG = textwrap.dedent(
    f"""\
    [core]
    output_dir = "results"

    [harness]
    agent = "said"
    timeout_seconds = 30

    [agents.said]
    command = ["{PYTHON}", "agent.py"]
    model_flag = ""
    """
)
DRAFT = '{"score": 1, "reason": "looks fine at first glance"}'


def _judged(project: Project, eb: Eb, *, says: str) -> dict[str, Any]:
    instructions = f"Score 1 only if the README has an install command.\nsay={json.dumps(says)}"
    check = textwrap.dedent(
        f"""\
        schema_version: 1
        id: readme
        type: harness_judge
        description: The README says how to install.
        instructions: {json.dumps(instructions)}
        """
    )
    root = project({"agent.py": AGENT, "eval_checks/readme.yaml": check}, config=CONFIG)
    eb("run", "--cwd", str(root))
    (run_dir,) = (root / "results").iterdir()
    report = json.loads((run_dir / "report.json").read_text())
    (found,) = report["checks"]
    result: dict[str, Any] = found
    return result


@pytest.mark.parametrize(
    ("final", "why"),
    [
        ('{"score": false, "reason": "missing"}', '"score" was false'),
        ('{"score": "0", "reason": "missing"}', '"score" was "0"'),
        ('{"score": 0.0, "reason": "missing"}', '"score" was 0.0'),
        ('{"score": 0, "reason": "missing", "score": 0}', '"score" was given twice'),
        ('{"score": 0, "reason": ["no install command"]}', '"reason" was list'),
    ],
)
def test_a_malformed_final_verdict_is_an_error_not_the_earlier_draft(
    project: Project, eb: Eb, final: str, why: str
) -> None:
    check = _judged(project, eb, says=f"Draft: {DRAFT}\nFinal: {final}\n")
    assert check["status"] == "error", check
    assert check["details"]["error_class"] == "verdict"
    problem = check["details"]["verdict_problem"]
    assert problem.startswith(f"the judge's last verdict is malformed: {why}")
    assert "The judge's last verdict is malformed" in check["error_detail"]


def test_a_criterion_nested_in_a_malformed_verdict_does_not_stand_in(
    project: Project, eb: Eb
) -> None:
    # The judge said 0 and gave its reason as an object of per-criterion scores.
    said = {
        "score": 0,
        "reason": {
            "summary": "the test command is missing",
            "criteria": [{"name": "install", "score": 1}, {"name": "tests", "score": 0}],
        },
    }
    check = _judged(project, eb, says=json.dumps(said) + "\n")
    assert check["status"] == "error", check
    assert '"reason" was dict, not a string or null' in check["details"]["verdict_problem"]


@pytest.mark.parametrize(
    "later", ['{"score": 2, "reason": "x"}', "{not json}", '{"score": "high"}']
)
def test_a_later_object_that_is_no_verdict_leaves_the_draft_standing(
    project: Project, eb: Eb, later: str
) -> None:
    check = _judged(project, eb, says=f"{DRAFT}\nlater: {later}\n")
    assert (check["status"], check["reason"]) == ("passed", "looks fine at first glance")
