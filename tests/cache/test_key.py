"""Each part of the verdict key matters, and nothing else does (docs/incremental.md).

Every case runs the standard project (a judge reading docs/, a script check reading src/, a
check without inputs), runs it again to see every verdict reused, makes one change, and runs
once more: exactly the checks whose verdict could depend on the change run again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval_banana.cache import components
from eval_banana.core.ownmark import MARK_FILE
from tests.cache.rig import Project, cache_of, judge, make_project, script_check
from tests.gitrepo import commit_all, init_repo
from tests.processes import eb_process

ALL = {"j", "d", "w"}
Change = Callable[[Project, pytest.MonkeyPatch], list[str]]


def edit(relative: str, text: str) -> Change:
    def change(project: Project, monkeypatch: pytest.MonkeyPatch) -> list[str]:
        project.write({relative: text})
        return []

    return change


def flags(*args: str) -> Change:
    return lambda project, monkeypatch: list(args)


def env(name: str, value: str) -> Change:
    def change(project: Project, monkeypatch: pytest.MonkeyPatch) -> list[str]:
        monkeypatch.setenv(name, value)
        return []

    return change


def touch_everything(project: Project, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    for path in project.root.rglob("*"):
        if path.is_file():
            stamp = path.stat().st_mtime + 1000
            os.utime(path, (stamp, stamp))
    return []


def edit_agent_template(project: Project, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    config = project.root / ".eval-banana" / "config.toml"
    text = config.read_text().replace(
        "[agents.counter]\n", '[agents.counter]\nshared_flags = ["--print"]\n', 1
    )
    config.write_text(text)
    return []


def new_prompt_version(project: Project, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr("eval_banana.harness.prompt.PROMPT_VERSION", "eb-judge-next")
    return []


def new_prompt_wording(project: Project, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    # The exact prompt counts even when its version is (wrongly) left alone.
    monkeypatch.setattr("eval_banana.harness.prompt.PREAMBLE", "You are a strict judge.")
    return []


def other_interpreter(project: Project, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    fake = types.SimpleNamespace(
        version_info=types.SimpleNamespace(major=3, minor=99, micro=0, releaselevel="final"),
        implementation=sys.implementation,
    )
    monkeypatch.setattr(components, "sys", fake)
    return []


def new_deterministic_rules(project: Project, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    # An eb that reads a script's run otherwise (an upgrade): its verdicts are judged again.
    # An upgrade changes eb's modules too, which no kept run is replayed across; here only the
    # constant changes, so the run looks its verdicts up one by one.
    monkeypatch.setattr(components, "DETERMINISTIC_RULES", "deterministic-next")
    monkeypatch.setenv("EVAL_BANANA_CACHE_REPLAY", "false")
    return []


def new_judge_rules(project: Project, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    # An eb that reads a judge's answer otherwise (an upgrade): its verdicts are judged again.
    monkeypatch.setattr(components, "JUDGE_RULES", "judge-next")
    monkeypatch.setenv("EVAL_BANANA_CACHE_REPLAY", "false")
    return []


MISSES: list[tuple[str, Change, set[str]]] = [
    # What a verdict depends on: each of these runs exactly the affected checks again.
    ("a declared input file", edit("docs/guide.md", "# Guide, edited\n"), {"j", "w"}),
    ("a new file matching inputs", edit("src/more.txt", "more\n"), {"d", "w"}),
    (
        "the check file",
        edit(
            "eval_checks/j.yaml",
            'schema_version: 1\nid: j\ntype: harness_judge\ndescription: Judge j, reworded.\ninstructions: Judge it.\ninputs: ["docs/**"]\n',
        ),
        {"j", "w"},
    ),
    ("the referenced script", edit("scripts/check.py", "import sys\nprint('new')\n"), {"d", "w"}),
    ("the agent", flags("--harness-agent", "counter2"), {"j"}),
    ("the model", flags("--harness-model", "bigger-model"), {"j"}),
    ("the reasoning effort", flags("--harness-reasoning-effort", "high"), {"j"}),
    ("the command line template", edit_agent_template, {"j"}),
    ("our prompt version", new_prompt_version, {"j"}),
    ("our prompt wording", new_prompt_wording, {"j"}),
    ("the interpreter version", other_interpreter, {"d", "w"}),
    ("eb's rules for a script's verdict", new_deterministic_rules, {"d", "w"}),
    ("eb's rules for reading a judge's answer", new_judge_rules, {"j"}),
    ("a let-through variable name appears", env("FEATURE_FLAG", "1"), ALL),
    ("a base variable name appears", env("SSL_CERT_DIR", "/etc/ssl"), ALL),
    ("a file outside every inputs", edit("README.md", "# Project, edited\n"), {"w"}),
    # Checks receive another environment: a verdict one judged with every variable is not the
    # verdict of a check that only gets what the allowlist lets through.
    ("the environment policy", flags("--env-policy", "allowlist"), ALL),
    # Nothing else: these reuse every verdict.
    ("a variable that is not let through", env("SOME_UNRELATED_VARIABLE", "x"), set()),
    ("modification times alone", touch_everything, set()),
    (
        "timeouts and parallelism",
        flags(
            "--check-timeout-seconds",
            "77",
            "--harness-timeout-seconds",
            "99",
            "--max-parallel-checks",
            "1",
        ),
        set(),
    ),
    ("the output folder", flags("--output-dir", "elsewhere"), set()),
]


@pytest.mark.parametrize(
    ("change", "expected"), [(c, e) for _, c, e in MISSES], ids=[n for n, _, _ in MISSES]
)
def test_exactly_the_affected_checks_run_again(
    standard: Project, monkeypatch: pytest.MonkeyPatch, change: Change, expected: set[str]
) -> None:
    standard.write(
        {
            ".eval-banana/config.toml": standard.root.joinpath(
                ".eval-banana/config.toml"
            ).read_text()
            + '\n[execution]\nenv_allow = ["FEATURE_FLAG"]\n'
        }
    )
    monkeypatch.delenv("FEATURE_FLAG", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    assert standard.misses() == ALL
    assert standard.misses() == set()
    starts = standard.agent_starts()
    args = change(standard, monkeypatch)
    assert standard.misses(*args) == expected
    # A judge answered from the cache starts no agent.
    assert standard.agent_starts() - starts == (1 if "j" in expected else 0)
    # The new verdicts were stored: the same state again reuses everything.
    assert standard.misses(*args) == set()


def test_a_variable_value_never_counts(standard: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    standard.write(
        {
            ".eval-banana/config.toml": standard.root.joinpath(
                ".eval-banana/config.toml"
            ).read_text()
            + '\n[execution]\nenv = "allowlist"\nenv_allow = ["FEATURE_FLAG"]\n'
        }
    )
    monkeypatch.setenv("FEATURE_FLAG", "old value")
    assert standard.misses() == ALL
    monkeypatch.setenv("FEATURE_FLAG", "a new value, e.g. a rotated token")
    assert standard.misses() == set()
    monkeypatch.delenv("FEATURE_FLAG")
    assert standard.misses() == ALL  # its name is gone: that counts


def test_the_same_tree_in_another_folder_reuses_the_verdicts(
    standard: Project, tmp_path: Path
) -> None:
    standard.run()
    standard.move(to=tmp_path / "moved")
    assert standard.misses() == set()  # the absolute project path is not part of the key


def test_sampled_checks_are_never_cached(standard: Project) -> None:
    # Sampling measures how a verdict varies: a stored verdict cannot measure that, so a check
    # that takes samples runs (every sample) each time, and its result is never stored.
    assert standard.misses() == ALL
    starts = standard.agent_starts()
    for _ in range(2):
        report = standard.run("--repeats", "3")
        assert {c["check_id"] for c in report["checks"] if "cache" in c["details"]} == set()
        assert all(len(c["details"]["samples"]) == 3 for c in report["checks"])
    assert standard.agent_starts() - starts == 6  # the judge's three samples, twice
    # Its own stored verdict (repeats 1) is still there for an unsampled run.
    assert standard.misses() == set()
    standard.write(
        {
            "eval_checks/j.yaml": standard.root.joinpath("eval_checks/j.yaml").read_text()
            + "repeats: 2\n"
        }
    )
    assert standard.misses() == {"j", "w"}  # w reads the whole project, j.yaml included
    report = standard.run()
    assert "cache" not in next(c for c in report["checks"] if c["check_id"] == "j")["details"]


def test_editing_eb_s_own_files_reuses_the_verdicts_of_checks_reading_the_whole_project(
    standard: Project,
) -> None:
    # A config brought from eval-banana 0.5.0 often lists its own exclude_dirs without
    # `.eval-banana`, so the config file and the calibration record are project files. Every
    # setting a verdict depends on is a component of the key by itself: editing one that is not
    # (parallelism) or recalibrating must not rerun the check that reads the whole project.
    config = standard.root / ".eval-banana" / "config.toml"
    standard.write({".eval-banana/config.toml": config.read_text().replace('".eval-banana", ', "")})
    assert '".eval-banana"' not in config.read_text()
    assert standard.misses() == ALL
    standard.write(
        {
            ".eval-banana/config.toml": config.read_text().replace(
                "max_parallel_checks = 2", "max_parallel_checks = 1"
            ),
            ".eval-banana/calibration.json": '{"judges": {}}\n',
        }
    )
    assert "max_parallel_checks = 1" in config.read_text()
    assert standard.misses() == set()
    # Any other file in that folder is the project's own, and counts.
    standard.write({".eval-banana/notes.md": "a note\n"})
    assert standard.misses() == {"w"}


def test_run_folders_in_the_default_output_folder_never_count_for_a_run_written_elsewhere(
    standard: Project, tmp_path: Path
) -> None:
    # As in a config brought from eval-banana 0.5.0: `.eval-banana` is not excluded, so only
    # eb's own rule keeps its run folders out of the project state.
    config = standard.root / ".eval-banana" / "config.toml"
    standard.write({".eval-banana/config.toml": config.read_text().replace('".eval-banana", ', "")})
    assert standard.misses() == ALL  # its run folder lands in .eval-banana/results
    assert any((standard.root / ".eval-banana" / "results").iterdir())
    # A run written elsewhere (CI's --output-dir) reuses every verdict: the run folders the
    # earlier runs left in the default output folder are eb's own, not the project's.
    assert standard.misses("--output-dir", str(tmp_path / "ci-out")) == set()
    assert standard.misses() == set()


@pytest.mark.parametrize("sent_by", ["flag", "variable"])
def test_run_folders_in_the_output_folder_the_config_names_never_count_when_a_run_goes_elsewhere(
    standard: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sent_by: str
) -> None:
    config = standard.root / ".eval-banana" / "config.toml"
    text = config.read_text().replace("[core]\n", '[core]\noutput_dir = "runs"\n', 1)
    standard.write({".eval-banana/config.toml": text})
    assert standard.misses() == ALL  # its run folder lands in runs/, a folder discovery walks
    assert any((standard.root / "runs").iterdir())
    elsewhere = str(tmp_path / "ci-out")
    if sent_by == "variable":
        monkeypatch.setenv("EVAL_BANANA_OUTPUT_DIR", elsewhere)
        assert standard.misses() == set()
    else:
        assert standard.misses("--output-dir", elsewhere) == set()


def _misses_of(root: Path, *args: str) -> set[str]:
    """`eb run ARGS` as a process of its own: the ids of the checks that ran (not reused)."""
    done = eb_process(root, "run", "--json", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    checks = json.loads(done.stdout)["checks"]
    return {check["check_id"] for check in checks if not cache_of(check).get("hit")}


@pytest.mark.parametrize("git_state", ["no repository", "untracked", "committed"])
def test_a_run_folder_sent_anywhere_in_the_project_never_counts_for_a_later_run(
    standard: Project, git_state: str
) -> None:
    # `--output-dir ci-out` inside the project leaves a run folder no setting names: eb knows
    # it by its config stage, whether git tracks it, does not, or is not there at all.
    root = standard.root
    if git_state != "no repository":
        init_repo(root, {})
    assert _misses_of(root) == ALL
    assert _misses_of(root, "--output-dir", "ci-out") == set()
    if git_state == "committed":
        commit_all(root)
    assert _misses_of(root) == set()
    assert _misses_of(root, "--output-dir", "ci-out") == set()
    assert _misses_of(root) == set()


def test_an_output_folder_holding_a_check_s_inputs_still_counts_them(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    # `--output-dir docs` beside `inputs: ["docs/**"]`: skipped whole, the edited file was no
    # change and the check kept `passed (cached)` while it failed. Earlier runs there still
    # never count: they are known by their config stage.
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={"i": script_check("i", script=READS_DOCS, inputs=["docs/**"])},
        files={"docs/x.txt": "good\n"},
    )
    root = project.root
    assert _misses_of(root, "--output-dir", "docs") == {"i"}
    assert _misses_of(root, "--output-dir", "docs") == set()
    project.write({"docs/x.txt": "bad\n"})
    done = eb_process(root, "run", "--json", "--output-dir", "docs")
    (check,) = json.loads(done.stdout)["checks"]
    assert not cache_of(check).get("hit") and check["status"] == "failed", done.stdout


READS_DOCS = "import sys\nsys.exit(0 if open('docs/x.txt').read() == 'good\\n' else 1)\n"


RUNS_BUILD = "import subprocess, sys\nsys.exit(subprocess.run(['./build.sh']).returncode)\n"


@pytest.mark.parametrize("git_state", ["no repository", "committed"])
def test_a_chmod_of_a_script_a_check_runs_runs_the_check_again(
    tmp_path: Path, eb: Callable[..., Any], git_state: str
) -> None:
    # The same bytes without the execute bit are another file for a check that runs it (git
    # records the mode, and `--changed-since` counts it): no verdict of the old one is reused.
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={
            "declared": script_check("declared", script=RUNS_BUILD, inputs=["build.sh"]),
            "whole": script_check("whole", script=RUNS_BUILD),
        },
        files={"build.sh": "#!/bin/sh\necho built\n"},
    )
    root = project.root
    (root / "build.sh").chmod(0o755)
    if git_state == "committed":
        init_repo(root, {})
    assert _misses_of(root) == {"declared", "whole"}
    assert _misses_of(root) == set()
    (root / "build.sh").chmod(0o644)
    done = eb_process(root, "run", "--json")
    checks = json.loads(done.stdout)["checks"]
    assert {check["check_id"] for check in checks if not cache_of(check).get("hit")} == {
        "declared",
        "whole",
    }, done.stdout
    assert {check["status"] for check in checks} == {"failed"}  # ./build.sh: permission denied


@pytest.mark.parametrize("kind", ["cache", "history"])
def test_a_folder_a_changed_setting_left_in_the_project_never_counts(
    standard: Project, kind: str
) -> None:
    # The configured folder is eb's by the setting; one a run was sent to instead (CI's
    # `--cache-dir`, an edited config) is eb's by the mark eb writes into it.
    root = standard.root
    config = root / ".eval-banana" / "config.toml"
    text = config.read_text()
    if f"[{kind}]\n" not in text:
        text += f"\n[{kind}]\n"
    config.write_text(text.replace(f"[{kind}]\n", f'[{kind}]\ndir = "{kind}/one"\n', 1))
    assert _misses_of(root) == ALL
    # Another cache folder is empty: every check runs once more there.
    moved = _misses_of(root, f"--{kind}-dir", f"{kind}/two")
    assert moved == (ALL if kind == "cache" else set())
    assert (root / kind / "two" / MARK_FILE).is_file()
    assert (root / kind / "one" / MARK_FILE).is_file()
    assert _misses_of(root) == set()
    assert _misses_of(root, f"--{kind}-dir", f"{kind}/two") == set()


def test_a_folder_holding_the_projects_own_files_is_never_marked(standard: Project) -> None:
    # History kept beside the docs: while configured the folder is eb's by the setting; once
    # the setting goes, the docs must be the judge's inputs again, as in no folder eb marked.
    config = standard.root / ".eval-banana" / "config.toml"
    plain = config.read_text()
    config.write_text(plain + '\n[history]\ndir = "docs"\n')
    _misses_of(standard.root)
    assert list((standard.root / "docs").glob("*-*.json"))
    assert not (standard.root / "docs" / MARK_FILE).exists()
    config.write_text(plain)
    _misses_of(standard.root)
    standard.write({"docs/guide.md": "# Guide, edited\n"})
    assert "j" in _misses_of(standard.root)


def test_a_failure_known_from_the_cache_counts_for_maxfail_before_any_check_is_paid_for(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={"z_judge": judge("z_judge", instructions="SCORE_ZERO", inputs=["docs/**"])},
        files={"docs/guide.md": "# Guide\n"},
    )
    project.run(expect_exit=1)  # the judge fails, and its verdict is stored
    starts = project.agent_starts()
    # A new judge, first in plan order and not in the cache.
    project.write({"eval_checks/a_judge.yaml": judge("a_judge", inputs=["docs/**"])})
    report = project.run("-x", expect_exit=1)
    by_id = {check["check_id"]: check for check in report["checks"]}
    assert cache_of(by_id["z_judge"]).get("hit") is True
    # The stored failure was known first, so -x held the new judge back: no agent started.
    assert by_id["a_judge"]["status"] == "error"
    assert by_id["a_judge"]["details"].get("not_run") is True
    assert project.agent_starts() == starts


@pytest.mark.parametrize("git_state", ["no repository", "untracked"])
def test_the_reports_an_earlier_run_wrote_into_the_project_never_count_for_a_plain_run(
    standard: Project, git_state: str
) -> None:
    # A CI-style run writes its JUnit file and result document into the project; the plain run
    # after it names neither, yet knows them as eb's while they hold what eb wrote there.
    root = standard.root
    if git_state != "no repository":
        init_repo(root, {})
    reports = ("--junit-xml", "eval-junit.xml", "--result-out", "eval-result.md")
    assert _misses_of(root, *reports) == ALL
    assert _misses_of(root, *reports) == set()
    assert _misses_of(root) == set()
    # Edited by hand, the JUnit file is the project's again: the check reading it all reruns.
    junit = root / "eval-junit.xml"
    junit.write_text(junit.read_text() + "<!-- kept by hand -->\n")
    assert _misses_of(root) == {"w"}
    assert _misses_of(root) == set()
    # Written anew by a run that asks for it (whose key never holds it), it is eb's again.
    assert _misses_of(root, *reports) == set()
    assert _misses_of(root) == set()


def test_the_reports_eb_merge_wrote_into_the_project_never_count_for_a_plain_run(
    standard: Project, tmp_path: Path
) -> None:
    # The merge of a sharded CI run writes the JUnit file and result document where the job
    # reads them, in the project; the plain run after it knows them as eb's too.
    root = standard.root
    shards = [tmp_path / f"shard-{k}" for k in (1, 2)]
    for k, folder in enumerate(shards, start=1):
        _misses_of(root, "--shard", f"{k}/2", "--output-dir", str(folder), "--flat-output")
    reports = ("--junit-xml", "merged.xml", "--result-out", "merged.md")
    merged = eb_process(
        root, "merge", *map(str, shards), "--output-dir", str(tmp_path / "merged"), *reports
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert (root / "merged.xml").is_file() and (root / "merged.md").is_file()
    assert _misses_of(root) == set()


def _plan_into(root: Path, name: str, *args: str) -> dict[str, Any]:
    """`eb plan --json ARGS > NAME` in the project, as a CI step saves the plan in its checkout."""
    with (root / name).open("w", encoding="utf-8") as out:
        done = subprocess.run(
            [sys.executable, "-m", "eval_banana", "plan", "--json", *args],
            cwd=root,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr
    plan: dict[str, Any] = json.loads((root / name).read_text())
    return plan


def test_a_check_the_plan_calls_a_hit_is_reused_by_the_run_of_that_plan(
    tmp_path: Path, eb: Callable[..., Any]
) -> None:
    """The plan saved into the project (as CI downloads it into the checkout) is eb's own
    file, as it was while `eb plan` wrote it: `eb run --select` of it starts no judge the plan
    called a hit, whether it runs the whole plan or a part of it."""
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={
            "j": judge("j"),  # no inputs: keyed on the whole project
            "k": judge("k", instructions="Judge it again."),
            "w": script_check("w", script="print('whole project')\n"),
        },
        files={"README.md": "# Project\n"},
    )
    root = project.root
    assert _misses_of(root) == {"j", "k", "w"}
    starts = project.agent_starts()
    plan = _plan_into(root, "plan.json")
    assert {entry["id"]: entry["cache"] for entry in plan["checks"]} == dict.fromkeys(
        ("j", "k", "w"), "hit"
    )
    assert _misses_of(root, "--select", "plan.json") == set()
    parts = _plan_into(root, "parts.json", "--shards", "2")
    assert {entry["cache"] for entry in parts["checks"]} == {"hit"}
    for index in (1, 2):
        assert _misses_of(root, "--select", "parts.json", "--shard", f"{index}/2") == set()
    assert project.agent_starts() == starts


def test_an_assertions_verdict_stored_under_other_rules_is_graded_again(
    tmp_path: Path, eb: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An eb that grades assertions otherwise (an upgrade: a control whose assertion was not
    evaluated is no caught defect any more) grades again what an earlier eb stored."""
    check = (
        "schema_version: 1\nid: a\ntype: assertions\ndescription: The total.\n"
        "artifact: out/data.json\nassert:\n  - {path: total, op: equals, value: 3}\n"
    )
    project = make_project(
        tmp_path=tmp_path,
        eb=eb,
        checks={"a": check},
        files={"out/data.json": '{"total": 3}\n'},
        replay=False,
    )
    assert project.misses() == {"a"}
    assert project.misses() == set()
    monkeypatch.setattr(components, "ASSERTIONS_RULES", "assertions-next")
    assert project.misses() == {"a"}
    assert project.misses() == set()
