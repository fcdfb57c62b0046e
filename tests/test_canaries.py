"""Canaries: every check kind must still be able to go red.

The registry of kinds is the product's own: the check types in `eval_banana.runners.RUNNERS`
and the assertion operators in `eval_banana.assertions.operators.OPERATORS`. Each kind has a
known-pass and a known-fail canary under tests/fixtures/canaries/, and every canary runs through
`eb run`. The fire alarm runs `python -m eval_banana run` as a real subprocess on a project whose
every check holds a seeded defect.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from eval_banana.assertions.operators import OPERATORS
from eval_banana.commands import COMMANDS
from eval_banana.models.repeats import RULES
from eval_banana.models.stages import ScoreDoc
from eval_banana.runners import RUNNERS

REPO = Path(__file__).resolve().parent.parent
CANARIES = REPO / "tests" / "fixtures" / "canaries"
OPERATOR_CANARIES = CANARIES / "assertion_ops.yaml"
FIRE_ALARM = REPO / "tests" / "fixtures" / "projects" / "fire_alarm"
STANDIN_AGENTS = REPO / "tests" / "agents"
OPERATOR_PREFIX = "assertions."
RULE_CANARIES = CANARIES / "rules.yaml"
RULE_PREFIX = "aggregate."
SCRIPTED_CONFIG = CANARIES / "scripted.toml"


def trust_kinds() -> set[str]:
    """What makes a judge trustworthy, as the product has it: every `aggregate` rule (as
    `aggregate.<rule>`), the flaky flag (counted in score.json), calibration (`eb calibrate`)
    and dataset families with their own gate (listed in score.json)."""
    kinds = {f"{RULE_PREFIX}{rule}" for rule in RULES}
    if "flaky_checks" in ScoreDoc.model_fields:
        kinds.add("flaky")
    if "calibrate" in COMMANDS:
        kinds.add("calibration")
    if "families" in ScoreDoc.model_fields:
        kinds.add("dataset")
    return kinds


def registered_kinds() -> set[str]:
    """Every check type, every assertion operator as `assertions.<op>`, and trust_kinds()."""
    return set(RUNNERS) | {f"{OPERATOR_PREFIX}{op}" for op in OPERATORS} | trust_kinds()


def canary_kinds() -> set[str]:
    """Kinds that have a complete canary pair on disk."""
    folders = {
        path.name
        for path in CANARIES.iterdir()
        if path.is_dir() and (path / "pass.yaml").is_file() and (path / "fail.yaml").is_file()
    }
    operators = yaml.safe_load(OPERATOR_CANARIES.read_text(encoding="utf-8"))
    paired = {
        f"{OPERATOR_PREFIX}{op}" for op, pair in operators.items() if {"pass", "fail"} <= set(pair)
    }
    rules = yaml.safe_load(RULE_CANARIES.read_text(encoding="utf-8"))
    ruled = {
        f"{RULE_PREFIX}{rule}" for rule, pair in rules.items() if {"pass", "fail"} <= set(pair)
    }
    return folders | paired | ruled


def test_every_registered_kind_has_a_canary_pair_and_no_canary_is_orphaned() -> None:
    registered, canaries = registered_kinds(), canary_kinds()
    assert registered - canaries == set(), "check kinds without a known-pass/known-fail pair"
    assert canaries - registered == set(), "canaries for kinds that are no longer registered"


def test_the_meta_test_notices_a_kind_without_canaries(monkeypatch: pytest.MonkeyPatch) -> None:
    # The meta-test must not be vacuous: a new kind with no canaries shows up as missing.
    monkeypatch.setitem(RUNNERS, "brand_new_kind", RUNNERS["deterministic"])
    assert "brand_new_kind" in registered_kinds() - canary_kinds()


def test_the_meta_test_notices_a_rule_without_canaries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "RULES", (*RULES, "unanimous_but_one"))
    assert f"{RULE_PREFIX}unanimous_but_one" in registered_kinds() - canary_kinds()


def with_standins() -> str:
    return f"{STANDIN_AGENTS}{os.pathsep}{os.environ.get('PATH', '')}"


def read_report(root: Path) -> dict[str, Any]:
    reports = sorted(root.glob("results/*/report.json"))
    assert len(reports) == 1, reports
    data: dict[str, Any] = json.loads(reports[0].read_text(encoding="utf-8"))
    return data


def run_canary_project(
    *, root: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """`eb run` in-process on a canary project; check id -> status."""
    monkeypatch.setenv("PATH", with_standins())
    outcome = eb("run", "--cwd", str(root), "--output-dir", "results")
    report = read_report(root)
    assert outcome.exit_code == (0 if report["run_passed"] else 1), outcome.stderr
    return {check["check_id"]: check["status"] for check in report["checks"]}


def check_type_kinds() -> list[str]:
    return sorted(RUNNERS)


@pytest.mark.parametrize("kind", check_type_kinds())
def test_check_type_canaries_pass_and_fail_through_eb_run(
    kind: str, tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = CANARIES / kind
    root = tmp_path / "proj"
    # The canary folder is the project root; its two checks go into eval_checks/.
    shutil.copytree(folder, root, ignore=shutil.ignore_patterns("*.yaml", "config.toml"))
    (root / ".eval-banana").mkdir()
    config = folder / "config.toml"
    (root / ".eval-banana" / "config.toml").write_text(
        config.read_text(encoding="utf-8") if config.is_file() else "", encoding="utf-8"
    )
    (root / "eval_checks").mkdir()
    ids = {}
    for name in ("pass", "fail"):
        text = (folder / f"{name}.yaml").read_text(encoding="utf-8")
        definition = yaml.safe_load(text)
        assert definition["type"] == kind
        ids[name] = definition["id"]
        (root / "eval_checks" / f"{name}.yaml").write_text(text, encoding="utf-8")
    statuses = run_canary_project(root=root, eb=eb, monkeypatch=monkeypatch)
    assert statuses == {ids["pass"]: "passed", ids["fail"]: "failed"}


def test_operator_canaries_pass_and_fail_through_eb_run(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    canaries = yaml.safe_load(OPERATOR_CANARIES.read_text(encoding="utf-8"))
    root = tmp_path / "proj"
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text("", encoding="utf-8")
    (root / "eval_checks").mkdir()
    (root / "artifacts").mkdir()
    expected = {}
    for op, pair in sorted(canaries.items()):
        for name, status in (("pass", "passed"), ("fail", "failed")):
            check_id = f"op_{op}_{name}"
            artifact = f"artifacts/{check_id}.json"
            (root / artifact).write_text(json.dumps(pair[name]["document"]), encoding="utf-8")
            definition = {
                "schema_version": 1,
                "id": check_id,
                "type": "assertions",
                "description": f"Canary of the {op} operator ({name}).",
                "artifact": artifact,
                "assert": [pair[name]["assertion"]],
            }
            (root / "eval_checks" / f"{check_id}.yaml").write_text(
                yaml.safe_dump(definition, sort_keys=False), encoding="utf-8"
            )
            expected[check_id] = status
    assert len(expected) == 2 * len(OPERATORS)
    assert run_canary_project(root=root, eb=eb, monkeypatch=monkeypatch) == expected


def test_fire_alarm_eb_run_as_a_subprocess_fails_on_seeded_defects(tmp_path: Path) -> None:
    """The fire alarm: must keep working on its own; it spawns the real CLI on purpose."""
    root = tmp_path / "fire_alarm"
    shutil.copytree(FIRE_ALARM, root)
    env = {**os.environ, "PATH": with_standins(), "PYTHONPATH": str(REPO)}
    completed = subprocess.run(
        [sys.executable, "-m", "eval_banana", "run", "--json"],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 1, completed.stderr
    report = json.loads(completed.stdout)
    assert report == read_report(root)
    assert report["run_passed"] is False
    statuses = {
        check["check_id"]: (check["check_type"], check["status"], check["observed_status"])
        for check in report["checks"]
    }
    assert statuses == {
        "adds_numbers": ("deterministic", "failed", "failed"),
        "judge_calc": ("harness_judge", "failed", "failed"),
        "plan_names_tests": ("assertions", "failed", "failed"),
        # The control catches the seeded defect, so it is the one satisfied expectation.
        "control_catches_defect": ("deterministic", "passed", "failed"),
    }
    assert (report["points_earned"], report["failed_checks"], report["errored_checks"]) == (1, 3, 0)


# --- repeats, flaky, calibration ---------------------------------------------------------------


def scripted_project(*, root: Path, checks: dict[str, str], extra: Path | None = None) -> Path:
    """A project judged by the scripted stand-in; `extra`: a canary folder's other files."""
    if extra is not None:
        shutil.copytree(extra, root, ignore=shutil.ignore_patterns("*.yaml"))
    (root / ".eval-banana").mkdir(parents=True)
    shutil.copyfile(SCRIPTED_CONFIG, root / ".eval-banana" / "config.toml")
    (root / "eval_checks").mkdir()
    for name, text in checks.items():
        (root / "eval_checks" / f"{name}.yaml").write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def scripted_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", with_standins())
    monkeypatch.setenv("SCRIPTED_STATE", str(tmp_path / "scripted-state"))


def test_rule_canaries_pass_and_fail_through_eb_run(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, scripted_path: None
) -> None:
    rules = yaml.safe_load(RULE_CANARIES.read_text(encoding="utf-8"))
    checks, expected = {}, {}
    for rule, pair in sorted(rules.items()):
        for name, status in (("pass", "passed"), ("fail", "failed")):
            check_id = f"rule_{rule}_{name}"
            checks[check_id] = yaml.safe_dump(
                {
                    "schema_version": 1,
                    "id": check_id,
                    "type": "harness_judge",
                    "description": f"Canary of the {rule} rule ({name}).",
                    "repeats": 3,
                    "aggregate": rule,
                    "instructions": f"Is it right?\nscripted: answers={pair[name]} key={check_id}",
                },
                sort_keys=False,
            )
            expected[check_id] = status
    assert len(expected) == 2 * len(RULES)
    root = scripted_project(root=tmp_path / "proj", checks=checks)
    assert run_canary_project(root=root, eb=eb, monkeypatch=monkeypatch) == expected


def test_flaky_canaries_are_flagged_and_fail_the_run_when_asked(
    tmp_path: Path, eb: Callable[..., Any], scripted_path: None
) -> None:
    folder = CANARIES / "flaky"
    checks = {
        name: (folder / f"{name}.yaml").read_text(encoding="utf-8") for name in ("pass", "fail")
    }
    ids = {name: yaml.safe_load(text)["id"] for name, text in checks.items()}
    root = scripted_project(root=tmp_path / "proj", checks=checks)
    outcome = eb("run", "--cwd", str(root), "--output-dir", "results", "--fail-on-flaky")
    report = read_report(root)
    flags = {check["check_id"]: check["details"].get("flaky") for check in report["checks"]}
    assert flags == {ids["pass"]: False, ids["fail"]: True}
    # The rule (any) passes both checks; only the flag fails the run.
    assert {check["status"] for check in report["checks"]} == {"passed"}
    assert report["flaky_checks"] == 1
    assert outcome.exit_code == 1 and report["run_passed"] is False


def test_calibration_canaries_agree_and_disagree_through_eb_calibrate(
    tmp_path: Path, eb: Callable[..., Any], scripted_path: None
) -> None:
    folder = CANARIES / "calibration"
    checks = {
        name: (folder / f"{name}.yaml").read_text(encoding="utf-8") for name in ("pass", "fail")
    }
    ids = {name: yaml.safe_load(text)["id"] for name, text in checks.items()}
    root = scripted_project(root=tmp_path / "proj", checks=checks, extra=folder)
    outcome = eb("calibrate", "--cwd", str(root), "--output-dir", "results")
    assert outcome.exit_code == 1, outcome.stdout + outcome.stderr
    record = json.loads((root / ".eval-banana" / "calibration.json").read_text(encoding="utf-8"))
    agreed = {check_id: entry["cases_agreed"] for check_id, entry in record["checks"].items()}
    assert agreed == {ids["pass"]: 2, ids["fail"]: 1}
    assert (root / "answer.txt").read_text(encoding="utf-8") == "hello world\n"


# --- dataset families ------------------------------------------------------------------------


def test_dataset_canaries_pass_fail_and_gate_through_eb_run(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A known-pass family, a known-fail family, and one whose gate fails while most of its
    cases pass (the run threshold alone would let the run through)."""
    folder = CANARIES / "dataset"
    root = tmp_path / "proj"
    shutil.copytree(folder, root, ignore=shutil.ignore_patterns("*.yaml"))
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text(
        "[core]\npass_threshold = 0.5\n", encoding="utf-8"
    )
    (root / "eval_checks").mkdir()
    for name in ("pass", "fail", "gate"):
        shutil.copyfile(folder / f"{name}.yaml", root / "eval_checks" / f"{name}.yaml")
    statuses = run_canary_project(root=root, eb=eb, monkeypatch=monkeypatch)
    assert statuses == {
        "canary_dataset_pass[one]": "passed",
        "canary_dataset_pass[two]": "passed",
        "canary_dataset_fail[three]": "failed",
        "canary_dataset_fail[four]": "failed",
        "canary_dataset_gate[a]": "passed",
        "canary_dataset_gate[b]": "passed",
        "canary_dataset_gate[c]": "passed",
        "canary_dataset_gate[d]": "passed",
        "canary_dataset_gate[seeded]": "failed",
    }
    report = read_report(root)
    assert report["meets_threshold"] is True and report["run_passed"] is False
    gates = {
        family["id"]: (family["pass_rate"], family["gate_held"]) for family in report["families"]
    }
    assert gates == {
        "canary_dataset_fail": (0.0, True),
        "canary_dataset_gate": (0.8, False),
        "canary_dataset_pass": (1.0, True),
    }
