"""`eb merge` and the frozen scripts of the shards: a family's one script frozen by every shard
that ran some of its cases, and merges refused while the evidence comes in, which leave no run
folder behind."""

from __future__ import annotations

import json
from pathlib import Path

from tests.processes import eb_process

_FAMILY = """\
schema_version: 1
id: fam
type: deterministic
description: "case {{ case.id }}"
cases:
  - {id: a}
  - {id: b}
  - {id: c}
  - {id: d}
  - {id: e}
  - {id: f}
script_path: ../scripts/ok.py
"""

_PLAIN = """\
schema_version: 1
id: plain_{n}
type: deterministic
description: plain {n}
script_path: ../scripts/ok.py
"""


def _project(root: Path, *, family: bool) -> Path:
    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana/config.toml").write_text('[cache]\nmode = "off"\n')
    (root / "scripts").mkdir()
    (root / "scripts/ok.py").write_text('print("ok")\n')
    (root / "eval_checks").mkdir()
    if family:
        (root / "eval_checks/fam.yaml").write_text(_FAMILY)
    else:
        for n in range(4):
            (root / f"eval_checks/plain_{n}.yaml").write_text(_PLAIN.format(n=n))
    return root


def _shards(tmp_path: Path, *, family: bool) -> list[Path]:
    root = _project(tmp_path / "proj", family=family)
    shards = []
    for k in (1, 2):
        out = tmp_path / f"s{k}"
        ran = eb_process(
            root, "run", "--shard", f"{k}/2", "--output-dir", str(out), "--flat-output"
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
        shards.append(out)
    return shards


def _snapshots(run_dir: Path) -> list[Path]:
    return sorted((run_dir / "stages/snapshots").iterdir())


def test_a_family_whose_cases_fell_in_both_shards_merges_with_its_one_script(
    tmp_path: Path,
) -> None:
    shards = _shards(tmp_path, family=True)
    # Both shards ran cases of the family, and each froze the family's script.
    assert [p.name for p in _snapshots(shards[0])] == [p.name for p in _snapshots(shards[1])]
    merged = tmp_path / "merged"
    result = eb_process(tmp_path / "proj", "merge", *map(str, shards), "--output-dir", str(merged))
    assert result.returncode == 0, result.stdout + result.stderr
    (run_dir,) = merged.iterdir()
    report = json.loads((run_dir / "report.json").read_text())
    assert (report["total_checks"], report["passed_checks"]) == (6, 6)
    (frozen,) = _snapshots(run_dir)
    assert frozen.read_text() == 'print("ok")\n'
    status = eb_process(tmp_path / "proj", "status", "--run-dir", str(run_dir))
    assert status.returncode == 0, status.stdout + status.stderr


def test_copies_of_the_family_script_that_differ_are_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    shards = _shards(tmp_path, family=True)
    (edited,) = _snapshots(shards[1])
    edited.write_text('print("other")\n')
    merged = tmp_path / "merged"
    result = eb_process(tmp_path / "proj", "merge", *map(str, shards), "--output-dir", str(merged))
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("Cannot merge: the shards froze stages/snapshots/fam-")
    assert str(edited) in result.stderr
    assert not merged.exists()


def test_a_merge_refused_while_bringing_the_evidence_leaves_no_run_folder(
    tmp_path: Path,
) -> None:
    shards = _shards(tmp_path, family=False)
    gone = _snapshots(shards[1])[0]
    gone.unlink()  # a shard folder that lost a frozen script only it holds
    merged = tmp_path / "merged"
    result = eb_process(tmp_path / "proj", "merge", *map(str, shards), "--output-dir", str(merged))
    assert result.returncode == 2, result.stdout + result.stderr
    assert str(gone) in result.stderr
    assert not merged.exists()
    # An empty --flat-output folder given is left as it was: empty.
    flat = tmp_path / "flat"
    flat.mkdir()
    again = eb_process(
        tmp_path / "proj", "merge", *map(str, shards), "--output-dir", str(flat), "--flat-output"
    )
    assert again.returncode == 2, again.stdout + again.stderr
    assert list(flat.iterdir()) == []
