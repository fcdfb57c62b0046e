"""`eb calibrate` watches eb's own files while its judges' samples run, as `eb run` does: a
sample whose judge rewrites a cached verdict, a kept run, an earlier run folder or the
calibration record is an isolation `error` (never agreeing), a changed cache file is removed
and the record is written over what it held before, never over the forgery. A record a judge
plants during `eb run` (or a calibration that then stops) is put back as it stood, so the next
run's `require_calibration` gate never trusts it. End to end: a real project in git, a real
`eb run` and `eb calibrate`, and a judge that is a small agent script.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import init_repo

# A judge of answer.txt in the copy it is shown: it passes a greeting and fails anything else,
# so it agrees with every case's label. Told by TAMPER, it first rewrites eb's file (or every
# file of a glob) at TAMPER_PATH, which is outside its copy: through the absolute path.
AGENT = """\
import glob, json, os, shutil, sys, time
tamper, target = os.environ.get("TAMPER", ""), os.environ.get("TAMPER_PATH", "")
if tamper == "plant":  # a record of its choosing put where the gate reads it
    shutil.copyfile(os.environ["PLANTED"], target)
    time.sleep(float(os.environ.get("HANG", "0")))
    tamper = ""
if tamper == "names":  # files in the cache named after a secret, and with a line break
    for name in (os.environ["LEAKED"], "nl\\n::error::injected"):
        open(os.path.join(target, name), "w").close()
    tamper = ""
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
good = "hello" in open("answer.txt").read() or bool(os.environ.get("LENIENT"))
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


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with a cached failure, a kept run, earlier run folders and an honest
    calibration record: made once (three eb processes), and copied by each test that takes it
    (`_calibrated`), which changes only its copy. A copy keeps its cached verdicts and its kept
    run: no part of a key is the project's absolute path."""
    root = _project(tmp_path_factory.mktemp("calibrated"))
    for _ in range(2):  # the second reuses every verdict: the cache keeps it as a run
        ran = _eb(root, "run", "--check-id", "victim", "--no-html")
        assert ran.returncode == 1, ran.stdout + ran.stderr
    assert _files(root, f"{CACHE}/entries/*/*.json") and _files(root, f"{CACHE}/runs/*/*.json")
    honest = _eb(root, "calibrate")
    assert honest.returncode == 0, honest.stdout + honest.stderr
    return root


def _calibrated(template: Path, tmp_path: Path) -> Path:
    """A copy of the `calibrated` project (its git repository, cache and run folders), whose
    judge is still the template's agent script, outside the project, which no test changes."""
    root = tmp_path / "proj"
    shutil.copytree(template, root, symlinks=True)
    return root


def test_an_honest_calibration_watching_eb_s_files_records_agreement(
    calibrated: Path, tmp_path: Path
) -> None:
    root = _calibrated(calibrated, tmp_path)
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
    calibrated: Path, tmp_path: Path, target: str, mode: str
) -> None:
    root = _calibrated(calibrated, tmp_path)
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


# A run of the judge alone under the calibration gate.
GATED = ("run", "--check-id", "greets", "--no-html", "--require-calibration")


def _passing_record(tmp_path: Path, root: Path) -> Path:
    """An honest record on which `greets` passes the gate, kept outside the project: what a
    forging judge plants where the gate reads it (a judge could as well write it itself)."""
    honest = _eb(root, "calibrate")
    assert honest.returncode == 0, honest.stdout + honest.stderr
    kept = tmp_path / "passing.json"
    kept.write_bytes((root / RECORD).read_bytes())
    return kept


def _planting(root: Path, planted: Path, **more: str) -> dict[str, str]:
    return {"TAMPER": "plant", "TAMPER_PATH": str(root / RECORD), "PLANTED": str(planted), **more}


@pytest.mark.parametrize("before", ["no_record", "below_floor"])
def test_a_judge_that_plants_a_passing_record_during_a_run_gets_no_way_past_the_next_gate(
    tmp_path: Path, before: str
) -> None:
    root = _project(tmp_path)
    planted = _passing_record(tmp_path, root)
    if before == "no_record":
        (root / RECORD).unlink()
        refusal, said = "has not been calibrated", "removed: there was none before they started"
    else:  # measured honestly, and found too lenient: it passes the known-bad case
        lenient = _eb(root, "calibrate", env={"LENIENT": "1"})
        assert lenient.returncode == 1, lenient.stdout + lenient.stderr
        refusal, said = "below min_agreement 1", "put back as it was before they started"
    held = (root / RECORD).read_bytes() if (root / RECORD).exists() else None
    refused = _eb(root, *GATED)
    assert refused.returncode == 2 and refusal in refused.stderr, refused.stdout + refused.stderr

    forging = _eb(root, "run", "--check-id", "greets", "--no-html", env=_planting(root, planted))
    assert forging.returncode == 1, forging.stdout + forging.stderr
    assert f"ERROR greets - eb's own files changed while this judge ran: {RECORD}" in forging.stdout
    # What the judge planted is gone: the record holds what it held before the run, and the
    # next run's gate still refuses the judge.
    now = (root / RECORD).read_bytes() if (root / RECORD).exists() else None
    assert now == held
    again = _eb(root, *GATED)
    assert again.returncode == 2, again.stdout + again.stderr
    assert refusal in again.stderr
    assert f"The calibration record {root / RECORD} changed while checks ran" in forging.stderr
    assert said in forging.stderr

    # An honest calibration, then a run: the record is eb's, kept, and lets the judge gate.
    honest = _eb(root, "calibrate")
    assert honest.returncode == 0, honest.stdout + honest.stderr
    recorded = (root / RECORD).read_bytes()
    gated = _eb(root, *GATED)
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert "eb's own files changed" not in gated.stdout + gated.stderr
    assert "The calibration record" not in gated.stderr
    assert (root / RECORD).read_bytes() == recorded


def test_a_calibration_stopped_after_its_judge_planted_a_record_leaves_none(
    tmp_path: Path,
) -> None:
    # Stopped, a calibration records nothing: nor may it leave what a judge wrote meanwhile.
    root = _project(tmp_path)
    planted = _passing_record(tmp_path, root)
    (root / RECORD).unlink()
    calibrating = subprocess.Popen(
        [sys.executable, "-m", "eval_banana", "calibrate", "--cwd", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **_planting(root, planted, HANG="60")},
    )
    try:
        deadline = time.monotonic() + 60
        while not (root / RECORD).exists():  # the judge has planted its record
            assert time.monotonic() < deadline and calibrating.poll() is None
            time.sleep(0.05)
        calibrating.send_signal(signal.SIGINT)
        out, err = calibrating.communicate(timeout=60)
    finally:
        if calibrating.poll() is None:
            calibrating.kill()
            calibrating.communicate()
    assert calibrating.returncode == 3, out + err
    assert "Calibration interrupted; nothing recorded" in err
    assert not (root / RECORD).exists()
    refused = _eb(root, *GATED)
    assert refused.returncode == 2 and "has not been calibrated" in refused.stderr
    assert "removed: there was none before they started" in err


def test_the_warning_about_files_a_judge_named_after_a_secret_is_masked(
    calibrated: Path, tmp_path: Path
) -> None:
    """The console names the changed files as the files eb writes do: a secret in a name is
    `***`, and a line break in one starts no line (a GitHub Actions `::` command)."""
    root = _calibrated(calibrated, tmp_path)
    secret = "SuperSecretValue123"
    done = _eb(
        root,
        "calibrate",
        env={
            "TAMPER": "names",
            "TAMPER_PATH": str(root / CACHE / "entries"),
            "LEAKED": secret,
            "MY_API_KEY": secret,
            "EVAL_BANANA_HARNESS_ISOLATION": "detect",
        },
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "eb's own files changed while judges were calibrated (" in done.stderr
    assert f"{CACHE}/entries/***" in done.stderr
    assert "nl\\x0a::error::injected" in done.stderr
    console = done.stdout + done.stderr
    assert secret not in console
    assert not [line for line in console.splitlines() if line.startswith("::")]
