"""`eb status` and `eb update` over changes they missed or blamed on the wrong file: each case is
made on a real project, with `eb` run as a process of its own (and fake agent scripts as judges),
then the stale rows, the checks run again and the verdict are compared with a fresh `eb run`'s.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from tests.processes import REPO, eb_process


def _eb(root: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    """`eb ARGS` in `root`, this checkout importable; `path`: the PATH it runs with."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if path is not None:
        env["PATH"] = path
    return eb_process(root, *args, env=env)


def _write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def _run_dir(root: Path) -> Path:
    (run_dir,) = (root / ".eval-banana" / "results").iterdir()
    return run_dir


def _results(root: Path) -> dict[str, dict[str, Any]]:
    document = json.loads((_run_dir(root) / "stages" / "execute.json").read_text())
    return {result["check_id"]: result for result in document["results"]}


def _row(output: str, stage: str) -> str:
    (line,) = [line for line in output.splitlines() if line.split()[:1] == [stage]]
    return line


def _reruns(output: str) -> list[str]:
    """The lines `eb update` says a check is run again on."""
    return [line.strip() for line in output.splitlines() if line.strip().startswith("rerun ")]


def test_a_script_path_link_pointed_elsewhere_is_named_as_the_change(tmp_path: Path) -> None:
    """A `script_path` that is a symbolic link, pointed at another script, was reported as
    `eval_checks/sym.yaml changed`: the check file, which had not changed."""
    root = tmp_path / "proj"
    _write(
        root,
        {
            ".eval-banana/config.toml": "",
            "scripts/v1.py": "assert 1 == 1\n",
            "scripts/v2.py": "assert 1 == 2\n",
            "eval_checks/sym.yaml": "schema_version: 1\nid: sym\ntype: deterministic\n"
            "description: d\ninputs: []\nscript_path: s.py\n",
        },
    )
    (root / "eval_checks" / "s.py").symlink_to("../scripts/v1.py")
    assert _eb(root, "run").returncode == 0
    (root / "eval_checks" / "s.py").unlink()
    (root / "eval_checks" / "s.py").symlink_to("../scripts/v2.py")
    why = "eval_checks/s.py changed (it leads to scripts/v2.py now, not scripts/v1.py)"
    status = _eb(root, "status")
    assert f"stale  ({why})" in _row(status.stdout, "validate"), status.stdout
    updated = _eb(root, "update")
    assert updated.returncode == 1, updated.stdout + updated.stderr  # v2 fails
    assert _reruns(updated.stdout) == [f"rerun sym: {why}"], updated.stdout


def test_a_renamed_dataset_file_rebuilds_the_plan_and_judges_no_case_again(
    tmp_path: Path,
) -> None:
    """A family's dataset file renamed under its `cases_from` glob, its rows unchanged, left
    the plan `ok` while it named the old file, which execute leaves out of each case's inputs:
    with `inputs: ["data/**"]` every case's inputs looked changed, `eb update` judged every
    case again, and did so again on every later edit of the dataset."""
    root = tmp_path / "proj"
    log = tmp_path / "ran.log"
    _write(
        root,
        {
            ".eval-banana/config.toml": "",
            "eval_checks/fam.yaml": "schema_version: 1\nid: fam\ntype: deterministic\n"
            'description: "row {{ case.id }}"\ncases_from: "data/sets/*.csv"\n'
            'inputs: ["data/**"]\n'
            "script: |\n"
            "  import json, sys\n"
            f"  open({str(log)!r}, 'a').write(json.load(open(sys.argv[1]))['case']['id'] + '\\n')\n"
            "  c = json.load(open(sys.argv[1]))['case']\n"
            "  assert c['a'] == c['b'], 'mismatch'\n",
            "data/sets/a.csv": "id,a,b\nr1,1,1\nr2,2,2\nr3,3,3\n",
        },
    )
    assert _eb(root, "run").returncode == 0
    (root / "data" / "sets" / "a.csv").rename(root / "data" / "sets" / "b.csv")
    status = _eb(root, "status")
    validate = _row(status.stdout, "validate")
    assert "fam: its dataset is data/sets/b.csv now, not data/sets/a.csv" in validate, status.stdout
    assert "inputs data/** changed" not in status.stdout, status.stdout
    updated = _eb(root, "update")
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert "0 of 3 checks to run again; 3 keep their results" in updated.stdout, updated.stdout
    plan = json.loads((_run_dir(root) / "stages" / "plan.json").read_text())
    assert {tuple(check["family_files"]) for check in plan["checks"]} == {
        ("eval_checks/fam.yaml", "data/sets/b.csv")
    }
    assert _eb(root, "status").returncode == 0
    # A later edit of one row judges that case alone.
    (root / "data" / "sets" / "b.csv").write_text("id,a,b\nr1,1,1\nr2,2,9\nr3,3,3\n")
    updated = _eb(root, "update")
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert _reruns(updated.stdout) == ["rerun fam[r2]: row changed in data/sets/b.csv"]
    assert Counter(log.read_text().split()) == Counter({"r1": 1, "r2": 2, "r3": 1})


_YES = '#!/bin/sh\necho \'{"score": 1, "reason": "yes"}\'\n'
_NO = '#!/bin/sh\necho \'{"score": 0, "reason": "no"}\'\n'
# Answers by the variable the config sets for it: strict says no.
_BY_MODE = (
    '#!/bin/sh\nif [ "$JUDGE_MODE" = strict ]; then\n'
    '  echo \'{"score": 0, "reason": "strict says no"}\'\nelse\n'
    '  echo \'{"score": 1, "reason": "lenient says yes"}\'\nfi\n'
)


def _judged_project(root: Path, *, config: str) -> str:
    """A project of one judge and one check that takes about a second and a half, its fake
    agents in `bin/` (yesjudge, nojudge, modejudge); the PATH that finds them."""
    _write(
        root,
        {
            ".eval-banana/config.toml": config,
            "eval_checks/judge.yaml": "schema_version: 1\nid: judge\ntype: harness_judge\n"
            "description: judged\ninputs: []\ninstructions: Answer 1.\n",
            "eval_checks/slow.yaml": "schema_version: 1\nid: slow\ntype: deterministic\n"
            "description: slow\ninputs: []\nscript: |\n  import time; time.sleep(1.5)\n",
            "bin/yesjudge": _YES,
            "bin/nojudge": _NO,
            "bin/modejudge": _BY_MODE,
        },
    )
    for name in ("yesjudge", "nojudge", "modejudge"):
        (root / "bin" / name).chmod(0o755)
    return f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}"


def _agents_config(*, agent: str, timeout: int, extra: str = "") -> str:
    agents = "".join(
        f'[agents.{name}]\ncommand = ["{name}"]\nmodel_flag = ""\n'
        for name in ("yesjudge", "nojudge", "modejudge")
    )
    return (
        f"[core]\ncheck_timeout_seconds = {timeout}\n{extra}"
        f'[harness]\nagent = "{agent}"\nisolation = "off"\n'
        f'[discovery]\nexclude_dirs = ["bin"]\n{agents}'
    )


def test_a_setting_that_decides_verdicts_makes_their_results_stale(tmp_path: Path) -> None:
    """After a passing run, the judge's agent changed to one that says no and the check
    timeout cut from 30 to 1 second: `eb update` kept every result ("0 of 2 checks to run
    again", passed, exit 0) and `eb status` showed every row ok, while a fresh `eb run` failed
    one and timed the other out."""
    root = tmp_path / "proj"
    path = _judged_project(root, config=_agents_config(agent="yesjudge", timeout=30))
    assert _eb(root, "run", path=path).returncode == 0
    config = root / ".eval-banana" / "config.toml"
    config.write_text(_agents_config(agent="nojudge", timeout=1))
    status = _eb(root, "status", path=path)
    execute = _row(status.stdout, "execute")
    assert "judge: [harness] agent changed" in execute, status.stdout
    assert "slow: [core] check_timeout_seconds changed" in execute, status.stdout
    updated = _eb(root, "update", path=path)
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert "2 of 2 checks to run again; 0 keep their results" in updated.stdout
    assert _reruns(updated.stdout) == [
        "rerun judge: [harness] agent changed",
        "rerun slow: [core] check_timeout_seconds changed",
    ]
    results = _results(root)
    assert (results["judge"]["status"], results["slow"]["status"]) == ("failed", "error")
    assert _eb(root, "status", path=path).returncode == 0
    fresh = _eb(root, "run", path=path)
    assert fresh.returncode == updated.returncode


def test_the_agents_variables_decide_and_the_threshold_does_not(tmp_path: Path) -> None:
    """`[harness.env] JUDGE_MODE = "strict"` judges the judge again (and it alone); a changed
    `pass_threshold` decides no check's verdict: the run is scored again, no check runs."""
    root = tmp_path / "proj"
    lenient = '[harness.env]\nJUDGE_MODE = "lenient"\n'
    path = _judged_project(root, config=_agents_config(agent="modejudge", timeout=30) + lenient)
    assert _eb(root, "run", path=path).returncode == 0
    config = root / ".eval-banana" / "config.toml"
    config.write_text(config.read_text().replace('"lenient"', '"strict"'))
    updated = _eb(root, "update", path=path)
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert _reruns(updated.stdout) == [
        "rerun judge: the variables the config sets for the agent changed"
    ]
    assert _results(root)["judge"]["reason"] == "strict says no"
    config.write_text(config.read_text().replace("[core]\n", "[core]\npass_threshold = 0.5\n"))
    updated = _eb(root, "update", path=path)
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert "0 of 2 checks to run again; 2 keep their results" in updated.stdout
    assert _eb(root, "status", path=path).returncode == 0


def test_a_result_of_an_earlier_eb_is_judged_again_only_on_what_it_records(
    tmp_path: Path,
) -> None:
    """An execute.json written before eb recorded the settings its results were decided
    under: a result is judged again only when what it records itself (its timeout, its agent)
    differs from the settings now; the others keep theirs."""
    root = tmp_path / "proj"
    path = _judged_project(root, config=_agents_config(agent="yesjudge", timeout=30))
    assert _eb(root, "run", path=path).returncode == 0
    execute = _run_dir(root) / "stages" / "execute.json"
    document = json.loads(execute.read_text())
    for field in ("verdict_settings", "verdict_setting_parts"):
        document.pop(field, None)
    execute.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    status = _eb(root, "status", path=path)
    assert _row(status.stdout, "execute").endswith(" ok"), status.stdout  # nothing differs
    config = root / ".eval-banana" / "config.toml"
    config.write_text(_agents_config(agent="yesjudge", timeout=1))
    updated = _eb(root, "update", path=path)
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert _reruns(updated.stdout) == ["rerun slow: [core] check_timeout_seconds changed"]


def _local_judge_project(root: Path, *, extra: str = "") -> None:
    """A judge whose agent is a project file, `tools/judge.sh` (which says yes), and declares
    `inputs:` that leave that file out."""
    _write(
        root,
        {
            ".eval-banana/config.toml": '[harness]\nagent = "local"\nisolation = "off"\n'
            '[agents.local]\ncommand = ["tools/judge.sh"]\nmodel_flag = ""\n' + extra,
            "README.md": "# readme\n",
            "eval_checks/judge.yaml": "schema_version: 1\nid: judge\ntype: harness_judge\n"
            'description: judged\ninputs: ["README.md"]\ninstructions: Answer 1.\n',
            "tools/judge.sh": _YES,
        },
    )
    (root / "tools" / "judge.sh").chmod(0o755)


def test_an_edited_project_file_agent_makes_its_judges_results_stale(tmp_path: Path) -> None:
    """The agent's command, a project file (`tools/judge.sh`), edited to answer 0: `eb status`
    said every stage ok and `eb update` "Nothing to update", while a fresh run failed."""
    root = tmp_path / "proj"
    _local_judge_project(root)
    assert _eb(root, "run").returncode == 0
    (root / "tools" / "judge.sh").write_text(_NO)
    status = _eb(root, "status")
    execute = _row(status.stdout, "execute")
    assert "judge: the agent's executable tools/judge.sh changed" in execute, status.stdout
    updated = _eb(root, "update")
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert _reruns(updated.stdout) == ["rerun judge: the agent's executable tools/judge.sh changed"]
    assert _eb(root, "status").returncode == 0
    assert _eb(root, "run").returncode == 1


def _fake_agent_project(root: Path, judges: int) -> None:
    """A project whose judges run `fakejudge`, found on PATH."""
    files = {
        ".eval-banana/config.toml": '[harness]\nagent = "fake"\nisolation = "off"\n'
        '[agents.fake]\ncommand = ["fakejudge"]\nmodel_flag = ""\n',
    }
    for k in range(1, judges + 1):
        files[f"eval_checks/j{k}.yaml"] = (
            f"schema_version: 1\nid: j{k}\ntype: harness_judge\ndescription: judged\n"
            "inputs: []\ninstructions: Answer 1.\n"
        )
    _write(root, files)


def _agents(tmp_path: Path, *names: str) -> list[Path]:
    """Folders each holding the same `fakejudge`, outside the project."""
    folders = [tmp_path / name for name in names]
    for folder in folders:
        folder.mkdir()
        (folder / "fakejudge").write_text(_YES)
        (folder / "fakejudge").chmod(0o755)
    return folders


def test_an_agent_found_elsewhere_outside_the_project_judges_nothing_again(
    tmp_path: Path,
) -> None:
    """Shards whose agent sat at other places on PATH: on the merged run, with one shard's on
    PATH, the other shard's judges were "the agent's executable .../binA/fakejudge changed";
    with no agent on PATH (a merge job) the guard and every judge were stale. As the verdict
    key, a place outside the project counts for nothing, and no agent found now changes no
    result."""
    root = tmp_path / "proj"
    _fake_agent_project(root, judges=2)
    bin_a, bin_b = _agents(tmp_path, "binA", "binB")
    system = os.environ["PATH"]
    for k, folder in ((1, bin_a), (2, bin_b)):
        ran = _eb(root, "run", "--shard", f"{k}/2", "--output-dir", f"out/s{k}",
                  path=f"{folder}{os.pathsep}{system}")  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
    shards = [str(run) for k in (1, 2) for run in (root / "out" / f"s{k}").iterdir()]
    merged = _eb(root, "merge", *shards, path=system)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    for path in (system, f"{bin_a}{os.pathsep}{system}"):
        status = _eb(root, "status", path=path)
        assert status.returncode == 0 and "stale" not in status.stdout, status.stdout


def test_an_edited_project_file_agent_is_no_stored_verdicts_agent(tmp_path: Path) -> None:
    """With the verdict cache on, the pass the first `tools/judge.sh` gave was reused (and the
    whole run replayed) after the file was edited to answer 0: the key named the command as
    written, not the file it runs."""
    root = tmp_path / "proj"
    _local_judge_project(root, extra='[cache]\nmode = "on"\n')
    assert _eb(root, "run").returncode == 0
    cached = _eb(root, "run")  # every verdict reused: kept as a replay too
    assert cached.returncode == 0 and "(cached)" in cached.stdout, cached.stdout
    (root / "tools" / "judge.sh").write_text(_NO)
    judged = _eb(root, "run")
    assert judged.returncode == 1, judged.stdout + judged.stderr
    assert "- judge: failed - no" in judged.stdout, judged.stdout


def test_an_agent_found_through_a_relative_path_entry_is_recorded_absolute(tmp_path: Path) -> None:
    """PATH with `nm/.bin`: guard.json recorded `nm/.bin/fakejudge`, relative to the process's
    working directory, and `eb status` from eval_checks/ (PATH `../nm/.bin`, the same file)
    said the command was found at `../nm/.bin/fakejudge now, not nm/.bin/fakejudge`."""
    root = tmp_path / "proj"
    _fake_agent_project(root, judges=1)
    _write(root, {"nm/.bin/fakejudge": _YES})
    (root / "nm" / ".bin" / "fakejudge").chmod(0o755)
    system = os.environ["PATH"]
    assert _eb(root, "run", path=f"nm/.bin{os.pathsep}{system}").returncode == 0
    guard = json.loads((_run_dir(root) / "stages" / "guard.json").read_text())
    assert guard["harness"]["executable"] == str(root.resolve() / "nm" / ".bin" / "fakejudge")
    env = {**os.environ, "PYTHONPATH": str(REPO), "PATH": f"../nm/.bin{os.pathsep}{system}"}
    status = eb_process(root / "eval_checks", "status", env=env)
    assert status.returncode == 0 and "stale" not in status.stdout, status.stdout
