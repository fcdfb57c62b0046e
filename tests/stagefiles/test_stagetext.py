"""Copying the checks and results a merge leaves unchanged as text: exactly the bytes a fresh dump
writes, and only from files laid out as eb writes them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from eval_banana.core import canonjson
from eval_banana.core.files import stage_json_bytes
from eval_banana.models.result import CheckResult
from eval_banana.models.stages import ExecuteDoc
from eval_banana.runners.results import build_result
from eval_banana.stagefiles.text import element_texts
from tests.builders import make_execute, planned_inline


def _results(count: int) -> list[CheckResult]:
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    found = []
    for index in range(count):
        check = planned_inline(
            id=f"c{index}", script="pass", project_root=Path("/p"), tags=["a", "b"]
        )
        found.append(
            build_result(
                check=check,
                status="failed" if index % 2 else "passed",
                started=moment,
                completed=moment,
                reason='line one\nline two: \u00e9 "quoted"' if index == 1 else None,
                details={"nested": {"list": [1, 2.5, None, {"deep": [[]]}]}, "n": index},
                exit_code=index,
            )
        )
    return found


def _file(doc: ExecuteDoc) -> str:
    return stage_json_bytes(document=doc).decode()


def test_the_texts_found_make_the_same_bytes_as_a_fresh_dump() -> None:
    doc = make_execute(results=_results(5))
    texts = element_texts(text=_file(doc), field="results", elements=doc.results)
    assert set(texts) == {id(result) for result in doc.results}
    # Copied where they were, and re-indented where they land deeper.
    assert canonjson.dumps(doc, sort_keys=True, rendered=texts) + "\n" == _file(doc)
    nested = {"outer": {"results": doc.results}}
    assert canonjson.dumps(nested, sort_keys=True, rendered=texts) == canonjson.dumps(
        nested, sort_keys=True
    )


def test_a_file_not_laid_out_as_eb_writes_it_gives_no_texts() -> None:
    doc = make_execute(results=_results(3))
    canonical = _file(doc)
    plain = json.loads(canonical)
    others = {
        "indented by four": json.dumps(plain, indent=4, sort_keys=True, ensure_ascii=False),
        "one line": json.dumps(plain, sort_keys=True),
        # A result's line moved to an element's depth: the boundaries can no longer be trusted.
        "a shallow line": canonical.replace('\n      "check_id"', '\n    "check_id"', 1),
    }
    for name, text in others.items():
        assert element_texts(text=text, field="results", elements=doc.results) == {}, name
    # The texts must be those of the records read: here the file holds one result fewer.
    fewer = make_execute(results=_results(2))
    assert element_texts(text=_file(fewer), field="results", elements=doc.results) == {}
    # And the same number of other results is refused by the first and last comparison.
    other = make_execute(results=list(reversed(_results(3))))
    assert element_texts(text=_file(other), field="results", elements=doc.results) == {}


def test_an_empty_list_gives_no_texts() -> None:
    doc = make_execute(results=[])
    assert element_texts(text=_file(doc), field="results", elements=doc.results) == {}
