"""The quick schema check must answer exactly as jsonschema does, on every published schema.

It decides alone whether a stage file is accepted (jsonschema is asked only to explain a
refusal), so a document it accepts and jsonschema would refuse is a hole: the differential tests
below mutate real stage files at random places and compare the two answers.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eval_banana.stagefiles.layout import STAGE_NAMES
from eval_banana.stagefiles.schemacheck import compile_schema, json_equal
from eval_banana.stagefiles.schemafiles import packaged_schema

REPO = Path(__file__).resolve().parents[2]

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.0, 1.0, 0.5, -1.5, 1e300])
    | st.sampled_from(["", "passed", "error", "sha256:" + "a" * 64, "sha256:xyz", "inherit"])
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    """Real stage files of three runs of the demo: a plain run, a shard run, a merged run."""
    base = tmp_path_factory.mktemp("schemacheck")
    demo = base / "demo"
    shutil.copytree(REPO / "examples" / "demo", demo, ignore=shutil.ignore_patterns("results"))

    def eb(*args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "eval_banana", *args], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr

    eb("run", "--cwd", str(demo), "--output-dir", str(base / "plain"), "--flat-output")
    for k in (1, 2):
        eb(
            "run",
            "--cwd",
            str(demo),
            "--shard",
            f"{k}/2",
            "--output-dir",
            str(base / f"s{k}"),
            "--flat-output",
        )
    eb(
        "merge",
        str(base / "s1"),
        str(base / "s2"),
        "--cwd",
        str(demo),
        "--output-dir",
        str(base / "merged"),
        "--flat-output",
    )
    return {
        stage: [
            json.loads((base / run / "stages" / name).read_text())
            for run in ("plain", "s1", "merged")
            for name in [f"{stage}.json" if stage != "validate" else "plan.json"]
        ]
        for stage in STAGE_NAMES
    }


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every location in a document (dict keys and list positions), the root included."""
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


def _mutate(document: Any, path: tuple[Any, ...], action: str, value: Any) -> Any:
    if not path:
        return value
    changed = copy.deepcopy(document)
    parent = changed
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if action == "delete" and isinstance(parent, dict):
        del parent[last]
    elif action == "add" and isinstance(parent, dict):
        parent["unexpected_key"] = value
    elif action == "append" and isinstance(parent[last], list):
        parent[last].append(value)
    else:
        parent[last] = value
    return changed


def _judges(schema: dict[str, Any]) -> tuple[Any, Any]:
    quick = compile_schema(schema)
    assert quick is not None, "every published schema must have a quick check"
    reference = jsonschema.validators.validator_for(schema)(schema)
    return quick, reference


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_real_stage_files_are_valid_to_both(stage: str, examples: dict[str, list[Any]]) -> None:
    quick, reference = _judges(json.loads(packaged_schema(f"stages/{stage}")))
    for document in examples[stage]:
        assert reference.is_valid(document)
        assert quick(document) is True


@pytest.mark.parametrize("stage", STAGE_NAMES)
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_mutated_stage_files_get_the_same_answer(
    stage: str, examples: dict[str, list[Any]], data: st.DataObject
) -> None:
    quick, reference = _judges(json.loads(packaged_schema(f"stages/{stage}")))
    document = data.draw(st.sampled_from(examples[stage]))
    path = data.draw(st.sampled_from(_paths(document)))
    action = data.draw(st.sampled_from(["replace", "delete", "add", "append"]))
    value = data.draw(JSON_VALUES)
    mutated = _mutate(document, path, action, value)
    assert quick(mutated) == reference.is_valid(mutated), (path, action, value)


REPLACEMENTS = (None, True, 0, 1.0, -1, 2.5, "", "sha256:xyz", "sha256:" + "b" * 64, [], {})


@pytest.mark.exhaustive
@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_every_location_replaced_by_every_kind_of_value(
    stage: str, examples: dict[str, list[Any]]
) -> None:
    """Exhaustive where the random test samples: each place of a real file, each value kind."""
    quick, reference = _judges(json.loads(packaged_schema(f"stages/{stage}")))
    document = examples[stage][-1]
    for path in _paths(document):
        # A deletion is the same whatever the value: once per place.
        mutations = [("delete", None)]
        mutations += [(action, value) for value in REPLACEMENTS for action in ("replace", "add")]
        for action, value in mutations:
            mutated = _mutate(document, path, action, value)
            assert quick(mutated) == reference.is_valid(mutated), (path, action, value)


@pytest.mark.parametrize("name", ["report", "diff", "check-result", "config"])
def test_the_other_published_schemas_compile(name: str) -> None:
    assert compile_schema(json.loads(packaged_schema(name))) is not None


def test_values_jsonschema_and_python_disagree_on() -> None:
    # A bool is not an integer, 1.0 is; True is not 1 in an enum.
    schema = {"type": "object", "properties": {"n": {"type": "integer", "enum": [0, 1]}}}
    quick, reference = _judges(schema)
    for value in (True, False, 1, 1.0, 0, 2, "1", None):
        document = {"n": value}
        assert quick(document) == reference.is_valid(document), value
    # The same enum alone, with no type beside it to refuse a bool first.
    quick, reference = _judges({"type": "object", "properties": {"n": {"enum": [0, 1]}}})
    for value in (True, False, 1, 1.0, 0.0, 0, 2, 1.5, "1", None, [1]):
        document = {"n": value}
        assert quick(document) == reference.is_valid(document), value
    assert json_equal(1, 1.0) and not json_equal(True, 1) and not json_equal("1", 1)
    assert json_equal([1, {"a": False}], [1.0, {"a": False}])
    assert not json_equal([1], {"1": 1})


def test_lengths_and_all_of_as_jsonschema_reads_them() -> None:
    schema = {
        "type": "object",
        "properties": {
            "dir": {"type": "string", "minLength": 1},
            "command": {"type": "array", "minItems": 1},
            "both": {"minLength": 2, "minItems": 2},
            "agent": {"allOf": [{"type": "object"}, {"required": ["command"]}]},
        },
    }
    quick, reference = _judges(schema)
    values: list[Any] = ["", "a", "ab", "é", [], [1], [1, 2], 0, None, {}, {"command": []}]
    for key in ("dir", "command", "both", "agent"):
        for value in values:
            document = {key: value}
            assert quick(document) == reference.is_valid(document), (key, value)


def test_a_keyword_it_does_not_evaluate_means_no_quick_check() -> None:
    assert compile_schema({"type": "array", "maxItems": 2}) is None
    assert compile_schema({"$ref": "https://elsewhere.example/schema.json"}) is None


def test_refusals_are_still_explained_by_jsonschema(
    tmp_path: Path, examples: dict[str, list[Any]]
) -> None:
    from eval_banana.core.errors import StageFileError
    from eval_banana.stagefiles.read import read_stage

    document = copy.deepcopy(examples["score"][0])
    document["total_checks"] = "three"
    (tmp_path / "stages").mkdir()
    (tmp_path / "stages" / "score.json").write_text(json.dumps(document))
    with pytest.raises(
        StageFileError, match=r"invalid at \$\.total_checks: 'three' is not of type"
    ):
        read_stage(run_dir=tmp_path, stage="score")
