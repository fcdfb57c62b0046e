"""Structured verdicts end to end: a custom agent opts in with `{verdict_schema_path}`.

The stand-in agent (a real process) reads the schema file it is given, prints an answer in the
schema's shape (or prose, or a verdict wrapped in words), and records what it received.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import PYTHON, EbResult

AGENT = """\
import json, sys
from pathlib import Path
args = sys.argv[1:]
schema_path = args[args.index("--schema") + 1] if "--schema" in args else None
check = next(l.split("=", 1)[1] for l in args[-1].splitlines() if l.startswith("answer="))
seen = Path(sys.argv[0]).resolve().parent.parent / "seen.json"
schema = json.loads(Path(schema_path).read_text()) if schema_path else None
seen.write_text(json.dumps({"schema_path": schema_path, "schema": schema}))
if check == "shaped":
    print(json.dumps({"score": 1, "reason": "held to the schema"}))
elif check == "wrapped":
    print('I think so. {"score": 1, "reason": "said in words"}')
else:
    print(json.dumps({"grade": "A"}))
"""


def _project(project: Callable[..., Path], *, command: str, answer: str) -> Path:
    config = (
        f'[harness]\nagent = "custom"\n\n[agents.custom]\ncommand = {command}\nmodel_flag = ""\n'
    )
    check = (
        "schema_version: 1\nid: judged\ntype: harness_judge\ndescription: Judge it.\n"
        f"instructions: |\n  answer={answer}\n"
    )
    return project({"agent.py": AGENT, "eval_checks/judged.yaml": check}, config=config)


def _run(eb: Callable[..., EbResult], root: Path, out: Path) -> dict[str, Any]:
    eb("run", "--cwd", str(root), "--output-dir", str(out), "--flat-output")
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    check: dict[str, Any] = report["checks"][0]
    return check


OPTED_IN = f'["{PYTHON}", "agent.py", "--schema", "{{verdict_schema_path}}"]'


def test_a_custom_agent_gets_the_schema_file_and_a_shaped_answer_is_honoured(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    root = _project(project, command=OPTED_IN, answer="shaped")
    out = tmp_path / "run"
    check = _run(eb, root, out)
    assert check["status"] == "passed" and check["reason"] == "held to the schema"
    assert check["details"]["structured_output"] == {"requested": True, "honoured": True}
    seen = json.loads((root.parent / "seen.json").read_text())
    # The file is the run's, outside the project (judge isolation sees no new file).
    assert Path(seen["schema_path"]) == out / "verdict.schema.json"
    assert not Path(seen["schema_path"]).is_relative_to(root)
    assert seen["schema"]["required"] == ["score", "reason"]
    assert seen["schema"]["properties"]["score"]["enum"] == [0, 1]
    assert seen["schema"]["additionalProperties"] is False
    # The recorded command keeps the placeholder: the same in every run folder.
    assert "{verdict_schema_path}" in check["details"]["effective_command"]


def test_an_answer_the_cli_did_not_constrain_is_still_read_by_the_strict_reader(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    root = _project(project, command=OPTED_IN, answer="wrapped")
    check = _run(eb, root, tmp_path / "run")
    assert check["status"] == "passed" and check["reason"] == "said in words"
    assert check["details"]["structured_output"] == {"requested": True, "honoured": False}


def test_an_answer_outside_the_schema_is_a_verdict_error(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    root = _project(project, command=OPTED_IN, answer="other")
    check = _run(eb, root, tmp_path / "run")
    assert check["status"] == "error"
    assert check["details"]["error_class"] == "verdict"
    assert check["details"]["structured_output"] == {"requested": True, "honoured": False}


def test_without_the_placeholder_nothing_is_requested(
    eb: Callable[..., EbResult], project: Callable[..., Path], tmp_path: Path
) -> None:
    root = _project(project, command=f'["{PYTHON}", "agent.py"]', answer="shaped")
    out = tmp_path / "run"
    check = _run(eb, root, out)
    assert check["status"] == "passed"
    assert check["details"]["structured_output"] == {"requested": False, "honoured": None}
    assert not (out / "verdict.schema.json").exists()
