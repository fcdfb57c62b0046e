"""`eb merge` refuses parts that did other work than one machine would have: a worker that tested
other code (an older checkout) than the merge's, or judged with another agent program, or under
other isolation rules, with the same check definitions and the same plan."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

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
