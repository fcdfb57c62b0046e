"""The verdict key follows the bytes a check reads, however git looks at a file: files git is
told not to look at, and what a sparse checkout leaves out (docs/incremental.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cache.rig import script_check
from tests.gitrepo import git, init_repo
from tests.processes import eb_process

READS_DATA = "import pathlib, sys\nsys.exit('bad' in pathlib.Path('data.txt').read_text())\n"


@pytest.fixture(autouse=True)
def _no_repository_above(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def data_project(tmp_path: Path, files: dict[str, str | bytes] | None = None) -> Path:
    """A cached project whose two checks fail when data.txt says `bad`: one declares it as its
    input, the other reads the whole project."""
    return init_repo(
        tmp_path / "proj",
        {
            ".gitignore": ".eval-banana/cache/\n.eval-banana/results/\n",
            ".eval-banana/config.toml": '[cache]\nmode = "on"\n',
            "eval_checks/declared.yaml": script_check(
                "declared", script=READS_DATA, inputs=["data.txt"]
            ),
            "eval_checks/whole.yaml": script_check("whole", script=READS_DATA),
            "data.txt": "good\n",
            **(files or {}),
        },
    )


def verdicts(root: Path, *args: str) -> dict[str, str]:
    """check id -> its console line after the colon (`passed (cached)`, `failed`...)."""
    done = eb_process(root, "run", *args)
    lines = [line[2:] for line in done.stdout.splitlines() if line.startswith("- ")]
    return {line.split(":")[0]: line.split(": ", 1)[1].split(" - ")[0] for line in lines}


def changed_since_head(root: Path, *args: str) -> list[str]:
    done = eb_process(root, "list", "--changed-since", "HEAD", *args)
    return sorted(line.split("\t")[0] for line in done.stdout.splitlines() if "\t" in line)


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_an_edit_git_is_told_not_to_look_at_is_judged_again(tmp_path: Path, flag: str) -> None:
    root = data_project(tmp_path)
    assert verdicts(root) == {"declared": "passed", "whole": "passed"}
    git(root, "update-index", flag, "data.txt")
    (root / "data.txt").write_text("bad\n")
    assert verdicts(root) == {"declared": "failed", "whole": "failed"}
    assert changed_since_head(root) == ["declared", "whole"]
    (root / "data.txt").write_text("good\n")  # no longer what the last run read
    status = eb_process(root, "status")
    assert "stale" in status.stdout, status.stdout


def test_a_file_a_sparse_checkout_leaves_out_is_judged_again(tmp_path: Path) -> None:
    root = data_project(tmp_path)
    assert verdicts(root) == {"declared": "passed", "whole": "passed"}
    git(root, "sparse-checkout", "set", "--no-cone", "/eval_checks/", "/.eval-banana/")
    assert not (root / "data.txt").exists()
    assert verdicts(root) == {"declared": "failed", "whole": "failed"}  # no file to read


REWRITES_DATA = "import pathlib\np = pathlib.Path('data.txt')\np.write_bytes(p.read_bytes())\n"


def test_a_file_git_converts_is_keyed_on_the_bytes_a_check_reads(tmp_path: Path) -> None:
    root = data_project(
        tmp_path, {".gitattributes": "data.txt text eol=crlf\n", "data.txt": b"good\r\n"}
    )
    assert verdicts(root) == {"declared": "passed", "whole": "passed"}
    stamp = (root / "data.txt").stat().st_mtime + 100
    os.utime(root / "data.txt", (stamp, stamp))  # the same bytes, newer than git's index
    assert verdicts(root) == {"declared": "passed (cached)", "whole": "passed (cached)"}
    assert "stale" not in eb_process(root, "status").stdout
    # A check that writes back the very bytes it read changed nothing it is watched for.
    (root / "eval_checks/rewrites.yaml").write_text(
        script_check("rewrites", script=REWRITES_DATA, inputs=["data.txt"])
    )
    found = verdicts(root, "--cache", "off", "--execution-isolation", "detect")
    assert found["rewrites"] == "passed", found


# --- files read through a symbolic link: git counts the link by its text, a check reads the
# file behind it; both count (docs/incremental.md) ------------------------------------------

PLAN_CHECK = """\
schema_version: 1
id: plan_ok
type: assertions
description: the plan has at least two steps
artifact: out/plan.json
inputs: []
assert:
  - {path: steps, op: lengthAtLeast, value: 2}
"""
GOOD_PLAN = '{"steps": [1, 2]}\n'
BAD_PLAN = '{"steps": []}\n'


def linked_project(tmp_path: Path, *, files: dict[str, str | bytes], replay: bool) -> Path:
    """A cached project (`replay`: whole runs replayed too) holding `files`, committed; each
    test adds its links and commits them."""
    root = tmp_path / "proj"
    config = f'[cache]\nmode = "on"\nreplay = {str(replay).lower()}\n'
    base: dict[str, str | bytes] = {
        ".gitignore": ".eval-banana/cache/\n.eval-banana/results/\n.eval-banana/lastfailed.json\n",
        ".eval-banana/config.toml": config,
    }
    return init_repo(root, {**base, **files})


def link(root: Path, name: str, target: str) -> None:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, root / name)


def stale_lines(root: Path) -> str:
    done = eb_process(root, "status")
    return "\n".join(line for line in done.stdout.splitlines() if "stale" in line)


@pytest.mark.parametrize("replay", [False, True])
def test_an_artifact_behind_a_link_is_graded_again_when_its_file_changes(
    tmp_path: Path, replay: bool
) -> None:
    root = linked_project(
        tmp_path,
        files={"eval_checks/plan.yaml": PLAN_CHECK, "build/plan-v1.json": GOOD_PLAN},
        replay=replay,
    )
    link(root, "out/plan.json", "../build/plan-v1.json")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "linked")
    assert verdicts(root) == {"plan_ok": "passed"}
    (root / "build/plan-v1.json").write_text(BAD_PLAN)  # the link's text is as it was
    assert "plan_ok: artifact out/plan.json changed" in stale_lines(root)
    update = eb_process(root, "update")
    assert update.returncode == 1 and "Nothing to update" not in update.stdout, update.stdout
    assert changed_since_head(root) == ["plan_ok"]
    assert verdicts(root)["plan_ok"].startswith("failed")  # (cached: eb update ran it)
    # A link to nothing grades no file; the file it names appearing is a change too.
    (root / "out/plan.json").unlink()
    link(root, "out/plan.json", "../build/plan-v2.json")
    assert verdicts(root) == {"plan_ok": "failed"}
    (root / "build/plan-v2.json").write_text(GOOD_PLAN)
    assert verdicts(root) == {"plan_ok": "passed"}


READS_LINKED = "import pathlib, sys\nsys.exit('bad' in pathlib.Path('in/data.txt').read_text())\n"


def test_an_input_behind_a_link_counts_by_the_file_it_leads_to(tmp_path: Path) -> None:
    # `inputs: in/**` matches the link in/data.txt, not build/data.txt behind it.
    root = linked_project(
        tmp_path,
        files={
            "eval_checks/linked.yaml": script_check(
                "linked", script=READS_LINKED, inputs=["in/**"]
            ),
            "build/data.txt": "good\n",
        },
        replay=False,
    )
    link(root, "in/data.txt", "../build/data.txt")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "linked")
    assert verdicts(root) == {"linked": "passed"}
    assert verdicts(root) == {"linked": "passed (cached)"}
    (root / "build/data.txt").write_text("bad\n")
    assert "linked: inputs in/** changed" in stale_lines(root)
    assert changed_since_head(root) == ["linked"]
    assert verdicts(root) == {"linked": "failed"}


def test_a_linked_file_in_git_selects_its_checks_when_the_file_behind_it_changes(
    tmp_path: Path,
) -> None:
    # Committed links and the files they lead to: --changed-since sees the file change, not the
    # link; a retargeted script link is a change though both files are as committed.
    family = (
        "schema_version: 1\nid: fam\ntype: assertions\ndescription: rows\ninputs: []\n"
        "cases_from: data/rows.jsonl\nartifact: data/v.json\n"
        'assert:\n  - {path: v, op: equals, value: "{{ case.v }}"}\n'
    )
    root = linked_project(
        tmp_path,
        files={
            "eval_checks/fam.yaml": family,
            "eval_checks/script.yaml": script_check(
                "script_ok", script_path="../scripts/current.py", inputs=[]
            ),
            "scripts/good.py": "pass\n",
            "scripts/other.py": "pass  # another\n",
            "data/rows-v1.jsonl": '{"id": "a", "v": "a"}\n{"id": "b", "v": "a"}\n',
            "data/v.json": '{"v": "a"}\n',
        },
        replay=False,
    )
    link(root, "scripts/current.py", "good.py")
    link(root, "data/rows.jsonl", "rows-v1.jsonl")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "linked")
    assert changed_since_head(root, "--cases") == []
    (root / "data/rows-v1.jsonl").write_text('{"id": "a", "v": "a"}\n{"id": "b", "v": "b"}\n')
    assert changed_since_head(root, "--cases") == [
        "fam[b]"
    ]  # the one row that changed, through the link
    (root / "scripts/current.py").unlink()
    link(root, "scripts/current.py", "other.py")
    assert changed_since_head(root, "--cases") == ["fam[b]", "script_ok"]


def repoint(root: Path, name: str, target: str) -> None:
    (root / name).unlink()
    link(root, name, target)


def test_a_link_to_a_folder_pointed_elsewhere_selects_the_checks_that_read_through_it(
    tmp_path: Path,
) -> None:
    # `out -> build-v1` pointed at build-v2, whose plan.json is as REF held it: git names only
    # `out` changed, and plan_ok now grades another file. It selected nothing; a link no
    # check's file goes through (`spare`) still selects nothing.
    root = linked_project(
        tmp_path,
        files={
            "eval_checks/plan.yaml": PLAN_CHECK,
            "eval_checks/chained.yaml": PLAN_CHECK.replace("plan_ok", "chained_ok").replace(
                "out/", "chained/"
            ),
            "eval_checks/script.yaml": script_check(
                "script_ok", script_path="../scripts/current/check.py", inputs=[]
            ),
            # A pattern naming the link matches it by its text, which git compares.
            "eval_checks/named.yaml": script_check("named_ok", script="pass\n", inputs=["out"]),
            # Its input is a link to a file through a link to a folder: in/plan.json ->
            # ../current/plan.json, current -> build-v1.
            "eval_checks/input.yaml": script_check("input_ok", script="pass\n", inputs=["in/**"]),
            "build-v1/plan.json": GOOD_PLAN,
            "build-v2/plan.json": BAD_PLAN,
            "scripts/v1/check.py": "pass\n",
            "scripts/v2/check.py": "pass  # v2\n",
        },
        replay=False,
    )
    for name, target in [
        ("out", "build-v1"),
        ("spare", "build-v1"),
        ("latest", "build-v1"),
        ("chained", "latest"),  # a chain: chained -> latest -> build-v1
        ("scripts/current", "v1"),
        ("current", "build-v1"),
        ("in/plan.json", "../current/plan.json"),
    ]:
        link(root, name, target)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "linked")
    assert changed_since_head(root) == []
    repoint(root, "spare", "build-v2")
    assert changed_since_head(root) == []
    repoint(root, "out", "build-v2")
    assert changed_since_head(root) == ["named_ok", "plan_ok"]
    repoint(root, "scripts/current", "v2")
    assert changed_since_head(root) == ["named_ok", "plan_ok", "script_ok"]
    repoint(root, "latest", "build-v2")
    assert changed_since_head(root) == ["chained_ok", "named_ok", "plan_ok", "script_ok"]
    repoint(root, "current", "build-v2")
    assert changed_since_head(root) == [
        "chained_ok",
        "input_ok",
        "named_ok",
        "plan_ok",
        "script_ok",
    ]
    git(root, "add", "-A")
    git(root, "commit", "-qm", "repointed")
    assert verdicts(root, "--changed-since", "HEAD~1", "--cache", "off") == {
        "chained_ok": "failed",
        "input_ok": "passed",
        "named_ok": "passed",
        "plan_ok": "failed",
        "script_ok": "passed",
    }
