"""`eb status` and `eb update` over what a run folder holds besides its stage files.

Each case is made on a real project (tests/test_update.py's `Proj`: every check logs each time
it runs), then judged and rebuilt through the real CLI.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tests.test_update import STAGES, Proj, _kept, _rerun_stages, _rows, _run_once, _status_ok
from tests.test_update import proj as proj  # noqa: F401 - fixture


def test_deleted_reports_are_written_again_without_running_a_check(proj: Proj) -> None:
    """With report.json and report.md gone, `eb status` said ok and `eb update` "Nothing to
    update", while `eb diff` refused the folder as unfinished."""
    before = _run_once(proj)
    for name in ("report.json", "report.md"):
        (proj.run_dir / name).unlink()
    status = proj.eb("status")
    assert status.exit_code == 1
    assert "stale  (report.json and report.md are missing)" in _rows(status.stdout)["report"]
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert _rerun_stages(updated.stdout) == ["report"]
    assert proj.ran() == Counter(proj.checks)
    assert proj.results() == before
    assert json.loads((proj.run_dir / "report.json").read_text())["run_passed"] is True
    assert (proj.run_dir / "report.md").is_file()
    _status_ok(proj)


def _snapshot(proj: Proj) -> Path:
    (snapshot,) = (proj.run_dir / "stages" / "snapshots").iterdir()
    return snapshot


def test_a_deleted_snapshot_is_frozen_again_before_its_check_runs(proj: Proj) -> None:
    """A deleted frozen script was not seen by `eb status`, and `eb update` ran its check into
    a raw "[Errno 2] No such file or directory"."""
    _run_once(proj)
    snapshot = _snapshot(proj)
    snapshot.unlink()
    status = proj.eb("status")
    assert status.exit_code == 1
    relative = snapshot.relative_to(proj.run_dir).as_posix()
    assert f"stale  ({relative} is missing)" in _rows(status.stdout)["validate"]
    proj.script.write_text(proj.script.read_text() + "# edited\n")
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert "rerun scripted: eval_checks/scripts/scripted.py changed" in updated.stdout
    assert proj.results()["scripted"]["status"] == "passed"
    assert snapshot.read_bytes() == proj.script.read_bytes()
    _status_ok(proj)


def test_an_edited_snapshot_is_frozen_again_from_the_script(proj: Proj) -> None:
    """An edited frozen script was not seen, and the next rerun of its check ran the edited
    bytes rather than the ones its definition digest names."""
    before = _run_once(proj)
    snapshot = _snapshot(proj)
    snapshot.write_text("raise SystemExit('the edited copy ran')\n")
    status = proj.eb("status")
    relative = snapshot.relative_to(proj.run_dir).as_posix()
    assert f"{relative} was edited after validate froze it" in _rows(status.stdout)["validate"]
    updated = proj.eb("update")
    assert updated.exit_code == 0, updated.stdout + updated.stderr
    assert _rerun_stages(updated.stdout) == list(STAGES[2:])
    assert snapshot.read_bytes() == proj.script.read_bytes()
    _kept(before, proj.results(), proj.checks)  # the results were judged on the right bytes
    rerun = proj.eb("stage", "execute", "--check-id", "scripted")
    assert rerun.exit_code == 0, rerun.stdout + rerun.stderr
    assert proj.results()["scripted"]["status"] == "passed"


def test_a_check_whose_snapshot_is_gone_at_run_time_errors_with_the_fix(proj: Proj) -> None:
    _run_once(proj)
    _snapshot(proj).unlink()
    proj.eb("stage", "execute", "--check-id", "scripted")
    result = proj.results()["scripted"]
    assert result["status"] == "error"
    error = str(result["error_detail"])
    assert "cannot be read from the run folder" in error, error
    assert "`eb update` freezes it again" in error
