"""Kept runs that are valid by their schema but do not agree with themselves, under fuzzing.

A failing run is kept; hypothesis then edits its record (or a stored file it names) within the
published schema: another exit code, other digests, verdict keys, slots, counts or reports.
Whatever the edit, the run exits 1 and says `Passed: no`, either replayed or the usual way, and
never with a traceback (an exception out of `eval_banana.cli.main` fails the example).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eval_banana.cli import main
from tests.cache.rig import Project, make_project, script_check

DIGESTS = st.binary(min_size=1, max_size=8).map(
    lambda data: "sha256:" + hashlib.sha256(data).hexdigest()
)
# Same-length replacements of the values a score or report holds (slots stay where they were).
VALUES = {
    b"false": [b"true "],
    b"true": [b"false"[:4]],
    b'"failed"': [b'"passed"'],
    b"0": [b"1", b"2"],
    b"1": [b"0", b"2"],
    b"2": [b"0", b"1"],
    b"50.0": [b"99.9", b"100 "],
    b"1.0": [b"0.5", b"0.0"],
}
SCALAR = re.compile(rb'"(\w+)": (false|true|"failed"|50\.0|1\.0|\d)(?=[,\n])')


def _eb(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue()


def _edit_file(project: Project, record: dict[str, Any], index: int, pick: int) -> None:
    """One scalar of a stored stage file or report replaced by another of its length."""
    template = record["templates"][index % len(record["templates"])]
    blob = project.cache_dir / "blobs" / template["sha256"][7:9] / template["sha256"][7:]
    if not blob.is_file():
        return  # an earlier example's record named it with another size: it was let go
    data = blob.read_bytes()
    found = list(SCALAR.finditer(data))
    if not found:
        return
    match = found[pick % len(found)]
    old = match.group(2)
    new = VALUES[old][pick % len(VALUES[old])]
    data = data[: match.start(2)] + new.ljust(len(old)) + data[match.end(2) :]
    digest = hashlib.sha256(data).hexdigest()
    target = project.cache_dir / "blobs" / digest[:2] / digest
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    template["sha256"] = f"sha256:{digest}"


def _edits(project: Project) -> st.SearchStrategy[Callable[[dict[str, Any]], None]]:
    def setter(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
        def change(record: dict[str, Any]) -> None:
            target: Any = record
            for part in path[:-1]:
                target = target[part % len(target)] if isinstance(part, int) else target[part]
            if target or not isinstance(path[-1], int):
                key = path[-1] % len(target) if isinstance(path[-1], int) else path[-1]
                target[key] = value

        return change

    def swap_templates(i: int, j: int) -> Callable[[dict[str, Any]], None]:
        def change(record: dict[str, Any]) -> None:
            items = record["templates"]
            a, b = items[i % len(items)], items[j % len(items)]
            a["sha256"], b["sha256"] = b["sha256"], a["sha256"]

        return change

    def file_edit(index: int, pick: int) -> Callable[[dict[str, Any]], None]:
        return lambda record: _edit_file(project, record, index, pick)

    ints = st.integers(min_value=0, max_value=50)
    return st.one_of(
        st.just(setter(["exit_code"], 0)),
        DIGESTS.map(lambda d: setter(["whole_project"], d)),
        DIGESTS.map(lambda d: setter(["verdict_keys", 0], d)),
        st.just(lambda record: record["verdict_keys"].reverse()),
        st.just(lambda record: record.update(verdict_keys=[])),
        st.builds(swap_templates, ints, ints),
        st.builds(lambda i, n: setter(["templates", i, "slots", 0, "offset"], n), ints, ints),
        st.builds(file_edit, ints, ints),
        st.text(max_size=20).map(lambda text: setter(["progress", 0], text)),
        st.just(lambda record: record.update(files=record["files"][1:])),
    )


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_an_inconsistent_kept_run_never_turns_a_failing_run_green(
    tmp_path: Path, eb: Callable[..., Any], data: st.DataObject
) -> None:
    project = _kept_failing(tmp_path, eb)
    path = next((project.cache_dir / "runs").rglob("*.json"))
    sound = path.read_bytes()
    for _ in range(data.draw(st.integers(min_value=1, max_value=2))):
        record = json.loads(path.read_bytes())
        data.draw(_edits(project))(record)
        path.write_text(json.dumps(record))
        code, out = _eb("run", "--cwd", str(project.root))
        assert code == 1, out
        assert "Passed: no" in out
        path.write_bytes(sound)


_BUILT: dict[Path, Project] = {}


def _kept_failing(tmp_path: Path, eb: Callable[..., Any]) -> Project:
    """A failing run kept as a replay, built once per test (hypothesis reuses `tmp_path`)."""
    if tmp_path not in _BUILT:
        checks = {
            "bad": script_check("bad", script="import sys\nsys.exit(1)\n"),
            "good": script_check("good", script="pass\n"),
        }
        project = make_project(tmp_path=tmp_path, eb=eb, checks=checks, files={})
        for _ in range(3):
            assert _eb("run", "--cwd", str(project.root))[0] == 1
        _BUILT[tmp_path] = project
    return _BUILT[tmp_path]
