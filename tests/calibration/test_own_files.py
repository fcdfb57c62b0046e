"""`eb calibrate` watches eb's own files while its judges' samples run, as `eb run` does: a
sample whose judge rewrites a cached verdict, a kept run, an earlier run folder or the
calibration record is an isolation `error` (never agreeing), a changed cache file is removed
and the record is written over what it held before, never over the forgery. End to end: a real
project in git, a real `eb run` and `eb calibrate`, and a judge that is a small agent script.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import init_repo

# A judge of answer.txt in the copy it is shown: it passes a greeting and fails anything else,
# so it agrees with every case's label. Told by TAMPER, it first rewrites eb's file (or every
# file of a glob) at TAMPER_PATH, which is outside its copy: through the absolute path.
AGENT = """\
import glob, json, os, sys
tamper, target = os.environ.get("TAMPER", ""), os.environ.get("TAMPER_PATH", "")
for path in sorted(glob.glob(target)) if tamper else []:
    with open(path) as handle:
        doc = json.load(handle)
    if tamper == "verdict":
        doc["result"].update(status="passed", score=1, observed_status="passed")
    elif tamper == "record":
        doc["checks"]["forged"] = dict(doc["checks"]["greets"], check_id="forged")
    else:
        doc["forged"] = True
    with open(path, "w") as handle:
        json.dump(doc, handle)
good = "hello" in open("answer.txt").read()
print(json.dumps({"score": int(good), "reason": "greets" if good else "does not greet"}))
"""

CASES = [
    {"name": "says hello", "expect": "pass", "files": {"answer.txt": "hello there\n"}},
    {"name": "says goodbye", "expect": "fail", "files": {"answer.txt": "goodbye\n"}},
]
JUDGE = (
    "schema_version: 1\nid: greets\ntype: harness_judge\ndescription: Greets.\n"
    "instructions: Does answer.txt greet the reader?\n"
    f"calibration: {json.dumps(CASES)}\n"
)
# A check that fails, whose cached `failed` a forger would flip to a pass.
VICTIM = (
    "schema_version: 1\nid: victim\ntype: deterministic\ndescription: Fails.\n"
    'inputs: ["answer.txt"]\nscript: "raise SystemExit(1)"\n'
)
STATE = ".eval-banana"
RESULTS = f"{STATE}/results"
CACHE = f"{STATE}/cache"
RECORD = f"{STATE}/calibration.json"


def _project(tmp_path: Path) -> Path:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    config = (
        '[core]\nmax_parallel_checks = 1\n\n[cache]\nmode = "on"\n\n'
        '[harness]\nagent = "judge"\ntimeout_seconds = 60\n\n'
        f"[agents.judge]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(agent))}]\n"
        'model_flag = ""\n'
    )
    return init_repo(
        tmp_path / "proj",
        {
            f"{STATE}/config.toml": config,
            ".gitignore": "/.eval-banana/results/\n/.eval-banana/cache/\n",
            "answer.txt": "hello world\n",
            "eval_checks/greets.yaml": JUDGE,
            "eval_checks/victim.yaml": VICTIM,
        },
    )


def _eb(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", *args, "--cwd", str(root)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _record(root: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((root / RECORD).read_text())
    return document


def _samples(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [one for case in entry["outcomes"] for one in case["samples"]]


def _files(root: Path, pattern: str) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.glob(pattern))}


def _calibrated(tmp_path: Path) -> Path:
    """A project with a cached failure, a kept run, earlier run folders and an honest
    calibration record."""
    root = _project(tmp_path)
    for _ in range(2):  # the second reuses every verdict: the cache keeps it as a run
        ran = _eb(root, "run", "--check-id", "victim", "--no-html")
        assert ran.returncode == 1, ran.stdout + ran.stderr
    assert _files(root, f"{CACHE}/entries/*/*.json") and _files(root, f"{CACHE}/runs/*/*.json")
    honest = _eb(root, "calibrate")
    assert honest.returncode == 0, honest.stdout + honest.stderr
    return root


def test_an_honest_calibration_watching_eb_s_files_records_agreement(tmp_path: Path) -> None:
    root = _calibrated(tmp_path)
    cached = _files(root, f"{CACHE}/*/*/*.json")
    again = _eb(root, "calibrate")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "AGREED greets: 2/2 cases agreed" in again.stdout
    assert "eb's own files changed" not in again.stdout + again.stderr
    entry = _record(root)["checks"]["greets"]
    assert entry["agreement"] == 1.0
    assert [one["status"] for one in _samples(entry)] == ["passed", "failed"]
    assert _files(root, f"{CACHE}/*/*/*.json") == cached  # nothing of the cache was dropped
    reused = _eb(root, "run", "--check-id", "victim", "--no-html")
    assert reused.returncode == 1
    assert "eb's own files changed" not in reused.stdout + reused.stderr


# What a forging judge rewrites (a glob, relative to the project), and how.
TARGETS = {
    "cached_verdict": ("verdict", f"{CACHE}/entries/*/*.json"),
    "kept_run": ("scribble", f"{CACHE}/runs/*/*.json"),
    "earlier_run": ("scribble", f"{RESULTS}/2*/report.json"),
    "calibration_record": ("record", RECORD),
}


@pytest.mark.parametrize(
    ("target", "mode"),
    [(target, "detect") for target in TARGETS]
    + [("cached_verdict", "off"), ("calibration_record", "copy")],
)
def test_a_judge_sample_that_forges_eb_s_files_is_an_error_and_nothing_forged_is_kept(
    tmp_path: Path, target: str, mode: str
) -> None:
    root = _calibrated(tmp_path)
    honest_record = _record(root)
    tamper, pattern = TARGETS[target]
    forged = sorted(_files(root, pattern))
    assert forged, pattern
    done = _eb(
        root,
        "calibrate",
        env={
            "TAMPER": tamper,
            "TAMPER_PATH": str(root / pattern),
            "EVAL_BANANA_HARNESS_ISOLATION": mode,
        },
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "DISAGREED greets: 0/2 cases agreed" in done.stdout
    assert "eb's own files changed while judges were calibrated" in done.stderr
    record = _record(root)
    assert set(record["checks"]) == set(honest_record["checks"]) == {"greets"}  # no forgery
    samples = _samples(record["checks"]["greets"])
    assert [(one["status"], one["agreed"]) for one in samples] == [("error", False)] * 2
    first = str(samples[0]["reason"])
    assert first.startswith(f"eb's own files changed while this judge ran: {forged[0]}"), first
    assert "the sample never agrees with its label" in first
    run_dir = Path(record["checks"]["greets"]["run_dir"])
    result = json.loads((run_dir / samples[0]["evidence"]["result"]).read_text())
    assert result["details"]["error_class"] == "isolation"
    assert result["details"]["isolation"]["state_changed"] == forged
    assert result["details"]["isolation"]["status_before"] == "passed"
    if target in ("cached_verdict", "kept_run"):
        # The changed cache files are removed: the next run judges the victim again.
        assert not any((root / path).exists() for path in forged)
        again = _eb(root, "run", "--check-id", "victim", "--no-html")
        assert again.returncode == 1, again.stdout + again.stderr
