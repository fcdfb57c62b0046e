"""Atomic writes: whole files or nothing, the user's umask, and no clash with a leftover name."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from eval_banana.core import files as artifacts
from eval_banana.core.errors import WriteFault
from eval_banana.core.files import write_bytes_atomic


def test_the_file_gets_the_users_umask_and_no_temporary_is_left(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_bytes_atomic(path=tmp_path / "out" / "a.json", data=b"{}")
    finally:
        os.umask(old)
    target = tmp_path / "out" / "a.json"
    assert target.read_bytes() == b"{}"
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["a.json"]


def test_a_leftover_temporary_name_is_skipped_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(artifacts, "_TEMP_NAMES", itertools.count(7))
    squatter = tmp_path / f".a.json.{os.getpid()}.7.tmp"
    squatter.write_bytes(b"someone else's")
    write_bytes_atomic(path=tmp_path / "a.json", data=b"mine")
    assert (tmp_path / "a.json").read_bytes() == b"mine"
    assert squatter.read_bytes() == b"someone else's"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "a.json"
    target.write_bytes(b"old")

    def refuse(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(artifacts.os, "replace", refuse)
    # A write fault names the file and the cause (and aborts a run, exit 3).
    with pytest.raises(WriteFault, match="disk full") as raised:
        write_bytes_atomic(path=target, data=b"new")
    assert raised.value.path == str(target) and raised.value.exit_code == 3
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]
