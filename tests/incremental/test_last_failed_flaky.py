"""`--last-failed` after a run that `--fail-on-flaky` failed: the flaky check is remembered."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cache.rig import script_check
from tests.processes import eb_process

# Fails the first of every three samples (each sample takes the next number from `state/`).
_FLAKY = """\
schema_version: 1
id: flaky
type: deterministic
description: Fails one sample of three.
repeats: 3
aggregate: majority
script: |
  import os, sys
  n = 0
  while True:
      try:
          os.close(os.open(f"state/s.{n}", os.O_CREAT | os.O_EXCL)); break
      except FileExistsError:
          n += 1
  sys.exit(1 if n % 3 == 0 else 0)
"""


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "eval_checks").mkdir(parents=True)
    (root / "state").mkdir()
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana/config.toml").write_text('[cache]\nmode = "off"\n')
    (root / "eval_checks/flaky.yaml").write_text(_FLAKY)
    (root / "eval_checks/steady.yaml").write_text(script_check("steady", script="pass\n"))
    return root


def _remembered(root: Path) -> dict[str, dict[str, str]]:
    path = root / ".eval-banana/lastfailed.json"
    if not path.exists():
        return {}
    failed: dict[str, dict[str, str]] = json.loads(path.read_text())["failed"]
    return failed


def _fresh_samples(root: Path) -> None:
    for sample in (root / "state").iterdir():
        sample.unlink()


def test_a_flaky_check_that_failed_the_run_is_rerun_by_last_failed(tmp_path: Path) -> None:
    root = _project(tmp_path)
    first = eb_process(root, "run", "--fail-on-flaky")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "- flaky: passed (flaky, 2/3 samples passed)" in first.stdout
    assert {check: entry["status"] for check, entry in _remembered(root).items()} == {
        "flaky": "flaky"
    }
    _fresh_samples(root)
    rerun = eb_process(
        root, "run", "--last-failed", "--last-failed-none", "skip", "--fail-on-flaky"
    )
    assert rerun.returncode == 1, rerun.stdout + rerun.stderr
    assert [line for line in rerun.stdout.splitlines() if line.startswith("- ")] == [
        "- flaky: passed (flaky, 2/3 samples passed) - 2 of 3 samples passed (majority)"
    ]


def test_without_fail_on_flaky_a_flaky_pass_is_forgotten(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert eb_process(root, "run", "--fail-on-flaky").returncode == 1
    _fresh_samples(root)
    # The verdict of this run takes the rule's pass: it counts as one.
    passed = eb_process(root, "run", "--last-failed")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert _remembered(root) == {}
