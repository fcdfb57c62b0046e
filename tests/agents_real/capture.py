"""Record what each real agent CLI prints, for the stand-ins in tests/agents/ to replay.

    python tests/agents_real/capture.py        # after `invoke agents`

Runs every built-in template's exact command line (as eval_banana builds it) against the model
server for three cases (a passing verdict, a failing verdict, an HTTP 500 from the model), plus a
`tool` case where the model calls the agent's shell tool first (opencode, see TOOL_CASES), and
writes `tests/agents/recordings/<agent>/<case>.json`: stdout, stderr and the exit code. What
differs from run to run is replaced by placeholders the stand-ins fill in:
`@@VERDICT@@` (raw) and `@@VERDICT_JSON@@` (escaped inside a JSON string), the three streamed
pieces `@@PIECE0@@`..`@@PIECE2@@` (escaped), `@@PROMPT@@` / `@@PROMPT_JSON@@`, `@@MODEL@@`,
`@@CWD@@`, `@@HOME@@`, `@@TMP@@`, `@@URL@@`, `@@HOSTPORT@@` and `@@EFFORT@@` (codex's header line).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from eval_banana.harness.command import build_argv, build_env, display_argv  # noqa: E402
from eval_banana.harness.prompt import build_prompt  # noqa: E402
from eval_banana.harness.structured import SCHEMA_FILE_NAME, schema_text  # noqa: E402
from eval_banana.harness.templates import BUILTIN_TEMPLATES  # noqa: E402
from tests.agents_real.install import bin_dir, install_problem  # noqa: E402
from tests.agents_real.setups import SERVED_MODELS, SETUPS  # noqa: E402
from tests.model_server import FAIL_TEXT, PASS_TEXT, ModelServer, chunks  # noqa: E402

RECORDINGS = REPO / "tests" / "agents" / "recordings"
FIXTURES = REPO / "tests" / "harness" / "fixtures"
# Canary fixtures made from the recordings: (fixture stem, agent, case, which streams).
CANARIES = (
    ("claude_pass", "claude", "pass", ("stdout",)),
    ("claude_fail", "claude", "fail", ("stdout",)),
    ("claude_error_result", "claude", "error", ("stdout",)),
    ("codex_pass", "codex", "pass", ("stdout", "stderr")),
    ("codex_fail", "codex", "fail", ("stdout", "stderr")),
    ("gemini_pass", "gemini", "pass", ("stdout",)),
    ("gemini_fail", "gemini", "fail", ("stdout",)),
    ("gemini_error_result", "gemini", "error", ("stdout",)),
    ("openhands_pass", "openhands", "pass", ("stdout",)),
    ("openhands_fail", "openhands", "fail", ("stdout",)),
    ("text_pass", "grok", "pass", ("stdout",)),
    ("text_fail", "grok", "fail", ("stdout",)),
)
CANARY_PROMPT = build_prompt(
    description="The README explains how to install the tool.",
    instructions="Decide whether the README documents the install command.",
)


def write_fixtures() -> None:
    """The verdict-reader canaries, filled from the recordings with fixed values."""
    sys.path.insert(0, str(REPO / "tests" / "agents"))
    import _standin  # the stand-ins' own filling, so canaries and stand-ins agree

    verdicts = {
        "pass": json.dumps({"score": 1, "reason": "The README documents the install command."}),
        "fail": json.dumps(
            {"score": 0, "reason": "The README never mentions how to install the tool."}
        ),
        "error": "",
    }
    for stem, agent, case, streams in CANARIES:
        recording = json.loads((RECORDINGS / agent / f"{case}.json").read_text())
        for stream in streams:
            text = _standin.fill(
                recording[stream],
                answer=verdicts[case],
                prompt=CANARY_PROMPT,
                model=SETUPS[agent].sent_model or "test-model",
                effort="high",
                cwd="/project",
                home="/home/user",
                tmp="/tmp",
            )
            (FIXTURES / f"{stem}.{stream}").write_text(text)


CASES = {"pass": {"text": PASS_TEXT}, "fail": {"text": FAIL_TEXT}, "error": {"status": 500}}
# A fourth case for the agents whose tool calls the model server can script (Chat Completions):
# the model first calls the agent's shell tool, then passes.
TOOL_CASES: dict[str, dict[str, object]] = {
    "opencode": {"text": PASS_TEXT, "tool_call": "bash", "tool_arguments": '{"command": "ls -a"}'}
}


def _script(*, agent: str, case: str) -> dict[str, object]:
    return TOOL_CASES[agent] if case == "tool" else CASES[case]


def _escaped(text: str) -> str:
    return json.dumps(text)[1:-1]


def _template(
    *,
    text: str,
    verdict: str,
    prompt: str,
    model: str,
    cwd: Path,
    home: Path,
    tmp: Path,
    url: str,
) -> str:
    """Replace the run's own values by placeholders, longest and most specific first."""
    replacements = [
        (_escaped(prompt), "@@PROMPT_JSON@@"),
        (prompt, "@@PROMPT@@"),
        (_escaped(verdict), "@@VERDICT_JSON@@"),
        (verdict, "@@VERDICT@@"),
    ]
    replacements += [
        (_escaped(piece), f"@@PIECE{index}@@") for index, piece in enumerate(chunks(verdict))
    ]
    hostport = url.split("://", 1)[-1]
    replacements += [(url, "@@URL@@"), (hostport, "@@HOSTPORT@@")]
    replacements += [(str(cwd), "@@CWD@@"), (str(home), "@@HOME@@"), (str(tmp), "@@TMP@@")]
    if model:
        replacements.append((model, "@@MODEL@@"))
    for old, new in replacements:
        if old:
            text = text.replace(old, new)
    # codex's header names the effort it uses.
    return re.sub(r"^reasoning effort: \S+$", "reasoning effort: @@EFFORT@@", text, flags=re.M)


def capture(*, agent: str, case: str, server: ModelServer, base: Path) -> dict[str, object]:
    setup = SETUPS[agent]
    template = BUILTIN_TEMPLATES[agent]
    root, home = base / agent / case / "project", base / agent / case / "home"
    root.mkdir(parents=True)
    home.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for relative, text in setup.home_files.items():
        path = home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("{url}", server.url))
    server.reset()
    server.script(**_script(agent=agent, case=case))
    prompt = build_prompt(
        description=f"The recorded case {case}.",
        instructions="Decide whether the case holds.",
    )
    model = setup.model or template.default_model
    # The verdict schema as a run passes it (its file beside the project, as in a run folder).
    schema_path = base / SCHEMA_FILE_NAME
    schema_path.write_text(schema_text())
    argv = build_argv(
        template=template,
        prompt=prompt,
        model=model,
        effort=template.reasoning_effort,
        schema_path=schema_path,
    )
    base_env = {
        "PATH": f"{bin_dir()}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(base),
        "LANG": "C.UTF-8",
    }
    harness_env = {key: value.replace("{url}", server.url) for key, value in setup.env.items()}
    env = build_env(
        template=template,
        base_env=base_env,
        placeholder_env=base_env,
        harness_env=harness_env,
        model=model,
        project_root=root,
        agent=agent,
    )
    done = subprocess.run(
        argv, cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=600
    )
    verdict = str(_script(agent=agent, case=case).get("text", ""))
    written = sorted(
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.relative_to(root).parts[0] != ".git"
    )
    sent_model = setup.sent_model or model or ""

    def templated(raw: bytes) -> str:
        return _template(
            text=raw.decode("utf-8", errors="replace"),
            verdict=verdict,
            prompt=prompt,
            model=sent_model,
            cwd=root,
            home=home,
            tmp=base,
            url=server.url,
        )

    return {
        "agent": agent,
        "case": case,
        "argv": display_argv(argv=argv, prompt=prompt, schema_path=schema_path),
        "exit_code": done.returncode,
        "project_files": written,  # what the agent left in the project on its own
        "stdout": templated(done.stdout),
        "stderr": templated(done.stderr),
    }


def main() -> int:
    if sys.argv[1:] == ["--fixtures"]:
        write_fixtures()
        return 0
    problem = install_problem()
    if problem is not None:
        print(f"{problem}: run `invoke agents` first", file=sys.stderr)
        return 2
    only = sys.argv[1:] or sorted(SETUPS)
    server = ModelServer(models=SERVED_MODELS).start()
    try:
        with tempfile.TemporaryDirectory(prefix="eb-capture-") as folder:
            for agent in only:
                for case in [*CASES, *(["tool"] if agent in TOOL_CASES else [])]:
                    recording = capture(agent=agent, case=case, server=server, base=Path(folder))
                    target = RECORDINGS / agent / f"{case}.json"
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(json.dumps(recording, indent=1, ensure_ascii=False) + "\n")
                    print(f"{agent:10} {case:6} exit {recording['exit_code']}")
    finally:
        server.stop()
    write_fixtures()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
