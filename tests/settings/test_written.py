"""The record of the files eb wrote into the project beside its run folders (written.json)."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pytest

from eval_banana.core.mac import WRITTEN_DOMAIN, load_secret, signed_text
from eval_banana.models.stages import ConfigDoc
from eval_banana.settings.folders import cache_dir, written_files
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


def _secret(config: ConfigDoc) -> bytes:
    found = load_secret(folder=cache_dir(config=config), create=True)
    assert isinstance(found, bytes), found
    return found


def _remember(config: ConfigDoc, paths: list[Path]) -> None:
    remember_written(config=config, paths=paths, key=lambda: _secret(config))


def _still(config: ConfigDoc) -> list[Path]:
    return still_written(config=config, cache_folder=cache_dir(config=config))


def _note_of(root: Path, path: Path) -> dict[str, object]:
    """A note of `path` as it is now, as eb writes one."""
    data = path.read_bytes()
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    return {"path": path.relative_to(root).as_posix(), "size": len(data), "blob_id": blob}


def _record_text(notes: list[dict[str, object]]) -> bytes:
    document = {
        "$schema": "https://eval-banana.dev/schemas/written.schema.json",
        "schema_version": 1,
        "tool_version": "0",
        "updated_at": "2026-01-01T00:00:00+00:00",
        "files": notes,
    }
    return json.dumps(document).encode()


def test_a_noted_file_is_eb_s_while_it_holds_what_eb_wrote(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    config = _config(root)
    report = root / "out" / "junit.xml"
    report.parent.mkdir()
    report.write_text("<testsuites/>\n")
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# not in the project\n")
    _remember(config, [report, outside, root / "missing.md"])
    assert _still(config) == [report]
    assert report in written_files(config=config)
    assert written_record_path(config=config) in written_files(config=config)
    text = written_record_path(config=config).read_bytes()
    assert text.startswith(b'{"mac": "hmac-sha256:')  # signed, the MAC first
    noted = json.loads(text)["files"]
    assert [entry["path"] for entry in noted] == ["out/junit.xml"]
    # The same size, other bytes: the file is the project's again.
    report.write_text("<testsuitez/>\n")
    assert _still(config) == []
    assert report not in written_files(config=config)


def test_only_the_newest_files_are_noted(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    config = _config(root)
    paths = [root / f"report-{number:02}.md" for number in range(KEPT + 3)]
    for path in paths:
        path.write_text(path.name)
        _remember(config, [path])
    # Written again, the oldest is the newest: it stays while the next three oldest go.
    _remember(config, [paths[0]])
    assert _still(config) == [*paths[4:], paths[0]]


def test_a_damaged_record_notes_nothing_and_is_written_anew(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    config = _config(root)
    record = written_record_path(config=config)
    report = root / "junit.xml"
    report.write_text("<testsuites/>\n")
    for damaged in ("not json", '{"$schema": "other"}', '{"files": [{"path": "../x"}]}'):
        record.write_text(damaged)
        assert _still(config) == []
    note = {"path": "../junit.xml", "size": 14, "blob_id": "0" * 40}
    record.write_bytes(signed_text(key=_secret(config), text=_record_text([note])))
    assert _still(config) == []
    _remember(config, [report])
    assert _still(config) == [report]


@pytest.mark.parametrize("signed", ["unsigned", "cache-mac", "other-key", "no-secret"])
def test_a_record_eb_did_not_sign_notes_nothing_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, signed: str
) -> None:
    # A check, a tool or a person notes a project file as eb's: while it held the noted bytes
    # it would be left out of every cache key and of what a judge's isolation watch counts.
    root = tmp_path / "proj"
    config = _config(root)
    app = root / "src" / "app.py"
    app.parent.mkdir()
    app.write_text("def add(a, b):\n    return a - b\n")
    text = _record_text([_note_of(root, app)])
    if signed == "cache-mac":  # a cache entry's MAC: the key is right, the kind of file is not
        text = signed_text(key=_secret(config), text=text)
    elif signed in ("other-key", "no-secret"):  # no-secret: no cache secret to check by
        text = signed_text(key=b"1" * 64, text=text, domain=WRITTEN_DOMAIN)
    if signed != "no-secret":
        _secret(config)
    record = written_record_path(config=config)
    record.write_bytes(text)
    with caplog.at_level(logging.WARNING):
        assert _still(config) == []
        assert _still(config) == []
    assert app not in written_files(config=config)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings  # once, however often a run asks
    assert warnings[0].startswith(f"Ignored {record}: it ")
    assert "the files it notes count as project files (src/app.py)" in warnings[0]
    # The next record eb writes keeps none of its notes.
    report = root / "junit.xml"
    report.write_text("<testsuites/>\n")
    _remember(config, [report])
    assert _still(config) == [report]
    assert [entry["path"] for entry in json.loads(record.read_bytes())["files"]] == ["junit.xml"]


def test_without_a_secret_or_the_folder_s_turn_nothing_is_noted(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    config = _config(root)
    report = root / "junit.xml"
    report.write_text("<testsuites/>\n")
    remember_written(config=config, paths=[report], key=lambda: None)
    assert not written_record_path(config=config).exists()
