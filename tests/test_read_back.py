"""Files eb reads back are evidence, not truth: a FIFO (or any non-regular file) in place of
one is refused at once naming it, JSON nested 5,000 deep is an error naming the file (never a
RecursionError), YAML aliases cannot make a check file explode, and an id ending in a line
break is a definition error. Each through `eb` as a user meets it, in a subprocess with a
timeout, so a hang fails the test instead of stalling the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.gitrepo import init_repo

DEEP_JSON = "[" * 5000 + "]" * 5000
TIMEOUT_S = 60


def _eb(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "eval_banana", *args]
    if cwd is not None:
        command += ["--cwd", str(cwd)]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _deep(path: Path) -> None:
    path.unlink()
    path.write_text(DEEP_JSON)


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


DAMAGE: dict[str, Callable[[Path], None]] = {"deep": _deep, "fifo": _fifo}


def _no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert "RecursionError" not in done.stderr, done.stderr


def _project(root: Path, *, cache: str = "off", replay: bool = False) -> Path:
    config = textwrap.dedent(
        f"""\
        [core]
        output_dir = "runs"

        [discovery]
        exclude_dirs = [".eval-banana", ".git", "runs"]

        [cache]
        mode = "{cache}"
        replay = {"true" if replay else "false"}
        """
    )
    check = (
        "schema_version: 1\nid: passes\ntype: deterministic\ndescription: Passes.\n"
        "script: print('fine')\n"
    )
    return init_repo(
        root,
        {
            ".eval-banana/config.toml": config,
            ".gitignore": "runs/\n.eval-banana/cache/\n",
            "eval_checks/passes.yaml": check,
        },
    )


def _only_run(root: Path) -> Path:
    (run,) = sorted((root / "runs").iterdir())
    return run


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_stage_file_deep_or_a_fifo_is_a_stage_file_error_naming_it(
    tmp_path: Path, damage: str
) -> None:
    root = _project(tmp_path / "proj")
    assert _eb("run", cwd=root).returncode == 0
    run = _only_run(root)
    execute = run / "stages" / "execute.json"
    DAMAGE[damage](execute)
    done = _eb("stage", "score", "--run-dir", str(run), cwd=root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert str(execute) in done.stderr, done.stderr
    # eb's own files are read with a margin over the 200 levels a user's file may nest.
    said = {"deep": "nested deeper than 232 levels", "fifo": "not a regular file (a FIFO)"}
    assert said[damage] in done.stderr, done.stderr
    _no_traceback(done)


def _entries(root: Path, folder: str) -> list[Path]:
    return sorted((root / ".eval-banana" / "cache" / folder).rglob("*.json"))


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_cache_entry_deep_or_a_fifo_is_a_miss_naming_it(tmp_path: Path, damage: str) -> None:
    root = _project(tmp_path / "proj", cache="on")
    assert _eb("run", cwd=root).returncode == 0
    (entry,) = _entries(root, "entries")
    DAMAGE[damage](entry)
    done = _eb("run", "--json", cwd=root)
    _no_traceback(done)
    assert done.returncode == 0, done.stdout + done.stderr
    assert str(entry) in done.stderr, done.stderr  # the warning names it
    report: dict[str, Any] = json.loads(done.stdout)
    (check,) = report["checks"]
    assert check["status"] == "passed"
    assert check["details"]["cache"]["hit"] is False  # judged again


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_kept_run_deep_or_a_fifo_is_not_replayed(tmp_path: Path, damage: str) -> None:
    root = _project(tmp_path / "proj", cache="on", replay=True)
    assert _eb("run", cwd=root).returncode == 0
    assert _eb("run", cwd=root).returncode == 0  # every verdict cached: the run is kept
    kept = _entries(root, "runs")
    assert kept, "no run was kept as a replay"
    for path in kept:
        DAMAGE[damage](path)
    done = _eb("run", "--json", cwd=root)
    _no_traceback(done)
    assert done.returncode == 0, done.stdout + done.stderr
    assert any(str(path) in done.stderr for path in kept), done.stderr
    assert json.loads(done.stdout)["run_passed"] is True


CALIBRATED_JUDGE = """\
schema_version: 1
id: greets
type: harness_judge
description: Judge greets.
instructions: Does it greet?
"""


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_calibration_record_deep_or_a_fifo_is_refused_naming_it(
    tmp_path: Path, damage: str
) -> None:
    root = _project(tmp_path / "proj")
    (root / "eval_checks" / "greets.yaml").write_text(CALIBRATED_JUDGE)
    with (root / ".eval-banana" / "config.toml").open("a") as config:
        config.write(
            '\n[harness]\nagent = "stub"\n\n[agents.stub]\n'
            f'command = [{json.dumps(sys.executable)}, "-c", "print(1)"]\nmodel_flag = ""\n'
        )
    record = root / ".eval-banana" / "calibration.json"
    record.write_text("{}")
    DAMAGE[damage](record)
    done = _eb("validate", "--require-calibration", cwd=root)
    _no_traceback(done)
    assert done.returncode == 2, done.stdout + done.stderr
    assert str(record) in done.stderr, done.stderr


def test_a_fifo_in_place_of_the_config_file_is_a_config_error(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    config = root / ".eval-banana" / "config.toml"
    _fifo(config)
    done = _eb("validate", cwd=root)
    _no_traceback(done)
    assert done.returncode == 2, done.stdout + done.stderr
    assert str(config) in done.stderr
    assert "not a regular file" in done.stderr


@pytest.mark.parametrize("linked", [True, False], ids=["linked", "in-place"])
def test_a_check_file_that_is_a_fifo_is_named(tmp_path: Path, linked: bool) -> None:
    root = _project(tmp_path / "proj")
    if linked:
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        (root / "eval_checks" / "piped.yaml").symlink_to(fifo)
    else:
        os.mkfifo(root / "eval_checks" / "piped.yaml")
    done = _eb("validate", cwd=root)
    _no_traceback(done)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "piped.yaml" in done.stderr and "FIFO" in done.stderr, done.stderr


def test_a_case_and_a_check_at_the_depth_bound_leave_a_run_folder_eb_reads_back(
    tmp_path: Path,
) -> None:
    # eb accepts what a user writes up to 200 levels deep; its own files hold that a few
    # levels further down (plan.json: its checks, a check, the definition or case), and
    # reading them back must not refuse what was accepted (`eb status` called the plan
    # "nested deeper than 200 levels", and nothing could be rerun).
    root = _project(tmp_path / "proj", cache="on", replay=True)
    value = "[" * 197 + "]" * 197  # the check file's mapping, assert, its item, then this
    (root / "eval_checks" / "deep.yaml").write_text(
        "schema_version: 1\nid: deep\ntype: assertions\ndescription: Deep.\n"
        f"artifact: out.json\nassert:\n  - {{path: a, op: equals, value: {value}}}\n"
    )
    (root / "out.json").write_text(json.dumps({"a": json.loads(value)}))
    row = '{"id": "deep", "v": ' + "[" * 199 + "]" * 199 + "}"  # the row's mapping is level 1
    (root / "data").mkdir()
    (root / "data" / "rows.jsonl").write_text(row + "\n")
    (root / "eval_checks" / "fam.yaml").write_text(
        "schema_version: 1\nid: fam\ntype: deterministic\ndescription: 'row {{ case.id }}'\n"
        "cases_from: data/rows.jsonl\nscript: print('fine')\n"
    )
    assert _eb("run", cwd=root).returncode == 0
    run = _only_run(root)
    status = _eb("status", "--run-dir", str(run), cwd=root)
    _no_traceback(status)
    assert status.returncode == 0, status.stdout + status.stderr
    stages = [line.split()[:3] for line in status.stdout.splitlines()[1:8]]
    assert [state for _, _, state in stages] == ["ok"] * 7, status.stdout
    rerun = _eb("stage", "execute", "--run-dir", str(run), cwd=root)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    # One level more is refused up front, at the row's line: never a run folder eb cannot read.
    (root / "data" / "rows.jsonl").write_text(
        '{"id": "ok"}\n{"id": "deeper", "v": ' + "[" * 200 + "]" * 200 + "}\n"
    )
    refused = _eb("validate", cwd=root)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "data/rows.jsonl line 2 is nested deeper than 200 levels" in refused.stderr


def _alias_bomb(levels: int) -> str:
    """An assertions check whose compared value is `levels` lists of nine aliases deep."""
    lines = [
        "schema_version: 1",
        "id: bomb",
        "type: assertions",
        "description: An alias bomb.",
        "artifact: out.json",
        "assert:",
        '  - {path: x, op: equals, value: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", '
        '"lol", "lol", "lol"]}',
    ]
    for level in range(1, levels + 1):
        aliases = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"  - {{path: x, op: equals, value: &a{level} [{aliases}]}}")
    return "\n".join(lines) + "\n"


def test_a_nine_level_alias_bomb_is_refused_in_under_a_second(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    bomb = root / "eval_checks" / "bomb.yaml"
    bomb.write_text(_alias_bomb(9))
    done = _eb("validate", cwd=root)  # as the user meets it (a subprocess: a hang times out)
    _no_traceback(done)
    assert done.returncode == 2, done.stdout + done.stderr
    assert str(bomb) in done.stderr and "aliases" in done.stderr, done.stderr
    from eval_banana.checks.definition import parse_yaml_mapping
    from eval_banana.core.errors import DefinitionError

    started = time.perf_counter()
    with pytest.raises(DefinitionError, match="aliases"):
        parse_yaml_mapping(data=bomb.read_bytes(), path=bomb)
    assert time.perf_counter() - started < 1.0


def test_tagged_values_are_still_found_behind_aliases_in_linear_time(tmp_path: Path) -> None:
    # The walk for YAML tags visits each value once: a bomb of plain strings inside an
    # unknown key is checked in a blink, and a tag behind an alias is still refused.
    from eval_banana.checks.definition import parse_yaml_mapping
    from eval_banana.core.errors import DefinitionError

    lines = [
        "schema_version: 1",
        "id: b",
        "type: deterministic",
        "description: d.",
        "script: 'pass'",
        'a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]',
    ]
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 6)]
    started = time.perf_counter()
    parse_yaml_mapping(data="\n".join(lines).encode(), path="b.yaml")
    assert time.perf_counter() - started < 1.0
    lines[-1] = "tagged: &t [!!binary aGVsbG8=]\nuses: [*t, *t]"
    with pytest.raises(DefinitionError, match="binary"):
        parse_yaml_mapping(data="\n".join(lines).encode(), path="b.yaml")


@pytest.mark.parametrize(
    "written", ['"abc\\n"', '"abc\\r\\n"', "|\n  abc", '"abc\\u2028"', '"a\\nbc"']
)
def test_an_id_with_a_line_break_is_a_definition_error(tmp_path: Path, written: str) -> None:
    root = _project(tmp_path / "proj")
    (root / "eval_checks" / "passes.yaml").write_text(
        f"schema_version: 1\nid: {written}\ntype: deterministic\ndescription: d.\n"
        "script: print('fine')\n"
    )
    done = _eb("run", cwd=root)
    _no_traceback(done)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "passes.yaml" in done.stderr and "id" in done.stderr, done.stderr
    assert not (root / "runs").exists() or not list((root / "runs").rglob("checks/*.json"))


def test_an_id_with_surrounding_spaces_is_still_stripped(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    (root / "eval_checks" / "passes.yaml").write_text(
        "schema_version: 1\nid: '  passes\t'\ntype: deterministic\ndescription: d.\n"
        "script: print('fine')\n"
    )
    done = _eb("run", "--json", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [check["check_id"] for check in json.loads(done.stdout)["checks"]] == ["passes"]


def test_a_stage_file_with_an_id_ending_in_a_newline_fails_its_schema() -> None:
    # JSON Schema's `$` is the end of the text; Python's also matches before a final newline.
    from eval_banana.stagefiles.schemacheck import compile_schema

    check = compile_schema({"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"})
    assert check is not None
    assert check("sha256:" + "0" * 64)
    assert not check("sha256:" + "0" * 64 + "\n")


@pytest.mark.parametrize(
    ("text", "deep"),
    [
        ("[" * 200 + "]" * 200, False),
        ("[" * 201 + "]" * 201, True),
        ('{"a":' * 201 + "1" + "}" * 201, True),
        # Brackets inside strings are no nesting, escaped quotes and backslashes included.
        ("[" + json.dumps("[" * 500 + '\\"' + "{" * 300) + "]", False),
        ('["\\\\", ' + "[" * 150 + "]" * 150 + "]", False),
        ('["\\\\\\"[[[", ' + "[" * 199 + "]" * 199 + "]", False),
        ("[" * 150 + json.dumps("]" * 400) + "]" * 150, False),
        ("[1, 2, " * 300 + "3" + "]" * 300, True),
        # A long nest is told at once (a pass removes one pair of it), whatever else is there.
        ('{"a": [' + "[" * 5000 + "]" * 5000 + "], " + '"b": [' + "[], " * 3000 + "[]]}", True),
        ("[" * 150 + "[], " * 200 + "[]" + "]" * 150, False),
    ],
)
def test_the_depth_scan_counts_only_nesting_outside_strings(text: str, deep: bool) -> None:
    from eval_banana.core.readback import MAX_DEPTH, TooDeep, loads_json

    assert MAX_DEPTH == 200
    if deep:
        with pytest.raises(TooDeep):
            loads_json(text.encode(), limit=MAX_DEPTH)
    else:
        assert loads_json(text.encode(), limit=MAX_DEPTH) == json.loads(text)


def _nesting(value: Any) -> int:
    """How deep a parsed JSON value nests lists and objects (the top one is level 1)."""
    if isinstance(value, dict):
        return 1 + max(map(_nesting, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_nesting, value), default=0)
    return 0


def _deepest_closed(brackets: bytes) -> int:
    """The simple reference on text of brackets alone: the most openers not yet closed at any
    point before the last closer, one byte at a time."""
    depth = deepest = 0
    for byte in brackets.rstrip(b"[{"):
        depth += 1 if byte in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


# Text that is no nesting: brackets, quotes and backslashes inside strings, and escapes.
_TRICKY_TEXT = st.text(alphabet=st.sampled_from(list('[]{}"\\ax\u00e9\n')), max_size=8)
_JSON_VALUES = st.recursive(
    st.none() | st.integers(-5, 5) | _TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TRICKY_TEXT, inner, max_size=3),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None)
@given(value=_JSON_VALUES, ascii_only=st.booleans())
def test_the_depth_scan_answers_as_the_parsed_document_nests(value: Any, ascii_only: bool) -> None:
    """The one-pass scan gives the answer the nesting of the parsed document gives, at every
    bound, whatever strings hold (brackets, escaped quotes, backslashes before a quote)."""
    from eval_banana.core.readback import json_depth_exceeds

    text = json.dumps(value, ensure_ascii=ascii_only).encode()
    depth = _nesting(value)
    for limit in range(max(depth - 1, 0), depth + 2):
        assert json_depth_exceeds(text, limit=limit) == (depth > limit), (text, limit)


@settings(max_examples=500, deadline=None)
@given(brackets=st.binary(max_size=40).map(lambda raw: bytes(b"[]{}"[n % 4] for n in raw)))
def test_the_depth_scan_of_brackets_alone_matches_the_simple_reference(brackets: bytes) -> None:
    """On text that is not JSON too (unbalanced, mismatched), the scan gives the one-byte-at-a-
    time reference's answer: openers after the last closer are the parser's to refuse."""
    from eval_banana.core.readback import json_depth_exceeds

    for limit in (1, 2, 3, 5):
        assert json_depth_exceeds(brackets, limit=limit) == (_deepest_closed(brackets) > limit)


@pytest.mark.parametrize(
    "text",
    [
        '["\\\\", [[["]"]]]]',  # an escaped backslash ends the string before the quote
        '["\\"[[[", [[[1]]]]',  # an escaped quote does not end it
        '{"[[[[": {"{{{{": [["\\u005b", "]]]]"]]}}',  # \u005b is a [ in a string
        "[" * 3 + '"' + "]" * 50 + '"' + "]" * 3,
        '[[[["\\\\\\"]]]"]]]]',
    ],
)
def test_the_depth_scan_steps_over_strings_as_the_parser_does(text: str) -> None:
    from eval_banana.core.readback import json_depth_exceeds

    depth = _nesting(json.loads(text))
    for limit in range(depth + 2):
        assert json_depth_exceeds(text.encode(), limit=limit) == (depth > limit), limit


def test_an_artifact_of_many_nests_within_the_bound_is_read_in_linear_time(
    tmp_path: Path,
) -> None:
    """1.5 MB of 198-deep nests (200 levels with the list and object around them) held an
    assertions check ~25 s: the depth scan made up to 200 passes, each searching every run of
    brackets for 201 openers afresh."""
    root = _project(tmp_path / "proj")
    chain = "[" * 198 + "]" * 198
    (root / "out").mkdir()
    (root / "out" / "tree.json").write_text('{"steps": [' + ",".join([chain] * 3800) + "]}")
    (root / "eval_checks" / "tree.yaml").write_text(
        "schema_version: 1\nid: tree\ntype: assertions\ndescription: d\n"
        "artifact: out/tree.json\nassert:\n  - {path: steps, op: lengthAtLeast, value: 3800}\n"
    )
    started = time.perf_counter()
    done = _eb("run", "--check-id", "tree", "--json", cwd=root)
    elapsed = time.perf_counter() - started
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert elapsed < 8.0, elapsed


def test_a_long_run_of_openers_without_its_closers_is_left_to_the_parser() -> None:
    # Cut short, a nest is no JSON at all: the parser says so, not the depth scan.
    from eval_banana.core.readback import json_depth_exceeds

    assert not json_depth_exceeds(b"[" * 300)
    assert json_depth_exceeds(b"[" * 300 + b"]" * 300)
