"""`inputs:` naming files inside a git submodule: the submodule counts by the commit it records,
for the verdict cache, for `--changed-since` and for the warning of a pattern that matches
nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval_banana.projectstate.reading import read_project_state
from eval_banana.projectstate.revision import changes_since
from tests.cache.rig import script_check
from tests.gitrepo import commit_all, git, init_repo
from tests.processes import eb_process

_READS_LIB = (
    'from pathlib import Path\nassert "VALUE = 1" in Path("vendor/lib/lib.py").read_text()\n'
)


@pytest.fixture(autouse=True)
def _no_repository_above(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def _project(tmp_path: Path, *, inputs: list[str]) -> Path:
    """A project whose `vendor/lib` is a submodule, and a check `lib_value` reading a file in
    it (declared by `inputs`) beside a check `other` reading README."""
    lib = init_repo(tmp_path / "lib", {"lib.py": "VALUE = 1\n"})
    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": ".eval-banana/results/\n",
            ".eval-banana/config.toml": '[cache]\nmode = "on"\n',
            "eval_checks/lib_value.yaml": script_check(
                "lib_value", script=_READS_LIB, inputs=inputs
            ),
            "eval_checks/other.yaml": script_check("other", script="pass\n", inputs=["README"]),
            "README": "hi\n",
        },
    )
    git(root, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(lib), "vendor/lib")
    commit_all(root, "add the submodule")
    return root


def _break_the_library(root: Path) -> None:
    """A new commit in the submodule, recorded by a commit of the project."""
    (root / "vendor/lib/lib.py").write_text("VALUE = 2\n")
    git(root / "vendor/lib", "commit", "-q", "-am", "break")
    commit_all(root, "bump the library")


def _verdicts(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("- ")]


@pytest.mark.parametrize("inputs", [["vendor/lib/lib.py"], ["vendor/**/*.py"], ["vendor/lib"]])
def test_a_new_submodule_commit_reruns_the_checks_whose_inputs_name_files_in_it(
    tmp_path: Path, inputs: list[str]
) -> None:
    root = _project(tmp_path, inputs=inputs)
    first = eb_process(root, "run")
    assert first.returncode == 0, first.stdout + first.stderr
    # The pattern matches the submodule: no warning that it matches no file.
    assert "matches no file" not in first.stdout + first.stderr
    _break_the_library(root)
    again = eb_process(root, "run")
    assert again.returncode == 1, again.stdout + again.stderr
    assert "- lib_value: failed - AssertionError" in again.stdout
    assert "- other: passed (cached)" in again.stdout
    changed = eb_process(root, "run", "--changed-since", "HEAD~1", "--cache", "off")
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert _verdicts(changed.stdout) == ["- lib_value: failed - AssertionError"]


def test_a_pattern_leaving_the_submodule_out_is_not_rerun_by_it(tmp_path: Path) -> None:
    root = _project(tmp_path, inputs=["vendor/**", "!vendor/lib/**", "README"])
    assert eb_process(root, "run").returncode == 0
    _break_the_library(root)
    # `other` reads nothing in the submodule: it is left out.
    listed = eb_process(root, "list", "--changed-since", "HEAD~1")
    assert listed.returncode == 0 and "lib_value" not in listed.stdout, listed.stdout
    again = eb_process(root, "run")
    assert "- lib_value: passed (cached)" in again.stdout, again.stdout


def test_a_state_and_a_comparison_narrowed_to_a_file_in_a_submodule_hold_the_submodule(
    tmp_path: Path,
) -> None:
    """Narrowed to `vendor/lib/lib.py`, git's listing of the index never names `vendor/lib`
    unless asked for the folders holding the path; also with more prefixes than git is
    given (filtered afterwards)."""
    root = _project(tmp_path, inputs=["vendor/lib/lib.py"])
    _break_the_library(root)
    recorded = git(root, "rev-parse", "HEAD:vendor/lib").strip()
    many = [f"folder{n}/file" for n in range(40)]
    for prefixes in (["vendor/lib/lib.py", "README"], ["vendor/lib/lib.py", *many]):
        state = read_project_state(root=str(root), prefixes=prefixes)
        assert state.files.get("vendor/lib") == recorded
        changes = changes_since(root=str(root), revision="HEAD~1", prefixes=prefixes)
        assert changes.diff.changed == ("vendor/lib",) and "vendor/lib" in changes.submodules
    # A new commit checked out in the submodule and not recorded yet: `git status` says so.
    git(root / "vendor/lib", "checkout", "-q", "HEAD~1")
    changes = changes_since(root=str(root), revision="HEAD", prefixes=["vendor/lib/lib.py"])
    assert changes.diff.changed == ("vendor/lib",)


@pytest.mark.parametrize(
    "hide",
    [
        ("config", "-f", ".gitmodules", "submodule.vendor/lib.ignore", "all"),
        ("config", "diff.ignoreSubmodules", "all"),
    ],
)
@pytest.mark.parametrize("staged_only", [False, True])
def test_a_submodule_config_says_to_ignore_still_counts_its_new_recorded_commit(
    tmp_path: Path, hide: tuple[str, ...], staged_only: bool
) -> None:
    """`ignore = all` in .gitmodules (or diff.ignoreSubmodules) hides the submodule from `git
    diff`; eb's comparison must not inherit that, committed or only staged."""
    root = _project(tmp_path, inputs=["vendor/lib/**"])
    git(root, *hide)
    git(root, "commit", "-q", "--allow-empty", "-am", "hide the submodule from diffs")
    (root / "vendor/lib/lib.py").write_text("VALUE = 2\n")
    git(root / "vendor/lib", "commit", "-q", "-am", "break")
    # `git add` and `commit` honour diff.ignoreSubmodules too: the user records it regardless.
    unhidden = ("-c", "diff.ignoreSubmodules=none")
    git(root, *unhidden, "add", "vendor/lib")
    if not staged_only:
        git(root, *unhidden, "commit", "-q", "-m", "bump the library")
    since = "HEAD" if staged_only else "HEAD~1"
    changed = eb_process(root, "run", "--changed-since", since, "--cache", "off")
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert _verdicts(changed.stdout) == ["- lib_value: failed - AssertionError"]


def _project_reading_the_submodule_by_its_files(tmp_path: Path, *, cases_from: str) -> Path:
    """A project whose `vendor/lib` is a submodule holding a check's `script_path:` script and
    a family's dataset (`cases_from`), both with `inputs:` elsewhere, beside a check `other`."""
    lib = init_repo(
        tmp_path / "lib",
        {"check.py": "pass\n", "data/cases.jsonl": '{"id": "a", "v": 1}\n'},
    )
    family = (
        "schema_version: 1\nid: fam\ntype: deterministic\ndescription: Rows.\n"
        f'cases_from: "{cases_from}"\n'
        'inputs: ["README"]\n'
        "script: |\n"
        "  import json, sys\n"
        "  from pathlib import Path\n"
        '  assert json.loads(Path(sys.argv[1]).read_text())["case"]["v"] == 1\n'
    )
    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": ".eval-banana/results/\n",
            ".eval-banana/config.toml": '[cache]\nmode = "on"\n',
            "eval_checks/scripted.yaml": script_check(
                "scripted", script_path="../vendor/lib/check.py", inputs=["README"]
            ),
            "eval_checks/fam.yaml": family,
            "eval_checks/other.yaml": script_check("other", script="pass\n", inputs=["README"]),
            "README": "hi\n",
        },
    )
    git(root, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(lib), "vendor/lib")
    commit_all(root, "add the submodule")
    return root


@pytest.mark.parametrize(
    "cases_from", ["vendor/lib/data/cases.jsonl", "vendor/**/*.jsonl", "**/cases.jsonl"]
)
def test_a_script_or_dataset_inside_a_submodule_counts_by_its_recorded_commit(
    tmp_path: Path, cases_from: str
) -> None:
    """A check's `script_path:` and a family's `cases_from:` file in a submodule: a new commit
    recorded for it selects both for --changed-since, as a pattern naming a file there does,
    and the verdict cache runs both again; a check reading nothing there is left out."""
    root = _project_reading_the_submodule_by_its_files(tmp_path, cases_from=cases_from)
    first = eb_process(root, "run")
    assert first.returncode == 0, first.stdout + first.stderr
    lib = root / "vendor/lib"
    (lib / "check.py").write_text("raise SystemExit(1)\n")
    (lib / "data/cases.jsonl").write_text('{"id": "a", "v": 2}\n')
    git(lib, "commit", "-q", "-am", "break")
    commit_all(root, "bump the library")
    # `other` reads nothing in the submodule: it is left out.
    listed = eb_process(root, "list", "--changed-since", "HEAD~1")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert [line.split("\t")[0] for line in listed.stdout.splitlines() if "\t" in line] == [
        "fam",
        "scripted",
    ]
    changed = eb_process(root, "run", "--changed-since", "HEAD~1", "--cache", "off")
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert _verdicts(changed.stdout) == [
        "- fam[a]: failed - AssertionError",
        "- scripted: failed - exit code 1",
    ]
    again = eb_process(root, "run")
    assert again.returncode == 1, again.stdout + again.stderr
    assert _verdicts(again.stdout) == [
        "- fam[a]: failed - AssertionError",
        "- other: passed (cached)",
        "- scripted: failed - exit code 1",
    ]
