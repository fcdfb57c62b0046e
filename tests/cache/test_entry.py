"""Cache entries: the hand-written check agrees with the published schema, entry by entry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from eval_banana.cache.entry import entry_problem
from tests.cache.rig import DELETE, Project, mutated

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "schemas" / "cache-entry.schema.json").read_text()
)


def schema_valid(document: Any) -> bool:
    return jsonschema.Draft202012Validator(SCHEMA).is_valid(document)


@pytest.fixture
def entry(standard: Project) -> dict[str, Any]:
    standard.run()
    document: dict[str, Any] = json.loads(standard.entries()[0].read_text())
    return document


_set = mutated
_DELETE = DELETE
MUTATIONS = [
    _set(["schema_version"], 2),
    _set(["schema_version"], 1.0),
    _set(["schema_version"], True),
    _set(["schema_version"], _DELETE),
    _set(["kind"], "something-else"),
    _set(["kind"], _DELETE),
    _set(["key"], "sha256:short"),
    _set(["key"], "sha256:" + "A" * 64),
    _set(["key"], _DELETE),
    _set(["key_version"], 2),
    _set(["tool_version"], 5),
    _set(["check_id"], None),
    _set(["expect"], "maybe"),
    _set(["expect"], _DELETE),
    _set(["from_run_id"], _DELETE),
    _set(["stored_at"], []),
    _set(["extra"], 1),
    _set(["result"], []),
    _set(["result", "status"], "error"),
    _set(["result", "status"], _DELETE),
    _set(["result", "score"], 2),
    _set(["result", "score"], 1.0),
    _set(["result", "score"], True),
    _set(["result", "observed_status"], "error"),
    _set(["result", "reason"], 3),
    _set(["result", "reason"], None),
    _set(["result", "exit_code"], "0"),
    _set(["result", "exit_code"], 2.0),
    _set(["result", "exit_code"], 2.5),
    _set(["result", "stdout"], None),
    _set(["result", "details"], []),
    _set(["result", "details"], {"anything": [1, {"x": None}]}),
    _set(["result", "surprise"], 1),
    _set(["files"], {}),
    _set(["files"], []),
    _set(["files"], [{"name": "stdout.txt", "sha256": "sha256:" + "0" * 64, "size": 0}]),
    _set(["files"], [{"name": "evidence/a/b.txt", "sha256": "sha256:" + "0" * 64, "size": 3}]),
    _set(["files"], [{"name": "evidence/../x", "sha256": "sha256:" + "0" * 64, "size": 3}]),
    _set(["files"], [{"name": "evidence//etc/passwd", "sha256": "sha256:" + "0" * 64, "size": 3}]),
    _set(["files"], [{"name": "evidence/a/./b", "sha256": "sha256:" + "0" * 64, "size": 3}]),
    _set(["files"], [{"name": "other.txt", "sha256": "sha256:" + "0" * 64, "size": 3}]),
    _set(["files"], [{"name": "stdout.txt", "sha256": "md5:00", "size": 3}]),
    _set(["files"], [{"name": "stdout.txt", "sha256": "sha256:" + "0" * 64, "size": -1}]),
    _set(["files"], [{"name": "stdout.txt", "sha256": "sha256:" + "0" * 64}]),
    _set(["files"], [{"name": "stdout.txt", "sha256": "sha256:" + "0" * 64, "size": 1, "x": 1}]),
    _set(["files"], ["stdout.txt"]),
    _set(["result", "started_at"], 5),
    _set(["result", "started_at"], _DELETE),
    _set(["result", "completed_at"], None),
    _set(["result", "duration_ms"], -1),
    _set(["result", "duration_ms"], 1.5),
    _set(["result", "duration_ms"], "12"),
    _set(["result_file"], None),
    _set(["result_file"], _DELETE),
    _set(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": 3}),
    _set(["result_file"], {"sha256": "sha256:" + "0" * 64}),
    _set(["result_file"], {"sha256": "md5:00", "size": 3}),
    _set(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": -2}),
    _set(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": 3, "name": "x"}),
    _set(["result_file"], "stdout.txt"),
    _set(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": 3, "source_path": "/a.yaml"}),
    _set(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": 3, "layout": "1:ab"}),
    _set(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": 3, "layout": None}),
    _set(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": 3, "layout": 1}),
    _set(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": 3, "source_path": []}),
    _set(["$schema"], _DELETE),
]


def test_a_stored_entry_is_valid(entry: dict[str, Any]) -> None:
    assert entry_problem(entry) is None
    assert schema_valid(entry)


@pytest.mark.parametrize("index", range(len(MUTATIONS)))
def test_the_check_and_the_schema_agree(entry: dict[str, Any], index: int) -> None:
    mutated = MUTATIONS[index](entry)
    problem = entry_problem(mutated)
    assert (problem is None) == schema_valid(mutated), (problem, mutated)


def test_non_objects(entry: dict[str, Any]) -> None:
    for document in ([], "x", None, 1):
        assert entry_problem(document) is not None and not schema_valid(document)
