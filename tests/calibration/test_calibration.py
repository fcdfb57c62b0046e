"""Calibration end to end: `eb calibrate` measures judges on labelled cases, the gate reads it.

The judge is the scripted stand-in (tests/agents/scripted). With `file=answer.txt
contains=hello` it really reads the project it is shown, so a case that writes "hello" into
answer.txt is a known-good case for it and one that writes "goodbye" is a known-bad one; with
`answers=pass` it passes whatever it is shown, which is the judge calibration must catch.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EbResult
from tests.gitrepo import git, init_repo, write
from tests.memlimit import limit_address_space
from tests.processes import eb_process
from tests.sampling.test_repeats import scripted_config

READS_ANSWER = "file=answer.txt contains=hello"
GOOD = {"name": "says hello", "expect": "pass", "files": {"answer.txt": "hello there\n"}}
BAD = {"name": "says goodbye", "expect": "fail", "files": {"answer.txt": "goodbye\n"}}


def judge(
    check_id: str,
    *,
    script: str,
    cases: list[dict[str, Any]] | None,
    model: str | None = None,
    key: str | None = None,
) -> str:
    lines = [
        "schema_version: 1",
        f"id: {check_id}",
        "type: harness_judge",
        f"description: Judge {check_id}.",
        "instructions: |",
        "  Does answer.txt greet the reader?",
        f"  scripted: {script} key={key or check_id}",
    ]
    if model is not None:
        lines.append(f"model: {model}")
    if cases is not None:
        lines.append(f"calibration: {json.dumps(cases)}")  # JSON is YAML
    return "\n".join(lines) + "\n"


class Project:
    def __init__(self, *, root: Path, eb: Callable[..., EbResult]) -> None:
        self.root = root
        self._eb = eb

    def eb(self, *args: str) -> EbResult:
        return self._eb(args[0], "--cwd", str(self.root), *args[1:])

    @property
    def record(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(
            (self.root / ".eval-banana" / "calibration.json").read_text()
        )
        return document

    def write(self, relative: str, text: str) -> None:
        (self.root / relative).write_text(text)


@pytest.fixture
def scripted_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SCRIPTED_STATE", str(tmp_path / "scripted-state"))
    log = tmp_path / "scripted.log"
    monkeypatch.setenv("SCRIPTED_LOG", str(log))
    # The copies go to a temporary folder of this test's own, to be looked at afterwards.
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return log


@pytest.fixture
def make_project(
    tmp_path: Path, eb: Callable[..., EbResult], scripted_env: Path
) -> Callable[..., Project]:
    def make(checks: dict[str, str], *, config_extra: str = "") -> Project:
        root = tmp_path / "proj"
        files: dict[str, str | bytes] = {
            ".eval-banana/config.toml": scripted_config(extra=config_extra),
            ".gitignore": "runs/\n",
            "answer.txt": "hello world\n",
            "docs/notes.md": "notes\n",
        }
        files.update({f"eval_checks/{name}.yaml": text for name, text in checks.items()})
        init_repo(root, files)
        return Project(root=root, eb=eb)

    return make


# Where the judges' check files lie: apart, or in the output folder (`runs/`) beside the runs.
CHECKS_FOLDERS = {
    "output-folder-eb-only": "eval_checks",
    "output-folder-shared": "runs/eval_checks",
}


@pytest.fixture
def make_plain_project(
    tmp_path: Path, eb: Callable[..., EbResult], scripted_env: Path
) -> Callable[..., Project]:
    """A project outside git: no file in its output folder is left out as one git ignores, so
    each counts as the project's unless eb tells it for its own."""

    def make(checks: dict[str, str], *, checks_folder: str, config_extra: str = "") -> Project:
        root = tmp_path / "plain"
        files: dict[str, str | bytes] = {
            ".eval-banana/config.toml": scripted_config(extra=config_extra),
            "answer.txt": "hello world\n",
        }
        files.update({f"{checks_folder}/{name}.yaml": text for name, text in checks.items()})
        write(root, files)
        return Project(root=root, eb=eb)

    return make


@pytest.mark.parametrize("checks_folder", CHECKS_FOLDERS.values(), ids=list(CHECKS_FOLDERS))
def test_calibrating_again_agrees_again_and_keeps_the_record(
    make_plain_project: Callable[..., Project], checks_folder: str
) -> None:
    """The first calibration's evidence folder (`runs/calibrate_<id>/`) made the output folder
    count as the project's, so the next calibration's own evidence looked like its judge's
    writes: every sample an error ('The project changed while this judge ran in its copy'),
    DISAGREED 0/2 and the record overwritten with agreement 0.0. With the user's checks in the
    output folder the first calibration already went so."""
    proj = make_plain_project(
        {"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, BAD])},
        checks_folder=checks_folder,
    )
    for _ in range(2):
        outcome = proj.eb("calibrate")
        assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
        assert "AGREED greets: 2/2 cases agreed" in outcome.stdout
        entry = proj.record["checks"]["greets"]
        assert (entry["cases_agreed"], entry["agreement"]) == (2, 1.0)
    assert len(list((proj.root / "runs").glob("calibrate_*"))) == 2
    assert proj.eb("run", "--require-calibration").exit_code == 0


@pytest.mark.parametrize("checks_folder", CHECKS_FOLDERS.values(), ids=list(CHECKS_FOLDERS))
def test_a_calibration_leaves_every_stored_verdict_reusable(
    make_plain_project: Callable[..., Project], scripted_env: Path, checks_folder: str
) -> None:
    """A calibration's evidence folder counted as project files in the cache key of every check
    without `inputs:`, so the next run judged (and paid for) each of them again."""
    proj = make_plain_project(
        {"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, BAD])},
        checks_folder=checks_folder,
        config_extra='[cache]\nmode = "on"\n',
    )

    def starts() -> int:
        return len(scripted_env.read_text().splitlines())

    assert proj.eb("run").exit_code == 0
    stored = starts()
    assert proj.eb("run").exit_code == 0
    assert starts() == stored  # the verdict cache answers
    calibrated = proj.eb("calibrate")
    assert calibrated.exit_code == 0, calibrated.stdout + calibrated.stderr
    assert starts() == stored + 2  # one sample of each case
    rerun = proj.eb("run")
    assert rerun.exit_code == 0, rerun.stdout + rerun.stderr
    assert "greets: passed (cached" in rerun.stderr + rerun.stdout
    assert starts() == stored + 2  # no judge started


def project_digests(root: Path) -> dict[str, str]:
    """Every file of the project but eb's own output (the run folders, the record)."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [name for name in dirs if name not in (".git", "runs")]
        for name in files:
            path = Path(folder) / name
            relative = path.relative_to(root).as_posix()
            if relative != ".eval-banana/calibration.json":
                found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def test_a_judge_that_tells_good_from_bad_agrees_and_is_recorded(
    make_project: Callable[..., Project], scripted_env: Path, tmp_path: Path
) -> None:
    proj = make_project({"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, BAD])})
    outcome = proj.eb("calibrate")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    assert "AGREED greets: 2/2 cases agreed" in outcome.stdout
    assert "true-pass rate 1.00, true-fail rate 1.00" in outcome.stdout
    assert "[2/2] greets: case" in outcome.stderr  # progress, one line per sample
    entry = proj.record["checks"]["greets"]
    assert (entry["cases"], entry["cases_agreed"], entry["agreement"]) == (2, 2, 1.0)
    assert (entry["true_pass_rate"], entry["true_fail_rate"]) == (1.0, 1.0)
    assert entry["key"]["agent"] == "scripted"
    assert entry["key"]["prompt_version"]
    assert entry["key"]["check_definition_sha256"].startswith("sha256:")
    # Evidence in a calibration folder under the output folder, one set per sample.
    run_dir = Path(entry["run_dir"])
    assert run_dir.parent == proj.root / "runs"
    assert not (run_dir / "stages").exists()  # never taken for a run folder
    for outcome_entry in entry["outcomes"]:
        (sample,) = outcome_entry["samples"]
        for relative in sample["evidence"].values():
            assert (run_dir / relative).is_file()
    # The judge ran in copies in the temporary folder, never in the project, and they are gone.
    starts = [json.loads(line) for line in scripted_env.read_text().splitlines()]
    assert len(starts) == 2
    for start in starts:
        assert not Path(start["cwd"]).is_relative_to(proj.root)
        assert Path(start["cwd"]).is_relative_to(tmp_path / "scratch")
    assert list((tmp_path / "scratch").iterdir()) == []


def test_a_judge_that_passes_its_known_bad_case_is_reported_then_refused(
    make_project: Callable[..., Project],
) -> None:
    proj = make_project({"lenient": judge("lenient", script="answers=pass", cases=[GOOD, BAD])})
    outcome = proj.eb("calibrate")
    assert outcome.exit_code == 1
    assert "DISAGREED lenient: 1/2 cases agreed" in outcome.stdout
    assert "true-pass rate 1.00, true-fail rate 0.00" in outcome.stdout
    assert (
        "case 'says goodbye' (expect fail) sample 1: the judge passed: scripted pass"
        in outcome.stdout
    )
    # The disagreement links the sample's transcript, to read what the judge did.
    lines = outcome.stdout.splitlines()
    after = lines[lines.index(next(line for line in lines if "says goodbye" in line)) + 1]
    assert after.startswith("    transcript: ") and after.endswith(".transcript.jsonl")
    assert Path(after.removeprefix("    transcript: ")).is_file()
    entry = proj.record["checks"]["lenient"]
    assert (entry["agreement"], entry["true_fail_rate"]) == (0.5, 0.0)
    # Without the gate the run goes ahead; with it, the judge is refused before it runs.
    assert proj.eb("run").exit_code == 0
    refused = proj.eb("run", "--require-calibration")
    assert refused.exit_code == 2
    assert "Judge check 'lenient' agreed with its calibration cases on 0.50" in refused.stderr
    assert "min_agreement 1" in refused.stderr
    # eb validate: a warning when the gate is off, an error when it is on.
    warned = proj.eb("validate")
    assert warned.exit_code == 0
    assert "warning: Judge check 'lenient' agreed" in warned.stderr
    assert proj.eb("validate", "--require-calibration").exit_code == 2


def test_a_changed_model_or_definition_invalidates_the_record(
    make_project: Callable[..., Project],
) -> None:
    proj = make_project({"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, BAD])})
    assert proj.eb("calibrate").exit_code == 0
    assert proj.eb("run", "--require-calibration").exit_code == 0

    other_model = proj.eb("run", "--require-calibration", "--harness-model", "bigger")
    assert other_model.exit_code == 2
    assert "Judge check 'greets' was calibrated under another key: its model" in (
        other_model.stderr
    )
    as_json = proj.eb("validate", "--json", "--require-calibration", "--harness-model", "bigger")
    (error,) = json.loads(as_json.stdout)["errors"]
    assert error["field_path"] == "calibration"
    assert error["file"].endswith("eval_checks/greets.yaml")

    # Editing the judge (here its instructions) changes its definition digest.
    path = "eval_checks/greets.yaml"
    proj.write(path, (proj.root / path).read_text().replace("greet the", "greet each"))
    edited = proj.eb("run", "--require-calibration")
    assert edited.exit_code == 2
    assert "its definition" in edited.stderr
    # Calibrating again under the new key lets it gate again.
    assert proj.eb("calibrate").exit_code == 0
    assert proj.eb("run", "--require-calibration").exit_code == 0


def test_the_agents_variables_and_output_dialect_are_in_the_calibration_key(
    make_project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key left out what the verdict cache keys a judge on besides: `[harness.env]` (where
    a model, a gateway or a key goes), the agent's provider_env and fixed_env, and its
    output_dialect. A judge calibrated with `JUDGE_MODEL = "strict"` kept passing the gate after
    `[harness.env]` chose "lenient", a model nobody had measured."""
    proj = make_project({"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, BAD])})
    config = proj.root / ".eval-banana" / "config.toml"
    written = config.read_text()  # ends in [agents.scripted]: `agent` lines go on after it
    secret = "sk-written-out-0123456789abcdef"
    token = "token-from-the-environment-0123456789"
    monkeypatch.setenv("CAL_TOKEN", token)

    def configure(*, model: str, agent: str = "") -> None:
        config.write_text(
            written
            + 'provider_env = { GATEWAY_TOKEN = "{env:CAL_TOKEN}" }\n'
            + agent
            + f'\n[harness.env]\nJUDGE_MODEL = "{model}"\nGATEWAY_KEY = "{secret}"\n'
        )

    def gate() -> EbResult:
        return proj.eb("validate", "--require-calibration")

    configure(model="strict")
    calibrated = proj.eb("calibrate")
    assert calibrated.exit_code == 0, calibrated.stdout + calibrated.stderr
    assert gate().exit_code == 0
    # The record is committed and shared: it holds the variables' digest, never their values.
    text = (proj.root / ".eval-banana" / "calibration.json").read_text()
    assert secret not in text and token not in text
    # As in the cache key, a placeholder counts by its text: a rotated token changes nothing.
    monkeypatch.setenv("CAL_TOKEN", "a-rotated-token")
    assert gate().exit_code == 0
    changed_words = {
        "agent variables ([harness.env], the agent's provider_env and fixed_env)": [
            {"model": "lenient"},
            {"model": "strict", "agent": 'fixed_env = { JUDGE_MODE = "lax" }\n'},
        ],
        "output dialect": [{"model": "strict", "agent": 'output_dialect = "claude"\n'}],
    }
    for words, configurations in changed_words.items():
        for configuration in configurations:
            configure(**configuration)
            refused = gate()
            assert refused.exit_code == 2, configuration
            assert (
                f"Judge check 'greets' was calibrated under another key: its {words} changed"
                in refused.stderr
            )
    configure(model="strict")
    assert gate().exit_code == 0
    key = proj.record["checks"]["greets"]["key"]
    assert key["agent_variables_sha256"].startswith("sha256:")
    assert key["output_dialect"] == "text"

    # A record an older eb wrote has no such parts in its key: measured under another key.
    document = proj.record
    for name in ("agent_variables_sha256", "output_dialect"):
        del document["checks"]["greets"]["key"][name]
    proj.write(".eval-banana/calibration.json", json.dumps(document, indent=2))
    older = proj.eb("run", "--require-calibration")
    assert older.exit_code == 2
    assert (
        "Judge check 'greets' was calibrated under another key, of an older eb that did not "
        "record its agent variables ([harness.env], the agent's provider_env and fixed_env) or "
        "output dialect" in older.stderr
    )
    assert "Run `eb calibrate --check-id greets`" in older.stderr
    assert not any((proj.root / "runs").glob("*/report.json"))  # nothing ran
    assert proj.eb("calibrate").exit_code == 0
    assert proj.eb("run", "--require-calibration").exit_code == 0


def test_calibration_never_changes_a_project_file(
    make_project: Callable[..., Project], tmp_path: Path
) -> None:
    cases = [
        GOOD,
        {"name": "answer deleted", "expect": "fail", "files": {"answer.txt": None}},
        {
            "name": "new files",
            "expect": "pass",
            "files": {
                "new/deep/file.txt": "x",
                "docs/notes.md": "rewritten",
                "answer.txt": "hello",
            },
        },
    ]
    proj = make_project({"greets": judge("greets", script=READS_ANSWER, cases=cases)})
    before = project_digests(proj.root)
    status_before = git(proj.root, "status", "--porcelain", "--untracked-files=all")
    outcome = proj.eb("calibrate", "--repeats", "2")
    assert outcome.exit_code == 0, outcome.stdout
    assert project_digests(proj.root) == before
    status_after = git(proj.root, "status", "--porcelain", "--untracked-files=all")
    # The record is the one file calibration adds to the project (the run folder is ignored).
    assert status_after.splitlines() == sorted(
        [*status_before.splitlines(), "?? .eval-banana/calibration.json"]
    )
    assert not (proj.root / "new").exists()
    assert list((tmp_path / "scratch").iterdir()) == []


def test_many_uncalibrated_judges_are_counted_past_the_first_twenty_warnings(
    make_project: Callable[..., Project],
) -> None:
    from eval_banana.stages.guard import SHOWN_GATE_WARNINGS

    count = SHOWN_GATE_WARNINGS + 5
    proj = make_project(
        {f"j{n:02d}": judge(f"j{n:02d}", script="answers=pass", cases=None) for n in range(count)}
    )
    warned = proj.eb("validate")
    assert warned.exit_code == 0, warned.stderr
    assert warned.stderr.count("has no calibration cases") == SHOWN_GATE_WARNINGS
    assert "...and 5 more judge checks the calibration gate would refuse" in warned.stderr
    # With the gate on, every refusal is named.
    refused = proj.eb("validate", "--require-calibration")
    assert refused.exit_code == 2
    assert refused.stderr.count("has no calibration cases") == count


def test_require_calibration_refuses_judges_without_cases_or_record(
    make_project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = make_project(
        {
            "bare": judge("bare", script="answers=pass", cases=None),
            "never": judge("never", script=READS_ANSWER, cases=[GOOD, BAD]),
        }
    )
    # The gate off: eb validate warns about both judges, a judge with no cases at all as much
    # as one with cases but no record; on, both are errors.
    warned = proj.eb("validate")
    assert warned.exit_code == 0, warned.stderr
    assert "warning: Judge check 'bare' has no calibration cases" in warned.stderr
    assert "warning: Judge check 'never' has not been calibrated" in warned.stderr
    refused = proj.eb("validate", "--require-calibration")
    assert refused.exit_code == 2
    assert "Judge check 'bare' has no calibration cases" in refused.stderr
    assert "Judge check 'never' has not been calibrated" in refused.stderr
    monkeypatch.setenv("EVAL_BANANA_HARNESS_REQUIRE_CALIBRATION", "1")
    refused = proj.eb("run")
    assert refused.exit_code == 2
    assert "Judge check 'bare' has no calibration cases" in refused.stderr
    assert "Judge check 'never' has not been calibrated" in refused.stderr
    assert not any((proj.root / "runs").glob("*/report.json"))  # nothing ran
    # Calibrating the one with cases leaves only the bare judge refused.
    assert proj.eb("calibrate").exit_code == 0
    still = proj.eb("run")
    assert still.exit_code == 2
    assert "'bare'" in still.stderr and "'never'" not in still.stderr
    # The gate off: the bare judge is still a warning, the calibrated one no longer.
    monkeypatch.delenv("EVAL_BANANA_HARNESS_REQUIRE_CALIBRATION")
    warned = proj.eb("validate")
    assert warned.exit_code == 0
    assert "warning: Judge check 'bare' has no calibration cases" in warned.stderr
    assert "'never'" not in warned.stderr


def test_require_calibration_refuses_a_judge_calibrated_on_one_label_only(
    make_project: Callable[..., Project],
) -> None:
    # A judge that passes everything agrees with every known-good case, and one that fails
    # everything with every known-bad one: both agree fully, and neither has shown anything.
    proj = make_project(
        {
            "yes_man": judge("yes_man", script="answers=pass", cases=[GOOD]),
            "no_man": judge("no_man", script="answers=fail", cases=[BAD]),
        }
    )
    assert eb_process(proj.root, "calibrate").returncode == 0
    source = proj.root / "eval_checks" / "yes_man.yaml"
    refusals = {
        "yes_man": "Judge check 'yes_man' has no known-bad calibration case (expect: fail), so a "
        "judge that passes everything would agree with all of its cases",
        "no_man": "Judge check 'no_man' has no known-good calibration case (expect: pass), so a "
        "judge that fails everything would agree with all of its cases",
    }
    # The gate off: eb validate warns, as of any judge the gate would refuse.
    warned = eb_process(proj.root, "validate")
    assert warned.returncode == 0, warned.stderr
    for message in refusals.values():
        assert f"warning: {message}" in warned.stderr
    assert f"`calibration:` in {source} (see docs/judges.md)" in warned.stderr
    refused = eb_process(proj.root, "validate", "--require-calibration", "--json")
    assert refused.returncode == 2
    errors = {entry["message"]: entry for entry in json.loads(refused.stdout)["errors"]}
    assert sorted(errors) == sorted(refusals.values())
    yes_man = errors[refusals["yes_man"]]
    assert (yes_man["file"], yes_man["field_path"]) == (str(source), "calibration")
    assert yes_man["hint"].startswith("Add a known-bad case (`expect: fail`) to `calibration:`")
    ran = eb_process(proj.root, "run", "--require-calibration")
    assert ran.returncode == 2 and refusals["yes_man"] in ran.stderr
    assert not any((proj.root / "runs").glob("*/report.json"))  # nothing ran


def test_min_agreement_sets_how_much_agreement_is_enough(
    make_project: Callable[..., Project],
) -> None:
    mislabelled = {"name": "mislabelled", "expect": "fail", "files": {"answer.txt": "hello"}}
    proj = make_project(
        {"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, BAD, mislabelled])}
    )
    outcome = proj.eb("calibrate")
    assert outcome.exit_code == 1
    entry = proj.record["checks"]["greets"]
    assert entry["agreement"] == pytest.approx(2 / 3)
    assert entry["true_fail_rate"] == pytest.approx(1 / 2)
    assert proj.eb("run", "--require-calibration").exit_code == 2
    assert proj.eb("run", "--require-calibration", "--min-agreement", "0.7").exit_code == 2
    # Agreement 0.67 reaches 0.6, but the true-fail rate (0.5) must reach it too.
    short = proj.eb("run", "--require-calibration", "--min-agreement", "0.6")
    assert short.exit_code == 2 and "has a true-fail rate 0.50" in short.stderr
    assert proj.eb("run", "--require-calibration", "--min-agreement", "0.5").exit_code == 0


def _known(expect: str, number: int) -> dict[str, Any]:
    good = expect == "pass"
    return {**(GOOD if good else BAD), "name": f"{'good' if good else 'bad'} {number}"}


@pytest.mark.parametrize(
    ("script", "outnumbered", "refusal"),
    [
        (
            "answers=pass",
            "fail",
            "has a true-fail rate 0.00 (the share of its samples on known-bad cases it failed: "
            "it would let defects through), below min_agreement 0.75 (--min-agreement 0.75), "
            "though it agreed with its calibration cases on 0.75 of its samples (3 of 4 cases "
            "agreed): min_agreement 0.75 holds for its known-good and its known-bad cases each",
        ),
        (
            "answers=fail",
            "pass",
            "has a true-pass rate 0.00 (the share of its samples on known-good cases it passed: "
            "it would block good work), below min_agreement 0.75",
        ),
    ],
)
def test_min_agreement_holds_for_each_label_so_outnumbered_cases_count(
    make_project: Callable[..., Project], script: str, outnumbered: str, refusal: str
) -> None:
    """A judge that passes everything, measured on three known-good cases and one known-bad,
    agrees on 0.75 of its samples with a true-fail rate of 0: `--min-agreement 0.75` let it
    gate, and it passed a bad input. Each label's rate is held to min_agreement too."""
    other = "pass" if outnumbered == "fail" else "fail"
    cases = [_known(other, number) for number in (1, 2, 3)] + [_known(outnumbered, 1)]
    proj = make_project({"greets": judge("greets", script=script, cases=cases)})
    assert proj.eb("calibrate").exit_code == 1
    entry = proj.record["checks"]["greets"]
    assert entry["agreement"] == 0.75
    refused = proj.eb("run", "--require-calibration", "--min-agreement", "0.75")
    assert refused.exit_code == 2, refused.stdout
    assert f"Judge check 'greets' {refusal}" in refused.stderr
    assert "or lower --min-agreement." in refused.stderr
    assert not any((proj.root / "runs").glob("*/report.json"))  # the judge never ran
    warned = proj.eb("validate", "--min-agreement", "0.75")
    assert warned.exit_code == 0 and f"warning: Judge check 'greets' {refusal}" in warned.stderr
    # Only a floor no label misses lets it gate.
    assert proj.eb("validate", "--require-calibration", "--min-agreement", "0").exit_code == 0


def test_repeats_compare_every_sample_with_its_label(
    make_project: Callable[..., Project],
) -> None:
    proj = make_project(
        {"wobbly": judge("wobbly", script="answers=pass,fail", cases=[GOOD])},
        config_extra="repeats = 1\n",
    )
    outcome = proj.eb("calibrate", "--repeats", "4")
    assert outcome.exit_code == 1
    entry = proj.record["checks"]["wobbly"]
    assert entry["samples_per_case"] == 4
    assert entry["true_pass_rate"] == 0.5 and entry["true_fail_rate"] is None
    statuses = sorted(sample["status"] for sample in entry["outcomes"][0]["samples"])
    assert statuses == ["failed", "failed", "passed", "passed"]
    assert "true-fail rate n/a" in outcome.stdout


# One sample at a time, in order (the good case's five, then the bad case's): the judge passes
# the good case every time and the bad case once in five.
ONCE_IN_FIVE = "answers=pass,pass,pass,pass,pass,pass,fail,fail,fail,fail"


def test_a_judge_is_measured_by_the_verdict_its_aggregate_rule_decides(
    make_project: Callable[..., Project],
) -> None:
    """A judge with `repeats: 5, aggregate: any` that passes its known-bad case in one sample
    of five lets that defect through every time, under its own rule. Calibration scored each
    sample alone (agreement 0.90, true-fail rate 0.80) and `--min-agreement 0.8` let it gate."""
    text = judge("anyone", script=ONCE_IN_FIVE, cases=[GOOD, BAD])
    proj = make_project({"anyone": text + "repeats: 5\naggregate: any\n"})
    outcome = proj.eb("calibrate", "--max-parallel-checks", "1")
    assert outcome.exit_code == 1, outcome.stdout + outcome.stderr
    refusal = (
        "Judge check 'anyone' agreed with its calibration cases on 0.50 of its verdicts (each "
        "decided from 5 samples by its rule 'any', as a run decides it), below min_agreement "
        "0.8 (1 of 2 cases agreed; --min-agreement 0.8); so is its true-fail rate 0.00"
    )
    refused = proj.eb("run", "--require-calibration", "--min-agreement", "0.8")
    assert refused.exit_code == 2, refused.stdout
    assert refusal in refused.stderr
    assert not any((proj.root / "runs").glob("*/report.json"))  # the judge never ran

    assert (
        "DISAGREED anyone: 1/2 cases agreed (5 samples each, a verdict of 5 by its rule 'any')\n"
        "  true-pass rate 1.00, true-fail rate 0.00, agreement 0.50\n"
        "  each sample alone: true-pass rate 1.00, true-fail rate 0.80, agreement 0.90\n"
        "  - case 'says goodbye' (expect fail) samples 1-5: the check passed by its rule 'any' "
        "(1 of 5 samples passed)\n"
        "  - case 'says goodbye' (expect fail) sample 1: the judge passed: scripted pass"
    ) in outcome.stdout
    entry = proj.record["checks"]["anyone"]
    assert (entry["aggregate"], entry["samples_per_verdict"]) == ("any", 5)
    assert (entry["cases_agreed"], entry["agreement"], entry["true_fail_rate"]) == (1, 0.5, 0.0)
    assert [outcome["agreed"] for outcome in entry["outcomes"]] == [True, False]
    assert (entry["sample_agreement"], entry["sample_true_fail_rate"]) == (0.9, 0.8)

    # A record of an older eb scored each sample alone, and has no rule: refused.
    document = proj.record
    older = document["checks"]["anyone"]
    for name in ("aggregate", "samples_per_verdict", "sample_agreement"):
        del older[name]
    del older["sample_true_pass_rate"], older["sample_true_fail_rate"]
    older.update(agreement=0.9, true_fail_rate=0.8, cases_agreed=1)
    proj.write(".eval-banana/calibration.json", json.dumps(document, indent=2))
    stale = proj.eb("validate", "--require-calibration", "--min-agreement", "0.8")
    assert stale.exit_code == 2
    assert (
        "Judge check 'anyone' has a calibration record of an older eb, which scored each "
        "sample alone, not the verdict its aggregate rule decides from its samples"
    ) in stale.stderr
    assert "Run `eb calibrate --check-id anyone`" in stale.stderr

    # A record that names a kinder rule than the check's is not the check's record.
    assert proj.eb("calibrate", "--max-parallel-checks", "1").exit_code == 1
    document = proj.record
    document["checks"]["anyone"]["aggregate"] = "all"
    proj.write(".eval-banana/calibration.json", json.dumps(document, indent=2))
    forged = proj.eb("validate", "--require-calibration", "--min-agreement", "0")
    assert forged.exit_code == 2
    assert "its aggregate 'all' is not the check's rule 'any'" in forged.stderr


def test_a_run_that_samples_a_judge_is_gated_on_the_verdicts_it_decides(
    make_project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A judge whose file sets `aggregate: any` but no repeats is sampled by `[core] repeats`
    in a run: calibrated one sample per verdict, it may gate a run that takes one sample of it,
    and a run that decides it from five is gated on the verdicts of five."""
    text = judge("anyone", script=ONCE_IN_FIVE, cases=[GOOD, BAD])
    proj = make_project({"anyone": text + "aggregate: any\n"})
    outcome = proj.eb("calibrate", "--repeats", "5", "--max-parallel-checks", "1")
    assert outcome.exit_code == 1, outcome.stdout + outcome.stderr
    assert "DISAGREED anyone: 1/2 cases agreed (5 samples each)\n" in outcome.stdout
    entry = proj.record["checks"]["anyone"]
    assert (entry["samples_per_verdict"], entry["agreement"], entry["true_fail_rate"]) == (
        1,
        0.9,
        0.8,
    )
    # One sample per run: each sample is one of its verdicts.
    gate = ("validate", "--require-calibration", "--min-agreement", "0.8")
    assert proj.eb(*gate).exit_code == 0
    monkeypatch.setenv("EVAL_BANANA_REPEATS", "5")
    by_five = proj.eb(*gate)
    assert by_five.exit_code == 2
    assert (
        "agreed with its calibration cases on 0.50 of its verdicts (each decided from 5 "
        "samples by its rule 'any', as a run decides it)"
    ) in by_five.stderr
    monkeypatch.setenv("EVAL_BANANA_REPEATS", "3")
    by_three = proj.eb(*gate)
    assert by_three.exit_code == 2
    assert (
        "Judge check 'anyone' is decided in this run from 3 samples by its rule 'any' "
        "(EVAL_BANANA_REPEATS=3), but its calibration took 5 samples per case, which make no "
        "whole number of such verdicts"
    ) in by_three.stderr
    assert "Run `eb calibrate --check-id anyone --repeats 3`" in by_three.stderr


def test_a_rerun_of_execute_with_other_repeats_is_gated_on_the_verdicts_it_decides(
    make_project: Callable[..., Project],
) -> None:
    """The guard gated the run's judges under its repeats (one sample each); `eb stage execute
    --repeats 5` then decided them from five samples, which the gate refuses in a run with
    --repeats 5, and ran them unrefused: the gate is applied again under the rerun's repeats."""
    text = judge("anyone", script=ONCE_IN_FIVE, cases=[GOOD, BAD])
    proj = make_project({"anyone": text + "aggregate: any\n"})
    assert proj.eb("calibrate", "--repeats", "5", "--max-parallel-checks", "1").exit_code == 1
    ran = proj.eb("run", "--require-calibration", "--min-agreement", "0.8")
    assert ran.exit_code in (0, 1), ran.stdout + ran.stderr  # the guard let it gate
    rerun = proj.eb("stage", "execute", "--repeats", "5")
    assert rerun.exit_code == 2, rerun.stdout + rerun.stderr
    assert (
        "agreed with its calibration cases on 0.50 of its verdicts (each decided from 5 "
        "samples by its rule 'any', as a run decides it)"
    ) in rerun.stderr
    # Under the repeats the guard gated, the rerun runs.
    assert proj.eb("stage", "execute").exit_code == 0


def test_cases_run_concurrently_within_max_parallel_checks(
    make_project: Callable[..., Project],
) -> None:
    # The barrier lets a sample answer only once all four have started (it counts starts of
    # its `answers=` script): run one at a time, the first would wait in vain and error.
    other_good = {**GOOD, "name": "says hello too"}
    proj = make_project(
        {"greets": judge("greets", script="answers=pass barrier=4", cases=[GOOD, other_good])}
    )
    outcome = proj.eb("calibrate", "--repeats", "2", "--max-parallel-checks", "4")
    assert outcome.exit_code == 0, outcome.stdout


def test_an_erroring_sample_never_agrees(make_project: Callable[..., Project]) -> None:
    proj = make_project({"broken": judge("broken", script="answers=error", cases=[GOOD, BAD])})
    outcome = proj.eb("calibrate")
    assert outcome.exit_code == 1
    assert "0/2 cases agreed" in outcome.stdout
    assert "the judge errored" in outcome.stdout


def test_only_selected_judges_are_calibrated_and_others_kept(
    make_project: Callable[..., Project],
) -> None:
    proj = make_project(
        {
            "one": judge("one", script=READS_ANSWER, cases=[GOOD, BAD]),
            "two": judge("two", script=READS_ANSWER, cases=[GOOD, BAD]),
        }
    )
    assert proj.eb("calibrate", "--check-id", "one").exit_code == 0
    assert set(proj.record["checks"]) == {"one"}
    first = proj.record["checks"]["one"]["measured_at"]
    assert proj.eb("calibrate", "--check-id", "two").exit_code == 0
    assert set(proj.record["checks"]) == {"one", "two"}
    assert proj.record["checks"]["one"]["measured_at"] == first


def test_no_judge_with_cases_is_a_setup_error(make_project: Callable[..., Project]) -> None:
    proj = make_project({"bare": judge("bare", script="answers=pass", cases=None)})
    outcome = proj.eb("calibrate")
    assert outcome.exit_code == 2
    assert "No selected harness_judge check has calibration cases" in outcome.stderr


def test_a_case_path_outside_the_project_is_a_definition_error(
    make_project: Callable[..., Project],
) -> None:
    escaping = {"name": "escape", "expect": "fail", "files": {"../outside.txt": "x"}}
    proj = make_project({"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, escaping])})
    for command in ("validate", "calibrate"):
        outcome = proj.eb(command)
        assert outcome.exit_code == 2
        assert "eval_checks/greets.yaml" in outcome.stderr
        assert "calibration.1.files" in outcome.stderr
        assert "must stay inside the project" in outcome.stderr
    assert not (proj.root.parent / "outside.txt").exists()


def test_a_damaged_record_is_named(make_project: Callable[..., Project]) -> None:
    proj = make_project({"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, BAD])})
    proj.write(".eval-banana/calibration.json", '{"checks": 1}')
    refused = proj.eb("run", "--require-calibration")
    assert refused.exit_code == 2
    assert "calibration.json is not a calibration record" in refused.stderr
    # eb calibrate replaces it.
    assert proj.eb("calibrate").exit_code == 0
    assert proj.eb("run", "--require-calibration").exit_code == 0


def test_schema_is_published(eb: Callable[..., EbResult]) -> None:
    outcome = eb("schema", "calibration")
    schema = json.loads(outcome.stdout)
    assert schema["$id"].endswith("calibration.schema.json")
    assert "checks" in schema["properties"]


def test_case_files_never_write_through_a_symlink(tmp_path: Path) -> None:
    from eval_banana.calibration.cases import CaseFileError, lay_files

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.txt").write_text("original")
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "linked_dir").symlink_to(outside)
    (copy / "linked_file.txt").symlink_to(outside / "target.txt")
    # A file behind a symlinked folder could land anywhere: refused.
    with pytest.raises(CaseFileError, match="is a symlink"):
        lay_files(base=copy, files={"linked_dir/target.txt": "changed"})
    # A symlinked file is replaced by the case's file, never written through.
    lay_files(base=copy, files={"linked_file.txt": "case text"})
    assert not (copy / "linked_file.txt").is_symlink()
    assert (copy / "linked_file.txt").read_text() == "case text"
    assert (outside / "target.txt").read_text() == "original"
    # null deletes, and deleting an absent file is no error.
    lay_files(base=copy, files={"linked_file.txt": None, "never_there.txt": None})
    assert not (copy / "linked_file.txt").exists()


def test_status_shows_the_guard_stale_after_the_record_changes(
    make_project: Callable[..., Project],
) -> None:
    proj = make_project({"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, BAD])})
    assert proj.eb("calibrate").exit_code == 0
    assert proj.eb("run", "--require-calibration").exit_code == 0
    before = proj.eb("status")
    assert before.exit_code == 0, before.stdout + before.stderr
    assert "stale" not in before.stdout
    # Measured again (two samples a case): the record the guard read has other bytes now.
    assert proj.eb("calibrate", "--repeats", "2").exit_code == 0
    after = proj.eb("status")
    lines = {line.split()[0]: line for line in after.stdout.splitlines()[1:] if line.strip()}
    guard_line = lines["guard"]
    assert "stale" in guard_line and "calibration.json changed" in guard_line, after.stdout
    for stage in ("execute", "score", "report"):
        assert "stale" in lines[stage], after.stdout
    # A run with the gate off never read the record, so a new one does not make it stale.
    assert proj.eb("run").exit_code == 0
    assert proj.eb("calibrate").exit_code == 0
    assert "stale" not in proj.eb("status").stdout


def test_a_retried_attempt_s_evidence_keeps_no_secret(
    make_project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first start breaks, printing the secret on stderr; the retry answers. Both attempts'
    # files stay as evidence, and both must be masked, as in a run.
    secret = "calibration-secret-7f3a9c"
    monkeypatch.setenv("CALIBRATION_API_TOKEN", secret)
    monkeypatch.setenv("EVAL_BANANA_HARNESS_RETRIES", "1")
    script = "answers=error,pass echo=CALIBRATION_API_TOKEN"
    good = {**GOOD, "name": "any"}
    proj = make_project({"greets": judge("greets", script=script, cases=[good])})
    outcome = proj.eb("calibrate")
    assert outcome.exit_code == 0, outcome.stdout + outcome.stderr
    run_dir = Path(proj.record["checks"]["greets"]["run_dir"])
    files = sorted(path for path in run_dir.rglob("*") if path.is_file())
    (broken,) = [path for path in files if path.name.endswith(".attempt1.stderr.txt")]
    assert "told to break" in broken.read_text()
    for path in [*files, proj.root / ".eval-banana" / "calibration.json"]:
        assert secret not in path.read_text(errors="replace"), path
    # On the console too: the runner's warning about the broken start quotes the agent.
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", "calibrate", "--cwd", str(proj.root)],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "told to break (***)" in done.stderr
    assert secret not in outcome.stdout + outcome.stderr + done.stdout + done.stderr


def _edit_record(proj: Project, change: Callable[[dict[str, Any]], None]) -> None:
    """Edit calibration.json as a hand or a tool would (json.dumps writes NaN as NaN)."""
    document = proj.record
    change(document["checks"]["greets"])
    proj.write(".eval-banana/calibration.json", json.dumps(document, indent=2))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("agreement", float("nan")),
        ("true_pass_rate", float("nan")),
        ("agreement", float("inf")),
        ("true_fail_rate", -0.5),
        ("agreement", 1.5),
    ],
)
def test_a_figure_that_is_not_a_finite_ratio_makes_the_record_unusable(
    make_project: Callable[..., Project], field: str, value: float
) -> None:
    proj = make_project({"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, BAD])})
    assert proj.eb("calibrate").exit_code == 0
    _edit_record(proj, lambda entry: entry.update({field: value}))
    refused = proj.eb("run", "--require-calibration")
    assert refused.exit_code == 2, refused.stdout
    record = proj.root / ".eval-banana" / "calibration.json"
    assert f"{record} is not a calibration record" in refused.stderr
    assert f"$.checks.greets.{field}" in refused.stderr
    assert not any((proj.root / "runs").glob("*/report.json"))  # the judge never ran
    # eb validate names it too: a warning with the gate off, an error with it on.
    warned = proj.eb("validate")
    assert warned.exit_code == 0 and f"$.checks.greets.{field}" in warned.stderr
    assert proj.eb("validate", "--require-calibration").exit_code == 2


def test_a_nan_agreement_is_named_with_its_field(make_project: Callable[..., Project]) -> None:
    proj = make_project({"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, BAD])})
    assert proj.eb("calibrate").exit_code == 0
    _edit_record(proj, lambda entry: entry.update(agreement=float("nan")))
    as_json = proj.eb("validate", "--json", "--require-calibration")
    (error,) = json.loads(as_json.stdout)["errors"]
    assert error["field_path"] == "$.checks.greets.agreement"
    assert error["file"].endswith(".eval-banana/calibration.json")
    assert "is nan, not a finite number" in error["message"]


def _claims_full_agreement(entry: dict[str, Any]) -> None:
    entry.update(agreement=1.0, true_fail_rate=1.0, cases_agreed=2)


def _and_flags(entry: dict[str, Any]) -> None:
    _claims_full_agreement(entry)
    for outcome in entry["outcomes"]:
        outcome["agreed"] = True
        for sample in outcome["samples"]:
            sample["agreed"] = True


def _relabelled(entry: dict[str, Any]) -> None:
    # The known-bad case the judge passed, relabelled as known-good: every figure follows.
    _claims_full_agreement(entry)
    entry.update(true_pass_rate=1.0, true_fail_rate=None)
    outcome = entry["outcomes"][1]
    outcome.update(expect="pass", agreed=True)
    outcome["samples"][0]["agreed"] = True


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (_claims_full_agreement, "agreement is 1, its samples give 0.5"),
        (_and_flags, "outcomes[1].samples[0].agreed is true for a sample that passed a case "),
        (_relabelled, "are not the check's calibration cases"),
    ],
)
def test_a_record_contradicting_its_own_cases_never_lets_the_judge_gate(
    make_project: Callable[..., Project], change: Callable[[dict[str, Any]], None], said: str
) -> None:
    # The lenient judge passes its known-bad case: agreement 0.5. The record is then edited to
    # claim full agreement; its per-case results still say otherwise.
    proj = make_project({"greets": judge("greets", script="answers=pass", cases=[GOOD, BAD])})
    assert proj.eb("calibrate").exit_code == 1
    _edit_record(proj, change)
    refused = proj.eb("run", "--require-calibration")
    assert refused.exit_code == 2, refused.stdout
    assert (
        "Judge check 'greets' has a calibration record that disagrees with its own per-case "
        "results" in refused.stderr
    )
    assert said in refused.stderr
    assert not any((proj.root / "runs").glob("*/report.json"))
    warned = proj.eb("validate")
    assert warned.exit_code == 0 and "disagrees with its own per-case results" in warned.stderr
    assert proj.eb("validate", "--require-calibration").exit_code == 2


def test_the_gate_uses_the_figures_of_the_samples(make_project: Callable[..., Project]) -> None:
    from eval_banana.calibration.figures import figure_problems, figures_of
    from eval_banana.models.calibration import JudgeCalibration

    proj = make_project({"greets": judge("greets", script="answers=pass", cases=[GOOD, BAD])})
    assert proj.eb("calibrate").exit_code == 1
    entry = JudgeCalibration.model_validate(proj.record["checks"]["greets"])
    # What eb calibrate wrote agrees with itself, and the figures computed again are its own.
    assert figure_problems(entry) == []
    measured = figures_of(entry.outcomes, rule="all", size=1)
    assert (
        (measured.agreement, measured.true_pass_rate, measured.true_fail_rate)
        == (
            entry.agreement,
            entry.true_pass_rate,
            entry.true_fail_rate,
        )
        == (0.5, 1.0, 0.0)
    )
    # Agreement 0.5 reaches a floor of 0.5, but its true-fail rate of 0 does not: it passes
    # everything, and each label's rate must reach the floor too.
    refused = proj.eb("run", "--require-calibration", "--min-agreement", "0.5")
    assert refused.exit_code == 2 and "has a true-fail rate 0.00" in refused.stderr
    assert proj.eb("run", "--require-calibration", "--min-agreement", "0").exit_code == 0


def test_the_gate_names_where_min_agreement_was_set(
    make_project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Agreement 0.5 against a floor of 0.6: the fix is to lower it where it was set, which
    # is not the config file when a variable or a flag set it.
    proj = make_project({"greets": judge("greets", script="answers=pass", cases=[GOOD, BAD])})
    assert proj.eb("calibrate").exit_code == 1
    config_file = proj.root / ".eval-banana" / "config.toml"
    config_file.write_text(
        config_file.read_text().replace("[harness]\n", "[harness]\nmin_agreement = 0.4\n")
    )
    monkeypatch.setenv("EVAL_BANANA_HARNESS_MIN_AGREEMENT", "0.6")
    by_variable = proj.eb("validate", "--require-calibration")
    assert by_variable.exit_code == 2
    assert (
        "below min_agreement 0.6 (1 of 2 cases agreed; EVAL_BANANA_HARNESS_MIN_AGREEMENT=0.6)"
        in by_variable.stderr
    )
    assert "or lower EVAL_BANANA_HARNESS_MIN_AGREEMENT." in by_variable.stderr
    assert "[harness] min_agreement" not in by_variable.stderr
    by_flag = proj.eb("validate", "--require-calibration", "--min-agreement", "0.7")
    assert "cases agreed; --min-agreement 0.7)" in by_flag.stderr
    assert "or lower --min-agreement." in by_flag.stderr
    monkeypatch.delenv("EVAL_BANANA_HARNESS_MIN_AGREEMENT")
    config_file.write_text(config_file.read_text().replace("= 0.4", "= 0.6"))
    line = config_file.read_text().splitlines().index("min_agreement = 0.6") + 1
    in_file = proj.eb("validate", "--require-calibration")
    assert (
        f"cases agreed; [harness] min_agreement = 0.6 in {config_file} (line {line}))"
        in in_file.stderr
    )
    assert f"or lower [harness] min_agreement in {config_file}." in in_file.stderr


WRITES = f"{READS_ANSWER} write=judge-notes.txt"


@pytest.mark.parametrize("mode", ["detect", "copy"])
def test_a_judge_that_writes_files_is_an_error_in_calibration_as_in_a_run(
    make_project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    # It reads the project correctly (it would agree on both cases) but writes a file there.
    monkeypatch.setenv("EVAL_BANANA_HARNESS_ISOLATION", mode)
    proj = make_project({"greets": judge("greets", script=WRITES, cases=[GOOD, BAD])})
    measured = proj.eb("calibrate")
    assert measured.exit_code == 1, measured.stdout + measured.stderr
    assert "DISAGREED greets: 0/2 cases agreed" in measured.stdout
    assert "the judge errored: The judge changed its copy of the project: judge-notes.txt" in (
        measured.stdout
    )
    entry = proj.record["checks"]["greets"]
    assert entry["agreement"] == 0.0
    assert {s["status"] for o in entry["outcomes"] for s in o["samples"]} == {"error"}
    assert not (proj.root / "judge-notes.txt").exists()  # only ever its copies
    # eb run makes the same judge an error, naming what it wrote.
    ran = proj.eb("run")
    assert ran.exit_code == 1, ran.stdout + ran.stderr
    assert "judge-notes.txt" in ran.stdout


def test_a_judge_may_write_in_calibration_where_runs_let_it(
    make_project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `off`: runs let judges write, so calibration does too; and under detect, a path in
    # [harness] isolation_ignore does not count, in a run or here.
    monkeypatch.setenv("EVAL_BANANA_HARNESS_ISOLATION", "off")
    proj = make_project({"greets": judge("greets", script=WRITES, cases=[GOOD, BAD])})
    assert proj.eb("calibrate").exit_code == 0
    monkeypatch.setenv("EVAL_BANANA_HARNESS_ISOLATION", "detect")
    config = proj.root / ".eval-banana" / "config.toml"
    text = config.read_text().replace("[harness]\n", '[harness]\nisolation_ignore = ["judge-*"]\n')
    config.write_text(text)
    measured = proj.eb("calibrate")
    assert measured.exit_code == 0, measured.stdout
    assert "AGREED greets: 2/2 cases agreed" in measured.stdout


def test_a_judge_that_rewrites_a_case_file_is_an_error(
    make_project: Callable[..., Project],
) -> None:
    # The case's own file, changed by the judge: not the case it was labelled for any more.
    script = f"{READS_ANSWER} write=answer.txt"
    proj = make_project({"greets": judge("greets", script=script, cases=[GOOD, BAD])})
    measured = proj.eb("calibrate")
    assert measured.exit_code == 1
    assert "The judge changed its copy of the project: answer.txt" in measured.stdout


def test_a_forged_sample_count_is_named_without_counting_to_it(
    make_project: Callable[..., Project],
) -> None:
    # Found by the fuzz campaign: samples_per_case 10**9 made eb build the list 1..10**9 to
    # compare the samples with it, and the test runner grew to 24 GB before the kernel killed it.
    proj = make_project({"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, BAD])})
    assert proj.eb("calibrate").exit_code == 0
    _edit_record(proj, lambda entry: entry.update(samples_per_case=10**9))
    done = subprocess.run(
        [sys.executable, "-m", "eval_banana", "validate", "--cwd", str(proj.root),
         "--require-calibration"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        preexec_fn=limit_address_space,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "MemoryError" not in done.stderr
    assert "not 1 to samples_per_case (1000000000)" in done.stderr


FAMILY_JUDGE = """schema_version: 1
id: replies
type: harness_judge
description: "reply to {{ case.question }}"
cases_from: data/replies.jsonl
instructions: |
  Is the reply below polite?
  scripted: case_contains=thanks key=replies
"""
FAMILY_CALIBRATION = """calibration:
  - name: polite
    expect: pass
    case: {question: "Where is it?", reply: "It ships today, thanks"}
  - name: curt
    expect: fail
    case: {question: "Where is it?", reply: "Not my problem"}
"""


def test_a_judge_family_is_calibrated_once_on_rows_and_gates_its_cases(
    make_project: Callable[..., Project], scripted_env: Path
) -> None:
    """A family's calibration cases give the row its prompt is rendered with; it is measured
    once under the family's id, a row edited afterwards leaves it standing, and its
    instructions edited do not."""
    proj = make_project(
        {"replies": FAMILY_JUDGE + FAMILY_CALIBRATION}, config_extra='[cache]\nmode = "on"\n'
    )
    rows = [
        {"id": "r1", "question": "Open today?", "reply": "Yes, thanks for asking"},
        {"id": "r2", "question": "Refund?", "reply": "Yes, thanks"},
    ]
    (proj.root / "data").mkdir()
    proj.write("data/replies.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    refused = proj.eb("run", "--require-calibration")
    assert refused.exit_code == 2
    assert "Judge family 'replies' (2 cases) has not been calibrated" in refused.stderr
    calibrated = proj.eb("calibrate")
    assert calibrated.exit_code == 0, calibrated.stdout + calibrated.stderr
    assert "AGREED replies: 2/2 cases agreed" in calibrated.stdout
    assert list(proj.record["checks"]) == ["replies"]  # one judge, not one per case
    entry = proj.record["checks"]["replies"]
    # Each calibration case's prompt shows its row as a dataset case is shown.
    prompt = Path(entry["run_dir"]) / entry["outcomes"][1]["samples"][0]["evidence"]["prompt"]
    assert '"reply": "Not my problem"' in prompt.read_text()
    gated = proj.eb("run", "--require-calibration", "--json")
    assert gated.exit_code == 0
    # The plan holds the family's calibration cases once, not in each case's definition...
    plan = json.loads(Path(json.loads(gated.stdout)["output_dir"], "stages/plan.json").read_text())
    assert [len(cases) for cases in plan["family_calibration"].values()] == [2]
    assert not [check["id"] for check in plan["checks"] if "calibration" in check["definition"]]
    # ...so a selection of any one case still finds them.
    assert proj.eb("run", "--require-calibration", "--check-id", "replies[r2]").exit_code == 0
    # Editing a calibration case asks for a new calibration, but re-runs no case: the cases'
    # digests leave the calibration out, so every verdict is reused.
    starts = len(scripted_env.read_text().splitlines())
    relabelled = FAMILY_CALIBRATION.replace("name: polite", "name: polite reply")
    proj.write("eval_checks/replies.yaml", FAMILY_JUDGE + relabelled)
    rerun = proj.eb("run")
    assert rerun.exit_code == 0, rerun.stdout + rerun.stderr
    assert len(scripted_env.read_text().splitlines()) == starts
    stale = proj.eb("run", "--require-calibration")
    assert stale.exit_code == 2 and "was calibrated under another key" in stale.stderr
    proj.write("eval_checks/replies.yaml", FAMILY_JUDGE + FAMILY_CALIBRATION)
    rows.append({"id": "r3", "question": "Hours?", "reply": "Nine to five, thanks"})
    proj.write("data/replies.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    assert proj.eb("run", "--require-calibration").exit_code == 0  # a row is not the judge
    proj.write(
        "eval_checks/replies.yaml",
        (FAMILY_JUDGE + FAMILY_CALIBRATION).replace("polite?", "polite and right?"),
    )
    changed = proj.eb("run", "--require-calibration")
    assert changed.exit_code == 2
    assert "Judge family 'replies' (3 cases) was calibrated under another key" in changed.stderr
    assert "eb calibrate --check-id replies" in changed.stderr


def test_a_judge_familys_calibration_cases_need_their_rows(
    make_project: Callable[..., Project], scripted_env: Path
) -> None:
    no_row = FAMILY_CALIBRATION.replace(
        '    case: {question: "Where is it?", reply: "Not my problem"}\n', ""
    )
    proj = make_project({"replies": FAMILY_JUDGE + no_row})
    (proj.root / "data").mkdir()
    proj.write("data/replies.jsonl", '{"question": "q", "reply": "r"}\n')
    refused = proj.eb("validate")
    assert refused.exit_code == 2
    assert "calibration case 'curt' of a dataset family needs `case:`" in refused.stderr
    assert "harness_judge.calibration (line 10, column 3)" in refused.stderr  # at the key
    missing = FAMILY_CALIBRATION.replace('question: "Where is it?", reply: "Not', 'reply: "Not')
    proj.write("eval_checks/replies.yaml", FAMILY_JUDGE + missing)
    refused = proj.eb("validate")
    assert refused.exit_code == 2
    assert (
        "calibration case 'curt': description: the case has no field 'question'" in refused.stderr
    )
    # A row's values must be JSON, as a dataset's are: NaN is not.
    not_json = FAMILY_CALIBRATION.replace('reply: "Not my problem"', 'reply: "No", rating: .nan')
    proj.write("eval_checks/replies.yaml", FAMILY_JUDGE + not_json)
    refused = proj.eb("validate")
    assert refused.exit_code == 2
    assert (
        "calibration.1.case.rating: the value is NaN (YAML's .nan or .inf), which JSON cannot "
        "say (line 15, column 59)" in refused.stderr
    )
    # A single judge's case has no row to give.
    single = judge("greets", script=READS_ANSWER, cases=[{**GOOD, "case": {"x": "y"}}, BAD])
    proj.write("eval_checks/replies.yaml", single)
    refused = proj.eb("validate")
    assert refused.exit_code == 2
    assert "only a dataset family's cases take" in refused.stderr


FAMILY_SCHEMA = """case_schema:
  type: object
  required: [question, reply]
  additionalProperties: false
  properties:
    id: {type: string}
    question: {type: string}
    reply: {type: string}
    rating: {type: integer}
"""


def test_a_judge_familys_calibration_rows_must_match_its_case_schema(
    make_project: Callable[..., Project], scripted_env: Path
) -> None:
    """A calibration row is held to the family's case_schema as a dataset row is: a known-bad
    case that the judge fails only because a misspelt field left `reply` out tests nothing,
    and agreeing with it must not make the judge trusted for the whole family."""
    broken = FAMILY_CALIBRATION.replace(
        'reply: "It ships today, thanks"}', 'reply: "It ships today, thanks", rating: "5"}'
    ).replace('reply: "Not my problem"', 'rply: "Not my problem"')
    proj = make_project({"replies": FAMILY_JUDGE + FAMILY_SCHEMA + broken})
    (proj.root / "data").mkdir()
    proj.write("data/replies.jsonl", '{"id": "r1", "question": "Open?", "reply": "Yes, thanks"}\n')
    source = proj.root / "eval_checks" / "replies.yaml"
    lines = source.read_text().splitlines()
    polite_line = lines.index("  - name: polite") + 1
    curt_line = lines.index("  - name: curt") + 1
    wrong_type = (
        f"{source} calibration item 1 (line {polite_line}): calibration case 'polite' does not "
        "match case_schema at rating: '5' is not of type 'integer'"
    )
    misspelt = (
        f"{source} calibration item 2 (line {curt_line}): calibration case 'curt' does not "
        "match case_schema: 'reply' is a required property"
    )
    # Every bad calibration row in one pass, named as a dataset row would be, with the fix.
    refused = eb_process(proj.root, "validate")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert wrong_type in refused.stderr and misspelt in refused.stderr
    assert "fix the calibration case's row" in refused.stderr
    as_json = eb_process(proj.root, "validate", "--json")
    assert as_json.returncode == 2
    errors = [
        (entry["message"], entry["field_path"], entry["line"])
        for entry in json.loads(as_json.stdout)["errors"]
    ]
    assert errors == [
        (wrong_type, "calibration.0.case.rating", polite_line + 2),  # at the field itself
        (misspelt, "calibration.1.case", curt_line + 2),
    ]
    # Nothing is measured, recorded or run on such rows.
    calibrated = eb_process(proj.root, "calibrate")
    assert calibrated.returncode == 2, calibrated.stdout + calibrated.stderr
    assert misspelt in calibrated.stderr and "AGREED" not in calibrated.stdout
    assert not (proj.root / ".eval-banana" / "calibration.json").exists()
    assert not scripted_env.exists()  # no judge ran
    ran = eb_process(proj.root, "run")
    assert ran.returncode == 2 and misspelt in ran.stderr
    # The rows fixed, the family is calibrated as before.
    proj.write("eval_checks/replies.yaml", FAMILY_JUDGE + FAMILY_SCHEMA + FAMILY_CALIBRATION)
    calibrated = eb_process(proj.root, "calibrate")
    assert calibrated.returncode == 0, calibrated.stdout + calibrated.stderr
    assert "AGREED replies: 2/2 cases agreed" in calibrated.stdout


def test_a_case_copy_holds_the_files_git_ignores_as_a_run_s_judge_sees_them(
    make_project: Callable[..., Project],
) -> None:
    # Built docs are git-ignored, yet a judge in `eb run` sees them: so must its calibration.
    script = "file=site/index.html contains=docs"
    as_it_is = {"name": "project as it is", "expect": "pass"}
    deleted = {"name": "index deleted", "expect": "fail", "files": {"site/index.html": None}}
    proj = make_project({"built": judge("built", script=script, cases=[as_it_is, deleted])})
    proj.write(".gitignore", "runs/\nsite/\n")
    (proj.root / "site").mkdir()
    proj.write("site/index.html", "<h1>docs</h1>\n")
    ran = proj.eb("run")
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    measured = proj.eb("calibrate")
    assert measured.exit_code == 0, measured.stdout + measured.stderr
    assert "AGREED built: 2/2 cases agreed" in measured.stdout


@pytest.mark.concurrent
def test_calibrating_beside_a_running_judge_never_makes_it_an_error(
    make_project: Callable[..., Project], scripted_env: Path
) -> None:
    # The record is eb's own file, which a run watches while its judges run: `eb calibrate`
    # replaces it only once no run's checks execute, and says that it waits.
    proj = make_project(
        {
            "slow": judge("slow", script="answers=pass sleep=3", cases=None),
            "other": judge("other", script=READS_ANSWER, cases=[GOOD, BAD]),
        }
    )
    argv = [sys.executable, "-m", "eval_banana"]
    running = subprocess.Popen(
        [*argv, "run", "--cwd", str(proj.root), "--check-id", "slow", "--no-html"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        for _ in range(1500):  # until the run's judge has started
            if scripted_env.exists() or running.poll() is not None:
                break
            time.sleep(0.02)
        assert scripted_env.exists()
        measured = subprocess.run(
            [*argv, "calibrate", "--cwd", str(proj.root), "--check-id", "other"],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
        out, err = running.communicate(timeout=120)
    finally:
        if running.poll() is None:
            running.kill()
            running.wait()
    assert running.returncode == 0, out + err
    assert "eb's own files changed" not in out
    assert measured.returncode == 0, measured.stdout + measured.stderr
    assert "Waiting for another eb run's checks to end before writing" in measured.stderr
    assert set(proj.record["checks"]) == {"other"}


def test_an_effort_the_agent_cannot_receive_is_a_setup_error_that_records_nothing(
    make_project: Callable[..., Project],
) -> None:
    # The scripted agent takes no effort flag: eb validate refuses the setting, and so must
    # eb calibrate, before any sample, keeping the judge's good record.
    proj = make_project({"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, BAD])})
    assert proj.eb("calibrate").exit_code == 0
    before = proj.record
    refused = proj.eb("calibrate", "--harness-reasoning-effort", "high")
    assert refused.exit_code == 2, refused.stdout + refused.stderr
    assert "cannot inject the selected reasoning effort 'high'" in refused.stderr
    assert "DISAGREED" not in refused.stdout
    assert proj.record == before


def test_a_case_file_that_is_a_folder_of_the_project_is_a_definition_error(
    make_project: Callable[..., Project],
) -> None:
    folder = {"name": "docs replaced", "expect": "fail", "files": {"docs": "not a folder"}}
    proj = make_project({"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, folder])})
    for command in ("validate", "calibrate"):
        refused = proj.eb(command)
        assert refused.exit_code == 2, refused.stdout + refused.stderr
        assert "eval_checks/greets.yaml: calibration.1.files" in refused.stderr
        assert "docs: is a folder in the project" in refused.stderr
    assert not (proj.root / ".eval-banana" / "calibration.json").exists()


def test_a_record_path_that_is_a_folder_is_a_setup_error_before_any_sample(
    make_project: Callable[..., Project], scripted_env: Path
) -> None:
    proj = make_project({"greets": judge("greets", script=READS_ANSWER, cases=[GOOD, BAD])})
    (proj.root / ".eval-banana" / "calibration.json").mkdir()
    refused = proj.eb("calibrate")
    assert refused.exit_code == 2, refused.stdout + refused.stderr
    assert "calibration.json: not a regular file (a folder)" in refused.stderr
    assert not scripted_env.exists()  # no judge was started


def _costly_project(tmp_path: Path, *, harness: str = "") -> tuple[Path, Path]:
    """A project whose one judge (two cases) reports 1,100 tokens and $0.50 a call; its root
    and the file that counts the calls. `harness`: more lines of its [harness] table."""
    calls = tmp_path / "calls"
    agent = tmp_path / "costly.py"
    verdict = json.dumps({"score": 1, "reason": "ok"})
    event = {"type": "result", "subtype": "success", "is_error": False, "result": verdict}
    event.update(total_cost_usd=0.5, usage={"input_tokens": 1000, "output_tokens": 100})
    agent.write_text(
        f"open({str(calls)!r}, 'a').write('x\\n')\nprint({json.dumps(json.dumps(event))})\n"
    )
    command = json.dumps([sys.executable, str(agent)])
    config = (
        '[core]\noutput_dir = "runs"\nmax_parallel_checks = 1\n\n'
        f'[harness]\nagent = "costly"\n{harness}\n'
        f'[agents.costly]\ncommand = {command}\noutput_dialect = "claude"\n'
    )
    cases = [{"name": "a", "expect": "pass"}, {"name": "b", "expect": "pass"}]
    root = tmp_path / "proj"
    init_repo(
        root,
        {
            ".eval-banana/config.toml": config,
            "eval_checks/c.yaml": judge("c", script="answers=pass", cases=cases),
        },
    )
    return root, calls


def test_the_cost_and_token_fuses_bound_a_calibration_as_they_bound_a_run(
    tmp_path: Path, eb: Callable[..., EbResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each call of this judge reports 1,100 tokens and $0.50: a $1 fuse allows two of 16.
    root, calls = _costly_project(tmp_path, harness="cost_fuse_usd = 1.0\n")
    stopped = eb("calibrate", "--cwd", str(root), "--repeats", "8")
    assert stopped.exit_code == 3, stopped.stdout + stopped.stderr
    assert "Judge usage: 2200 tokens, $1.0000" in stopped.stderr
    assert "the cost fuse tripped ([harness] cost_fuse_usd = 1.0); nothing recorded" in (
        stopped.stderr
    )
    assert len(calls.read_text().splitlines()) == 2
    assert not (root / ".eval-banana" / "calibration.json").exists()
    monkeypatch.setenv("EVAL_BANANA_HARNESS_COST_FUSE_USD", "0")
    monkeypatch.setenv("EVAL_BANANA_HARNESS_TOKEN_FUSE", "2000")
    stopped = eb("calibrate", "--cwd", str(root))
    assert stopped.exit_code == 3, stopped.stdout + stopped.stderr
    assert "the token fuse tripped ([harness] token_fuse = 2000)" in stopped.stderr


@pytest.mark.parametrize(
    ("flags", "tripped"),
    [
        (["--cost-fuse-usd", "1"], "the cost fuse tripped ([harness] cost_fuse_usd = 1.0)"),
        (["--token-fuse", "2000"], "the token fuse tripped ([harness] token_fuse = 2000)"),
    ],
    ids=["cost", "tokens"],
)
def test_the_fuse_flags_stop_a_calibration_as_they_stop_a_run(
    tmp_path: Path, eb: Callable[..., EbResult], flags: list[str], tripped: str
) -> None:
    root, calls = _costly_project(tmp_path)  # no fuse in the config file
    stopped = eb("calibrate", "--cwd", str(root), "--repeats", "8", *flags)
    assert stopped.exit_code == 3, stopped.stdout + stopped.stderr
    assert f"{tripped}; nothing recorded" in stopped.stderr
    assert len(calls.read_text().splitlines()) == 2  # of 16 samples
    assert not (root / ".eval-banana" / "calibration.json").exists()
