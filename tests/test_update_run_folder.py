"""`eb status` and `eb update` over what a run folder holds besides its stage files.

Each case is made on a real project (tests/test_update.py's `Proj`: every check logs each time
it runs), then judged and rebuilt through the real CLI.
"""

from __future__ import annotations

import json
from collections import Counter

from tests.test_update import Proj, _rerun_stages, _rows, _run_once, _status_ok
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
