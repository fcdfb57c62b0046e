"""Setting flags and EVAL_BANANA_* variables given to `eb stage <name>`, each `eb` a process of
its own: they apply to the stage that reads them, and a flag for another stage is refused by
name (docs/rerunning-stages.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import judge_yaml

# Sleeps past a one-second timeout, and says whether the variable reached it.
SLOW_SECRET = """\
schema_version: 1
id: slow
type: deterministic
description: Sleeps, then says whether MY_SECRET_X reached it.
script: |
  import os, sys, time
  time.sleep(float(os.environ.get("SLEEP", "0")))
  print("secret seen:", "MY_SECRET_X" in os.environ)
  sys.exit(1 if "MY_SECRET_X" in os.environ else 0)
"""


def _eb(root: Path, *args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eval_banana", *args],
        cwd=root,
        env={**os.environ, **variables},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _run_dir(root: Path) -> Path:
    (run_dir,) = (root / "runs").iterdir()
    return run_dir


def _result(root: Path, check_id: str) -> dict[str, Any]:
    (path,) = (_run_dir(root) / "checks").glob(f"{check_id}-*.json")
    found: dict[str, Any] = json.loads(path.read_text())
    return found


def _stage(root: Path, stage: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((_run_dir(root) / "stages" / f"{stage}.json").read_text())
    return found


def _one_passing_one_failing(project: Callable[..., Path]) -> Path:
    """A project of two deterministic checks, `a` passing and `b` failing (a run scores 50%)."""
    return project(
        {
            "eval_checks/a.yaml": "schema_version: 1\nid: a\ntype: deterministic\n"
            "description: a\nscript: pass\n",
            "eval_checks/b.yaml": "schema_version: 1\nid: b\ntype: deterministic\n"
            "description: b\nscript: raise SystemExit(1)\n",
        },
        config='[core]\noutput_dir = "runs"\n',
    )


def test_stage_execute_applies_its_flags_and_variables(project: Callable[..., Path]) -> None:
    root = project(
        {"eval_checks/slow.yaml": SLOW_SECRET},
        config='[core]\noutput_dir = "runs"\n[cache]\nmode = "off"\n',
    )
    made = _eb(root, "run", MY_SECRET_X="hunter2")
    assert made.returncode == 1, made.stderr  # the run inherits the variable
    config_before = (_run_dir(root) / "stages" / "config.json").read_bytes()

    withheld = _eb(root, "stage", "execute", "--env-policy", "allowlist", MY_SECRET_X="hunter2")
    assert withheld.returncode == 0, withheld.stderr
    assert _result(root, "slow")["status"] == "passed"
    assert _stage(root, "execute")["env_policy"] == "allowlist"

    by_variable = _eb(
        root, "stage", "execute", MY_SECRET_X="hunter2", EVAL_BANANA_ENV_POLICY="allowlist"
    )
    assert by_variable.returncode == 0, by_variable.stderr
    assert _result(root, "slow")["status"] == "passed"

    timed = _eb(root, "stage", "execute", "--check-timeout-seconds", "1", SLEEP="3")
    assert timed.returncode == 0, timed.stderr
    result = _result(root, "slow")
    assert (result["status"], result["details"]["timeout_seconds"]) == ("error", 1)
    # The run's own settings stay as it was made: the stage's file says what it used.
    assert (_run_dir(root) / "stages" / "config.json").read_bytes() == config_before


def test_stage_score_takes_the_threshold_variable(project: Callable[..., Path]) -> None:
    root = _one_passing_one_failing(project)
    assert _eb(root, "run").returncode == 1
    by_variable = _eb(root, "stage", "score", EVAL_BANANA_PASS_THRESHOLD="0.5")
    assert by_variable.returncode == 0, by_variable.stdout + by_variable.stderr
    assert "Pass threshold: 0.5 (met)" in by_variable.stdout
    assert _stage(root, "score")["pass_threshold"] == 0.5
    # A flag the run was made with still wins over a variable, as in `eb run`.
    assert _eb(root, "run", "--pass-threshold", "1.0", "--output-dir", "flagged").returncode == 1
    (flagged,) = (root / "flagged").iterdir()
    kept = _eb(root, "stage", "score", "--run-dir", str(flagged), EVAL_BANANA_PASS_THRESHOLD="0.5")
    assert kept.returncode == 1 and "Pass threshold: 1.0 (not met)" in kept.stdout


def test_a_flag_for_another_stage_is_refused_by_name(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        "print(json.dumps({'score': 1, 'reason': 'argv=' + ' '.join(sys.argv[1:-1])}))\n"
    )
    agent.chmod(0o755)
    agents = "".join(
        f'[agents.{name}]\ncommand = ["{agent}", "--{name}"]\n' for name in ("mine", "other")
    )
    root = project(
        {"eval_checks/j.yaml": judge_yaml("j")},
        config='[core]\noutput_dir = "runs"\n[cache]\nmode = "off"\n'
        f'[harness]\nagent = "mine"\nmodel = "file-model"\nisolation = "off"\n{agents}',
    )
    assert _eb(root, "run").returncode == 0
    refused = _eb(root, "stage", "execute", "--harness-agent", "other")
    assert refused.returncode == 2
    assert "--harness-agent is a setting of the guard stage" in refused.stderr
    assert "`eb stage guard --harness-agent ...`, then `eb stage execute`" in refused.stderr
    assert _result(root, "j")["reason"].startswith("argv=--mine")  # nothing ran

    later = _eb(root, "stage", "execute", "--pass-threshold", "0.5")
    assert later.returncode == 2 and "pass it to `eb stage score`" in later.stderr

    guarded = _eb(root, "stage", "guard", "--harness-agent", "other", "--harness-model", "X")
    assert guarded.returncode == 0, guarded.stderr
    assert _stage(root, "guard")["harness"]["agent"] == "other"
    assert _eb(root, "stage", "execute").returncode == 0
    assert _result(root, "j")["reason"] == "argv=--other --model X"


def test_the_report_states_the_maxfail_stage_execute_ran_under(
    project: Callable[..., Path],
) -> None:
    """report.json said `maxfail: 0`, config.json's, for checks `eb stage execute --maxfail 1`
    had stopped at one failure."""
    failing = "type: deterministic\ndescription: fails\nscript: raise SystemExit(1)\n"
    root = project(
        {f"eval_checks/{name}.yaml": f"schema_version: 1\nid: {name}\n{failing}" for name in "abc"},
        config='[core]\noutput_dir = "runs"\nmax_parallel_checks = 1\n',
    )
    assert _eb(root, "run").returncode == 1
    assert _eb(root, "stage", "execute", "--maxfail", "1").returncode == 0
    assert _eb(root, "stage", "score").returncode == 1
    assert _eb(root, "stage", "report").returncode == 1
    report = json.loads((_run_dir(root) / "report.json").read_text())
    assert (report["halted_by"], report["maxfail"]) == ("maxfail", 1)
    assert _stage(root, "execute")["maxfail"] == 1  # where the report stage reads it
    markdown = (_run_dir(root) / "report.md").read_text()
    assert "Run stopped after 1 failed or errored check (maxfail 1)" in markdown


def test_the_report_states_the_environment_stage_execute_ran_under(
    project: Callable[..., Path],
) -> None:
    """report.json said `env_policy: inherit` and empty allow lists, config.json's, for checks
    `eb stage execute --env-policy allowlist --env-allow ...` had run under the allowlist."""
    root = project(
        {"eval_checks/slow.yaml": SLOW_SECRET},
        config='[core]\noutput_dir = "runs"\n[cache]\nmode = "off"\n',
    )
    assert _eb(root, "run").returncode == 0
    allowlist = (
        "--env-policy", "allowlist", "--env-allow", "KEEP_ME", "--env-allow-prefix", "APP_",
    )  # fmt: skip
    rerun = _eb(root, "stage", "execute", *allowlist, MY_SECRET_X="hunter2")
    assert rerun.returncode == 0, rerun.stderr
    assert _result(root, "slow")["status"] == "passed"  # the allowlist withheld the secret
    assert _eb(root, "stage", "score").returncode == 0
    assert _eb(root, "stage", "report").returncode == 0
    report = json.loads((_run_dir(root) / "report.json").read_text())
    ran_under = ("allowlist", ["KEEP_ME"], ["APP_"])
    assert (report["env_policy"], report["env_allow"], report["env_allow_prefixes"]) == ran_under
    execute = _stage(root, "execute")  # where the report stage reads them
    assert (execute["env_policy"], execute["env_allow"], execute["env_allow_prefixes"]) == ran_under
    assert _stage(root, "config")["settings"]["execution"]["env"] == "inherit"


def test_stage_config_keeps_the_flags_the_run_was_made_with(project: Callable[..., Path]) -> None:
    """Rerun to take in an edited config file, the config stage dropped the run's own flags,
    and the stages rebuilt after it judged another run than the one that was made."""
    root = _one_passing_one_failing(project)
    made = _eb(root, "run", "--pass-threshold", "0.5", "--env-policy", "allowlist")
    assert made.returncode == 0, made.stdout + made.stderr
    (root / ".eval-banana" / "config.toml").write_text(
        '[core]\noutput_dir = "runs"\nmax_parallel_checks = 2\n'
    )
    rerun = _eb(root, "stage", "config")
    assert rerun.returncode == 0, rerun.stderr
    config = _stage(root, "config")
    assert config["settings"]["core"]["pass_threshold"] == 0.5
    assert config["settings"]["execution"]["env"] == "allowlist"
    assert config["settings"]["core"]["max_parallel_checks"] == 2  # the edit is taken in
    assert config["sources"]["core.pass_threshold"] == "cli"
    updated = _eb(root, "update")
    assert updated.returncode == 0, updated.stdout + updated.stderr  # still judged at 0.5
    assert _stage(root, "score")["pass_threshold"] == 0.5

    # A flag given now replaces the run's for its own setting only.
    replaced = _eb(root, "stage", "config", "--pass-threshold", "0.9")
    assert replaced.returncode == 0, replaced.stderr
    config = _stage(root, "config")
    assert config["settings"]["core"]["pass_threshold"] == 0.9
    assert config["settings"]["execution"]["env"] == "allowlist"


def test_every_setting_names_the_stages_that_read_it() -> None:
    """The settings table says which stages' reruns read each setting (config when it says
    nothing): each names real stages."""
    from eval_banana.settings.table import SETTINGS
    from eval_banana.stagefiles.layout import STAGE_NAMES

    assert all(spec.read_by and set(spec.read_by) <= set(STAGE_NAMES) for spec in SETTINGS)


def test_a_selection_flag_for_a_stage_that_selects_nothing_is_refused_by_name(
    project: Callable[..., Path],
) -> None:
    # `eb stage score --tag nomatch` scored the whole run, exit 0, as if no flag were given.
    root = _one_passing_one_failing(project)
    assert _eb(root, "run").returncode == 1
    score_before = (_run_dir(root) / "stages" / "score.json").read_bytes()
    refused = _eb(root, "stage", "score", "--tag", "nomatch")
    assert refused.returncode == 2
    assert "--tag selects checks for the validate and execute stages: `eb stage score`" in (
        refused.stderr
    )
    assert "`eb stage validate --tag ...` or `eb stage execute --tag ...`" in refused.stderr
    assert (_run_dir(root) / "stages" / "score.json").read_bytes() == score_before
    # The folder walked is the discover stage's too; any other stage refuses it.
    walked = _eb(root, "stage", "report", "--check-dir", "eval_checks")
    assert walked.returncode == 2
    assert "--check-dir selects checks for the discover, validate and execute stages" in (
        walked.stderr
    )
    picked = _eb(root, "stage", "discover", "-k", "a")
    assert picked.returncode == 2 and "`eb stage discover` does not read it" in picked.stderr


def test_every_selection_field_names_the_stages_that_read_it() -> None:
    """Each field of a selection a flag fills is declared, with real stages reading it."""
    from eval_banana.models.config import Selection
    from eval_banana.pipeline.stagesettings import SELECTION_FLAGS
    from eval_banana.stagefiles.layout import STAGE_NAMES

    # Filled by the config stage from --last-failed and --changed-since, never by a flag of
    # their own.
    derived = {"last_failed_run_id", "last_failed_ids", "changed_since_commit"}
    declared = {flag.field for flag in SELECTION_FLAGS}
    assert declared == set(Selection.model_fields) - derived
    assert all(flag.read_by and set(flag.read_by) <= set(STAGE_NAMES) for flag in SELECTION_FLAGS)
