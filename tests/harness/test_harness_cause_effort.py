"""What an agent said went wrong, what became of the effort, and the run's usage totals."""

from __future__ import annotations

import json
from pathlib import Path

from eval_banana.core.masking import NO_SECRETS
from eval_banana.harness.cause import agent_error
from eval_banana.harness.effort import effort_outcome
from eval_banana.harness.templates import BUILTIN_TEMPLATES
from eval_banana.harness.usage import usage_totals
from eval_banana.harness.verdict import extract_verdict
from tests.harness.judge_rig import FIXTURES

RECORDINGS = Path(__file__).resolve().parents[1] / "agents" / "recordings"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_claude_error_result_names_the_http_status() -> None:
    found = extract_verdict(dialect="claude", stdout_path=FIXTURES / "claude_error_result.stdout")
    cause = agent_error(
        masker=NO_SECRETS,
        dialect="claude",
        event=found.usage_event,
        stderr_path=None,
        exited_nonzero=True,
    )
    assert cause is not None
    assert cause.startswith("API Error: 500 scripted failure from the test model server")
    assert cause.endswith("(HTTP 500)")


def test_gemini_error_result_names_the_api_error() -> None:
    found = extract_verdict(dialect="gemini", stdout_path=FIXTURES / "gemini_error_result.stdout")
    cause = agent_error(
        masker=NO_SECRETS,
        dialect="gemini",
        event=found.usage_event,
        stderr_path=None,
        exited_nonzero=True,
    )
    assert cause is not None and '"code":500' in cause


def test_openhands_error_event_is_believed_even_after_exit_0(tmp_path: Path) -> None:
    # The real OpenHands exits 0 after an LLM error; the cause is in its event stream.
    recorded = json.loads((RECORDINGS / "openhands" / "error.json").read_text())
    assert recorded["exit_code"] == 0
    stdout = _write(tmp_path, "out", recorded["stdout"])
    found = extract_verdict(dialect="openhands", stdout_path=stdout)
    assert found.verdict is None and found.error_event is not None
    cause = agent_error(
        masker=NO_SECRETS,
        dialect="openhands",
        event=None,
        stderr_path=None,
        exited_nonzero=False,
        error_event=found.error_event,
    )
    assert cause is not None and cause.startswith("LLMServiceUnavailableError: ")
    assert "scripted failure from the test model server" in cause


def test_stderr_error_lines_win_over_noise(tmp_path: Path) -> None:
    stderr = _write(
        tmp_path,
        "err",
        "\x1b[33mwarning: slow terminal\x1b[0m\n"
        "Error: Unexpected error\n"
        "    at main (file.js:1:1)\n"
        "}\n"
        "some closing words\n",
    )
    cause = agent_error(
        masker=NO_SECRETS, dialect="text", event=None, stderr_path=stderr, exited_nonzero=True
    )
    assert cause == "Error: Unexpected error"
    # A successful agent's stderr holds warnings, not causes.
    assert (
        agent_error(
            masker=NO_SECRETS,
            dialect="text",
            event=None,
            stderr_path=stderr,
            exited_nonzero=False,
        )
        is None
    )


def test_usage_text_alone_is_named_as_such(tmp_path: Path) -> None:
    # opencode on a non-terminal stderr prints only its usage for an unknown flag.
    stderr = _write(
        tmp_path,
        "err",
        "opencode run [message..]\n\nrun opencode with a message\n\n"
        "      --auto   auto-approve permissions that are not explicitly denied (dangerous!)\n",
    )
    cause = agent_error(
        masker=NO_SECRETS, dialect="text", event=None, stderr_path=stderr, exited_nonzero=True
    )
    assert cause == (
        "it printed its usage text (opencode run [message..]): it did not accept its arguments"
    )


def test_stdout_is_read_when_stderr_is_silent(tmp_path: Path) -> None:
    stderr = _write(tmp_path, "err", "")
    stdout = _write(tmp_path, "out", "Error: Missing required environment variable(s): LLM_MODEL\n")
    cause = agent_error(
        masker=NO_SECRETS,
        dialect="openhands",
        event=None,
        stderr_path=stderr,
        exited_nonzero=True,
        stdout_path=stdout,
    )
    assert cause == "Error: Missing required environment variable(s): LLM_MODEL"


def test_long_causes_are_cut(tmp_path: Path) -> None:
    stderr = _write(tmp_path, "err", "Error: " + "x" * 1000 + "\n")
    cause = agent_error(
        masker=NO_SECRETS, dialect="text", event=None, stderr_path=stderr, exited_nonzero=True
    )
    assert cause is not None and len(cause) == 300 and cause.endswith("…")


def test_effort_outcomes(tmp_path: Path) -> None:
    codex, pi, opencode = (BUILTIN_TEMPLATES[name] for name in ("codex", "pi", "opencode"))
    header = _write(tmp_path, "codex", "OpenAI Codex v0.171.0\n--------\nreasoning effort: low\n")
    assert effort_outcome(template=codex, requested="high", stderr_path=header) == {
        "requested": "high",
        "given": ["-c", "model_reasoning_effort=high"],
        "status": "replaced",
        "agent_said": "reasoning effort: low",
    }
    assert (
        effort_outcome(template=codex, requested="low", stderr_path=header)["status"] == "confirmed"
    )  # type: ignore[index]
    warned = _write(tmp_path, "pi", 'Warning: Invalid thinking level "x". Valid values: off\n')
    rejected = effort_outcome(template=pi, requested="x", stderr_path=warned)
    assert rejected is not None and rejected["status"] == "rejected"
    # opencode never says: the effort may have been dropped, so it is not reported as applied.
    silent = effort_outcome(template=opencode, requested="high", stderr_path=None)
    assert silent == {
        "requested": "high",
        "given": ["--variant", "high"],
        "status": "unconfirmed",
        "agent_said": None,
    }
    assert effort_outcome(template=opencode, requested=None, stderr_path=None) is None


def test_usage_totals() -> None:
    assert usage_totals([None, None]) is None
    totals = usage_totals(
        [
            {
                "dialect": "claude",
                "input_tokens": 10,
                "output_tokens": 5,
                "total_tokens": 15,
                "cost_usd": 0.25,
            },
            {"dialect": "codex", "total_tokens": 100},
            None,
            {
                "dialect": "claude",
                "input_tokens": 1,
                "output_tokens": 1,
                "total_tokens": 2,
                "cost_usd": 0.5,
            },
        ]
    )
    assert totals == {
        "judges": 3,
        "total_tokens": 117,
        "input_tokens": 11,
        "output_tokens": 6,
        "cost_usd": 0.75,
    }
    assert usage_totals([{"dialect": "codex", "total_tokens": 7}]) == {
        "judges": 1,
        "total_tokens": 7,
        "input_tokens": None,
        "output_tokens": None,
        "cost_usd": None,
    }


def test_an_error_that_opens_an_object_keeps_it(tmp_path: Path) -> None:
    # Grok Build prints `Error: Internal error: {` and the API's answer on the next lines.
    recorded = json.loads((RECORDINGS / "grok" / "error.json").read_text())
    stderr = _write(tmp_path, "err", recorded["stderr"])
    cause = agent_error(
        masker=NO_SECRETS, dialect="text", event=None, stderr_path=stderr, exited_nonzero=True
    )
    assert cause is not None and cause.startswith("Error: Internal error: {")
    assert '"http_status": 500 }' in cause
