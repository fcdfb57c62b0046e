"""Run replays on disk: the hand-written check agrees with the published schema, and the slots
a replay fills are found where the run's own values stand, and only there."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from eval_banana.cache.replay_entry import _items_problem, bulk_problem, replay_problem
from eval_banana.cache.slots import (
    Needle,
    Slot,
    fill,
    filled_parts,
    find_slots,
    slots_are_sound,
)
from eval_banana.core.files import sha256_bytes, sha256_parts, write_parts_atomic
from tests.cache.rig import DELETE, isolated_for_module, judge, make_project, mutated
from tests.conftest import eb_in_process

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "schemas" / "run-replay.schema.json").read_text()
)


def schema_valid(document: Any) -> bool:
    return jsonschema.Draft202012Validator(SCHEMA).is_valid(document)


@pytest.fixture(scope="module")
def kept_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The run a second, fully cached run keeps: made once, since every test only reads it
    (each mutation changes a deep copy)."""
    folder = tmp_path_factory.mktemp("replay-entry")
    with isolated_for_module(folder):
        project = make_project(
            tmp_path=folder, eb=eb_in_process, checks={"a": judge("a"), "b": judge("b")}, files={}
        )
        project.run()
        project.run()
    (path,) = (project.cache_dir / "runs").rglob("*.json")
    document: dict[str, Any] = json.loads(path.read_text())
    return document


@pytest.fixture
def entry(kept_run: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(kept_run)


def test_a_kept_run_is_a_valid_replay(entry: dict[str, Any]) -> None:
    assert schema_valid(entry)
    assert replay_problem(entry) is None
    names = [template["name"] for template in entry["templates"]]
    assert names[:2] == ["stages/plan.json", "stages/guard.json"]
    assert "report.json-line" in names
    assert {slot["name"] for t in entry["templates"] for slot in t["slots"]} >= {
        "run_id",
        "run_dir",
        "digest:config",
        "digest:validate",
        "created_at:execute",
        "started_at",
        "completed_at",
        "duration_ms",
    }


MUTATIONS = [
    mutated(["schema_version"], 2),
    mutated(["kind"], "eval-banana/verdict-cache-entry"),
    mutated(["key"], "sha256:short"),
    mutated(["key"], DELETE),
    mutated(["exit_code"], 2),
    mutated(["exit_code"], True),
    mutated(["whole_project"], "not a digest"),
    mutated(["whole_project"], DELETE),
    mutated(["from_run_id"], 5),
    mutated(["surprise"], 1),
    mutated(["files", 0, "name"], "/etc/passwd"),
    mutated(["files", 0, "name"], "checks/../../escape"),
    mutated(["files", 0, "name"], "checks//double"),
    mutated(["files", 0, "size"], -1),
    mutated(["files", 0, "sha256"], "sha256:" + "0" * 63),
    mutated(["files", 0, "extra"], 1),
    mutated(["files", 1, "size"], True),
    mutated(["files", 1, "sha256"], 5),
    mutated(["files", 1, "name"], "checks\\a.txt"),
    mutated(["files", 1], "checks/a.txt"),
    mutated(["templates", 0, "slots", 0, "name"], "anything"),
    mutated(["templates", 0, "slots", 0, "length"], 0),
    mutated(["templates", 0, "slots", 0, "offset"], -1),
    mutated(["templates", 0, "slots", 0, "offset"], 1.5),
    mutated(["folders"], ["../up"]),
    mutated(["verdict_keys"], ["sha256:x"]),
    mutated(["watched"], [{"path": "a"}]),
    mutated(["declared"], [{"patterns": "docs/**", "digest": "sha256:" + "0" * 64}]),
    mutated(["progress"], [1]),
    mutated(["folded"], [-1]),
    mutated(["folded"], ["0"]),
    mutated(["templates"], {}),
    mutated(["mac"], DELETE),
    mutated(["mac"], "hmac-sha256:" + "A" * 64),
]


@pytest.mark.parametrize("mutate", MUTATIONS)
def test_what_the_schema_refuses_the_check_refuses(
    entry: dict[str, Any], mutate: Callable[[dict[str, Any]], dict[str, Any]]
) -> None:
    changed = mutate(entry)
    assert not schema_valid(changed)
    assert replay_problem(changed) is not None


@pytest.mark.parametrize("folded", [[1, 0], [0, 0], [2]])
def test_folded_lines_must_rise_within_the_progress_lines(
    entry: dict[str, Any], folded: list[int]
) -> None:
    """Beyond what a schema can say: each folded line is one of the two progress lines, once."""
    assert len(entry["progress"]) == 2 and entry["folded"] == []
    assert replay_problem(mutated(["folded"], [0, 1])(entry)) is None
    assert replay_problem(mutated(["folded"], folded)(entry)) is not None


def test_a_document_that_is_no_object_is_refused() -> None:
    assert replay_problem([]) == "not a JSON object"
    assert not schema_valid([])


def test_slots_take_the_longest_value_and_leave_no_trace(tmp_path: Path) -> None:
    run_id = b"20261203_080000_a1b2c3d4"
    folder = b"/out/" + run_id
    data = b'{"run_id": "' + run_id + b'", "dir": "' + folder + b'/report.json"}'
    needles = [Needle(value=run_id, name="run_id"), Needle(value=folder, name="run_dir")]
    slots = find_slots(data=data, needles=needles)
    assert [slot.name for slot in slots] == ["run_id", "run_dir"]
    assert slots_are_sound(data=data, slots=slots, forbidden=[run_id])
    filled = fill(data=data, slots=slots, values={"run_id": b"R", "run_dir": b"/else/R"})
    assert filled == b'{"run_id": "R", "dir": "/else/R/report.json"}'
    # A text only written and hashed is never joined: its parts give the same bytes and digest.
    parts = filled_parts(data=data, slots=slots, values={"run_id": b"R", "run_dir": b"/else/R"})
    assert sha256_parts(parts=parts) == sha256_bytes(data=filled)
    write_parts_atomic(path=tmp_path / "filled.json", parts=parts)
    assert (tmp_path / "filled.json").read_bytes() == filled


def test_a_value_between_a_prefix_and_a_suffix_is_its_own_slot() -> None:
    data = b'{\n  "duration_ms": 150,\n  "checks": [{"duration_ms": 150}]\n}'
    needle = Needle(value=b"150", name="duration_ms", prefix=b'\n  "duration_ms": ', suffix=b",")
    (slot,) = find_slots(data=data, needles=[needle])
    assert data[slot.offset : slot.offset + slot.length] == b"150"
    assert slot.offset < data.index(b"checks")  # the run's own, not the nested check's


def test_a_trace_left_outside_every_slot_is_unsound() -> None:
    run_id = b"20261203_080000_a1b2c3d4"
    # The run folder written in a form nobody looked for: its id alone is found, inside a path.
    data = b"see C:\\\\out\\\\" + run_id + b" and " + run_id
    slots = find_slots(data=data, needles=[Needle(value=run_id, name="run_id")])
    assert not slots_are_sound(data=data, slots=slots, forbidden=[run_id])
    # An escaped id (its random part left outside any slot) is unsound too.
    escaped = b"id 20261203\\_080000\\_a1b2c3d4"
    assert not slots_are_sound(data=escaped, slots=[], forbidden=[b"a1b2c3d4"])
    assert slots_are_sound(data=b"nothing here", slots=[Slot(0, 7, "run_id")], forbidden=[run_id])


@pytest.mark.parametrize("mutate", MUTATIONS)
def test_the_files_pass_answers_as_the_item_by_item_check(
    entry: dict[str, Any], mutate: Callable[[dict[str, Any]], dict[str, Any]]
) -> None:
    """bulk_problem's one pass over the per-check files (each shared digest checked once)
    finds a problem exactly when the item-by-item check does, and names it as that does."""
    files = mutate(entry)["files"]
    assert bulk_problem(files=files, verdict_keys=[]) == _items_problem(name="files", items=files)
