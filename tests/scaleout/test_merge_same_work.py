"""`eb merge` refuses parts that did other work than one machine would have: a worker that tested
other code (an older checkout) than the merge's, or judged with another agent program, or under
other isolation rules, with the same check definitions and the same plan."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EbResult, check_yaml
from tests.gitrepo import init_repo

APP_CHECK = """\
schema_version: 1
id: app_ok
type: deterministic
description: the app is good
inputs: ["app/**"]
script: |
  import sys
  sys.exit(0 if "GOOD" in open("app/app.py").read() else "app is BAD")
"""
OTHERS = ["misc_alpha", "misc_beta", "misc_gamma"]


def _project(root: Path, *, app: str) -> Path:
    files = {
        ".eval-banana/config.toml": "[core]\n",
        "app/app.py": f'STATUS = "{app}"\n',
        "eval_checks/app.yaml": APP_CHECK,
        **{f"eval_checks/{name}.yaml": check_yaml(name) for name in OTHERS},
    }
    return init_repo(root, files)


def _shard_of(eb: Callable[..., EbResult], project: Path, check_id: str) -> int:
    planned = eb("plan", "--cwd", str(project), "--shards", "2", "--json")
    assert planned.exit_code == 0, planned.stderr
    return int(
        next(c["shard"] for c in json.loads(planned.stdout)["checks"] if c["id"] == check_id)
    )


def _run_part(eb: Callable[..., EbResult], checkout: Path, out: Path, shard: str) -> None:
    result = eb(
        "run", "--cwd", str(checkout), "--shard", shard, "--output-dir", str(out), "--flat-output"
    )
    assert result.exit_code in (0, 1), result.stderr


def _merge(eb: Callable[..., EbResult], cwd: Path, out: Path, *parts: Path) -> EbResult:
    return eb(
        "merge", *map(str, parts), "--cwd", str(cwd), "--output-dir", str(out), "--flat-output"
    )


def test_a_part_run_on_other_code_than_the_merge_checkout_is_refused(
    eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    """The part holding `app_ok` ran on a checkout where the app was still good: merged, the
    run passed, though the commit the merge checked out fails on one machine."""
    planned = _project(tmp_path / "planned", app="BAD")
    stale = _project(tmp_path / "stale", app="GOOD")
    judged = _shard_of(eb, planned, "app_ok")
    parts = {judged: tmp_path / "part-stale", 3 - judged: tmp_path / "part-fresh"}
    _run_part(eb, stale, parts[judged], f"{judged}/2")
    _run_part(eb, planned, parts[3 - judged], f"{3 - judged}/2")
    merged = tmp_path / "merged"
    result = _merge(eb, planned, merged, parts[1], parts[2])
    assert result.exit_code == 2, result.stdout + result.stderr
    assert (
        f"Cannot merge: {parts[judged]} (shard {judged}/2) ran check 'app_ok' on other files "
        "than this checkout holds (inputs app/** changed" in result.stderr
    )
    assert "Merge shards of one commit" in result.stderr
    assert not merged.exists()
    # In a checkout of the code the part did test, the same parts merge (the other part's
    # checks read no file that differs).
    again = _merge(eb, stale, tmp_path / "merged-stale", parts[1], parts[2])
    assert again.exit_code == 0, again.stdout + again.stderr


def test_parts_of_one_commit_checked_out_at_other_paths_still_merge(
    eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    planned = _project(tmp_path / "planned", app="BAD")
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(planned, elsewhere)
    parts = [tmp_path / f"part-{k}" for k in (1, 2)]
    _run_part(eb, planned, parts[0], "1/2")
    _run_part(eb, elsewhere, parts[1], "2/2")
    result = _merge(eb, planned, tmp_path / "merged", *parts)
    assert result.exit_code == 1, result.stdout + result.stderr  # the app is BAD: app_ok fails
    assert "app_ok" in result.stdout


def _judge_project(root: Path, *, judges: int, agent: list[str], files: dict[str, str]) -> Path:
    config = (
        '[harness]\nagent = "judge"\n\n[agents.judge]\n'
        f'command = {json.dumps(agent)}\nmodel_flag = ""\noutput_dialect = "text"\n'
    )
    checks = {
        f"eval_checks/judge_{k}.yaml": (
            f"schema_version: 1\nid: judge_{k}\ntype: harness_judge\ndescription: quality\n"
            "inputs: []\ninstructions: Score 1 only if the project is good.\n"
        )
        for k in range(judges)
    }
    others = {f"eval_checks/{name}.yaml": check_yaml(name) for name in OTHERS}
    return init_repo(root, {".eval-banana/config.toml": config, **checks, **others, **files})


def _agent(score: int) -> str:
    return f'#!/bin/sh\necho \'{{"score": {score}, "reason": "score {score}"}}\'\n'


def _copy_as_worker(project: Path, worker: Path) -> Path:
    shutil.copytree(project, worker)
    return worker


def test_a_part_judged_by_another_program_under_the_agent_name_is_refused(
    eb: Callable[..., EbResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One worker's `[agents.judge] command` was edited to a lenient program: the merge
    passed what the planned config's strict agent fails."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, score in (("strict-agent", 0), ("lenient-agent", 1)):
        (bin_dir / name).write_text(_agent(score))
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    planned = _judge_project(tmp_path / "planned", judges=1, agent=["strict-agent"], files={})
    judged = _shard_of(eb, planned, "judge_0")
    lenient = _copy_as_worker(planned, tmp_path / "lenient")
    config = lenient / ".eval-banana" / "config.toml"
    config.write_text(config.read_text().replace("strict-agent", "lenient-agent"))
    parts = {judged: tmp_path / "part-lenient", 3 - judged: tmp_path / "part-strict"}
    _run_part(eb, lenient, parts[judged], f"{judged}/2")
    _run_part(eb, planned, parts[3 - judged], f"{3 - judged}/2")
    merged = tmp_path / "merged"
    result = _merge(eb, planned, merged, parts[1], parts[2])
    assert result.exit_code == 2, result.stdout + result.stderr
    assert (
        "judged with other programs under the agent name 'judge' (their [agents.judge] "
        "command differs)" in result.stderr
    )
    assert not merged.exists()


def test_parts_whose_judges_ran_another_agent_executable_of_the_project_are_refused(
    eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    """Same config in every worker, but the agent is a script of the project that one
    worker's checkout holds otherwise: the settings its judges were decided under differ."""
    planned = _judge_project(
        tmp_path / "planned", judges=8, agent=["./agent.sh"], files={"agent.sh": _agent(0)}
    )
    (planned / "agent.sh").chmod(0o755)
    other = _copy_as_worker(planned, tmp_path / "other")
    (other / "agent.sh").write_text(_agent(1))
    parts = [tmp_path / "part-1", tmp_path / "part-2"]
    _run_part(eb, planned, parts[0], "1/2")
    _run_part(eb, other, parts[1], "2/2")
    result = _merge(eb, planned, tmp_path / "merged", *parts)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert (
        f"{parts[1]} (shard 2/2) decided its checks under other settings than {parts[0]} "
        "(shard 1/2) did for checks of the same kind (the agent's executable differs)"
    ) in result.stderr


def test_a_part_run_with_another_isolation_ignore_is_refused(
    eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    """The judges' agent writes notes.txt; one worker's config excuses every write: its part
    passed the judge that is an error on one machine, and the merge passed too."""
    writer = '#!/bin/sh\necho tampered > notes.txt\necho \'{"score": 1, "reason": "fine"}\'\n'
    planned = _judge_project(
        tmp_path / "planned",
        judges=1,
        agent=["./writer.sh"],
        files={"writer.sh": writer, "notes.txt": "orig\n"},
    )
    (planned / "writer.sh").chmod(0o755)
    config = planned / ".eval-banana" / "config.toml"
    config.write_text(
        config.read_text().replace("[harness]\n", '[harness]\nisolation = "detect"\n')
    )
    judged = _shard_of(eb, planned, "judge_0")
    excusing = _copy_as_worker(planned, tmp_path / "excusing")
    other = excusing / ".eval-banana" / "config.toml"
    other.write_text(
        other.read_text().replace("[harness]\n", '[harness]\nisolation_ignore = ["**"]\n')
    )
    parts = {judged: tmp_path / "part-excusing", 3 - judged: tmp_path / "part-planned"}
    _run_part(eb, excusing, parts[judged], f"{judged}/2")
    _run_part(eb, planned, parts[3 - judged], f"{3 - judged}/2")
    result = _merge(eb, planned, tmp_path / "merged", parts[1], parts[2])
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "ran with harness.isolation_ignore = " in result.stderr
    assert "[harness] isolation_ignore in its config file" in result.stderr
    assert (
        "Run every shard with the same harness.isolation_ignore ([harness] isolation_ignore in "
        in (result.stderr)
    )


# The usual CI layout: build output (`out/`) is ignored by git, made by each shard's job before
# its checks, and never made by the merge job, which only downloads the shards' folders.
BUILT_CHECKS = {
    "eval_checks/built.yaml": (
        "schema_version: 1\nid: built_ok\ntype: assertions\ndescription: the build says ok\n"
        "artifact: out/o.json\nassert:\n  - {path: ok, op: equals, value: true}\n"
    ),
    "eval_checks/app_built.yaml": (
        "schema_version: 1\nid: app_built\ntype: deterministic\ndescription: app and build\n"
        'inputs: ["app/**", "out/**"]\nscript: |\n  import sys\n'
        '  sys.exit(0 if "GOOD" in open("app/app.py").read() else "app is BAD")\n'
    ),
    "eval_checks/data.yaml": (
        "schema_version: 1\nid: data_ok\ntype: assertions\ndescription: committed data\n"
        "artifact: data/d.json\nassert:\n  - {path: ok, op: equals, value: true}\n"
    ),
}


def _built_project(root: Path) -> Path:
    files = {
        ".eval-banana/config.toml": "[core]\n",
        ".gitignore": "out/\n",
        "app/app.py": 'STATUS = "GOOD"\n',
        "data/d.json": '{"ok": true}\n',
        **BUILT_CHECKS,
        **{f"eval_checks/{name}.yaml": check_yaml(name) for name in OTHERS},
    }
    project = init_repo(root, files)
    _build(project, stamp="first build")
    return project


def _build(project: Path, *, stamp: str) -> None:
    """What a CI job's build step leaves: an artifact whose bytes vary from build to build."""
    (project / "out").mkdir(exist_ok=True)
    (project / "out" / "o.json").write_text(json.dumps({"ok": True, "built": stamp}))


def _verdicts(run_dir: Path) -> dict[str, str]:
    report = json.loads((run_dir / "report.json").read_text())
    return {check["check_id"]: check["status"] for check in report["checks"]}


def test_build_outputs_git_ignores_need_not_be_in_the_merge_checkout(
    eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    """Both shards graded out/o.json (git-ignored) and read out/** as input; the merge job
    never built it, or built it again with another timestamp: the merge was refused as if the
    shards had run another commit. Only files git tracks tell the commit."""
    project = _built_project(tmp_path / "project")
    one_machine = eb(
        "run", "--cwd", str(project), "--output-dir", str(tmp_path / "one"), "--flat-output"
    )
    assert one_machine.exit_code == 0, one_machine.stdout + one_machine.stderr
    parts = [tmp_path / f"part-{k}" for k in (1, 2)]
    for k, part in enumerate(parts, start=1):
        _run_part(eb, project, part, f"{k}/2")
    shutil.rmtree(project / "out")  # the merge job downloads the shards, builds nothing
    merged = _merge(eb, project, tmp_path / "merged", *parts)
    assert merged.exit_code == 0, merged.stdout + merged.stderr
    assert _verdicts(tmp_path / "merged") == _verdicts(tmp_path / "one")
    assert set(_verdicts(tmp_path / "merged")) == {"built_ok", "app_built", "data_ok", *OTHERS}
    _build(project, stamp="built again by the merge job")
    rebuilt = _merge(eb, project, tmp_path / "merged-rebuilt", *parts)
    assert rebuilt.exit_code == 0, rebuilt.stdout + rebuilt.stderr


@pytest.mark.parametrize(
    ("edited", "check_id", "what"),
    [
        ("app/app.py", "app_built", "inputs app/**, out/** changed"),
        ("data/d.json", "data_ok", "artifact data/d.json changed"),
    ],
)
def test_a_tracked_file_changed_since_the_shards_ran_is_still_refused(
    eb: Callable[..., EbResult], tmp_path: Path, edited: str, check_id: str, what: str
) -> None:
    """Build outputs left out, a file git tracks still tells a stale worker: here the merge's
    checkout changed `edited` (an input, or a committed artifact) after the shards ran."""
    project = _built_project(tmp_path / "project")
    judged = _shard_of(eb, project, check_id)
    parts = [tmp_path / f"part-{k}" for k in (1, 2)]
    for k, part in enumerate(parts, start=1):
        _run_part(eb, project, part, f"{k}/2")
    shutil.rmtree(project / "out")
    (project / edited).write_text((project / edited).read_text() + "\n")
    result = _merge(eb, project, tmp_path / "merged", *parts)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert (
        f"Cannot merge: {parts[judged - 1]} (shard {judged}/2) ran check '{check_id}' on other "
        f"files than this checkout holds ({what}: the shard's job had another commit, or local "
        "changes to files git tracks)" in result.stderr
    )
    assert not (tmp_path / "merged").exists()


def test_outside_git_every_file_a_check_read_is_compared(
    eb: Callable[..., EbResult], tmp_path: Path
) -> None:
    """No repository tells a source file from a build output: the merge compares them all,
    and says so rather than blaming another commit."""
    project = _built_project(tmp_path / "project")
    shutil.rmtree(project / ".git")
    judged = _shard_of(eb, project, "app_built")
    parts = [tmp_path / f"part-{k}" for k in (1, 2)]
    for k, part in enumerate(parts, start=1):
        _run_part(eb, project, part, f"{k}/2")
    same = _merge(eb, project, tmp_path / "merged-same", *parts)
    assert same.exit_code == 0, same.stdout + same.stderr
    shutil.rmtree(project / "out")
    result = _merge(eb, project, tmp_path / "merged", *parts)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert (
        f"(shard {judged}/2) ran check 'app_built' on other files than this checkout holds "
        "(inputs app/**, out/** changed: this checkout is in no git repository, so every file "
        "the check read counts, build outputs too); so did 'built_ok'" in result.stderr
    )
    assert "or merge in a git checkout" in result.stderr
