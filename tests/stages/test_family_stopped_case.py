"""A SIGINT that stops a family's case part-way (`Stopped: interrupted`): a real `eb run`.
The case is one the stop kept from an outcome, not an error of the family's, so the family's
gate is judged on the cases that ran, in the console, report.json, report.md, JUnit and the
history record alike (the run itself is red: it was interrupted)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.forking import default_sigint

REPO = Path(__file__).resolve().parents[2]
FAMILY = """\
schema_version: 1
id: fam
type: deterministic
description: case {{ case.id }} sleeps {{ case.s }}
min_pass_rate: 0.9
cases:
  - {id: a, s: "0"}
  - {id: b, s: "0"}
  - {id: c, s: "0"}
  - {id: slow, s: "60"}
script: |
  import json, sys, time
  from pathlib import Path
  ctx = json.loads(Path(sys.argv[1]).read_text())
  seconds = int(ctx["description"].split()[-1])
  if seconds:
      Path(ctx["project_root"], "slow.started").write_text("")
  time.sleep(seconds)
"""


def test_a_case_stopped_part_way_is_not_run_for_its_family_gate(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "eval_checks").mkdir(parents=True)
    (root / ".eval-banana").mkdir()
    (root / ".eval-banana" / "config.toml").write_text("")
    (root / "eval_checks" / "fam.yaml").write_text(FAMILY)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("EVAL_BANANA_")}
    junit = tmp_path / "junit.xml"
    run = subprocess.Popen(
        [sys.executable, "-m", "eval_banana", "run", "--cwd", str(root), "--junit-xml", str(junit)],
        env={**environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )
    try:
        deadline = time.monotonic() + 60
        while not (root / "slow.started").exists():
            assert time.monotonic() < deadline, "the slow case never started"
            assert run.poll() is None, run.communicate()
            time.sleep(0.05)
        time.sleep(1.0)  # the other cases have ended
        run.send_signal(signal.SIGINT)
        stdout, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    told = stdout.decode() + stderr.decode()
    assert run.returncode == 3, told
    assert "Stopped: interrupted" in told
    assert "NOT held" not in told
    assert "Family fam: 3/3 cases passed" in told, told
    [run_dir] = (root / ".eval-banana" / "results").iterdir()
    [family] = json.loads((run_dir / "report.json").read_text())["families"]
    assert (family["cases"], family["passed"], family["errored"]) == (3, 3, 0), family
    assert (family["not_run"], family["gate_held"]) == (1, True), family
    assert "NOT held" not in (run_dir / "report.md").read_text()
    assert "NOT held" not in junit.read_text()
    [record] = [
        json.loads(path.read_text()) for path in (root / ".eval-banana" / "history").glob("*.json")
    ]
    assert not record.get("gates_not_held"), record
    assert record["exit_code"] == 3, record
