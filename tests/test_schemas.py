"""The published schemas are generated from the models, and judge check files as the models do."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from eval_banana.definition import load_definition
from eval_banana.errors import DefinitionError
from eval_banana.schemas import render, schema_builders

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", sorted(schema_builders()))
@pytest.mark.parametrize("folder", ["schemas", "eval_banana/schemas"])
def test_committed_schema_matches_the_models(name: str, folder: str) -> None:
    committed = REPO / folder / f"{name}.schema.json"
    assert committed.is_file(), f"{committed} missing: run `invoke schemas`"
    assert committed.read_text() == render(schema_builders()[name]()), (
        f"{committed} drifted from the models: run `invoke schemas` and commit"
    )


def test_editor_schemas_are_valid_draft_07() -> None:
    for name in ("check", "config"):
        schema = json.loads((REPO / "schemas" / f"{name}.schema.json").read_text())
        assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
        jsonschema.Draft7Validator.check_schema(schema)
        assert "$defs" not in json.dumps(schema)


BAD_CHECKS = {
    "missing_version": "id: a\ntype: deterministic\ndescription: d\nscript: pass\n",
    "version_2": "schema_version: 2\nid: a\ntype: deterministic\ndescription: d\nscript: pass\n",
    "version_true": "schema_version: true\nid: a\ntype: deterministic\ndescription: d\nscript: pass\n",
    "version_string": "schema_version: '1'\nid: a\ntype: deterministic\ndescription: d\nscript: pass\n",
    "bad_id": "schema_version: 1\nid: a.b\ntype: deterministic\ndescription: d\nscript: pass\n",
    "blank_id": "schema_version: 1\nid: '  '\ntype: deterministic\ndescription: d\nscript: pass\n",
    "int_id": "schema_version: 1\nid: 5\ntype: deterministic\ndescription: d\nscript: pass\n",
    "blank_description": "schema_version: 1\nid: a\ntype: deterministic\ndescription: ' '\nscript: pass\n",
    "extra_field": "schema_version: 1\nid: a\ntype: deterministic\ndescription: d\nscript: pass\nx: 1\n",
    "no_script": "schema_version: 1\nid: a\ntype: deterministic\ndescription: d\n",
    "both_scripts": "schema_version: 1\nid: a\ntype: deterministic\ndescription: d\nscript: pass\n"
    "script_path: x.py\n",
    "blank_script": "schema_version: 1\nid: a\ntype: deterministic\ndescription: d\nscript: '  '\n",
    "unknown_type": "schema_version: 1\nid: a\ntype: nope\ndescription: d\n",
    "no_type": "schema_version: 1\nid: a\ndescription: d\n",
    "judge_no_instructions": "schema_version: 1\nid: a\ntype: harness_judge\ndescription: d\n",
    "judge_blank_instructions": "schema_version: 1\nid: a\ntype: harness_judge\ndescription: d\n"
    "instructions: ' '\n",
    "judge_with_script": "schema_version: 1\nid: a\ntype: harness_judge\ndescription: d\n"
    "instructions: i\nscript: pass\n",
    "tags_not_list": "schema_version: 1\nid: a\ntype: deterministic\ndescription: d\nscript: pass\n"
    "tags: fast\n",
    "bad_expect": "schema_version: 1\nid: a\ntype: deterministic\ndescription: d\nscript: pass\n"
    "expect: maybe\n",
}
GOOD_CHECKS = {
    "inline": "schema_version: 1\nid: a\ntype: deterministic\ndescription: d\nscript: pass\n",
    "padded_id": "schema_version: 1\nid: ' a '\ntype: deterministic\ndescription: d\nscript: pass\n",
    "script_path": "schema_version: 1\nid: a\ntype: deterministic\ndescription: d\nscript_path: x.py\n",
    "judge": "schema_version: 1\nid: a\ntype: harness_judge\ndescription: d\ninstructions: i\n"
    "model: m\ntags: [x]\n",
    "control": "schema_version: 1\nid: a\ntype: deterministic\ndescription: d\nscript: pass\n"
    "expect: fail\n",
}


def _model_accepts(text: str) -> bool:
    try:
        load_definition(data=text.encode(), path=Path("x.yaml"))
    except DefinitionError:
        return False
    return True


def _schema_accepts(text: str) -> bool:
    schema = json.loads((REPO / "schemas" / "check.schema.json").read_text())
    return jsonschema.Draft7Validator(schema).is_valid(yaml.safe_load(text))


@pytest.mark.parametrize("name", sorted(BAD_CHECKS))
def test_editor_and_eb_reject_the_same_bad_files(name: str) -> None:
    text = BAD_CHECKS[name]
    assert not _model_accepts(text)
    assert not _schema_accepts(text)


@pytest.mark.parametrize("name", sorted(GOOD_CHECKS))
def test_editor_and_eb_accept_the_same_good_files(name: str) -> None:
    text = GOOD_CHECKS[name]
    assert _model_accepts(text)
    assert _schema_accepts(text)


def test_every_example_check_validates_in_both() -> None:
    files = sorted((REPO / "examples").rglob("eval_checks/*.y*ml"))
    assert files
    for path in files:
        text = path.read_text()
        assert _model_accepts(text), path
        assert _schema_accepts(text), path
