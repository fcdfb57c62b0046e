"""Every built-in agent template against its real CLI and the stand-in model server.

Each test runs `eb run` as a subprocess in a project configured the way docs/agents.md tells a
user to (`[harness.env]`, the agent's own config file in its home folder), once as root and
once as an unprivileged user. The model server answers each judge by the case marker in its
instructions, and records what the agent sent, so the tests check both ends: what eval_banana
made of the agent's output, and what the agent really asked the model.

A template flag the CLI renamed or dropped turns the passing case into an `error` here, with
the CLI's own complaint in `error_detail` (test_a_wrong_flag_is_reported_by_the_real_cli
shows that for every agent).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agents_real.runner import Project, Runtime, User, eb_run, project_for
from tests.agents_real.setups import SETUPS, Setup
from tests.model_server import (
    FAIL_TEXT,
    MALFORMED_TEXT,
    NO_VERDICT_TEXT,
    PASS_TEXT,
    ModelServer,
    Script,
)

AGENTS = sorted(SETUPS)
USERS = ("root", "nobody")
NO_VERDICT = 'Harness judge output did not contain a valid JSON verdict with "score": 0 or 1.'
# Long enough for the slowest agent to start (OpenHands) and give up on a failing server.
TIMEOUT_S = 240

CASES = {
    "pass_case": "case-pass",
    "fail_case": "case-fail",
    "no_verdict_case": "case-no-verdict",
    "malformed_case": "case-malformed",
    "http500_case": "case-http500",
    "http401_case": "case-http401",
}


def _script_cases(server: ModelServer) -> None:
    server.script_when("case-pass", text=PASS_TEXT)
    server.script_when("case-fail", text=FAIL_TEXT)
    server.script_when("case-no-verdict", text=NO_VERDICT_TEXT)
    server.script_when("case-malformed", text=MALFORMED_TEXT)
    server.script_when("case-http500", status=500, error_message="model server exploded")
    server.script_when("case-http401", status=401, error_message="model server says bad key")


def _user(runtimes: dict[str, tuple[User, Runtime]], name: str) -> tuple[User, Runtime]:
    if name not in runtimes:
        pytest.fail(
            "The unprivileged case needs the suite to run as root (it drops to 'nobody' for the "
            "child); run it as root",
            pytrace=False,
        )
    return runtimes[name]


def _project(
    *,
    base: Path,
    setup: Setup,
    server: ModelServer,
    cases: dict[str, str],
    model: str | None,
    extra_config: str = "",
) -> Project:
    return project_for(
        base=base,
        setup=setup,
        server_url=server.url,
        cases=cases,
        model=model,
        timeout_seconds=TIMEOUT_S,
        extra_config=extra_config,
    )


def _run(project: Project, user: User, runtime: Runtime, *args: str) -> Any:
    done = eb_run(project=project, user=user, runtime=runtime, args=args)
    assert done.returncode in (0, 1, 3), f"eb run failed to run:\n{done.stdout}\n{done.stderr}"
    return done


def _dig(body: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(body, dict):
            return None
        body = body.get(key)
    return body


def _judge_requests(server: ModelServer, marker: str) -> list[Any]:
    return server.model_requests(marker=marker)


@pytest.mark.parametrize("user_name", USERS)
@pytest.mark.parametrize("agent", AGENTS)
def test_verdicts_errors_and_usage(
    agent: str,
    user_name: str,
    model_server: ModelServer,
    runtimes: dict[str, tuple[User, Runtime]],
    scratch: Path,
) -> None:
    setup = SETUPS[agent]
    user, runtime = _user(runtimes, user_name)
    _script_cases(model_server)
    project = _project(
        base=scratch, setup=setup, server=model_server, cases=CASES, model=setup.model
    )
    done = _run(project, user, runtime)
    checks = project.checks()
    context = json.dumps(checks, indent=1)[:6000] + done.stderr[-3000:]

    passing = checks["pass_case"]
    assert passing["status"] == "passed", context
    assert passing["reason"] == json.loads(PASS_TEXT)["reason"]
    failing = checks["fail_case"]
    assert failing["status"] == "failed", context
    assert failing["reason"] == json.loads(FAIL_TEXT)["reason"]

    no_verdict = checks["no_verdict_case"]
    assert no_verdict["status"] == "error", context
    assert NO_VERDICT in no_verdict["error_detail"]
    malformed = checks["malformed_case"]
    assert malformed["status"] == "error", context
    assert '"score" was "yes"' in (malformed["details"]["verdict_problem"] or ""), context

    # An HTTP error from the model is an error whose detail names the cause.
    for case, words in (
        ("http500_case", setup.http500_words),
        ("http401_case", setup.http401_words),
    ):
        failed = checks[case]
        assert failed["status"] == "error", context
        detail = failed["error_detail"] or ""
        assert NO_VERDICT in detail, context
        assert any(word in detail for word in words), f"{case}: {detail}\n{context}"

    # The judges reached the model with the prompt and the model the config chose.
    for case, marker in CASES.items():
        requests = _judge_requests(model_server, marker)
        assert requests, f"{case}: the agent never asked the model\n{context}"
        if setup.sent_model is not None:
            assert {request.model for request in requests} == {setup.sent_model}, case
    assert checks["pass_case"]["details"]["agent_type"] == agent

    # Usage: what the agent reported, as eval_banana read it, against what the server sent.
    usage = passing["details"]["usage"]
    report = project.report()
    if setup.reports_usage:
        assert usage is not None, context
        per_request = Script().input_tokens + Script().output_tokens
        served = per_request * sum(
            1
            for request in model_server.requests
            if "case-pass" in request.prompt and request.status == 200
        )
        assert usage["total_tokens"] == served, (usage, served)
        assert report["tokens_used"] is not None and report["tokens_used"] >= served
        assert report["judge_usage"]["total_tokens"] == report["tokens_used"]
    else:
        assert usage is None, context
    if setup.reports_cost:
        assert usage["cost_usd"] > 0, usage
        assert report["judge_usage"]["cost_usd"] >= usage["cost_usd"]
        assert "Judge usage:" in done.stdout + done.stderr
        assert "Judge usage:" in (project.run_dir() / "report.md").read_text()


@pytest.mark.parametrize("user_name", USERS)
@pytest.mark.parametrize("agent", AGENTS)
def test_model_and_effort_overrides_reach_the_model(
    agent: str,
    user_name: str,
    model_server: ModelServer,
    runtimes: dict[str, tuple[User, Runtime]],
    scratch: Path,
) -> None:
    setup = SETUPS[agent]
    user, runtime = _user(runtimes, user_name)
    model_server.script(text=PASS_TEXT)
    project = _project(
        base=scratch,
        setup=setup,
        server=model_server,
        cases={"override_case": "case-override"},
        model=setup.model,
    )
    args = ["--harness-model", setup.override_model]
    if setup.effort is not None:
        args += ["--harness-reasoning-effort", setup.effort]
    _run(project, user, runtime, *args)
    check = project.checks()["override_case"]
    assert check["status"] == "passed", json.dumps(check, indent=1)[:4000]
    requests = _judge_requests(model_server, "case-override")
    assert requests
    models = {request.model for request in requests}
    assert setup.override_sent_model in models and models <= {
        setup.override_sent_model,
        *setup.side_models,
    }, models
    details = check["details"]
    assert details["model"] == setup.override_model
    if setup.effort is None:
        assert details["effort"] is None and details["reasoning_effort"] is None
        return
    assert details["reasoning_effort"] == setup.effort
    assert details["effort"]["requested"] == setup.effort
    assert setup.effort in " ".join(details["effort"]["given"])
    assert setup.effort_field is not None
    sent = {_dig(request.body, setup.effort_field) for request in requests}
    assert setup.effort in sent, sent
    expected_status = "confirmed" if agent == "codex" else "unconfirmed"
    assert details["effort"]["status"] == expected_status, details["effort"]


@pytest.mark.parametrize("agent", sorted(name for name, s in SETUPS.items() if s.dropping_model))
def test_effort_a_model_cannot_take_is_not_reported_as_applied(
    agent: str,
    model_server: ModelServer,
    runtimes: dict[str, tuple[User, Runtime]],
    scratch: Path,
) -> None:
    setup = SETUPS[agent]
    user, runtime = runtimes["root"]
    model_server.script(text=PASS_TEXT)
    project = _project(
        base=scratch, setup=setup, server=model_server, cases={"drop": "case-drop"}, model=None
    )
    assert setup.dropping_model is not None and setup.effort is not None
    _run(
        project,
        user,
        runtime,
        "--harness-model",
        setup.dropping_model,
        "--harness-reasoning-effort",
        setup.effort,
    )
    check = project.checks()["drop"]
    assert check["status"] == "passed", json.dumps(check, indent=1)[:4000]
    requests = _judge_requests(model_server, "case-drop")
    assert setup.effort_field is not None
    sent = [_dig(request.body, setup.effort_field) for request in requests]
    assert requests and all(value is None for value in sent), sent
    # The agent exited 0 and sent no effort: the record must not claim it was applied.
    assert check["details"]["effort"]["status"] == "unconfirmed"


def test_pi_rejecting_an_effort_level_is_recorded(
    model_server: ModelServer, runtimes: dict[str, tuple[User, Runtime]], scratch: Path
) -> None:
    setup = SETUPS["pi"]
    user, runtime = runtimes["root"]
    model_server.script(text=PASS_TEXT)
    project = _project(
        base=scratch, setup=setup, server=model_server, cases={"bogus": "case-bogus"}, model=None
    )
    _run(
        project,
        user,
        runtime,
        "--harness-model",
        setup.override_model,
        "--harness-reasoning-effort",
        "bogus",
    )
    check = project.checks()["bogus"]
    assert check["status"] == "passed"
    sent = {
        _dig(request.body, ("reasoning_effort",))
        for request in _judge_requests(model_server, "case-bogus")
    }
    assert sent == {"medium"}  # pi's own default, not what was asked
    effort = check["details"]["effort"]
    assert effort["status"] == "rejected" and "bogus" in effort["agent_said"], effort


@pytest.mark.parametrize("agent", AGENTS)
def test_a_wrong_flag_is_reported_by_the_real_cli(
    agent: str,
    model_server: ModelServer,
    runtimes: dict[str, tuple[User, Runtime]],
    scratch: Path,
) -> None:
    """The suite notices a renamed flag: here one is misspelt on purpose, and the CLI objects."""
    setup = SETUPS[agent]
    user, runtime = runtimes["root"]
    from eval_banana.harness.templates import BUILTIN_TEMPLATES

    flags = list(BUILTIN_TEMPLATES[agent].shared_flags) + ["--bogus-eval-banana-flag"]
    extra = f"\n[agents.{agent}]\nshared_flags = {json.dumps(flags)}\n"
    model_server.script(text=PASS_TEXT)
    project = _project(
        base=scratch,
        setup=setup,
        server=model_server,
        cases={"flag": "case-flag"},
        model=setup.model,
        extra_config=extra,
    )
    _run(project, user, runtime)
    check = project.checks()["flag"]
    assert check["status"] == "error", json.dumps(check, indent=1)[:3000]
    detail = check["error_detail"] or ""
    if setup.names_bad_flag:
        assert "bogus-eval-banana-flag" in detail, detail
    else:
        assert "it did not accept its arguments" in detail, detail
    assert not _judge_requests(model_server, "case-flag")


def test_claude_cost_fuse_stops_the_run(
    model_server: ModelServer, runtimes: dict[str, tuple[User, Runtime]], scratch: Path
) -> None:
    setup = SETUPS["claude"]
    user, runtime = runtimes["root"]
    model_server.script(text=PASS_TEXT)
    cases = {f"judge_{n}": f"case-cost-{n}" for n in range(4)}
    project = _project(
        base=scratch,
        setup=setup,
        server=model_server,
        cases=cases,
        model=setup.model,
        extra_config="",
    )
    config = project.root / ".eval-banana" / "config.toml"
    config.write_text(
        config.read_text().replace("max_parallel_checks = 8", "max_parallel_checks = 1")
    )
    done = _run(project, user, runtime, "--cost-fuse-usd", "0.0000001")
    assert done.returncode == 3, done.stderr
    report = project.report()
    assert report["aborted_by"] == "cost_fuse"
    assert report["judge_usage"]["cost_usd"] > 0
    statuses = [check["status"] for check in report["checks"]]
    assert statuses[0] == "passed" and all(status == "error" for status in statuses[1:])


def test_the_other_grok_is_recognised_by_validate_and_run(
    model_server: ModelServer, runtimes: dict[str, tuple[User, Runtime]], scratch: Path
) -> None:
    """The real npm @vibe-kit/grok-cli first on PATH: eb names the program to install."""
    import os
    import subprocess

    from tests.agents_real.install import IMPOSTOR_GROK, agents_home, bin_dir

    setup = SETUPS["grok"]
    project = _project(
        base=scratch, setup=setup, server=model_server, cases={"g": "case-g"}, model=None
    )
    path = os.pathsep.join(
        (str((agents_home() / IMPOSTOR_GROK).parent), str(bin_dir()), "/usr/bin:/bin")
    )
    env = {"PATH": path, "HOME": str(project.home), "TMPDIR": str(project.tmp), "NO_COLOR": "1"}
    outcomes = {}
    # `eb validate` refuses what `eb run` would (exit 2, the same words); the pre-commit hook's
    # --allow-missing-agent keeps it a warning.
    for command in (("validate",), ("validate", "--allow-missing-agent"), ("run",)):
        outcomes[command] = subprocess.run(
            [sys.executable, "-m", "eval_banana", *command, "--cwd", str(project.root)],
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=300,
        )
    validate, lenient, run = outcomes.values()
    assert validate.returncode == 2, validate.stderr
    assert lenient.returncode == 0, lenient.stderr
    for done in (validate, lenient):
        assert "@vibe-kit/grok-cli" in done.stderr and "grok-cli-bin" in done.stderr
    assert run.returncode == 2, run.stderr
    assert "@vibe-kit/grok-cli" in run.stderr and "pip install grok-cli-bin" in run.stderr
    assert not model_server.requests  # nothing was launched
