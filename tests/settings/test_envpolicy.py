"""The environment allowlist: what checks and judges may see.

Under `env = "allowlist"` a child gets only the base set (pinned below) plus listed names and
prefixes; the policy is recorded in config.json and the report, and no value ever is.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.models.config import ExecutionSettings
from eval_banana.settings.envpolicy import BASE_NAMES, BASE_PREFIXES, allowed, build_base_env
from tests.conftest import STANDIN_AGENTS

SECRET = "s3cr3t-value-that-must-not-leak"
LISTED = "listed-value-4711"
PREFIXED = "prefixed-value-0815"


def test_the_base_set_is_pinned() -> None:
    pinned = {
        "PATH",
        "HOME",
        "LANG",
        "LANGUAGE",
        "TMPDIR",
        "TMP",
        "TEMP",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "all_proxy",
        "ftp_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "ALL_PROXY",
        "FTP_PROXY",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
    }
    assert pinned == BASE_NAMES
    assert BASE_PREFIXES == ("LC_",)


def test_allowlist_rules_are_exact_names_and_prefixes() -> None:
    settings = ExecutionSettings(env="allowlist", env_allow=["EB_KEY"], env_allow_prefixes=["APP_"])
    assert allowed(name="EB_KEY", settings=settings)
    assert not allowed(name="EB_KEY2", settings=settings)  # names are exact
    assert not allowed(name="eb_key", settings=settings)  # and case-sensitive
    assert allowed(name="APP_TOKEN", settings=settings)
    assert allowed(name="LC_ALL", settings=settings)
    assert not allowed(name="AWS_SECRET_ACCESS_KEY", settings=settings)
    # An empty prefix must not open the door to everything.
    assert not allowed(name="ANY", settings=ExecutionSettings(env_allow_prefixes=[""]))


def test_inherit_passes_everything_allowlist_filters() -> None:
    environ = {"PATH": "/bin", "SECRET": "x", "LC_ALL": "C", "EB_KEY": "k"}
    assert build_base_env(settings=ExecutionSettings(), environ=environ) == environ
    kept = build_base_env(
        settings=ExecutionSettings(env="allowlist", env_allow=["EB_KEY"]), environ=environ
    )
    assert kept == {"PATH": "/bin", "LC_ALL": "C", "EB_KEY": "k"}


def make_project(*, project: Callable[..., Path], seen: Path, config: str) -> Path:
    script = f"import json, os\njson.dump(dict(os.environ), open({str(seen)!r}, 'w'))\n"
    return project(
        {
            "eval_checks/env_check.yaml": "\n".join(
                [
                    "schema_version: 1",
                    "id: env_check",
                    "type: deterministic",
                    "description: Records the environment it received.",
                    "script: |",
                    *(f"  {line}" for line in script.splitlines()),
                    "",
                ]
            ),
            "eval_checks/env_judge.yaml": "\n".join(
                [
                    "schema_version: 1",
                    "id: env_judge",
                    "type: harness_judge",
                    "description: The judge records the environment it received.",
                    "instructions: Score 1.",
                    "",
                ]
            ),
        },
        config='[core]\noutput_dir = "results"\n[harness]\nagent = "claude"\n' + config,
    )


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Secrets in eb's own environment; the claude stand-in records what it receives."""
    record = tmp_path / "judge_env.jsonl"
    monkeypatch.setenv("PATH", f"{STANDIN_AGENTS}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("EB_TEST_SECRET", SECRET)
    monkeypatch.setenv("EB_TEST_LISTED", LISTED)
    monkeypatch.setenv("EBX_PREFIXED", PREFIXED)
    monkeypatch.setenv("STANDIN_RECORD", str(record))
    return record


def judge_env(record: Path) -> dict[str, str]:
    (line,) = record.read_text(encoding="utf-8").splitlines()
    env: dict[str, str] = json.loads(line)["env"]
    return env


def all_run_files_text(root: Path) -> str:
    return "\n".join(
        path.read_text(encoding="utf-8", errors="replace")
        for path in (root / "results").rglob("*")
        if path.is_file()
    )


def test_allowlist_hides_a_secret_from_both_check_kinds_and_lets_listed_ones_through(
    project: Callable[..., Path], eb: Callable[..., Any], secrets: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "check_env.json"
    root = make_project(project=project, seen=seen, config="")
    outcome = eb(
        "run",
        "--cwd",
        str(root),
        "--env-policy",
        "allowlist",
        "--env-allow",
        "EB_TEST_LISTED",
        "--env-allow-prefix",
        "EBX_",
        # The stand-in needs its own STANDIN_* steering variables: let that prefix through too.
        "--env-allow-prefix",
        "STANDIN_",
    )
    assert outcome.exit_code == 0, outcome.stderr + outcome.stdout
    check_env, agent_env = json.loads(seen.read_text()), judge_env(secrets)
    for env in (check_env, agent_env):
        assert "EB_TEST_SECRET" not in env
        assert SECRET not in json.dumps(env)
        assert env["EB_TEST_LISTED"] == LISTED and env["EBX_PREFIXED"] == PREFIXED
        # PATH itself is kept (a pyenv shim running the stand-in may prepend its own folder).
        assert str(STANDIN_AGENTS) in env["PATH"].split(os.pathsep)
    # What eb itself sets for a judge is still there, under any policy.
    assert agent_env["CI"] == "1" and agent_env["EVAL_BANANA_PROJECT_ROOT"] == str(root)
    # The policy is recorded (names only) in config.json and the report; values never are.
    run_dir = next((root / "results").iterdir())
    config = json.loads((run_dir / "stages" / "config.json").read_text())
    execution = config["settings"]["execution"]
    assert execution == {
        "env": "allowlist",
        "env_allow": ["EB_TEST_LISTED"],
        "env_allow_prefixes": ["EBX_", "STANDIN_"],
        "redact": [],
        "isolation": "off",
    }
    report = json.loads((run_dir / "report.json").read_text())
    assert (report["env_policy"], report["env_allow"], report["env_allow_prefixes"]) == (
        "allowlist",
        ["EB_TEST_LISTED"],
        ["EBX_", "STANDIN_"],
    )
    execute_doc = json.loads((run_dir / "stages" / "execute.json").read_text())
    assert execute_doc["env_policy"] == "allowlist"
    written = all_run_files_text(root)
    for value in (SECRET, LISTED, PREFIXED):
        assert value not in written


def test_inherit_is_the_default_and_passes_the_secret(
    project: Callable[..., Path], eb: Callable[..., Any], secrets: Path, tmp_path: Path
) -> None:
    # The counter-test: without the allowlist the same secret does reach both children, so the
    # test above really measures the policy.
    seen = tmp_path / "check_env.json"
    root = make_project(project=project, seen=seen, config="")
    outcome = eb("run", "--cwd", str(root))
    assert outcome.exit_code == 0, outcome.stderr
    assert json.loads(seen.read_text())["EB_TEST_SECRET"] == SECRET
    assert judge_env(secrets)["EB_TEST_SECRET"] == SECRET
    report = json.loads(next(root.glob("results/*/report.json")).read_text())
    assert report["env_policy"] == "inherit"
    assert SECRET not in all_run_files_text(root)


def test_allowlist_from_the_config_file(
    project: Callable[..., Path], eb: Callable[..., Any], secrets: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "check_env.json"
    root = make_project(
        project=project,
        seen=seen,
        config='[execution]\nenv = "allowlist"\nenv_allow = ["EB_TEST_LISTED"]\n'
        'env_allow_prefixes = ["STANDIN_"]\n',
    )
    outcome = eb("run", "--cwd", str(root))
    assert outcome.exit_code == 0, outcome.stderr
    check_env = json.loads(seen.read_text())
    assert "EB_TEST_SECRET" not in check_env and "EBX_PREFIXED" not in check_env
    assert check_env["EB_TEST_LISTED"] == LISTED
    assert "EB_TEST_SECRET" not in judge_env(secrets)
