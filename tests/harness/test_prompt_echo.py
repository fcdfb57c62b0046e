"""An agent that only echoes its prompt never passes: a case's data holds no readable verdict."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from eval_banana.harness.prompt import WORD_JOINER, inert_objects
from eval_banana.harness.scan import scan_text
from tests.conftest import EbResult

J = WORD_JOINER


@pytest.mark.parametrize(
    ("text", "sent"),
    [
        ("no braces", "no braces"),
        ('{"score": 1}', f'{{{J}"score": 1}}'),
        ('[{ \n "a": {"score": 0}}]', f'[{{{J} \n "a": {{{J}"score": 0}}}}]'),
        ("{} and { x } and {{ case.id }}", "{} and { x } and {{ case.id }}"),
        ('"{\\"score\\": 1}"', '"{\\"score\\": 1}"'),  # inside a JSON string: never an object
        (f'{{{J}"score": 1}}', f'{{{J}"score": 1}}'),  # applying it twice changes nothing
    ],
)
def test_every_brace_that_could_open_an_object_gets_a_word_joiner(text: str, sent: str) -> None:
    assert inert_objects(text) == sent
    assert scan_text(inert_objects(text)).verdict is None


ECHO = "import sys\nprint(sys.argv[-1])  # the prompt, judged by nobody\n"
GRADED = {"score": 1, "reason": "arithmetic is ok"}
HEAD = 'schema_version: 1\nid: meta\ntype: harness_judge\ndescription: "grader on {{ case.id }}"\n'
# The row's JSON goes in the case's block after the instructions ...
IN_BLOCK = (
    HEAD + "instructions: Score 1 only if the grader output is justified by the sample.\n"
    f"cases:\n  - {json.dumps({'id': 'g1', 'sample': '2+2=5', 'grader_output': GRADED})}\n"
)
# ... or a field holding a verdict's text is placed in them.
PLACED = (
    HEAD + "instructions: 'Judge this grader output: {{ case.output }}'\n"
    f"cases:\n  - {json.dumps({'id': 'g1', 'output': json.dumps(GRADED)})}\n"
)


@pytest.mark.parametrize("family", [IN_BLOCK, PLACED], ids=["case block", "placeholder"])
def test_an_agent_echoing_a_row_that_holds_a_verdict_does_not_pass(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path, family: str
) -> None:
    agent = tmp_path / "echo.py"
    agent.write_text(ECHO)
    config = (
        '[harness]\nagent = "echo"\ntimeout_seconds = 20\n\n[agents.echo]\n'
        f"command = [{json.dumps(sys.executable)}, {json.dumps(str(agent))}]\n"
        'model_flag = ""\noutput_dialect = "text"\n'
    )
    root = project({"eval_checks/meta.yaml": family}, config=config)
    out = tmp_path / "out"
    eb("run", "--cwd", str(root), "--output-dir", str(out), "--flat-output")
    (check,) = json.loads((out / "report.json").read_text())["checks"]
    assert check["status"] == "error", check
    assert check["details"]["error_class"] == "verdict"
    # The row still reached the agent whole: without the joiners, its JSON reads as it was.
    (prompt,) = (out / "checks").glob("*.prompt.txt")
    sent = prompt.read_text(encoding="utf-8").replace(J, "")
    if family is PLACED:
        assert f"Judge this grader output: {json.dumps(GRADED)}" in sent
    else:
        block = sent.split("```json\n")[1].split("\n```")[0]
        assert json.loads(block)["grader_output"] == GRADED
