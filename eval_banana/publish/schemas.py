"""Generate the published JSON Schemas from the pydantic models (`invoke schemas`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eval_banana.core.record import Record, to_pydantic
from eval_banana.stagefiles.layout import SCHEMA_BASE

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"


def _to_draft_07(node: Any) -> Any:
    """Rewrite pydantic's $defs references into draft-07's definitions (editors read draft-07)."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$defs":
                out["definitions"] = _to_draft_07(value)
            elif key == "$ref" and isinstance(value, str):
                out[key] = value.replace("#/$defs/", "#/definitions/")
            elif key == "discriminator":
                continue  # an OpenAPI keyword; draft-07 validators ignore it anyway
            else:
                out[key] = _to_draft_07(value)
        return out
    if isinstance(node, list):
        return [_to_draft_07(item) for item in node]
    return node


def _select_by_type(*, definitions: dict[str, Any]) -> dict[str, Any]:
    """The check schema's top: `type` first, then the one model that type selects.

    pydantic writes a `oneOf` over the check models; an editor then reports the errors of
    whichever model it guesses is closest (a typo in `type` read as `Value must be
    "deterministic"`). With `type` checked on its own and an if/then per type, an unknown type
    is one clear error on `type`, and a known one is held to its own model's rules only.
    """
    from eval_banana.models.check import CHECK_MODELS
    from eval_banana.models.checkbase import TYPE_DESCRIPTION

    names = {model.__name__: name for name, model in CHECK_MODELS.items()}
    assert set(names) <= set(definitions), "every check model has a definition"
    return {
        "type": "object",
        "required": ["type"],
        "properties": {
            "type": {
                "title": "Check type",
                "description": TYPE_DESCRIPTION,
                "enum": list(CHECK_MODELS),
            }
        },
        "allOf": [
            {
                "if": {"properties": {"type": {"const": name}}, "required": ["type"]},
                "then": {"$ref": f"#/definitions/{model}"},
            }
            for model, name in names.items()
        ],
    }


def _check_schema() -> dict[str, Any]:
    from eval_banana.models.check import CHECK_ADAPTER

    generated = _to_draft_07(CHECK_ADAPTER.json_schema(by_alias=True))
    definitions = generated["definitions"]
    return {
        "$schema": DRAFT_07,
        "$id": f"{SCHEMA_BASE}check.schema.json",
        "title": "eval_banana check file",
        "description": "One check: a YAML file in an eval_checks/ folder.",
        **_select_by_type(definitions=definitions),
        "definitions": definitions,
    }


# A name in a name list (a variable, a prefix, a redacted pattern): what the file accepts.
_NAME_PATTERN = "^[^=]+$"
# A folder's name (`vendor`, or `vendor/`): no path, which only names never match.
_FOLDER_NAME_PATTERN = "^(?!\\.{1,2}/?$)[^/]+/?$"


def _section_properties(*, schema: dict[str, Any], section: str) -> dict[str, Any]:
    """The `properties` of one [section]'s definition in the config schema."""
    name = schema["properties"][section]["$ref"].removeprefix("#/definitions/")
    properties: dict[str, Any] = schema["definitions"][name]["properties"]
    return properties


def _add_file_rules(schema: dict[str, Any]) -> None:
    """The rules config.toml is held to beyond the resolved settings' types, from the settings
    table and the built-in agents. They are the file's own: `--output-dir ""` names the project
    root, so the schema of the resolved settings (stage files) cannot refuse an empty folder."""
    from eval_banana.harness.templates import BUILTIN_TEMPLATES, OUTPUT_DIALECTS
    from eval_banana.settings.table import SETTINGS

    for spec in SETTINGS:
        if spec.kind == "path":  # an empty folder would put eb's files into the project root
            field = _section_properties(schema=schema, section=spec.section)[spec.key]
            field.update({"minLength": 1, "pattern": "\\S"})  # nor blank: a folder of spaces
        elif spec.kind == "name_list":
            field = _section_properties(schema=schema, section=spec.section)[spec.key]
            field["items"] = {**field["items"], "minLength": 1, "pattern": _NAME_PATTERN}
        elif spec.kind == "folder_names":
            field = _section_properties(schema=schema, section=spec.section)[spec.key]
            field["items"] = {**field["items"], "pattern": _FOLDER_NAME_PATTERN}
    template = {"$ref": "#/definitions/AgentTemplate"}
    fields = schema["definitions"]["AgentTemplate"]["properties"]
    fields["command"]["minItems"] = 1
    fields["output_dialect"]["enum"] = list(OUTPUT_DIALECTS)
    agents = schema["properties"]["agents"]
    # A built-in's table changes only the keys it writes; another agent says how to launch it.
    agents["properties"] = {name: template for name in BUILTIN_TEMPLATES}
    agents["additionalProperties"] = {"allOf": [template, {"required": ["command"]}]}


def _config_schema() -> dict[str, Any]:
    from eval_banana.models.config import Settings

    schema = _to_draft_07(to_pydantic(Settings).model_json_schema(by_alias=True))
    schema["title"] = "eval_banana .eval-banana/config.toml"
    _add_file_rules(schema)
    return {"$schema": DRAFT_07, "$id": f"{SCHEMA_BASE}config.schema.json", **schema}


def _model_schema(model: type[Record], *, name: str) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        schema = to_pydantic(model).model_json_schema(by_alias=True)
        return {"$schema": DRAFT_2020, "$id": f"{SCHEMA_BASE}{name}.schema.json", **schema}

    return build


def schema_builders() -> dict[str, Callable[[], dict[str, Any]]]:
    """Schema name (as `eb schema NAME` takes it) -> builder."""
    from eval_banana.cache.entry import CacheEntry, RemoteCacheEntry
    from eval_banana.cache.ledger import CacheSizeLedger
    from eval_banana.cache.replay_entry import ReplayEntry
    from eval_banana.history.record import HistoryRecord
    from eval_banana.history.view import HistoryView
    from eval_banana.models.cacheops import CacheStatsDoc, CacheVerifyDoc
    from eval_banana.models.calibration import CalibrationDoc
    from eval_banana.models.diff import RunDiff
    from eval_banana.models.lastfailed import LastFailedDoc
    from eval_banana.models.plan import PlanDocument
    from eval_banana.models.report import ReportJson
    from eval_banana.models.result import CheckResult
    from eval_banana.models.stages import STAGE_MODELS
    from eval_banana.models.transcript import TranscriptEvent
    from eval_banana.models.written import WrittenFilesDoc

    builders: dict[str, Callable[[], dict[str, Any]]] = {
        "check": _check_schema,
        "config": _config_schema,
        "check-result": _model_schema(CheckResult, name="check-result"),
    }
    for stage, model in STAGE_MODELS.items():
        builders[f"stages/{stage}"] = _model_schema(model, name=f"stages/{stage}")
    builders["report"] = _model_schema(ReportJson, name="report")
    builders["diff"] = _model_schema(RunDiff, name="diff")
    builders["cache-entry"] = _model_schema(CacheEntry, name="cache-entry")
    builders["remote-cache-entry"] = _model_schema(RemoteCacheEntry, name="remote-cache-entry")
    builders["run-replay"] = _model_schema(ReplayEntry, name="run-replay")
    builders["calibration"] = _model_schema(CalibrationDoc, name="calibration")
    builders["lastfailed"] = _model_schema(LastFailedDoc, name="lastfailed")
    builders["written"] = _model_schema(WrittenFilesDoc, name="written")
    builders["plan"] = _model_schema(PlanDocument, name="plan")
    builders["history-record"] = _model_schema(HistoryRecord, name="history-record")
    builders["history"] = _model_schema(HistoryView, name="history")
    builders["transcript-event"] = _model_schema(TranscriptEvent, name="transcript-event")
    builders["cache-stats"] = _model_schema(CacheStatsDoc, name="cache-stats")
    builders["cache-verify"] = _model_schema(CacheVerifyDoc, name="cache-verify")
    builders["cache-size"] = _model_schema(CacheSizeLedger, name="cache-size")
    return builders


def schema_names() -> list[str]:
    """Names `eb schema` accepts; a bare stage name is an alias of stages/<stage>."""
    return sorted(schema_builders())


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=False, allow_nan=False) + "\n"


def write_all(*, targets: list[Path]) -> list[Path]:
    """Write every schema under each target folder; return the files written."""
    written = []
    for name, build in schema_builders().items():
        text = render(build())
        for target in targets:
            path = target / f"{name}.schema.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written
