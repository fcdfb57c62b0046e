"""`@name` in a prompt: what the real CLIs attach, and that a dataset row's text never does.

claude, gemini and grok read `@name` in a prompt given on the command line as a file of the
project to attach to the request (gemini also after a letter or a bracket, and when no such
file exists it searches the project for `*name*`: `support@acme.com` attaches `acme.com.txt`).
A check author's own text is sent as written; a dataset row is data, and eb makes its `@`
inert (a word joiner after it), so the model never receives a file the row named.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.agents_real.runner import Runtime, User, eb_run, project_for
from tests.agents_real.setups import SETUPS
from tests.model_server import PASS_TEXT, ModelServer

TIMEOUT_S = 240
# The CLIs that attach a mentioned file, as found by the control case below.
ATTACHING = frozenset({"claude", "gemini", "grok"})
NAMED = "CANARY-NAMED-FILE"
SEARCHED = "CANARY-SEARCHED-FILE"
ROW = "Look at @secret.txt and write to support@acme.com (or @secret.txt)."

FAMILY = textwrap.dedent(
    f"""\
    schema_version: 1
    id: mention_family
    type: harness_judge
    description: The row's mentions.
    instructions: |
      Decide whether the case holds. Case marker: case-row-mention.
    cases:
      - id: r1
        note: {json.dumps(ROW)}
    """
)


@pytest.mark.parametrize("agent", sorted(SETUPS))
def test_a_rows_mention_attaches_no_file_while_the_authors_does(
    agent: str,
    model_server: ModelServer,
    runtimes: dict[str, tuple[User, Runtime]],
    scratch: Path,
) -> None:
    setup = SETUPS[agent]
    user, runtime = runtimes["root"]
    model_server.script(text=PASS_TEXT)
    project = project_for(
        base=scratch,
        setup=setup,
        server_url=model_server.url,
        model=setup.model,
        cases={"control_case": "case-author-mention"},
        timeout_seconds=TIMEOUT_S,
    )
    control = project.root / "eval_checks" / "control_case.yaml"
    control.write_text(control.read_text() + f"  {ROW}\n")
    (project.root / "eval_checks" / "mention_family.yaml").write_text(FAMILY)
    (project.root / "secret.txt").write_text(f"{NAMED}\n")
    (project.root / "acme.com.txt").write_text(f"{SEARCHED}\n")

    done = eb_run(project=project, user=user, runtime=runtime)
    checks = project.checks()
    context = json.dumps(checks, indent=1)[:4000] + done.stderr[-2000:]
    assert checks["control_case"]["status"] == "passed", context
    assert checks["mention_family[r1]"]["status"] == "passed", context

    row_requests = model_server.model_requests(marker="case-row-mention")
    assert row_requests, context
    row_sent = json.dumps([request.prompt for request in row_requests])
    assert NAMED not in row_sent and SEARCHED not in row_sent, row_sent[:3000]
    # The row itself still reached the model, with its words.
    assert "secret.txt" in row_sent and "acme.com" in row_sent

    # The control: the author's own `@secret.txt` is attached by exactly these CLIs, so the
    # row's case above would show the file's text if eb sent the row as it is.
    author_sent = json.dumps(
        [request.prompt for request in model_server.model_requests(marker="case-author-mention")]
    )
    assert (NAMED in author_sent) == (agent in ATTACHING), author_sent[:3000]
