"""The reader's loop over a record's checks answers as the published schema does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from eval_banana.history.entries import read_entries
from eval_banana.history.read import BadRecord, newest_first, parse_record, record_paths
from eval_banana.history.store import record_bytes
from eval_banana.stagefiles.schemafiles import packaged_schema
from tests.history.synth import check, record, write

VALID: dict[str, Any] = {
    "id": "judge_tone",
    "type": "harness_judge",
    "status": "failed",
    "digest": "sha256:abc",
    "duration_ms": 1200,
}
VARIANTS: list[tuple[str, Any]] = [
    ("family", "refunds"),
    ("family", None),
    ("family", 3),
    ("tags", ["a", "b"]),
    ("tags", []),
    ("tags", ["a", 1]),
    ("tags", "a"),
    ("tags", None),
    ("status", "skipped"),
    ("status", None),
    ("status", ["passed"]),  # unhashable: refused, not a crash of the reader
    ("status", {"passed": 1}),
    ("id", 5),
    ("type", None),
    ("digest", ["x"]),
    ("duration_ms", 0),
    ("duration_ms", 12.0),
    ("duration_ms", 12.5),
    ("duration_ms", -1),
    ("duration_ms", True),
    ("duration_ms", "5"),
    ("cost_usd", 0),
    ("cost_usd", 0.25),
    ("cost_usd", -0.1),
    ("cost_usd", None),
    ("cost_usd", False),
    ("tokens", 10),
    ("tokens", 10.0),
    ("tokens", -3),
    ("tokens", None),
    ("tokens", 1.5),
    ("cached", True),
    ("cached", 1),
    ("flaky", None),
    ("early_error", False),
    ("unknown", 1),
]
MISSING = ["id", "type", "status", "digest", "duration_ms"]


def _cases() -> list[Any]:
    cases: list[Any] = [dict(VALID)]
    cases += [{**VALID, key: value} for key, value in VARIANTS]
    cases += [{k: v for k, v in VALID.items() if k != name} for name in MISSING]
    cases += [[], "entry", None, 3]
    return cases


@pytest.mark.parametrize("entry", _cases(), ids=lambda entry: json.dumps(entry)[:60])
def test_the_loop_agrees_with_the_schema(entry: Any) -> None:
    schema = json.loads(packaged_schema("history-record"))
    document = record(index=1, checks=[]).model_dump(by_alias=True)
    document["checks"] = [entry]
    valid = jsonschema.Draft202012Validator(schema).is_valid(document)
    assert (read_entries([entry]) is not None) == valid
    if valid:
        parsed = parse_record(data=json.dumps(document).encode())
        assert parsed.checks[0].model_dump() == {
            **parsed.checks[0].model_dump(),
            **{k: v for k, v in entry.items() if k not in ("duration_ms", "tokens", "cost_usd")},
        }
    else:
        with pytest.raises(BadRecord, match=r"at \$\.checks\[0\]"):
            parse_record(data=json.dumps(document).encode())


def test_a_record_reads_back_equal_to_what_was_written() -> None:
    written = record(
        index=3,
        checks=[
            check(check_id="a", tags=["x"], cost_usd=0.5, cached=True),
            check(check_id="b", outcome="E", early_error=True),
        ],
        commit="f" * 40,
    )
    data = record_bytes(record=written)
    assert b'"flaky":false' not in data  # defaults are left out
    assert parse_record(data=data) == written


def test_records_are_read_newest_first_and_only_as_far_as_asked(tmp_path: Path) -> None:
    folder = tmp_path / "history"
    write(folder=folder, records=[record(index=i, checks=[check(check_id="a")]) for i in (1, 2, 3)])
    oldest = record_paths(folder=folder)[0]
    oldest.write_text("damaged")
    warnings: list[str] = []
    stream = newest_first(paths=record_paths(folder=folder), warn=warnings.append)
    assert [next(stream).run_id[-2:], next(stream).run_id[-2:]] == ["03", "02"]
    assert warnings == []  # the damaged oldest record was never read
    assert list(stream) == [] and len(warnings) == 1


def test_a_focused_read_builds_only_the_checks_asked_for() -> None:
    written = record(index=1, checks=[check(check_id=name) for name in ("a", "b", "c")])
    data = record_bytes(record=written)
    assert [c.id for c in parse_record(data=data, only=frozenset({"b"})).checks] == ["b"]
    assert len(parse_record(data=data).checks) == 3


def test_a_record_is_written_byte_for_byte_as_a_whole_dump_with_its_defaults_dropped() -> None:
    """The writer dumps the checks once, from their own values: the bytes stay those of the
    whole record dumped, each check's default fields then left out."""
    written = record(
        index=4,
        checks=[
            check(check_id="a", tags=["x", "y"], cost_usd=0.25, cached=True),
            check(check_id="b", outcome="E", early_error=True, not_run=True),
            check(check_id="fam[c1]", outcome="F", duration_ms=0),
        ],
        commit="e" * 40,
    )
    whole = written.model_dump(by_alias=True)
    required = {"id", "type", "status", "digest", "duration_ms"}
    defaults = {
        name: spec.get_default(call_default_factory=True)
        for name, spec in type(written.checks[0]).model_fields.items()
        if not spec.is_required()
    }
    whole["checks"] = [
        {k: v for k, v in entry.items() if k in required or v != defaults[k]}
        for entry in whole["checks"]
    ]
    expected = json.dumps(whole, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    assert record_bytes(record=written) == (expected + "\n").encode()
    assert written.checks[0].model_dump()["tags"] == ["x", "y"]  # the record is left as it was
    assert written.model_dump()["checks"][1]["early_error"] is True
