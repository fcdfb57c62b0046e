"""Cache entries: the hand-written check agrees with the published schema, entry by entry."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from eval_banana.cache.entry import entry_problem
from tests.cache.rig import DELETE, isolated_for_module, mutated, standard_project
from tests.conftest import eb_in_process

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "schemas" / "cache-entry.schema.json").read_text()
)


def schema_valid(document: Any) -> bool:
    return jsonschema.Draft202012Validator(SCHEMA).is_valid(document)


@pytest.fixture(scope="module")
def stored_entry(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The entry one run of the standard project stores: made once, since every test only
    reads it (each mutation changes a deep copy)."""
    folder = tmp_path_factory.mktemp("entry")
    with isolated_for_module(folder):
        standard = standard_project(tmp_path=folder, eb=eb_in_process)
        standard.run()
    document: dict[str, Any] = json.loads(standard.entries()[0].read_text())
    return document


@pytest.fixture
def entry(stored_entry: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(stored_entry)


MUTATIONS = [
    mutated(["schema_version"], 2),
    mutated(["schema_version"], 1.0),
    mutated(["schema_version"], True),
    mutated(["schema_version"], DELETE),
    mutated(["kind"], "something-else"),
    mutated(["kind"], DELETE),
    mutated(["key"], "sha256:short"),
    mutated(["key"], "sha256:" + "A" * 64),
    mutated(["key"], DELETE),
    mutated(["key_version"], 2),
    mutated(["tool_version"], 5),
    mutated(["check_id"], None),
    mutated(["expect"], "maybe"),
    mutated(["expect"], DELETE),
    mutated(["from_run_id"], DELETE),
    mutated(["stored_at"], []),
    mutated(["extra"], 1),
    mutated(["result"], []),
    mutated(["result", "status"], "error"),
    mutated(["result", "status"], DELETE),
    mutated(["result", "score"], 2),
    mutated(["result", "score"], 1.0),
    mutated(["result", "score"], True),
    mutated(["result", "observed_status"], "error"),
    mutated(["result", "reason"], 3),
    mutated(["result", "reason"], None),
    mutated(["result", "exit_code"], "0"),
    mutated(["result", "exit_code"], 2.0),
    mutated(["result", "exit_code"], 2.5),
    mutated(["result", "stdout"], None),
    mutated(["result", "details"], []),
    mutated(["result", "details"], {"anything": [1, {"x": None}]}),
    mutated(["result", "surprise"], 1),
    mutated(["files"], {}),
    mutated(["files"], []),
    mutated(["files"], [{"name": "stdout.txt", "sha256": "sha256:" + "0" * 64, "size": 0}]),
    mutated(["files"], [{"name": "evidence/a/b.txt", "sha256": "sha256:" + "0" * 64, "size": 3}]),
    mutated(["files"], [{"name": "evidence/../x", "sha256": "sha256:" + "0" * 64, "size": 3}]),
    mutated(
        ["files"], [{"name": "evidence//etc/passwd", "sha256": "sha256:" + "0" * 64, "size": 3}]
    ),
    mutated(["files"], [{"name": "evidence/a/./b", "sha256": "sha256:" + "0" * 64, "size": 3}]),
    mutated(["files"], [{"name": "other.txt", "sha256": "sha256:" + "0" * 64, "size": 3}]),
    mutated(["files"], [{"name": "stdout.txt", "sha256": "md5:00", "size": 3}]),
    mutated(["files"], [{"name": "stdout.txt", "sha256": "sha256:" + "0" * 64, "size": -1}]),
    mutated(["files"], [{"name": "stdout.txt", "sha256": "sha256:" + "0" * 64}]),
    mutated(["files"], [{"name": "stdout.txt", "sha256": "sha256:" + "0" * 64, "size": 1, "x": 1}]),
    mutated(["files"], ["stdout.txt"]),
    mutated(["result", "started_at"], 5),
    mutated(["result", "started_at"], DELETE),
    mutated(["result", "completed_at"], None),
    mutated(["result", "duration_ms"], -1),
    mutated(["result", "duration_ms"], 1.5),
    mutated(["result", "duration_ms"], "12"),
    mutated(["result_file"], None),
    mutated(["result_file"], DELETE),
    mutated(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": 3}),
    mutated(["result_file"], {"sha256": "sha256:" + "0" * 64}),
    mutated(["result_file"], {"sha256": "md5:00", "size": 3}),
    mutated(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": -2}),
    mutated(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": 3, "name": "x"}),
    mutated(["result_file"], "stdout.txt"),
    mutated(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": 3, "source_path": "/a.yaml"}),
    mutated(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": 3, "layout": "1:ab"}),
    mutated(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": 3, "layout": None}),
    mutated(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": 3, "layout": 1}),
    mutated(["result_file"], {"sha256": "sha256:" + "0" * 64, "size": 3, "source_path": []}),
    mutated(["origin"], DELETE),
    mutated(["origin"], None),
    mutated(["origin"], {"by": "fetched"}),
    mutated(["origin"], {"by": "fetched", "verified_with": "hmac-sha256:" + "0" * 64}),
    mutated(["origin"], {"by": "fetched", "verified_with": None}),
    mutated(["origin"], {"by": "fetched", "verified_with": "hmac-sha256:short"}),
    mutated(["origin"], {"by": "fetched", "verified_with": 1}),
    mutated(["origin"], {"by": "pushed"}),
    mutated(["origin"], {"by": None}),
    mutated(["origin"], {"verified_with": "hmac-sha256:" + "0" * 64}),
    mutated(["origin"], {"by": "judged", "key": "x"}),
    mutated(["origin"], "judged"),
    mutated(["$schema"], DELETE),
    mutated(["mac"], DELETE),
    mutated(["mac"], "hmac-sha256:short"),
    mutated(["mac"], "sha256:" + "0" * 64),
    mutated(["mac"], None),
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
