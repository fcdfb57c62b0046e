"""The class of a judge's error, read from each CLI's recorded real output.

`tests/agents/recordings/<agent>/error.json` holds what each real CLI printed when the model
server answered HTTP 500; the pass and fail recordings are the same CLIs answering normally.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from eval_banana.harness.errorclass import ErrorCause, classify_judge_error, launch_cause
from eval_banana.harness.templates import BUILTIN_TEMPLATES
from eval_banana.harness.verdict import extract_verdict

RECORDINGS = Path(__file__).resolve().parents[1] / "agents" / "recordings"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
AGENTS = ("claude", "codex", "gemini", "grok", "opencode", "openhands", "pi")


def _classify(*, tmp_path: Path, agent: str, stdout: str, stderr: str, code: int) -> ErrorCause:
    dialect = BUILTIN_TEMPLATES[agent].output_dialect
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    out.write_text(stdout, encoding="utf-8")
    err.write_text(stderr, encoding="utf-8")
    found = extract_verdict(dialect=dialect, stdout_path=out if stdout else None)
    return classify_judge_error(
        exit_code=code,
        answered=found.verdict is not None or found.malformed,
        event=found.usage_event,
        error_event=found.error_event,
        stderr_path=err,
    )


def _recording(agent: str, case: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(
        (RECORDINGS / agent / f"{case}.json").read_text(encoding="utf-8")
    )
    return loaded


@pytest.mark.parametrize("agent", AGENTS)
def test_a_model_server_500_is_an_infrastructure_error_for_every_cli(
    agent: str, tmp_path: Path
) -> None:
    recorded = _recording(agent, "error")
    found = _classify(
        tmp_path=tmp_path,
        agent=agent,
        stdout=str(recorded["stdout"]),
        stderr=str(recorded["stderr"]),
        code=int(str(recorded["exit_code"])),
    )
    assert found.error_class == "infrastructure", found


@pytest.mark.parametrize(
    ("agent", "cause"),
    [
        ("claude", "HTTP 500"),  # the result event's api_error_status
        ("gemini", "HTTP 500"),  # the result event's error message
        ("grok", "HTTP 500"),  # `"http_status": 500` on stderr
        ("pi", "HTTP 500"),  # `500 ...` on stderr
        ("openhands", "HTTP 5xx"),  # its error event's code (it exits 0)
        ("codex", "rate limit"),  # "high demand" on stderr
    ],
)
def test_the_cause_names_what_the_cli_reported(agent: str, cause: str, tmp_path: Path) -> None:
    recorded = _recording(agent, "error")
    found = _classify(
        tmp_path=tmp_path,
        agent=agent,
        stdout=str(recorded["stdout"]),
        stderr=str(recorded["stderr"]),
        code=int(str(recorded["exit_code"])),
    )
    assert found.cause == cause


def test_openhands_exits_0_after_the_error_and_is_still_infrastructure(tmp_path: Path) -> None:
    recorded = _recording("openhands", "error")
    assert recorded["exit_code"] == 0
    found = _classify(
        tmp_path=tmp_path,
        agent="openhands",
        stdout=str(recorded["stdout"]),
        stderr=str(recorded["stderr"]),
        code=0,
    )
    assert found.error_class == "infrastructure"


@pytest.mark.parametrize("agent", ["claude", "gemini", "opencode", "pi", "grok"])
def test_an_answer_without_a_verdict_is_a_verdict_error(agent: str, tmp_path: Path) -> None:
    # A clean run of the CLI (its recorded pass) with the verdict cut out of the answer.
    recorded = _recording(agent, "pass")
    stdout = str(recorded["stdout"]).replace('\\"score\\"', '\\"grade\\"')
    stdout = stdout.replace('"score"', '"grade"')
    found = _classify(
        tmp_path=tmp_path, agent=agent, stdout=stdout, stderr=str(recorded["stderr"]), code=0
    )
    assert found == ErrorCause("verdict", "no valid verdict")


def test_claude_http_statuses(tmp_path: Path) -> None:
    text = (FIXTURES / "claude_error_result.stdout").read_text(encoding="utf-8")
    # Refused credentials stay refused: the one cause here a retry cannot cure.
    for status, cause, transient in (
        (429, "HTTP 429", True),
        (401, "authentication (HTTP 401)", False),
        (403, "authentication (HTTP 403)", False),
        (503, "HTTP 503", True),
    ):
        changed = text.replace('"api_error_status":500', f'"api_error_status":{status}')
        found = _classify(tmp_path=tmp_path, agent="claude", stdout=changed, stderr="", code=1)
        assert found == ErrorCause("infrastructure", cause, transient)


def test_a_signal_and_a_crash_are_infrastructure(tmp_path: Path) -> None:
    # A wrapper's exit 127 or 126: its real CLI never started.
    for code, cause, transient, started in (
        (-int(signal.SIGKILL), "killed by SIGKILL", True, True),
        (128 + int(signal.SIGTERM), "killed by SIGTERM (exit 143)", True, True),
        (2, "the agent crashed (exit code 2)", True, True),
        (127, "agent CLI not found (exit 127)", False, False),
        (126, "agent CLI could not start (exit 126)", False, False),
    ):
        found = _classify(tmp_path=tmp_path, agent="pi", stdout="", stderr="", code=code)
        assert found == ErrorCause("infrastructure", cause, transient, started)


def test_a_verdict_with_a_non_zero_exit_is_infrastructure(tmp_path: Path) -> None:
    found = _classify(
        tmp_path=tmp_path, agent="pi", stdout='{"score": 1, "reason": "ok"}', stderr="", code=1
    )
    assert found.error_class == "infrastructure"
    # Never transient: a retry would ask again for the verdict it gave.
    assert found == ErrorCause(
        "infrastructure", "the agent crashed (exit code 1) after answering", False
    )


@pytest.mark.parametrize(
    ("stdout", "code", "found"),
    [
        ('{"score": false}', 0, ErrorCause("verdict", "no valid verdict")),
        ('{"score": false}', 1, ErrorCause("infrastructure", "HTTP 429 after answering", False)),
        ('{"score": 2}', 0, ErrorCause("infrastructure", "HTTP 429")),
        ("", 1, ErrorCause("infrastructure", "HTTP 429")),
    ],
)
def test_an_agent_that_answered_is_never_transient(
    stdout: str, code: int, found: ErrorCause, tmp_path: Path
) -> None:
    # The words of a rate limit on stderr do not make an answer something to ask again.
    got = _classify(
        tmp_path=tmp_path,
        agent="pi",
        stdout=stdout,
        stderr="Error: 429 Too Many Requests",
        code=code,
    )
    assert got == found


@pytest.mark.parametrize(
    ("stderr", "cause", "transient"),
    [
        ("Error: 429 Too Many Requests", "HTTP 429", True),
        ("request failed: connect ECONNREFUSED 127.0.0.1:9", "network", True),
        ("Error: invalid x-api-key", "authentication", False),
        ("You exceeded your current quota", "quota", True),
    ],
)
def test_text_is_the_last_resort(stderr: str, cause: str, transient: bool, tmp_path: Path) -> None:
    found = _classify(tmp_path=tmp_path, agent="pi", stdout="", stderr=stderr, code=0)
    assert found == ErrorCause("infrastructure", cause, transient)


def test_a_missing_binary() -> None:
    assert launch_cause(FileNotFoundError(2, "No such file")) == ErrorCause(
        "infrastructure", "agent CLI not found", transient=False, started=False
    )
