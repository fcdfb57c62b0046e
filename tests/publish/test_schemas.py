"""The published schemas are generated from the models, and judge check files as the models do."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from eval_banana.checks.definition import load_definition
from eval_banana.core.errors import DefinitionError
from eval_banana.models.check import ONE_SCRIPT_MESSAGE
from eval_banana.models.stages import ConfigDoc
from eval_banana.publish.schemas import render, schema_builders

REPO = Path(__file__).resolve().parents[2]


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


_FAMILY = "schema_version: 1\nid: fam\ntype: deterministic\ndescription: d\nscript: pass\n"
# Dataset families: the rules of their cases and family keys, held by eb validate (which expands
# the cases) and by the editor schema alike.
BAD_FAMILIES = {
    "min_pass_rate_without_cases": _FAMILY + "min_pass_rate: 0.5\n",
    "case_schema_without_cases": _FAMILY + "case_schema: {type: object}\n",
    "min_pass_rate_with_null_cases": _FAMILY + "cases: null\nmin_pass_rate: 0.5\n",
    "judge_min_pass_rate_without_cases": "schema_version: 1\nid: fam\ntype: harness_judge\n"
    "description: d\ninstructions: i\nmin_pass_rate: 0.5\n",
    "case_id_with_a_space": _FAMILY + 'cases: [{id: "a b"}]\n',
    "case_id_empty": _FAMILY + 'cases: [{id: ""}]\n',
    "case_id_true": _FAMILY + "cases: [{id: true}]\n",
    "case_id_fraction": _FAMILY + "cases: [{id: 1.5}]\n",
    "case_id_negative": _FAMILY + "cases: [{id: -1}]\n",
    "case_id_a_list": _FAMILY + "cases: [{id: [a]}]\n",
    "case_skip_empty": _FAMILY + 'cases: [{id: a, skip: ""}]\n',
    "case_skip_blank": _FAMILY + 'cases: [{id: a, skip: "  "}]\n',
    "case_skip_a_boolean": _FAMILY + "cases: [{id: a, skip: true}]\n",
    "case_skip_yes_no_text": _FAMILY + 'cases: [{id: a, skip: " FALSE "}]\n',
    "case_skip_a_number_text": _FAMILY + 'cases: [{id: a, skip: "-1.5"}]\n',
    "case_skip_missing_value_text": _FAMILY + 'cases: [{id: a, skip: " #N/A "}]\n',
    "case_skip_null_in_parens": _FAMILY + 'cases: [{id: a, skip: "(null)"}]\n',
    "case_skip_backslash_n": _FAMILY + 'cases: [{id: a, skip: "\\\\N"}]\n',
    "case_skip_none_text": _FAMILY + "cases: [{id: a, skip: None}]\n",
    "case_tags_not_text": _FAMILY + "cases: [{id: a, tags: [1]}]\n",
    "case_tags_text_with_a_comma": _FAMILY + 'cases: [{id: a, tags: "smoke, slow"}]\n',
    "case_tags_text_with_a_space": _FAMILY + 'cases: [{id: a, tags: "smoke slow"}]\n',
    "case_tags_text_with_a_line_end": _FAMILY + 'cases: [{id: a, tags: "slow\\n"}]\n',
    "case_tags_empty_text": _FAMILY + 'cases: [{id: a, tags: ""}]\n',
    "no_cases": _FAMILY + "cases: []\n",
}
GOOD_FAMILIES = {
    "cases": _FAMILY + "cases: [{id: a}, {id: b.2-x_y}, {id: 7}, {id: null}, {x: 1}]\n",
    "gated": _FAMILY + "cases: [{id: a}]\nmin_pass_rate: 0.5\ncase_schema: {type: object}\n",
    "gated_dataset": _FAMILY + "cases_from: rows.jsonl\nmin_pass_rate: 1\n",
    "unset_family_keys": _FAMILY + "min_pass_rate: null\ncase_schema: null\n",
    "case_skip_and_tags": _FAMILY + "cases: [{id: a, skip: flaky upstream, tags: slow}, "
    "{id: b, skip: null, tags: [x, y]}, {id: c, skip: 'no: see issue 4'}, {id: d, skip: née}]\n",
    "case_skip_reason_naming_null": _FAMILY + "cases: [{id: a, skip: null pointer upstream}, "
    "{id: b, skip: Nanjing outage}, {id: c, skip: n/a until v2}]\n",
    "case_tags_null": _FAMILY + "cases: [{id: a, tags: null, skip: null}]\n",
    "case_tag_with_a_space_in_a_list": _FAMILY + 'cases: [{id: a, tags: ["needs review"]}]\n',
}


def _config_of(*, root: Path, text: str) -> ConfigDoc:
    """The config eb resolves in `root` with `text` as its config file (ConfigError if bad)."""
    from eval_banana.models.config import Selection
    from eval_banana.stages.config import resolve_config

    (root / ".eval-banana").mkdir(parents=True)
    (root / ".eval-banana" / "config.toml").write_text(text)
    return resolve_config(
        cwd=root,
        cli_values={},
        environ={},
        no_project_config=False,
        selection=Selection(),
        run_id="r",
    )


def _eb_validate_accepts(*, text: str, root: Path) -> bool:
    from eval_banana.stages.discover import discover
    from eval_banana.stages.validate import validate

    (root / "eval_checks").mkdir(parents=True)
    (root / "eval_checks" / "fam.yaml").write_text(text)
    (root / "rows.jsonl").write_text('{"id": "a"}\n')
    config = _config_of(root=root, text="")
    found = discover(config=config, inputs={})
    outcome = validate(config=config, discovered=found, inputs={}, require_scripts=False)
    return outcome.plan.ok


@pytest.mark.parametrize("name", sorted(BAD_FAMILIES))
def test_editor_and_eb_refuse_the_same_bad_families(name: str, tmp_path: Path) -> None:
    text = BAD_FAMILIES[name]
    assert not _eb_validate_accepts(text=text, root=tmp_path)
    assert not _schema_accepts(text)


@pytest.mark.parametrize("name", sorted(GOOD_FAMILIES))
def test_editor_and_eb_accept_the_same_good_families(name: str, tmp_path: Path) -> None:
    text = GOOD_FAMILIES[name]
    assert _eb_validate_accepts(text=text, root=tmp_path)
    assert _schema_accepts(text)


BAD_CONFIGS = {
    "empty_output_dir": '[core]\noutput_dir = ""\n',
    "empty_cache_dir": '[cache]\ndir = ""\n',
    "empty_history_dir": '[history]\ndir = ""\n',
    "env_allow_with_a_value": '[execution]\nenv_allow = ["A=B"]\n',
    "empty_env_allow_prefix": '[execution]\nenv_allow_prefixes = [""]\n',
    "empty_redact_name": '[execution]\nredact = [""]\n',
    "custom_agent_without_command": '[agents.mine]\nprompt_flag = "-p"\n',
    "custom_agent_with_empty_command": "[agents.mine]\ncommand = []\n",
    "builtin_agent_with_empty_command": "[agents.claude]\ncommand = []\n",
    "unknown_output_dialect": '[agents.claude]\noutput_dialect = "xml"\n',
}
GOOD_CONFIGS = {
    "folders": '[core]\noutput_dir = "out"\n[cache]\ndir = "c"\n[history]\ndir = "h"\n',
    "names": '[execution]\nenv_allow = ["A_B"]\nenv_allow_prefixes = ["CI_"]\nredact = ["*_PAT"]\n',
    "builtin_agent_changed": '[agents.claude]\nmodel_flag = ""\noutput_dialect = "text"\n',
    "custom_agent": '[agents.mine]\ncommand = ["my-agent", "--print"]\nprompt_flag = "-p"\n',
}


def _eb_accepts_config(*, text: str, root: Path) -> bool:
    from eval_banana.core.errors import ConfigError

    try:
        _config_of(root=root, text=text)
    except ConfigError:
        return False
    return True


def _config_schema_accepts(text: str) -> bool:
    schema = json.loads((REPO / "schemas" / "config.schema.json").read_text())
    return jsonschema.Draft7Validator(schema).is_valid(tomllib.loads(text))


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
def test_editor_and_eb_refuse_the_same_bad_configs(name: str, tmp_path: Path) -> None:
    text = BAD_CONFIGS[name]
    assert not _eb_accepts_config(text=text, root=tmp_path)
    assert not _config_schema_accepts(text)


@pytest.mark.parametrize("name", sorted(GOOD_CONFIGS))
def test_editor_and_eb_accept_the_same_good_configs(name: str, tmp_path: Path) -> None:
    text = GOOD_CONFIGS[name]
    assert _eb_accepts_config(text=text, root=tmp_path)
    assert _config_schema_accepts(text)


def test_the_init_template_with_every_example_uncommented_fits_the_config_schema() -> None:
    from eval_banana.commands.scaffold import config_template
    from tests.commands.test_init import _uncomment_examples

    for agent in ("claude", "codex"):
        assert _config_schema_accepts(_uncomment_examples(config_template(), agent=agent))


def _check_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((REPO / "schemas" / "check.schema.json").read_text())
    return schema


def _leaf_errors(errors: Iterable[jsonschema.ValidationError]) -> list[jsonschema.ValidationError]:
    leaves = []
    for error in errors:
        leaves.extend(_leaf_errors(error.context) if error.context else [error])
    return leaves


@pytest.mark.parametrize("name", ["no_script", "both_scripts"])
def test_editors_say_exactly_one_of_script_or_script_path(name: str) -> None:
    # yaml-language-server and VS Code show a failing subschema's `errorMessage` in place of
    # their own text ("Missing property", "Incorrect type"): every subschema that can fail for
    # this file must carry the sentence, or the editor falls back to `Missing property "script"`.
    validator = jsonschema.Draft7Validator(_check_schema())
    leaves = _leaf_errors(validator.iter_errors(yaml.safe_load(BAD_CHECKS[name])))
    assert leaves
    for error in leaves:
        assert error.validator in ("required", "type"), error
        assert error.schema.get("errorMessage") == ONE_SCRIPT_MESSAGE, error
    assert ONE_SCRIPT_MESSAGE.startswith("Exactly one of script or script_path is required")


def test_an_unknown_type_is_one_error_on_type_with_the_choices() -> None:
    validator = jsonschema.Draft7Validator(_check_schema())
    errors = list(validator.iter_errors(yaml.safe_load(BAD_CHECKS["unknown_type"])))
    assert [(list(error.path), error.validator) for error in errors] == [(["type"], "enum")]
    assert errors[0].validator_value == ["deterministic", "harness_judge", "assertions"]


def test_type_has_a_description_for_editors() -> None:
    schema = _check_schema()
    top = schema["properties"]["type"]
    assert top["title"] == "Check type"
    for name in ("deterministic", "harness_judge", "assertions"):
        assert name in top["description"]
    models = {"deterministic": "DeterministicCheck", "harness_judge": "HarnessJudgeCheck"}
    models["assertions"] = "AssertionsCheck"
    for name, definition in models.items():
        described = schema["definitions"][definition]["properties"]["type"]["description"]
        assert described.startswith(f"{name}: ") and "decides which other keys" in described
