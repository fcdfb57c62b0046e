"""No secret a judge receives lands in a file eb writes or on its console: real `eb run`s of
a stand-in agent that prints what it was given, with the verdict cache and history on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eval_banana.harness.resolve import resolve_harness
from eval_banana.runners.redact import run_redactor
from tests.gitrepo import init_repo
from tests.harness.judge_rig import config_doc

REPO = Path(__file__).resolve().parents[2]

# Prints the variable named on its command line on stdout and stderr, and gives it as its reason.
PRINTING_AGENT = """\
import json, os, sys
text = "I used " + sys.argv[1] + "=" + os.environ.get(sys.argv[1], "")
print(text)
print(text, file=sys.stderr)
print(json.dumps({"score": 0, "reason": text}))
"""

CHECK = """\
schema_version: 1
id: tone
type: harness_judge
description: Judged by the stand-in.
instructions: Judge the tone.
"""


def _judged_project(root: Path, *, agent: Path, agent_table: str) -> Path:
    """A git project whose one judge check runs `agent` as configured by `agent_table`."""
    config = (
        '[harness]\nagent = "bot"\n\n[cache]\nmode = "on"\n\n'
        f"[agents.bot]\ncommand = {json.dumps([sys.executable, str(agent)])}\n{agent_table}"
    )
    files: dict[str, str | bytes] = {
        ".eval-banana/config.toml": config,
        "eval_checks/tone.yaml": CHECK,
    }
    return init_repo(root, files)


def _agent_table(*, flags: list[str], provider: str, source: str) -> str:
    """An agent table that passes `flags` and fills the provider variable `provider` from the
    variable `source` (docs/judges.md's `provider_env` placeholder form)."""
    return (
        'prompt_flag = "--prompt"\nmodel_flag = ""\n'
        f"shared_flags = {json.dumps(flags)}\n"
        'prompt_position = "tail"\n'
        f'provider_env = {{ {provider} = "{{env:{source}}}" }}\n'
    )


def _eb_run(root: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EVAL_BANANA_"))}
    environ.update(PYTHONPATH=str(REPO), **env)
    return subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), *args],
        env=environ, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _holding(folder: Path, needles: list[str]) -> list[str]:
    """Every file under `folder` that holds one of `needles`."""
    return [
        f"{path.relative_to(folder)}: {needle!r}"
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        for needle in needles
        if needle.encode() in path.read_bytes()
    ]


def test_a_provider_env_placeholder_value_is_masked_everywhere(tmp_path: Path) -> None:
    # docs/judges.md's own form: a credential-like name filled from a variable that is not one.
    secret = "rbt-secret-abcdef123456"
    agent = tmp_path / "agent.py"
    agent.write_text(PRINTING_AGENT)
    table = _agent_table(
        flags=["REVIEW_BOT_TOKEN"], provider="REVIEW_BOT_TOKEN", source="RBT_VALUE"
    )
    root = _judged_project(tmp_path / "proj", agent=agent, agent_table=table)
    junit = tmp_path / "junit.xml"
    streams = ""
    # The second run reuses the verdict the first stored, restoring its files from the cache.
    for _ in range(2):
        done = _eb_run(root, "--junit-xml", str(junit), env={"RBT_VALUE": secret})
        assert done.returncode == 1, done.stderr
        streams += done.stdout + done.stderr
    assert "I used REVIEW_BOT_TOKEN=***" in streams
    assert secret not in streams
    state = root / ".eval-banana"
    for folder in ("results", "cache", "history"):
        assert any(path.is_file() for path in (state / folder).rglob("*")), folder
    assert _holding(root, [secret]) == []
    assert secret not in junit.read_text()


def test_the_run_redactor_holds_what_the_agent_is_given(tmp_path: Path) -> None:
    agents = {
        "bot": {
            "command": ["bot"],
            "provider_env": {"GATEWAY": "https://{env:GATEWAY_HOST}/v1", "BOT_TOKEN": "x-{env:T}"},
            "fixed_env": {"BOT_API_KEY": "fixed-key-value", "BOT_MODE": "quiet-mode"},
        }
    }
    config = config_doc(project_root=tmp_path, harness={"agent": "bot"}, agents=agents)
    environ = {"GATEWAY_HOST": "gw.internal.example", "T": "token-value-1", "HOME": "/home/me"}
    redactor = run_redactor(
        config=config,
        harness=resolve_harness(settings=config.settings, project_root=Path(config.project_root)),
        environ=environ,
    )
    # Every value a placeholder reads, whatever its name; credential-like names of the layers.
    assert set(redactor.secrets) == {
        "gw.internal.example", "token-value-1", "x-token-value-1", "fixed-key-value"
    }  # fmt: skip


# claude's stream-json: the secrets quoted in a tool's result, once in JSON quoted in JSON; then
# a passing verdict. stderr gets them as they are.
STREAMING_AGENT = """\
import json, os, sys
secrets = [os.environ["MY_API_KEY"], os.environ["UNICODE_TOKEN"]]
def out(event):
    print(json.dumps(event))
out({"type": "assistant", "message": {"content": [
    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "env"}}]}})
listing = "\\n".join("SECRET=" + value for value in secrets)
nested = json.dumps({"env": secrets})
out({"type": "user", "message": {"content": [
    {"type": "tool_result", "tool_use_id": "t1", "content": listing + "\\n" + nested}]}})
verdict = json.dumps({"score": 1, "reason": "ok"})
out({"type": "result", "subtype": "success", "is_error": False, "result": verdict,
     "usage": {"input_tokens": 5, "output_tokens": 5}})
print(listing, file=sys.stderr)
"""


def _forms(secret: str) -> list[str]:
    """The secret and the ways a JSON encoder can write it, once or quoted in JSON again."""
    once = [json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]]
    forms = [secret, *once, *(form.replace("/", "\\/") for form in once)]
    forms += [json.dumps(form)[1:-1] for form in once]
    return sorted(set(forms))


def test_a_secret_an_agent_prints_json_escaped_is_masked_in_every_form(tmp_path: Path) -> None:
    secrets = {"MY_API_KEY": 'Zq\\8d"k-Secret-123456', "UNICODE_TOKEN": "pässwörd/Ω-0123😀"}
    agent = tmp_path / "agent.py"
    agent.write_text(STREAMING_AGENT)
    root = _judged_project(
        tmp_path / "proj", agent=agent, agent_table='model_flag = ""\noutput_dialect = "claude"\n'
    )
    needles = [form for secret in secrets.values() for form in _forms(secret)]
    assert len(needles) >= 8
    streams = ""
    for _ in range(2):
        done = _eb_run(root, env=secrets)
        assert done.returncode == 0, done.stderr
        streams += done.stdout + done.stderr
    assert [needle for needle in needles if needle in streams] == []
    assert _holding(root, needles) == []
    # The judged run's file, and the one the cached run restored.
    outputs = list((root / ".eval-banana" / "results").glob("*/checks/tone-*.stdout.txt"))
    assert len(outputs) == 2
    for path in outputs:
        tool_result = json.loads(path.read_text().splitlines()[1])["message"]["content"][0]
        assert tool_result["content"].splitlines() == [
            "SECRET=***", "SECRET=***", '{"env": ["***", "***"]}'
        ]  # fmt: skip


# A secret placed where eb cuts what the agent printed. `tail`: the last 2000 characters of
# stdout (and of stderr) start 20 characters into it, and so does the transcript's answer,
# then a verdict; `error`: it crosses the 300th character of the error line eb quotes as the
# agent's own account of its failure (exit 1, no verdict).
CUT_AGENT = """\
import json, os, sys
secret = os.environ["MY_AGENT_KEY"]
if sys.argv[1] == "tail":
    verdict = json.dumps({"score": 0, "reason": "README lacks install steps"})
    print("x" * 100 + secret + "Z" * (2000 - 20 - len(verdict) - 2) + "\\n" + verdict)
    sys.stderr.write("x" * 100 + secret + "E" * (2000 - 20))
else:
    sys.stderr.write("Error: request refused: " + "." * 256 + " key=" + secret + "\\n")
    sys.exit(1)
"""


def _pieces(secret: str, *, size: int = 8) -> list[str]:
    """Every `size`-character piece of `secret`: its start, its end and all between."""
    return [secret[at : at + size] for at in range(len(secret) - size + 1)]


@pytest.mark.parametrize("where", ["tail", "error"])
def test_a_secret_cut_where_eb_shortens_the_output_leaves_no_piece_behind(
    tmp_path: Path, where: str
) -> None:
    # docs/judges.md: masked before each text is cut, so a cut never leaves part of a secret.
    secret = "Sup3rSecretValue_abcdefghijklmnop0123456789"
    agent = tmp_path / "agent.py"
    agent.write_text(CUT_AGENT)
    table = _agent_table(flags=[where], provider="MY_AGENT_KEY", source="MY_SECRET")
    root = _judged_project(tmp_path / "proj", agent=agent, agent_table=table)
    junit = tmp_path / "junit.xml"
    done = _eb_run(root, "--junit-xml", str(junit), env={"MY_SECRET": secret})
    assert done.returncode == 1, done.stderr
    streams = done.stdout + done.stderr
    pieces = _pieces(secret)
    assert [piece for piece in pieces if piece in streams] == []
    assert _holding(root, pieces) == []
    assert [piece for piece in pieces if piece in junit.read_text()] == []
    report = json.loads(next((root / ".eval-banana" / "results").glob("*/report.json")).read_text())
    (check,) = report["checks"]
    if where == "tail":
        assert check["stdout"].startswith("[eval-banana: stdout truncated to the last 2000")
        assert "x***Z" in check["stdout"] and "x***E" in check["stderr"]
    else:
        quoted = "The agent reported: Error: request refused: " + "." * 256 + " key=***"
        assert check["error_detail"].endswith(quoted)


# Says whether it received the variable named on its command line, and how long it was.
RECEIVING_AGENT = """\
import json, os, sys
value = os.environ.get(sys.argv[1])
other = "MY_SECRET" in os.environ
print(json.dumps({"score": 1 if value else 0,
                  "reason": f"got {len(value or '')} characters; MY_SECRET given: {other}"}))
"""


@pytest.mark.parametrize("policy", ["inherit", "allowlist"])
def test_a_provider_env_placeholder_reads_ebs_environment_under_either_policy(
    tmp_path: Path, policy: str
) -> None:
    # docs/judges.md: replaced by the value of NAME in eb's environment (the allowlist keeps
    # MY_SECRET itself from the agent, not the value it is configured to receive).
    agent = tmp_path / "agent.py"
    agent.write_text(RECEIVING_AGENT)
    table = _agent_table(flags=["MY_AGENT_KEY"], provider="MY_AGENT_KEY", source="MY_SECRET")
    root = _judged_project(tmp_path / "proj", agent=agent, agent_table=table)
    done = _eb_run(
        root, "--cache", "off", "--env-policy", policy, env={"MY_SECRET": "sk-live-0123456789"}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "missing environment variable" not in done.stderr
    given = "True" if policy == "inherit" else "False"
    assert f"- tone: passed - got 18 characters; MY_SECRET given: {given}" in done.stdout
