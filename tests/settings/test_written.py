"""The record of the files eb wrote into the project beside its run folders (written.json)."""

from __future__ import annotations

import json
from pathlib import Path

from eval_banana.models.stages import ConfigDoc
from eval_banana.settings.folders import written_files
from eval_banana.settings.written import (
    KEPT,
    remember_written,
    still_written,
    written_record_path,
)
from tests.settings.test_config import resolve, write_config


def _config(root: Path) -> ConfigDoc:
    write_config(root, "")
    return resolve(root)


def test_a_noted_file_is_eb_s_while_it_holds_what_eb_wrote(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    config = _config(root)
    report = root / "out" / "junit.xml"
    report.parent.mkdir()
    report.write_text("<testsuites/>\n")
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# not in the project\n")
    remember_written(config=config, paths=[report, outside, root / "missing.md"])
    assert still_written(config=config) == [report]
    assert report in written_files(config=config)
    assert written_record_path(config=config) in written_files(config=config)
    noted = json.loads(written_record_path(config=config).read_text())["files"]
    assert [entry["path"] for entry in noted] == ["out/junit.xml"]
    # The same size, other bytes: the file is the project's again.
    report.write_text("<testsuitez/>\n")
    assert still_written(config=config) == []
    assert report not in written_files(config=config)


def test_only_the_newest_files_are_noted(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    config = _config(root)
    paths = [root / f"report-{number:02}.md" for number in range(KEPT + 3)]
    for path in paths:
        path.write_text(path.name)
        remember_written(config=config, paths=[path])
    # Written again, the oldest is the newest: it stays while the next three oldest go.
    remember_written(config=config, paths=[paths[0]])
    assert still_written(config=config) == [*paths[4:], paths[0]]


def test_a_damaged_record_notes_nothing_and_is_written_anew(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    config = _config(root)
    record = written_record_path(config=config)
    report = root / "junit.xml"
    report.write_text("<testsuites/>\n")
    for damaged in ("not json", '{"$schema": "other"}', '{"files": [{"path": "../x"}]}'):
        record.write_text(damaged)
        assert still_written(config=config) == []
    record.write_text(
        json.dumps(
            {
                "$schema": "https://eval-banana.dev/schemas/written.schema.json",
                "files": [{"path": "../junit.xml", "size": 14, "blob_id": "0" * 40}],
            }
        )
    )
    assert still_written(config=config) == []
    remember_written(config=config, paths=[report])
    assert still_written(config=config) == [report]
