"""A retried judge's verdict reused from the cache brings back every file its result names:
its earlier attempts' outputs and results too, whether one verdict is reused or the whole run
is replayed; an entry that lacks one of them is a miss, never a reuse with dangling paths."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.cache.rig import write_signed
from tests.processes import eb_process

# Crashes on its first call (a transient failure, retried), answers a pass on every later one.
FLAKY_AGENT = """\
import json, os, sys
counter = {counter!r}
calls = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(calls + 1))
if calls == 0:
    print("partial")
    print("rate limited, HTTP 503", file=sys.stderr)
    sys.exit(3)
print(json.dumps({{"score": 1, "reason": "fine"}}))
"""


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A project of one judge whose agent fails its first call; the root and the call counter."""
    counter = tmp_path / "calls"
    agent = tmp_path / "agent.py"
    agent.write_text(FLAKY_AGENT.format(counter=str(counter)))
    root = tmp_path / "proj"
    (root / ".eval-banana").mkdir(parents=True)
    (root / "eval_checks").mkdir()
    (root / ".eval-banana" / "config.toml").write_text(
        textwrap.dedent(
            f"""\
            [discovery]
            exclude_dirs = [".eval-banana"]

            [cache]
            mode = "on"

            [harness]
            agent = "flaky"
            retries = 1

            [agents.flaky]
            command = {json.dumps([sys.executable, str(agent)])}
            model_flag = ""
            """
        )
    )
    (root / "eval_checks" / "j.yaml").write_text(
        "schema_version: 1\nid: j\ntype: harness_judge\ndescription: d\ninstructions: i\n"
    )
    return root, counter


def _run(root: Path) -> tuple[dict[str, Any], Path, str]:
    """One `eb run`: the judge's result, its run folder and what the run said on stderr."""
    done = eb_process(root, "run")
    assert done.returncode == 0, done.stdout + done.stderr
    (report,) = re.findall(r"^Report: (\S+)", done.stdout, flags=re.MULTILINE)
    (check,) = json.loads(Path(report).read_text())["checks"]
    return check, Path(report).parent, done.stderr


def _missing(check: dict[str, Any], run_dir: Path) -> list[str]:
    """The files the result's attempts name that the run folder lacks."""
    return [
        path
        for attempt in check["details"]["attempts"]
        for path in attempt["evidence"].values()
        if not (run_dir / path).is_file()
    ]


def test_a_reused_retried_verdict_brings_back_every_attempt_s_files(tmp_path: Path) -> None:
    root, counter = _project(tmp_path)
    fresh, fresh_dir, _ = _run(root)
    assert len(fresh["details"]["attempts"]) == 2
    assert _missing(fresh, fresh_dir) == []
    for replayed in (False, True):  # the verdict reused, then the whole run replayed
        reused, run_dir, stderr = _run(root)
        assert ("Replayed run" in stderr) is replayed, stderr
        assert reused["details"]["cache"]["hit"] is True
        assert _missing(reused, run_dir) == []
        first = run_dir / reused["details"]["attempts"][0]["evidence"]["stderr"]
        assert "HTTP 503" in first.read_text()
    assert counter.read_text() == "2"  # no agent started after the first run


def test_an_entry_without_an_attempt_s_files_is_a_miss(tmp_path: Path) -> None:
    root, counter = _project(tmp_path)
    _run(root)
    cache = root / ".eval-banana" / "cache"
    (entry,) = sorted((cache / "entries").glob("*/*.json"))
    document = json.loads(entry.read_text())
    # As an eb that kept only the last attempt's files stored it.
    document["files"] = [f for f in document["files"] if not f["name"].startswith("attempt")]
    write_signed(cache_dir=cache, path=entry, document=document)
    check, run_dir, stderr = _run(root)
    assert check["details"]["cache"]["hit"] is False
    assert "which its result names; it counts as a miss" in stderr
    assert counter.read_text() == "3"  # judged again
    assert _missing(check, run_dir) == []
