"""`eb update` keeps a run's selection and its verdicts honest: what it rebuilds is the run it
was made as, and what it finds is remembered as `eb run` remembers it.

Every test drives real `eb` processes in a real git repository.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cache.rig import script_check
from tests.gitrepo import commit_all, git, init_repo
from tests.processes import eb_process

# add() as the project ships it, and broken.
GOOD_ADD = "def add(a, b):\n    return a + b\n"
BROKEN_ADD = "def add(a, b):\n    return a - b\n"
# A check that imports src/calc.py and fails while add() is broken.
CALC_SCRIPT = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "ctx = json.loads(Path(sys.argv[1]).read_text())\n"
    "sys.path.insert(0, str(Path(ctx['project_root']) / 'src'))\n"
    "from calc import add\n"
    "assert add(2, 3) == 5, add(2, 3)\n"
)


@pytest.fixture(autouse=True)
def _no_repository_above(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def _calc_project(tmp_path: Path) -> Path:
    return init_repo(
        tmp_path / "proj",
        {
            ".gitignore": ".eval-banana/results/\n.eval-banana/lastfailed.json\n",
            ".eval-banana/config.toml": "",
            "src/calc.py": GOOD_ADD,
            "eval_checks/calc.yaml": script_check(
                "calc_adds", script=CALC_SCRIPT, inputs=["src/*.py"]
            ),
        },
    )


def _eb(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return eb_process(root, *args)


def _remembered(root: Path) -> list[str]:
    record = root / ".eval-banana" / "lastfailed.json"
    if not record.exists():
        return []
    return sorted(json.loads(record.read_text())["failed"])


def test_update_remembers_what_it_finds_failing_and_forgets_what_it_fixed(
    tmp_path: Path,
) -> None:
    root = _calc_project(tmp_path)
    assert _eb(root, "run").returncode == 0
    (root / "src" / "calc.py").write_text(BROKEN_ADD)
    updated = _eb(root, "update")
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert _remembered(root) == ["calc_adds"]
    # The next --last-failed run reruns the failure the update found.
    again = _eb(root, "run", "--last-failed", "--last-failed-none", "skip")
    assert again.returncode == 1, again.stdout + again.stderr
    assert "calc_adds: failed" in again.stdout
    # An update that fixes it forgets it: --last-failed then has nothing to rerun.
    (root / "src" / "calc.py").write_text(GOOD_ADD)
    fixed = _eb(root, "update")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert _remembered(root) == []


def test_stage_execute_remembers_what_it_finds_failing_and_forgets_what_it_fixed(
    tmp_path: Path,
) -> None:
    root = _calc_project(tmp_path)
    (root / "eval_checks" / "other.yaml").write_text(
        script_check("other", script="import sys\nsys.exit(1)\n", inputs=[])
    )
    made = _eb(root, "run")
    assert made.returncode == 1, made.stdout + made.stderr
    assert _remembered(root) == ["other"]
    # Rerunning the execute stage by hand finds calc_adds failing: --last-failed reruns it.
    (root / "src" / "calc.py").write_text(BROKEN_ADD)
    staged = _eb(root, "stage", "execute")
    assert staged.returncode == 0, staged.stdout + staged.stderr
    assert _remembered(root) == ["calc_adds", "other"]
    # Fixed and rerun alone, it is forgotten; `other`, which it did not run, is still remembered.
    (root / "src" / "calc.py").write_text(GOOD_ADD)
    again = _eb(root, "stage", "execute", "--check-id", "calc_adds")
    assert again.returncode == 0, again.stdout + again.stderr
    assert _remembered(root) == ["other"]
    rerun = _eb(root, "run", "--last-failed")
    assert rerun.returncode == 1, rerun.stdout + rerun.stderr
    assert "other: failed" in rerun.stdout and "calc_adds" not in rerun.stdout


def _report(root: Path) -> dict[str, str]:
    """Check id -> status, from the newest run's report.json."""
    run_dir = max((root / ".eval-banana" / "results").iterdir())
    report = json.loads((run_dir / "report.json").read_text())
    return {result["check_id"]: result["status"] for result in report["checks"]}


def test_update_keeps_changed_since_on_the_commit_the_run_compared_with(tmp_path: Path) -> None:
    root = _calc_project(tmp_path)
    other = script_check("other", script="pass\n", inputs=["nothing.txt"])
    (root / "eval_checks" / "other.yaml").write_text(other)
    (root / "nothing.txt").write_text("")
    base = commit_all(root, "other")
    (root / "src" / "calc.py").write_text(BROKEN_ADD)
    made = _eb(root, "run", "--changed-since", "HEAD")
    assert made.returncode == 1, made.stdout + made.stderr
    assert _report(root) == {"calc_adds": "failed"}
    run_dir = max((root / ".eval-banana" / "results").iterdir())
    config = json.loads((run_dir / "stages" / "config.json").read_text())
    assert config["selection"]["changed_since"] == "HEAD"
    assert config["selection"]["changed_since_commit"] == base
    # The broken code is committed: HEAD moves past the commit the run compared with. Then
    # an unrelated check file changes, so the plan is made again.
    commit_all(root, "broken add")
    (root / "eval_checks" / "other.yaml").write_text(other.replace("Script other.", "Other."))
    status = _eb(root, "status")
    assert f"--changed-since HEAD is pinned to commit {base}" in status.stdout
    updated = _eb(root, "update")
    # Planned against the same commit: calc_adds is still selected, its failure stands.
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert _report(root) == {"calc_adds": "failed", "other": "passed"}


# A family whose script fails a row with a negative n.
ROWS_CHECK = (
    "schema_version: 1\n"
    "id: {family}\n"
    "type: deterministic\n"
    'description: "row {{{{ case.id }}}} is positive"\n'
    "cases_from: data/{family}.jsonl\n"
    "inputs: []\n"
    "script: |\n"
    "  import json, sys\n"
    "  from pathlib import Path\n"
    "  ctx = json.loads(Path(sys.argv[1]).read_text())\n"
    "  assert ctx['case']['n'] > 0, ctx['case']\n"
)


def _rows(*rows: dict[str, object]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def test_a_row_left_out_that_gains_the_selected_tag_makes_the_plan_stale(
    tmp_path: Path,
) -> None:
    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": ".eval-banana/results/\n.eval-banana/lastfailed.json\n",
            ".eval-banana/config.toml": "",
            "eval_checks/rows.yaml": ROWS_CHECK.format(family="rows"),
            "eval_checks/more.yaml": ROWS_CHECK.format(family="more"),
            # rows: planned in part under --tag fast; more: none of its rows planned.
            "data/rows.jsonl": _rows(
                {"id": "a", "n": 1, "tags": ["fast"]}, {"id": "b", "n": -2}, {"id": "c", "n": 3}
            ),
            "data/more.jsonl": _rows({"id": "x", "n": -1}, {"id": "y", "n": 1}),
        },
    )
    made = _eb(root, "run", "--tag", "fast")
    assert made.returncode == 0, made.stdout + made.stderr
    assert _report(root) == {"rows[a]": "passed"}
    # A row the selection left out changes only in what no selection reads: nothing to do.
    (root / "data" / "rows.jsonl").write_text(
        _rows({"id": "a", "n": 1, "tags": ["fast"]}, {"id": "b", "n": -2}, {"id": "c", "n": 4})
    )
    (root / "data" / "more.jsonl").write_text(_rows({"id": "x", "n": -5}, {"id": "y", "n": 1}))
    assert _eb(root, "status").returncode == 0
    # Row b gains the tag the run selected: the plan is stale, and the update runs b.
    (root / "data" / "rows.jsonl").write_text(
        _rows(
            {"id": "a", "n": 1, "tags": ["fast"]},
            {"id": "b", "n": -2, "tags": ["fast"]},
            {"id": "c", "n": 4},
        )
    )
    status = _eb(root, "status")
    assert status.returncode == 1, status.stdout
    assert "rows: a row's id, tags or skip changed in data/rows.jsonl" in status.stdout
    updated = _eb(root, "update")
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert _report(root) == {"rows[a]": "passed", "rows[b]": "failed"}
    # So does a row of a family none of whose rows the run planned.
    (root / "data" / "more.jsonl").write_text(
        _rows({"id": "x", "n": -5, "tags": ["fast"]}, {"id": "y", "n": 1})
    )
    status = _eb(root, "status")
    assert "more: a row's id, tags or skip changed in data/more.jsonl" in status.stdout
    updated = _eb(root, "update")
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert _report(root) == {"more[x]": "failed", "rows[a]": "passed", "rows[b]": "failed"}
    assert _eb(root, "status").returncode == 0


@pytest.mark.parametrize(
    ("selection", "reads_tags"),
    [
        (("--check-id", "rows[a]"), False),
        (("-k", "rows[a]"), False),  # -k matches ids, never tags
        (("--tag", "fast"), True),
    ],
)
def test_a_tag_edited_on_a_row_left_out_counts_only_under_a_selection_that_reads_tags(
    tmp_path: Path, selection: tuple[str, str], reads_tags: bool
) -> None:
    """The plan records what its selection picks rows by: under --check-id or -k a row's tags
    pick nothing, so a tag added to a row the run left out leaves every stage ok and `eb
    update` with nothing to do, as a fresh run with that selection would still run rows[a]
    alone; under --tag the row is picked now, and the update runs it."""
    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": ".eval-banana/results/\n.eval-banana/lastfailed.json\n",
            ".eval-banana/config.toml": "",
            "eval_checks/rows.yaml": ROWS_CHECK.format(family="rows"),
            "data/rows.jsonl": _rows(
                {"id": "a", "n": 1, "tags": ["fast"]}, {"id": "b", "n": -2}, {"id": "c", "n": 3}
            ),
        },
    )
    made = _eb(root, "run", *selection)
    assert made.returncode == 0, made.stdout + made.stderr
    assert _report(root) == {"rows[a]": "passed"}
    (root / "data" / "rows.jsonl").write_text(
        _rows(
            {"id": "a", "n": 1, "tags": ["fast"]},
            {"id": "b", "n": -2, "tags": ["fast"]},
            {"id": "c", "n": 3},
        )
    )
    status = _eb(root, "status")
    updated = _eb(root, "update")
    if reads_tags:
        assert status.returncode == 1, status.stdout
        assert "rows: a row's id, tags or skip changed in data/rows.jsonl" in status.stdout
        assert updated.returncode == 1, updated.stdout + updated.stderr
        assert _report(root) == {"rows[a]": "passed", "rows[b]": "failed"}
    else:
        assert status.returncode == 0, status.stdout
        assert updated.returncode == 0, updated.stdout + updated.stderr
        assert "Nothing to update" in updated.stdout
        assert _report(root) == {"rows[a]": "passed"}


def _validate_row(root: Path) -> str:
    status = _eb(root, "status")
    (row,) = [line for line in status.stdout.splitlines() if line.split()[:1] == ["validate"]]
    return row


def test_a_plan_an_earlier_eb_made_keeps_its_family_picks_while_its_rows_are_as_they_were(
    tmp_path: Path,
) -> None:
    """An earlier eb recorded, whatever the selection, one digest of every row's id, tags and
    skip: such a plan is ok while those are as they were (not stale for being made by another
    eb), and compared as it was made once they differ."""
    import hashlib

    rows = [{"id": "a", "n": 1, "tags": ["fast"]}, {"id": "b", "n": -2}, {"id": "c", "n": 3}]
    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": ".eval-banana/results/\n.eval-banana/lastfailed.json\n",
            ".eval-banana/config.toml": "",
            "eval_checks/rows.yaml": ROWS_CHECK.format(family="rows"),
            "data/rows.jsonl": _rows(*rows),
        },
    )
    made = _eb(root, "run", "--check-id", "rows[a]")
    assert made.returncode == 0, made.stdout + made.stderr
    # The digest as an earlier eb made it, worked out here: [id, sorted tags, skip] per row.
    earlier = [["a", ["fast"], None], ["b", [], None], ["c", [], None]]
    text = json.dumps(earlier, ensure_ascii=False, separators=(",", ":"))
    run_dir = max((root / ".eval-banana" / "results").iterdir())
    plan_path = run_dir / "stages" / "plan.json"
    plan = json.loads(plan_path.read_text())
    assert set(plan["family_picks"]) == {"eval_checks/rows.yaml"}
    plan["family_picks"]["eval_checks/rows.yaml"] = (
        f"sha256:{hashlib.sha256(text.encode()).hexdigest()}"
    )
    plan_path.write_text(json.dumps(plan, indent=2) + "\n")
    assert _validate_row(root).split()[2:] == ["ok"]
    # Its digest covers every row's tags: a tag edited on a row it left out is a change of it.
    rows[1] = {"id": "b", "n": -2, "tags": ["fast"]}
    (root / "data" / "rows.jsonl").write_text(_rows(*rows))
    assert "rows: a row's id, tags or skip changed in data/rows.jsonl" in _validate_row(root)


# An assertions check over out/<name>.json that fails once its `ok` is false.
GRADES = (
    "schema_version: 1\n"
    "id: {name}\n"
    "type: assertions\n"
    "description: grades {name}\n"
    "artifact: out/{name}.json\n"
    "inputs: [out/{name}.json]\n"
    "assert:\n"
    "  - {{path: ok, op: equals, value: true}}\n"
)


def test_a_check_changed_since_left_out_is_planned_once_its_input_differs_from_the_pinned_commit(
    tmp_path: Path,
) -> None:
    """A --changed-since run selects what differs from its pinned commit: an input of a check
    it left out, edited after the run, makes a plan made again select that check too, so the
    plan is stale and `eb update` runs it (it said every stage was ok, and passed)."""
    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": ".eval-banana/results/\n.eval-banana/lastfailed.json\n",
            ".eval-banana/config.toml": "",
            "eval_checks/a.yaml": GRADES.format(name="chk_a"),
            "eval_checks/b.yaml": GRADES.format(name="chk_b"),
            "out/chk_a.json": '{"ok": true}',
            "out/chk_b.json": '{"ok": true}',
        },
    )
    base = git(root, "rev-parse", "HEAD").strip()
    (root / "out" / "chk_a.json").write_text('{"ok": true }')
    made = _eb(root, "run", "--changed-since", "HEAD")
    assert made.returncode == 0, made.stdout + made.stderr
    assert _report(root) == {"chk_a": "passed"}
    assert _eb(root, "status").returncode == 0
    (root / "out" / "chk_b.json").write_text('{"ok": false}')
    status = _eb(root, "status")
    assert status.returncode == 1, status.stdout
    assert f"--changed-since {base} now also selects chk_b" in status.stdout
    updated = _eb(root, "update")
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert _report(root) == {"chk_a": "passed", "chk_b": "failed"}
    assert _eb(root, "status").returncode == 0
    # chk_a as the pinned commit holds it: a plan made again selects it no longer.
    (root / "out" / "chk_a.json").write_text('{"ok": true}')
    status = _eb(root, "status")
    assert f"--changed-since {base} no longer selects chk_a" in status.stdout
    updated = _eb(root, "update")
    assert _report(root) == {"chk_b": "failed"}


def test_a_row_changed_since_left_out_is_planned_once_it_differs_from_the_pinned_commit(
    tmp_path: Path,
) -> None:
    """Under --changed-since a row is selected by whether it differs from the pinned commit:
    a row the run left out, edited after it, is one a plan made again selects, whatever field
    changed (not only its id, tags or skip, as under --tag)."""
    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": ".eval-banana/results/\n.eval-banana/lastfailed.json\n",
            ".eval-banana/config.toml": "",
            "eval_checks/rows.yaml": ROWS_CHECK.format(family="rows"),
            "data/rows.jsonl": _rows({"id": "a", "n": 1}, {"id": "b", "n": 2}, {"id": "c", "n": 3}),
        },
    )
    base = git(root, "rev-parse", "HEAD").strip()
    (root / "data" / "rows.jsonl").write_text(
        _rows({"id": "a", "n": 1, "note": "x"}, {"id": "b", "n": 2}, {"id": "c", "n": 3})
    )
    made = _eb(root, "run", "--changed-since", "HEAD")
    assert made.returncode == 0, made.stdout + made.stderr
    assert _report(root) == {"rows[a]": "passed"}
    (root / "data" / "rows.jsonl").write_text(
        _rows({"id": "a", "n": 1, "note": "x"}, {"id": "b", "n": 2}, {"id": "c", "n": -3})
    )
    status = _eb(root, "status")
    assert status.returncode == 1, status.stdout
    assert f"--changed-since {base} now also selects rows[c]" in status.stdout
    updated = _eb(root, "update")
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert _report(root) == {"rows[a]": "passed", "rows[c]": "failed"}
    assert _eb(root, "status").returncode == 0


def test_a_pinned_commit_a_rebase_and_gc_removed_makes_the_plan_stale_and_update_refuse(
    tmp_path: Path,
) -> None:
    """The commit a --changed-since run pinned, rewritten by a rebase and pruned: nothing can
    say whether an input edited since selects a check more, so status calls the plan stale
    (it said every stage was ok) and `eb update` refuses (it passed), naming the commit."""
    root = init_repo(
        tmp_path / "proj",
        {
            ".gitignore": ".eval-banana/results/\n.eval-banana/lastfailed.json\n",
            ".eval-banana/config.toml": "",
            "eval_checks/a.yaml": GRADES.format(name="chk_a"),
            "eval_checks/b.yaml": GRADES.format(name="chk_b"),
            "out/chk_a.json": '{"ok": true}',
            "out/chk_b.json": '{"ok": true}',
        },
    )
    git(root, "checkout", "-q", "-b", "feat")
    (root / "t.txt").write_text("tmp\n")
    commit_all(root, "tmp")
    pinned = git(root, "rev-parse", "HEAD").strip()
    (root / "out" / "chk_a.json").write_text('{"ok": true }')
    commit_all(root, "touch chk_a")
    made = _eb(root, "run", "--changed-since", "HEAD~1")
    assert made.returncode == 0, made.stdout + made.stderr
    assert _report(root) == {"chk_a": "passed"}
    # Reword the pinned commit and drop the old one from the object store.
    git(root, "reset", "-q", "--soft", "HEAD~2")
    git(root, "commit", "-q", "-m", "both at once")
    git(root, "reflog", "expire", "--expire=now", "--all")
    git(root, "gc", "-q", "--prune=now")
    assert subprocess.run(["git", "cat-file", "-e", pinned], cwd=root).returncode != 0
    (root / "out" / "chk_b.json").write_text('{"ok": false}')
    status = _eb(root, "status")
    assert status.returncode == 1, status.stdout
    gone = f"pinned to commit {pinned}, which the repository no longer holds"
    assert gone in status.stdout and "eb update plans against it" not in status.stdout
    assert "eb run --changed-since <ref>" in status.stdout
    updated = _eb(root, "update")
    assert updated.returncode == 2, updated.stdout + updated.stderr
    assert f"the run was pinned to commit {pinned}" in updated.stderr
    assert "fetch " + pinned + " first" not in updated.stderr
